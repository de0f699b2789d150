"""AUC accuracy versus bucket count, and the cost of counting predictions.

One command: `.venv/bin/python benchmarks/auc_buckets.py [--samples N]`. Part 1 prints, for a
balanced and a CTR-like (0.2% positive) binary task, the error of the bucketed AUC against the
exact rank-based AUC: the usual 200 linear buckets (TensorFlow's default, the peer) beside our
log-odds buckets at several counts, with the stated error bound. Part 2 prints the time to count
one million predictions with numpy and with PyTorch (CPU, and CUDA when present).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from trainguard.rules import auc
from trainguard.store import prediction_buckets


def ctr_like(n: int, base_rate: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    logit = rng.normal(math.log(base_rate / (1 - base_rate)), 0.9, n)
    labels = (rng.random(n) < 1 / (1 + np.exp(-(logit + rng.normal(0, 0.9, n))))).astype(np.float64)
    return 1 / (1 + np.exp(-logit)), labels


def linear_counts(scores: np.ndarray, labels: np.ndarray, buckets: int) -> np.ndarray:
    b = np.clip((scores * buckets).astype(np.int64), 0, buckets - 1)
    return np.stack(
        [np.bincount(b[labels > 0.5], minlength=buckets), np.bincount(b[labels <= 0.5], minlength=buckets)]
    )


def accuracy_table(n: int) -> None:
    print(f"AUC error vs bucket count ({n:,} samples; error = bucketed - exact)")
    print(
        f"{'task':<18}{'exact':>8}  {'buckets':<20}{'AUC':>8}{'error':>11}{'bound':>10}  {'bound vs peer':>14}"
    )
    for label, rate in (("balanced (50%)", 0.5), ("CTR-like (0.2%)", 0.002)):
        s, y = ctr_like(n, rate, seed=1)
        exact = auc.exact_auc(s, y)
        peer = auc.auc_from_counts(linear_counts(s, y, 200))
        rows = [("200 linear (peer)", peer), ("1000 linear", auc.auc_from_counts(linear_counts(s, y, 1000)))]
        for b in (200, 1000, 10_000, 100_000):
            rows.append((f"{b} log-odds", auc.auc_from_counts(prediction_buckets.count(s, y, buckets=b))))
        for name, est in rows:
            err = est.auc - exact
            ratio = f"{peer.error_bound / est.error_bound:.3g}x tighter" if est.error_bound > 0 else "exact"
            print(
                f"{label:<18}{exact:>8.4f}  {name:<20}{est.auc:>8.4f}{err:>+11.1e}{est.error_bound:>10.1e}  {ratio:>14}"
            )


def cost_table(n: int) -> None:
    s, y = ctr_like(n, 0.01, seed=2)
    print(f"\nCounting cost per million predictions ({prediction_buckets.BUCKETS} buckets)")
    print(f"{'backend':<14}{'ms per 1M':>12}")
    reps = 5
    t0 = time.perf_counter()
    for _ in range(reps):
        prediction_buckets.count(s, y)
    print(f"{'numpy':<14}{(time.perf_counter() - t0) / reps / n * 1e6 * 1e3:>12.1f}")
    try:
        import torch

        from trainguard.capture.prediction_counter import PredictionCounter
    except ImportError:
        return
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for dev in devices:
        ts = torch.tensor(s, dtype=torch.float32, device=dev)
        ty = torch.tensor(y, dtype=torch.float32, device=dev)
        counter = PredictionCounter()
        counter.add(ts, ty)
        counter.take()
        if dev == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            counter.add(ts, ty)
        counter.take()  # includes the one device-to-host copy
        dt = (time.perf_counter() - t0) / reps
        print(f"{'torch ' + dev:<14}{dt / n * 1e6 * 1e3:>12.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=400_000)
    args = ap.parse_args()
    accuracy_table(args.samples)
    cost_table(1_000_000)


if __name__ == "__main__":
    main()
