"""Thirty-fifth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind35`).

Six new training settings in three modules (`yields`: a dairy cow's next-day milk-yield forecaster, a semiconductor
plasma etch-rate regressor on process recipes; `sensing`: a crackle detector on lung-sound spectrogram frames, a
sign-language handshape classifier on hand landmarks; `tracks`: an air-traffic conflict classifier on pairs of flight
tracks, a tennis point-outcome model from the first shots of a rally), each script making its own synthetic data from
the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds
them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen
before scoring; README.md has the smoke tables.
"""
