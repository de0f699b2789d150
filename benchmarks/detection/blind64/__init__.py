"""Sixty-fourth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind64`).

Six new training settings in three modules (`fields`: a vineyard's root-zone water forecast for its drip scheduling
(an LSTM), an estuary car ferry's crossing time (a ReLU MLP over the vessel embedded); `mills`: a paper mill's
web-inspection defect classifier (a 2-D CNN over the transmitted and reflected views), a stamping press's
tonnage-signature anomaly detector (an autoencoder); `rooms`: a hospital laundry's tunnel-washer batch check (a 1-D
CNN), a choir's reading of a room's reverberation time from the cut-off of its final chord (a small self-attention
encoder)), each script making its own synthetic data from the seed and building its optimizer by the thirteenth
split's `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke`
runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
