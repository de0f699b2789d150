"""Thirty-first blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind31`).

Six new training settings in three modules (`records`: a student-dropout predictor from weekly course logs, an
insurance claim-severity regressor with a gamma deviance; `environment`: a wildfire-spread CNN on gridded weather, a
river dissolved-oxygen forecaster; `screening`: a protein-ligand binding-affinity regressor on fingerprints, a ship
detector on SAR image chips), each script making its own synthetic data from the seed and building its optimizer by
the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and
oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke
tables.
"""
