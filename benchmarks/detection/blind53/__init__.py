"""Fifty-third blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind53`).

Six new training settings in three modules (`growing`: a vineyard canopy-vigour regressor from drone multispectral
bands, a cheese-cave humidity model for the cave's controller; `facilities`: a swimming-pool lane-occupancy
forecaster (a GRU over the days), a hospital-laundry linen-demand forecaster (a Poisson MLP); `gear`: a rock-climbing
hold-grip classifier on force-plate windows, a bicycle-chain wear classifier on drivetrain vibration), each script
making its own synthetic data from the seed and building its optimizer by the thirteenth split's `optimizers`;
`suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with no rule.
Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
