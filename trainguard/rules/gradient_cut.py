"""`gradient_cut`: no kernel of the model receives a gradient, from the start, while the loss reaches a bias.

A step whose derivative is zero almost everywhere (`round`, `argmax`, a comparison, a `.detach()` or `.data` in
the forward pass) between the loss and the model's kernels cuts the backward pass: every kernel's gradient is
exactly zero in every element, while a parameter after the cut (an output bias) still gets one. Fake
quantisation written without a straight-through estimator (`round(w / s) * s` on the weights and inputs) is the
common case: the model can learn its output biases (the class frequencies) and nothing else, and its loss stays
at chance level. `vanishing_gradient` leaves all-zero gradients alone (a ratio of two norms reads nothing from
a zero), and `unchanged_tensor` sees weights that still move (weight decay moves them).

The evidence is read from the gradient records (`grad/<parameter>`, its `zero` and `count` columns): at each of
the model's first `views` saved steps with kernel gradients, every kernel's (a trainable parameter of
collection `weights`) gradient is zero in all its elements, and some parameter's gradient is not. Two other
causes of all-zero kernel gradients are other rules' readings and end the judgement: a kernel whose own values
are all zero (a zero initialisation: `poor_weight_initialization`), and a recorded activation that is zero in
every element (a dead layer passes no gradient back: `dead_relu`). Only the first saved steps are judged: a
cut shows from the start. Runs without gradient records are not checked. Reported once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base
from trainguard.rules.step_view import COL, StepView

_GRAD = "grad/"


class GradientCut(base.Rule):
    name = "gradient_cut"
    category = RuleCategory.GRADIENTS
    default_action = Action.NOTIFY
    training_views_only = True
    needs = "gradients"
    summary = (
        "Every kernel's gradient exactly zero from the start while a bias still gets one: a step with a zero "
        "derivative (round, argmax, a comparison, a detach) cuts the backward pass between the loss and the kernels."
    )
    hint = (
        "find the operation between the loss and the kernels whose derivative is zero: round or floor (fake "
        "quantisation needs a straight-through estimator, x + (q - x).detach()), argmax, a comparison, a "
        "`.detach()` or `.data` in the forward pass"
    )

    class Params(base.Params):
        views: int = Field(
            default=3,
            ge=1,
            description="The first saved steps with kernel gradients that must all show it (a cut shows at every "
            "one; no healthy run of the detection suites has all its kernel gradients zero at even one of its "
            "first three).",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.seen = 0
        """Saved steps judged so far, all cut (-1: one was not, or another cause explains it: done)."""

    def has_input(self, view: StepView) -> bool:
        return any(name.startswith(_GRAD) for name in view.names)

    def check(self, view: StepView) -> list[base.Finding]:
        p: GradientCut.Params = self.params  # type: ignore[assignment]
        if self.seen < 0 or not len(view.names):
            return []
        index = {name: i for i, name in enumerate(view.names)}
        grads = [i for i, name in enumerate(view.names) if name.startswith(_GRAD)]
        kernels = [
            (index[m.name], g)
            for m in view.meta
            if m.trainable and m.collection == "weights" and (g := index.get(_GRAD + m.name)) is not None
        ]
        if not kernels:
            return []
        stats = view.stats
        count, zero = COL["count"], COL["zero"]
        cut = all(stats[g, count] > 0 and stats[g, zero] == stats[g, count] for _, g in kernels)
        live = [i for i in grads if np.isfinite(stats[i, COL["l2"]]) and stats[i, COL["l2"]] > 0]
        zero_kernel = any(stats[w, count] > 0 and stats[w, zero] == stats[w, count] for w, _ in kernels)
        dead = any(
            stats[i, count] > 0 and stats[i, zero] == stats[i, count]
            for i in self.rows(view, default_collections=("activations",)).tolist()
        )
        if not cut or not live or zero_kernel or dead:
            self.seen = -1
            return []
        self.seen += 1
        if self.seen < p.views:
            return []
        self.seen = -1
        alive = view.names[live[0]]
        msg = (
            f"every one of the {len(kernels)} kernels' gradients was zero in all its elements at each of the first "
            f"{p.views} saved steps, the last {self.where(view)}, while {len(live)} other gradient"
            f"{'s' if len(live) > 1 else ''} "
            f"({alive}: l2 {base.fmt(float(stats[live[0], COL['l2']]))}) did not, with kernels that are not zero and "
            "no layer dead: the backward pass stops before the kernels, so the model learns only what lies after "
            "the cut"
        )
        return [self.finding(view, msg, tensor=view.names[kernels[0][1]], value=float(len(kernels)))]

    def get_state(self) -> dict[str, Any]:
        return {"seen": self.seen}

    def set_state(self, state: dict[str, Any]) -> None:
        self.seen = int(state.get("seen", 0))
