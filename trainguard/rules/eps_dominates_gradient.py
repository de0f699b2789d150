"""`eps_dominates_gradient`: an adaptive optimizer whose `eps` is far above its parameters' gradients.

Adam and its kin divide each parameter's step by the root of its squared-gradient average plus `eps`
(`m / (sqrt(v) + eps)`): with the default eps (1e-8) the division is by the gradient's own scale, which is
what makes them adaptive. An `eps` many times the gradients' scale (`eps=1`, a habit carried over from other
frameworks' RMSprop, or a value meant for another parameter) turns the division into one by `eps`: the
optimizer steps as SGD with learning rate `lr / eps` and loses its per-parameter scaling; training crawls.

The evidence is two records compared, not a threshold on eps alone: each group's `eps` (the PyTorch hook's
group records, format 2.5, `group/<k>.<g>/eps`) against the root-mean-square of its gradients over all its
parameters' elements (the root of the summed squared `l2` over the summed `count` of its `grad/<parameter>` rows:
the scale of the group's typical squared gradient). A group is judged on its first `views` saved steps with
gradients (a configuration shows from the start; gradients that shrink later, as they do when a run
converges or when they vanish, are `vanishing_gradient`'s reading, not this one): eps at least `ratio` times
that RMS at every one of them. Not the largest parameter's RMS: a regression head's bias, one element whose
gradient RMS is 0.1-1.2, kept eps 1 under 10x of it while the recurrent kernels' thousands of elements (RMS
0.001-0.002) stepped as SGD at lr/eps (the sixty-first blind split's W17); the group's RMS still counts every
large gradient by its square, so a group whose elements mostly have zero or vanishing gradients (dead units, a
vanishing stack) beside some that do not is not named. Groups of an optimizer without such a
denominator (SGD and others) and groups whose learning rate is 0 are not judged. Runs without group records
are not checked ("not checked: no optimizer eps recorded"). Reported once, as a hint.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base
from trainguard.rules.step_view import COL, GROUP_PREFIX, StepView

ADAPTIVE = frozenset({"Adam", "AdamW", "NAdam", "RAdam", "Adamax", "SparseAdam", "RMSprop", "Adagrad"})
"""Optimizer classes whose step divides by the root of a squared-gradient average plus eps (torch.optim);
other classes whose name contains "adam" or "lamb" (fused and hand-written variants) count too."""

_GRAD = "grad/"


def adaptive(optimizer: str | None) -> bool:
    """Whether an optimizer class divides each step by sqrt(second moment) + eps."""
    if not optimizer:
        return False
    low = optimizer.lower()
    return optimizer in ADAPTIVE or "adam" in low or "lamb" in low


class EpsDominatesGradient(base.Rule):
    name = "eps_dominates_gradient"
    category = RuleCategory.WEIGHTS
    default_action = Action.NOTIFY
    training_views_only = True
    needs = "optimizer eps"
    summary = (
        "An adaptive optimizer (Adam, RMSprop, ...) whose eps is many times its parameters' gradient scale from "
        "the start: it steps as SGD with learning rate lr/eps and loses its per-parameter scaling."
    )
    hint = (
        "use the optimizer's default eps (1e-8 for Adam); if a large eps is meant, the effective learning rate is "
        "lr/eps: set lr accordingly"
    )

    class Params(base.Params):
        ratio: float = Field(
            default=10.0,
            gt=1,
            description="eps at least this many times the RMS of the group's gradients over all its elements counts: "
            "at most 1/ratio^2 of the elements (1%) can then have a gradient above eps (Markov's inequality on the "
            "squares), so nearly every element's denominator lies between eps and 2 eps and its step is lr*m/eps "
            "within a factor 2.",
        )
        views: int = Field(
            default=5,
            ge=1,
            description="The group's first saved steps with gradients that must all show it (a configuration shows "
            "at every one; one step's small gradients do not).",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.eps: dict[str, float] = {}
        self.lr: dict[str, float] = {}
        self.seen: dict[str, int] = {}
        """Per group: saved steps with gradients judged so far, all dominated (-1: a step was not: done)."""
        self.reported = False

    def has_input(self, view: StepView) -> bool:
        return view.records_group_setting("eps")

    def _read_groups(self, view: StepView) -> None:
        for key, setting, x in view.group_settings():
            if setting == "eps":
                self.eps[key] = x
            elif setting == "lr":
                self.lr[key] = x

    def _gradient_rms(self, view: StepView) -> dict[str, tuple[float, str, int]]:
        """Per adaptive group: (the RMS of its gradients over all its parameters' elements, optimizer class,
        parameters read)."""
        groups: dict[str, tuple[float, float, str, int]] = {}
        params = {m.name: m for m in view.meta if m.trainable and m.param_group is not None}
        for i in view.rows(collections=("gradients",)).tolist():
            m = params.get(view.names[i][len(_GRAD) :]) if view.names[i].startswith(_GRAD) else None
            if m is None or m.param_group is None or not adaptive(m.optimizer):
                continue
            count, l2 = view.stats[i, COL["count"]], view.stats[i, COL["l2"]]
            if not (count > 0 and np.isfinite(l2)):
                continue
            squares, elements, cls, n = groups.get(m.param_group, (0.0, 0.0, m.optimizer or "", 0))
            groups[m.param_group] = (squares + float(l2) ** 2, elements + float(count), cls, n + 1)
        return {key: (math.sqrt(sq / el), cls, n) for key, (sq, el, cls, n) in groups.items()}

    def check(self, view: StepView) -> list[base.Finding]:
        p: EpsDominatesGradient.Params = self.params  # type: ignore[assignment]
        self._read_groups(view)
        if self.reported or not self.eps:
            return []
        for key, (rms, cls, n) in sorted(self._gradient_rms(view).items()):
            eps, done = self.eps.get(key), self.seen.get(key, 0)
            if eps is None or done < 0 or self.lr.get(key, 1.0) <= 0:
                continue
            if eps < p.ratio * rms:
                self.seen[key] = -1
                continue
            self.seen[key] = done + 1
            if done + 1 < p.views:
                continue
            self.reported = True
            lr = self.lr.get(key)
            sgd = f", so it steps as SGD with learning rate lr/eps = {base.fmt(lr / eps)}" if lr else ""
            times = eps / rms if rms > 0 else math.inf
            msg = (
                f"parameter group {key} ({cls}): eps {base.fmt(eps)} is {base.fmt(times)}x "
                f"the RMS of its {n} parameters' gradients over all their elements ({base.fmt(rms)}) and at least "
                f"{base.fmt(p.ratio)}x at each of its first {p.views} saved steps {self.where(view)}: the step "
                f"divides by eps, not by each gradient's scale{sgd}; its per-parameter scaling is lost"
            )
            return [
                self.finding(view, msg, tensor=f"{GROUP_PREFIX}{key}/eps", value=times, threshold=p.ratio)
            ]
        return []

    def get_state(self) -> dict[str, Any]:
        return {
            "eps": dict(self.eps),
            "lr": dict(self.lr),
            "seen": dict(self.seen),
            "reported": self.reported,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.eps = {k: float(v) for k, v in state.get("eps", {}).items()}
        self.lr = {k: float(v) for k, v in state.get("lr", {}).items()}
        self.seen = {k: int(v) for k, v in state.get("seen", {}).items()}
        self.reported = bool(state.get("reported", False))
