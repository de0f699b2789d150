"""Twenty-fourth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind24`).

Six new training settings in three modules (`signals`: a sleep-stage classifier (a 1-D CNN over EEG epochs), a
hand-gesture classifier on forearm EMG features; `driving`: a lane-keeping steering regressor from small road images,
a fuel-consumption regressor on OBD-II trip segments; `messages`: an SMS spam filter, a malware detector on API-call
traces), each script making its own synthetic data from the seed and building its optimizer by the thirteenth split's
`optimizers` (the gesture script by the linear scaling rule); `suite` declares the programs and binds them to the
earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before
scoring; README.md has the smoke tables.
"""
