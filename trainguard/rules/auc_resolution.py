"""`auc_resolution`: too many positive-negative pairs share a bucket for the AUC to be trusted.

Accumulates a stream's bucket counts and reads the tie mass (pairs in the same bucket / all
pairs): the bucketed AUC is exact only to within half of it. Fires once per stream when the
tie mass exceeds `max_tie_mass`, e.g. when scores collapse onto one value.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import RuleCategory, Severity
from trainguard.rules import auc
from trainguard.rules.base import Finding, Params, Rule
from trainguard.rules.step_view import StepView


class AucResolutionParams(Params):
    streams: str = Field(default=".*", description="Regular expression of prediction streams to watch.")
    mode: str = Field(default="train", description="train or eval predictions.")
    max_tie_mass: float = Field(
        default=0.02, gt=0, le=1, description="Largest acceptable share of tied pairs."
    )
    min_pairs: float = Field(
        default=1e4, ge=0, description="Judge only once this many positive-negative pairs were seen."
    )


class AucResolution(Rule):
    name = "auc_resolution"
    category = RuleCategory.PREDICTIONS
    Params = AucResolutionParams
    default_severity = Severity.INFO
    hint = "the scores sit in too few buckets: increase the bucket count, or check that the model output is not constant"

    def __init__(self, params: AucResolutionParams | dict[str, Any] | None = None, **kw: Any) -> None:
        super().__init__(params, **kw)
        self._totals: dict[str, np.ndarray] = {}
        self._reported: set[str] = set()

    def check(self, view: StepView) -> list[Finding]:
        p: AucResolutionParams = self.params  # type: ignore[assignment]
        source = view.predictions if p.mode == "train" else view.eval_predictions
        rx = re.compile(p.streams)
        out: list[Finding] = []
        for name, counts in source.items():
            if not rx.search(name):
                continue
            c = np.asarray(counts[:2], np.float64)
            self._totals[name] = c if name not in self._totals else self._totals[name] + c
            total = self._totals[name]
            if name in self._reported or total[0].sum() * total[1].sum() < p.min_pairs:
                continue
            est = auc.auc_from_counts(total)
            tie_mass = 2 * est.error_bound
            if tie_mass > p.max_tie_mass:
                self._reported.add(name)
                out.append(
                    self.finding(
                        view,
                        f"{name}: {tie_mass:.1%} of positive-negative pairs share a bucket (limit {p.max_tie_mass:.1%}) "
                        f"at step {view.step} on rank {view.rank}, so the AUC {est.auc:.4f} is only known to "
                        f"+/-{est.error_bound:.4f}",
                        tensor=name,
                        value=tie_mass,
                        threshold=p.max_tie_mass,
                    )
                )
        return out

    def get_state(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reported": sorted(self._reported), "totals": {}}
        for name, t in self._totals.items():
            nz = np.nonzero(t.sum(axis=0))[0]
            out["totals"][name] = {"buckets": int(t.shape[1]), "nz": nz.tolist(), "values": t[:, nz].tolist()}
        return out

    def set_state(self, state: dict[str, Any]) -> None:
        self._reported = set(state.get("reported", []))
        self._totals = {}
        for name, d in state.get("totals", {}).items():
            t = np.zeros((2, d["buckets"]))
            if d["nz"]:
                t[:, d["nz"]] = np.asarray(d["values"])
            self._totals[name] = t
