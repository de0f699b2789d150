"""Fortieth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind40`).

Six new training settings in three modules (`factory`: a glass-furnace bubble-defect classifier on melt sensor
windows (a 1-D CNN), a tyre-tread wear regressor (an MLP); `nature`: a dengue-case forecaster from weather and past
counts (a GRU under a Poisson loss), a lake chlorophyll-a regressor from satellite bands; `leisure`: a drone battery
state-of-health regressor on discharge logs (a 1-D CNN), a chess-clock time-pressure blunder classifier), each script
making its own synthetic data from the seed and building its optimizer by the thirteenth split's `optimizers`;
`suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with no rule.
Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
