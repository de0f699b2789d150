"""`weight_update_ratio`: the typical step size relative to the weights, against a band.

Per trainable weight, ||dW|| / (||W|| + epsilon) from the measured update (`update_l2`, since the
previous saved step), then the median over layers: around 1e-3 is healthy (Karpathy), far below
means the model barely learns (learning rate too low, vanished gradients), far above that it
thrashes. SageMaker Debugger's parameter names; gated on the loss not improving, 5 of 5 views.
The low side stays quiet while the recorded learning rate (scalar `lr`) is below half its peak: a
schedule that anneals it (cosine to zero, step decay) makes the steps small on purpose.

A blow-up needs neither the gate nor the debounce: the weights' total norm multiplying between two
views (`blow_up_growth`x, or `blow_up_growth_per_step`x per step between close views, and at least
`blow_up_rate`x per step;
`shared.WeightBlowUp`) is reported at once; the first view's weights are compared with their initial-weights
record, one update before them, so a first update that multiplies the weights is found at step 0. Small updates after a blow-up are its aftermath (dead
units pass no gradient), and the low side then says so and asks for a lower learning rate.
A model whose only trainable kernel is one layer (a linear probe on a frozen encoder, a logistic
regression) is convex in it: steps too large for it cannot make the loss fall, and a head at its
default init grows 2.4-2.8x in its first 10 steps as it fits. Its growth is a blow-up only while the
loss did not fall to `fit_loss_ratio` of its value at the previous view with weights. The same holds for a growth
carried by parameters of the user's own modules (`parameter_use.own_parameter`) while the weights `torch.nn` layers
own grew less than a blow-up: such a parameter may be normalised in the forward pass (an ArcFace head's class
centres), its norm free, and SGD grows it from a small init as the model fits (blind4's healthy ArcFace heads under
SGD-Nesterov: centres 6.7 -> 26 in 10 steps, the total 2.6-3x, the layers' kernels 1.4x, the loss 9.1 -> 5.6).
Where every step's loss is recorded (format 2.4), a growth while the loss fell at every step since the previous view
with weights, to `fit_loss_ratio` of it or lower, is no blow-up either: steps far too large overshoot, and none did
(full-batch training: blind3's healthy PINN under Rprop, its first hidden layer 8.2 -> 34.5 in 10 steps, the total
2.5x, while the loss fell at each step 0.038 -> 0.016 and the held-out score rose). Minibatch losses rarely fall 10
steps in a row; a run that records the loss at saved steps only is judged as before. Nor is a growth whose steps
did not move the loss beyond its noise (`overshoot_noise`): no step's loss since the previous view climbed, from the
lowest before it in the window (or the previous window's median level), by more than that many times the median
step-to-step change of the previous window's losses (their noise, or their pace on a smooth curve). Steps too large
for the model overshoot and the loss climbs; a growth the loss cannot see is in weights that do not act (blind8's
healthy neural ODE under Rprop on minibatches of 512: one entry of a hidden kernel 14 -> 41, the layer's total l2
2.3x and its mean |w| 1.09x, while the loss held 0.039-0.044 and the held-out R^2 rose; climb 1.1x the noise,
where the first blow-up finding of every harmful run with both windows recorded climbed 3.5-170x).

Where the run records the optimizer's parameter groups (format 2.5, `group_rates`), layers whose group's
learning rate is 0 do not count (a frozen backbone given to the optimizer at lr 0 is no evidence of a rate too
low), and on the low side each layer's ratio is judged as if its group had the highest group rate (its ratio
divided by its group's rate over that one): layer-wise decay makes the lower layers' steps small on purpose.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory
from trainguard.rules import base, parameter_use, shared, shared_loss
from trainguard.rules.group_rates import GroupRates
from trainguard.rules.step_view import COL, StepView

_WEIGHTS = (Collection.WEIGHTS.value,)


class WeightUpdateRatio(base.Rule):
    name = "weight_update_ratio"
    category = RuleCategory.WEIGHTS
    default_action = Action.NOTIFY
    training_views_only = True
    summary = "Median over layers of ||dW|| / ||W|| outside a band (learning rate far too low or too high)."
    hint = "tune the learning rate: a median update ratio near 1e-3 is typical"

    class Params(shared_loss.GatedParams):
        small_threshold: float = Field(
            default=1e-4,
            ge=0,
            description="Median update ratio below which the model barely learns (healthy benchmark runs stay above "
            "1e-3 between saved steps; an LR 1e4x too small sits at 3e-5).",
        )
        large_threshold: float = Field(
            default=1.0, gt=0, description="Median update ratio above which updates are too large."
        )
        epsilon: float = Field(
            default=1e-9, gt=0, description="Added to ||W|| so zero weights do not divide by zero."
        )
        lowered_lr_fraction: float | None = shared.lowered_lr_fraction(
            0.5,
            "The low side is not reported",
            why="the schedule lowered it on purpose (at the end of a cosine schedule, saved every step, healthy runs "
            "sit at 3e-6 to 9e-5)",
            otherwise="report it regardless",
        )
        blow_up_growth: float | None = Field(
            default=2.0,
            gt=1,
            description="Growth of the weights' total l2 norm between two views reported at once as a blow-up "
            "(the detection benchmark's LR x100, unnormalised-input and loss-scale runs grow 35x or more in 5 "
            "steps; an LSTM at learning rate 40 without clipping 2.4-3.1x in 10, gradients accumulated without "
            "zero_grad 3.9-5x; healthy ones at most 1.03x in 5 and 1.41x in 10, Adagrad's first steps). None: off.",
        )
        blow_up_rate: float = Field(
            default=1.07,
            gt=1,
            description="The growth must also be at least this per training step between the two views (2x in 10 "
            "steps, 3.9x in 20): over a long save interval healthy weights may double growing from a small init.",
        )
        blow_up_growth_per_step: float = Field(
            default=2.0,
            gt=1,
            description="Between views fewer steps apart than it takes to reach `blow_up_growth` at this rate, this "
            "growth per training step is enough (saved at every step those runs grow 4x or more, healthy ones 1.006x).",
        )
        fit_loss_ratio: float | None = Field(
            default=0.75,
            gt=0,
            lt=1,
            description="With a single trainable kernel (a linear probe, a logistic regression), a growth of the "
            "weights is not a blow-up when the loss fell to this fraction of its value at the previous view with "
            "weights or lower: such a model is convex in its kernel, so steps too large for it cannot make its loss "
            "fall (linear probes at their default init grow 2.4-2.8x in their first 10 steps while their loss falls "
            "to 0.29-0.43 of its first value). None: a single kernel is judged as any weights are.",
        )
        overshoot_noise: float | None = Field(
            default=2.0,
            gt=0,
            description="Where every step's loss is recorded, a growth of the weights is not a blow-up while no step's "
            "loss since the previous view climbed (from the lowest before it in the window, or the previous window's "
            "median) by more than this many times the median step-to-step change of log(loss) over the previous "
            "window: the steps did not overshoot (blind8's healthy neural ODE under Rprop climbed 1.1x; the first "
            "blow-up of every harmful run of the development splits with both windows recorded 3.5-170x). None: off.",
        )
        trigger_k: int = base.trigger_k(5)
        trigger_n: int = base.trigger_n(5)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.gate = shared_loss.LossGate(self.params)  # type: ignore[arg-type]
        self.lr = shared.PeakLearningRate()
        self.groups = GroupRates()
        p: WeightUpdateRatio.Params = self.params  # type: ignore[assignment]
        self.blow_up = shared.WeightBlowUp(
            p.blow_up_growth or math.inf, p.blow_up_growth_per_step, p.blow_up_rate
        )
        self.step_loss = shared_loss.LossReader()
        """Reads the training loss at every view, saved or not (format 2.4 records it at every step)."""
        self.last_loss: float | None = None
        """The latest training loss read, at this view or before it."""
        self.weights_loss: float | None = None
        """`last_loss` as it was at the latest view with weights."""
        self.window: list[float] = []
        """Every step's training loss since the latest view with weights (this view's included once read)."""
        self.prev_window: list[float] = []
        """`window` as it was at the latest view with weights: the steps' losses before it."""
        self.steps_falling: tuple[int, float] | None = None
        """Of every step's loss since the latest view with weights: (steps read, the latest), while each fell below the
        one before; None once one did not (or none was read yet)."""

    def update(self, view: StepView) -> list[base.Finding]:
        """As any rule's, reading also every step's training loss (format 2.4) to tell a fit from a blow-up."""
        if not view.saved:
            self._read_step_loss(view)
        return super().update(view)

    def _read_step_loss(self, view: StepView) -> float | None:
        """Extend `steps_falling` with this view's training loss; return that loss (None: none, or not finite)."""
        loss = self.step_loss(view)
        if loss is None or not math.isfinite(loss):
            return None
        self.window.append(loss)
        if self.steps_falling is not None:
            count, latest = self.steps_falling
            self.steps_falling = (count + 1, loss) if loss < latest else None
        return loss

    def check(self, view: StepView) -> list[base.Finding]:
        p: WeightUpdateRatio.Params = self.params  # type: ignore[assignment]
        self.gate.push(view)
        self.lr.push(view)
        self.groups.push(view)
        at = self._read_step_loss(view)  # this view's finite loss, read once for both uses
        if at is not None:
            self.last_loss = at
        rows = self.rows(view, default_collections=_WEIGHTS, trainable=True)
        seen, prev_l2 = self.blow_up.seen, self.blow_up.l2
        growth = self.blow_up.push(view, rows) if p.blow_up_growth is not None else None
        before, self.weights_loss = self.weights_loss, self.last_loss if len(rows) else self.weights_loss
        falling, steps = self.steps_falling, self.blow_up.steps
        window, prev_window = self.window, self.prev_window
        if len(rows):  # the steps since this view are judged from its loss on
            self.steps_falling = None if at is None else (0, at)
            self.window, self.prev_window = [], window
        if growth is not None and (
            self._fitting(view, rows, before, p.fit_loss_ratio)
            or self._own_growth(view, rows, prev_l2, before, p)
            or (falling is not None and falling[0] >= steps and self._fell(before, p.fit_loss_ratio))
            or _within_noise(window, prev_window, p.overshoot_noise)
        ):
            self.blow_up.seen, growth = seen, None  # a fit, not a blow-up: no aftermath to explain later
        if growth is not None:
            name, steps = view.names[int(rows[self.blow_up.fastest])], self.blow_up.steps
            grew = (
                f"grew to {base.fmt(growth)}x the norm a default initialisation gives these shapes (from far below it)"
                if self.blow_up.floored
                else f"grew {base.fmt(growth)}x"
            )
            msg = (
                f"{name}: the weights' total l2 norm {grew} in {steps} step{'s' if steps > 1 else ''} "
                f"{self.where(view)} (threshold {base.fmt(p.blow_up_growth)}x, or {base.fmt(p.blow_up_growth_per_step)}x "
                "per step between closer views): the steps are far too large; this layer's norm grew most"
            )
            hint = "lower the learning rate, check the loss reduction (mean, not sum) and the input scale, clip gradients"
            found = self.finding(view, msg, tensor=name, value=growth, threshold=p.blow_up_growth, hint=hint)
            return [self.at_once(found)]
        if not len(rows) or not self.gate.open:
            return []
        at_rest = self.groups.by_design(view, rows)
        if at_rest.any():
            rows = rows[~at_rest]  # their group's learning rate is 0: frozen by design
        upd, w = view.stats[rows, COL["update_l2"]], view.stats[rows, COL["l2"]]
        measured = np.isfinite(upd) & np.isfinite(w)
        ratio = np.divide(upd, w + p.epsilon, out=np.full(len(rows), np.nan), where=measured)
        ratio, rows = ratio[measured], rows[measured]
        if not ratio.size:
            return []
        med = float(np.median(ratio))
        relative = self.groups.relative(view, rows)
        scaled = bool((relative < 1).any())  # groups at different rates: each judged at the highest
        own = ratio / relative if scaled else ratio
        med_own = float(np.median(own)) if scaled else med
        if med_own >= p.small_threshold and med <= p.large_threshold:
            return []
        low = med_own < p.small_threshold
        if low:
            med, ratio = med_own, own
        if low and p.lowered_lr_fraction is not None and self.lr.lowered(p.lowered_lr_fraction):
            return []
        # name the layer that sits furthest out on the offending side
        k = int(np.argmin(ratio) if low else np.argmax(ratio))
        name = view.names[int(rows[k])]
        bound = p.small_threshold if low else p.large_threshold
        msg = (
            f"{name}: median update ratio ||dW||/||W|| over {ratio.size} layers is {base.fmt(med)}, "
            f"{'below' if low else 'above'} the threshold {base.fmt(bound)} {self.where(view)}{self.gate.note} "
            f"(this layer: {base.fmt(ratio[k])}"
            f"{'; each layer judged at the highest group learning rate' if low and scaled else ''}"
            f"{f'; {int(at_rest.sum())} layers whose group learning rate is 0 left out' if at_rest.any() else ''})"
        )
        hint = (
            "raise the learning rate, check that optimizer.step() runs and the gradients reach the weights"
            if low
            else "lower the learning rate, check the loss reduction (mean, not sum) and clip gradients"
        )
        if low and self.blow_up.seen is not None:
            at, growth = self.blow_up.seen
            msg += (
                f"; the weights' norm grew {base.fmt(growth)}x by step {at}, so the updates stopped after a blow-up "
                "(dead units pass no gradient), not for a learning rate too low"
            )
            hint = (
                f"lower the learning rate (or clip gradients) and restart from a checkpoint before step {at}"
            )
        return [self.finding(view, msg, tensor=name, value=med, threshold=bound, hint=hint)]

    def _fitting(self, view: StepView, rows: np.ndarray, before: float | None, ratio: float | None) -> bool:
        """Whether the weights' growth at this view is a single trainable kernel's fit: the loss fell to `ratio` of
        its value at the previous view with weights (both positive: a ratio of losses of either sign means nothing)."""
        kernels = [i for i in rows if len(view.meta[int(i)].shape) >= 2]
        return len(kernels) == 1 and self._fell(before, ratio)

    def _own_growth(
        self, view: StepView, rows: np.ndarray, prev_l2: np.ndarray, before: float | None, p: Params
    ) -> bool:
        """Whether a blow-up is only the growth of parameters of the user's own modules (`parameter_use.own_parameter`)
        while the loss fell to `fit_loss_ratio` of its value at the previous view with weights: the weights that
        `torch.nn` layers own grew less than a blow-up, so the steps were not too large for them, and the loss fell.
        An own parameter may be normalised in the forward pass (an ArcFace head's class centres, a weight-normalised
        direction): its norm is then free, and plain SGD grows it from a small init while the model fits."""
        if not self._fell(before, p.fit_loss_ratio) or len(prev_l2) != len(rows):
            return False
        layers = np.asarray([not parameter_use.own_parameter(view.meta[int(i)]) for i in rows])
        if layers.all() or not layers.any():
            return False
        was = shared.total_l2(prev_l2[layers])
        span = min(self.blow_up.steps, 64)
        bound = max(min(p.blow_up_growth or math.inf, p.blow_up_growth_per_step**span), p.blow_up_rate**span)
        return 0 < was < math.inf and shared.total_l2(view.stats[rows[layers], COL["l2"]]) < bound * was

    def _fell(self, before: float | None, ratio: float | None) -> bool:
        """Whether the loss fell to `ratio` of `before` (its value at the previous view with weights) or lower; both
        positive: a ratio of losses of either sign means nothing."""
        return (
            ratio is not None
            and before is not None
            and self.last_loss is not None
            and before > 0
            and self.last_loss > 0
            and self.last_loss <= ratio * before
        )

    def get_state(self) -> dict[str, Any]:
        return {
            "gate": self.gate.get_state(),
            **self.lr.get_state(),
            **self.groups.get_state(),
            **self.blow_up.get_state(),
            "last_loss": self.last_loss,
            "weights_loss": self.weights_loss,
            "window": list(self.window),
            "prev_window": list(self.prev_window),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.gate.set_state(state.get("gate", {}))
        self.lr.set_state(state)
        self.groups.set_state(state)
        self.blow_up.set_state(state)
        last, at_weights = state.get("last_loss"), state.get("weights_loss")
        self.last_loss = None if last is None else float(last)
        self.weights_loss = None if at_weights is None else float(at_weights)
        self.window = [float(x) for x in state.get("window", [])]
        self.prev_window = [float(x) for x in state.get("prev_window", [])]


def _within_noise(window: list[float], before: list[float], noise_times: float | None) -> bool:
    """Whether no step's loss in `window` (every step's since the previous view with weights) climbed by more than
    `noise_times` times the median step-to-step change of log(loss) over `before` (the window before it), measured
    from the lowest loss before it in the window or the median of `before`, whichever is lower. False where either
    window has too few losses to tell, or a loss is not positive (a ratio of losses of either sign means nothing)."""
    if noise_times is None or len(window) < 2 or len(before) < 3 or min(*window, *before) <= 0:
        return False
    if not all(math.isfinite(x) for x in (*window, *before)):
        return False
    prior = np.log(np.asarray(before))
    noise = float(np.median(np.abs(np.diff(prior))))
    logs = np.log(np.asarray(window))
    floor = np.minimum.accumulate(np.minimum(logs, float(np.median(prior))))
    return float(np.max(logs - floor)) <= noise_times * noise
