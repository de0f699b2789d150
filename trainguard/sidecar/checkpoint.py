"""The evaluator's checkpoint: where it is in each rank, each rule's state, and what it reported.

Written by the evaluator (`checkpointer.py`) after each evaluated segment to
`run_format.evaluator_state_key(ranks)` in the run's own store with one PUT (atomic: a reader sees
the old or the new document, never half).
A restarted evaluator loads it, lists after each rank's `last_key`, restores every rule with
`load_state_dict`, and knows which verdict transitions were already emitted, so it neither
repeats an alert nor skips a step. Metrics counters are not kept: Prometheus handles resets.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trainguard.store import errors, run_format
from trainguard.store.backends import Store

log = logging.getLogger(__name__)

MAX_FINDINGS_PER_RULE = 100
"""Findings kept per rule (the first ones; later ones are counted in metrics only, so a count read from a
checkpoint is a floor once a rule reached it). Bounds memory and the checkpoint of a rule that fires on every
step of a long run. Here, beside the document, so that `trainguard ls` reads it without the evaluator."""

STATE_VERSION = 1
"""Bumped when the document changes incompatibly; an evaluator ignores other versions and starts fresh."""


class _Doc(BaseModel):
    model_config = ConfigDict(extra="ignore")


class StatusDoc(_Doc):
    """A rule's reported status (the last transition emitted)."""

    state: str
    step: int | None = None
    rank: int | None = None
    message: str = ""
    time: float | None = None
    severity: str | None = None
    stop_emitted: bool = False
    checked: bool = True
    """False for a rule that ended without ever getting what it reads ("not checked")."""


class RankPosition(_Doc):
    """How far the evaluator got in one rank, and the state of each rule instance there."""

    last_key: str | None = Field(
        default=None, description="The last segment key read; listing resumes after it."
    )
    last_step: int | None = Field(default=None, description="The last step evaluated.")
    ended: bool = Field(
        default=False, description="The rank's END marker was seen and every segment evaluated."
    )
    rules: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Rule name -> Rule.state_dict()."
    )
    statuses: dict[str, StatusDoc] = Field(
        default_factory=dict,
        description="Rule name -> its state on this rank (what the rank's status report says).",
    )
    held_from: int | None = Field(
        default=None,
        description="The first step read but held back from the rules, waiting for other ranks' parts of its "
        "sharded tensors (`shard_merge`); a restart cannot judge the held steps and reports them as a data gap.",
    )


class EvaluatorState(_Doc):
    """`evaluator/<rank-NNNNN|ranks-NNNNN_NNNNN...|all>/state.json`."""

    version: int = STATE_VERSION
    ranks: dict[str, RankPosition] = Field(default_factory=dict, description="By rank number as a string.")
    statuses: dict[str, StatusDoc] = Field(default_factory=dict, description="By rule name.")
    findings: list[dict[str, Any]] = Field(
        default_factory=list, description="Kept findings (bounded per rule)."
    )
    stop_requested: bool = False


def load(store: Store, key: str) -> EvaluatorState | None:
    """Return the saved state, or None when there is none or it cannot be used (logged)."""
    try:
        raw = store.get(key)
    except errors.NotFound:
        return None
    try:
        state = EvaluatorState.model_validate(json.loads(raw))
    except (UnicodeDecodeError, json.JSONDecodeError, ValidationError, RecursionError) as err:
        log.warning(
            "trainguard: checkpoint %s/%s is damaged (%s); evaluating from the start", store.uri, key, err
        )
        return None
    if state.version != STATE_VERSION:
        log.warning(
            "trainguard: checkpoint %s/%s has version %s, this evaluator writes %s; evaluating from the start",
            store.uri, key, state.version, STATE_VERSION,
        )  # fmt: skip
        return None
    return state


def _plain(value: Any) -> Any:
    # Rules should keep JSON-able state; numpy scalars and arrays are converted rather than refused.
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"rule state holds a {type(value).__name__}, which cannot be saved as JSON")


def unsavable(rule_state: dict[str, Any]) -> str | None:
    """Return why one rule's state cannot be saved as JSON, or None when it can."""
    try:
        json.dumps(rule_state, default=_plain)
    except (TypeError, ValueError) as err:
        return str(err)
    return None


def save(store: Store, key: str, state: EvaluatorState) -> None:
    """Write the state with one atomic PUT; TypeError if a rule's state is not JSON-able."""
    store.put(key, json.dumps(state.model_dump(mode="python"), default=_plain).encode())


def key_for(ranks: int | Sequence[int] | None) -> str:
    """The checkpoint key of an evaluator that follows `ranks` (one rank, a pod's ranks, or None: all)."""
    return run_format.evaluator_state_key(ranks)
