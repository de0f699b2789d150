"""The rule contract: `Rule`, its `Params`, and the `Finding` it returns.

A rule is a small class with pydantic parameters, explicit state that round-trips through
`state_dict()`/`load_state_dict()`, and a pure `update(view) -> list[Finding]`. No I/O, no
logging, no clock: step and time come in the view. Scheduling (`start_step`, `every`) and
debouncing (k of n) are applied here by `Rule.__call__`, so subclasses write only `check`.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from trainguard.api.enums import Severity
from trainguard.rules.view import StepView


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


class Rule(abc.ABC):
    """Base class of all rules. Subclasses set `name`, `Params`, `default_severity` and write `check`."""

    name: ClassVar[str] = ""
    Params: ClassVar[type[Params]] = Params
    default_severity: ClassVar[Severity] = Severity.WARNING
    hint: ClassVar[str] = ""

    def __init__(
        self,
        params: Params | dict[str, Any] | None = None,
        *,
        instance_name: str | None = None,
        collections: Sequence[str] | None = None,
        tensors: Sequence[str] | None = None,
    ) -> None:
        self.params = params if isinstance(params, self.Params) else self.Params.model_validate(params or {})
        self.instance_name = instance_name or self.name
        self.collections = list(collections) if collections else None
        self.pattern = re.compile("|".join(f"(?:{t})" for t in tensors)) if tensors else None
        self._seen = 0
        self._history: list[bool] = []

    @property
    def severity(self) -> Severity:
        return self.params.severity or self.default_severity

    # --- to be written by subclasses ----------------------------------------------------
    @abc.abstractmethod
    def check(self, view: StepView) -> list[Finding]:
        """Return the findings at this view, ignoring debouncing and scheduling."""

    def get_state(self) -> dict[str, Any]:
        """Return the subclass's own state as JSON-able values (override with `set_state`)."""
        return {}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore what `get_state` returned."""

    # --- shared machinery -----------------------------------------------------------------
    def rows(self, view: StepView, *, default_collections: Sequence[str] | None = None, trainable: bool | None = None):  # type: ignore[no-untyped-def]
        """Rows of the view this rule instance watches (its `collections`/`tensors`, else the defaults)."""
        return view.rows(
            collections=self.collections or default_collections,
            pattern=self.pattern,
            trainable=trainable,
        )

    def finding(self, view: StepView, message: str, *, tensor: str | None = None, hint: str | None = None,
                value: float | None = None, threshold: float | None = None) -> Finding:  # fmt: skip
        return Finding(
            rule=self.instance_name,
            severity=self.severity,
            step=view.step,
            rank=view.rank,
            tensor=tensor,
            message=message,
            hint=self.hint if hint is None else hint,
            value=value,
            threshold=threshold,
        )

    def update(self, view: StepView) -> list[Finding]:
        """Apply scheduling and k-of-n debouncing around `check`; return findings to report."""
        p = self.params
        if view.step < p.start_step:
            return []
        self._seen += 1
        if (self._seen - 1) % p.every:
            return []
        found = self.check(view)
        if p.trigger_k <= 1 and p.trigger_n <= 1:
            return found
        self._history = (self._history + [bool(found)])[-p.trigger_n :]
        return found if found and sum(self._history) >= p.trigger_k else []

    def state_dict(self) -> dict[str, Any]:
        return {"seen": self._seen, "history": list(self._history), "own": self.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._seen = int(state.get("seen", 0))
        self._history = [bool(x) for x in state.get("history", [])]
        self.set_state(state.get("own", {}))
