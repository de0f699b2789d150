"""Forty-fifth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind45`).

Six new training settings in three modules (`music`: a pipe-organ tuning-drift forecaster from church temperature
logs, an orchestral instrument-family classifier on mel-spectrogram frames (a 1-D CNN); `mill`: a sugar-mill boiler
steam-demand forecaster, a wine-cork taint classifier from GC-MS peak tables; `outdoors`: a rowing crew's 500 m split
regressor from stroke rate and force curves, an urban street-temperature regressor from land-cover fractions), each
script making its own synthetic data from the seed and building its optimizer by the thirteenth split's `optimizers`;
`suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with no
rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
