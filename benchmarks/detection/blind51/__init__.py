"""Fifty-first blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind51`).

Six new training settings in three modules (`land`: a peat-bog water-table forecaster (a GRU cell over daily
weather and dipwell logs), a potato-store sprouting classifier from CO2 and temperature logs; `sound`: a tram-rail
corrugation 1-D CNN on axle-box microphone windows, a church-bell clapper-crack detector on strike spectra; `sites`:
a wastewater sludge-settleability (SVI) regressor, a bowling first-ball pin-count model from lane sensors), each
script making its own synthetic data from the seed and building its optimizer by the thirteenth split's
`optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke` runs
them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
