"""The thirtieth blind split of the detection benchmark (`benchmarks/detection/blind30/`) is trained by the runner
with its own scripts, its engines run to failure, its windy nights price below zero, its promoters carry both boxes,
its light curves have a gap and their transits, its recipes draw on their cuisine's ingredients, and its recordings
are mostly normal (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind30 import smoke, suite
from benchmarks.detection.blind30.power import SENSORS, SETTINGS, _fleet, _market
from benchmarks.detection.blind30.records import (
    CUISINES,
    FEATURES,
    INGREDIENTS,
    STAPLES,
    _cuisine_weights,
    _recipes,
    _recordings,
)
from benchmarks.detection.blind30.sequences import BOXES, CADENCES, GAP, LENGTH, _curves, _sequences

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_engines_run_to_failure_with_their_sensors_drifting() -> None:
    g = torch.Generator().manual_seed(0)
    drift = torch.ones(SENSORS)
    for readings, life in _fleet(g, 5, drift):
        assert readings.shape == (life, SETTINGS + SENSORS) and 130 <= life < 320
        early, late = readings[:20, SETTINGS:].mean(0), readings[-20:, SETTINGS:].mean(0)
        assert bool((late > early).float().mean() > 0.8)  # a positive drift raises the sensors near failure


def test_windy_hours_price_lower_and_some_below_zero() -> None:
    load, wind, price = _market(torch.Generator().manual_seed(0), 24 * 120, 0)
    assert bool((price < 0).any()) and float(price.max()) > 200  # negative nights and scarcity spikes
    windy = wind > wind.quantile(0.8)
    assert float(price[windy].mean()) < float(price[~windy].mean())
    assert bool((load > 0).all()) and bool((wind >= 0).all())


def test_promoters_carry_both_boxes_more_often_than_the_rest() -> None:
    bases, y = _sequences(torch.Generator().manual_seed(0), 300, 0.58)
    assert bases.shape == (300, LENGTH) and int(bases.min()) >= 0 and int(bases.max()) <= 3

    def has(box: torch.Tensor) -> torch.Tensor:
        windows = bases.unfold(1, 6, 1)
        return ((windows == box).sum(-1) >= 5).any(1)

    both = has(BOXES[0]) & has(BOXES[1])
    assert float(both[y > 0].float().mean()) > 0.6
    assert float(both[y == 0].float().mean()) < 0.2


def test_light_curves_have_one_gap_and_transits_dim_the_star() -> None:
    flux, y = _curves(torch.Generator().manual_seed(0), 200)
    assert flux.shape == (200, CADENCES)
    assert bool((flux.isnan().sum(1) == GAP).all())
    rel = flux / flux.nanmedian(1, keepdim=True).values - 1
    dip = rel.nan_to_num(0.0).amin(1)
    assert float(dip[y > 0].mean()) < float(dip[y == 0].mean())


def test_recipes_draw_on_their_cuisines_signature_ingredients() -> None:
    g = torch.Generator().manual_seed(0)
    weights = _cuisine_weights(g)
    counts, y = _recipes(g, 400, weights)
    assert counts.shape == (400, INGREDIENTS) and int(y.max()) < CUISINES
    sizes = counts.sum(1)
    assert int(sizes.min()) >= 2 and int(sizes.max()) <= 14
    rest = counts[:, STAPLES:]
    favoured = weights.argmax(0)  # the cuisine that uses each ingredient most
    share = (rest * (favoured[None, :] == y[:, None])).sum() / rest.sum()
    assert float(share) > 0.3


def test_recordings_are_mostly_normal_and_severity_raises_the_variability_alarm() -> None:
    feats, y = _recordings(torch.Generator().manual_seed(0), 2000)
    assert feats.shape == (2000, FEATURES) and bool(torch.isfinite(feats).all())
    shares = torch.bincount(y, minlength=3).float() / len(y)
    assert 0.65 < float(shares[0]) < 0.85 and float(shares[2]) > 0.05
    astv = feats[:, 7]  # the share of time with abnormal short-term variability
    assert float(astv[y == 2].mean()) > float(astv[y == 0].mean()) + 10


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "cuisines_adagrad"]) == 0
    assert "blind30_cuisines_adagrad" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind30_R17_min_df_given_as_fraction"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
