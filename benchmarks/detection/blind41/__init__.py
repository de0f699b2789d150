"""Forty-first blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind41`).

Six new training settings in three modules (`industry`: a rail-track geometry fault classifier on axle-box
accelerations (a 1-D CNN), a steel-coil surface-defect CNN; `wild`: a seabird dive classifier on biologger depth traces
(a GRU), a wildfire-smoke PM2.5 regressor from satellite aerosol optical depth; `daily`: a library-loan demand
forecaster, a sourdough rise-time regressor), each script making its own synthetic data from the seed and building
its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier
splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring;
README.md has the smoke tables.
"""
