"""`optimizer_not_stepping`: training goes on while the optimizer does not step (the weights stand still).

A dynamic loss scaler that skips every step after its first overflow, or an inf/NaN check that always trips,
leaves forward and backward running and `optimizer.step()` never called. The PyTorch hook counts steps by
`optimizer.step()`, so such a run brings no new step at all; what it brings is the hook's `no_step` marker
(`StepView.no_step`: since which step, and how many training iterations since then without an optimizer
step), written at the last counted step every few iterations while the spell lasts and at close. This rule
reads those markers (a view with nothing else is heartbeat-like, hence `wants_heartbeat`) and warns once per
spell when it reaches `min_iterations` in a row. Healthy dynamic loss scaling skips a step now and then after
an overflow, a few in a row while the scale comes down from its initial value (2^16 halves to a workable scale
in well under 50), then recovers: that never reaches the threshold. The message gives the count, the share
of the run's training iterations so far that went without a step (every marked spell's newest count, over
those plus the counted steps) and since when.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base
from trainguard.rules.step_view import StepView


class OptimizerNotStepping(base.Rule):
    name = "optimizer_not_stepping"
    category = RuleCategory.PROGRESS
    default_action = Action.NOTIFY
    wants_heartbeat = True
    summary = (
        "Training iterations go on without an optimizer step, `min_iterations` in a row (a loss scaler that "
        "never recovers from an overflow, an inf check that always trips): the weights stand still."
    )
    hint = (
        "the optimizer's step is skipped on every iteration: a dynamic loss scaler that never lowers its scale "
        "(or never clears its overflow flag), or a non-finite/spike check that always trips; print the scale "
        "and the gradients' norm where the step is skipped"
    )

    class Params(base.Params):
        min_iterations: int = Field(
            default=50,
            ge=2,
            description="Training iterations in a row without an optimizer step that make a finding. Healthy "
            "dynamic loss scaling skips one now and then, a few in a row at the start while its scale comes "
            "down (from 2^16, fewer than 20); the hook marks a spell every 10 iterations.",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.since: int | None = None
        """The spell seen last: its first step not counted."""
        self.iterations = 0
        """Its newest count of iterations without a step."""
        self.earlier = 0
        """Iterations without a step of the spells before it."""
        self.reported: int | None = None
        """The spell already reported (its first step not counted)."""

    def check(self, view: StepView) -> list[base.Finding]:
        if view.no_step is None:
            return []
        p: OptimizerNotStepping.Params = self.params  # type: ignore[assignment]
        since, iterations = view.no_step
        if since != self.since:
            self.earlier += self.iterations
            self.since, self.iterations = since, 0
        self.iterations = max(self.iterations, iterations)
        if iterations < p.min_iterations or self.reported == since:
            return []
        self.reported = since
        skipped = self.earlier + self.iterations
        total = since + skipped  # the steps counted before the spell (numbered from 0) and every skipped one
        msg = (
            f"{iterations} training iterations in a row went without an optimizer step since step {since}, "
            f"{100 * skipped / total:.0f}% of the {total} training iterations so far {self.where(view)} (at "
            f"least {p.min_iterations} in a row make a finding): the weights do not change"
        )
        return [self.finding(view, msg, value=float(iterations), threshold=float(p.min_iterations))]

    def get_state(self) -> dict[str, Any]:
        return {"since": self.since, "iterations": self.iterations, "earlier": self.earlier,
                "reported": self.reported}  # fmt: skip

    def set_state(self, state: dict[str, Any]) -> None:
        self.since, self.reported = state.get("since"), state.get("reported")
        self.iterations, self.earlier = int(state.get("iterations", 0)), int(state.get("earlier", 0))
