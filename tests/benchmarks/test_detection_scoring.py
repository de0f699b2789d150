"""Scoring of the detection benchmark (`benchmarks/detection/run.py`) on hand-made outcomes.

Per fault category: precision, recall and F1, where a run counts as flagged for a category when
an alarm of that category is raised or one from a rule meant for a fault of it; and the category a finding speaks for.
"""

from __future__ import annotations

import pytest

from benchmarks.detection import programs, run
from trainguard.api.enums import Severity
from trainguard.rules.base import Finding


def _truth(program: str, category: str | None, *, should_stop: bool = True) -> programs.Truth:
    return programs.Truth(
        program=program,
        seed=1,
        fault=None if category is None else program,
        category=category,
        should_stop=should_stop and category is not None,
        affected_layer=None,
        inject_step=0,
        manifest_step=0,
        steps=100,
        final_val_acc=0.5,
        diverged=False,
    )


def _flagged(*alarms: tuple[str, str]) -> run.Outcome:
    out = run.Outcome()
    for rule, category in alarms:
        out.alarm(10, rule, category)
    return out


def test_precision_recall_and_f1_per_category() -> None:
    truths = [
        _truth("vg_a", "VG"),
        _truth("vg_b", "VG"),
        _truth("eg", "EG"),
        _truth("healthy_a", None),
        _truth("healthy_b", None),
        _truth("harmless_dr", "DR", should_stop=False),  # counts neither way
    ]
    outcomes = {
        ("vg_a", 1): _flagged(("vanishing_gradient", "VG")),
        ("vg_b", 1): _flagged(("loss_not_decreasing", "SC")),  # missed as VG
        ("eg", 1): _flagged(("exploding_tensor", "NaN"), ("vanishing_gradient", "VG")),
        ("healthy_a", 1): _flagged(("vanishing_gradient", "VG")),  # a false VG
        ("healthy_b", 1): run.Outcome(),
        ("harmless_dr", 1): _flagged(("dead_relu", "DR")),
    }
    intended = {"vg_a": ("vanishing_gradient",), "vg_b": ("vanishing_gradient",), "eg": ("exploding_tensor",)}
    prf = run.category_prf(truths, outcomes, intended)
    # VG: flagged vg_a, eg, healthy_a -> 1 of 3 right; 1 of 2 VG faults found
    assert prf["VG"]["flagged"] == 3 and prf["VG"]["runs"] == 2
    assert prf["VG"]["precision"] == pytest.approx(1 / 3) and prf["VG"]["recall"] == pytest.approx(1 / 2)
    assert prf["VG"]["f1"] == pytest.approx(0.4)
    # EG: exploding_tensor raises a NaN-category alarm but is meant for the EG fault: found, and only there
    assert (prf["EG"]["precision"], prf["EG"]["recall"], prf["EG"]["f1"]) == (1.0, 1.0, 1.0)
    # NaN: flagged (the eg run) but no NaN fault in the split; DR: the harmless fault does not count
    assert prf["NaN"]["precision"] == 0.0 and prf["NaN"]["runs"] == 0
    assert "DR" not in prf
    # SC: vg_b's alarm is a false SC
    assert prf["SC"]["flagged"] == 1 and prf["SC"]["precision"] == 0.0


def _finding(rule: str, value: float | None, threshold: float | None) -> Finding:
    return Finding(
        rule=rule, severity=Severity.WARNING, step=10, message="m", value=value, threshold=threshold
    )


@pytest.mark.parametrize(
    ("rule", "value", "threshold", "category"),
    [
        ("weight_update_ratio", 3.0, 1.0, "EG"),  # steps far too large: exploding updates
        ("weight_update_ratio", 1e-6, 1e-4, "SC"),  # steps too small: slow convergence
        ("weight_update_ratio", None, 1.0, "SC"),  # no side to read: the rule's own category
        ("exploding_gradient", 0.1, 1.0, "EG"),  # one-sided rules keep theirs whatever the value
        ("unchanged_tensor", 3.0, None, "SC"),
        ("a_user_rule", 3.0, 1.0, "SC"),  # unknown rules count as SC, as before
    ],
)
def test_a_finding_speaks_for_its_rules_category_or_its_side_of_the_bound(
    rule: str, value: float | None, threshold: float | None, category: str
) -> None:
    assert run.finding_category(rule, _finding(rule, value, threshold)) == category
