"""`loss_not_decreasing`: the loss stopped going down.

The loss is averaged over blocks of `num_steps` training steps; at the end of each block its mean
must be at least `diff_percent` percent below the best earlier block's mean; `patience` blocks in
a row that do not are reported.
Averaging over blocks (SageMaker compares two single steps) keeps batch noise from alarming; once
the best block is `ignore_below_fraction` of the first loss (it fell by a fifth; measured from chance
level ln K or, K unknown, the first 50 steps' mean where lower), a plateau is convergence and is not
reported, even where the floor is high (a noisy binary task at its Bayes floor, 0.69 -> 0.49).

Two faster paths name a run that is not learning at all, without waiting for the blocks: the loss
averaged over the last `stuck_window_steps` steps still within `stuck_drop` of its first value (or
of its mean over the first window) after `stuck_steps` steps (a classifier at chance level, ln K: labels shuffled against the inputs, a
network without nonlinearity), and the recorded learning rate below `collapsed_lr_fraction` of its
peak while the loss has not fallen by a fifth (an epoch scheduler stepped every batch).
A run that records several losses and no total (`d_loss` and `g_loss` of a GAN) is not judged:
which of them should go down is not known, and an adversarial loss need not go down at all.
SageMaker Debugger's `num_steps`, `diff_percent`, `mode` and `use_losses_collection`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from trainguard.api.enums import Action, Collection, RuleCategory
from trainguard.rules import base, shared, shared_loss
from trainguard.rules.step_view import COL, StepView

_GRADIENTS = (Collection.GRADIENTS.value,)


def normalise_mode(v: object) -> object:
    """Accept SageMaker's TRAIN/EVAL/GLOBAL spellings: GLOBAL means the training loss here."""
    if isinstance(v, str):
        v = v.lower()
        return "train" if v == "global" else v
    return v


class LossNotDecreasing(base.Rule):
    name = "loss_not_decreasing"
    example_params: ClassVar[Mapping[str, Any]] = {"num_steps": 30}
    """For the state round-trip test: blocks of 30 steps, so a short run holds several."""
    category = RuleCategory.LOSS
    default_action = Action.NOTIFY
    needs = "training loss"
    summary = (
        "The mean loss over the last `num_steps` views is not `diff_percent` below the best earlier block."
    )
    hint = (
        "check the learning rate (too low, or decayed to zero), that optimizer.step() and zero_grad() run, "
        "and that the labels match the inputs"
    )

    class Params(base.Params):
        num_steps: int = Field(
            default=100,
            ge=1,
            description="Training steps per block (the loss is averaged over each). With `patience` 4 the rule "
            "needs 400 steps without progress, and a 600-step run can still be reported.",
        )
        diff_percent: float = Field(
            default=1.0,
            ge=0,
            lt=100,
            description="Percent the block mean must drop below the best earlier block (SageMaker: 0.1, which a "
            "loss falling 0.4% per 100 steps, an LR 1e4x too small, passes).",
        )
        mode: Literal["train", "eval"] = Field(
            default="train", description="Which loss: train or eval (SageMaker's TRAIN/EVAL/GLOBAL accepted)."
        )
        use_losses_collection: bool = Field(
            default=True,
            description="Without a loss scalar, use the mean of the first tensor in the losses collection.",
        )
        patience: int = Field(
            default=4,
            ge=1,
            description="Blocks in a row that must fail to improve: on a slowly falling, noisy loss single blocks "
            "miss by chance (two in a row still did on the throughput benchmark's healthy run), and the "
            "detection benchmark's deeper sigmoid net sits near chance level for 300-400 steps before it learns "
            "(three in a row, once blocks are aligned to the steps).",
        )
        ignore_below_fraction: float | None = Field(
            default=0.8,
            gt=0,
            le=1,
            description="Stay quiet once the best block mean is below this fraction of the first loss (of chance "
            "level ln K when lower; K unknown, of the first `stuck_window_steps` steps' mean when lower): the run "
            "learned, and a plateau then is convergence, not a fault. 0.5 (halved) called a noisy binary task "
            "converged at its Bayes floor (0.69 -> 0.49) stuck. None reports every plateau (SageMaker).",
        )
        stuck_steps: int | None = Field(
            default=150,
            ge=1,
            description="Report a run whose loss, averaged over the last `stuck_window_steps` steps, is still within "
            "`stuck_drop` of its first value this many training steps after its first view: it has learned "
            "nothing (a classifier at chance level). None: off.",
        )
        stuck_drop: float = Field(
            default=0.02,
            ge=0,
            lt=1,
            description="Relative fall (0.02 = 2%) below both the first loss and the mean loss of the first "
            "`stuck_window_steps` steps (a single batch's loss can be an outlier) that counts as learning something, "
            "and the band around chance level that counts as at chance. On the realistic PyTorch suite's calibration "
            "seeds slow healthy learners (a neural recommender under Adam, a one-cycle schedule's warmup) are still "
            "within 2% at step 100-120 and all are past it by 150; those of the numpy suite by step 55.",
        )
        stuck_min_gradient_ratio: float = Field(
            default=0.05,
            ge=0,
            description="The stuck path needs the gradient to reach the first layer: the first/last kernel gradient "
            "l2 ratio at least this at every view of the window. A deep sigmoid net sits at chance level for 300-400 "
            "steps before it learns, its ratio 0.01-0.03 and rising as it starts to (single views reach 0.06); models "
            "that cannot learn what the loss asks (shuffled labels, no nonlinearity, a regression target that "
            "broadcasts) stay at 0.07-1. Unknown (no kernel gradients): not required.",
        )
        stuck_window_steps: int = Field(
            default=50, ge=1, description="Training steps the stuck path averages the loss over."
        )
        collapsed_lr_fraction: float | None = shared.lowered_lr_fraction(
            1e-3,
            "Report at once",
            why="a schedule that reaches 1e-3 of its peak before the loss fell below `ignore_below_fraction` of its "
            "first value ended training before it began (an epoch scheduler stepped every batch)",
            otherwise="off",
        )
        loss_name: str | None = Field(
            default=None, description="Scalar to read; default `loss`, else the first scalar named *loss*."
        )

        _mode = field_validator("mode", mode="before")(normalise_mode)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: LossNotDecreasing.Params = self.params  # type: ignore[assignment]
        self.read = shared_loss.LossReader(
            mode=p.mode, name=p.loss_name, use_losses_collection=p.use_losses_collection, single=True
        )
        self.lr = shared.PeakLearningRate()
        self.first_step: int | None = None
        self.recent: deque[tuple[int, float]] = deque()
        """(step, loss) of the views in the last two `stuck_window_steps` windows."""
        self.reported_fast = False
        self.opening = (0.0, 0)
        """(sum, count) of the losses in the first `stuck_window_steps` steps."""
        self.classes: int | None = None
        """K, the outputs of the last dense layer (chance level ln K), when the catalogue's module classes tell it."""
        self.kernels = shared.KernelPair()
        self.grad_ratio: deque[tuple[int, float]] = deque()
        """(step, first/last kernel gradient l2 ratio) of the views in the last `stuck_window_steps` steps."""
        self.block_sum = 0.0
        self.block_n = 0
        self.block_start: int | None = None
        self.last_step: int | None = None
        self.failed = 0
        self.best: float | None = None
        self.first: float | None = None

    def has_input(self, view: StepView) -> bool:
        return self.read(view) is not None

    def check(self, view: StepView) -> list[base.Finding]:
        p: LossNotDecreasing.Params = self.params  # type: ignore[assignment]
        self.lr.push(view)
        loss = self.read(view)
        if loss is None or not math.isfinite(loss):
            return []
        self.first = loss if self.first is None else self.first
        self.first_step = view.step if self.first_step is None else self.first_step
        if view.step < self.first_step + p.stuck_window_steps:
            self.opening = (self.opening[0] + loss, self.opening[1] + 1)
        fast = self._not_learning(view, loss, p)
        if fast:
            return fast
        if self.block_start is None:
            self.block_start = view.step
        self.block_sum += loss
        self.block_n += 1
        gap = shared.steps_since(self.last_step, view.step)
        self.last_step = view.step
        # blocks are measured in training steps, as SageMaker's num_steps is, not in saved views: a
        # block ends with the last view before the next block, the one the save interval says is next
        if view.step + gap < self.block_start + p.num_steps:
            return []
        mean = self.block_sum / self.block_n
        self.block_sum, self.block_n, self.block_start = 0.0, 0, None
        best, self.best = self.best, mean if self.best is None else min(self.best, mean)
        if best is None or mean < best - abs(best) * p.diff_percent / 100.0:
            self.failed = 0
            return []
        self.failed += 1
        if self.failed < p.patience:
            return []
        if p.ignore_below_fraction is not None and best < p.ignore_below_fraction * self._reference(
            opening=True
        ):
            return []  # converged after real progress
        msg = (
            f"{p.mode} loss: mean {base.fmt(mean)} over the last {p.num_steps} steps is not {base.fmt(p.diff_percent)}% "
            f"below the best earlier block ({base.fmt(best)}), {self.failed} blocks in a row, {self.where(view)}"
        )
        return [self.finding(view, msg, tensor="loss", value=mean, threshold=best)]

    def _reference(self, *, opening: bool = False) -> float:
        """The loss "learning" is measured from: the first loss, or chance level ln K when that is lower (an
        inflated first loss, from heavy dropout or a bad init, falling to chance is no learning). With `opening` and
        K unknown (no module classes, one output), the mean of the first `stuck_window_steps` steps where that is
        lower: an init's large logits give a first loss 30% above where the model sits within a few dozen steps
        when it learns nothing (labels permuted against the inputs: 3.0, then 2.3 for 500 steps)."""
        first = self.first or 0.0
        if self.classes:
            return min(first, math.log(self.classes))
        if opening and self.opening[1]:
            return min(first, self.opening[0] / self.opening[1])
        return first

    def _gradient_reaches_input(self, view: StepView, p: Params) -> None:
        """Keep the first/last kernel gradient l2 ratio of this view (a plateau of vanishing gradients has it
        near 0; a model that cannot learn what the loss asks has it near 1)."""
        rows = self.rows(view, default_collections=_GRADIENTS)
        pair = self.kernels(view, rows) if len(rows) else None
        if pair is not None:
            first, last = view.stats[pair[0], COL["l2"]], view.stats[pair[1], COL["l2"]]
            if math.isfinite(first) and 0 < last < math.inf:
                self.grad_ratio.append((view.step, float(first / last)))
        while self.grad_ratio and self.grad_ratio[0][0] <= view.step - p.stuck_window_steps:
            self.grad_ratio.popleft()

    def _not_learning(self, view: StepView, loss: float, p: Params) -> list[base.Finding]:
        """The fast paths: no progress at all since the first view, or a learning rate collapsed before any."""
        self.recent.append((view.step, loss))
        while self.recent and self.recent[0][0] <= view.step - 2 * p.stuck_window_steps:
            self.recent.popleft()  # two windows: the last one, and the one before it
        if view.names:
            if self.classes is None:
                self.classes = shared.output_classes(view)
            self._gradient_reaches_input(view, p)
        first = self.first
        if self.reported_fast or first is None or not first > 0 or self.first_step is None:
            return []
        cut = view.step - p.stuck_window_steps
        last = [x for s, x in self.recent if s > cut]
        before = [x for s, x in self.recent if s <= cut]
        recent = sum(last) / len(last)
        learned = p.ignore_below_fraction if p.ignore_below_fraction is not None else 0.8
        if (
            p.collapsed_lr_fraction is not None
            and self.lr.lowered(p.collapsed_lr_fraction)
            and recent > learned * self._reference()
        ):
            self.reported_fast = True
            msg = (
                f"lr: the learning rate {base.fmt(self.lr.current)} is below {base.fmt(p.collapsed_lr_fraction)} of its "
                f"peak {base.fmt(self.lr.peak)} {self.where(view)} while the {p.mode} loss {base.fmt(recent)} is still "
                f"{base.fmt(100 * recent / first)}% of its first value {base.fmt(first)}: training has stopped before "
                "the model learned"
            )
            hint = (
                "check the scheduler: one meant to step once per epoch (StepLR, MultiStepLR, ExponentialLR) "
                "stepped every batch decays the learning rate to nothing in a few hundred steps"
            )
            return [self.finding(view, msg, tensor="lr", value=self.lr.current, hint=hint,
                                 threshold=p.collapsed_lr_fraction * (self.lr.peak or 0.0))]  # fmt: skip
        span = view.step - self.first_step
        if p.stuck_steps is None or span < p.stuck_steps:
            return []
        chance = math.log(self.classes) if self.classes else None
        opening = self.opening[0] / self.opening[1] if self.opening[1] else first
        # against the first loss, and against the mean of the first window (one batch's loss can be an outlier)
        at_first = recent > first * (1 - p.stuck_drop) or recent > opening * (1 - p.stuck_drop)
        # at chance and no longer falling towards it (a slow start passes through chance level on its way down)
        flat = bool(before) and recent >= (1 - p.stuck_drop) * sum(before) / len(before)
        at_chance = chance is not None and abs(recent - chance) <= p.stuck_drop * chance and flat
        if not (at_first or at_chance):
            return []
        ratio = min((r for _, r in self.grad_ratio), default=None)
        if ratio is not None and ratio < p.stuck_min_gradient_ratio:
            return []  # a plateau the gradient barely reaches: vanishing_gradient's, or one the run breaks out of
        self.reported_fast = True
        drop = base.fmt(100 * p.stuck_drop)
        reach = (
            f"; the gradient reaches the first layer (first/last ratio {base.fmt(ratio)} or more)"
            if ratio is not None
            else ""
        )
        hint = (
            "check that the labels match the inputs (not shuffled apart), that the network has nonlinearities and "
            "the loss takes raw logits (no softmax before CrossEntropyLoss), dropout's p, and the learning rate"
        )
        # The evidence is the bound the mean had to fall below (the reference less `stuck_drop`), quoted as such.
        if at_first and recent > first:
            # the same condition holds for a loss that went up: say so, not "within 2%"
            bound = first * (1 - p.stuck_drop)
            state = (
                f"is {base.fmt(recent / first)}x its first value {base.fmt(first)} (it had to fall below "
                f"{base.fmt(bound)}) after {span} steps {self.where(view)}: the loss rose instead of falling{reach}"
            )
            hint = (
                "a loss that rises from the start: check the learning rate (far too high) and its warmup, the sign of "
                "the loss (minimised, not maximised), and that the labels match the inputs"
            )
        elif at_first:
            reference, what = (
                (first, "its first value")
                if recent > first * (1 - p.stuck_drop)
                else (opening, f"its mean over the first {p.stuck_window_steps} steps,")
            )
            bound = reference * (1 - p.stuck_drop)
            state = (
                f"is still within {drop}% of {what} {base.fmt(reference)} (above {base.fmt(bound)}) after {span} steps "
                f"{self.where(view)}: the model has learned nothing{reach}"
            )
        else:
            assert chance is not None
            bound = chance * (1 - p.stuck_drop)
            state = (
                f"is still within {drop}% of ln {self.classes} = {base.fmt(chance)}, chance level for its "
                f"{self.classes} outputs (above {base.fmt(bound)}; first value {base.fmt(first)}), after {span} steps "
                f"{self.where(view)}: the model has learned nothing{reach}"
            )
        msg = f"{p.mode} loss: mean {base.fmt(recent)} over the last {p.stuck_window_steps} steps {state}"
        return [self.finding(view, msg, tensor="loss", value=recent, threshold=bound, hint=hint)]

    def get_state(self) -> dict[str, Any]:
        return {
            "sum": self.block_sum, "n": self.block_n, "start": self.block_start, "last": self.last_step, "failed": self.failed, "best": self.best, "first": self.first,
            "first_step": self.first_step, "recent": [list(x) for x in self.recent], "reported_fast": self.reported_fast,
            "classes": self.classes, "grad_ratio": [list(x) for x in self.grad_ratio], "opening": list(self.opening),
            **self.lr.get_state(),
        }  # fmt: skip

    def set_state(self, state: dict[str, Any]) -> None:
        self.block_sum = float(state.get("sum", 0.0))
        self.block_n = int(state.get("n", 0))
        self.block_start = state.get("start")
        self.last_step = state.get("last")
        self.failed = int(state.get("failed", 0))
        self.best = state.get("best")
        self.first = state.get("first")
        self.first_step = state.get("first_step")
        self.recent = deque((int(s), float(x)) for s, x in state.get("recent", []))
        self.reported_fast = bool(state.get("reported_fast", False))
        self.classes = state.get("classes")
        opening = state.get("opening") or [0.0, 0]
        self.opening = (float(opening[0]), int(opening[1]))
        self.grad_ratio = deque((int(s), float(x)) for s, x in state.get("grad_ratio", []))
        self.lr.set_state(state)
