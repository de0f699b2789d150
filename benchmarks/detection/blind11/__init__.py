"""Eleventh blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind11`).

Six new training settings in three modules (`speech`: GE2E speaker verification, mask-based source separation;
`generative`: WGAN-GP on a 2-D mixture, a Gumbel-softmax VAE; `series`: a GRU-D classifier of irregular series with
missing values, a TabNet-like model with sparsemax attention), each script making its own synthetic data from the
seed; `suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with
no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
