"""Nineteenth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind19`).

Six new training settings in three modules (`texts`: an emotion classifier (a CNN over word embeddings), a
dialogue-intent classifier with class weights; `records`: a churn predictor (an LSTM over customers' event logs), a
network-intrusion detector on flow records; `inspections`: a wafer-map defect classifier with heavy class imbalance,
a licence-plate character recogniser), each script making its own synthetic data from the seed and building its
optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier splits'
runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has
the smoke tables.
"""
