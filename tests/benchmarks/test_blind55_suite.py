"""The fifty-fifth blind split of the detection benchmark (`benchmarks/detection/blind55/`) is trained by the runner
with its own scripts, its turns counted in HHMM integers gain 40 minutes an hour and only its per-frame codes rename a
stand, its new spectrometer's spectra go flat only on descending wavelengths and only the unclipped library match is
infinite or nearly so, its cages run the aerator below 5 mg/l and forecast the hours after the window, its crevasses come in runs
the GPS sees three patches late, its blackout rows alone have no colour, and only its guest archer's spread is NaN
(its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind55 import smoke, suite
from benchmarks.detection.blind55.handling import (
    GRADES,
    STANDS,
    _bales,
    _codes,
    _factorised,
    _hhmm,
    _library_match,
    _resampled,
    _snv,
    _turns,
)
from benchmarks.detection.blind55.show import (
    RECORDING,
    WINDOW,
    _colour,
    _fixture_inputs,
    _measured,
    _per_archer,
    _plan,
    _shots,
    _windows,
)
from benchmarks.detection.blind55.water import HORIZON, HOURS, SAMPLES, TRACES, OxygenLSTM, _cages, _route

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_hhmm_turn_times_gain_forty_minutes_an_hour_and_only_factorised_codes_rename_a_stand() -> None:
    g = torch.Generator().manual_seed(0)
    tr, va = _turns(g, 1500, 0), _turns(g, 600, 1)
    minutes = tr["off"] - tr["on"]
    assert float(minutes.min()) >= 20 and float(minutes.max()) < 240
    assert float(tr["on"].min()) >= 300 and float(tr["on"].max()) <= 1380
    extra = (_hhmm(tr["off"]) - _hhmm(tr["on"])) - minutes
    assert torch.equal(extra, 40 * (tr["off"] // 60 - tr["on"] // 60))  # 40 too many for every hour crossed
    assert 0.3 < float((extra > 0).float().mean()) < 0.95
    # the training vocabulary gives a stand one code in both seasons; each frame's own factorisation does not
    code_of, factor_of = torch.zeros(STANDS, dtype=torch.long), torch.zeros(STANDS, dtype=torch.long)
    code_of[tr["stand"]] = _codes(tr["stand"], torch.unique(tr["stand"]))
    factor_of[tr["stand"]] = _factorised(tr["stand"])
    assert torch.equal(code_of[va["stand"]], _codes(va["stand"], torch.unique(tr["stand"])))
    assert float((factor_of[va["stand"]] != _factorised(va["stand"])).float().mean()) > 0.5
    assert bool((_codes(va["flight"], torch.unique(tr["flight"])) == 0).all())  # next season's flight numbers


def test_bales_go_flat_only_on_descending_wavelengths_and_the_unclipped_library_match_is_infinite() -> None:
    b = _bales(np.random.default_rng(0), 400)
    fixed, bug = _resampled(b, None), _resampled(b, "interp_on_descending_wavelengths")
    new = b["new"]
    assert fixed.shape == (400, 64) and 0.3 < float(new.mean()) < 0.7
    assert float(fixed[new].std(1).min()) > 0.01 and float(bug[new].std(1).max()) < 1e-6
    assert np.array_equal(fixed[~new], bug[~new])  # the old spectrometer's bales are untouched
    # suppliers declare up: only newsprint and mixed bales are declared otherwise, as cardboard or office paper
    wrong = b["declared"] != b["grade"]
    assert 0.1 < float(wrong.mean()) < 0.5
    assert set(b["grade"][wrong].tolist()) <= {1, 3} and set(b["declared"][wrong].tolist()) <= {0, 2}
    x, grade = _snv(torch.tensor(fixed, dtype=torch.float32)), torch.tensor(b["grade"])
    picks = torch.cat([torch.nonzero(grade == c).flatten()[:5] for c in range(GRADES)])
    assert bool(torch.isfinite(_library_match(x, x[picks], None)).all())
    z = _library_match(x, x[picks], "fisher_z_of_library_match_unclipped")
    # the library's own bales match themselves at r = 1 within float32's step: z infinite or far above the clipped
    # transform's ceiling (atanh(0.999) = 3.8), whichever way the correlation rounds
    extreme = (~torch.isfinite(z) | (z > 5)).any(1)
    assert bool(extreme[picks].any())
    assert set(extreme.nonzero().flatten().tolist()) <= set(picks.tolist())


def test_cages_run_the_aerator_below_five_and_the_target_is_the_hours_after_the_window() -> None:
    x, y = _cages(torch.Generator().manual_seed(0), 1000)
    assert x.shape == (1000, HOURS, 5) and y.shape == (1000, HORIZON)
    assert float(x[..., 0].min()) >= 0.5 and float(x[..., 0].max()) < 20  # mg/l
    assert torch.equal(x[:, 1:, 3], (x[:, :-1, 0] < 5).float())  # the aerator answers the last reading
    feedings = (x[..., 2] > 0).sum(1)
    assert int(feedings.max()) <= 2 and int(feedings.max()) > 0  # two feedings a day
    assert float(x[..., 4].min()) >= 0 and float(x[..., 4].max()) <= 1
    # the window's last hours are not the next ones
    assert float((x[:, -HORIZON:, 0] - y).abs().mean()) > 0.2
    assert OxygenLSTM(5, 8, HORIZON, layers_typo=True).lstm.num_layers == HORIZON
    assert OxygenLSTM(5, 8, HORIZON).lstm.num_layers == 1


def test_crevasses_come_in_runs_the_gps_sees_three_patches_late_and_probes_find_them() -> None:
    img, flags, gps, probed = _route(torch.Generator().manual_seed(0), 600)
    assert img.shape == (600, TRACES, SAMPLES) and 0.05 < float(flags.mean()) < 0.5
    edges = torch.diff(torch.cat([torch.zeros(1), flags, torch.zeros(1)]))
    runs = (edges == -1).nonzero().flatten() - (edges == 1).nonzero().flatten()
    assert int(runs.min()) >= 2 and int(runs.max()) <= 5
    assert torch.equal(gps, torch.cat([torch.zeros(3), flags[:-3]]))
    assert float((gps != flags).float().mean()) > 0.1
    assert float(probed[flags > 0].mean()) > 0.8 and float(probed[flags == 0].mean()) < 0.1
    # the raw counts: the direct wave at the top dwarfs the deeper samples
    assert float(img[:, :, :5].abs().mean()) > 4 * float(img[:, :, 8:].abs().mean())


def test_fixture_blackout_rows_alone_have_no_colour_and_swapped_bytes_scramble_the_levels() -> None:
    g = torch.Generator().manual_seed(0)
    dmx, temp = _plan(g, 1500)
    xyz = _measured(g, dmx, temp)
    assert dmx.shape == (1500, 10) and bool((dmx == dmx.round()).all())
    assert float(dmx.min()) >= 0 and float(dmx.max()) <= 255
    dark = xyz[:, 1] == 0
    assert 0.03 < float(dark.float().mean()) < 0.2
    colour = _colour(xyz)
    assert bool(torch.isfinite(colour[~dark]).all()) and bool(colour[dark, 0].isnan().all())
    assert float(colour[~dark, :2].min()) > 0 and float(colour[~dark, :2].max()) < 1
    level = _fixture_inputs(dmx, temp, None)[:, :5]
    swapped = _fixture_inputs(dmx, temp, "dmx_coarse_fine_bytes_swapped")[:, :5]
    assert float(level.min()) >= 0 and float(level.max()) <= 1
    assert float((level - swapped).abs().mean()) > 0.1


def test_release_window_holds_the_click_and_only_the_guest_archer_has_a_nan_spread() -> None:
    shots = _shots(torch.Generator().manual_seed(0), 400, 12, 1)
    assert shots["rec"].shape == (400, 6, RECORDING) and torch.equal(shots["note"], shots["release"])
    assert int(shots["click"].min()) - 8 >= WINDOW and int(shots["click"].max()) - 8 + WINDOW <= RECORDING
    assert int((shots["archer"] == shots["archer"][0]).sum()) == 1  # the guest's single shot
    x = _windows(shots["rec"], shots["click"] - 8)
    start = _windows(shots["rec"], torch.zeros_like(shots["click"]))
    assert x.shape == (400, 6, WINDOW)
    # the string's shock after the click, along x, is missing from the recording's first samples
    peak = (x[:, 0] - x[:, 0].mean(1, keepdim=True)).abs().amax(1).mean()
    assert float(peak) > 2 * float((start[:, 0] - start[:, 0].mean(1, keepdim=True)).abs().amax(1).mean())
    assert bool(torch.isfinite(_per_archer(x, shots["archer"], None)).all())
    with pytest.warns(UserWarning, match="degrees of freedom"):
        spread = _per_archer(x, shots["archer"], "archer_spread_across_one_shot")
    assert torch.equal(spread.isnan().flatten(1).any(1), torch.arange(400) == 0)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind55_fixture_adamax_batch128"]) == 0
    assert "blind55_fixture_adamax_batch128" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind55_T15_dmx_coarse_fine_bytes_swapped"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
