"""Twentieth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind20`).

Six new training settings in three modules (`atmosphere`: an air-quality (PM2.5) forecaster with weather covariates,
a sea-surface temperature anomaly regressor; `imagery`: a solar-power nowcaster from small sky images, a bird-call
detector on spectrogram clips; `people`: an ordinal regression of review star ratings by cumulative logits, a
signature verification network), each script making its own synthetic data from the seed and building its optimizer
by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and
oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke
tables.
"""
