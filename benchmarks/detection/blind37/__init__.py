"""Thirty-seventh blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind37`).

Six new training settings in three modules (`water`: a water-main leak detector on pressure transients, a river-ice
break-up date regressor from a winter's daily records; `fields`: a solar-panel soiling-loss regressor, a cattle
live-weight regressor from body measurements; `sites`: an injection-moulding part-shrinkage regressor on process
settings, a parcel delivery-failure classifier), each script making its own synthetic data from the seed and building its
optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier splits'
runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has
the smoke tables.
"""
