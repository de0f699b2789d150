"""The blind split of the detection benchmark (`benchmarks/detection/blind/`) runs through the real hook and its
oracle labels a bug against its twin (its declarations: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from benchmarks.detection.blind import smoke, suite

BY_NAME = {p.name: p for p in suite.catalogue()}


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
