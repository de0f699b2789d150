"""The sixty-fourth blind split of the detection benchmark (`benchmarks/detection/blind64/`) is trained by the runner
with its own scripts, only the air-gapped tubes fall below the calibration's offset and the date sort mixes the
blocks, only the crossings from the north slip lose the headwind's sign, only quarter turns swap streaks and
wrinkles, only the defects' alarms are stretched, the stamping verdicts and signatures are as described, only the
drained rinse reads 0 and the dips keep a peak over 71 C, and only the short decays miss -35 dB (its declarations,
a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind64 import smoke, suite
from benchmarks.detection.blind64.fields import (
    AGAINST,
    AHEAD,
    DAYS,
    SEASON,
    VESSELS,
    CrossingMLP,
    DripLSTM,
    _blocks,
    _content,
    _crossings,
    _windows,
)
from benchmarks.detection.blind64.mills import (
    DEFECTS,
    PATCH,
    SAMPLES,
    TonnageAutoencoder,
    WebCNN,
    _stretched,
    _strokes,
    _web,
)
from benchmarks.detection.blind64.rooms import (
    FRAMES,
    TAIL,
    VERDICTS,
    ChordAttention,
    TunnelCNN,
    _batches,
    _channels,
    _levels,
    _reverberation,
    _rooms,
)
from benchmarks.detection.blind64.rooms import SAMPLES as TRACE

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_only_the_air_gapped_tubes_fall_below_the_calibration_and_the_date_sort_mixes_blocks() -> None:
    b = _blocks(torch.Generator().manual_seed(0), 12)
    assert b["sf"].shape == (12, SEASON, 3) and b["eto"].shape == (12, SEASON)
    fixed = _content(b["sf"], None)
    assert bool(torch.isfinite(fixed).all())
    buggy = _content(b["sf"], "probe_calibration_powered_on_air_gap_reading")
    gap = b["sf"] < 0.02852
    assert bool(gap.any()) and torch.equal(torch.isnan(buggy), gap)
    x, y = _windows(b, None)
    assert x.shape[1:] == (DAYS, 7) and x.shape[0] == y.shape[0] and bool(torch.isfinite(x).all())
    x_sorted, _ = _windows(b, None, by_date=True)
    assert x_sorted.shape[1:] == (DAYS, 7)
    # a block's window keeps its own crop coefficient's run; the date-sorted ones hop between the blocks
    hop = lambda w: float((w[:, 1:, 6] - w[:, :-1, 6]).abs().mean())
    assert hop(x_sorted) > 2 * hop(x)
    assert AHEAD > 0
    with torch.no_grad():
        assert DripLSTM(7, 4)(x[:20]).shape == (20,)


def test_only_the_crossings_from_the_north_slip_lose_the_headwinds_sign() -> None:
    c = _crossings(torch.Generator().manual_seed(0), 600)
    assert c["x"].shape == (600, 6) and len(c["vessel"].unique()) == len(VESSELS)
    against, one = c["x"][:, AGAINST], c["one_bearing"]
    same = torch.isclose(against, one, atol=1e-4)
    flipped = torch.isclose(against, -one, atol=1e-4)
    assert bool((same | flipped).all()) and bool(same.any()) and bool(flipped.any())
    assert float(c["minutes"].min()) > 3 and float(c["litres"].min()) > 0
    with torch.no_grad():
        assert CrossingMLP(6, 8)(c["x"], c["vessel"]).shape == (600,)


def test_only_quarter_turns_swap_streaks_and_wrinkles_and_only_alarms_are_stretched() -> None:
    w = _web(torch.Generator().manual_seed(0), 600)
    p, d = w["patch"], w["defect"]
    assert p.shape == (600, 2, PATCH, PATCH) and len(d.unique()) == len(DEFECTS)
    assert float(p.min()) >= 0 and float(p.max()) <= 1
    streak, wrinkle = d == DEFECTS.index("streak"), d == DEFECTS.index("wrinkle")
    # a streak darkens a column of the transmitted view, a wrinkle a row; a quarter turn swaps them
    cols = lambda q: float((q[:, 0].mean(1).amax(-1) - q[:, 0].mean(1).amin(-1)).mean())
    rows = lambda q: float((q[:, 0].mean(2).amax(-1) - q[:, 0].mean(2).amin(-1)).mean())
    assert cols(p[streak]) > rows(p[streak]) and rows(p[wrinkle]) > cols(p[wrinkle])
    turned = torch.rot90(p[streak], 1, (2, 3))
    assert rows(turned) > cols(turned)
    spread = lambda q: float((q.amax((2, 3)) - q.amin((2, 3))).mean())
    assert spread(_stretched(p[d > 0])) > spread(p[d > 0]) + 0.2
    with torch.no_grad():
        assert WebCNN(4)(p).shape == (600, len(DEFECTS))


def test_the_strokes_verdicts_and_signatures() -> None:
    s = _strokes(torch.Generator().manual_seed(0), 500, scrap=0.3)
    assert s["load"].shape == (500, 2, SAMPLES) and len(s["kind"].unique()) == 4
    good = s["kind"] == 0
    assert 0.55 < float(good.float().mean()) < 0.85
    # the misfeeds load one post more than the other
    balance = lambda m: float((s["load"][m, 0].sum(-1) / s["load"][m].sum((1, 2))).mean())
    assert balance(s["kind"] == 3) > balance(good) + 0.02
    with torch.no_grad():
        assert TonnageAutoencoder(8)(s["load"]).shape == (500, 2, SAMPLES)


def test_only_the_drained_rinse_reads_zero_and_the_dips_keep_their_peak() -> None:
    b = _batches(torch.Generator().manual_seed(0), 600)
    assert b["trace"].shape == (600, 4, TAIL + TRACE) and len(b["verdict"].unique()) == len(VERDICTS)
    fixed = _channels(b, None)
    assert fixed.shape == (600, 5, TRACE) and bool(torch.isfinite(fixed).all())
    drained = b["rinse"] == 0
    buggy = _channels(b, "dilution_over_drained_rinse")
    assert bool(drained.any()) and torch.equal(~torch.isfinite(buggy[:, 4, 0]), drained)
    hold = b["trace"][:, 0, TAIL + 28 : TAIL + 42]
    dips = b["dip_only"]
    assert bool(dips.any()) and bool((hold[dips].amax(-1) > 71).all())
    assert bool((hold[dips].amin(-1) < 71).all())
    assert bool((b["verdict"][dips] == 1).all())
    cut = _channels(b, None, torch.full((600,), TAIL))
    assert torch.equal(cut[:, :4, TAIL:], fixed[:, :4, :-TAIL])
    tenths = _channels(b, "plc_tenths_of_degree_read_as_degrees")
    assert float(tenths[:, 0].mean()) > 10 * float(fixed[:, 0].abs().mean())
    with torch.no_grad():
        assert TunnelCNN(4)(fixed).shape == (600, len(VERDICTS))


def test_only_the_short_decays_miss_minus_35() -> None:
    r = _rooms(torch.Generator().manual_seed(0), 300)
    assert r["power"].shape == (300, FRAMES, 6)
    fixed = _reverberation(r, None)
    assert bool((fixed > 0).all()) and float(torch.corrcoef(torch.stack([fixed, r["rt"]]))[0, 1]) > 0.9
    short = r["schroeder"].amin(-1) > -35
    buggy = _reverberation(r, "t30_from_decay_short_of_minus_35")
    assert bool(short.any()) and torch.equal(buggy < 0, short)
    tripled = _reverberation(r, "t30_extrapolated_with_t20_factor")
    assert torch.equal(tripled[short], fixed[short]) and bool((tripled[~short] > fixed[~short]).all())
    levels, amplitude = _levels(r, None), _levels(r, "band_power_in_amplitude_decibels")
    older = r["older"] > 0
    assert torch.allclose(amplitude[older], 2 * levels[older]) and torch.equal(
        amplitude[~older], levels[~older]
    )
    with torch.no_grad():
        assert ChordAttention(6, 4)(levels).shape == (300,)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind64_crossing_radam_batch64"]) == 0
    assert "blind64_crossing_radam_batch64" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind64_P04_headwind_against_one_bearing_both_ways"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
