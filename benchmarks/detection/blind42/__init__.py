"""Forty-second blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind42`).

Six new training settings in three modules (`farm`: a shrimp-pond dissolved-ammonia forecaster (a GRU), a
mushroom-farm growing-room CO2 regressor; `lab`: a wind-tunnel drag-coefficient regressor on airfoil shape
parameters, a hearing-aid feedback-howl detector on audio band energies; `site`: a pallet-rack impact detector on
accelerometer bursts (a 1-D CNN), a vineyard frost-night classifier from weather-station readings), each script
making its own synthetic data from the seed and building its optimizer by the thirteenth split's `optimizers`;
`suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with no
rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
