"""`poor_weight_initialization` judges the weights before the first optimizer update, not a large first update.

Real PyTorch runs captured by the hook: a classifier with PyTorch's default init trained with Adam
at lr 10 moves every weight by about 10 in its first update (Adam's first step is lr times the
gradient's sign), so the rows of step 0, read after that update, are ~40x the standard targets; the
rule must stay quiet on it, judging the hook's initial-weights record. The same views without the
record (a run of an older hook) still fire, and the message and hint say that the weights were read
after the update. A kernel initialised 10x too large, trained at a sane learning rate, fires, and the
finding quotes the std of the weights the loop saw before its first step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from trainguard.rules.base import Finding
from trainguard.rules.poor_weight_initialization import PoorWeightInitialization, std_targets
from trainguard.rules.step_view import COL, INITIAL_COLLECTION, INITIAL_PREFIX, StepView
from trainguard.sidecar.view_builder import ViewBuilder, save_interval_of
from trainguard.store import run_format


def _train(
    out: Path, *, lr: float, scale: float, init: Callable[[torch.Tensor], object] | None = None
) -> np.ndarray:
    """Train a 3-layer classifier (its first kernel scaled by `scale`, every kernel drawn again by `init` when given)
    with Adam at `lr` for 5 steps, every step saved; return the first kernel as the loop saw it before the first
    step."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    with torch.no_grad():
        for layer in model:
            if init is not None and isinstance(layer, nn.Linear):
                init(layer.weight)
        model[0].weight.mul_(scale)  # type: ignore[operator]
    first = model[0].weight.detach().double().numpy().copy()  # type: ignore[union-attr]
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(1)
    with tg.Hook(f"file://{out}", save_interval=1) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(5):
            x, y = torch.randn(64, 20, generator=g), torch.randint(0, 10, (64,), generator=g)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
    assert not hook.errors
    return first


def _views(out: Path) -> list[StepView]:
    """The run's views, as the evaluator builds them."""
    run = trainguard.open_run(f"file://{out}")
    source = run.source(0)
    builder = ViewBuilder(rank=0, save_interval=save_interval_of(run.info))
    return [view for seg in source.poll() for view in builder.views(seg, source.catalogue())]


def _without_record(view: StepView) -> StepView:
    """`view` as a hook without the initial-weights record wrote it."""
    keep = [i for i, m in enumerate(view.meta) if m.collection != INITIAL_COLLECTION]
    return dataclasses.replace(
        view,
        names=tuple(view.names[i] for i in keep),
        meta=tuple(view.meta[i] for i in keep),
        stats=view.stats[keep],
    )


def _weight_findings(views: list[StepView]) -> list[Finding]:
    rule = PoorWeightInitialization()
    return [
        f for view in views for f in rule.update(view) if f.tensor != "loss" and "activation" not in f.message
    ]


def test_the_step_view_names_the_record_as_the_run_format_does() -> None:
    assert (INITIAL_COLLECTION, INITIAL_PREFIX) == (run_format.INITIAL_COLLECTION, run_format.INITIAL_PREFIX)


def test_a_large_first_update_is_not_blamed_on_a_good_init(tmp_path: Path) -> None:
    _train(tmp_path / "run", lr=10.0, scale=1.0)
    views = _views(tmp_path / "run")
    step0 = next(v for v in views if v.names)
    i = step0.index("0.weight")
    assert i is not None and step0.initial("0.weight") is not None
    _, high = std_targets((64, 20))
    assert step0.stats[i, COL["std"]] > 10 * high, (
        "step 0's rows were read after a first update far too large"
    )
    assert _weight_findings(views) == []
    old = _weight_findings([_without_record(v) for v in views])
    assert old, "without the record, the rule judges the moved weights, as before"
    assert all(
        "(after the first update: the run has no record of the weights before it)" in f.message for f in old
    )
    assert all("a learning rate far too high looks the same" in f.hint for f in old)


def test_a_kernel_initialised_ten_times_too_large_still_fires(tmp_path: Path) -> None:
    first = _train(tmp_path / "run", lr=1e-3, scale=10.0)
    found = _weight_findings(_views(tmp_path / "run"))
    assert [(f.step, f.tensor) for f in found] == [(0, "0.weight")]
    assert found[0].value == pytest.approx(first.std(), rel=1e-5)
    assert "(before the first update)" in found[0].message
    assert "learning rate" not in found[0].hint


def test_kernels_drawn_from_uniform_with_its_default_bounds_are_named(tmp_path: Path) -> None:
    # `nn.init.uniform_(w)` without bounds draws from [0, 1): every element positive, a std (0.29) within the
    # fan-based targets of these shapes, so only the sign tells
    _train(tmp_path / "bare", lr=1e-3, scale=1.0, init=nn.init.uniform_)
    views = _views(tmp_path / "bare")
    found = [f for f in _weight_findings(views) if "sign" in f.message]
    assert [(f.step, f.tensor, f.value) for f in found] == [(0, "0.weight", 3.0)]
    assert "every one of its 1280 elements is non-negative before the first update" in found[0].message
    assert "as are 2 more of the 3 kernels" in found[0].message and "uniform_(w, -b, b)" in found[0].hint
    # read without the initial-weights record the weights have moved: the sign is not judged
    assert not [f for f in _weight_findings([_without_record(v) for v in views]) if "sign" in f.message]
    # the same draw given its bounds, and the check turned off
    _train(tmp_path / "bounded", lr=1e-3, scale=1.0, init=lambda w: nn.init.uniform_(w, -0.2, 0.2))
    assert [f for f in _weight_findings(_views(tmp_path / "bounded")) if "sign" in f.message] == []
    off = PoorWeightInitialization({"one_signed_min_elements": None})
    assert not [f for v in views for f in off.update(v) if "sign" in f.message]
