"""The sixtieth blind split of the detection benchmark (`benchmarks/detection/blind60/`) is trained by the runner with
its own scripts, only its quiet days leave the b-value undefined and the tiltmeters' east axes lose the inflation, its
berth-step log shows every aspect red, its scans rotate barre into streaks and only the dead pixels break the flat
field, only the unreported traces break the log-ratios, its shots change ends in the second period and only the tips
logged on the net break the angle's ratio, and the insemination records miss the early heats (its declarations, a run
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
from benchmarks.detection.blind60 import smoke, suite
from benchmarks.detection.blind60.monitors import (
    ASPECTS,
    DAYS,
    LEVELS,
    POINTS,
    DelayEncoder,
    UnrestGRU,
    _b_value,
    _tilt,
    _timing_points,
    _trains,
    _unrest_days,
    _volcano,
)
from benchmarks.detection.blind60.seasons import (
    BLOCKS,
    VOLUNTARY_WAITING,
    HeatCNN,
    ShotMLP,
    _collar,
    _cows,
    _shot_columns,
    _shots,
)
from benchmarks.detection.blind60.studios import (
    COMPONENTS,
    FAULTS,
    SIDE,
    LevelCNN,
    LotAutoencoder,
    _augmented,
    _flat_fielded,
    _lamp,
    _log_ratios,
    _lots,
    _pieces,
)

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_quiet_days_alone_leave_the_b_value_undefined_and_east_axes_lose_the_inflation() -> None:
    v = _volcano(torch.Generator().manual_seed(0), 300)
    assert v["mags"].shape[:2] == (300, DAYS) and len(v["level"].unique()) == len(LEVELS)
    fixed = _unrest_days(v, None)
    assert fixed.shape == (300, DAYS, 5) and bool(torch.isfinite(fixed).all())
    buggy = _b_value(v, "b_value_over_quiet_days")
    assert torch.equal(torch.isnan(buggy), v["count"] == 0) and bool((v["count"] == 0).any())
    radial, east = _tilt(v, None), _tilt(v, "east_axis_for_every_tiltmeter")
    top, bottom = v["level"] == 3, v["level"] == 0
    assert float(radial[top].mean()) > float(radial[bottom].mean()) + 0.3
    assert abs(float(east[top].mean()) - float(east[bottom].mean())) < 0.1
    with torch.no_grad():
        assert UnrestGRU(8)(fixed).shape == (300, len(LEVELS))


def test_the_berth_step_log_shows_every_aspect_red() -> None:
    t = _trains(torch.Generator().manual_seed(0), 300)
    x, aspect = _timing_points(t, None)
    assert x.shape == (300, POINTS, 5) and len(aspect.unique()) > 1
    _, logged = _timing_points(t, "aspect_logged_at_berth_step")
    assert bool((logged == ASPECTS.index("red")).all())
    with torch.no_grad():
        assert DelayEncoder(5, 8)(x, aspect).shape == (300,)
        plain = DelayEncoder(5, 8, plain_gate=True)
    assert not any(p is plain.gate for p in plain.parameters())


def test_quarter_turns_make_barre_into_streaks_and_dead_pixels_break_the_flat_field() -> None:
    g = torch.Generator().manual_seed(0)
    img, fault = _pieces(g, 400)
    assert img.shape == (400, 1, SIDE, SIDE) and len(fault.unique()) == len(FAULTS)
    barre = img[fault == FAULTS.index("barre")]
    # barre varies from row to row, not along a row; a quarter turn makes it vary along the rows instead
    assert float(barre.mean(3).std(2).mean()) > float(barre.mean(2).std(2).mean())
    flipped = _augmented(barre, g, None)
    assert float(flipped.mean(3).std(2).mean()) > float(flipped.mean(2).std(2).mean())
    assert _augmented(barre, g, "quarter_turn_augmentation").shape == barre.shape
    raw, reference, _ = _lamp(g, 50)
    assert bool(torch.isfinite(_flat_fielded(raw, reference, None)).all())
    assert int(torch.isnan(_flat_fielded(raw, reference, "flat_field_over_dead_pixels")).sum()) == 2 * 50
    with torch.no_grad():
        assert LevelCNN(4)(img).shape == (400, len(FAULTS))


def test_only_the_unreported_traces_break_the_log_ratios() -> None:
    lots = _lots(torch.Generator().manual_seed(0), 300, cut=0.3)
    assert lots["area"].shape == (300, COMPONENTS)
    assert float((lots["area"].sum(1) - 100).abs().max()) < 1 and bool((lots["area"] == 0).any())
    fixed = _log_ratios(lots["area"], None)
    assert bool(torch.isfinite(fixed).all()) and float(fixed.sum(1).abs().max()) < 1e-3
    assert bool(torch.isinf(_log_ratios(lots["area"], "log_ratios_of_unreported_traces")).any())
    assert 0 < int(lots["cut"].sum()) < 300
    with torch.no_grad():
        assert LotAutoencoder(8)(fixed).shape == (300, COMPONENTS)


def test_shots_change_ends_and_only_tips_on_the_net_break_the_angle_ratio() -> None:
    s = _shots(torch.Generator().manual_seed(0), 2000, empty_net=0.1)
    numbers, cats = _shot_columns(s, None)
    assert numbers.shape == (2000, 4) and cats.shape == (2000, 2) and bool(torch.isfinite(numbers).all())
    fixed_net, _ = _shot_columns(s, "net_fixed_across_periods")
    left = ((s["home"] == 1) ^ (s["period"] == 2)) == 0
    assert float(numbers[:, 0].max()) < 92 < float(fixed_net[left & ~s["empty"], 0].min())
    ratio, _ = _shot_columns(s, "shot_angle_by_atan_of_ratio")
    on_net = (s["x"].abs() == 89) & (s["y"] == 0)
    assert bool(on_net.any()) and torch.equal(torch.isnan(ratio[:, 1]), on_net)
    home_bench, _ = _shot_columns(s, "strength_read_from_home_bench")
    assert home_bench.shape == numbers.shape
    with torch.no_grad():
        assert ShotMLP(8)(numbers, cats).shape == (2000,)


def test_the_insemination_records_miss_the_early_heats() -> None:
    c = _cows(torch.Generator().manual_seed(0), 600)
    assert c["activity"].shape == (600, BLOCKS) and bool((c["activity"] >= 0).all())
    assert bool((c["bred"] <= c["heat"]).all())
    assert int(c["bred"][c["dim"] < VOLUNTARY_WAITING].sum()) == 0
    assert int(c["heat"][c["dim"] < VOLUNTARY_WAITING].sum()) > 0
    x, s = _collar(c, None)
    seconds, _ = _collar(c, "rumination_seconds_under_minute_norms")
    assert x.shape == (600, 2, BLOCKS) and s.shape == (600, 1)
    assert float(seconds[:, 1].mean()) > 50 * float(x[:, 1].abs().mean())
    with torch.no_grad():
        assert HeatCNN(4, 1)(x, s).shape == (600,)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind60_shots_nadam_batch128"]) == 0
    assert "blind60_shots_nadam_batch128" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind60_V03_linear_decay_length_of_older_config"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
