"""Sixty-first blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind61`).

Six new training settings in three modules (`crafts`: a coffee roastery's roast-colour predictor from its roaster's log
(a GRU), a pottery studio's glaze-surface classifier from the glaze's unity formula and the firing (a ReLU MLP over
embedded cone, atmosphere and cooling); `machines`: a ski area's haul-rope inspection classifier on magnetic rope test
traces (a 1-D CNN along the rope), a tidal-stream turbine's next-hour power forecaster (a small transformer encoder);
`field`: a falconry centre's weight-management model over its hawks' weighing book (an LSTM), an archery club's
form-fault classifier on the hit maps of practice rounds (a 2-D CNN)), each script making its own synthetic data from
the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them
to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before
scoring; README.md has the smoke tables.
"""
