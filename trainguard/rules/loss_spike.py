"""`loss_spike`: a sudden jump of the training loss against its own recent history.

Robust z-score of log(loss) against the rolling median and MAD of the last `window` views (the
spike detector of the LLM-training literature); it reads the loss of every step (`every_step`), where the
hook keeps it (format 2.4), so the window spans `window` steps there. A simultaneous jump of the global gradient norm
(its own robust z above `grad_z_threshold`) is named in the finding: spikes with a gradient
co-spike are the ones that tend to recur and diverge. Non-positive losses are skipped; a spike
must also be large against the first loss, so batch noise on a near-zero loss is no spike.
A run that records several losses and no total (a GAN's `d_loss` and `g_loss`) is not judged: an
adversarial loss rises whenever the other player improves (a healthy GAN's discriminator loss climbs
by 10-15% a step for several steps, 6-9 robust standard deviations of its own earlier levels and
step-to-step jumps), so a jump of one of them is no evidence of a fault. Name the loss with
`loss_name` to watch it anyway.

A spike is a jump against the noise of the steps right before it, not a climb that the lagging rolling median
trails. While the loss climbs, a rise as significant as a spike (the median of the last `climb_steps` losses above
the median of the `climb_steps` before them by `z_threshold` standard errors of that difference, the noise read from
the step-to-step changes of those steps) is not judged here: every step of a steady climb sits far above a median of
earlier levels. A climbing loss is `diverging_loss`'s and `loss_not_decreasing`'s to judge; a total loss that climbs
by design (a VQ-VAE's codebook and commitment terms, 2-5% a step over 30 steps while its held-out score rises)
is no spike.

A spike is judged `absorb_steps` steps after it, on what followed it. A loss that stayed up (the median of those
steps still `z_threshold` / 2 robust standard deviations above the rolling median) is reported as a spike. One that
came back at once was absorbed: a batch far harder than the rest (a fitted interatomic potential's rare close-contact
configuration, 20-900x the median loss, back to its level at the next step, its run healthy) did no lasting harm, and
is noted at info level, unless it is the second absorbed spike within `window` steps: spikes that recur are reported.
A spike in a run's last `absorb_steps` steps is not judged: nothing followed it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory, Severity
from trainguard.rules import base, shared, shared_loss
from trainguard.rules.step_view import COL, StepView

_GRADIENTS = (Collection.GRADIENTS.value,)
_MEDIAN_SE = 1.2533
"""The standard error of a median of n normal values is about this times sigma / sqrt(n) (sqrt(pi / 2))."""


class LossSpike(base.Rule):
    name = "loss_spike"
    category = RuleCategory.LOSS
    default_action = Action.NOTIFY
    needs = "training loss"
    training_views_only = True
    every_step = True
    """A spike lasts a step or two: at saved steps only, 9 of 10 are never seen. On the realistic PyTorch suite
    (save_interval 10) reading every step's loss took the rule from 0 to 6 of the 12 spike runs of the report
    split, with no alarm on a healthy run (docs/rules.md, "Train scalars at every step")."""
    summary = (
        "Training loss far above its rolling median (robust z of log loss), noting a gradient-norm co-spike."
    )
    hint = "inspect the batch at this step for corrupt data; if spikes recur, lower the learning rate or clip gradients"
    cospike_hint = (
        "the gradient norm spiked too: if it recurs, restart from a checkpoint before the spike with a lower learning "
        "rate and skip the batches around it, and clip gradients"
    )

    class Params(base.Params):
        window: int = Field(default=200, ge=5, description="Views in the rolling window (median and MAD).")
        z_threshold: float = Field(
            default=6.0, gt=0, description="Robust z of log(loss) above which the loss spiked."
        )
        min_history: int = Field(
            default=20, ge=3, description="Views needed in the window before spikes are judged."
        )
        min_scale: float = Field(
            default=0.02, gt=0, description="Floor of the robust scale of log(loss) (0.02 = 2%)."
        )
        grad_z_threshold: float = Field(
            default=3.0, gt=0, description="Robust z of log(gradient norm) that makes a co-spike."
        )
        grad_norm_scalar: str = Field(
            default="grad_norm", description="Train scalar holding the global gradient norm, if recorded."
        )
        loss_name: str | None = Field(
            default=None, description="Scalar to read; default `loss`, else the first *loss*."
        )
        min_jump_fraction: float = Field(
            default=0.05,
            ge=0,
            description="The spike must also exceed the rolling median by this fraction of the first loss: a loss "
            "near zero (an easy task) jumps by large factors without meaning anything.",
        )
        climb_steps: int | None = Field(
            default=10,
            ge=3,
            description="A loss whose median over the last this many steps rose above the median of the as many "
            "before them by `z_threshold` standard errors is climbing, not spiking, and is not judged (healthy VQ-VAEs "
            "whose total loss climbs by design: 6.8 or more standard errors at every step the rolling median flagged; the "
            "first spikes of the development splits' faults: at most 5.1). None: every step is judged.",
        )

        absorb_steps: int | None = Field(
            default=3,
            ge=1,
            description="Steps after a spike that decide whether the loss absorbed it: their median back within "
            "`z_threshold` / 2 robust standard deviations of the rolling median. An absorbed spike is noted at info "
            "level unless another was absorbed within `window` steps before it (healthy force-field fits: a rare "
            "close-contact batch 20-900x the median, back at the next step; the development splits' spike faults "
            "either stayed up or were found by other rules first). None: every spike is reported at once.",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: LossSpike.Params = self.params  # type: ignore[assignment]
        self.read = shared_loss.LossReader(name=p.loss_name, single=True)
        self.loss_window = shared.Window(p.window)
        self.grad_window = shared.Window(p.window)
        self.first: float | None = None
        self.pending: list[Any] | None = None
        """The spike waiting for its `absorb_steps`: [step, loss, z, log median, scale, co-spike z or None]."""
        self.after: list[float] = []
        """The log losses since the pending spike."""
        self.absorbed_at: int | None = None
        """The step of the last spike the loss absorbed."""

    def has_input(self, view: StepView) -> bool:
        return self.read(view) is not None

    def check(self, view: StepView) -> list[base.Finding]:
        p: LossSpike.Params = self.params  # type: ignore[assignment]
        rows = self.rows(view, default_collections=_GRADIENTS)
        norm = shared.global_norm(
            view, view.stats[rows, COL["l2"]] if len(rows) else np.zeros(0), p.grad_norm_scalar
        )
        g = math.log(norm) if norm > 0 and math.isfinite(norm) else None
        loss = self.read(view)
        found: list[base.Finding] = []
        if loss is not None and loss > 0 and math.isfinite(loss):
            self.first = loss if self.first is None else self.first
            x = math.log(loss)
            spike = (
                self.loss_window.spike(x, threshold=p.z_threshold, min_scale=p.min_scale)
                if len(self.loss_window) >= p.min_history
                else None
            )
            if spike is not None and (self._climbing(p) or self.pending is not None):
                spike = None  # a climb is not a spike; the steps after a pending spike are its own
            if self.pending is not None:
                self.after.append(x)
                if len(self.after) >= (p.absorb_steps or 0):
                    found += self._settle(view, p)
            self.loss_window.push(x)
            if spike is not None and loss - math.exp(spike[1]) > p.min_jump_fraction * self.first:
                co = self._cospike(g, p)
                if p.absorb_steps is None:
                    found.append(self._finding(view, view.step, loss, spike, co, p))
                else:
                    z, med = spike
                    self.pending, self.after = [view.step, loss, z, med, (x - med) / z, co], []
        if g is not None:
            self.grad_window.push(g)
        return found

    def _cospike(self, g: float | None, p: Params) -> float | None:
        """The gradient norm's robust z at a spike, when it spiked too."""
        if g is None or len(self.grad_window) < p.min_history:
            return None
        co = self.grad_window.spike(g, threshold=p.grad_z_threshold, min_scale=0.1)
        return co[0] if co else None

    def _settle(self, view: StepView, p: Params) -> list[base.Finding]:
        """Judge the pending spike on the `absorb_steps` steps after it: reported if the loss stayed up or spikes
        recur, noted at info level if it was absorbed."""
        assert self.pending is not None
        step, loss, z, med, scale, co = self.pending
        self.pending = None
        after = float(np.median(self.after)) - med
        if after > p.z_threshold / 2 * scale:
            return [self._finding(view, step, loss, (z, med), co, p)]
        since, self.absorbed_at = self.absorbed_at, step
        back = (
            f"; the loss came back at once (the median of the next {len(self.after)} steps "
            f"{base.fmt(math.exp(med + after))}, within {base.fmt(p.z_threshold / 2)} robust standard deviations)"
        )
        if since is not None and step - since <= p.window:
            recur = f"{back}, the second such spike since step {since}: spikes recur"
            return [self._finding(view, step, loss, (z, med), co, p, recur)]
        found = self._finding(
            view, step, loss, (z, med), co, p, f"{back}: a batch far harder than the rest, absorbed"
        )
        return [replace(found, severity=Severity.INFO)]

    def _climbing(self, p: Params) -> bool:
        """Whether the log losses before this one climb: the median of the last `climb_steps` above the median of the
        `climb_steps` before them by more than `z_threshold` standard errors. A median of n values with noise s has a
        standard error of about 1.2533 s / sqrt(n); step-to-step changes have a noise of sqrt(2) s, so the difference
        of the two medians has one of 1.2533 d / sqrt(n), d the robust scale of the changes."""
        n = p.climb_steps
        if n is None or len(self.loss_window) < 2 * n:
            return False
        recent = self.loss_window.array()[-2 * n :]
        rise = float(np.median(recent[n:]) - np.median(recent[:n]))
        if rise <= 0:
            return False
        changes = np.diff(recent)
        d = max(shared.MAD_TO_SIGMA * float(np.median(np.abs(changes - np.median(changes)))), p.min_scale)
        return rise > p.z_threshold * _MEDIAN_SE * d / math.sqrt(n)

    def _finding(
        self,
        view: StepView,
        step: int,
        loss: float,
        spike: tuple[float, float],
        co: float | None,
        p: Params,
        after: str = "",
    ) -> base.Finding:
        """The spike at `step` (judged at `view`), with what followed it (`after`)."""
        z, med = spike
        also = f", with a gradient-norm co-spike (z {base.fmt(co)})" if co is not None else ""
        where = self.where(view) if step == view.step else f"at step {step} (judged {self.where(view)})"
        msg = (
            f"loss {base.fmt(loss)} is {base.fmt(loss / math.exp(med))}x its rolling median {base.fmt(math.exp(med))} "
            f"(robust z {base.fmt(z)} > {base.fmt(p.z_threshold)}) {where}{also}{after}"
        )
        hint = self.cospike_hint if co is not None else None
        return self.finding(view, msg, tensor="loss", value=z, threshold=p.z_threshold, hint=hint)

    def get_state(self) -> dict[str, Any]:
        return {
            "loss": self.loss_window.get_state(),
            "grad": self.grad_window.get_state(),
            "first": self.first,
            "pending": self.pending,
            "after": self.after,
            "absorbed_at": self.absorbed_at,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.loss_window.set_state(state.get("loss", []))
        self.grad_window.set_state(state.get("grad", []))
        self.first = state.get("first")
        self.pending = state.get("pending")
        self.after = [float(x) for x in state.get("after", [])]
        self.absorbed_at = state.get("absorbed_at")
