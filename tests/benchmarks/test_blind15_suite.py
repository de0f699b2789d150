"""The fifteenth blind split of the detection benchmark (`benchmarks/detection/blind15/`) is trained by the runner
with its own scripts, its frame pairs move by their label, its change detector does not care which image comes
first, its melodies read back in one key, its concordance orders as it should, and its imputer sees the mask only when
built to (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

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
from benchmarks.detection.blind15 import smoke, suite
from benchmarks.detection.blind15.records import COLUMNS, Imputer, _concordance
from benchmarks.detection.blind15.sequences import LOW_PITCH, MAJOR, _events, _melodies, _wrap
from benchmarks.detection.blind15.vision import SiameseChange, _pairs

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_second_frame_is_the_first_moved_by_the_label() -> None:
    frames, flow = _pairs(torch.Generator().manual_seed(0), 16)
    shifts = [(dx, dy) for dx in range(-2, 3) for dy in range(-2, 3)]
    for i in range(16):
        first, second = frames[i, 0], frames[i, 1, 3:-3, 3:-3]
        errors = [
            float((torch.roll(first, (dy, dx), (0, 1))[3:-3, 3:-3] - second).abs().mean())
            for dx, dy in shifts
        ]
        best = torch.tensor(shifts[int(np.argmin(errors))], dtype=torch.float32)
        assert float((best - flow[i]).abs().max()) <= 0.75


def test_change_detector_is_symmetric_in_the_two_images() -> None:
    torch.manual_seed(0)
    model, pair = SiameseChange(4), torch.randn(2, 2, 16, 16)
    assert torch.allclose(model(pair), model(pair.flip(1)), atol=1e-6)


def test_angles_wrap_into_one_turn() -> None:
    angles = _wrap(torch.tensor([3.0, 3.3, -3.3, 7.0]))
    assert bool(((angles >= -math.pi) & (angles < math.pi)).all())
    assert float(angles[1]) == pytest.approx(3.3 - 2 * math.pi, abs=1e-6)


def test_melodies_read_back_as_a_walk_in_one_major_key() -> None:
    events, _ = _events(np.random.default_rng(1))
    assert len(events) == 48 and sum(e[2] == 0 for e in events) == 24  # a note-on and a note-off a note
    notes, keys = _melodies(np.random.default_rng(0), 5), np.random.default_rng(0)
    assert notes.shape == (5, 24)
    for row in notes:
        key = _events(keys)[1]
        assert {(int(p) + LOW_PITCH) % 12 for p in row} <= {(key + m) % 12 for m in MAJOR}
        assert int((row[1:] - row[:-1]).abs().max()) <= 7  # steps and small leaps along the scale


def test_concordance_is_one_for_the_same_order_and_zero_for_the_reverse() -> None:
    time = torch.tensor([1, 4, 2, 8])
    assert _concordance(time.float(), time) == 1.0
    assert _concordance(-time.float(), time) == 0.0


@pytest.mark.parametrize(("with_mask", "inputs"), [(True, 2 * COLUMNS), (False, COLUMNS)])
def test_imputer_reads_the_mask_only_when_built_with_it(with_mask: bool, inputs: int) -> None:
    model = Imputer(16, with_mask)
    assert model.net[0].in_features == inputs
    out = model(torch.randn(3, COLUMNS), torch.rand(3, COLUMNS) > 0.5)
    assert out.shape == (3, COLUMNS)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "world_model_pendulum_adam"]) == 0
    assert "blind15_world_model_pendulum_adam" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    truth = run._train_one(
        (replace(BY_NAME["blind15_G17_inputs_never_corrupted"], steps=3), 1, str(tmp_path))
    )
    assert truth.program == "blind15_G17_inputs_never_corrupted" and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
