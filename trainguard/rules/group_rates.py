"""Each optimizer parameter group's learning rate, so rules judge a parameter by its own group's rate.

The PyTorch hook records a group's hyperparameters (train scalars `group/<k>.<g>/lr`, ...) at the first saved
step after the optimizer's registration and again where one changed, and names each parameter's group in the
catalogue (`TensorMeta.param_group`, format 2.5). `GroupRates` keeps each group's latest and highest rate, so a
rule can tell a parameter frozen by design (its group's rate is 0: a frozen backbone, layer-wise decay down to 0,
a schedule that took that group near 0) from one whose update is lost, and compare update sizes across groups
relative to each group's own rate. Runs without these records (older runs, other frameworks) have no groups:
every answer is then "not known", and rules behave as before.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from trainguard.rules.step_view import StepView


class GroupRates:
    """The latest and the highest learning rate recorded for each parameter group."""

    def __init__(self) -> None:
        self.current: dict[str, float] = {}
        self.peak: dict[str, float] = {}

    def push(self, view: StepView) -> None:
        """Read the group rates a view records (only where one changed: the others hold)."""
        if not view.scalars:
            return
        for key, setting, x in view.group_settings():
            if setting == "lr":
                self.current[key] = x
                self.peak[key] = max(self.peak.get(key, x), x)

    def rate(self, view: StepView, row: int) -> float | None:
        """The learning rate of the group holding the parameter of `row`, None when not recorded."""
        key = view.meta[row].param_group
        return None if key is None else self.current.get(key)

    def at_rest(self, view: StepView, row: int, lowered: float | None = None) -> bool:
        """Whether the group of the parameter of `row` has rate 0 (or, with `lowered`, below that fraction of the
        group's peak) while another group trains: its optimizer does not move it, by the script's choice. Every
        group at rest is no choice but a run that does not train (a learning rate floored to 0, a warm-up at 0
        never stepped): no parameter is then at rest by design, and the rules judge it as before."""
        key = view.meta[row].param_group
        lr = None if key is None else self.current.get(key)
        if key is None or lr is None or not self._training(lowered):
            return False
        return self._resting(key, lr, lowered)

    def _resting(self, key: str, lr: float, lowered: float | None) -> bool:
        return lr <= 0 or (lowered is not None and lr < lowered * self.peak[key])

    def _training(self, lowered: float | None) -> bool:
        """Whether some group's rate is above 0 (and, with `lowered`, not lowered)."""
        return any(not self._resting(k, lr, lowered) for k, lr in self.current.items())

    def by_design(self, view: StepView, rows: np.ndarray, lowered: float | None = None) -> np.ndarray:
        """`at_rest` for each of `rows`."""
        if not self.current or not self._training(lowered):
            return np.zeros(len(rows), dtype=bool)
        return np.asarray([self.at_rest(view, int(i), lowered) for i in rows], dtype=bool)

    def relative(self, view: StepView, rows: np.ndarray) -> np.ndarray:
        """Per row: its group's rate over the highest current rate of the groups among `rows` (1 where not known),
        to compare update sizes across groups as if each had that rate."""
        rates = np.asarray([self.rate(view, int(i)) or math.nan for i in rows], dtype=np.float64)
        known = np.isfinite(rates) & (rates > 0)
        if not known.any():
            return np.ones(len(rows))
        return np.where(known, rates / rates[known].max(), 1.0)

    def get_state(self) -> dict[str, Any]:
        return {"group_lr": dict(self.current), "group_lr_peak": dict(self.peak)}

    def set_state(self, state: dict[str, Any]) -> None:
        self.current = {k: float(v) for k, v in state.get("group_lr", {}).items()}
        self.peak = {k: float(v) for k, v in state.get("group_lr_peak", {}).items()}
