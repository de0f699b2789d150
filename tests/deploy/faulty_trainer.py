"""A numpy training loop with a bug, for the deployment tests: from step 60 on, a normalisation divides
by a zero norm and fc0's gradient turns NaN, which then spreads into the weights and the loss.

Capture is configured by TRAINGUARD_* variables (as in a DebugJob pod or under `trainguard run`).
Usage: python tests/deploy/faulty_trainer.py [STEPS]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from numpy_mlp import MLP, make_data

import trainguard

BUG_STEP = 60


def main(steps: int) -> None:
    model = MLP([20, 32, 10], seed=0)
    x, y = make_data(n=2048, features=20, classes=10, seed=0)
    xv, yv = make_data(n=256, features=20, classes=10, seed=1)
    rng = np.random.default_rng(0)
    with trainguard.Recorder() as rec, np.errstate(all="ignore"):
        for step in range(steps):
            idx = rng.integers(0, len(x), 64)
            loss, grads, acts = model.forward_backward(x[idx], y[idx])
            if step >= BUG_STEP:
                grads["fc0.weight"] = grads["fc0.weight"] / np.float32(0.0) * np.float32(0.0)
            model.record(rec, grads, acts)
            model.sgd(grads, lr=0.1)
            rec.record_scalar("loss", loss)
            if step % 20 == 0:
                rec.record_scalar("val_loss", model.loss(xv, yv), mode="eval")
            rec.step()
            if rec.should_stop():
                print(f"stopped by TrainGuard at step {step}", flush=True)
                return


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
