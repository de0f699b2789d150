"""Fifty-fourth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind54`).

Six new training settings in three modules (`bench`: a home-battery cell's state-of-charge estimator (a GRU over the
logger's samples), a guitar fret-buzz detector on pickup windows (a 1-D CNN); `care`: a feline chronic-kidney-disease
stage classifier on a vet clinic's panels (an MLP with a breed embedding), a beehive swarm-warning LSTM on hive-scale
and hive-sensor logs; `works`: a glass-container sidewall-defect autoencoder on inspection-camera profiles, an offset
press's ink-key presetting model (self-attention over the ink zones)), each script making its own synthetic data from
the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds
them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen
before scoring; README.md has the smoke tables.
"""
