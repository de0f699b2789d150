"""The sixty-first blind split of the detection benchmark (`benchmarks/detection/blind61/`) is trained by the runner
with its own scripts, only the roasts whose first crack nobody marked have a development time of 0 and the phase view
ends at the first crack, only the liner glazes lose every flux with the older materials table and the spreadsheet
merges cone 06 into cone 6, its ropes' findings show along the rope and the old encoder wheel shortens them, only
slack water leaves the power coefficient undefined and the plain average of directions goes wrong only across north,
the hawks' books follow the food and only the counting falconer's quail are small numbers, and the archers' faults
spread the hit maps their own ways (its declarations, a run through the hook, the oracle's labels:
`test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind61 import smoke, suite
from benchmarks.detection.blind61.crafts import (
    CONES,
    OXIDES,
    POINTS,
    SURFACES,
    GlazeMLP,
    RoastGRU,
    _glaze_columns,
    _roast_inputs,
    _roasts,
    _tiles,
    _unity,
)
from benchmarks.detection.blind61.field import (
    ARROWS,
    DAYS,
    FAULTS,
    GRID,
    GroupCNN,
    WeightLSTM,
    _book,
    _days,
    _maps,
    _rounds,
)
from benchmarks.detection.blind61.machines import (
    FINDINGS,
    LENGTH,
    RECORDS,
    RopeCNN,
    TideEncoder,
    _records,
    _site,
    _traces,
)

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_only_unmarked_first_cracks_leave_the_development_time_at_zero() -> None:
    r = _roasts(torch.Generator().manual_seed(0), 300, unmarked=0.3)
    assert r["bt"].shape == (300, POINTS) and bool((r["drop"] > r["crack_bt"]).all())
    fixed = _roast_inputs(r, None)
    assert fixed.shape == (300, POINTS, 9) and bool(torch.isfinite(fixed).all())
    buggy = _roast_inputs(r, "log_development_time_of_unmarked_first_crack")
    unmarked = r["crack"] == r["drop"]
    assert bool(unmarked.any()) and torch.equal(torch.isinf(buggy[:, 0, 6]), unmarked)
    # the phase view ends at the first crack, below the drop's bean temperature
    early = _roast_inputs(r, "log_exported_in_phase_view")
    assert float(early[:, -1, 0].mean()) < float(fixed[:, -1, 0].mean()) - 5
    assert _roast_inputs(r, "post_roast_weight_loss_as_input").shape == (300, POINTS, 10)
    with torch.no_grad():
        assert RoastGRU(9, 4)(fixed).shape == (300,)


def test_only_liner_glazes_lose_their_fluxes_with_the_older_table() -> None:
    t = _tiles(torch.Generator().manual_seed(0), 600, liners=0.1)
    assert t["grams"].shape[0] == 600 and len(t["surface"].unique()) == len(SURFACES)
    fixed = _unity(t, None)
    assert fixed.shape == (600, len(OXIDES)) and bool(torch.isfinite(fixed).all())
    buggy = _unity(t, "unity_over_fluxes_missing_from_materials")
    nan = torch.isnan(buggy).any(1)
    assert bool(nan.any()) and not bool(nan.all())
    # cone 06 fires mostly underfired tiles, the other cones hardly any
    low = t["cone"] == CONES.index("06")
    assert float((t["surface"][low] == 0).float().mean()) > 2 * float(
        (t["surface"][~low] == 0).float().mean()
    )
    assert float(_glaze_columns(t, "oxides_fed_as_floored_logs").min()) < -20
    with torch.no_grad():
        logits = GlazeMLP(8)(fixed, t["cone"], t["atmosphere"], t["cooling"])
    assert logits.shape == (600, len(SURFACES))


def test_rope_findings_show_along_the_rope_and_the_old_wheel_shortens_them() -> None:
    d = _traces(torch.Generator().manual_seed(0), 400)
    assert d["trace"].shape == (400, 2, LENGTH) and len(d["finding"].unique()) == len(FINDINGS)
    lf_peak = d["trace"][:, 1].abs().amax(1)
    assert float(lf_peak[d["finding"] == 1].mean()) > float(lf_peak[d["finding"] == 0].mean())
    lma_peak = d["trace"][:, 0].amax(1)
    assert float(lma_peak[d["finding"] == 2].mean()) > float(lma_peak[d["finding"] == 0].mean())
    hot = _traces(torch.Generator().manual_seed(0), 400, hotspots=True)
    assert float(hot["chainage"][hot["finding"] == 1].max()) <= 120
    with torch.no_grad():
        assert RopeCNN(2, 4)(d["trace"]).shape == (400, len(FINDINGS))


def test_only_slack_water_leaves_the_power_coefficient_undefined() -> None:
    s = _site(torch.Generator().manual_seed(0), 300)
    fixed = _records(s, None)
    assert fixed.shape == (300, RECORDS, 5) and bool(torch.isfinite(fixed).all())
    buggy = _records(s, "power_coefficient_at_slack_water")
    slack = s["speed"][:, :RECORDS] == 0
    assert bool(slack.any()) and torch.equal(torch.isnan(buggy[..., 5]), slack)
    # the plain average of the directions goes wrong only for a flow across north
    off = ((s["plain_direction"] - s["direction"] + 180) % 360 - 180).abs()
    south = (s["direction"] > 100) & (s["direction"] < 260)
    assert float(off[south].max()) < 5 and float(off[~south].max()) > 30
    with torch.no_grad():
        assert TideEncoder(5, 8)(fixed).shape == (300,)


def test_the_hawks_book_follows_the_food_and_counted_quail_are_small() -> None:
    b = _book(torch.Generator().manual_seed(0), 400)
    assert b["weight"].shape == (400, DAYS + 1) and bool((b["weight"] > 100).all())
    x = _days(b)
    assert x.shape == (400, DAYS, 9) and bool(torch.isfinite(x).all())
    counted = _book(torch.Generator().manual_seed(0), 400, counting=1.0)
    quail = counted["food"][..., 1]
    assert float(quail.max()) <= 5 and float(b["food"][..., 1].max()) > 20
    with torch.no_grad():
        assert WeightLSTM(4)(x, b["species"]).shape == (400,)


def test_the_faults_spread_the_hit_maps_their_own_ways() -> None:
    r = _rounds(torch.Generator().manual_seed(0), 500)
    assert r["hits"].shape == (500, 1, GRID, GRID) and bool((r["hits"].sum((1, 2, 3)) == ARROWS).all())
    assert len(r["fault"].unique()) == len(FAULTS)
    rows = r["hits"].sum(-1).squeeze(1)  # hits per row, top to bottom
    centre = torch.arange(GRID).float() - GRID / 2 + 0.5
    spread = (rows * centre**2).sum(1) / ARROWS
    assert float(spread[r["fault"] == 3].mean()) > 1.5 * float(spread[r["fault"] == 0].mean())
    x = _maps(r, "face_size_kept_as_channel")
    assert x.shape == (500, 2, GRID, GRID)
    with torch.no_grad():
        assert GroupCNN(1, 4)(_maps(r, None)).shape == (500, len(FAULTS))


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind61_mews_adamax_batch64"]) == 0
    assert "blind61_mews_adamax_batch64" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind61_W10_summed_loss_over_training_set_size"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
