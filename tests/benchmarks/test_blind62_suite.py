"""The sixty-second blind split of the detection benchmark (`benchmarks/detection/blind62/`) is trained by the runner
with its own scripts, the pipes' faults show in their attacks and the eight-foot tracking garbles only the higher
ranks, only the duds' burn speed is undefined and the old code list turns only the chlorine donors into perchlorate,
the marsh's zones climb with the plots' height and only the chart-datum sites stand 2.9 m high, only a wind hold
leaves the riders per cabin undefined and the camera caps the queue, the rinds keep their colours and the shelf
follows the quarantine, and only the thaw days can take Stefan's degree-days below zero (its declarations, a run
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
from benchmarks.detection.blind62 import smoke, suite
from benchmarks.detection.blind62.cold import (
    HISTORY,
    QUARANTINE,
    RINDS,
    SIDE,
    IceGRU,
    RindCNN,
    _crops,
    _ice_inputs,
    _wheels,
    _winter,
)
from benchmarks.detection.blind62.outdoors import (
    CAMERA_VIEW,
    CHART_DATUM,
    WINDOW,
    ZONES,
    MarshMLP,
    QueueLSTM,
    _days,
    _marsh_columns,
    _plots,
    _queue_inputs,
)
from benchmarks.detection.blind62.workshop import (
    COLOURS,
    FRAMES,
    HARMONICS,
    INGREDIENTS,
    OLDER_LIST,
    VOICING,
    StarEncoder,
    VoicingCNN,
    _pipes,
    _speed,
    _stars,
    _tracks,
)

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_pipe_faults_show_in_the_attack_and_eight_foot_tracking_garbles_higher_ranks() -> None:
    p = _pipes(torch.Generator().manual_seed(0), 500)
    assert p["amp"].shape == (500, HARMONICS + 1, FRAMES) and len(p["fault"].unique()) == len(VOICING)
    x = _tracks(p, None)
    assert bool(torch.isfinite(x).all())
    windy, voiced = p["fault"] == 4, p["fault"] == 0
    assert float(x[windy, HARMONICS].mean()) > float(x[voiced, HARMONICS].mean()) + 5
    # the fundamental of a slow pipe is still low a few frames in
    assert float(x[p["fault"] == 1, 0, 3].mean()) < float(x[voiced, 0, 3].mean())
    buggy = _tracks(p, "four_foot_rank_tracked_at_eight_foot_pitch")
    eight = p["rank"] == 0
    assert torch.equal(buggy[eight], x[eight]) and not torch.equal(buggy[~eight], x[~eight])
    with torch.no_grad():
        assert VoicingCNN(HARMONICS + 1, 4)(x).shape == (500, len(VOICING))


def test_only_duds_leave_the_burn_speed_undefined_and_only_donors_turn_into_perchlorate() -> None:
    s = _stars(torch.Generator().manual_seed(0), 600, duds=0.1)
    assert len(s["colour"].unique()) == len(COLOURS)
    assert bool(torch.isfinite(_speed(s, None)).all())
    duds = s["burn"] == 0
    assert bool(duds.any()) and torch.equal(torch.isinf(_speed(s, "burn_speed_of_duds")), duds)
    donors = (s["ids"] >= OLDER_LIST) & (s["ids"] < len(INGREDIENTS))
    assert bool(donors.any())
    with torch.no_grad():
        logits = StarEncoder(8)(s["ids"], s["frac"], _speed(s, None))
    assert logits.shape == (600, len(COLOURS))


def test_marsh_zones_climb_with_height_and_chart_datum_sites_stand_high() -> None:
    p = _plots(torch.Generator().manual_seed(0), 800)
    assert len(p["zone"].unique()) == len(ZONES)
    height = p["elevation"] - p["mhw"]
    assert float(height[p["zone"] == 4].mean()) > float(height[p["zone"] == 0].mean()) + 0.5
    x, share = _marsh_columns(p, None)
    assert x.shape == (800, 5) and bool(((share >= 0) & (share <= 1)).all())
    chart, _ = _marsh_columns(p, "elevation_against_chart_datum_at_three_sites")
    off = chart[:, 0] - x[:, 0]
    assert torch.allclose(off[p["site"] < 3], torch.full_like(off[p["site"] < 3], CHART_DATUM))
    assert bool((off[p["site"] >= 3] == 0).all())
    _, counted = _marsh_columns(p, "inundation_counted_in_tides")
    assert float(counted.max()) > 100
    with torch.no_grad():
        assert MarshMLP(6, 8)(torch.cat([x, share], 1), p["substrate"], p["grazed"]).shape == (
            800,
            len(ZONES),
        )


def test_only_wind_holds_leave_riders_per_cabin_undefined_and_the_camera_caps_the_queue() -> None:
    d = _days(torch.Generator().manual_seed(0), 400)
    x, y = _queue_inputs(d, None)
    assert x.shape == (400, WINDOW, 8) and bool(torch.isfinite(x).all()) and float(y.max()) > CAMERA_VIEW
    buggy, _ = _queue_inputs(d, "riders_per_cabin_during_wind_hold")
    hold = x[..., 2] == 0
    assert bool(hold.any()) and torch.equal(torch.isnan(buggy[..., 3]), hold)
    _, capped = _queue_inputs(d, "queue_counted_by_camera_in_view")
    assert float(capped.max()) <= CAMERA_VIEW
    with torch.no_grad():
        assert QueueLSTM(8, 4)(x).shape == (400,)


def test_rinds_keep_their_colours_and_the_shelf_follows_the_quarantine() -> None:
    w = _wheels(torch.Generator().manual_seed(0), 500)
    assert w["photo"].shape == (500, 3, SIDE, SIDE) and len(w["rind"].unique()) == len(RINDS)
    blue = w["photo"][:, 2] - w["photo"][:, 0]
    assert float(blue[w["rind"] == 3].mean()) > float(blue[w["rind"] == 0].mean())
    grey = _crops(w, "photos_loaded_as_greyscale")
    assert torch.equal(grey[:, 0], grey[:, 2])
    q = _wheels(torch.Generator().manual_seed(0), 500, quarantine=True)
    on_shelf = q["shelf"] == QUARANTINE
    assert bool(((q["rind"][on_shelf] == 1) | (q["rind"][on_shelf] == 3)).all())
    assert _crops(q, "quarantine_shelf_kept_as_input").shape == (500, 4, SIDE, SIDE)
    with torch.no_grad():
        assert RindCNN(3, 4)(_crops(w, None)).shape == (500, len(RINDS))


def test_only_thaw_days_take_the_degree_days_below_zero() -> None:
    w = _winter(torch.Generator().manual_seed(0), 400)
    x = _ice_inputs(w, None)
    assert x.shape == (400, HISTORY, 6) and bool(torch.isfinite(x).all())
    buggy = _ice_inputs(w, "stefan_root_of_thaw_days")
    assert bool(torch.isnan(buggy[..., 5]).any()) and torch.equal(buggy[..., :5], x[..., :5])
    with torch.no_grad():
        assert IceGRU(6, 4)(x).shape == (400,)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind62_queue_nadam_batch64"]) == 0
    assert "blind62_queue_nadam_batch64" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind62_G09_lidar_elevation_high_in_tall_cordgrass"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
