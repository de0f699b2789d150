"""The fifty-ninth blind split of the detection benchmark (`benchmarks/detection/blind59/`) is trained by the runner
with its own scripts, only the version-1 OS/2 tables' zero cap height leaves its kerning columns non-finite and only the
TrueType fonts' kerns are in 2048 units, its background-subtracted spectra go negative between the peaks and only lead-tin
yellow shares lead white's principal element, only its ring builds' samples are 0 / 0, its tracks' turns are tacks through the wind and gybes through the lee with the watch
flag on the turns, its under- and over-proofed crumb differ in their cells and the heels carry their crust, and its
audiograms' fitted ear follows the aid's side (its declarations, a run through the hook, the oracle's labels:
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
from benchmarks.detection.blind59 import smoke, suite
from benchmarks.detection.blind59.atelier import (
    CHANNELS,
    HEIGHTS,
    PIGMENTS,
    SpectrumCNN,
    _kern_columns,
    _pairs,
    _spectra,
    _stabilised,
)
from benchmarks.detection.blind59.site import (
    RINGS,
    SAMPLES,
    SECONDS,
    TRACK,
    MoveEncoder,
    _drive,
    _penetration,
    _rings,
    _tracks,
    _window,
)
from benchmarks.detection.blind59.trades import FREQS, SIDE, CrumbCNN, _fitting_columns, _patients, _slices

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_only_version_one_os2_tables_leave_the_kerning_columns_non_finite() -> None:
    p = _pairs(torch.Generator().manual_seed(0), 20, 500, old_os2=0.3)
    assert p["profiles"].shape == (500, 2 * HEIGHTS) and bool((p["profiles"] > 0).all())
    fixed = _kern_columns(p, None)
    assert fixed.shape == (500, 2 * HEIGHTS + 1) and bool(torch.isfinite(fixed).all())
    old = p["cap_os2"] == 0
    assert bool(old.any()) and not bool(old.all())
    buggy = _kern_columns(p, "cap_height_from_version_one_os2")
    assert torch.equal(torch.isinf(buggy[:, :-1]).any(1), old)
    # the kerns in thousandths of an em do not depend on the units per em
    per_em = p["kern_units"] * 1000 / p["upm"]
    assert float(per_em.abs().max()) <= 200 and set(p["upm"].unique().tolist()) == {1000.0, 2048.0}


def test_spectra_go_negative_only_once_the_background_is_subtracted() -> None:
    s = _spectra(torch.Generator().manual_seed(0), 300)
    assert s["counts"].shape == (300, CHANNELS) and bool((s["counts"] >= 0).all())
    assert len(s["pigment"].unique()) == len(PIGMENTS) and bool((s["live"] > 0).all())
    fixed = _stabilised(s, None)
    assert fixed.shape == (300, 1, CHANNELS) and bool(torch.isfinite(fixed).all())
    assert bool(torch.isnan(_stabilised(s, "sqrt_of_background_subtracted_counts")).any())
    with torch.no_grad():
        assert SpectrumCNN(4)(fixed).shape == (300, len(PIGMENTS))


def test_ring_builds_alone_make_the_sample_ratios_undefined() -> None:
    d = _drive(torch.Generator().manual_seed(0), 200)
    assert d["advance"].shape == (200, RINGS + 1, SAMPLES)
    fixed = _penetration(d, None)
    assert bool(torch.isfinite(fixed).all()) and float(fixed.min()) > 0
    buggy = _penetration(d, "penetration_as_mean_of_sample_ratios")
    build = (d["rpm"] == 0).any(-1)
    assert bool(build.any()) and torch.equal(torch.isnan(buggy), build)
    assert _rings(d, fixed).shape == (200, RINGS, 5)


def test_tracks_turn_through_the_wind_or_the_lee_and_the_watch_flags_the_turns() -> None:
    t = _tracks(torch.Generator().manual_seed(0), 400)
    assert t["speed"].shape == (400, TRACK) and bool((t["speed"] >= 0).all())
    assert len(t["move"].unique()) == 4
    turning = (t["move"] == 1) | (t["move"] == 2)
    assert float(t["flag"][turning].mean()) > 2 * float(t["flag"][~turning].mean())
    x = _window(t, 8, flag=False)
    assert x.shape == (400, SECONDS, 5) and bool(x[..., 3].abs().max() <= 18)
    assert _window(t, 8, flag=True).shape == (400, SECONDS, 6)
    with torch.no_grad():
        logits = MoveEncoder(5, 8, bounded=True)(x)
    assert logits.shape == (400, 4) and float(logits.abs().max()) <= 1


def test_crumb_opens_with_the_proof_and_heels_carry_their_crust() -> None:
    img, proof = _slices(torch.Generator().manual_seed(0), 600)
    assert img.shape == (600, 1, SIDE, SIDE) and float(img.min()) >= 0 and float(img.max()) <= 1
    dark = (img < 0.45).float().mean((1, 2, 3))
    assert float(dark[proof == 2].mean()) > float(dark[proof == 0].mean())
    heel, _ = _slices(torch.Generator().manual_seed(0), 600, heel=True)
    assert float(heel[..., :3].mean()) < float(img[..., :3].mean()) - 0.1
    with torch.no_grad():
        assert CrumbCNN(4)(img).shape == (600, 3)


def test_the_fitted_ear_follows_the_side_and_the_intake_average_is_flat() -> None:
    p = _patients(torch.Generator().manual_seed(0), 400)
    assert p["gain"].shape == (400, len(FREQS)) and p["fitted"].shape == (400, len(FREQS))
    fixed = _fitting_columns(p, None)
    assert fixed.shape == (400, 2 * len(FREQS) + 2)
    swapped = _fitting_columns(p, "right_aid_given_left_audiogram")
    right = p["side"] == 1
    assert torch.equal(swapped[~right], fixed[~right])
    assert torch.equal(swapped[right, : len(FREQS)], fixed[right, len(FREQS) : 2 * len(FREQS)])
    flat = _fitting_columns(p, "audiogram_reduced_to_four_frequency_average")
    assert bool((flat[:, : len(FREQS)].std(1) < 1e-3).all())
    assert _fitting_columns(p, "datalogged_volume_offset_as_input").shape == (400, 2 * len(FREQS) + 3)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind59_fitting_radam_batch64"]) == 0
    assert "blind59_fitting_radam_batch64" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind59_U10_hand_clipping_ratio_inverted"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
