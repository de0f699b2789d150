"""The twenty-second blind split of the detection benchmark (`benchmarks/detection/blind22/`) is trained by the runner
with its own scripts, its faulty bearings ring with impulses, its cells report temperature in kelvin and charge
time in seconds, its e-nose baselines hold the odd zero reading that only the median survives, its gapped traces
start with zeros that only a floored LTA survives, its halted days are priced 0 in the file, and its eyes' pupils follow
the yaw (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind22 import smoke, suite
from benchmarks.detection.blind22.estimates import _eyes, _log_returns, _prices
from benchmarks.detection.blind22.machines import FAULT_PERIODS, FEATURES, _cells, _recordings
from benchmarks.detection.blind22.sensing import _array, _exposures, _sta_lta, _traces

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_faulty_bearings_ring_with_impulses_healthy_ones_lack() -> None:
    x, y = _recordings(torch.Generator().manual_seed(0), 400)
    centred = x - x.mean(1, keepdim=True)
    kurtosis = (centred**4).mean(1) / (centred**2).mean(1) ** 2
    healthy = float(kurtosis[y == 0].mean())
    assert len(FAULT_PERIODS) == 4 and FAULT_PERIODS[0] == 0
    for cls in range(1, len(FAULT_PERIODS)):
        assert float(kurtosis[y == cls].mean()) > healthy + 0.3


def test_cells_report_kelvin_and_seconds_and_live_hundreds_of_cycles() -> None:
    f, life = _cells(torch.Generator().manual_seed(0), 300)
    temp, charge = f[:, FEATURES.index("temp_k")], f[:, FEATURES.index("charge_s")]
    assert 290 < float(temp.min()) and float(temp.max()) < 320
    assert float(charge.min()) > 500
    assert 20 < float(life.min()) and float(life.max()) < 5000
    assert 600 < float(life.median()) < 1500


def test_enose_baselines_hold_zero_readings_that_the_median_survives() -> None:
    g = torch.Generator().manual_seed(0)
    baseline, steady, hours, y = _exposures(g, 400, _array(g), confounded=True)
    assert bool((baseline[:, 0] == 0).any()) and not bool((baseline[:, 1:] == 0).any())
    assert bool((baseline.median(1).values > 0).all()) and bool((steady > 0).all())
    assert torch.equal((hours // 24).long(), y % 6)  # each gas recorded in its own session


def test_gapped_traces_start_with_zeros_that_only_a_floored_lta_survives() -> None:
    x, p = _traces(torch.Generator().manual_seed(0), 60)
    gapped = x[:, 0] == 0
    assert bool(gapped.any()) and bool((p >= 48).all())
    assert bool(torch.isfinite(_sta_lta(x, floor=True)).all())
    assert not bool(torch.isfinite(_sta_lta(x[gapped], floor=False)).all())


def test_halted_days_are_priced_zero_and_filled_by_the_last_close() -> None:
    prices, var = _prices(torch.Generator().manual_seed(0), 20)
    assert bool((prices == 0).any()) and bool((var > 0).all())
    assert bool(torch.isfinite(_log_returns(prices, None)).all())
    assert not bool(torch.isfinite(_log_returns(prices, "halted_days_priced_zero")).all())


def test_the_pupil_follows_the_yaw() -> None:
    img, angles = _eyes(torch.Generator().manual_seed(0), 200, lit_alike=True)
    assert float(img.min()) >= 0 and float(img.max()) <= 1
    darkest_col = img[:, 0].amin(1).argmin(-1).float()
    assert float(torch.corrcoef(torch.stack([darkest_col, angles[:, 0]]))[0, 1]) > 0.8


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind22_enose_momentum_hidden32"]) == 0
    assert "blind22_enose_momentum_hidden32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind22_M17_target_return_inside_window"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
