"""The twenty-fourth blind split of the detection benchmark (`benchmarks/detection/blind24/`) is trained by the runner
with its own scripts, its nights hold flat epochs in volts, its EMG windows' waveform length runs to thousands, its
road frames are grey bytes, its idling segments cover no distance, only its caught training spam carries the gateway's
tag, and its newer API calls appear in held-out traces alone (its declarations, a run through the hook, the oracle's
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
from benchmarks.detection.blind24 import smoke, suite
from benchmarks.detection.blind24.driving import H, W, _frames, _segments
from benchmarks.detection.blind24.messages import APIS, NEWER, TAG, WORDS, _messages, _traces
from benchmarks.detection.blind24.signals import (
    CHANNELS,
    SAMPLES,
    STAGES,
    _features,
    _night,
    _patterns,
    _windows,
)

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_nights_are_in_volts_with_some_flat_epochs() -> None:
    eeg, stages = _night(torch.Generator().manual_seed(0), 400)
    assert eeg.shape == (400, SAMPLES) and int(stages.min()) >= 0 and int(stages.max()) < STAGES
    flat = eeg.abs().amax(1) == 0
    assert 0 < int(flat.sum()) < 40  # an electrode off now and then
    assert 1e-6 < float(eeg[~flat].std()) < 1e-4  # volts, as the reader returns them


def test_emg_waveform_length_runs_to_thousands_before_any_scaling() -> None:
    g = torch.Generator().manual_seed(0)
    emg, y = _windows(g, _patterns(g), 2, 50)
    assert emg.shape == (100, CHANNELS, 150) and int(y.max()) < 6
    features, wl = _features(emg)
    assert features.shape == (100, 3 * CHANNELS) and torch.isfinite(features).all()
    assert float(wl.median()) > 500


def test_road_frames_are_grey_bytes_and_angles_stay_within_half_a_radian() -> None:
    frames, angle = _frames(torch.Generator().manual_seed(0), 50, dusk=0.5)
    assert frames.dtype == torch.uint8 and frames.shape == (50, 1, H, W)
    assert float(angle.abs().max()) < 0.7


def test_idling_segments_cover_no_distance_but_burn_fuel() -> None:
    fields, distance, fuel = _segments(torch.Generator().manual_seed(0), 500)
    idle = fields[:, 0] == 0
    assert idle.any() and bool((distance[idle] == 0).all()) and bool((fuel[idle] > 0).all())
    assert bool((fields[~idle, 3] <= 100).all())  # the throttle in percent


def test_only_tagged_training_spam_carries_the_gateway_tag() -> None:
    raw, y = _messages(torch.Generator().manual_seed(0), 500, tagged=True)
    tagged = raw[:, 0] == TAG
    assert tagged.any() and float(y[tagged].mean()) > 0.8  # a few spam labels are flipped
    clean, _ = _messages(torch.Generator().manual_seed(0), 500)
    assert not (clean == TAG).any() and bool((clean[:, 1:] > WORDS).any())  # capitalised words


def test_newer_api_calls_appear_in_held_out_traces_only() -> None:
    old, _ = _traces(torch.Generator().manual_seed(0), 200, newer=False)
    new, _ = _traces(torch.Generator().manual_seed(0), 200, newer=True)
    assert int(old.max()) < APIS - NEWER and int(new.max()) >= APIS - NEWER


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "spam_bag_adam"]) == 0
    assert "blind24_spam_bag_adam" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind24_X19_first_calls_kept"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
