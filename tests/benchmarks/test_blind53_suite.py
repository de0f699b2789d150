"""The fifty-third blind split of the detection benchmark (`benchmarks/detection/blind53/`) is trained by the runner
with its own scripts, its panels give the cover in percent, its pools count no swimmer in a closed hour, its
humidifier responds to the reading it sees, its bikes with a replaced chain ride a new one, and its plates load each
grip in its own direction (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind53 import smoke, suite
from benchmarks.detection.blind53.facilities import DAYS, HOURS, _pools
from benchmarks.detection.blind53.gear import GRIPS, SAMPLES, _bouts, _holds
from benchmarks.detection.blind53.growing import READINGS, _canopy_features, _caves, _panels

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_panels_give_the_cover_in_percent_and_only_the_bug_takes_its_root_as_a_fraction() -> None:
    raw, weight, _ = _panels(torch.Generator().manual_seed(0), 300)
    assert float(raw[:, 4].min()) >= 0 and float(raw[:, 4].max()) <= 100 and float(raw[:, 4].max()) > 1
    assert bool((weight > 0).all())
    assert bool(torch.isfinite(_canopy_features(raw, None)).all())
    assert bool(_canopy_features(raw, "asin_sqrt_of_cover_in_percent").isnan().any())


def test_pools_count_whole_swimmers_and_none_in_a_closed_hour() -> None:
    days, flags, lanes = _pools(torch.Generator().manual_seed(0), 200)
    assert days.shape == (200, DAYS + 2, HOURS) and flags.shape == (200, 2)
    assert bool((days >= 0).all()) and bool((days == days.round()).all())
    assert 0.05 < float((days == 0).float().mean()) < 0.5  # closed hours and quiet ones
    assert set(lanes.unique().tolist()) <= {4.0, 5.0, 6.0, 7.0, 8.0}


def test_humidifier_duty_set_on_the_next_reading_answers_it() -> None:
    x, rh_next, duty_next = _caves(torch.Generator().manual_seed(0), 2000)
    setpoint = x[:, -1]
    assert x.shape == (2000, READINGS * 4 + 1)
    inside = (duty_next > 0) & (duty_next < 100)
    expected = 5 * (setpoint - rh_next) + 30
    assert float((duty_next[inside] - expected[inside]).abs().mean()) < 3  # the controller's noise only


def test_plates_load_each_grip_in_its_own_direction() -> None:
    forces, grip = _holds(torch.Generator().manual_seed(0), 400)
    assert forces.shape == (400, 3, SAMPLES) and int(grip.max()) < GRIPS
    out_share = forces[:, 0].mean(1) / forces[:, 2].mean(1)
    assert float(out_share[grip == 3].mean()) > float(out_share[grip == 1].mean())  # a pocket pulls out more
    assert float(forces[:, 2].mean()) > 100  # the static load, in newtons


def test_a_chain_replaced_at_the_last_service_is_new_now() -> None:
    x, worn, worn_before = _bouts(torch.Generator().manual_seed(0), 600)
    assert x.shape == (600, 3, 128)
    assert 0.1 < float(worn.mean()) < 0.5
    # a chain recorded worn last time and not worn now was replaced since; one worn now was worn before or since
    assert float(((worn_before == 1) & (worn == 0)).float().mean()) > 0.3


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind53_cave_adagrad_batch128"]) == 0
    assert "blind53_cave_adagrad_batch128" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind53_O19_axes_summed_to_one_channel"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
