"""Sixty-fifth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind65`).

Six new training settings in three modules (`ropes`: a kelp farm's next-day peak tension on a longline's headline (an
LSTM), a chairlift's sheave-train vibration spectra checked by an autoencoder (an ELU MLP autoencoder); `furnaces`: a
brickworks' fired-brick grade from its tunnel kiln's firing trace (a 1-D CNN), a bell foundry's strike-note partials
of a bell from its profile (a GELU MLP); `halls`: a velodrome's team-pursuit finishing time from the ride's first eight
laps (a small self-attention encoder), a tea blender's tasting-panel score of a blend from its component lots (a
deep-set MLP over the lots with their gardens embedded)), each script making its own synthetic data from the seed and
building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the
earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before
scoring; README.md has the smoke tables.
"""
