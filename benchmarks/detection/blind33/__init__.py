"""Thirty-third blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind33`).

Six new training settings in three modules (`monitors`: a sleep-apnoea detector on SpO2 and airflow, a greenhouse
inside-temperature forecaster; `labs`: a mass-spectrometry precursor-charge classifier for peptides, a solder-joint
defect CNN on X-ray crops of circuit boards; `regions`: a road-noise level regressor from traffic counts, an
Arabic-dialect classifier on character trigrams), each script making its own synthetic data from the seed and building
its optimizer by the thirteenth split's `optimizers`; `suite` declares the programs and binds them to the earlier
splits' runner and oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring;
README.md has the smoke tables.
"""
