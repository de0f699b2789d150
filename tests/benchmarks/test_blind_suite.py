"""The blind split of the detection benchmark (`benchmarks/detection/blind/`) is declared consistently and
its scripts run through the real hook.

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.detection import run
from benchmarks.detection.blind import smoke, suite

PROGRAMS = suite.catalogue()
BY_NAME = {p.name: p for p in PROGRAMS}
HEALTHY = [p for p in PROGRAMS if p.fault is None]
BUGS = [p for p in PROGRAMS if p.fault is not None]


def test_blind_split_has_enough_unique_programs() -> None:
    assert len(BY_NAME) == len(PROGRAMS)
    assert all(p.name.startswith(suite.PREFIX) for p in PROGRAMS)
    assert len(HEALTHY) >= 24
    assert len([p for p in BUGS if p.should_stop]) >= 16
    assert len({p.fault for p in BUGS}) == len(BUGS)


def test_healthy_programs_carry_no_fault_labels() -> None:
    for p in HEALTHY:
        assert (p.bug, p.category, p.twin, p.effect_step) == (None, None, None, None), p.name
        assert p.brief and p.workload in suite.SCRIPTS, p.name


@pytest.mark.parametrize("bug", BUGS, ids=lambda p: p.name)
def test_each_bug_is_labelled_against_a_healthy_twin(bug: suite.BlindProgram) -> None:
    twin = BY_NAME[bug.twin or ""]
    assert twin.fault is None
    assert (bug.workload, bug.knobs, bug.steps) == (twin.workload, twin.knobs, twin.steps)
    assert bug.category in suite.CATEGORIES
    assert bug.effect_step is None or 0 <= bug.effect_step < bug.steps
    assert bug.brief and bug.should_stop != bug.hard_negative
    assert not bug.intended_rules  # written without knowing the rules
    # the script really switches on this bug (a typo would leave the twin's behaviour unchanged)
    assert f'"{bug.bug}"' in inspect.getsource(inspect.getmodule(suite.SCRIPTS[bug.workload]))  # type: ignore[arg-type]


def test_seeds_split_into_calibration_and_report() -> None:
    assert [suite.split_of(s) for s in range(4)] == ["calibration", "report", "calibration", "report"]


def test_runner_offers_the_blind_suite() -> None:
    assert [p.name for p in run.suite_programs("blind")] == [p.name for p in PROGRAMS]
    assert run.RESULTS_SUFFIX["blind"] == "_blind"


def test_healthy_program_runs_through_the_hook(tmp_path: Path) -> None:
    out = f"file://{tmp_path}/run"
    truth = suite.train(replace(BY_NAME["blind_mlp_sgd_momentum"], steps=12), 0, out=out)
    assert len(truth.losses) == 12 and all(math.isfinite(x) for x in truth.losses)
    assert smoke.saved_steps(out) == 2  # steps 0 and 10 at save_interval 10
    assert not truth.diverged


def test_bug_program_does_its_damage_through_the_hook(tmp_path: Path) -> None:
    out = f"file://{tmp_path}/run"
    truth = suite.train(replace(BY_NAME["blind_X18_variance_head_not_positive"], steps=12), 0, out=out)
    assert math.isnan(truth.losses[0])  # log of a negative variance at the first step
    assert truth.diverged and truth.inject_step == 0
    assert smoke.saved_steps(out) >= 1


def test_oracle_labels_a_bug_against_its_twin() -> None:
    bug = replace(BY_NAME["blind_X18_variance_head_not_positive"], steps=12)
    twin = replace(BY_NAME[bug.twin or ""], steps=12)
    truths = [suite.train(p, seed, out=None) for p in (bug, twin) for seed in (0, 1)]
    suite.label(truths, [bug, twin])
    bug_runs = [t for t in truths if t.program == bug.name]
    assert all(t.should_stop and t.manifest_step == 0 for t in bug_runs)  # non-finite from the first step
    assert [suite.split_of(t.seed) for t in bug_runs] == ["calibration", "report"]
