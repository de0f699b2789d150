"""The second blind split of the detection benchmark (`benchmarks/detection/blind2/`) is declared consistently,
the runner offers it, and its scripts run through the real hook.

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.detection import run
from benchmarks.detection.blind import suite as first_split
from benchmarks.detection.blind2 import smoke, suite

PROGRAMS = suite.catalogue()
BY_NAME = {p.name: p for p in PROGRAMS}
HEALTHY = [p for p in PROGRAMS if p.fault is None]
BUGS = [p for p in PROGRAMS if p.fault is not None]


def test_split_has_enough_unique_programs_and_none_of_the_first_splits() -> None:
    assert len(BY_NAME) == len(PROGRAMS)
    assert all(p.name.startswith(suite.PREFIX) for p in PROGRAMS)
    assert len(HEALTHY) >= 28
    assert len([p for p in BUGS if p.should_stop]) >= 16
    assert len({p.fault for p in BUGS}) == len(BUGS)
    assert not set(suite.SCRIPTS.values()) & set(first_split.SCRIPTS.values())
    assert not {p.bug for p in BUGS} & {p.bug for p in first_split.catalogue()}


def test_healthy_programs_carry_no_fault_labels() -> None:
    for p in HEALTHY:
        assert (p.bug, p.category, p.twin, p.effect_step) == (None, None, None, None), p.name
        assert p.brief and p.workload in suite.SCRIPTS, p.name


@pytest.mark.parametrize("bug", BUGS, ids=lambda p: p.name)
def test_each_bug_is_labelled_against_a_healthy_twin(bug: suite.Blind2Program) -> None:
    twin = BY_NAME[bug.twin or ""]
    assert twin.fault is None
    assert (bug.workload, bug.knobs, bug.steps) == (twin.workload, twin.knobs, twin.steps)
    assert bug.category in suite.CATEGORIES
    assert bug.effect_step is None or 0 <= bug.effect_step < bug.steps
    assert bug.brief and bug.should_stop != bug.hard_negative
    assert not bug.intended_rules  # written without knowing the rules
    # the script really switches on this bug (a typo would leave the twin's behaviour unchanged)
    assert f'"{bug.bug}"' in inspect.getsource(inspect.getmodule(suite.SCRIPTS[bug.workload]))  # type: ignore[arg-type]


def test_runner_offers_the_second_blind_split() -> None:
    assert [p.name for p in run.suite_programs("blind2")] == [p.name for p in PROGRAMS]
    assert run.RESULTS_SUFFIX["blind2"] == "_blind2"
    assert [suite.split_of(s) for s in range(4)] == ["calibration", "report", "calibration", "report"]


def test_healthy_program_runs_through_the_hook(tmp_path: Path) -> None:
    out = f"file://{tmp_path}/run"
    truth = suite.train(replace(BY_NAME["blind2_gru_seq2seq_teacher_forcing"], steps=12), 0, out=out)
    assert len(truth.losses) == 12 and all(math.isfinite(x) for x in truth.losses)
    assert smoke.saved_steps(out) == 2  # steps 0 and 10 at save_interval 10
    assert not truth.diverged and truth.program == "blind2_gru_seq2seq_teacher_forcing"


def test_runner_trains_a_program_of_this_split_with_its_scripts(tmp_path: Path) -> None:
    # the split's programs subclass the first split's: the runner must not hand them to the first split's scripts
    prog = replace(BY_NAME["blind2_Y12_normalised_with_stats_1000x_off"], steps=3)
    truth = run._train_one((prog, 0, str(tmp_path)))
    assert truth.program == prog.name and len(truth.losses) == 3
    assert truth.losses[0] > 1e6  # millivolts subtracted from volts: inputs near -1e4 standard deviations


def test_oracle_labels_a_harmful_bug_against_its_twin() -> None:
    bug = BY_NAME["blind2_Y12_normalised_with_stats_1000x_off"]
    twin = BY_NAME[bug.twin or ""]
    truths = [suite.train(p, seed, out=None) for p in (bug, twin) for seed in (0, 1)]
    suite.label(truths, [bug, twin])
    bug_runs = [t for t in truths if t.program == bug.name]
    assert all(t.should_stop and t.inject_step == 0 for t in bug_runs)
    assert [suite.split_of(t.seed) for t in bug_runs] == ["calibration", "report"]
