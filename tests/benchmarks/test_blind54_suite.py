"""The fifty-fourth blind split of the detection benchmark (`benchmarks/detection/blind54/`) is trained by the runner
with its own scripts, its cells charge as well as discharge and count their charge in mAh, its frets buzz only on a
low action while the string swings wide and its hum is at 50 Hz, its cats' creatinine comes in umol/L and their stage
only rises, its queens pipe in the bins a 16 kHz recorder puts at 400-500 Hz, its rarest moulds make a single bottle,
and its black plate is the K separation's coverage (its declarations, a run through the hook, the oracle's labels:
`test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind54 import smoke, suite
from benchmarks.detection.blind54.bench import (
    DI_STD,
    NOMINAL_AH,
    PEUKERT_K,
    PREAMP_DB,
    RATE,
    RATED_A,
    SAMPLES,
    WINDOW,
    _cells,
    _notes,
    _without_hum,
)
from benchmarks.detection.blind54.care import (
    BINS,
    CLINIC_TABLE,
    HOURS,
    MIC_RATE,
    UMOL_PER_MG_DL,
    _cats,
    _hives,
    _piping,
)
from benchmarks.detection.blind54.works import KEY_MM, MOULDS, PIXELS, ZONES, _bottles, _jobs

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_cells_charge_and_discharge_and_only_the_signed_peukert_power_is_nan() -> None:
    x, start, mah, capacity, _, bms = _cells(torch.Generator().manual_seed(0), 600)
    assert x.shape == (600, SAMPLES, 3)
    assert bool((capacity >= 2.2).all()) and bool((capacity < NOMINAL_AH).all())  # aged cells hold less
    current = x[:, :, 1]
    assert 0.1 < float((current < 0).float().mean()) < 0.9  # charging (negative) and discharging windows
    assert bool(torch.isfinite((current.abs() / RATED_A) ** (PEUKERT_K - 1)).all())
    # the signed current's fractional power: NaN on the charging samples, and only there
    assert torch.equal(((current / RATED_A) ** (PEUKERT_K - 1)).isnan(), current < 0)
    soc = start - mah / 1000 / capacity
    assert float(soc.min()) >= 0 and float(soc.max()) <= 1
    assert float((start - mah / capacity).abs().max()) > 10  # the mAh column over Ah: far outside a fraction
    # the BMS counts against the nominal 3.4 Ah: it overstates an aged cell's state of charge
    assert bool((bms >= soc - 1e-3).all()) and float((bms - soc).mean()) > 0.03


def test_frets_buzz_only_on_a_low_action_and_the_gain_and_50_hz_hum_come_out() -> None:
    x, buzzing, note = _notes(torch.Generator().manual_seed(0), 600)
    assert x.shape == (600, WINDOW) and not bool((buzzing > note).any())
    assert float(((note == 1) & (buzzing == 0)).float().mean()) > 0.1  # a buzzing note's quiet sustain
    gain = 10 ** (PREAMP_DB / 20)
    fixed = float((_without_hum(x, 50.0) / gain / DI_STD).std())
    assert 0.1 < fixed < 10 and float((_without_hum(x, 50.0) * gain / DI_STD).std()) > 1000 * fixed
    hum = torch.sin(2 * torch.pi * 50 * torch.arange(WINDOW).float() / RATE + 0.3).unsqueeze(0)
    assert float(_without_hum(hum, 50.0).abs().max()) < 1e-3 and float(_without_hum(hum, 60.0).std()) > 0.2


def test_creatinine_comes_in_micromol_and_the_stage_only_rises() -> None:
    x, breed, stage, later, diet = _cats(torch.Generator().manual_seed(0), 1000)
    assert x.shape == (1000, len(CLINIC_TABLE)) and int(breed.max()) < 12
    mean = torch.tensor([m for m, _ in CLINIC_TABLE.values()])
    std = torch.tensor([s for _, s in CLINIC_TABLE.values()])
    converted = (torch.cat([x[:, :1] / UMOL_PER_MG_DL, x[:, 1:]], 1) - mean) / std
    assert float(converted.mean(0).abs().max()) < 1 and float(converted.abs().max()) < 6
    assert float(((x[:, 0] - mean[0]) / std[0]).median()) > 30  # umol/L under the mg/dL table
    assert set(stage.unique().tolist()) == {0, 1, 2, 3} and bool((later >= stage).all())
    assert float((later > stage).float().mean()) > 0.2
    # the renal diet is prescribed at staging: almost never to a stage-1 cat, to most of the others
    assert float(diet[stage == 0].mean()) < 0.1 and float(diet[stage >= 1].mean()) > 0.8


def test_queens_pipe_in_the_16_khz_bins_and_the_inspection_dates_fewer_swarms() -> None:
    x, energy, days, inspection = _hives(torch.Generator().manual_seed(0), 1000)
    assert x.shape == (1000, HOURS, 3) and energy.shape == (1000, HOURS, BINS)
    assert 0.2 < float(torch.isinf(days).float().mean()) < 0.8 and float(inspection.max()) < 14
    soon = days < 2
    found = days + inspection < 2  # the swarm dated by the inspection that found the colony gone
    assert 0.05 < float(soon.float().mean()) < 0.5
    assert float(found.float().mean()) < 0.5 * float(soon.float().mean())
    hum = energy.mean(-1, keepdim=True)
    own, old = _piping(energy, float(MIC_RATE)) - hum, _piping(energy, 44100.0) - hum
    assert float(own[soon].mean() - own[~soon].mean()) > 0.7  # the piping before a swarm
    assert float(old[soon].mean() - old[~soon].mean()) < 0.3  # the hum's bins, no piping


def test_the_rarest_moulds_make_one_bottle_and_amber_glass_is_darker() -> None:
    profiles, mould, bad, amber = _bottles(torch.Generator().manual_seed(0), 1500, defects=0.0)
    assert profiles.shape == (1500, PIXELS) and int(mould.max()) < MOULDS and float(bad.sum()) == 0
    counts = torch.bincount(mould, minlength=MOULDS)
    assert int((counts == 1).sum()) > 3 and int((counts >= 5).sum()) > 10
    once = int((counts == 1).nonzero()[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's "degrees of freedom is <= 0"
        assert bool(profiles[mould == once].std(0).isnan().all())  # torch.std of one bottle
    assert 0.2 < float(amber.float().mean()) < 0.6
    assert float(profiles[amber].mean()) < float(profiles[~amber].mean()) - 0.2
    _, _, bad, _ = _bottles(torch.Generator().manual_seed(0), 600, defects=0.3)
    assert 0.2 < float(bad.mean()) < 0.4


def test_the_black_plate_is_the_k_separations_coverage_and_the_keys_lie_16_to_764_mm() -> None:
    x, opening, verso, black = _jobs(torch.Generator().manual_seed(0), 500)
    assert x.shape == (500, ZONES, 9) and opening.shape == (500, ZONES)
    assert 0.2 < float(verso.float().mean()) < 0.8
    assert float(x[:, :, 0].min()) >= 0 and float(x[:, :, 0].max()) <= 1
    assert 10 < float(opening.mean()) < 60  # key openings in %
    k = x[:, 0, 1] == 1
    assert torch.equal(x[k, :, 0], black[k]) and float((x[~k, :, 0] - black[~k]).abs().mean()) > 0.1
    position = KEY_MM * torch.arange(ZONES).float() + KEY_MM / 2
    assert 16 < float(position.min()) < 17 and 763 < float(position.max()) < 765
    assert float(x.abs().max()) < 2  # the other features lie within a few units


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind54_kidney_adagrad_batch32"]) == 0
    assert "blind54_kidney_adagrad_batch32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind54_E11_stage_from_latest_visit"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
