"""Fifteenth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind15`).

Six new training settings in three modules (`vision`: a displacement regressor on pairs of tiny frames, a Siamese
change detector; `sequences`: a world model of a torque-driven pendulum, a next-note model of symbolic melodies;
`records`: a discrete-time survival model of monthly hazards, a denoising autoencoder imputing a table's missing
values), each script making its own synthetic data from the seed and building its optimizer by the thirteenth split's
`optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke` runs them
with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
