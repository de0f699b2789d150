"""Fifty-ninth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind59`).

Six new training settings in three modules (`atelier`: a type foundry's kerning-pair model (a ReLU MLP over the glyphs'
side profiles and embeddings), a museum conservation lab's pigment identifier on handheld XRF spectra (a 1-D CNN over
energy); `site`: a tunnel boring machine's penetration forecaster over its last rings (an LSTM), a windsurfing club's
manoeuvre classifier on GPS watch tracks (a small transformer encoder); `trades`: a bakery's proofing grader on crumb
scans (a 2-D CNN), a hearing-aid clinic's fitting model from audiograms (a GELU MLP)), each script making its own
synthetic data from the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the
programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the
rules and frozen before scoring; README.md has the smoke tables.
"""
