"""Thirty-second blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind32`).

Six new training settings in three modules (`physics`: a boosted-top jet tagger (deep sets over the constituents), a
precipitation-type classifier on dual-polarisation radar features; `biomed`: an epigenetic age clock on CpG methylation,
a heart-murmur detector on phonocardiogram band energies; `grids`: a chess-move policy network on board planes, a
sea-ice concentration CNN on passive-microwave brightness temperatures), each script making its own synthetic data from
the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds
them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen
before scoring; README.md has the smoke tables.
"""
