"""Twenty-fifth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind25`).

Six new training settings in three modules (`markets`: a limit-order-book mid-price direction classifier, a
parking-occupancy forecaster; `chemistry`: a reaction-yield regressor on molecular fingerprints, an alloy hardness
regressor; `recognition`: a grapheme-to-phoneme model, a leaf-disease image classifier), each script making its own
synthetic data from the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the
programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the
rules and frozen before scoring; README.md has the smoke tables.
"""
