"""The tenth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind10`).

Realistic PyTorch training scripts in settings no earlier split covered, and mistakes people report, written from
one-line briefs without reading the rules, their documentation, their tuning notes or any score, and frozen before
it is scored. `vision`, `sequences` and `learning` hold the scripts, each generating its synthetic data from the
seed (run through the first split's harness, `blind.harness`, each ending its steps with the third split's
`blind3.harness.close_step`); `suite` the declared programs, their labels and the ground truth; `smoke` checks them
without any rule (the second split's smoke runner). README.md records the smoke runs.
"""
