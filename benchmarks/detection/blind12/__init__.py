"""Twelfth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind12`).

Six new training settings in three modules (`language`: skip-gram word embeddings with negative sampling, a
linear-chain CRF tagger; `science`: an interatomic potential fitted to energies and forces, a Gaussian process with
a deep kernel; `estimation`: TARNet treatment effects, a Tweedie pure-premium model), each script making its own
synthetic data from the seed and building its optimizer by `optimizers`; `suite` declares the programs and binds
them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen
before scoring; README.md has the smoke tables.
"""
