"""The sixty-sixth blind split of the detection benchmark (`benchmarks/detection/blind66/`) is trained by the runner
with its own scripts, only the blocks killed outright leave no live blossom and only the early crew misses the kill,
only the new cabinets' logs lose their second half hour, the stream parts the speed over the ground from the speed
through the water and the tide parts the water's depth from the chart's, only the wind-off records divide by a zero
pressure, only the new instrument's lots carry the gloss or the reversed difference, and only the frames where the
tracker lost a hand divide by a zero size (its declarations, a run through the hook, the oracle's labels:
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
from benchmarks.detection.blind66 import smoke, suite
from benchmarks.detection.blind66.climates import (
    BUDS,
    CHANNELS,
    HOURS,
    SAMPLES,
    STAGES,
    BloomGRU,
    CabinetAutoencoder,
    _cycles,
    _export,
    _nights,
)
from benchmarks.detection.blind66.flows import (
    PREVIOUS_PORTS,
    SPEED,
    STATES,
    TAPS,
    WATER,
    SquatMLP,
    TapEncoder,
    _legs,
    _polars,
    _tokens,
    _transits,
)
from benchmarks.detection.blind66.optics import (
    BANDS,
    CALLS,
    FRAMES,
    SIGNS,
    ShadeCNN,
    SignLSTM,
    _clips,
    _curves,
    _features,
    _lots,
    _mirror,
)

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_only_the_blocks_killed_outright_leave_no_live_blossom() -> None:
    s = _nights(torch.Generator().manual_seed(0), 600, early_crew=0.5)
    assert s["records"].shape == (600, HOURS, 7) and bool(torch.isfinite(s["records"]).all())
    assert len(s["stage"].unique()) == len(STAGES)
    outright = s["killed"] == BUDS
    assert bool(outright.any()) and not bool(outright.all())
    live = s["killed"] / (BUDS - s["killed"])
    assert torch.equal(~torch.isfinite(live), outright)
    # the morning-after count finds part of the kill, never more
    assert bool((s["early"] <= s["killed"]).all()) and float(s["early"].sum()) < float(s["killed"].sum())
    assert 0 < float(s["crew"].mean()) < 1
    with torch.no_grad():
        assert BloomGRU(7, 4)(s["records"], s["stage"]).shape == (600,)


def test_only_the_new_cabinets_logs_lose_their_second_half_hour() -> None:
    c = _cycles(torch.Generator().manual_seed(0), 400, new_cabinets=0.5, faulty=0.3)
    assert c["fine"].shape == (400, len(CHANNELS), 2 * SAMPLES) and bool((c["fault"] >= 0).any())
    assert bool((_cycles(torch.Generator().manual_seed(1), 100)["fault"] < 0).all())
    fixed, cut = _export(c, None), _export(c, "new_cabinet_logs_cut_by_sample_count")
    assert fixed.shape == cut.shape == (400, len(CHANNELS) * SAMPLES + 2)
    changed = (fixed != cut).any(1)
    assert torch.equal(changed, c["new"] > 0)
    model = CabinetAutoencoder(fixed.shape[1], 16, fixed_mask=True)
    with torch.no_grad():
        # the mask drawn once: the same units off in two training passes
        assert torch.equal(model(fixed[:8]), model(fixed[:8]))
        assert CabinetAutoencoder(fixed.shape[1], 16)(fixed).shape == fixed.shape


def test_the_stream_and_the_tide_part_what_the_pilots_log_from_what_the_ship_sees() -> None:
    t = _transits(torch.Generator().manual_seed(0), 500)
    fixed = _legs(t, None)
    assert fixed.shape == (500, 7) and bool(torch.isfinite(fixed).all())
    sog = _legs(t, "speed_over_ground_for_squat")
    assert torch.allclose(sog[:, SPEED] - fixed[:, SPEED], t["stream"], atol=1e-3)
    chart = _legs(t, "charted_depth_without_height_of_tide")
    assert bool((chart[:, WATER] <= fixed[:, WATER]).all()) and float((fixed - chart)[:, WATER].max()) > 3
    kept, planned = _legs(t, "ppu_stern_sinkage_kept"), _legs(t, "ppu_stern_sinkage_kept", planning=True)
    assert kept.shape == (500, 8) and bool((planned[:, -1] == 0).all())
    assert float(torch.corrcoef(torch.stack([kept[:, -1], t["squat"]]))[0, 1]) > 0.8
    with torch.no_grad():
        assert SquatMLP(7, 8)(fixed, t["reach"]).shape == (500,)


def test_only_the_wind_off_records_divide_by_a_zero_pressure() -> None:
    p = _polars(torch.Generator().manual_seed(0), 500, tare=0.1)
    assert p["pressure"].shape == (500, TAPS) and len(p["state"].unique()) == len(STATES)
    x = _tokens(p, None)
    assert x.shape == (500, TAPS, 3)
    off = p["q"] == 0
    assert bool(off.any()) and torch.equal(torch.isnan(x[..., 2]).any(1), off)
    on = ~off
    settled = _tokens(p, "settling_chamber_pitot_for_dynamic_pressure")
    assert torch.allclose(settled[on][..., 2], 36 * x[on][..., 2], rtol=1e-4, atol=1e-4)
    mapped = _tokens(p, "port_map_of_the_previous_model")
    assert torch.equal(mapped[on][..., 2], x[on][..., 2][:, PREVIOUS_PORTS])
    assert torch.equal(mapped[..., :2], x[..., :2])
    with torch.no_grad():
        assert TapEncoder(8)(x[on]).shape == (int(on.sum()), len(STATES))


def test_only_the_new_instruments_lots_carry_the_gloss_or_the_reversed_difference() -> None:
    s = _lots(torch.Generator().manual_seed(0), 600, new=0.4)
    assert s["standard"].shape == s["lot"].shape == (600, BANDS)
    assert len(s["call"].unique()) == len(CALLS)
    assert float(s["lot"].min()) > 0 and float(s["lot"].max()) <= 1
    fixed = _curves(s, None)
    new = s["new"] > 0
    glossy = _curves(s, "sci_lots_against_sce_standards")
    assert torch.equal(glossy[~new], fixed[~new]) and bool((glossy[new, 1] > fixed[new, 1]).all())
    swapped = _curves(s, "lot_and_standard_columns_swapped_in_new_export")
    assert torch.equal(swapped[~new], fixed[~new]) and torch.equal(swapped[new, 1], -fixed[new, 1])
    with torch.no_grad():
        assert ShadeCNN(4)(fixed).shape == (600, len(CALLS))


def test_only_the_frames_where_the_tracker_lost_a_hand_divide_by_a_zero_size() -> None:
    c = _clips(torch.Generator().manual_seed(0), 300, left_handed=0.4)
    assert c["points"].shape == (300, FRAMES, 2, 6, 2) and len(c["sign"].unique()) == len(SIGNS)
    fixed = _features(c, None)
    assert fixed.shape == (300, FRAMES, 2, 5, 2) and bool(torch.isfinite(fixed).all())
    lost = c["points"].abs().sum((-1, -2)) == 0
    unguarded = _features(c, "each_hand_scaled_by_its_own_size_unguarded")
    assert bool(lost.any()) and torch.equal(torch.isnan(unguarded).flatten(3).any(-1), lost)
    # mirroring swaps the hands' slots; the bug leaves them in place
    assert torch.equal(_mirror(fixed, None)[:, :, 0], fixed[:, :, 1] * torch.tensor([-1.0, 1.0]))
    assert torch.equal(
        _mirror(fixed, "mirrored_clips_keep_hand_slots")[:, :, 0], fixed[:, :, 0] * torch.tensor([-1.0, 1.0])
    )
    pixels = _features(c, "shoulder_width_in_pixels_over_normalised_hands")
    assert float(pixels[..., 0, :].abs().max()) < 0.01 < float(fixed[..., 0, :].abs().max())
    with torch.no_grad():
        assert SignLSTM(20, 8)(fixed.flatten(2)).shape == (300, len(SIGNS))


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind66_squat_adagrad_batch64"]) == 0
    assert "blind66_squat_adagrad_batch64" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind66_X10_charted_depth_without_height_of_tide"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
