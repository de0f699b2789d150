"""`unchanged_tensor`: trainable parameters that do not move ("blind zones"), per layer.

A parameter is unchanged at a view when ||dW|| (`update_l2`, measured since the previous saved
step) is at most atol * sqrt(n) + rtol * ||W||, the l2 form of SageMaker's np.allclose test; by
default both are 0, so only an exact standstill counts. It is reported after `num_steps` such
views in a row. Views where no watched parameter moved (lr 0
during warmup, a loss-scaler skipping a step) do not count, so only layers left behind are named.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Collection
from trainguard.rules import base, signals
from trainguard.rules.view import COL, StepView

_WEIGHTS = (Collection.WEIGHTS.value,)


class UnchangedTensor(base.Rule):
    name = "unchanged_tensor"
    summary = "Trainable layers whose parameters stop moving while the others train (frozen by mistake, blind zones)."
    hint = (
        "check that the optimizer was given this parameter (model.parameters() after building every layer), "
        "that it gets a gradient (not detached, not behind a dead unit), and its learning rate"
    )

    class Params(base.Params):
        num_steps: int = Field(
            default=3, ge=1, description="Report after this many evaluated views in a row without a change."
        )
        rtol: float = Field(
            default=0.0,
            ge=0,
            description="Relative tolerance: a change below rtol * ||W|| counts as none (SageMaker: 1e-5; 0 here, "
            "since a converged layer moves by 1e-6 of its norm and is not frozen).",
        )
        atol: float = Field(
            default=0.0,
            ge=0,
            description="Absolute tolerance per element: a change below atol * sqrt(n) counts as none (SageMaker: 1e-8).",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.streak = signals.RowState(0.0)
        self._counting = False

    def check(self, view: StepView) -> list[base.Finding]:
        p: UnchangedTensor.Params = self.params  # type: ignore[assignment]
        rows = self.rows(view, default_collections=_WEIGHTS, trainable=True)
        if not len(rows):
            return []
        upd = view.stats[rows, COL["update_l2"]]
        if p.rtol == 0 and p.atol == 0:
            moved, still = upd > 0, upd == 0
        else:
            tol = p.rtol * view.stats[rows, COL["l2"]] + p.atol * np.sqrt(view.stats[rows, COL["count"]])
            moved, still = upd > tol, upd <= tol  # NaN (not measured) is neither
        if not moved.any():
            return []  # nothing moved (or nothing measured): a skipped step, not a blind zone
        if not still.any() and not self._counting:
            return []  # the common case: every layer moved and no streak is running
        streak = self.streak.align(view, rows)
        streak = np.where(still, streak + 1, np.where(moved, 0.0, streak))
        self.streak.values = streak
        self._counting = bool(streak.any())
        hit = np.flatnonzero(streak >= p.num_steps)
        if not hit.size:
            return []
        i = int(rows[hit[0]])
        name = view.names[i]
        msg = (
            f"{name}: parameter unchanged for {int(streak[hit[0]])} saved steps (||dW|| {base.fmt(upd[hit[0]])}, "
            f"||W|| {base.fmt(view.stats[i, COL['l2']])}) while other layers train {self.where(view)} "
            f"({hit.size} of {len(rows)} trainable tensors)"
        )
        return [
            self.finding(view, msg, tensor=name, value=float(streak[hit[0]]), threshold=float(p.num_steps))
        ]

    def get_state(self) -> dict[str, Any]:
        return {"streak": self.streak.get_state()}

    def set_state(self, state: dict[str, Any]) -> None:
        self.streak.set_state(state.get("streak", {}))
        self._counting = any(v > 0 for v in state.get("streak", {}).values())
