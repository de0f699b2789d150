"""The rule contract: `Rule`, its `Params`, and the `Finding` it returns.

A rule is a small class with pydantic parameters, explicit state that round-trips through
`state_dict()`/`load_state_dict()`, and a pure `update(view) -> list[Finding]`. No I/O, no
logging, no clock: step and time come in the view. Scheduling (`start_step`, `every`) and
debouncing (k of n) are applied here by `Rule.update`, so subclasses write only `check`.

A view with no data at all (no tensors, scalars or units) is a *heartbeat*: the evaluator sends
`StepView(step=<last step seen>, rank=r, wall_time=<now>)` while no new step arrives. Only rules
that set `wants_heartbeat` (stalled_training) see it; for the others it changes nothing.
"""

from __future__ import annotations

import abc
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from trainguard.api.enums import Action, RuleCategory, Severity
from trainguard.rules.step_view import StepView


@dataclass(frozen=True)
class Finding:
    """One triggered condition, as a sentence with numbers and a hint of what to try."""

    rule: str
    severity: Severity
    step: int
    message: str
    rank: int = 0
    tensor: str | None = None
    hint: str = ""
    value: float | None = None
    threshold: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["severity"] = self.severity.value
        return d


class Params(BaseModel):
    """Parameters common to every rule. Subclasses add their own fields with descriptions."""

    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=False)

    start_step: int = Field(default=0, ge=0, description="Ignore steps before this one.")
    every: int = Field(default=1, ge=1, description="Evaluate on every Nth view the rule receives.")
    trigger_k: int = Field(default=1, ge=1, description="Debounce: trigger when the condition held on k ...")
    trigger_n: int = Field(default=1, ge=1, description="... of the last n evaluations.")
    severity: Severity | None = Field(default=None, description="Override the rule's default severity.")
    collection_names: list[str] | None = Field(
        default=None,
        description="SageMaker Debugger's name for the collections watched (list or comma-separated string); "
        "the rule entry's `collections` takes precedence.",
    )
    tensor_regex: list[str] | None = Field(
        default=None,
        description="SageMaker Debugger's name for regular expressions of tensor names watched (list or "
        "comma-separated string); the rule entry's `tensors` takes precedence.",
    )

    @field_validator("collection_names", "tensor_regex", mode="before")
    @classmethod
    def _comma_list(cls, v: object) -> object:
        # SageMaker passes RuleParameters as a string map, so "weights,gradients" must work too.
        if isinstance(v, str):
            return [x.strip() for x in v.split(",") if x.strip()] or None
        return v


def trigger_k(default: int) -> Any:
    """A rule's own default for `trigger_k` (same meaning as in `Params`)."""
    return Field(default=default, ge=1, description="Debounce: trigger when the condition held on k ...")


def trigger_n(default: int) -> Any:
    """A rule's own default for `trigger_n` (same meaning as in `Params`)."""
    return Field(default=default, ge=1, description="... of the last n evaluations.")


def fmt(x: float | None) -> str:
    """Format a number for a finding's sentence: 4.1e5, 1e-7, 0.031, 12, nan."""
    if x is None:
        return "n/a"
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0 or 1e-3 <= abs(x) < 1e4:
        return f"{x:.0f}" if abs(x) >= 100 or x == int(x) else f"{x:.3g}"
    mant, exp = f"{x:.1e}".split("e")
    return f"{mant.rstrip('0').rstrip('.')}e{int(exp)}"


_BaseParams = Params
_NO_ROWS = np.zeros(0, np.int64)


class Rule(abc.ABC):
    """Base class of all rules. Subclasses set `name`, `Params`, `default_severity` and write `check`."""

    name: ClassVar[str] = ""
    Params: ClassVar[type[Params]] = Params
    default_severity: ClassVar[Severity] = Severity.WARNING
    hint: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    """One line on what the rule detects (`trainguard rules list`, the docs' rules reference)."""
    category: ClassVar[RuleCategory] = RuleCategory.WATCHPOINT
    """What the rule looks at (groups the rules in `trainguard rules list` and the docs)."""
    default_action: ClassVar[Action | None] = None
    """The rule's action in the default set, what runs without a rules file; None: not in that set.
    The only place it is declared: `dev/gen_docs.py` copies the set into `trainguard/api/_default_set.py`
    for the operator, which never imports the rules (a test fails while that copy is stale)."""
    example_params: ClassVar[Mapping[str, Any]] = {}
    """Parameters under which the rule reports its symptom on a short run (600 steps, the fault from step 300):
    set only by rules that must be told what to watch, or whose defaults wait longer. The state round-trip
    test (`tests/rules/test_rule_state_round_trip.py`) runs every registered rule with them."""
    needs: ClassVar[str] = ""
    """What the rule reads that a run may not record at all ("eval loss"); with `has_input`, it lets the end
    of a run say "not checked: no eval loss recorded" instead of "no issues" for a rule that never got it."""
    every_step: ClassVar[bool] = False
    """True for rules that read the train scalars of every step (format 2.4 keeps them at every step); False: at
    saved steps only, as every rule did before, so that windows and debouncing counted in views keep their
    length in steps (a view between saved steps reaches such a rule without its train scalars, or not at all:
    `StepView.at_saved_steps`)."""
    wants_heartbeat: ClassVar[bool] = False
    """True for rules that must also see heartbeat views (views without any data)."""
    training_views_only: ClassVar[bool] = False
    """True for rules that read training data only: a view that carries nothing else than eval
    scalars or predictions (an eval point between saved steps) is not passed to `check` nor counted
    by `every` or the k-of-n history, which would otherwise depend on where the eval points fall
    (at save_interval 10 with an eval point every 25 steps, 5 saved steps in a row never come)."""

    def __init__(
        self,
        params: _BaseParams | dict[str, Any] | None = None,
        *,
        instance_name: str | None = None,
        collections: Sequence[str] | None = None,
        tensors: Sequence[str] | None = None,
    ) -> None:
        self.params = params if isinstance(params, self.Params) else self.Params.model_validate(params or {})
        self.instance_name = instance_name or self.name
        collections = collections or self.params.collection_names
        tensors = tensors or self.params.tensor_regex
        self.collections = list(collections) if collections else None
        self.pattern = re.compile("|".join(f"(?:{t})" for t in tensors)) if tensors else None
        self._seen = 0
        self._fed = not self.needs
        self._history: list[bool] = []
        self._at_once = False
        p = self.params
        self._schedule = (p.start_step, p.every, p.trigger_k, p.trigger_n)
        # rows() is called on every view; the catalogue rarely changes, so its answer is cached
        # per (names, filters) and recomputed only when the view's tensor names change.
        self._rows_names: tuple[str, ...] | None = None
        self._rows_cache: dict[tuple[object, ...], np.ndarray] = {}

    @property
    def severity(self) -> Severity:
        return self.params.severity or self.default_severity

    # --- to be written by subclasses ----------------------------------------------------
    @abc.abstractmethod
    def check(self, view: StepView) -> list[Finding]:
        """Return the findings at this view, ignoring debouncing and scheduling."""

    def applies(self, view: StepView) -> bool:
        """Whether `view` carries what this rule reads. Views it does not apply to are not counted
        by `every` or the k-of-n history (a Tier-1 rule is debounced over Tier-1 steps only)."""
        return True

    def has_input(self, view: StepView) -> bool:
        """Whether `view` carries the data of `needs` (asked until one view does; it leaves scheduling alone)."""
        return True

    @property
    def checked(self) -> bool:
        """Whether any view so far carried what the rule reads (its `needs`)."""
        return self._fed

    def get_state(self) -> dict[str, Any]:
        """Return the subclass's own state as JSON-able values (override with `set_state`)."""
        return {}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore what `get_state` returned."""

    # --- shared machinery -----------------------------------------------------------------
    def rows(
        self,
        view: StepView,
        *,
        default_collections: Sequence[str] | None = None,
        trainable: bool | None = None,
    ) -> np.ndarray:
        """Rows of the view this rule instance watches (its `collections`/`tensors`, else the defaults)."""
        if not view.names:
            return _NO_ROWS  # a scalar-only view: keep the cache for the next view with statistics
        if self._rows_names is not view.names and self._rows_names != view.names:
            self._rows_names = view.names
            self._rows_cache = {}
        key = (tuple(default_collections) if default_collections else None, trainable)
        rows = self._rows_cache.get(key)
        if rows is None:
            rows = view.rows(
                collections=self.collections or default_collections,
                pattern=self.pattern,
                trainable=trainable,
            )
            self._rows_cache[key] = rows
        return rows

    def watches(
        self, name: str, collection: str | None = None, *, default_collections: Sequence[str] | None = None
    ) -> bool:
        """Whether a tensor outside `stats` (a units vector, a scalar) is watched by this instance."""
        colls = self.collections or default_collections
        if colls is not None and collection is not None and collection not in colls:
            return False
        return self.pattern is None or self.pattern.search(name) is not None

    def where(self, view: StepView) -> str:
        """`at step 1200 on rank 3`: the end of every finding's first clause."""
        return f"at step {view.step} on rank {view.rank}"

    def finding(self, view: StepView, message: str, *, tensor: str | None = None, hint: str | None = None,
                value: float | None = None, threshold: float | None = None) -> Finding:  # fmt: skip
        hint = self.hint if hint is None else hint
        return Finding(
            rule=self.instance_name,
            severity=self.severity,
            step=view.step,
            rank=view.rank,
            tensor=tensor,
            message=f"{message}; {hint}" if hint else message,
            hint=hint,
            value=value,
            threshold=threshold,
        )

    def observe_eval(self, view: StepView) -> None:
        """Read an eval-only view that a `training_views_only` rule is not checked on (nothing by default): where a
        rule weighs held-out evidence, it gathers it here without counting the view for `every` or k-of-n."""

    def at_once(self, finding: Finding) -> Finding:
        """Mark a finding of this `check` call as exempt from k-of-n debouncing: for a one-off event
        so far outside anything healthy that it cannot be noise (and would never recur k times)."""
        self._at_once = True
        return finding

    def update(self, view: StepView) -> list[Finding]:
        """Apply scheduling and k-of-n debouncing around `check`; return findings to report."""
        # the schedule is read from plain attributes: this runs for every rule on every step
        start, every, k, n = self._schedule
        if view.step < start:
            return []
        if not view.names and not self.wants_heartbeat and is_heartbeat(view):
            return []
        if not view.saved and not self.every_step:
            saved = view.at_saved_steps()
            if saved is None:
                return []
            view = saved
        if self.training_views_only and not view.names and is_eval_only(view):
            self.observe_eval(view)
            return []
        if not self.applies(view):
            return []
        if not self._fed:
            self._fed = self.has_input(view)
        self._seen += 1
        if every > 1 and (self._seen - 1) % every:
            return []
        self._at_once = False
        found = self.check(view)
        if k <= 1 and n <= 1:
            return found
        history = self._history
        history.append(bool(found))
        if len(history) > n:
            del history[0]
        return found if found and (self._at_once or sum(history) >= k) else []

    def state_dict(self) -> dict[str, Any]:
        return {"seen": self._seen, "fed": self._fed, "history": list(self._history), "own": self.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._seen = int(state.get("seen", 0))
        self._fed = bool(state.get("fed", self._seen > 0 or not self.needs))
        self._history = [bool(x) for x in state.get("history", [])]
        self.set_state(state.get("own", {}))


def is_eval_only(view: StepView) -> bool:
    """True for a view that carries eval scalars or predictions and nothing of training."""
    return not (view.names or view.scalars or view.units or view.hists or view.predictions) and bool(
        view.eval_scalars or view.eval_predictions
    )


def is_heartbeat(view: StepView) -> bool:
    """True for a view that carries no data, only a step and a wall time."""
    return not (
        view.names
        or view.scalars
        or view.eval_scalars
        or view.units
        or view.hists
        or view.predictions
        or view.eval_predictions
    )
