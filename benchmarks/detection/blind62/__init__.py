"""Sixty-second blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind62`).

Six new training settings in three modules (`workshop`: an organ builder's flue-pipe voicing classifier on the
analyser's tracks of each pipe's attack (a 1-D CNN over the frames), a fireworks factory's star-colour classifier from
the star's recipe (a small transformer encoder over the ingredients); `outdoors`: a salt-marsh survey's vegetation-zone
classifier for its plots (a ReLU MLP over the plot's levels and chemistry, the substrate and grazing embedded), a ski
area's gondola queue forecaster at the valley station (an LSTM over the quarter hours); `cold`: a cheese cave's rind
classifier on the photo round's crops (a 2-D CNN), an ice road's thickness forecaster for its check points (a GRU over
the days)), each script making its own synthetic data from the seed and building its optimizer by the thirteenth
split's `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke`
runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
