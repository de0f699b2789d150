"""Forty-fourth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind44`).

Six new training settings in three modules (`lines`: a paper-machine sheet-break predictor on sensor windows (a 1-D
CNN), a ceramic-tile glaze-defect CNN; `produce`: a cheese firmness regressor from texture-analyser curves, a
hydroponic lettuce fresh-weight CNN on canopy images; `outdoors`: a ski-resort snowmaking water-use regressor, a
fishing-vessel gear-type GRU on AIS speed and heading tracks), each script making its own synthetic data from the seed
and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the
earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before
scoring; README.md has the smoke tables.
"""
