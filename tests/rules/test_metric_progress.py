"""`metric_progress` says a model learns from the eval metrics its run records, on evidence.

Hand-made views with only eval scalars, as a run records them every few saved steps: an accuracy that
climbs a third of the way to 1 in steady steps has learned; the same gain made of swings between records
(label-sorted batches) has not, nor one under a fifth of the way (a learning rate far too low), nor a
metric with no best score known (a return above 1) or whose name places no direction; an error rate that
falls by a fifth towards 0 has. The state survives a round trip. Every margin is wide.
"""

from __future__ import annotations

import json

import numpy as np

from trainguard.rules.chance import ranking_chance_level
from trainguard.rules.metric_against_loss import direction
from trainguard.rules.metric_progress import MetricProgress
from trainguard.rules.step_view import COLUMNS, StepView


def _progress(name: str, values: list[float]) -> MetricProgress:
    progress = MetricProgress()
    for k, x in enumerate(values):
        progress.push(StepView(step=25 * (k + 1), names=(), meta=(), stats=np.zeros((0, len(COLUMNS))),
                               eval_scalars={name: x}))  # fmt: skip
    return progress


def test_a_steady_climb_of_a_third_of_the_way_to_1_has_learned() -> None:
    found = _progress("val_centroid_accuracy", [0.46, 0.48, 0.51, 0.55, 0.59, 0.63]).learned(0.2, 2.0)
    assert found is not None
    assert (found.name, found.first, found.last) == ("val_centroid_accuracy", 0.46, 0.63)
    assert 0.3 < found.share < 0.33


def test_swings_short_gains_and_metrics_without_a_best_score_have_not() -> None:
    # 0.17 -> 0.40 is 28% of the way, made of swings of 0.25-0.3 between records
    assert _progress("val_acc", [0.17, 0.17, 0.45, 0.2, 0.5, 0.40]).learned(0.2, 2.0) is None
    assert _progress("val_acc", [0.17, 0.22, 0.27, 0.32, 0.36, 0.40]).learned(0.2, 2.0) is not None
    # steady, but 5% of the way: a learning rate far too low
    assert _progress("val_accuracy", [0.15, 0.16, 0.17, 0.18, 0.19]).learned(0.2, 2.0) is None
    # an episode return has no best score to measure the way against; a name without a direction is not read
    assert _progress("episode_return", [10.0, 40.0, 90.0, 160.0]).learned(0.2, 2.0) is None
    assert _progress("val_centroid_spread", [0.1, 0.4, 0.7, 0.9]).learned(0.2, 2.0) is None
    # two records give no noise to weigh the gain against
    assert _progress("val_accuracy", [0.2, 0.9]).learned(0.2, 2.0) is None


def test_an_error_rate_that_falls_a_fifth_of_the_way_to_0_has_learned() -> None:
    assert _progress("val_error", [0.5, 0.45, 0.4, 0.35]).learned(0.2, 2.0) is not None
    assert _progress("val_error", [0.5, 0.49, 0.48, 0.47]).learned(0.2, 2.0) is None


def test_a_coefficient_of_determination_is_read_from_below_0_with_1_its_best_score() -> None:
    # a regressor's held-out R^2 starts below 0 (its outputs further from the targets than their mean): -2 -> 0.4 is
    # 80% of the way to 1, however it is spelled
    for name in ("val_r2", "val_r_squared", "explained_variance"):
        found = _progress(name, [-2.0, -1.2, -0.5, 0.1, 0.4]).learned(0.2, 2.0)
        assert found is not None and 0.79 < found.share < 0.81, name
    # an accuracy below 0 is no accuracy: no best score known; a name with an error token is not an R^2
    assert _progress("val_accuracy", [-2.0, -1.2, -0.5, 0.1, 0.4]).learned(0.2, 2.0) is None
    assert _progress("val_r2_error", [-2.0, -1.2, -0.5, 0.1, 0.4]).learned(0.2, 2.0) is None


def test_the_state_survives_a_round_trip() -> None:
    progress = _progress("val_accuracy", [0.46, 0.5, 0.55])
    again = MetricProgress()
    again.set_state(json.loads(json.dumps(progress.get_state())))
    for p in (progress, again):
        p.push(
            StepView(
                step=100,
                names=(),
                meta=(),
                stats=np.zeros((0, len(COLUMNS))),
                eval_scalars={"val_accuracy": 0.6},
            )
        )
    assert progress.learned(0.2, 2.0) == again.learned(0.2, 2.0) is not None


def test_a_ranking_metric_far_above_its_chance_level_has_skill_from_its_first_record() -> None:
    # a concordance index at 0.77 from the first evaluation on (chance level 0.5): no progress, but skill
    flat = _progress("val_c_index", [0.771, 0.769, 0.768, 0.769, 0.770])
    assert flat.learned(0.2, 2.0) is None
    found = flat.skilled(0.2, 2.0)
    assert found is not None and found.name == "val_c_index" and 0.5 < found.share < 0.56
    # within a fifth of the way from chance to 1 (0.6) it shows none; nor does a record-to-record swing that large
    assert _progress("val_concordance", [0.55, 0.56, 0.57, 0.58]).skilled(0.2, 2.0) is None
    assert _progress("val_auc", [0.62, 0.9, 0.62, 0.9, 0.65]).skilled(0.2, 2.0) is None
    # an R2 of 0.55 and a correlation of 0.6 have it; an accuracy, whose chance level depends on the classes, is not read
    assert _progress("val_r2", [0.54, 0.55, 0.55, 0.55]).skilled(0.2, 2.0) is not None
    assert _progress("val_spearman", [0.6, 0.61, 0.6, 0.61]).skilled(0.2, 2.0) is not None
    assert _progress("val_accuracy", [0.9, 0.9, 0.9, 0.9]).skilled(0.2, 2.0) is None


def test_a_concordance_index_and_a_gain_are_read_as_higher_is_better() -> None:
    assert [direction(n) for n in ("val_c_index", "val_cindex", "val_concordance", "val_gain")] == [
        1,
        1,
        1,
        1,
    ]
    # placed at 0.5, as C, only for readings where a 2C - 1 read as C understates the skill
    assert [
        ranking_chance_level(n, None, concordance=True) for n in ("val_c_index", "harrell_concordance")
    ] == [
        0.5,
        0.5,
    ]
    assert ranking_chance_level("val_concordance", None) is None
    assert direction("val_index") == 0 and ranking_chance_level("val_gain", None) is None


def test_rising_since_a_mark_asks_a_move_towards_the_best_score_beyond_the_noise() -> None:
    progress = _progress("val_goal_progress", [0.82, 0.87, 0.90])
    mark = progress.latest()
    assert mark == {"val_goal_progress": 0.90}
    for x in (0.94, 0.95, 0.97):
        progress.push(StepView(step=100, eval_scalars={"val_goal_progress": x}))
    found = progress.rising_since(mark, 2.0)
    assert found is not None and (found.first, found.last) == (0.90, 0.97)
    # a score that stopped where it was at the mark has not, nor one that fell
    flat = _progress("val_token_accuracy", [0.49, 0.61, 0.612, 0.611, 0.616])
    assert flat.rising_since({"val_token_accuracy": 0.611}, 2.0) is None
    assert flat.rising_since({"val_token_accuracy": 0.7}, 2.0) is None
