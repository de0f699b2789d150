"""Thirteenth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind13`).

Six new training settings in three modules (`perception`: a single-object box regressor with L1 and GIoU losses, a
spiking network trained with a surrogate gradient; `energy`: a Hamiltonian neural network fitted to pendulum
trajectories, a restricted Boltzmann machine trained by contrastive divergence; `preferences`: LambdaRank, a reward
model fitted to pairwise preferences), each script making its own synthetic data from the seed and building its
optimizer by `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and oracle;
`smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
