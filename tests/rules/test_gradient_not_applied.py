"""`gradient_not_applied`: a parameter with a gradient whose weights never change while others train.

From real PyTorch through the hook (a layer unfrozen after the optimizer was built, and its twin that adds the
layer to the optimizer when unfreezing), and on hand-made views for what must not count (a recorded update
above zero is an update, whatever the statistics say)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from trainguard.rules.gradient_not_applied import GradientNotApplied
from trainguard.rules.step_view import COL, COLUMNS, StepView, TensorMeta
from trainguard.sidecar.view_builder import ViewBuilder


def unfreezing_findings(tmp_path: Path, *, add_to_optimizer: bool) -> list:  # type: ignore[type-arg]
    """Fine-tune a head on a frozen encoder, unfreeze the encoder at step 20 (and give it to the optimizer, or
    not), 60 steps saved every 10th; return the rule's findings."""
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(20, 32), nn.ReLU())
    model = nn.Sequential(encoder, nn.Linear(32, 4))
    encoder.requires_grad_(False)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    with tg.Hook(f"file://{tmp_path}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for step in range(60):
            if step == 20:
                encoder.requires_grad_(True)
                if add_to_optimizer:
                    opt.add_param_group({"params": list(encoder.parameters()), "lr": 1e-4})
            x, y = torch.randn(32, 20), torch.randint(0, 4, (32,))
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
    source = trainguard.open_run(f"file://{tmp_path}").source(0)
    builder = ViewBuilder(rank=0)
    rule = GradientNotApplied()
    return [
        f for seg in source.poll() for v in builder.views(seg, source.catalogue()) for f in rule.update(v)
    ]


def test_a_layer_unfrozen_but_never_given_to_the_optimizer_is_named(tmp_path: Path) -> None:
    found = unfreezing_findings(tmp_path, add_to_optimizer=False)
    assert [(f.step, f.tensor) for f in found] == [(50, "0.0.weight")]
    assert "have not changed since step 20" in found[0].message
    assert "(2 parameters: 0.0.weight, 0.0.bias)" in found[0].message


def test_a_layer_unfrozen_into_the_optimizer_is_quiet(tmp_path: Path) -> None:
    assert unfreezing_findings(tmp_path, add_to_optimizer=True) == []


NAMES = ("a.weight", "grad/a.weight", "b.weight", "grad/b.weight")


def _view(step: int, *, a_l2: float, b_l2: float, a_grad: float, b_grad: float = 1.0) -> StepView:
    meta = tuple(
        TensorMeta(name=n, collection="gradients" if n.startswith("grad/") else "weights", trainable=True, shape=(8, 8))
        for n in NAMES
    )  # fmt: skip
    stats = np.zeros((len(NAMES), len(COLUMNS)))
    stats[:, COL["count"]] = 64
    stats[:, COL["l2"]] = [a_l2, a_grad, b_l2, b_grad]
    stats[:, COL["std"]] = stats[:, COL["l2"]] / 8
    # each step's gradient is a new one (its own extremes), as a new mini-batch gives
    stats[1::2, COL["min"]] = -stats[1::2, COL["l2"]] * (0.2 + 0.01 * step / 10)
    stats[1::2, COL["max"]] = stats[1::2, COL["l2"]] * (0.3 - 0.01 * step / 10)
    return StepView(step=step, names=NAMES, meta=meta, stats=stats, scalars={"loss": 1.0})


def _findings(views: list[StepView]) -> list:  # type: ignore[type-arg]
    rule = GradientNotApplied()
    return [f for v in views for f in rule.update(v)]


def test_a_still_parameter_with_a_gradient_is_reported_after_three_views() -> None:
    views = [_view(10 * i, a_l2=5.0, b_l2=5.0 + i, a_grad=0.5) for i in range(4)]
    assert [(f.step, f.tensor) for f in _findings(views)] == [(30, "a.weight")]


def test_an_update_below_the_statistics_resolution_is_an_update() -> None:
    # a fitted SIREN's first layer under Adam: its statistics stay equal to the last digit, but the recorded
    # ||W - W at the previous saved step|| is 1e-8, not 0: the optimizer applies its gradient
    views = [_view(10 * i, a_l2=5.0, b_l2=5.0 + i, a_grad=0.5) for i in range(6)]
    for v in views[1:]:
        v.stats[0, COL["update_l2"]] = 1e-8
    assert _findings(views) == []
    for v in views[1:]:
        v.stats[0, COL["update_l2"]] = float("nan")  # not tracked: the statistics alone decide
    assert [(f.step, f.tensor) for f in _findings(views)] == [(30, "a.weight")]


def test_views_where_nothing_moved_neither_count_nor_reset() -> None:
    # a loss scaler skipping steps: every parameter still; they do not count
    still = [_view(10 * i, a_l2=5.0, b_l2=5.0, a_grad=0.5) for i in range(6)]
    assert _findings(still) == []


def test_a_gradient_too_small_to_move_a_float32_weight_does_not_count() -> None:
    # ||g|| / ||W|| at 1e-4 of the moving parameter's: a vanished gradient, not one no optimizer applies
    views = [_view(10 * i, a_l2=5.0, b_l2=5.0 + i, a_grad=1e-4) for i in range(6)]
    assert _findings(views) == []


def test_a_stale_gradient_rescaled_by_a_clip_does_not_count() -> None:
    # the gradient left by a pretraining backward: the same shape at every view, halved in place by a clip
    def stale(step: int) -> StepView:
        v = _view(step, a_l2=5.0, b_l2=5.0 + step, a_grad=0.5 * 0.5 ** (step // 10))
        v.stats[1, COL["min"]], v.stats[1, COL["max"]] = (
            -0.2 * v.stats[1, COL["l2"]],
            0.3 * v.stats[1, COL["l2"]],
        )
        return v

    assert _findings([stale(10 * i) for i in range(6)]) == []
