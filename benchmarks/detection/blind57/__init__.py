"""Fifty-seventh blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind57`).

Six new training settings in three modules (`rescue`: a flashover warning from a compartment's thermocouple tree (a
1-D CNN), a compounded suspension's potency-after-storage regressor (a ReLU MLP over embedded drug and vehicle);
`mountain`: a chairlift's wind-hold forecaster (a GRU over the ten-minute records), a building-footprint segmenter on
aerial tiles (a fully convolutional CNN); `craft`: a perfume house's odour-family classifier over its formulas (a small
transformer encoder), a glued joint's strength regressor (a ReLU MLP)), each script making its own synthetic data from
the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds
them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen
before scoring; README.md has the smoke tables.
"""
