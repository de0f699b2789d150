"""Forty-seventh blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind47`).

Six new training settings in three modules (`services`: a ferry passenger-count forecaster, a basketball shot-make
probability model from tracking features; `processes`: a compost-pile temperature forecaster, a cement-kiln clinker
free-lime regressor from process readings; `sensing`: a violin bow-stroke classifier on bow-sensor IMU windows, a
tea-leaf grade CNN on conveyor-camera patches), each script making its own synthetic data from the seed and building
its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier
splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring;
README.md has the smoke tables.
"""
