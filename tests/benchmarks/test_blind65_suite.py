"""The sixty-fifth blind split of the detection benchmark (`benchmarks/detection/blind65/`) is trained by the runner
with its own scripts, only the freshly seeded lines carry no kelp and the load alarm follows the forecast day's peak,
the empty chairs load the sheaves less, only the black cores hide from the camera and only the held logger loses the
cooling, only the unread partials sit at 0 Hz and only the new templates' profiles run from the crown, the race clock
runs to the finish while the placing follows it, and only the green lots lack theaflavins (its declarations, a run
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
from benchmarks.detection.blind65 import smoke, suite
from benchmarks.detection.blind65.furnaces import (
    GRADES,
    PARTIALS,
    SAMPLES,
    STATIONS,
    FiringCNN,
    PartialsMLP,
    _bells,
    _cars,
    _cents,
)
from benchmarks.detection.blind65.halls import (
    CLOCK,
    GARDENS,
    LAPS,
    LOTS,
    SEEN,
    BlendSet,
    PursuitAttention,
    _blends,
    _features,
    _inputs,
    _rides,
)
from benchmarks.detection.blind65.ropes import (
    BANDS,
    DAYS,
    SheaveAutoencoder,
    TensionLSTM,
    _days,
    _farm,
    _towers,
)

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_only_freshly_seeded_lines_carry_no_kelp_and_the_alarm_follows_the_peak() -> None:
    f = _farm(torch.Generator().manual_seed(0), 500)
    assert f["peak"].shape == (500, DAYS + 1) and f["forecast"].shape == (500, 3)
    fixed = _days(f, None)
    assert fixed.shape == (500, DAYS, 8) and bool(torch.isfinite(fixed).all())
    buggy = _days(f, "tension_per_kilo_of_unseeded_lines")
    bare = f["biomass"][:, :DAYS] == 0
    assert bool(bare.any()) and torch.equal(~torch.isfinite(buggy[..., 7]), bare)
    # the load alarm is the forecast day's own peak passing its limit; the warning only the waves forecast
    assert bool((f["peak"][f["flag"] > 0, DAYS] > 8).all())
    assert bool((f["peak"][:, DAYS] >= 0).all()) and bool((f["peak"] >= f["mean"] * 0.5).all())
    with torch.no_grad():
        assert TensionLSTM(8, 3, 4)(fixed, f["forecast"]).shape == (500,)


def test_the_empty_chairs_load_the_sheaves_less() -> None:
    g = torch.Generator().manual_seed(0)
    loaded, empty = _towers(g, 400), _towers(g, 400, load=0.45)
    assert loaded["power"].shape == (400, BANDS) and bool((loaded["power"] > 0).all())
    assert float(loaded["fault"].sum()) == 0
    assert float(torch.log10(empty["power"]).mean()) < float(torch.log10(loaded["power"]).mean())
    checked = _towers(g, 400, faulty=0.5)
    assert 0 < float(checked["fault"].mean()) < 1
    with torch.no_grad():
        assert SheaveAutoencoder(8, 3)(torch.log10(loaded["power"])).shape == (400, BANDS)


def test_only_the_black_cores_hide_from_the_camera() -> None:
    c = _cars(torch.Generator().manual_seed(0), 600)
    assert c["trace"].shape == (600, 3, SAMPLES) and len(c["grade"].unique()) == len(GRADES)
    differ = c["camera"] != c["grade"]
    assert bool(differ.any()) and bool((c["grade"][differ] == GRADES.index("black core")).all())
    assert bool((c["camera"][differ] == 0).all())
    assert bool((c["chips"] >= 0).all())
    with torch.no_grad():
        assert FiringCNN(3, 4)(c["trace"]).shape == (600, len(GRADES))


def test_only_the_unread_partials_sit_at_zero_and_the_new_profiles_run_from_the_crown() -> None:
    g = torch.Generator().manual_seed(0)
    b = _bells(g, 500)
    assert b["sheet"].shape == (500, 4 + STATIONS) and b["partials"].shape == (500, len(PARTIALS))
    assert torch.equal(b["partials"] == 0, b["unread"]) and not bool(b["unread"][:, 0].any())
    fixed, read = _cents(b["partials"], None)
    assert bool(torch.isfinite(fixed).all()) and torch.equal(read, ~b["unread"])
    buggy, _ = _cents(b["partials"], "cents_of_unread_partials")
    assert torch.equal(~torch.isfinite(buggy[:, 1:]), b["unread"][:, 1:])
    # the lip is the thickest station of an ordinary profile; the crown-first files start thin
    thickness = b["sheet"][:, 4:]
    assert bool((thickness[:, 0] > thickness[:, -1]).float().mean() > 0.9)
    flipped = _bells(torch.Generator().manual_seed(1), 500, reversed_share=1.0)["sheet"][:, 4:]
    assert bool((flipped[:, 0] < flipped[:, -1]).float().mean() > 0.9)
    with torch.no_grad():
        assert PartialsMLP(4 + STATIONS, 8)(b["sheet"]).shape == (500, len(PARTIALS))


def test_the_race_clock_runs_to_the_finish_and_the_placing_follows_it() -> None:
    r = _rides(torch.Generator().manual_seed(0), 400)
    assert r["laps"].shape == (400, LAPS, 6) and r["finish"].shape == (400,)
    assert torch.allclose(r["laps"][:, -1, CLOCK], r["finish"])
    assert float(r["laps"][:, 0, 0].mean()) > float(r["laps"][:, 1:, 0].mean())  # the standing start
    rounds, placing = r["finish"].view(-1, 8), r["placing"].view(-1, 8)
    assert bool((placing[rounds.argmin(1).unsqueeze(1) == torch.arange(8)] == 1).all())
    fixed = _inputs(r, None)
    assert fixed.shape == (400, SEEN, 4)
    assert _inputs(r, "heat_placing_from_results_sheet").shape == (400, SEEN, 5)
    with torch.no_grad():
        assert PursuitAttention(4, 4)(fixed).shape == (400,)


def test_only_the_green_lots_lack_theaflavins() -> None:
    b = _blends(torch.Generator().manual_seed(0), 500)
    assert b["analysis"].shape == (500, LOTS, 6) and int(b["garden"].max()) < GARDENS
    assert torch.allclose(b["percent"].sum(1), torch.full((500,), 100.0))
    fixed = _features(b, None)
    assert fixed.shape == (500, LOTS, 7) and bool(torch.isfinite(fixed).all())
    buggy = _features(b, "log_tf_over_tr_of_green_lots")
    present = b["percent"] > 0
    nan = ~torch.isfinite(buggy[..., 6])
    green = present & (b["analysis"][..., 0] == 0)
    assert bool(green.any()) and torch.equal(nan & present, green)
    mixed = _blends(torch.Generator().manual_seed(1), 500, hundred=0.5)["score"]
    assert float(b["score"].max()) <= 10 < float(mixed.max())
    with torch.no_grad():
        assert BlendSet(7, 8)(fixed, b["garden"], b["percent"] / 100).shape == (500,)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind65_blend_adagrad_batch64"]) == 0
    assert "blind65_blend_adagrad_batch64" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind65_Q18_blend_percentages_divided_by_hundred_twice"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
