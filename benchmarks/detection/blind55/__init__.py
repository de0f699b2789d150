"""Fifty-fifth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind55`).

Six new training settings in three modules (`handling`: an aircraft turnaround-time regressor for apron planning, a
recovered-paper bale grader on near-infrared spectra; `water`: a fish-farm dissolved-oxygen forecaster (an LSTM over
the hours), a crevasse detector on ground-penetrating radar (a 2-D CNN); `show`: a stage LED fixture's colour
calibration model (a SiLU MLP), an archery release classifier on a bow-mounted motion sensor (a small transformer
encoder)), each script making its own synthetic data from the seed and building its optimizer by the thirteenth
split's `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke`
runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
