"""Seventeenth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind17`).

Six new training settings in three modules (`sequences`: an image captioner with a CNN encoder and a GRU decoder,
an algorithmic transformer reversing digit strings; `structures`: a molecular property regressor by message
passing, a neural oblivious decision ensemble on loan applications; `images`: a colourisation CNN, a neural cellular
automaton grown to a target pattern), each script making its own synthetic data from the seed and building its
optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier splits'
runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has
the smoke tables.
"""
