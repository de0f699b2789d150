"""Eighteenth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind18`).

Six new training settings in three modules (`grids`: a traffic-flow forecaster over a road graph, a ConvLSTM
precipitation nowcaster; `instruments`: an ECG beat classifier under heavy class imbalance, a galaxy morphology classifier on
telescope images; `sequences`: a protein secondary-structure tagger by a bidirectional LSTM, a crop-yield regressor over a
season of satellite observations), each script making its own synthetic data from the seed and building its optimizer
by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and
oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke
tables.
"""
