"""Forty-eighth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind48`).

Six new training settings in three modules (`boards`: a varroa-mite count regressor from hive-board images, a
seed-germination classifier on petri-dish images; `roads`: a motorway tunnel CO-level forecaster, a cycling
power-output estimator from bike-computer streams; `plant`: a paper-recycling pulp-consistency regressor from mill
sensors, a pipeline pig-run anomaly 1-D CNN on magnetic flux traces), each script making its own synthetic data from
the seed and building its optimizer by the thirteenth split's `optimizers` (or by the realistic suite's
`make_optimizer` where it changes the rate); `suite` declares the programs and binds them to the earlier splits'
runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has
the smoke tables.
"""
