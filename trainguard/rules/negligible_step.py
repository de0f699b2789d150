"""`negligible_step`: a normalising optimizer whose steps are a vanishing fraction of its learning rate.

Adam and its kin, RMSprop, Adagrad and sign-based optimizers such as Lion divide (or replace) each gradient by
its own scale, so every element that has a gradient moves by about the learning rate per step: exactly `lr` on
Adam's first step and on every step of a sign optimizer, `lr / sqrt(k)` on Adagrad's k-th. When the parameters
move by a small fraction of that from the first step on, with gradients present, something else sets the
step: an Adagrad `initial_accumulator_value` far above the squared gradients (the denominator is the
accumulator, not the gradients), a sign optimizer whose sign was dropped (the step is `lr * gradient`), a
hand-written Adam whose second moment is scaled wrongly. The run trains at a rate nobody chose; its loss
crawls, and by the time a loss rule speaks it has lost hundreds of steps.

The evidence is two records compared: each parameter's movement since the previous saved step (`update_l2`,
per element: `update_l2 / sqrt(count)`, per optimizer step between the two saved steps) against its group's
learning rate (the PyTorch hook's group records, format 2.5; the mean of the rate at the two ends of the
window, which is exact for a linear warm-up). A group is judged on its first `views` saved steps with
movement and gradients (a configuration shows from the start; steps that shrink later, as Adagrad's do by
design, are not its reading): at every one of them, the parameter that moved most moved less than `ratio` of
the learning rate per step. Only parameters with a non-zero gradient count. Groups that did not move at all
are `gradient_not_applied`'s and `optimizer_not_stepping`'s reading, not this one. Optimizers whose step is
not normalised from the first step on are not judged: SGD and its kin, RAdam (its rectifier keeps the first
steps small by design), LAMB (its trust ratio scales the step by the weights' norm). Runs without group
records or without update tracking are not checked. Reported once, as a hint.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base
from trainguard.rules.step_view import COL, StepView

NORMALISED = frozenset({"Adam", "AdamW", "NAdam", "Adamax", "SparseAdam", "RMSprop", "Adagrad", "Lion"})
"""Optimizer classes whose per-element step is about `lr` from the first step on (torch.optim, and Lion);
other classes whose name contains "adam" or "lion" (fused and hand-written variants) count too, except
RAdam's, and LAMB's (see the module docstring)."""

_GRAD = "grad/"


def normalised(optimizer: str | None) -> bool:
    """Whether an optimizer class steps each element by about its learning rate from the first step on."""
    if not optimizer:
        return False
    low = optimizer.lower()
    if "radam" in low or "lamb" in low:
        return False
    return optimizer in NORMALISED or "adam" in low or "lion" in low


class NegligibleStep(base.Rule):
    name = "negligible_step"
    category = RuleCategory.WEIGHTS
    default_action = Action.NOTIFY
    training_views_only = True
    needs = "optimizer learning rate"
    summary = (
        "A normalising optimizer (Adam, Adagrad, RMSprop, Lion, ...) whose parameters move by a vanishing "
        "fraction of its learning rate per step from the start, with gradients present: something else than "
        "the gradients' scale sets the step."
    )
    hint = (
        "check what divides or replaces the gradient in the step: Adagrad's initial_accumulator_value (0 by "
        "default), the optimizer's eps, a sign dropped from a sign-based update, a hand-written second moment"
    )

    class Params(base.Params):
        ratio: float = Field(
            default=0.03,
            gt=0,
            lt=1,
            description="The largest per-element movement per step of the group's parameters below this fraction of "
            "the learning rate counts (a normalising optimizer moves an element with a gradient by about lr per "
            "step; even pure-noise gradients over a 10-step window leave a tenth of it).",
        )
        views: int = Field(
            default=3,
            ge=1,
            description="The group's first saved steps with movement and gradients that must all show it (a "
            "configuration shows at every one).",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.lr: dict[str, float] = {}
        """Per group: its learning rate as last recorded."""
        self.lr_then: dict[str, float] = {}
        """Per group: its learning rate at the previous saved step the rule read."""
        self.last: dict[str, int] = {}
        """Per parameter: the last saved step that recorded it (its `update_l2` counts from there)."""
        self.seen: dict[str, int] = {}
        """Per group: saved steps judged so far, all negligible (-1: one was not: done)."""
        self.reported = False

    def has_input(self, view: StepView) -> bool:
        return view.records_group_setting("lr")

    def _largest_steps(self, view: StepView) -> dict[str, tuple[float, str, str]]:
        """Per normalising group: (largest per-element movement per step, its parameter, optimizer class) among
        its parameters with a gradient; records each parameter's step as its last."""
        groups: dict[str, tuple[float, str, str]] = {}
        grads = {view.names[i][len(_GRAD) :]: i for i in view.rows(collections=("gradients",)).tolist()}
        for i, m in enumerate(view.meta):
            if not m.trainable or m.param_group is None or not normalised(m.optimizer):
                continue
            before, self.last[m.name] = self.last.get(m.name), view.step
            g = grads.get(m.name)
            if before is None or view.step <= before or g is None:
                continue
            count, update, grad = (view.stats[i, COL["count"]], view.stats[i, COL["update_l2"]],
                                   view.stats[g, COL["l2"]])  # fmt: skip
            if not (count > 0 and np.isfinite(update) and np.isfinite(grad) and grad > 0):
                continue
            per_step = float(update) / math.sqrt(float(count)) / (view.step - before)
            best = groups.get(m.param_group)
            if best is None or per_step > best[0]:
                groups[m.param_group] = (per_step, m.name, m.optimizer or "")
        return groups

    def check(self, view: StepView) -> list[base.Finding]:
        p: NegligibleStep.Params = self.params  # type: ignore[assignment]
        for key, setting, x in view.group_settings():
            if setting == "lr":
                self.lr[key] = x
        if self.reported or not self.lr or not len(view.names):
            return []
        found: list[base.Finding] = []
        for key, (step, where, cls) in sorted(self._largest_steps(view).items()):
            now, done = self.lr.get(key), self.seen.get(key, 0)
            lr = (self.lr_then.get(key, now) + now) / 2 if now is not None else None
            if now is not None:
                self.lr_then[key] = now
            if lr is None or not lr > 0 or done < 0 or step <= 0 or found:
                continue
            if step >= p.ratio * lr:
                self.seen[key] = -1
                continue
            self.seen[key] = done + 1
            if done + 1 < p.views:
                continue
            self.reported = True
            msg = (
                f"parameter group {key} ({cls}): its parameters moved at most {base.fmt(step)} per element per "
                f"step ({where}), {base.fmt(step / lr)} of its learning rate {base.fmt(lr)}, below "
                f"{base.fmt(p.ratio)} at each of its first {p.views} saved steps {self.where(view)}, while they "
                f"had gradients: a {cls} step moves each element by about lr; something else than the gradients' "
                f"scale sets the step, and training runs at a small fraction of the chosen rate"
            )
            found.append(self.finding(view, msg, tensor=where, value=step / lr, threshold=p.ratio))
        return found

    def get_state(self) -> dict[str, Any]:
        return {
            "lr": dict(self.lr),
            "lr_then": dict(self.lr_then),
            "last": dict(self.last),
            "seen": dict(self.seen),
            "reported": self.reported,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.lr = {k: float(v) for k, v in state.get("lr", {}).items()}
        self.lr_then = {k: float(v) for k, v in state.get("lr_then", {}).items()}
        self.last = {k: int(v) for k, v in state.get("last", {}).items()}
        self.seen = {k: int(v) for k, v in state.get("seen", {}).items()}
        self.reported = bool(state.get("reported", False))
