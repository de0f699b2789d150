"""`stalled_training`: no new step for `threshold` seconds (SageMaker's StalledTrainingRule).

Tracks the last step seen and the wall time it arrived (`view.wall_time`, written by the hook).
The evaluator, while no new step arrives, sends heartbeat views (`StepView(step=<last step>,
rank=r, wall_time=<now>)`, no data) that this rule alone receives; offline, a gap between two
successive steps longer than `threshold` is reported at the later step. Views without a wall time
(0) are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base
from trainguard.rules.step_view import StepView


class StalledTraining(base.Rule):
    name = "stalled_training"
    example_params: ClassVar[Mapping[str, Any]] = {"threshold": 600}
    """For the state round-trip test: a 10-minute stall, which a run with a jumping clock shows."""
    category = RuleCategory.PROGRESS
    default_action = Action.NOTIFY
    summary = (
        "No new training step for `threshold` seconds (hung data loader, deadlocked collective, stuck I/O)."
    )
    wants_heartbeat = True
    hint = (
        "look for a hung data loader, a deadlocked collective (one rank died or waits), or stuck storage I/O"
    )

    class Params(base.Params):
        threshold: float = Field(
            default=1800.0, gt=0, description="Seconds without a new step after which training is stalled."
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.last_step: int | None = None
        self.last_time: float | None = None

    def check(self, view: StepView) -> list[base.Finding]:
        p: StalledTraining.Params = self.params  # type: ignore[assignment]
        if view.wall_time <= 0:
            return []
        if self.last_step is None or self.last_time is None:
            self.last_step, self.last_time = view.step, view.wall_time
            return []
        elapsed = view.wall_time - self.last_time
        if view.step > self.last_step:
            prev = self.last_step
            self.last_step, self.last_time = view.step, view.wall_time
            if elapsed <= p.threshold:
                return []
            msg = f"step {view.step} came {base.fmt(elapsed)} s after step {prev}, longer than the threshold {base.fmt(p.threshold)} s on rank {view.rank}"
            return [self.finding(view, msg, value=elapsed, threshold=p.threshold)]
        if elapsed <= p.threshold:
            return []
        msg = (
            f"no new step since step {self.last_step} for {base.fmt(elapsed)} s, longer than the threshold "
            f"{base.fmt(p.threshold)} s on rank {view.rank}"
        )
        return [self.finding(view, msg, value=elapsed, threshold=p.threshold)]

    def get_state(self) -> dict[str, Any]:
        return {"last_step": self.last_step, "last_time": self.last_time}

    def set_state(self, state: dict[str, Any]) -> None:
        self.last_step = state.get("last_step")
        self.last_time = state.get("last_time")
