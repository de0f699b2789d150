"""`auc_drop`: the decayed AUC of a prediction stream fell well below its own longer-horizon average.

Keeps decayed bucket counts per stream (half-life `half_life_steps`), reads the decayed AUC and
its Hanley-McNeil standard error from the effective counts, and compares it with an exponential
average of itself over `baseline_half_life_steps`. Fires when AUC < baseline - `num_se` * SE,
after a warm-up and with enough effective positives, so noise on small batches stays quiet.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import Field

from trainguard.api.enums import Action, RuleCategory, Severity
from trainguard.rules import auc, shared
from trainguard.rules.base import Finding, Params, Rule
from trainguard.rules.step_view import StepView


class AucDropParams(Params):
    streams: str = Field(
        default=".*", description="Regular expression of prediction streams to watch (pred/<name>...)."
    )
    mode: str = Field(default="train", description="train or eval predictions.")
    half_life_steps: float = Field(default=200.0, gt=0, description="Half-life of the decayed AUC, in steps.")
    baseline_half_life_steps: float = Field(
        default=2000.0,
        gt=0,
        description="Half-life of the average the decayed AUC is compared with, in steps.",
    )
    num_se: float = Field(
        default=4.0, gt=0, description="How many standard errors below the baseline is a drop."
    )
    min_drop: float = Field(
        default=0.01, ge=0, description="Ignore drops smaller than this absolute AUC difference."
    )
    min_effective_positives: float = Field(
        default=50.0, ge=0, description="Do not judge with fewer effective positives."
    )
    warmup_steps: int = Field(
        default=0, ge=0, description="Steps after the first record before judging; 0 = 2 half-lives."
    )
    trigger_k: int = Field(default=3, ge=1, description="Debounce: drops on k ...")
    trigger_n: int = Field(default=5, ge=1, description="... of the last n evaluations.")


class _Stream:
    def __init__(self, p: AucDropParams) -> None:
        self.counts = auc.DecayedCounts(p.half_life_steps)
        self.baseline: float | None = None
        self.first_step: int | None = None
        self.last_step: int | None = None


class AucDrop(Rule):
    name = "auc_drop"
    category = RuleCategory.PREDICTIONS
    default_action = Action.NOTIFY
    needs = "predictions with labels"
    summary = (
        "The decayed AUC of a prediction stream (`pred/<name>`) fell more than `num_se` standard errors "
        "and `min_drop` below its longer-horizon average."
    )
    Params = AucDropParams
    default_severity = Severity.WARNING
    hint = "check for a data or label shift, a bad checkpoint or a learning-rate change around this step"

    def __init__(self, params: AucDropParams | dict[str, Any] | None = None, **kw: Any) -> None:
        super().__init__(params, **kw)
        self._streams: dict[str, _Stream] = {}

    def has_input(self, view: StepView) -> bool:
        p: AucDropParams = self.params  # type: ignore[assignment]
        return bool(view.predictions if p.mode == "train" else view.eval_predictions)

    def check(self, view: StepView) -> list[Finding]:
        p: AucDropParams = self.params  # type: ignore[assignment]
        source = view.predictions if p.mode == "train" else view.eval_predictions
        rx = re.compile(p.streams)
        out: list[Finding] = []
        warmup = p.warmup_steps or int(2 * p.half_life_steps)
        for name, counts in source.items():
            if not rx.search(name):
                continue
            st = self._streams.setdefault(name, _Stream(p))
            st.counts.update(view.step, counts)
            if st.first_step is None:
                st.first_step = view.step
            est = st.counts.estimate()
            if not math.isfinite(est.auc):
                continue
            if st.baseline is not None and st.last_step is not None and view.step - st.first_step >= warmup:
                tot = st.counts.counts.sum(axis=1) if st.counts.counts is not None else (0, 0)
                eff_pos = float(tot[0] ** 2 / st.counts.sq[0]) if st.counts.sq[0] > 0 else 0.0
                drop = st.baseline - est.auc
                allowed = max(p.num_se * est.se, p.min_drop)
                if eff_pos >= p.min_effective_positives and drop > allowed:
                    why = (
                        f"{p.num_se:g} standard errors"
                        if p.num_se * est.se >= p.min_drop
                        else f"the smallest drop reported, {p.min_drop:g}"
                    )
                    out.append(
                        self.finding(
                            view,
                            f"{name}: decayed AUC {est.auc:.4f} (half-life {p.half_life_steps:g} steps, SE {est.se:.4f}) "
                            f"is {drop:.4f} below its average {st.baseline:.4f} at step {view.step} on rank {view.rank}, "
                            f"more than {why} (below {st.baseline - allowed:.4f})",
                            tensor=name,
                            value=est.auc,
                            threshold=st.baseline - allowed,
                        )
                    )
            # Update the baseline after judging, so a sudden drop is compared with the past.
            if st.baseline is None:
                st.baseline = est.auc
            else:
                dt = shared.steps_since(st.last_step, view.step)
                g = 0.5 ** (dt / p.baseline_half_life_steps)
                st.baseline = g * st.baseline + (1 - g) * est.auc
            st.last_step = view.step
        return out

    def get_state(self) -> dict[str, Any]:
        return {
            name: {
                "counts": s.counts.state_dict(),
                "baseline": s.baseline,
                "first": s.first_step,
                "last": s.last_step,
            }
            for name, s in self._streams.items()
        }

    def set_state(self, state: dict[str, Any]) -> None:
        p: AucDropParams = self.params  # type: ignore[assignment]
        self._streams = {}
        for name, d in state.items():
            s = _Stream(p)
            s.counts.load_state_dict(d["counts"])
            s.baseline, s.first_step, s.last_step = d["baseline"], d["first"], d["last"]
            self._streams[name] = s
