"""Forty-ninth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind49`).

Six new training settings in three modules (`machinery`: a harbour-crane spreader twist-lock fault classifier on
hydraulic traces, a ski-binding release-force regressor from a test rig; `produce`: a hay-bale moisture classifier
from microwave readings, a maple-syrup grade classifier from light-transmittance spectra; `leisure`: a cinema
ticket-sales forecaster, a dragon-boat stroke-sync classifier on paddle IMU windows), each script making its own
synthetic data from the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the
programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the
rules and frozen before scoring; README.md has the smoke tables.
"""
