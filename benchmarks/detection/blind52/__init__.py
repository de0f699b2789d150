"""Fifty-second blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind52`).

Six new training settings in three modules (`workshop`: a bakery proofing-time regressor from dough-probe and proofer
humidity logs, a parquet-plank defect CNN on 16-bit line scans; `traces`: a ferry-engine fuel-injector fault 1-D CNN
on rail-pressure traces, a vaccine-fridge temperature-excursion LSTM on hourly logger readings; `sport`: a
tennis-racket string-tension regressor from the impact's sound, a ski-jump distance regressor), each script making
its own synthetic data from the seed and building its optimizer by the thirteenth split's `optimizers`; `suite`
declares the programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with no rule.
Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
