"""The blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind`).

Realistic PyTorch training scripts and harmful bugs written from one-line briefs without reading the
rules, their tuning notes or their scores, and frozen before any rule change: the split is scored once,
at the end of the rule work. `data` generates the synthetic data, `harness` holds the run context,
`generative`, `representation`, `sequence`, `tabular`, `recipes`, `vision` and `rl` the scripts, and
`suite` the declared programs, their labels and the ground truth. README.md records the smoke tests.
"""
