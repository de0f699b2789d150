"""`auc_drop` with its default parameters (it is in the default set) stays quiet on healthy prediction streams.

Healthy here: a model that learns (the AUC rises fast, then slowly), batches from data shards of
different difficulty, a periodic (epoch-like) wobble of the separation; at a 10% and a 0.5%
positive rate, counts written every 10 steps as the capture does.
"""

from __future__ import annotations

import numpy as np
import pytest

from trainguard.rules import auc, registry
from trainguard.rules.step_view import StepView
from trainguard.store import prediction_buckets


def healthy_views(
    kind: str, *, seed: int, rate: float, steps: int = 3000, batch: int = 512
) -> list[StepView]:
    rng = np.random.default_rng(seed)
    shards = rng.normal(0.0, 0.15, 16)
    prior = np.log(rate / (1 - rate))
    views, acc = [], np.zeros((prediction_buckets.ROWS, prediction_buckets.BUCKETS))
    for step in range(steps):
        y = (rng.random(batch) < rate).astype(float)
        separation = 0.2 + 1.8 * (1 - np.exp(-step / 400))
        if kind == "shards":
            separation += shards[(step // 25) % shards.size]
        elif kind == "epochs":
            separation += 0.1 * np.sin(2 * np.pi * step / 500)
        acc += prediction_buckets.count(rng.normal(size=batch) + separation * y + prior, y, logits=True)
        if step % 10 == 0:
            views.append(StepView(step=step, predictions={"pred/ctr": acc}))
            acc = np.zeros_like(acc)
    return views


def test_auc_drop_is_in_the_default_set_and_notifies() -> None:
    assert dict(registry.DEFAULT_SET)["auc_drop"].value == "notify"


@pytest.mark.parametrize("rate", [0.1, 0.005])
@pytest.mark.parametrize("kind", ["learning", "shards", "epochs"])
def test_auc_drop_stays_quiet_on_a_healthy_prediction_stream(kind: str, rate: float) -> None:
    spec = next(s for s in registry.default_rules() if s.type == "auc_drop")
    rule = registry.build(spec)
    found = [f.message for v in healthy_views(kind, seed=1, rate=rate) for f in rule.update(v)]
    assert found == []


def test_the_baseline_weighs_the_steps_between_views_from_step_0_on() -> None:
    # the first view at step 0 once counted as "no previous view", so the next one, 10 steps
    # later, moved the baseline as if 1 step had passed
    views = healthy_views("smooth", seed=0, rate=0.1, steps=20)
    rule = registry.get("auc_drop")()
    p = rule.params
    counts = auc.DecayedCounts(p.half_life_steps)  # type: ignore[attr-defined]
    estimates = []
    for v in views:
        rule.update(v)
        counts.update(v.step, v.predictions["pred/ctr"])
        estimates.append(counts.estimate().auc)
    g = 0.5 ** (10 / p.baseline_half_life_steps)  # type: ignore[attr-defined]
    expected = g * estimates[0] + (1 - g) * estimates[1]
    assert rule.get_state()["pred/ctr"]["baseline"] == pytest.approx(expected)
