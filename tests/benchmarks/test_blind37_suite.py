"""The thirty-seventh blind split of the detection benchmark (`benchmarks/detection/blind37/`) is trained by the runner
with its own scripts, its pressure loggers never read below water's vapour pressure, its winters are archived every
second day, its soiling fortnights are washed only by rain of 2 mm or more, its moulded parts shrink further after
ejection, and its parcels' scan codes say 'not at home' on failures (its declarations, a run through the hook, the
oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind37 import smoke, suite
from benchmarks.detection.blind37.fields import DAYS, _days_since_rain, _sites
from benchmarks.detection.blind37.sites import NOT_AT_HOME, _parcels, _shots
from benchmarks.detection.blind37.water import ATMOSPHERE, SAMPLES, VAPOUR, _log_head, _windows, _winters

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_loggers_never_read_below_vapour_pressure_and_the_healthy_log_is_finite() -> None:
    head, label = _windows(torch.Generator().manual_seed(0), 400, bursts_at_night=False)
    assert head.shape == (400, 2, SAMPLES) and 0.2 < float(label.mean()) < 0.5
    assert float(head.min()) >= VAPOUR - ATMOSPHERE
    assert bool(torch.isfinite(_log_head(head, None)).all())
    assert bool(
        (head < 0).any()
    )  # some hilltop windows dip below the atmosphere: the gauge log's NaN is real


def test_winters_are_archived_every_second_day() -> None:
    records, breakup, freezeup = _winters(torch.Generator().manual_seed(0), 30)
    assert records.shape == (30, 60, 4) and breakup.shape == freezeup.shape == (30,)
    assert bool((records[..., 1] >= 0).all())  # snow depth


def test_only_rain_of_two_millimetres_washes_the_panels() -> None:
    rain = torch.tensor([[0.0, 0.5, 0.0, 3.0] + [0.0] * (DAYS - 4)])
    assert _days_since_rain(rain, any_drizzle=False)[0, :5].tolist() == [15, 16, 17, 0, 1]
    assert _days_since_rain(rain, any_drizzle=True)[0, :5].tolist() == [15, 0, 1, 0, 1]
    _, _, loss, ratio = _sites(torch.Generator().manual_seed(0), 50)
    assert bool((loss >= 0).all()) and torch.allclose(ratio, 1 - loss / 100)


def test_parts_shrink_further_after_ejection() -> None:
    _, after, at_eject = _shots(torch.Generator().manual_seed(0), 500)
    assert float((after - at_eject).mean()) > 0.2


def test_parcel_scan_codes_say_not_at_home_on_most_failures() -> None:
    _, _, scan, failed = _parcels(torch.Generator().manual_seed(0), 3000)
    assert 0.03 < float(failed.mean()) < 0.2
    assert float((scan[failed > 0] == NOT_AT_HOME).float().mean()) > 0.8
    assert not bool((scan[failed == 0] == NOT_AT_HOME).any())


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "moulding_nadam_batch32"]) == 0
    assert "blind37_moulding_nadam_batch32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind37_G08_cleaning_rain_counted_from_any_drizzle"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
