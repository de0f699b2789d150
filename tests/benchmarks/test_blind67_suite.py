"""The sixty-seventh blind split of the detection benchmark (`benchmarks/detection/blind67/`) is trained by the runner
with its own scripts, only the items not issued all week leave a pocket without days of cover and only the live
cabinets lack their overrides, only the CO2's dropout days read 0 and filling them keeps the rest, only a return
traverse carries the heavy edge at the far end, the touch-dry hours come before the rub-out ones, only the
articulated buses lose energy to the standard pack, and only the study plots have no shear (its declarations, a run
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
from benchmarks.detection.blind67 import smoke, suite
from benchmarks.detection.blind67.lofts import (
    POSITIONS,
    RESINS,
    LaminateAE,
    VarnishMLP,
    _coats,
    _oriented,
    _scans,
)
from benchmarks.detection.blind67.stores import (
    CHANNELS,
    CLASSES,
    CO2,
    COVER,
    DAYS,
    ISSUES,
    ON_HAND,
    PAR,
    WARDS,
    CabinetMLP,
    FlushCNN,
    _channels,
    _crops,
    _filled,
    _pockets,
    _report,
)
from benchmarks.detection.blind67.yards import (
    FIELDS,
    LAYERS,
    PACK_KWH,
    RECORDS,
    RESULTS,
    DepotLSTM,
    ProfileAttention,
    _duties,
    _inputs,
    _profiles,
)

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_only_undispensed_items_lose_their_cover_and_only_live_cabinets_their_overrides() -> None:
    g = torch.Generator().manual_seed(0)
    p = _pockets(g, 800)
    assert p["numeric"].shape == (800, 7) and 0 < float(p["stockout"].mean()) < 1
    assert len(p["ward"].unique()) == len(WARDS) and len(p["klass"].unique()) == len(CLASSES)
    fixed = _report(p, None)
    assert fixed.shape == (800, 8) and bool(torch.isfinite(fixed).all())
    buggy = _report(p, "days_of_cover_over_undispensed_items")
    idle = p["numeric"][:, ISSUES] == 0
    assert bool(idle.any()) and torch.equal(~torch.isfinite(buggy[:, COVER]), idle)
    # the overrides come with the stock-outs, and the live cabinets have none yet
    kept = _report(p, "overrides_in_the_interval_kept")
    assert kept.shape == (800, 9) and torch.equal(kept[:, -1] > 0, p["stockout"] > 0)
    assert bool((_pockets(g, 100, live=True)["overrides"] == 0).all())
    report = _report(p, "on_hand_from_the_restock_report")
    assert torch.equal(report[:, ON_HAND], p["numeric"][:, PAR])
    assert bool((p["numeric"][:, ON_HAND] <= p["numeric"][:, PAR]).all())
    with torch.no_grad():
        assert CabinetMLP(8, 8)(fixed, p["ward"], p["klass"]).shape == (800,)


def test_only_the_dropout_days_read_zero_and_filling_keeps_the_rest() -> None:
    c = _crops(torch.Generator().manual_seed(0), 500, dropouts=0.3)
    assert c["days"].shape == (500, len(CHANNELS), DAYS) and float(c["yield"].min()) > 0
    co2 = c["days"][:, CO2]
    lost = co2 == 0
    assert bool(lost.any()) and float(co2[~lost].min()) > 300
    filled = _filled(co2)
    assert bool((filled > 0).all()) and torch.equal(filled[~lost], co2[~lost])
    fixed = _channels(c, None)
    assert bool(torch.isfinite(fixed).all())
    assert bool(torch.isinf(_channels(c, "log_co2_over_sensor_dropouts")).any())
    with torch.no_grad():
        assert FlushCNN(4)(fixed).shape == (500,)


def test_only_a_return_traverse_carries_the_heavy_edge_at_the_far_end() -> None:
    s = _scans(torch.Generator().manual_seed(0), 600, defects=0.3)
    assert s["scan"].shape == (600, POSITIONS) and 0 < float(s["bad"].float().mean()) < 1
    fixed, raw = _oriented(s, None), _oriented(s, "return_traverses_not_flipped")
    assert float((fixed[:, :2].mean(1) - fixed[:, -2:].mean(1)).mean()) > 3
    back = s["back"]
    assert (
        bool(back.any())
        and torch.equal(raw[~back], fixed[~back])
        and torch.equal(raw[back], fixed[back].flip(-1))
    )
    with torch.no_grad():
        assert LaminateAE(8)(fixed).shape == (600, POSITIONS)


def test_the_touch_dry_hours_come_before_the_rub_out_ones() -> None:
    c = _coats(torch.Generator().manual_seed(0), 500)
    assert c["x"].shape == (500, 7) and len(c["resin"].unique()) == len(RESINS)
    assert bool((c["touch"] < c["log_hours"]).all())
    assert float(c["dose"].max()) > 1e5 and float(c["dose"].min()) >= 0
    with torch.no_grad():
        assert VarnishMLP(7, 8)(c["x"], c["resin"]).shape == (500,)
        assert VarnishMLP(7, 8, 200)(c["x"], c["resin"], c["cook"]).shape == (500,)


def test_only_the_articulated_buses_lose_energy_to_the_standard_pack() -> None:
    d = _duties(torch.Generator().manual_seed(0), 400)
    assert d["records"].shape == (400, RECORDS, len(FIELDS)) and float(d["kwh"].min()) > 0
    artic = d["records"][:, 0, -1] > 0
    assert bool(artic.any()) and not bool(artic.all())
    standard = (1 - d["soc"]) * PACK_KWH[0]
    assert torch.allclose(standard[~artic], d["kwh"][~artic], rtol=1e-4)
    assert bool((standard[artic] < d["kwh"][artic]).all())
    with torch.no_grad():
        assert DepotLSTM(len(FIELDS), 4)(d["records"]).shape == (400,)


def test_only_the_study_plots_have_no_shear() -> None:
    p = _profiles(torch.Generator().manual_seed(0), 500, flat=0.3)
    assert p["layers"].shape == (500, LAYERS, 6) and len(p["result"].unique()) == len(RESULTS)
    fixed = _inputs(p, None)
    assert fixed.shape == (500, LAYERS, 7) and bool(torch.isfinite(fixed).all())
    buggy = _inputs(p, "stability_index_over_study_plot_shear")
    flat = p["angle"] == 0
    assert bool(flat.any()) and torch.equal(~torch.isfinite(buggy[:, 0, -1]), flat)
    with torch.no_grad():
        assert ProfileAttention(7, 4)(fixed, p["grain"]).shape == (500, len(RESULTS))


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind67_varnish_radam_batch64"]) == 0
    assert "blind67_varnish_radam_batch64" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind67_K14_energy_from_soc_with_the_standard_pack"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
