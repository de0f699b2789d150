"""The fifty-sixth blind split of the detection benchmark (`benchmarks/detection/blind56/`) is trained by the runner
with its own scripts, its 20 Hz throws decimated rather than cut and its blasts flagged by day and depth, its
degree-reporting stations and its lab ids kept apart from the true distances and dates, its pooled berries equal and
its deep blacks below the black trap, its Universal tooth numbers landing on other teeth, and its drafts' bans apart
from the picks (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind56 import smoke, suite
from benchmarks.detection.blind56.arena import (
    FDI,
    HEROES,
    UNIVERSAL,
    _case_inputs,
    _cases,
    _matches,
    _pair_crosses,
    _per_tooth,
)
from benchmarks.detection.blind56.cellar import (
    BERRIES,
    WEEKS,
    _berry_spread,
    _blocks,
    _lab,
    _poly4,
    _recipes,
    _weekly,
)
from benchmarks.detection.blind56.rails import (
    KM_PER_DEGREE,
    SAMPLES,
    STATIONS,
    StationPool,
    _event_inputs,
    _events,
    _station_inputs,
    _throws,
    _traces,
)

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_throws_are_decimated_not_cut_and_blasts_are_flagged_by_day_and_depth() -> None:
    g = torch.Generator().manual_seed(0)
    throws = _throws(g, 400, 0.5)
    assert throws["current"].shape == (400, 96) and 0.3 < float(throws["fast"].float().mean()) < 0.7
    slow = ~throws["fast"]
    assert bool((throws["current"][slow, SAMPLES:] == 0).all())
    fixed, cut = _traces(throws, None), _traces(throws, "truncated_not_decimated")
    assert fixed.shape == cut.shape == (400, SAMPLES)
    assert torch.equal(fixed[slow], cut[slow]) and not torch.equal(fixed[~slow], cut[~slow])
    # the stall of an obstructed throw lies in the second half of the 20 Hz trace
    obstructed = throws["fast"] & (throws["kind"] == 1)
    assert float(fixed[obstructed, 30:].mean()) > float(cut[obstructed, 30:].mean())
    ev = _events(g, 600)
    present = ev["present"]
    assert ev["picks"].shape == (600, STATIONS, 5)
    assert int(present.sum(1).min()) >= 3 and bool(present.all(1).any())
    assert 0.2 < float(ev["blast"].mean()) < 0.5 and bool((ev["flag"] != ev["blast"]).any())
    blast = ev["blast"] > 0
    assert float(ev["hour"][blast].min()) >= 7 and float(ev["hour"][blast].max()) <= 19
    km = _station_inputs(ev, None)[..., 0]
    misread = _station_inputs(ev, "distance_degrees_read_as_km")[..., 0]
    degrees = ev["degrees"] & present
    assert torch.allclose(
        km[degrees] - misread[degrees], torch.full_like(km[degrees], math.log10(KM_PER_DEGREE))
    )
    assert _event_inputs(ev).shape == (600, 3)
    model = StationPool(8)
    assert bool(torch.isfinite(model(_station_inputs(ev, None), present, _event_inputs(ev))).all())


def test_berries_of_pooled_samples_are_equal_and_lab_ids_reorder_the_weeks() -> None:
    b = _blocks(torch.Generator().manual_seed(0), 300)
    assert b["weights"].shape == (300, WEEKS, BERRIES) and b["target"].shape == (300,)
    spread = _berry_spread(b["weights"], None)
    assert bool(torch.isfinite(spread).all())
    pooled = spread < 1e-4
    assert 0.01 < float(pooled.float().mean()) < 0.1
    one_pass = _berry_spread(b["weights"], "one_pass_variance_under_sqrt")
    assert torch.allclose(one_pass[~pooled], spread[~pooled], rtol=0.02)
    x, shuffled = _weekly(b, None), _weekly(b, "samples_in_lab_id_order")
    assert x.shape == (300, WEEKS, 7) and not torch.equal(x[..., 5], shuffled[..., 5])
    assert torch.allclose(x[..., 0].sort(1).values, shuffled[..., 0].sort(1).values)
    # sugar climbs over the weeks in date order
    assert float((x[:, -1, 0] - x[:, 0, 0]).mean()) > 1


def test_deep_blacks_read_below_the_black_trap_and_wet_swatches_are_darker() -> None:
    r = _recipes(torch.Generator().manual_seed(0), 700)
    assert r["x"].shape == (700, 8) and r["dry"].shape == r["wet"].shape == (700, 3)
    lab = _lab(r["dry"], None)
    assert bool(torch.isfinite(lab).all())
    assert float(lab[:, 0].min()) > -20 and float(lab[:, 0].max()) < 105
    assert float(_lab(r["wet"], None)[:, 0].mean()) < float(lab[:, 0].mean()) - 5
    negative = (r["dry"] < 0).any(1)
    assert bool(negative.any()) and float(negative.float().mean()) < 0.1
    assert bool(_lab(r["dry"], "cube_root_of_negative_xyz")[negative].isnan().any(1).all())
    assert _poly4(r["x"][:5]).shape == (5, 494)


def test_universal_numbers_land_on_other_teeth_and_micrometres_are_a_thousand_times() -> None:
    c = _cases(torch.Generator().manual_seed(0), 400)
    assert c["translation"].shape == (400, 12) and float(c["stages"].min()) >= 2
    assert 0.6 < float(c["universal"].float().mean()) < 0.95
    assert set(UNIVERSAL) & set(FDI) == {11, 22, 23}
    read = _per_tooth(c["translation"], c["universal"], "universal_numbers_read_as_fdi")
    u = c["universal"]
    assert torch.equal(read[~u], c["translation"][~u])
    assert int((read[u] != 0).sum(1).max()) <= 3
    assert torch.equal(read[u, FDI.index(11)], c["translation"][u, UNIVERSAL.index(11)])
    fine = _case_inputs(c, None)
    micro = _case_inputs(c, None, micrometres=True)
    assert fine.shape == (400, 28) and torch.allclose(micro[:, :12], 1000 * fine[:, :12])


def test_drafts_keep_the_bans_apart_from_the_picks() -> None:
    m = _matches(torch.Generator().manual_seed(0), 500)
    draft = m["draft"]
    assert draft.shape == (500, 20) and int(draft.max()) < HEROES
    assert all(len(set(row)) == 20 for row in draft.tolist())  # no hero banned and picked
    assert 0.3 < float(m["win"].mean()) < 0.7 and 0.3 < float(m["swapped"].float().mean()) < 0.6
    crosses = _pair_crosses(draft[:, 10:])
    assert crosses.shape == (500, HEROES * HEROES)
    assert torch.equal(crosses.abs().sum(1), torch.full((500,), 20.0))


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind56_dyebath_radam_batch32"]) == 0
    assert "blind56_dyebath_radam_batch32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind56_H13_universal_numbers_read_as_fdi"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
