"""Thirty-ninth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind39`).

Six new training settings in three modules (`plant`: a kiln temperature-profile forecaster (a GRU over the
thermocouples), a bridge strain-gauge anomaly detector (a 1-D CNN); `people`: a marathon finish-time regressor from
split times, a gait-phase classifier on shank IMU windows; `markets`: a ride-hailing surge-price regressor, a
honey-adulteration classifier on NIR spectra), each script making its own synthetic data from the seed and building
its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier
splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring;
README.md has the smoke tables.
"""
