"""A held-out metric read against its chance level and against what the training loss guarantees.

`metric_against_loss`'s chance-level readings: an R² (chance 0) or a ROC AUC (chance 0.5) that never leaves chance
while the training loss falls (what the loss optimises does not carry to held-out data: a KL term scaled by the
dataset size, coordinates the model cannot fit), and a ROC AUC significantly below 0.5 (a pairwise loss with its
positive and negative swapped). `accuracy_gap`: an eval accuracy far below 1 - loss / ln 2, the training accuracy
a cross-entropy guarantees (a causal mask inverted, targets left in the inputs). Each beside the healthy runs it
must leave alone: a slow start, an AUC that rises, a classifier that generalises, a loss that is no cross-entropy.
Every margin is wide: no verdict depends on float rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tests.rules.streams import run
from tests.rules.test_chance_level_of_contrastive_losses_and_eval_metrics import metric_run, views
from tests.rules.test_metric_against_loss import views as metric_views
from trainguard.rules import chance
from trainguard.rules.accuracy_gap import AccuracyGap
from trainguard.rules.metric_against_loss import MetricAgainstLoss, direction
from trainguard.rules.step_view import StepView


def test_an_roc_auc_is_placed_at_one_half_and_a_precision_recall_auc_is_not() -> None:
    assert [chance.ranking_chance_level(n, 10) for n in ("val_auc", "auroc", "val_r2", "val_acc")] == [
        0.5,
        0.5,
        0.0,
        0.1,
    ]
    assert [
        chance.ranking_chance_level(n, 10) for n in ("val_pr_auc", "val_auprc", "auc_loss", "val_f1")
    ] == [None] * 4
    assert chance.chance_level("val_auc", 10) is None  # the readings that place AUC ask for it by name


def test_an_r2_that_never_leaves_zero_while_the_loss_falls_is_reported() -> None:
    found = run(MetricAgainstLoss(), metric_views(lambda t, r: 0.0, name="val_r2"))
    # records every 25 steps: first window 25-100, latest 125-200 at step 200, 150-225 at 225 (confirmed)
    assert [f.step for f in found] == [225] and found[0].tensor == "val_r2"
    assert found[0].message.startswith(
        "the eval metric 'val_r2' stayed at or below 0.1, 0.1 of the way from its chance level 0 to 1, at all 8 "
        "records of its first and latest windows (steps 25-225; at most 0, 0 over the latest 4)"
    )
    assert "a KL or penalty scaled by the dataset size" in (found[0].hint or "")
    assert run(MetricAgainstLoss({"chance_band": None}), metric_views(lambda t, r: 0.0, name="val_r2")) == []


def test_an_r2_that_starts_at_zero_and_rises_is_a_slow_start() -> None:
    # clipped at 0 for 100 steps, then rising by 0.0004 a step: still inside the band at the first check (0.04 at
    # step 200), but its latest window lies significantly above the first
    def slow(t: int, r: np.random.Generator) -> float:
        return max(0.0, (t - 100) * 4e-4)

    assert run(MetricAgainstLoss(), metric_views(slow, name="val_r2")) == []
    # beside a loss that does not fall either
    flat = lambda t, r: 1.0 + float(r.normal(0, 0.03))
    assert run(MetricAgainstLoss(), metric_views(slow, name="val_r2", loss=flat)) == []


def flat_after_its_first_steps(t: int, r: np.random.Generator) -> float:
    """A loss that falls by a third in its first 10 steps (a bias fits the target's mean), then stays put."""
    return 0.15 + 0.05 * math.exp(-t / 3) + float(r.normal(0, 0.01))


def test_a_held_out_r2_at_zero_beside_a_loss_that_stopped_falling_at_once_learned_nothing() -> None:
    # random features redrawn at every forward pass: the loss falls in a few steps as the output bias fits the
    # mean, too early for a loss that stays flat to count as stuck, and the held-out R² never leaves 0
    found = run(
        MetricAgainstLoss(), metric_views(lambda t, r: 0.0, name="val_r2", loss=flat_after_its_first_steps)
    )
    assert [f.step for f in found] == [225] and found[0].tensor == "val_r2"
    assert "under the 3 of a fall" in found[0].message
    assert (
        "the model learned nothing that carries to held-out data beyond its first steps (a constant, the target's "
        "mean), and its loss has stopped falling"
    ) in found[0].message
    assert "redrawn at each forward pass" in (found[0].hint or "")
    # a held-out AUC at 0.5 beside such a loss: the same reading
    noise = lambda t, r: 0.5 + float(r.normal(0, 0.01))
    auc = run(MetricAgainstLoss(), metric_views(noise, name="val_auc", loss=flat_after_its_first_steps))
    assert [f.step for f in auc] == [225] and "learned nothing" in auc[0].message


def test_without_a_fall_only_a_held_out_metric_is_read_against_chance() -> None:
    # a training R² recorded beside the loss scores the batches the loss was just taken on: at 0 while a slow
    # start lasts, and no held-out evidence
    train = metric_views(lambda t, r: 0.0, name="r2", mode="train", loss=flat_after_its_first_steps)
    assert run(MetricAgainstLoss(), train) == []
    assert (
        run(
            MetricAgainstLoss({"chance_band": None}),
            metric_views(lambda t, r: 0.0, name="val_r2", loss=flat_after_its_first_steps),
        )
        == []
    )


def test_an_roc_auc_below_one_half_ranks_the_pairs_the_wrong_way() -> None:
    def swapped(t: int, r: np.random.Generator) -> float:
        return 0.2 + 0.3 * math.exp(-t / 40) + float(r.normal(0, 0.003))

    found = run(MetricAgainstLoss(), metric_views(swapped, name="val_auc"))
    assert [f.step for f in found] == [225] and found[0].threshold == 0.5
    assert "(an area under the ROC curve, 0.5 at chance) averaged 0.2" in found[0].message
    assert "learns to rank the negatives above the positives" in found[0].message
    assert "seen and an unseen item swapped" in (found[0].hint or "")


def test_an_roc_auc_that_rises_from_one_half_is_learning() -> None:
    def rising(t: int, r: np.random.Generator) -> float:
        return 0.8 - 0.3 * math.exp(-t / 60) + float(r.normal(0, 0.01))

    assert run(MetricAgainstLoss(), metric_views(rising, name="val_auc")) == []


def test_an_roc_auc_at_one_half_while_the_loss_falls_never_left_chance() -> None:
    def noise(t: int, r: np.random.Generator) -> float:
        return 0.5 + float(r.normal(0, 0.01))

    found = run(MetricAgainstLoss(), metric_views(noise, name="val_auc"))
    assert [f.step for f in found] == [
        225
    ] and "stayed at or below 0.55, 0.1 of the way from its chance level 0.5 to 1" in found[0].message


def leaking(step: int) -> float:
    """A cross-entropy from ln 10 down to 0.05 (a model that reads its answer from its inputs)."""
    return 2.25 * math.exp(-step / 30) + 0.05


def leak_views(steps: int = 500) -> list[StepView]:
    """A classifier over 10 classes whose cross-entropy falls to 0.05 while its eval accuracy stays near 0.2."""
    return list(views(metric_run("val_accuracy", lambda s: 0.2 + 0.01 * math.sin(s), leaking), steps=steps))


def test_an_accuracy_far_below_what_the_training_cross_entropy_guarantees_is_a_leak() -> None:
    found = run(AccuracyGap(), leak_views())
    # eval points every 50 steps: 4 records span 150 steps from step 200 on, confirmed at the next record
    assert [f.step for f in found] == [250] and found[0].tensor == "val_accuracy"
    assert found[0].value is not None and 0.18 < found[0].value < 0.21
    assert found[0].threshold is not None and found[0].threshold > 0.85  # 1 - 0.068 / ln 2 over steps 100-250
    assert found[0].message.startswith(
        "the eval accuracy 'val_accuracy' averaged 0.192 over its latest 4 records (steps 100-250)"
    )
    assert "which means a training accuracy of at least 1 - loss / ln 2 = 0.902" in found[0].message
    assert "causal attention mask inverted" in (found[0].hint or "")


def test_an_accuracy_close_to_what_the_loss_guarantees_is_a_generalisation_gap() -> None:
    healthy = metric_run("val_accuracy", lambda s: 0.9 + 0.005 * math.sin(s), leaking)
    assert run(AccuracyGap(), views(healthy, steps=500)) == []
    # a loss that never falls below ln 2 guarantees nothing
    slow = metric_run("val_accuracy", lambda s: 0.2, lambda s: 0.7 + 1.6 * math.exp(-s / 30))
    assert run(AccuracyGap(), views(slow, steps=500)) == []


def shifted(loss: Callable[[int], float], by: float) -> Callable[[int], float]:
    return lambda s: loss(s) + by


def test_a_loss_that_is_no_cross_entropy_is_not_read_as_one() -> None:
    # a squared error on one-hot targets starts near 1/K, far below ln 10; a cosine loss goes below 0
    mse = metric_run("val_accuracy", lambda s: 0.2, lambda s: 0.09 * math.exp(-s / 30) + 0.001)
    cosine = metric_run("val_accuracy", lambda s: 0.2, shifted(leaking, -0.9))
    assert run(AccuracyGap(), views(mse, steps=500)) == []
    assert run(AccuracyGap(), views(cosine, steps=500)) == []


def test_a_correlation_with_the_truth_is_placed_at_zero_and_read_as_a_ranking() -> None:
    names = ("val_reward_correlation", "val_spearman", "pearson_r", "val_corr")
    assert [chance.ranking_chance_level(n, 10) for n in names] == [0.0] * 4
    assert [chance.reversed_score(n) for n in names] == [-1.0] * 4 and chance.reversed_score("val_auc") == 0.0
    assert chance.chance_level("val_spearman", 10) is None  # placed for the ranking readings only
    assert chance.ranking_chance_level("corr_loss", 10) is None

    # a reward model fitted to swapped preferences whose held-out correlation is clipped at 0: never leaves chance
    found = run(MetricAgainstLoss(), metric_views(lambda t, r: 0.0, name="val_reward_correlation"))
    assert [f.step for f in found] == [225]
    assert "stayed at or below 0.1, 0.1 of the way from its chance level 0 to 1" in found[0].message

    # unclipped, it runs against the truth: the reversed reading, scaled by the way to -1
    def reversed_order(t: int, r: np.random.Generator) -> float:
        return -0.6 + 0.5 * math.exp(-t / 40) + float(r.normal(0, 0.01))

    found = run(MetricAgainstLoss(), metric_views(reversed_order, name="val_spearman"))
    assert [f.step for f in found] == [225] and found[0].threshold == 0.0
    assert "(a correlation with the truth, 0 at chance) averaged" in found[0].message
    assert found[0].value is not None and abs(found[0].value + 0.6) < 0.02
    assert "the model's scores run against the truth" in found[0].message

    # one that rises from 0 is learning
    def rising(t: int, r: np.random.Generator) -> float:
        return 0.8 - 0.8 * math.exp(-t / 60) + float(r.normal(0, 0.01))

    assert run(MetricAgainstLoss(), metric_views(rising, name="val_spearman")) == []


def test_a_scorers_gini_coefficient_is_placed_at_zero_and_a_gini_impurity_is_not() -> None:
    # the normalised Gini of credit and fraud scoring is 2 AUC - 1: 0 at chance, -1 reversed, higher is better
    assert [chance.ranking_chance_level(n, 2) for n in ("val_gini", "normalized_gini")] == [0.0, 0.0]
    assert chance.reversed_score("val_gini") == -1.0 and direction("val_gini") == 1
    assert chance.ranking_chance_level("gini_impurity", 2) is None and direction("gini_impurity") == 0

    # fraud labels joined to the wrong rows: the loss falls to the base rate's, the held-out Gini reads 0 throughout
    found = run(MetricAgainstLoss(), metric_views(lambda t, r: 0.0, name="val_gini"))
    assert [f.step for f in found] == [225]
    assert "stayed at or below 0.1, 0.1 of the way from its chance level 0 to 1" in found[0].message

    # a Gini that rises from 0 is learning
    def rising(t: int, r: np.random.Generator) -> float:
        return 0.5 - 0.5 * math.exp(-t / 60) + float(r.normal(0, 0.01))

    assert run(MetricAgainstLoss(), metric_views(rising, name="val_gini")) == []
