"""The rules on a real run: a small numpy MLP trained with SGD, captured by `Recorder`, read back
through the store and turned into views by the evaluator's `ViewBuilder`.

Healthy runs (one whose loss falls towards zero, one that plateaus at a noisy level) leave every
built-in rule quiet; the same script with a learning rate 1000x too
high is stopped by `exploding_tensor`, which names where the non-finite values started (here first
float64 values beyond the float32 range of the stored statistics, then Inf and NaN).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import trainguard
from trainguard.rules import registry
from trainguard.rules.base import Finding
from trainguard.rules.step_view import COL, StepView
from trainguard.sidecar.view_builder import ViewBuilder, save_interval_of


def train(
    out: Path, *, lr: float, steps: int = 400, seed: int = 0, spread: float = 1.5, samples: int = 2048
) -> None:
    """Two-layer ReLU MLP on 4 Gaussian blobs in 16-D, softmax cross-entropy, minibatch SGD.

    With `spread` 1.5 the blobs separate and the loss falls towards zero; with 6 they overlap
    and the loss plateaus at a noisy level."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 2.0, (4, 16))
    y_all = rng.integers(0, 4, samples)
    x_all = centres[y_all] + rng.normal(0, spread, (samples, 16))
    x_val, y_val = x_all[:256], y_all[:256]
    w1 = rng.normal(0, np.sqrt(2 / 16), (16, 64))
    b1 = np.zeros(64)
    w2 = rng.normal(0, np.sqrt(1 / 64), (64, 4))
    b2 = np.zeros(4)

    def forward(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        h = np.maximum(x @ w1 + b1, 0)
        z = h @ w2 + b2
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        return h, z, p

    with (
        np.errstate(all="ignore"),
        trainguard.Recorder(f"file://{out}", save_interval=1, tier1_interval=10) as rec,
    ):
        for _ in range(steps):
            idx = rng.integers(256, samples, 32)
            x, y = x_all[idx], y_all[idx]
            h, _, p = forward(x)
            loss = float(-np.log(p[np.arange(len(y)), y] + 1e-12).mean())
            d = p.copy()
            d[np.arange(len(y)), y] -= 1
            d /= len(y)
            gw2, gb2 = h.T @ d, d.sum(0)
            dh = (d @ w2.T) * (h > 0)
            gw1, gb1 = x.T @ dh, dh.sum(0)
            w1, b1, w2, b2 = w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2
            rec.record_tensor("fc1.weight", w1, collection="weights", module="fc1", order=0)
            rec.record_tensor("fc1.bias", b1, collection="biases", module="fc1", order=0)
            rec.record_tensor("grad/fc1.weight", gw1, collection="gradients", module="fc1", order=0)
            rec.record_tensor(
                "act/relu1", h, collection="activations", module="relu1", activation="relu", order=1
            )
            rec.record_tensor("fc2.weight", w2, collection="weights", module="fc2", order=2)
            rec.record_tensor("grad/fc2.weight", gw2, collection="gradients", module="fc2", order=2)
            rec.record_scalar("loss", loss)
            if rec.current_step % 25 == 0:
                _, _, pv = forward(x_val)
                val = float(-np.log(pv[np.arange(len(y_val)), y_val] + 1e-12).mean())
                rec.record_scalar("loss", val, mode="eval")
            rec.step()


def views_of(out: Path) -> list[StepView]:
    run = trainguard.open_run(f"file://{out}")
    source = run.source(0)
    builder = ViewBuilder(rank=0, save_interval=save_interval_of(run.info))
    views: list[StepView] = []
    for seg in source.poll():
        views += builder.views(seg, source.catalogue())
    return views


def evaluate(views: list[StepView], names: list[str]) -> dict[str, list[Finding]]:
    rules = {name: registry.get(name)() for name in names}
    found: dict[str, list[Finding]] = {name: [] for name in names}
    for v in views:
        for name, rule in rules.items():
            found[name] += rule.update(v)
    return found


@pytest.mark.parametrize(
    ("spread", "samples", "lr", "seed"),
    [(1.5, 2048, 0.1, 0), (3.0, 50_000, 0.05, 1)],
    ids=["separable-loss-near-zero", "overlapping-noisy-plateau"],
)
def test_a_healthy_numpy_run_leaves_every_builtin_rule_quiet(
    tmp_path: Path, spread: float, samples: int, lr: float, seed: int
) -> None:
    train(tmp_path, lr=lr, spread=spread, samples=samples, seed=seed)
    views = views_of(tmp_path)
    # Steps, not views: a step whose data reaches the store in two flushes (a timed flush on a busy
    # machine) gives two views of that step.
    assert (
        len({v.step for v in views}) == 400
        and len({v.step for v in views if v.units}) == 40
        and len({v.step for v in views if v.eval_scalars}) == 16
    )
    assert views[-1].scalars["loss"] < 0.5 * views[0].scalars["loss"]  # it did learn
    found = evaluate(views, [n for n in registry.BUILTINS if n != "threshold"])
    assert {n: [f.message for f in fs[:2]] for n, fs in found.items() if fs} == {}


def test_the_same_run_with_a_huge_learning_rate_is_caught_by_exploding_tensor(tmp_path: Path) -> None:
    train(tmp_path, lr=300.0, steps=200)
    views = views_of(tmp_path)
    nonfinite = COL["nan"], COL["inf"]
    first_nonfinite = next(
        v.step for v in views if v.stats[:, nonfinite].any() or not np.isfinite(v.scalars["loss"])
    )
    # the run is float64; statistics are stored as float32, so values beyond its range show first as
    # an infinite min or max with no Inf counted
    first_overflow = next(v.step for v in views if np.isinf(v.stats[:, [COL["min"], COL["max"]]]).any())
    assert first_overflow < first_nonfinite
    found = evaluate(views, ["exploding_tensor"])["exploding_tensor"]
    assert found and found[0].step == first_overflow
    assert found[0].tensor is not None and found[0].message.startswith(found[0].tensor)
    assert "beyond float32's range" in found[0].message
    # a step flushed in two segments (a timed flush) gives two views of it: any finding of that step counts
    at_nonfinite = [f.message for f in found if f.step == first_nonfinite]
    # the first non-finite tensor in execution order may still be the overflowing activation
    assert any(k in m for m in at_nonfinite for k in ("Inf values", "scalar", "beyond float32's range")), (
        at_nonfinite
    )
    # before any of it, the weights' norm multiplied in one step: weight_update_ratio's blow-up
    blow_up = evaluate(views, ["weight_update_ratio"])["weight_update_ratio"]
    assert blow_up and blow_up[0].step == 1 and "norm grew" in blow_up[0].message
