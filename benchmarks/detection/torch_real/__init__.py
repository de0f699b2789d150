"""The realistic PyTorch suite of the detection benchmark (`python -m benchmarks.detection.run --suite torch-real`).

`data` generates the synthetic data sets, `loop` holds the shared training loop and where bugs go,
`workloads` the kinds of training job, `suite` the programs, their labels and the oracle's ground truth.
"""
