"""Thirty-eighth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind38`).

Six new training settings in three modules (`sensors`: a wind-turbine blade-icing detector on SCADA windows, a ship-hull
fouling speed-loss regressor on noon reports; `produce`: a grape-ripeness (Brix) regressor from hyperspectral band
means, a beer-fermentation final-gravity regressor from a floating hydrometer's first four days; `ledgers`: a pharmacy
prescription-demand forecaster, a cricket ball-tracking LBW classifier), each script making its own synthetic data from
the seed and building its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds
them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen
before scoring; README.md has the smoke tables.
"""
