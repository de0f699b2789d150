"""The fifty-seventh blind split of the detection benchmark (`benchmarks/detection/blind57/`) is trained by the runner
with its own scripts, its flashover windows carry repeated whole-second timestamps and only the ambient of the first
sample leaves the room's level, only its undetected assays log to -inf and the second lab's per cent assays shift the
log ratio, its cubic features are every product of up to three columns, its wind records' gust factor is 0 / 0 only
over a stalled anemometer and the gust target is the max, not the mean, of the half hour after the window, its masks
lie on their tiles' roofs the right way up and a softmax over one channel is 1 everywhere, its formulas list their
materials in code order with the padding last, and its joint sheets' quarters and minutes differ from the mm and hours
they stand for (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind57 import smoke, suite
from benchmarks.detection.blind57.craft import MATERIALS, MAX_MATERIALS, FamilyEncoder, _formulas, _tests
from benchmarks.detection.blind57.mountain import (
    AHEAD,
    MINUTES,
    RECORDS,
    TILE,
    FootprintNet,
    _records,
    _target,
    _tiles,
    _winter,
)
from benchmarks.detection.blind57.rescue import (
    HEIGHTS,
    LOQ,
    SAMPLES,
    _burns,
    _cubic,
    _features,
    _log_ratio,
    _study,
)

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_flashover_windows_repeat_whole_second_stamps_and_only_their_rate_over_them_is_not_finite() -> None:
    b = _burns(torch.Generator().manual_seed(0), 400)
    assert b["temps"].shape == (400, HEIGHTS, SAMPLES) and 0.1 < float(b["label"].mean()) < 0.6
    assert bool((b["stamps"] == b["stamps"].floor()).all())
    steps = torch.diff(b["stamps"], dim=1)
    assert bool((steps == 0).any()) and float(steps.mean()) == pytest.approx(2.0, abs=0.1)
    # the ceiling runs hotter than the floor late in a window
    assert float((b["temps"][:, -1, -1] - b["temps"][:, 0, -1]).mean()) > 20
    fixed = _features(b, None)
    assert fixed.shape == (400, 2 * HEIGHTS, SAMPLES - 1) and bool(torch.isfinite(fixed).all())
    assert not bool(torch.isfinite(_features(b, "rate_over_logged_timestamps")).all())
    late = _features(b, "ambient_from_last_sample")
    assert torch.equal(late[:, HEIGHTS:], fixed[:, HEIGHTS:])  # the rates of rise are untouched
    assert float((late[:, :HEIGHTS] - fixed[:, :HEIGHTS]).abs().mean()) > 0.01


def test_only_undetected_assays_log_to_minus_infinity_and_per_cent_assays_shift_the_ratio() -> None:
    s = _study(torch.Generator().manual_seed(0), 600)
    assert s["x"].shape == (600, 6) and 0.3 < float(s["lab"].float().mean()) < 0.7
    fixed = _log_ratio(s, None)
    assert bool(torch.isfinite(fixed).all()) and float(fixed.max()) < 0.2
    undetected = s["left"] < LOQ
    assert bool(undetected.any())
    logged = _log_ratio(s, "log_ratio_of_undetected_assay")
    assert torch.equal(torch.isinf(logged), undetected)
    shifted = _log_ratio(s, "percent_label_claim_over_mg_per_ml")
    lab = s["lab"] == 1
    assert torch.allclose(shifted[~lab], fixed[~lab])
    assert torch.allclose(shifted[lab] - fixed[lab], torch.log(100 / s["conc"][lab]), atol=1e-4)
    assert _cubic(s["x"]).shape == (600, 6 + 21 + 56)


def test_wind_records_divide_by_zero_only_when_calm_and_the_target_is_the_max_gust_ahead() -> None:
    m, speed, gust = _winter(torch.Generator().manual_seed(0), 300)
    assert m.shape == (300, (RECORDS + AHEAD) * MINUTES, 4) and bool((gust >= speed).all())
    fixed = _records(m, None)
    assert fixed.shape == (300, RECORDS, 6) and bool(torch.isfinite(fixed).all())
    calm = m[:, : RECORDS * MINUTES, 0].reshape(300, RECORDS, MINUTES).mean(-1) == 0
    assert bool(calm.any())
    buggy = _records(m, "gust_factor_over_calm_speed")
    assert torch.equal(buggy[..., 4].isnan(), calm)
    assert bool((_target(m, None) >= _target(m, "gust_resampled_with_mean")).all())
    assert bool((_target(m, None) >= _target(m, "target_read_from_speed_column")).all())


def test_masks_sit_on_the_roofs_and_a_softmax_over_one_channel_is_one() -> None:
    img, mask = _tiles(torch.Generator().manual_seed(0), 200)
    assert img.shape == (200, 3, TILE, TILE) and 0.05 < float(mask.mean()) < 0.4
    # roofs are redder or greyer than the ground around them: the red band is brighter on the building pixels
    assert float(img[:, 0][mask > 0].mean()) > float(img[:, 0][mask == 0].mean()) + 0.1
    assert float((mask != mask.flip(1)).float().mean()) > 0.05
    out = FootprintNet(4, softmax_head=True)(img)
    assert torch.equal(out, torch.ones_like(out))


def test_formulas_list_materials_in_code_order_padding_last() -> None:
    f = _formulas(torch.Generator().manual_seed(0), 300)
    ids, share = f["ids"], f["share"]
    assert ids.shape == (300, MAX_MATERIALS) and int(ids.max()) <= MATERIALS
    present = ids > 0
    assert int(present.sum(1).min()) >= 4
    assert torch.allclose(share.sum(1), torch.ones(300)) and bool((share[~present] == 0).all())
    key = torch.where(present, ids, torch.full_like(ids, MATERIALS + 1))
    assert bool((torch.diff(key, dim=1) >= 0).all())
    assert len(f["family"].unique()) == 5
    logits = FamilyEncoder(8, positions=True)(ids, share)
    assert logits.shape == (300, 5) and bool(torch.isfinite(logits).all())


def test_joint_sheets_load_rises_with_area_and_quarters_are_not_millimetres() -> None:
    t = _tests(torch.Generator().manual_seed(0), 800, new_sheet=0.5)
    assert t["x"].shape == (800, 8) and bool((t["load"] > 0).all())
    big = t["x"][:, 4] > 50
    assert float(t["load"][big].mean()) > float(t["load"][~big].mean())
    assert 0.3 < float(t["new"].float().mean()) < 0.7 and 0.1 < float(t["hard"].mean()) < 0.9
    quarters = (t["x"][:, 2] / 25.4 * 4).round()
    assert float(quarters.max()) <= 9 and float(t["x"][:, 2].min()) >= 16


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind57_joints_radam_batch32"]) == 0
    assert "blind57_joints_radam_batch32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind57_Y13_mask_rasterised_bottom_up"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
