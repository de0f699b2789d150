"""Sixtieth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind60`).

Six new training settings in three modules (`monitors`: a volcano observatory's unrest classifier over the last ten
days of its monitoring (a GRU), a railway signalling control centre's delay forecaster over a train's last timing
points (a small transformer encoder with ReZero residuals); `studios`: a dyehouse's levelness grader on scans of dyed
fabric (a 2-D CNN), a perfume house's quality check of incoming lavender oil lots by their gas chromatograms (an
autoencoder); `seasons`: an ice hockey analytics group's expected-goals model on play-by-play shots (a ReLU MLP with
embeddings), a dairy farm's heat detector on neck-collar activity and rumination (a 1-D CNN)), each script making its
own synthetic data from the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares
the programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to
the rules and frozen before scoring; README.md has the smoke tables.
"""
