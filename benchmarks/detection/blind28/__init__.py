"""Twenty-eighth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind28`).

Six new training settings in three modules (`tables`: a hospital length-of-stay regressor, a power-transformer fault
classifier from dissolved-gas readings; `arrivals`: an earthquake aftershock-count model (Poisson with an exposure
offset), a shipping ETA regressor; `traces`: a handwriting stroke-direction classifier on pen trajectories (a GRU), a
coffee roast-degree classifier on near-infrared spectra (a 1-D CNN)), each script making its own synthetic data from
the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds
them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen
before scoring; README.md has the smoke tables.
"""
