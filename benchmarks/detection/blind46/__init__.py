"""Forty-sixth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind46`).

Six new training settings in three modules (`farms`: a cranberry-bog frost-protection trigger classifier, a kelp-farm
growth-rate regressor; `machines`: an elevator door-fault classifier on motor-current windows (a 1-D CNN), a washing
machine's unbalance detector on drum-speed traces (a 1-D CNN with batch norm); `audience`: a podcast listener
drop-off forecaster (a GRU), a public pool's chlorine-demand regressor), each script making its own synthetic data
from the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and
binds them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and
frozen before scoring; README.md has the smoke tables.
"""
