"""Fifty-sixth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind56`).

Six new training settings in three modules (`rails`: a railway point-machine fault classifier on the motor current of
a throw (a 1-D CNN), a seismic-event discriminator telling quarry blasts from earthquakes (attention pooling over the
stations); `cellar`: a grape-ripeness forecaster over a vineyard block's weekly samples (a GRU), a reactive-dye shade
predictor for a cotton dyehouse (a GELU MLP); `arena`: a clear-aligner treatment-length model for an orthodontic
practice (a tanh MLP), a match-outcome model on a team game's hero draft (hero embeddings and a transformer encoder
layer)), each script making its own synthetic data from the seed and building its optimizer by the thirteenth split's
`optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke` runs them
with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
