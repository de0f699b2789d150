"""Tenth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind10`).

Seven new training settings in three modules (`vision`: depth, keypoints, crowd counting; `sequences`: SASRec, a
neural point process; `learning`: MAML, federated learning), each script making its own synthetic data from the
seed; `suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with
no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
