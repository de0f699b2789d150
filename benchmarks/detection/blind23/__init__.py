"""Twenty-third blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind23`).

Six new training settings in three modules (`clinic`: a glucose forecaster (a GRU over continuous-glucose-monitor
readings, insulin and meals), a tumour-subtype classifier on gene-expression counts from several labs; `outcomes`: a
wind-turbine power-curve model on SCADA records, a tic-tac-toe position evaluator; `roads`: a traffic-sign classifier
(a CNN on small colour crops), a taxi-fare regressor on trip records), each script making its own synthetic data from
the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds
them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen
before scoring; README.md has the smoke tables.
"""
