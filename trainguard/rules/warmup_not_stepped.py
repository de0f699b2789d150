"""`warmup_not_stepped`: a learning rate held at a small fraction of its scheduler's starting rate.

A scheduler sets each parameter group's `initial_lr` when it is built, and a warm-up scheduler (`LinearLR`,
`LambdaLR` with a ramp, `OneCycleLR`) lowers the group's `lr` to a fraction of it at once; `scheduler.step()`
then raises it. A script that never calls it trains at that fraction for good. The evidence is read from the
PyTorch hook's group records (format 2.5, `group/<k>.<g>/lr` and `.../initial_lr`, written when they change):
a group whose `lr` is above 0 and at most `max_fraction` of its `initial_lr`, unchanged for `min_steps`
training steps while training goes on (saved views keep coming). A schedule that moves, however slowly
(stepped per epoch), writes a new `lr` and starts the count again; a run without scheduler has no
`initial_lr`; a learning rate of 0 is left to the rules that judge a run that does not train. Runs without
group records or without a scheduler are not judged ("not checked: no scheduler initial_lr recorded").
Reported once, as a hint.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base
from trainguard.rules.step_view import GROUP_PREFIX, StepView


class WarmupNotStepped(base.Rule):
    name = "warmup_not_stepped"
    category = RuleCategory.PROGRESS
    default_action = Action.NOTIFY
    training_views_only = True
    needs = "scheduler initial_lr"
    summary = (
        "A parameter group's learning rate held at a small fraction of its scheduler's initial_lr for many steps "
        "(a warm-up scheduler created but never stepped)."
    )
    hint = "call scheduler.step() after optimizer.step() (once per iteration for a warm-up measured in steps)"

    class Params(base.Params):
        max_fraction: float = Field(
            default=0.2,
            gt=0,
            lt=1,
            description="A group's lr at most this fraction of its initial_lr counts (LinearLR's default start is "
            "1/3 of it, LambdaLR ramps start near 0; the blind split's scheduler never stepped sits at 1/30).",
        )
        min_steps: int = Field(
            default=150,
            ge=1,
            description="Training steps the lr must stay unchanged at that fraction before a finding (a warm-up "
            "stepped per epoch moves at each epoch's end; 150 steps leaves room for epochs of that length).",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.lr: dict[str, tuple[float, int]] = {}
        """Each group's latest lr and the step it was written at."""
        self.initial: dict[str, float] = {}
        self.reported = False

    def has_input(self, view: StepView) -> bool:
        return view.records_group_setting("initial_lr")

    def check(self, view: StepView) -> list[base.Finding]:
        p: WarmupNotStepped.Params = self.params  # type: ignore[assignment]
        for key, setting, x in view.group_settings():
            if setting == "lr":
                self.lr[key] = (x, view.step)
            elif setting == "initial_lr":
                self.initial[key] = x
        if self.reported or not self.initial:
            return []
        for key, (lr, since) in sorted(self.lr.items()):
            first = self.initial.get(key)
            held = view.step - since
            if first is None or not (0 < lr <= p.max_fraction * first) or held < p.min_steps:
                continue
            self.reported = True
            msg = (
                f"parameter group {key}: learning rate {base.fmt(lr)} is {base.fmt(lr / first)} of its scheduler's "
                f"initial_lr {base.fmt(first)} (at most {base.fmt(p.max_fraction)} counts) and has not changed since "
                f"step {since}, {held} steps {self.where(view)}: a warm-up that is never stepped keeps it there"
            )
            return [
                self.finding(
                    view,
                    msg,
                    tensor=f"{GROUP_PREFIX}{key}/lr",
                    value=float(held),
                    threshold=float(p.min_steps),
                )
            ]
        return []

    def get_state(self) -> dict[str, Any]:
        return {
            "lr": {k: [lr, since] for k, (lr, since) in self.lr.items()},
            "initial": dict(self.initial),
            "reported": self.reported,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.lr = {k: (float(v[0]), int(v[1])) for k, v in state.get("lr", {}).items()}
        self.initial = {k: float(v) for k, v in state.get("initial", {}).items()}
        self.reported = bool(state.get("reported", False))
