"""Twenty-ninth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind29`).

Six new training settings in three modules (`operations`: a warehouse pick-time regressor, a call-centre volume
forecaster; `surveys`: a bird-species classifier on tabular field traits, a hyperspectral pixel classifier (a 1-D CNN
over the bands); `monitoring`: a sepsis early-warning GRU over hourly vital signs, a solar-flare classifier on
magnetogram features), each script making its own synthetic data from the seed and building its optimizer by the
thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and oracle;
`smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
