"""Forty-third blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind43`).

Six new training settings in three modules (`water`: an offshore mooring-line tension forecaster (an LSTM), a rooftop
rainwater-tank level forecaster; `goods`: a cocoa-bean fermentation-grade classifier on cut-test colour histograms, a
tonewood stiffness regressor from tap-tone spectra; `field`: a horse-race win-probability model (a softmax over each
race's runners), a grass-pollen count forecaster), each script making its own synthetic data from the seed and
building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the
earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before
scoring; README.md has the smoke tables.
"""
