"""Small rules the evaluator tests load as custom rules (`python:tests.sidecar.rules_for_tests:Class`).

They exercise the evaluator's machinery (isolation, state, checkpoints, the smdebug adapter)
independently of the built-in library, so a change in a built-in's calibration cannot break them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Severity
from trainguard.rules.base import Finding, Params, Rule
from trainguard.rules.step_view import StepView


class NonFinite(Rule):
    """Critical finding for the first tensor holding NaN or Inf."""

    name = "non_finite"
    default_severity = Severity.CRITICAL
    hint = "lower the learning rate"

    def check(self, view: StepView) -> list[Finding]:
        if not view.names:
            return []
        bad = view.stats[:, 1] + view.stats[:, 2]
        hit = np.nonzero(bad > 0)[0]
        if not hit.size:
            return []
        name = view.names[int(hit[0])]
        return [
            self.finding(
                view, f"{name} holds {int(bad[hit[0]])} NaN/Inf values at step {view.step}", tensor=name
            )
        ]


class StepLedgerParams(Params):
    fire_at: list[int] = Field(default_factory=list, description="Steps at which to report a warning.")


class StepLedger(Rule):
    """Keeps every step it saw in its state, and warns at the steps listed in `fire_at`."""

    name = "step_ledger"
    Params = StepLedgerParams

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.steps: list[int] = []

    def check(self, view: StepView) -> list[Finding]:
        self.steps.append(view.step)
        if view.step in self.params.fire_at:  # type: ignore[attr-defined]
            return [self.finding(view, f"ledger step {view.step}")]
        return []

    def get_state(self) -> dict[str, Any]:
        return {"steps": list(self.steps)}

    def set_state(self, state: dict[str, Any]) -> None:
        self.steps = [int(s) for s in state.get("steps", [])]


class BoomParams(Params):
    at_step: int = Field(default=0, description="Raise from this step on.")


class Boom(Rule):
    """Raises ZeroDivisionError from `at_step` on: a broken user rule."""

    name = "boom"
    Params = BoomParams

    def check(self, view: StepView) -> list[Finding]:
        if view.step >= self.params.at_step:  # type: ignore[attr-defined]
            raise ZeroDivisionError("division by zero in a user rule")
        return []


class LossAboveSmdebug:
    """An smdebug-style rule: `invoke_at_step` returns True when the loss exceeds `threshold`."""

    def __init__(self, base_trial: Any, threshold: float = 1.0) -> None:
        self.base_trial = base_trial
        self.threshold = float(threshold)

    def invoke_at_step(self, step: int) -> bool:
        if step not in self.base_trial.steps() or "loss" not in self.base_trial.tensor_names():
            return False
        try:
            return bool(self.base_trial.tensor("loss").value(step) > self.threshold)
        except Exception as err:  # smdebug raises TensorUnavailableForStep for steps without the scalar
            if type(err).__name__ == "TensorUnavailableForStep":
                return False
            raise


class RuleEvaluationConditionMet(Exception):
    """smdebug's way of saying a rule fired (the evaluator recognises it by name)."""


class WeightNormSmdebug:
    """An smdebug-style rule that raises RuleEvaluationConditionMet when a weight's l2 exceeds `threshold`."""

    def __init__(self, base_trial: Any, threshold: float = 10.0, tensor_regex: str = ".*weight") -> None:
        self.base_trial = base_trial
        self.threshold = float(threshold)
        self.tensor_regex = tensor_regex

    def invoke_at_step(self, step: int) -> bool:
        for name in self.base_trial.tensor_names(regex=self.tensor_regex):
            t = self.base_trial.tensor(name)
            if step in t.steps() and t.reduction_value(step, "l2") > self.threshold:
                raise RuleEvaluationConditionMet(f"{name} l2 above {self.threshold}")
        return False


class NotARule:
    """Neither a Rule nor smdebug-shaped: loading it must fail with a ConfigError."""


class OpaqueState(Rule):
    """Keeps an object that JSON cannot hold in its state: checkpoints must go on without it."""

    name = "opaque_state"

    def check(self, view: StepView) -> list[Finding]:
        return []

    def get_state(self) -> dict[str, Any]:
        return {"thing": object()}


class SeenData(Rule):
    """Records which steps brought tensor statistics and which brought the `loss` scalar."""

    name = "seen_data"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stats_steps: list[int] = []
        self.loss_steps: list[int] = []

    def check(self, view: StepView) -> list[Finding]:
        if view.names:
            self.stats_steps.append(view.step)
        if "loss" in view.scalars:
            self.loss_steps.append(view.step)
        return []


class RowLedger(Rule):
    """Keeps every statistics row it saw in its state, by step and tensor name: what the rules were shown."""

    name = "row_ledger"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rows: dict[str, dict[str, list[float]]] = {}

    def check(self, view: StepView) -> list[Finding]:
        seen = self.rows.setdefault(str(view.step), {})
        for name, row in zip(view.names, view.stats):
            seen[name] = row.tolist()
        return []

    def get_state(self) -> dict[str, Any]:
        return {"rows": self.rows}

    def set_state(self, state: dict[str, Any]) -> None:
        self.rows = dict(state.get("rows", {}))


class Tier1Ledger(Rule):
    """Keeps the histograms, per-unit vectors and per-shard notes of every view it saw, by step: what the rules
    that read Tier-1 data were shown."""

    name = "tier1_ledger"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: dict[str, dict[str, Any]] = {}

    def check(self, view: StepView) -> list[Finding]:
        if view.hists or view.units:
            self.seen[str(view.step)] = {
                "hists": {n: h.tolist() for n, h in view.hists.items()},
                "units": {f"{k}:{n}": v.tolist() for (k, n), v in view.units.items()},
                "per_shard": dict(view.per_shard),
            }
        return []

    def get_state(self) -> dict[str, Any]:
        return {"seen": self.seen}

    def set_state(self, state: dict[str, Any]) -> None:
        self.seen = dict(state.get("seen", {}))
