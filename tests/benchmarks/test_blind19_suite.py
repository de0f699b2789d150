"""The nineteenth blind split of the detection benchmark (`benchmarks/detection/blind19/`) is trained by the runner
with its own scripts, its sentences carry their emotion's cue words, its intent batches hand the bag each utterance
whole, its one-packet flows have no duration, its wafer maps hold only three levels, and its plates show each character
dark on a light plate (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind19 import smoke, suite
from benchmarks.detection.blind19.inspections import SIDE, _font, _maps, _plates
from benchmarks.detection.blind19.records import _flows, _logs
from benchmarks.detection.blind19.texts import CUES, EMOTIONS, _batch, _sentences, _utterances

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_most_sentences_carry_cue_words_of_their_emotion() -> None:
    x, y = _sentences(torch.Generator().manual_seed(0), 200)
    cue_of = torch.full((x.max() + 1,), -1)
    cue_of[1 : 1 + EMOTIONS * CUES] = torch.arange(EMOTIONS).repeat_interleave(CUES)
    carries = [(cue_of[row] == label).sum() >= 2 for row, label in zip(x, y, strict=True)]
    assert sum(bool(c) for c in carries) >= 0.85 * len(carries)  # a tenth of the labels are flipped


def test_intent_batches_hand_the_bag_each_utterance_whole_unless_trimmed() -> None:
    words, lengths, _ = _utterances(torch.Generator().manual_seed(0), 20)
    starts = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    pick = torch.tensor([3, 0, 7])
    flat, offsets = _batch(words, lengths, starts, pick)
    assert len(flat) == int(lengths[pick].sum())
    assert flat[int(offsets[1]) : int(offsets[2])].tolist() == words[: int(lengths[0])].tolist()
    trimmed, _ = _batch(words, lengths, starts, pick, trim=True)
    assert len(trimmed) == 3 * int(lengths[pick].min())


def test_churn_logs_are_padded_with_zeros_after_their_end() -> None:
    types, gaps, amounts, lengths, churn = _logs(torch.Generator().manual_seed(0), 50)
    after = torch.arange(types.shape[1]).unsqueeze(0) >= lengths.unsqueeze(1)
    assert not types[after].any() and not gaps[after].any() and not amounts[after].any()
    assert set(churn.unique().tolist()) == {0.0, 1.0}


def test_one_packet_flows_have_no_duration() -> None:
    num, _, attack = _flows(torch.Generator().manual_seed(0), 500)
    duration, packets, land = num[:, 0], num[:, 3], num[:, 4]
    assert bool((duration[packets == 1] == 0).all()) and bool((duration[packets > 1] > 0).all())
    assert not land.any()
    assert 0.05 < float(attack.mean()) < 0.5


def test_wafer_maps_hold_three_levels_and_nothing_off_the_wafer() -> None:
    maps, y = _maps(torch.Generator().manual_seed(0), 40)
    assert maps.dtype == torch.uint8 and maps.shape == (40, 1, SIDE, SIDE)
    assert set(maps.unique().tolist()) <= {0, 128, 255}
    assert not maps[:, :, 0, 0].any()  # the corner is off the wafer
    assert int(y.min()) >= 0 and int(y.max()) < 6


def test_plates_show_their_characters_dark_on_a_light_plate() -> None:
    font = _font(torch.Generator().manual_seed(0))
    plates, chars = _plates(torch.Generator().manual_seed(1), 8, font)
    assert plates.dtype == torch.uint8 and chars.shape == (8, 6)
    assert (
        int(plates[:, :, 0, :].min()) >= 225
    )  # the plate's border row is light, noise added without wrapping
    for plate, row in zip(plates[:, 0].float(), chars, strict=True):
        for j, glyph in enumerate(row):
            ink = font[glyph] > 0  # the glyph's cells, at the jitter the plate was drawn with (0 or 1 pixel)
            windows = [
                plate[1 + dr : 11 + dr, 2 + 7 * j + dc : 8 + 7 * j + dc] for dr in (0, 1) for dc in (0, 1)
            ]
            assert any(float(w[ink].max()) < 100 and float(w[~ink].min()) > 200 for w in windows)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "intrusion_nesterov_hidden64"]) == 0
    assert "blind19_intrusion_nesterov_hidden64" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind19_C12_port_fed_as_number"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
