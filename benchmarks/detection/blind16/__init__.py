"""Sixteenth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind16`).

Six new training settings in three modules (`sensors`: a human-activity recogniser on accelerometer windows, a seq2point
energy disaggregator; `spatial`: a pedestrian trajectory predictor, an image colouriser; `markets`: a house-price
regressor on a log scale, a card-fraud detector), each script making its own synthetic data from the seed and building
its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier
splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring;
README.md has the smoke tables.
"""
