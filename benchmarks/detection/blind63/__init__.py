"""Sixty-third blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind63`).

Six new training settings in three modules (`stations`: an unmanned lighthouse's next-dawn battery charge from its
controller log (a GRU), a glacier weather station's daily melt from its three-hourly records (a small self-attention
encoder); `benches`: a bindery's page-pull outcome of perfect-bound jobs (a ReLU MLP over the adhesive embedded), a
honey packer's days to granulation of its lots (a SiLU MLP under the Huber loss); `lines`: a circus's rigging-load
event classifier on an aerial act's bridle legs (a 1-D CNN), a map library's symbol classifier on scanned topographic
sheets (a 2-D CNN)), each script making its own synthetic data from the seed and building its optimizer by the
thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and
oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke
tables.
"""
