"""The sixty-third blind split of the detection benchmark (`benchmarks/detection/blind63/`) is trained by the runner
with its own scripts, only the midnight sun leaves a light without hours of darkness and the callouts follow the
falling charge, the ranger's uncorrected distances stray from the melt, only the broadside jobs' grain is misread and
only the counted-from-packing lots lose their days, only the drops start from a slack line and slicing keeps the
truss's hum, and only the colour tells a spring from a well (its declarations, a run through the hook, the oracle's
labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind63 import smoke, suite
from benchmarks.detection.blind63.benches import (
    GRAIN,
    HUMIDITY,
    OUTCOMES,
    SOURCES,
    GranuleMLP,
    SpineMLP,
    _jobs,
    _lots,
    _sheet,
)
from benchmarks.detection.blind63.lines import (
    EVENTS,
    PATCH,
    SAMPLES,
    SYMBOLS,
    BridleCNN,
    SymbolCNN,
    _bridle,
    _channels,
    _sheets,
    _to_50hz,
)
from benchmarks.detection.blind63.stations import (
    AHEAD,
    DAYS,
    RECORDS,
    LanternGRU,
    MeltAttention,
    _lights,
    _log,
    _melt_from_ranger,
    _records,
    _station,
)

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_only_the_midnight_sun_leaves_a_light_without_darkness() -> None:
    s = _lights(torch.Generator().manual_seed(0), 400, arctic=0.5)
    assert s["dawn"].shape == (400, DAYS + AHEAD + 1) and s["dusk"].shape == (400, DAYS + AHEAD)
    fixed = _log(s, None)
    assert fixed.shape == (400, DAYS, 7) and bool(torch.isfinite(fixed).all())
    buggy = _log(s, "night_share_over_midnight_sun")
    sunlit = s["dark"][:, 1 : DAYS + 1] < 0.5
    assert bool(sunlit.any()) and torch.equal(~torch.isfinite(buggy[..., 6]), s["dark"][:, 1 : DAYS + 1] == 0)
    # the callouts come when the charge runs low: the lights called out soon have the lower charge
    visit = _log(s, "days_to_next_visit_from_callouts")
    assert visit.shape == (400, DAYS, 8)
    soon = visit[:, -1, 7] <= AHEAD + 1
    assert float(s["dawn"][soon, -1].mean()) < float(s["dawn"][~soon, -1].mean())
    # most days carry no fog: the fog hours' interquartile range is 0
    fog = s["fog"].flatten()
    assert float(fog.quantile(0.75) - fog.quantile(0.25)) == 0.0
    with torch.no_grad():
        assert LanternGRU(7, 4)(fixed).shape == (400,)


def test_the_rangers_uncorrected_distances_stray_from_the_melt() -> None:
    s = _station(torch.Generator().manual_seed(0), 500)
    x = _records(s)
    assert x.shape == (500, RECORDS, 6) and bool(torch.isfinite(x).all())
    fixed = _melt_from_ranger(s, None)
    raw = _melt_from_ranger(s, "ranger_distance_without_sound_speed_correction")
    assert float((fixed - s["melt"]).abs().mean()) < float((raw - s["melt"]).abs().mean())
    assert float(s["melt"].min()) >= 0 and float(s["melt"].mean()) > 5
    with torch.no_grad():
        assert MeltAttention(6, 4)(x).shape == (500,)


def test_only_the_broadside_jobs_grain_is_misread() -> None:
    j = _jobs(torch.Generator().manual_seed(0), 800)
    assert j["numeric"].shape == (800, 9) and len(j["outcome"].unique()) == len(OUTCOMES)
    fixed, buggy = _sheet(j, None), _sheet(j, "grain_read_off_the_parent_sheet")
    changed = fixed[:, GRAIN] != buggy[:, GRAIN]
    assert bool(changed.any()) and not bool(changed.all())
    assert torch.equal(fixed[:, :GRAIN], buggy[:, :GRAIN]) and torch.equal(
        fixed[:, GRAIN + 1 :], buggy[:, GRAIN + 1 :]
    )
    flat = _sheet(j, "humidity_from_building_setpoint")[:, HUMIDITY]
    assert bool((flat == flat[0]).all()) and float(fixed[:, HUMIDITY].std()) > 1
    with torch.no_grad():
        assert SpineMLP(8)(fixed, j["adhesive"]).shape == (800, len(OUTCOMES))


def test_only_the_lots_counted_from_packing_lose_their_days() -> None:
    g = torch.Generator().manual_seed(0)
    lots = _lots(g, 600, late_packing=0.5)
    assert lots["x"].shape == (600, 9) and len(lots["source"].unique()) == len(SOURCES)
    short = lots["log_days"] < lots["true_log_days"]
    assert bool(short.any()) and not bool(short.all())
    assert bool((lots["log_days"] <= lots["true_log_days"]).all())
    assert bool((lots["crystals"] >= 0).all()) and float(lots["crystals"].max()) > 0
    unchecked = _lots(g, 100, checked=False)
    assert bool((unchecked["crystals"] == 0).all())
    with torch.no_grad():
        assert GranuleMLP(9, 8)(lots["x"], lots["source"]).shape == (600,)


def test_only_the_drops_start_from_a_slack_line_and_slicing_keeps_the_hum() -> None:
    b = _bridle(torch.Generator().manual_seed(0), 500, truss=3.0)
    assert b["trace"].shape == (500, 2, 4 * SAMPLES) and len(b["event"].unique()) == len(EVENTS)
    averaged, sliced = _to_50hz(b["trace"]), b["trace"][..., ::4]
    assert averaged.shape == sliced.shape == (500, 2, SAMPLES)
    # the static hangs hold still but for the hum, which slicing keeps and the 20 ms mean takes out
    still = b["event"] == 0
    assert float(sliced[still].std(-1).mean()) > float(averaged[still].std(-1).mean())
    fixed = _channels(averaged, b["weight"], None)
    assert fixed.shape == (500, 3, SAMPLES) and bool(torch.isfinite(fixed).all())
    start = averaged.sum(1)[:, :5].mean(1)
    drop = b["event"] == 1
    assert float(start[drop].abs().max()) < 0.2 and float(start[~drop].min()) > 0.3
    with torch.no_grad():
        assert BridleCNN(3, 4)(fixed).shape == (500, len(EVENTS))


def test_only_the_colour_tells_a_spring_from_a_well() -> None:
    s = _sheets(torch.Generator().manual_seed(0), 600, negatives=0.3)
    assert s["patch"].shape == (600, 3, PATCH, PATCH) and len(s["symbol"].unique()) == len(SYMBOLS)
    assert float(s["patch"].min()) >= 0 and float(s["patch"].max()) <= 1
    positive = _sheets(torch.Generator().manual_seed(1), 600)
    p, k = positive["patch"], positive["symbol"]
    blue = p[:, 2] - p[:, 0]  # the blue ink against the paper's yellow
    well, spring = k == SYMBOLS.index("well"), k == SYMBOLS.index("spring")
    assert float(blue[spring].amax((1, 2)).mean()) > float(blue[well].amax((1, 2)).mean()) + 0.1
    # the microfilm's negatives are dark paper
    assert float(s["patch"][s["negative"]].mean()) < 0.5 < float(s["patch"][~s["negative"]].mean())
    with torch.no_grad():
        assert SymbolCNN(3, 4)(p).shape == (600, len(SYMBOLS))


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind63_granule_adagrad_batch64"]) == 0
    assert "blind63_granule_adagrad_batch64" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind63_F13_columns_l2_normalised_over_lots"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
