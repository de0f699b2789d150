"""Thirtieth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind30`).

Six new training settings in three modules (`power`: a turbofan remaining-useful-life regressor (a 1-D CNN over sensor
windows), an electricity spot-price forecaster; `sequences`: a bacterial promoter classifier on DNA, an exoplanet
transit detector on light curves; `records`: a recipe cuisine classifier on TF-IDF ingredient rows, a fetal-health
classifier on cardiotocography features), each script making its own synthetic data from the seed and building its
optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier splits'
runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has
the smoke tables.
"""
