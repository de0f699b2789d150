"""The fiftieth blind split of the detection benchmark (`benchmarks/detection/blind50/`) is trained by the runner with
its own scripts, its logs' laser distances shrink as the logs grow, its breaking yarns' tension drifts and snatches,
its cabins swing more in a stronger crosswind, its buses run later on the longer routes, its riper trusses are redder
and its sessions' pressure falls late in the session when the removal outruns the refill (its declarations, a run
through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind50 import smoke, suite
from benchmarks.detection.blind50.care import MINUTES, SIDE, STAGES, _crops, _sessions, _with_chroma
from benchmarks.detection.blind50.industry import POINTS, SAMPLES, _logs, _tension, _with_variation
from benchmarks.detection.blind50.transport import BUS_COLUMNS, SECONDS, _arrivals, _days, _features

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_larger_logs_come_nearer_the_laser_heads() -> None:
    logs = _logs(torch.Generator().manual_seed(0), 2000)
    assert logs["x"].shape == (2000, POINTS + 2) and bool((logs["over"] > logs["under"]).all())
    mean_distance = logs["x"][:, :POINTS].mean(1)
    assert float(torch.corrcoef(torch.stack([mean_distance, logs["under"]]))[0, 1]) < -0.8


def test_breaking_yarns_drift_and_stopped_looms_read_zero() -> None:
    t = _tension(torch.Generator().manual_seed(0), 6, 60)
    assert t["x"].shape == (360, 2, SAMPLES) and bool((t["stop"] >= t["break"]).all())
    stopped = (t["x"] == 0).flatten(1).all(1)
    assert bool(stopped.any()) and not bool(t["break"][stopped].any())
    assert bool(torch.isfinite(_with_variation(t["x"], None)).all())
    assert bool(_with_variation(t["x"], "variation_over_stopped_windows").isnan().any())
    late = t["x"][:, 0, -16:].mean(1) - t["x"][:, 0, :16].mean(1)
    assert float(late[t["break"] == 1].mean()) < float(late[t["break"] == 0].mean())


def test_cabins_swing_more_in_a_stronger_wind() -> None:
    d = _days(torch.Generator().manual_seed(0), 12, 40)
    assert d["tower"].shape == (480, SECONDS, 6) and d["valley"].shape == d["tower"].shape
    wind = d["tower"][:, :, 0].mean(1)
    assert float(torch.corrcoef(torch.stack([wind, d["peak"]]))[0, 1]) > 0.5


def test_buses_run_later_on_longer_routes_and_bunched_ones_divide_by_zero() -> None:
    a = _arrivals(torch.Generator().manual_seed(0), 3000)
    x = _features(a["x"], None)
    assert x.shape == (3000, len(BUS_COLUMNS)) and bool(torch.isfinite(x).all())
    assert not bool(torch.isfinite(_features(a["x"], "headway_over_gap_with_bunched_buses")).all())
    long, short = a["x"][:, 0] > 30, a["x"][:, 0] < 15
    assert float(a["delay"][long].mean()) > float(a["delay"][short].mean()) + 1


def test_riper_trusses_are_redder_and_shade_zeroes_some_pixels() -> None:
    img, stage = _crops(torch.Generator().manual_seed(0), 800)
    assert img.shape == (800, 3, SIDE, SIDE) and set(stage.tolist()) == set(range(STAGES))
    redness = (img[:, 0] - img[:, 1]).flatten(1).max(1).values
    assert float(redness[stage == 3].mean()) > float(redness[stage == 0].mean()) + 0.3
    assert bool(torch.isfinite(_with_chroma(img, None)).all())
    assert not bool(torch.isfinite(_with_chroma(img, "log_red_over_green_on_shadow_pixels")).all())


def test_pressure_falls_before_an_alarm() -> None:
    s = _sessions(torch.Generator().manual_seed(0), 20, 50)
    assert s["x"].shape == (1000, MINUTES, 7) and 0.1 < float(s["alarm"].mean()) < 0.5
    last_sbp = s["x"][:, -5:, 0].mean(1)
    assert float(last_sbp[s["alarm"] == 1].mean()) < float(last_sbp[s["alarm"] == 0].mean()) - 10
    assert bool((s["bolus"] <= s["alarm"]).all())


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "bus_adamax_batch32"]) == 0
    assert "blind50_bus_adamax_batch32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind50_Y12_delay_against_last_terms_timetable"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
