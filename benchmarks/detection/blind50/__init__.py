"""Fiftieth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind50`).

Six new training settings in three modules (`industry`: a sawmill log-diameter regressor from laser profiles, a
carpet-loom yarn-break classifier on tension traces; `transport`: a ropeway cabin-swing forecaster from anemometer and
cable sensors, a school-bus arrival-delay regressor; `care`: a greenhouse tomato truss-ripeness CNN on canopy photos,
a dialysis-session hypotension early-warning GRU), each script making its own synthetic data from the seed and
building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the
earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before
scoring; README.md has the smoke tables.
"""
