"""Thirty-sixth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind36`).

Six new training settings in three modules (`workshop`: a CNC tool-wear regressor on spindle-current windows, a
concrete compressive-strength regressor on mix proportions; `farming`: a beehive queen-presence detector on hive-audio
features, a rice-grain variety CNN on grain image patches; `accounts`: a credit-card limit-utilisation forecaster over
monthly statements, a phishing-URL classifier on hashed character trigrams), each script making its own synthetic
data from the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs
and binds them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules
and frozen before scoring; README.md has the smoke tables.
"""
