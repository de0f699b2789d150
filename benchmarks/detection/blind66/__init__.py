"""Sixty-sixth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind66`).

Six new training settings in three modules (`climates`: an orchard's blossom kill after a protected frost night from
its frost-protection log (a GRU), a bakery's proofing-cabinet fault detector on the hour after loading (a ReLU
autoencoder); `flows`: a harbour pilotage service's squat model from the pilots' PPU logs (a ReLU MLP over the reach
embedded), a wind tunnel's flow-state classifier on an aerofoil's pressure taps (a small self-attention encoder);
`optics`: a dye house's shade-sorting classifier on the spectrophotometer's reflectance curves (a 1-D CNN), a sign
classifier on the hand tracker's landmarks of sign-language clips (an LSTM)), each script making its own synthetic
data from the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs
and binds them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules
and frozen before scoring; README.md has the smoke tables.
"""
