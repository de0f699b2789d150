"""The second blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind2`).

Realistic PyTorch training scripts in domains the first blind split did not cover, and harmful mistakes
people report, written from one-line briefs without reading the rules, their documentation, their tuning
notes or any score, and frozen before it is scored: the split is scored once, at the end of the rule work.
`data` generates the synthetic data; `generative`, `sequence`, `vision`, `representation`, `structured` and
`rl` hold the scripts (run through the first split's harness, `blind.harness`); `suite` the declared
programs, their labels and the ground truth; `smoke` checks them without any rule. README.md records the
smoke runs.
"""
