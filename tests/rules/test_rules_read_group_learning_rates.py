"""Rules judge a parameter by its own optimizer group's learning rate (format 2.5 group records).

Through real PyTorch and the hook: a backbone given to the optimizer in a group at lr 0 (frozen by design, yet
it requires a gradient and gets one) is no finding, while its twin whose backbone no optimizer holds is one.
On hand-made views: layer-wise learning rates judged at the highest group rate, and runs without group records
judged as before."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tests.rules.hooked import trained_views
from trainguard.rules.base import Finding, Rule
from trainguard.rules.gradient_not_applied import GradientNotApplied
from trainguard.rules.group_rates import GroupRates
from trainguard.rules.step_view import COL, COLUMNS, GROUP_PREFIX, StepView, TensorMeta
from trainguard.rules.unchanged_tensor import UnchangedTensor
from trainguard.rules.warmup_not_stepped import WarmupNotStepped
from trainguard.rules.weight_update_ratio import WeightUpdateRatio
from trainguard.store import run_format


def backbone_findings(tmp_path: Path, *, backbone_in_optimizer: bool) -> dict[str, list[Finding]]:
    """A head trained on a backbone that requires gradients but does not train: held by the optimizer in a group
    at lr 0, or held by no optimizer; 60 steps saved every 10th. The findings of the three rules."""
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(20, 32), nn.ReLU())
    model = nn.Sequential(backbone, nn.Linear(32, 4))
    groups: list[dict[str, object]] = [{"params": list(model[1].parameters())}]
    if backbone_in_optimizer:
        groups.insert(0, {"params": list(backbone.parameters()), "lr": 0.0})
    opt = torch.optim.AdamW(groups, lr=1e-3)  # type: ignore[arg-type]
    views = trained_views(tmp_path, model, opt, steps=60)
    rules: list[Rule] = [GradientNotApplied(), UnchangedTensor(), WeightUpdateRatio()]
    return {r.name: [f for v in views for f in r.update(v)] for r in rules}


def test_a_backbone_at_lr_0_is_frozen_by_design_and_one_no_optimizer_holds_is_named(tmp_path: Path) -> None:
    by_design = backbone_findings(tmp_path / "by-design", backbone_in_optimizer=True)
    assert by_design == {"gradient_not_applied": [], "unchanged_tensor": [], "weight_update_ratio": []}
    lost = backbone_findings(tmp_path / "lost", backbone_in_optimizer=False)
    assert [f.tensor for f in lost["gradient_not_applied"]] == ["0.0.weight"]
    assert {f.tensor for f in lost["unchanged_tensor"]} == {"0.0.weight"}


def test_the_group_scalar_prefix_is_the_run_formats() -> None:
    assert GROUP_PREFIX == run_format.GROUP_PREFIX
    assert run_format.group_scalar("0.1", "lr").startswith(GROUP_PREFIX)


NAMES = ("enc.weight", "mid.weight", "head.weight")


def view(
    step: int, ratios: tuple[float, ...], rates: dict[str, float] | None, groups: bool = True
) -> StepView:
    """Three kernels of norm 10 whose update since the previous view is `ratios` x their norm; `rates`: the group
    learning rates recorded at this view (groups 0.0, 0.1, 0.2 hold the kernels in order)."""
    meta = tuple(
        TensorMeta(
            name=n,
            collection="weights",
            trainable=True,
            shape=(8, 8),
            param_group=f"0.{k}" if groups else None,
        )
        for k, n in enumerate(NAMES)
    )
    stats = np.zeros((3, len(COLUMNS)))
    stats[:, COL["l2"]] = 10.0
    stats[:, COL["count"]] = 64
    stats[:, COL["update_l2"]] = np.asarray(ratios) * 10.0
    scalars = {"loss": 2.0}
    scalars.update({f"{GROUP_PREFIX}{k}/lr": x for k, x in (rates or {}).items()})
    return StepView(step=step, rank=0, names=NAMES, meta=meta, stats=stats, scalars=scalars)


def low_findings(ratios: tuple[float, ...], rates: dict[str, float], groups: bool = True) -> list[Finding]:
    rule = WeightUpdateRatio()
    found: list[Finding] = []
    for k in range(12):
        found += rule.update(view(10 * k, ratios, rates if k == 0 else None, groups))
    return found


@pytest.mark.parametrize("groups", [True, False])
def test_layer_wise_rates_are_judged_at_the_highest_group_rate(groups: bool) -> None:
    # decay 100x per group: the lower layers' steps are small on purpose; with the groups recorded the median
    # judged at the head's rate is healthy, without them (an older run) the raw median is below 1e-4
    found = low_findings((1e-7, 1e-5, 1e-3), {"0.0": 1e-7, "0.1": 1e-5, "0.2": 1e-3}, groups=groups)
    assert bool(found) is not groups
    if found:
        assert "median update ratio" in found[0].message


def test_a_rate_too_low_for_every_group_is_still_reported_at_the_highest_group_rate() -> None:
    (f, *_) = low_findings((1e-8, 1e-7, 1e-6), {"0.0": 1e-6, "0.1": 1e-5, "0.2": 1e-4})
    assert "judged at the highest group learning rate" in f.message and f.value < 1e-4


def test_group_rates_hold_between_records_and_restore() -> None:
    rates = GroupRates()
    rates.push(view(0, (0, 0, 0), {"0.0": 0.0, "0.1": 1e-3, "0.2": 1e-2}))
    rates.push(view(10, (0, 0, 0), {"0.2": 1e-5}))  # only the changed group is written
    v = view(20, (0, 0, 0), None)
    rows = np.arange(3)
    assert rates.by_design(v, rows).tolist() == [True, False, False]
    assert rates.by_design(v, rows, lowered=0.01).tolist() == [True, False, True]
    again = GroupRates()
    again.set_state(rates.get_state())
    assert again.by_design(v, rows, lowered=0.01).tolist() == [True, False, True]
    assert not GroupRates().by_design(v, rows).any()  # nothing recorded: nothing known


def test_every_group_at_rate_0_is_no_design_but_a_run_that_does_not_train() -> None:
    # a learning rate floored to 0 by integer division, a warm-up at 0 never stepped: every group at 0
    rates = GroupRates()
    rates.push(view(0, (0, 0, 0), {"0.0": 0.0, "0.1": 0.0, "0.2": 0.0}))
    assert not rates.by_design(view(10, (0, 0, 0), None), np.arange(3)).any()
    found = low_findings((0.0, 0.0, 0.0), {"0.0": 0.0, "0.1": 0.0, "0.2": 0.0})
    assert found and "left out" not in found[0].message


def warmup_findings(lrs: dict[int, float], steps: int = 300) -> list[Finding]:
    """`warmup_not_stepped` over a run saved every 10 steps whose group 0.0 has initial_lr 2e-3 and the lr `lrs`
    written at the given steps (the hook writes it where it changed)."""
    rule = WarmupNotStepped()
    found: list[Finding] = []
    for step in range(0, steps, 10):
        rates = {"0.0": lrs[step]} if step in lrs else None
        v = view(step, (1e-3, 1e-3, 1e-3), rates)
        if step == 0:
            v = replace(v, scalars={**v.scalars, f"{GROUP_PREFIX}0.0/initial_lr": 2e-3})
        found += rule.update(v)
    return found


def test_a_warmup_never_stepped_is_named_and_one_stepped_is_not() -> None:
    (f,) = warmup_findings({0: 2e-3 / 30})
    assert (f.step, f.tensor) == (150, f"{GROUP_PREFIX}0.0/lr") and "never stepped" in f.message
    assert warmup_findings({0: 2e-3 / 30, 10: 2e-3 / 15, 20: 2e-3}) == []  # the warm-up ran
    assert warmup_findings({0: 2e-3 / 30, 140: 2e-3 / 15, 280: 2e-3 / 10}) == []  # stepped per 140-step epoch
    assert warmup_findings({0: 2e-3}) == []  # a constant lr at its initial_lr: no warm-up
    assert warmup_findings({0: 0.0}) == []  # lr 0: a run that does not train, judged by other rules
