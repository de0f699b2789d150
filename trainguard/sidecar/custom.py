"""Custom rules: `type: python:module:Class`, imported by the evaluator and nowhere else.

A class that subclasses `trainguard.rules.base.Rule` is used as is. A class with SageMaker
Debugger's shape (a constructor taking `base_trial`, and `invoke_at_step(step) -> bool`) is
wrapped by `SmdebugRuleAdapter`, which hands it a small trial over the steps the evaluator has
seen (the last `history_steps`). What that trial supports is listed on `EvaluatedTrial`. The
operator never imports this module: user code runs only inside the evaluator.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
from collections import OrderedDict
from typing import Any

from pydantic import Field

from trainguard.api.enums import Severity
from trainguard.api.rules_config import RuleSpec
from trainguard.errors import ConfigError
from trainguard.rules.base import Finding, Params, Rule
from trainguard.rules.step_view import COL, StepView

PREFIX = "python:"


def load_class(type_: str, *, entry: str) -> type:
    """Import `python:module:Class` and return the class; ConfigError naming `entry` on any failure."""
    if not type_.startswith(PREFIX) or type_.count(":") != 2:
        raise ConfigError(f"{entry}: custom rule type {type_!r} must read python:module:Class")
    _, module_name, class_name = type_.split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:
        raise ConfigError(
            f"{entry}: cannot import module {module_name!r} ({type(err).__name__}: {err}); "
            f"make it importable in the evaluator (PYTHONPATH or an installed package)"
        ) from err
    cls = getattr(module, class_name, None)
    if not inspect.isclass(cls):
        raise ConfigError(f"{entry}: module {module_name!r} has no class {class_name!r}")
    return cls


def is_smdebug_style(cls: type) -> bool:
    """Return whether `cls` looks like an smdebug rule: `invoke_at_step` and a `base_trial` argument."""
    if not callable(getattr(cls, "invoke_at_step", None)):
        return False
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False
    return "base_trial" in params


def reduction(row: dict[str, float], name: str, *, abs_: bool) -> float:
    """Return smdebug's reduction `name` (of |x| with `abs_`) from one tensor's statistic columns."""
    count = row["count"]
    if name == "l2":
        return row["l2"]
    if name in ("mean", "min", "max", "std", "variance", "sum", "l1") and abs_:
        if name == "mean":
            return row["abs_mean"]
        if name in ("sum", "l1"):
            return row["abs_mean"] * count
        if name == "max":
            return max(abs(row["min"]), abs(row["max"]))
    elif name in ("mean", "min", "max", "std"):
        return row[name]
    elif name == "variance":
        return row["std"] ** 2
    elif name == "sum":
        return row["mean"] * count
    elif name == "l1":
        return row["abs_mean"] * count
    raise ValueError(
        f"reduction {name!r} (abs={abs_}) is not available from TrainGuard statistics; "
        "use one of min, max, mean, std, variance, sum, l1, l2 (abs: mean, max, sum, l1, l2)"
    )


class TensorUnavailableForStep(Exception):
    """Raised like smdebug's exception of the same name when a step was not seen or was forgotten."""


class EvaluatedTensor:
    """smdebug's `trial.tensor(name)`: reductions of a tensor, values of a scalar."""

    def __init__(self, trial: EvaluatedTrial, name: str) -> None:
        self.trial = trial
        self.name = name

    def steps(self) -> list[int]:
        return [s for s, rec in self.trial._steps.items() if self.name in rec[0] or self.name in rec[1]]

    def value(self, step_num: int, mode: Any = None) -> float:
        """A scalar's value. Tensors' full values are never captured; use `reduction_value`."""
        _stats, scalars = self.trial._record(step_num, self.name)
        if self.name in scalars:
            return scalars[self.name]
        raise TensorUnavailableForStep(
            f"{self.name}: full tensor values are not captured by TrainGuard; use reduction_value(step, 'l2'|'mean'|...)"
        )

    def reduction_value(
        self, step_num: int, reduction_name: str, mode: Any = None, worker: Any = None, abs: bool = False
    ) -> float:
        stats, scalars = self.trial._record(step_num, self.name)
        if self.name in scalars:
            v = scalars[self.name]
            return float(math.fabs(v) if abs else v)
        return reduction(stats[self.name], reduction_name, abs_=abs)

    def reduction_values(
        self, step_num: int, mode: Any = None, worker: Any = None
    ) -> dict[tuple[str, bool], float]:
        out: dict[tuple[str, bool], float] = {}
        for name in ("min", "max", "mean", "std", "variance", "sum", "l1", "l2"):
            for abs_ in (False, True):
                try:
                    out[(name, abs_)] = self.reduction_value(step_num, name, abs=abs_)
                except ValueError:
                    continue
        return out


class EvaluatedTrial:
    """A minimal smdebug trial over what the evaluator has seen of one rank.

    Supported: `steps()`, `tensor_names(collection=..., regex=...)`, `has_tensor(name)`,
    `tensor(name).steps()`, `.value(step)` for scalars, `.reduction_value(step, name, abs=...)` with
    min, max, mean, std, variance, sum, l1, l2 (abs: mean, max, sum, l1, l2), `.reduction_values(step)`.
    Not supported: full tensor values, modes other than the merged view, workers other than this rank.
    Only the newest `history_steps` steps are kept.
    """

    def __init__(self, *, history_steps: int = 1000) -> None:
        self.history_steps = history_steps
        self._steps: OrderedDict[int, tuple[dict[str, dict[str, float]], dict[str, float]]] = OrderedDict()
        self._collections: dict[str, str] = {}

    def add(self, view: StepView) -> None:
        """Remember one step's statistics and scalars."""
        columns = ("count", "min", "max", "mean", "std", "abs_mean", "l2")
        stats = {
            name: {c: float(view.stats[i, COL[c]]) for c in columns} for i, name in enumerate(view.names)
        }
        for m in view.meta:
            self._collections[m.name] = m.collection
        scalars = dict(view.scalars)
        scalars.update(view.eval_scalars)
        for name in scalars:
            self._collections.setdefault(name, "losses" if "loss" in name.lower() else "metrics")
        old_stats, old_scalars = self._steps.get(view.step, ({}, {}))
        old_stats.update(stats)
        old_scalars.update(scalars)
        self._steps[view.step] = (old_stats, old_scalars)
        self._steps.move_to_end(view.step)
        while len(self._steps) > self.history_steps:
            self._steps.popitem(last=False)

    def _record(self, step: int, name: str) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
        rec = self._steps.get(int(step))
        if rec is None or (name not in rec[0] and name not in rec[1]):
            raise TensorUnavailableForStep(
                f"{name} has no data at step {step} (seen steps are kept for {self.history_steps})"
            )
        return rec

    def steps(self, mode: Any = None) -> list[int]:
        return list(self._steps)

    def tensor_names(self, *, collection: str | None = None, regex: str | None = None, **_: Any) -> list[str]:
        rx = re.compile(regex) if regex else None
        return sorted(
            n
            for n, c in self._collections.items()
            if (collection is None or c == collection) and (rx is None or rx.search(n))
        )

    def has_tensor(self, name: str) -> bool:
        return name in self._collections

    def tensor(self, name: str) -> EvaluatedTensor:
        if name not in self._collections:
            raise KeyError(
                f"tensor {name!r} was never seen; seen: {', '.join(sorted(self._collections)[:20])}"
            )
        return EvaluatedTensor(self, name)


class SmdebugParams(Params):
    """Parameters of an adapted smdebug rule: the rule's own keyword arguments plus the common ones."""

    model_config = Params.model_config | {"extra": "allow"}
    history_steps: int = Field(
        default=1000, ge=1, description="Steps the trial keeps for the rule to look back on."
    )


_ADAPTER_OWN = frozenset({"start_step", "every", "trigger_k", "trigger_n", "severity", "history_steps"})


class SmdebugRuleAdapter(Rule):
    """Runs an smdebug-style rule class inside the evaluator.

    The class is built as `cls(base_trial=trial, **params)` with the params the rules file gives
    (minus our common ones). `invoke_at_step(step)` returning True, or raising an exception
    named `RuleEvaluationConditionMet` (smdebug's way), is one finding at that step. The wrapped
    object's own attributes are not checkpointed: after a restart it starts with an empty trial.
    """

    name = "smdebug"
    Params = SmdebugParams
    default_severity = Severity.WARNING

    def __init__(self, cls: type, spec: RuleSpec) -> None:
        super().__init__(
            spec.params, instance_name=spec.key, collections=spec.collections, tensors=spec.tensors
        )
        # Every parameter but the evaluator's own scheduling ones goes to the wrapped class, including
        # smdebug's usual `tensor_regex`/`collection_names`, which our Params also understand.
        own = {k: v for k, v in spec.params.items() if k not in _ADAPTER_OWN}
        self.trial = EvaluatedTrial(history_steps=self.params.history_steps)  # type: ignore[attr-defined]
        self.wrapped = cls(base_trial=self.trial, **own)
        self.doc_hint = f"see the documentation of {cls.__module__}.{cls.__qualname__}"

    def check(self, view: StepView) -> list[Finding]:
        self.trial.add(view)
        try:
            met = bool(self.wrapped.invoke_at_step(view.step))
        except Exception as err:
            if type(err).__name__ != "RuleEvaluationConditionMet":
                raise
            return [
                self.finding(
                    view,
                    f"{self.instance_name}: condition met at step {view.step} ({err})",
                    hint=self.doc_hint,
                )
            ]
        if met:
            return [
                self.finding(
                    view,
                    f"{self.instance_name}: condition met at step {view.step} on rank {view.rank}",
                    hint=self.doc_hint,
                )
            ]
        return []


def factory(spec: RuleSpec, *, entry: str) -> type:
    """Return the class of a custom rule entry, checking that it is a Rule or smdebug-shaped."""
    cls = load_class(spec.type, entry=entry)
    if issubclass(cls, Rule) or is_smdebug_style(cls):
        return cls
    raise ConfigError(
        f"{entry}: {spec.type} is neither a subclass of trainguard.rules.base.Rule nor an smdebug-style rule "
        f"(a constructor taking base_trial and invoke_at_step(step) -> bool)"
    )
