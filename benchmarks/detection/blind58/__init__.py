"""Fifty-eighth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind58`).

Six new training settings in three modules (`growers`: a beekeeper's pollen-forager classifier on the hive-entrance
camera's crops (a 2-D CNN), an orchard's midday stem-water-potential regressor for its irrigation (a ReLU MLP over
embedded block and rootstock); `makers`: a glass studio's annealing-crack warning from its annealer's log (a 1-D CNN),
a bicycle factory's wheel-truing check on the stand's rim profiles (a 1-D convolutional autoencoder); `passage`: a
yacht's set-and-drift forecaster (a GRU over the log's records), a choir's voice-part classifier over a sung excerpt
(a small transformer encoder)), each script making its own synthetic data from the seed and building its optimizer
by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner
and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the
smoke tables.
"""
