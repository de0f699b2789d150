"""AUC from bucket counts: agreement with the rank-based AUC, merging, decay, and the two AUC rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainguard.rules import auc
from trainguard.rules.auc_drop import AucDrop
from trainguard.rules.auc_resolution import AucResolution
from trainguard.rules.step_view import StepView
from trainguard.store import prediction_buckets


def _ctr_like(n: int, base_rate: float, seed: int, *, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Scores and labels as in rules-science §5: logit ~ N(mu, 0.9^2), label ~ Bernoulli(sigma(logit + noise))."""
    rng = np.random.default_rng(seed)
    mu = math.log(base_rate / (1 - base_rate))
    logit = rng.normal(mu, 0.9, n)
    labels = (
        rng.random(n) < 1 / (1 + np.exp(-(logit + shift * rng.normal(0, 1, n) + rng.normal(0, 0.9, n))))
    ).astype(np.float64)
    return 1 / (1 + np.exp(-logit)), labels


@pytest.mark.parametrize("base_rate", [0.5, 0.002])
def test_bucketed_auc_is_within_its_stated_bound_of_the_exact_auc(base_rate: float) -> None:
    scores, labels = _ctr_like(400_000, base_rate, seed=1)
    exact = auc.exact_auc(scores, labels)
    est = auc.auc_from_counts(prediction_buckets.count(scores, labels))
    assert abs(est.auc - exact) <= est.error_bound + 1e-12
    assert est.error_bound < 1e-3
    assert est.positives + est.negatives == scores.size


def test_two_hundred_linear_buckets_are_far_off_on_rare_positives_where_log_odds_buckets_are_not() -> None:
    scores, labels = _ctr_like(400_000, 0.002, seed=2)
    exact = auc.exact_auc(scores, labels)
    b = np.clip((scores * 200).astype(np.int64), 0, 199)
    linear = np.stack(
        [np.bincount(b[labels > 0.5], minlength=200), np.bincount(b[labels < 0.5], minlength=200)]
    )
    assert exact - auc.auc_from_counts(linear).auc > 0.05
    assert abs(auc.auc_from_counts(prediction_buckets.count(scores, labels)).auc - exact) < 1e-3


def test_merging_two_ranks_counts_equals_counting_the_union() -> None:
    s1, y1 = _ctr_like(50_000, 0.05, seed=3)
    s2, y2 = _ctr_like(70_000, 0.05, seed=4)
    merged = prediction_buckets.count(s1, y1) + prediction_buckets.count(s2, y2)
    union = prediction_buckets.count(np.concatenate([s1, s2]), np.concatenate([y1, y2]))
    np.testing.assert_array_equal(merged[:2], union[:2])
    np.testing.assert_allclose(merged[2], union[2], rtol=1e-12)


def test_exact_auc_counts_ties_as_one_half() -> None:
    assert auc.exact_auc(np.array([0.5, 0.5]), np.array([1, 0])) == 0.5
    assert auc.exact_auc(np.array([0.9, 0.1, 0.5]), np.array([1, 0, 0])) == 1.0


def test_torch_counter_on_the_device_equals_the_numpy_reference() -> None:
    torch = pytest.importorskip("torch")
    from trainguard.capture.prediction_counter import PredictionCounter

    scores, labels = _ctr_like(20_000, 0.01, seed=5)
    counter = PredictionCounter()
    counter.add(torch.tensor(scores[:7000], dtype=torch.float32), torch.tensor(labels[:7000]))
    counter.add(torch.tensor(scores[7000:], dtype=torch.float32), torch.tensor(labels[7000:]))
    got = counter.take()[-1]
    ref = prediction_buckets.count(scores.astype(np.float32), labels)
    # float32 scores: a value on a bucket edge may land one bucket over; totals must agree exactly.
    assert got[0].sum() == ref[0].sum() and got[1].sum() == ref[1].sum()
    assert np.abs(got[:2] - ref[:2]).sum() <= 4
    assert abs(auc.auc_from_counts(got).auc - auc.auc_from_counts(ref).auc) < 1e-6
    assert counter.take() == {}


def test_roc_and_pr_curves_end_at_the_right_corners() -> None:
    scores, labels = _ctr_like(10_000, 0.2, seed=6)
    c = prediction_buckets.count(scores, labels)
    fpr, tpr = auc.roc_curve(c)
    assert fpr[0] == tpr[0] == 0 and fpr[-1] == pytest.approx(1) and tpr[-1] == pytest.approx(1)
    assert np.trapezoid(tpr, fpr) == pytest.approx(auc.auc_from_counts(c).auc, abs=1e-9)
    recall, precision = auc.pr_curve(c)
    assert recall[-1] == pytest.approx(1) and precision[-1] == pytest.approx(labels.mean())
    mean_score, rate, size = auc.calibration(c)
    assert size.sum() == scores.size and np.all(np.diff(mean_score) > 0)
    assert np.all((rate >= 0) & (rate <= 1))
    assert (rate * size).sum() / size.sum() == pytest.approx(labels.mean())  # the groups' positives add up


def _stream(steps: int, drift_at: int | None, seed: int, batch: int = 2000) -> list[StepView]:
    views = []
    for step in range(steps):
        shift = 4.0 if drift_at is not None and step >= drift_at else 0.0
        s, y = _ctr_like(batch, 0.05, seed=seed * 100_000 + step, shift=shift)
        views.append(StepView(step=step, predictions={"pred/ctr": prediction_buckets.count(s, y)}))
    return views


def test_decayed_auc_follows_a_simulated_drift_within_a_few_half_lives() -> None:
    half_life = 20
    dc = auc.DecayedCounts(half_life)
    before = after = None
    for v in _stream(300, drift_at=150, seed=7):
        dc.update(v.step, v.predictions["pred/ctr"])
        if v.step == 149:
            before = dc.estimate().auc
        if v.step == 150 + 4 * half_life:
            after = dc.estimate().auc
    assert before is not None and after is not None
    s_new, y_new = _ctr_like(200_000, 0.05, seed=99, shift=4.0)
    target = auc.exact_auc(s_new, y_new)
    assert abs(after - target) < 0.25 * abs(before - target)


def test_auc_drop_fires_after_a_drift_and_not_on_a_stable_stream() -> None:
    rule = AucDrop({"half_life_steps": 10, "baseline_half_life_steps": 200})
    fired = [f for v in _stream(200, drift_at=120, seed=8) for f in rule.update(v)]
    assert fired, "auc_drop stayed quiet on a drifting stream"
    assert 120 <= fired[0].step <= 150
    assert "pred/ctr" in fired[0].message and "below its average" in fired[0].message

    quiet = AucDrop({"half_life_steps": 10, "baseline_half_life_steps": 200})
    assert [f for v in _stream(200, drift_at=None, seed=9) for f in quiet.update(v)] == []


def test_auc_drop_state_round_trip_gives_the_same_findings() -> None:
    views = _stream(200, drift_at=120, seed=10)
    a = AucDrop({"half_life_steps": 10, "baseline_half_life_steps": 200})
    for v in views[:100]:
        a.update(v)
    b = AucDrop({"half_life_steps": 10, "baseline_half_life_steps": 200})
    b.load_state_dict(a.state_dict())
    rest_a = [f.step for v in views[100:] for f in a.update(v)]
    rest_b = [f.step for v in views[100:] for f in b.update(v)]
    assert rest_a == rest_b and rest_a


def test_auc_resolution_fires_once_when_scores_collapse_onto_one_value() -> None:
    rule = AucResolution()
    y = (np.arange(4000) % 10 == 0).astype(float)
    flat = prediction_buckets.count(np.full(4000, 0.3), y)
    found = [f for step in range(3) for f in rule.update(StepView(step=step, predictions={"pred/p": flat}))]
    assert len(found) == 1 and "share a bucket" in found[0].message
    s, y2 = _ctr_like(4000, 0.1, seed=11)
    good = AucResolution()
    assert good.update(StepView(step=0, predictions={"pred/p": prediction_buckets.count(s, y2)})) == []
