"""Twenty-second blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind22`).

Six new training settings in three modules (`machines`: a rolling-bearing fault classifier on vibration windows, a
battery cycle-life regressor on early-cycle features; `sensing`: an electronic-nose gas classifier on a metal-oxide
sensor array, a seismic P-wave arrival picker; `estimates`: a volatility forecaster for daily returns, a gaze-direction
regressor on eye images), each script making its own synthetic data from the seed and building its optimizer by the
thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and
oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke
tables.
"""
