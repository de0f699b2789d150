"""Fourteenth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind14`).

Six new training settings in three modules (`perception`: a capsule network with routing by agreement, a CREPE-style
pitch estimator on raw waveform frames; `tabular`: deep evidential regression, a neural additive model for credit
risk; `behaviour`: behaviour cloning of an expert controller with a Gaussian policy, a next-basket recommender), each
script making its own synthetic data from the seed and building its optimizer by the thirteenth split's
`optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke` runs them
with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
