"""Thirty-fourth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind34`).

Six new training settings in three modules (`earth`: a lithology classifier on well-log curves, a flood-peak
regressor on catchment attributes; `hazards`: a vehicle-crash severity classifier on telematics accelerometer
windows, an avalanche danger-level classifier on snow and weather readings; `images`: a leaf-count regressor on
rosette photographs, a handwritten mathematical-symbol classifier on tablet pen strokes), each script making its own
synthetic data from the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the
programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to
the rules and frozen before scoring; README.md has the smoke tables.
"""
