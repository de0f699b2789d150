"""Twenty-seventh blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind27`).

Six new training settings in three modules (`audio`: a voice-activity detector on audio frames, a song-popularity
regressor on audio descriptors; `fields`: a species-distribution model from environmental covariates, a wine-quality
regressor on physicochemical measurements; `outcomes`: a football-match outcome model, a job-posting salary regressor
on text features), each script making its own synthetic data from the seed and building its optimizer by the
thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and oracle;
`smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
