"""A numpy training loop with a bug, for the deployment tests: from step 60 on, the validation loss is the
mean over an empty batch (a data-loader bug) and turns NaN, while training itself stays healthy, so that
every other metric (norms, update ratios, AUC) keeps finite values.

It also records its predictions (class probabilities), so the AUC metrics have data. Capture is configured
by TRAINGUARD_* variables (as in a DebugJob pod or under `trainguard run`).
Usage: python tests/deploy/faulty_trainer.py [STEPS]
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from numpy_mlp import MLP, make_data

import trainguard

BUG_STEP = 60


def probabilities(model: MLP, x: np.ndarray) -> np.ndarray:
    """Return the model's class probabilities for `x` (the forward pass of `MLP.forward_backward`)."""
    h = x
    for i in range(model.layers):
        z = h @ model.params[f"fc{i}.weight"].T + model.params[f"fc{i}.bias"]
        h = model._act(z) if i < model.layers - 1 else z
    p = np.exp(h - h.max(axis=1, keepdims=True))
    return np.asarray(p / p.sum(axis=1, keepdims=True))


def main(steps: int) -> None:
    model = MLP([20, 32, 10], seed=0)
    x, y = make_data(n=2048, features=20, classes=10, seed=0)
    xv, yv = make_data(n=256, features=20, classes=10, seed=1)
    rng = np.random.default_rng(0)
    warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)  # the bug, on purpose
    with trainguard.Recorder() as rec, np.errstate(all="ignore"):
        for step in range(steps):
            idx = rng.integers(0, len(x), 64)
            loss, grads, acts = model.forward_backward(x[idx], y[idx])
            model.record(rec, grads, acts)
            model.sgd(grads, lr=0.1)
            rec.record_scalar("loss", loss)
            rec.record_predictions(probabilities(model, x[idx]), y[idx])
            if step % 20 == 0:
                batch = slice(0, 0) if step >= BUG_STEP else slice(None)
                rec.record_scalar("val_loss", model.loss(xv[batch], yv[batch]), mode="eval")
                rec.record_predictions(probabilities(model, xv), yv, mode="eval")
            rec.step()
            if rec.should_stop():
                print(f"stopped by TrainGuard at step {step}", flush=True)
                return


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
