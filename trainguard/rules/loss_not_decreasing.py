"""`loss_not_decreasing`: the loss stopped going down.

The loss is averaged over blocks of `num_steps` training steps; at the end of each block its mean
must be at least `diff_percent` percent below the best earlier block's mean; `patience` blocks in
a row that do not are reported.
Averaging over blocks (SageMaker compares two single steps) keeps batch noise from alarming; once
the best block is `ignore_below_fraction` of the first loss (it fell by a fifth; measured from chance
level ln K or, K unknown, the first 50 steps' mean where lower), a plateau is convergence and is not
reported, even where the floor is high (a noisy binary task at its Bayes floor, 0.69 -> 0.49). Nor
is a loss that fell clearly and then rose `min_significance` standard errors above its best block:
an objective that rises by design (a VAE whose KL weight is annealed upwards, a curriculum), or an
unstable one (`diverging_loss`, `oscillating_loss`), not a plateau.

Two faster paths name a run that is not learning at all, without waiting for the blocks: the loss
averaged over the last `stuck_window_steps` steps still within `stuck_drop` of its first value (or
of its mean over the first window) after `stuck_steps` steps (a classifier at chance level, ln K: labels shuffled against the inputs, a
network without nonlinearity; an in-batch contrastive loss at ln B, B the batch the recorded inputs share: images and
captions drawn by two separately shuffled loaders, so that no pair matches), and the recorded learning rate below `collapsed_lr_fraction` of its
peak for `collapsed_lr_steps` steps while the loss has not fallen by a fifth (an epoch scheduler stepped
every batch; a schedule's turning point that touches 0 for a step, a cosine annealed to 0 before an SWA
phase or a warm restart, is not a collapse). A third names a schedule that stopped a model which still learned: the
loss fell `min_significance` standard errors between the halves of the `stuck_window_steps` steps before the rate was
first lowered, the rate has stayed below `stopped_lr_fraction` of its peak for `stopped_lr_share` of the steps before
it got there, and the last window's loss no longer falls (a plateau scheduler in mode 'max' stepped on a loss cuts the
rate at every check; one that cuts on a real plateau does so after the loss sat still, and a cosine or linear schedule
spends only its last few percent below 1% of its peak). It needs no positive loss.
The stuck path weighs evidence, not a curve: the window must sit above the bound by
`min_significance` standard errors of the batch noise (estimated from the spread of the losses
within the windows), or, where the loss is too noisy to tell (dropout 0.5 on batches of 8, a
heavy-tailed robust loss), a recorded eval loss must say the same (its latest point not
`stuck_eval_drop` below the best earlier one; a run that records no eval loss has a held-out error metric, a name
that says lower is better such as MAE, RMSE, an error rate, stand in for it: a prediction broadcast against its
target leaves a Huber loss too noisy to tell and the held-out MAE flat to 0.1%; without one, a coefficient of
determination as 1 - R^2, the held-out squared error over the targets' variance); a loss that fell clearly (`stuck_drop` and `min_significance` standard errors below the
first window) in any window is not stuck from the start, and one whose last window's second half lies
`leaving_significance` standard errors below its first half is leaving its plateau (a slow starter under momentum
SGD that sits at chance level until step 130-150 and then falls away): the decision waits for a later saved step,
where a loss that stopped falling within the band is still reported. One that went below zero (a policy
loss, a Gaussian NLL) has no scale for percent changes and is not judged by them. A loss above its first value
alone is not stuck where the run's own eval metric says the model learns (`metric_progress`: an accuracy, an AUC,
an error rate whose latest record closed 1 - `ignore_below_fraction`, a fifth, of the gap from its first record to
its best score, by `min_significance` times its record-to-record noise): a self-distillation loss (DINO, BYOL)
starts low, where teacher and student are one network, and rises as the teacher's target moves, while the features
improve. The metric does not outweigh a loss at chance level (outputs that predict nothing, whatever the features
score), nor one still at its first window's level that is chance level; it does outweigh a loss at its first window's
level away from chance or with no chance level known (a Tweedie deviance or a heavy-tailed regression loss, mostly
irreducible noise, falls 2-5% while the held-out R^2 climbs from 0.45 to 0.8), and one that rose `min_significance` standard errors above
its first window's level too (a VQ-VAE's codebook and commitment terms grow as the encoder's outputs spread, the total
twice its start, while the held-out R^2 of the reconstruction rises): that loss moved, and is no plateau. A finding
on a loss above its reference says by how many times it rose, not that it is "within 2%" of it.
The loss of every step is read where the run records it (`every_step`): a window's noise comes from its 50 losses,
not from the 5 of its saved steps, and the stuck path decides at saved steps. Held-out evidence is asked first: an
eval loss (or held-out error) still falling `stuck_eval_drop` outweighs a training loss at its first level (dropout
0.5 on batches of 8: flat beyond the noise of 50 losses while the eval loss falls); a held-out metric whose chance
level holds whatever the data (an AUC or a concordance index read as C at 0.5, a correlation or an R^2 at 0) a fifth of the way
from chance to 1 says the model learned something (a Cox model's concordance at 0.77 from its first record while its
partial likelihood, mostly irreducible, sits within 2% of its first window); and beside a learning metric only a loss
pinned at chance level (its batch-to-batch spread within `stuck_drop` of it: uniform outputs score ln K on every
batch) is "at chance", not one that passes near ln K swinging from batch to batch.
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
from trainguard.rules import base, metric_progress, shared, shared_loss
from trainguard.rules.metric_progress import error_name, error_of, held_out_error
from trainguard.rules.step_view import COL, StepView

_GRADIENTS = (Collection.GRADIENTS.value,)
CHANCE_FACTOR = 2.0
"""ln K (K the outputs of the last dense layer) is chance level only for a loss that starts within this factor of
it: a cross-entropy over K classes starts near ln K at any usual init (3.5 for ln 10 = 2.3 under dropout 0.95);
a loss 7x above it is a sum over the outputs (a VAE's reconstruction of 48 pixels: 30 against ln 48 = 3.9)."""


LOWERED = 0.99
"""A recorded learning rate below this fraction of its peak has been lowered (by a scheduler, not float jitter)."""


def halves(values: list[float]) -> tuple[float, float, float] | None:
    """The means of the first and second halves of `values` and the standard error of their difference (from the
    spread within each half), or None for fewer than two values a half."""
    half = len(values) // 2
    if half < 2:
        return None
    early, late = shared_loss.Spread.of(values[:half]), shared_loss.Spread.of(values[half:])
    return early.mean, late.mean, shared_loss.error_of_difference(early, late)


def normalise_mode(v: object) -> object:
    """Accept SageMaker's TRAIN/EVAL/GLOBAL spellings: GLOBAL means the training loss here."""
    if isinstance(v, str):
        v = v.lower()
        return "train" if v == "global" else v
    return v


def input_batch(view: StepView) -> int | None:
    """B, the leading dimension the recorded model inputs share (2 or more), or None when they record none or
    disagree (a sequence-first input, a pair of inputs of different batches)."""
    sizes = {m.shape[0] for m in view.meta if m.collection == Collection.INPUTS.value and len(m.shape) >= 2}
    return int(next(iter(sizes))) if len(sizes) == 1 and next(iter(sizes)) >= 2 else None


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
    every_step = True
    """Reads the loss of every step (format 2.4), where it is recorded, else of saved steps: a window's noise is
    estimated from its 50 losses, not from the 5 of its saved steps (whose spread is itself a noisy figure: a
    heavy-tailed loss gives five values that agree by chance). It decides at saved steps, as before."""

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
            "converged at its Bayes floor (0.69 -> 0.49) stuck. None reports every plateau (SageMaker). On the stuck "
            "path, a recorded eval metric that closed 1 - this of the gap from its first record to its best score "
            "(a fifth) has learned too.",
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
            "broadcasts) stay at 0.07-1. Not required of a loss that rose `min_significance` standard errors above "
            "its first value plus `stuck_drop` (no plateau: label-sorted batches swing a CNN whose ratio is "
            "0.02-0.12). Unknown (no kernel gradients): not required.",
        )
        stuck_window_steps: int = Field(
            default=50, ge=1, description="Training steps the stuck path averages the loss over."
        )
        leaving_significance: float | None = Field(
            default=4.0,
            gt=0,
            description="The stuck path waits while the loss is leaving its plateau: the last window's second half "
            "below its first half by this many standard errors of their batch noise, at a pace that would take it a "
            "further `stuck_drop` down within another `stuck_steps` steps (0.33% of the loss between the halves). A "
            "slow starter under momentum SGD sits at chance level for 130-150 steps and then falls away from it (the "
            "fiftieth and fifty-second blind splits' tomato and injector CNNs: 5.0-5.9 standard errors at step 150, "
            "0.8-1.0% of the loss); a loss that cannot learn (shuffled labels, no nonlinearity, a rate far too low, a "
            "probe's rate too low) drifts at 2.2 at most on the stored runs, and a converged loss whose batch noise "
            "is 0.02% creeps at 6-9 standard errors but 0.1% of the loss (a DINO loss, the pace's floor). 4: a "
            "stationary loss judged at every saved step reaches 2 by chance about once in 40 judgements, 4 about once "
            "in 30,000. It only delays the finding: a loss still within `stuck_drop` of its start once it stops "
            "falling is reported then. None: never waits.",
        )
        min_significance: float = Field(
            default=2.0,
            ge=0,
            description="Standard errors of the batch noise (from the spread of the losses within the windows) by "
            "which a window must differ for the stuck path to count it: above the stuck bound to call the run stuck "
            "on the training loss alone, below it to call the run learned for good; and by which the last block must "
            "exceed the best one for a loss that learned and then rose to count as rising, not as a plateau. On the "
            "realistic suite's calibration seeds the standard error of a 50-step window's mean (5 saved steps) is "
            "0.1-1% of the loss for runs stuck at chance level on batches of 32-64, but 1.2-1.8% for dropout 0.5 on "
            "batches of 8 and 10-20% for a Huber loss on heavy-tailed targets: there a 2% fall cannot be told from none "
            "by the training loss, and an eval loss decides. 2, as `diverging_loss`; 0: every difference counts.",
        )
        stuck_eval_drop: float = Field(
            default=0.01,
            ge=0,
            lt=1,
            description="Where the training loss is too noisy to decide, the stuck path asks a recorded eval loss: "
            "the run counts as stuck only while the latest eval loss is not this fraction below the best earlier eval "
            "point (the best, not the first: a first point taken while the loss blew up says nothing). Measured on a "
            "fixed set without dropout or batch noise, so a smaller fall than `stuck_drop` counts: on the realistic "
            "suite's noisy-loss programs (calibration seeds) the point at step 149 of a healthy slow learner (dropout "
            "0.5 on batches of 8) was 1.8-2.6% below the best before it, that of runs that learn nothing (a learning "
            "rate 1000x too small, hidden units dead from the start) 0.2% or above it. A run without an eval loss has "
            "a held-out error metric (a name that says lower is better: MAE, RMSE, an error rate) read the same way, or "
            "without one 1 - R^2 of a held-out coefficient of determination (its squared error over the targets' "
            "variance): a head whose outputs are scaled 1000x too small leaves a heavy-tailed loss too noisy to tell "
            "and the held-out R^2 at 0.01-0.02.",
        )
        collapsed_lr_fraction: float | None = shared.lowered_lr_fraction(
            1e-3,
            "Report at once",
            why="a schedule that reaches 1e-3 of its peak before the loss fell below `ignore_below_fraction` of its "
            "first value ended training before it began (an epoch scheduler stepped every batch)",
            otherwise="off",
        )
        collapsed_lr_steps: int = Field(
            default=10,
            ge=0,
            description="Training steps the learning rate must stay below `collapsed_lr_fraction` of its peak before "
            "it counts as collapsed: a schedule's turning point touches its minimum for a step (a cosine annealed to 0 "
            "where SWALR then raises it, a warm restart); a scheduler stepped every batch keeps it there.",
        )
        stopped_lr_fraction: float | None = shared.lowered_lr_fraction(
            1e-2,
            "Report a schedule that stopped a learning model",
            why="the loss still fell when the rate was first lowered (`min_significance` standard errors and "
            "`stopped_fall_share` of its fall so far, between the halves of the `stuck_window_steps` steps before), "
            "the rate has stayed below this fraction for `stopped_lr_share` of the steps before it got there, and the "
            "loss no longer falls: a plateau scheduler whose mode does not match what it is stepped on (mode 'max' on "
            "a loss, 'min' on an R^2) or stepped on the noisy batch loss cuts the rate at every check while the model "
            "learns (the twenty-sixth, thirty-fifth, forty-fourth and fifty-fourth blind splits' plateau bugs: below "
            "1% of the peak from step 40-220 of 300, the held-out score ending 0.04-0.29 below the healthy twin's); a "
            "cosine or linear schedule spends its last 6% or less below 1%, a step schedule cutting 10x at 30/60/90 "
            "of 100 epochs its last 10%",
            otherwise="off",
        )
        stopped_lr_share: float = Field(
            default=0.25,
            gt=0,
            description="The share of the steps before the rate fell below `stopped_lr_fraction` that it must stay "
            "there (at least `collapsed_lr_steps`) before the schedule counts as having stopped the training.",
        )
        stopped_fall_share: float = Field(
            default=0.25,
            ge=0,
            le=1,
            description="For `stopped_lr_fraction`: the loss's fall between the halves of the `stuck_window_steps` "
            "steps before the rate was first lowered must be at least this share of its fall from the first window's "
            "mean to then: the rate was cut in the model's main descent, not as a converging loss levelled off.",
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
        self.lr_low_since: int | None = None
        """The first step of the current run of recorded learning rates below `collapsed_lr_fraction` of the peak."""
        self.lr_stopped_since: int | None = None
        """The first step of the current run of recorded learning rates below `stopped_lr_fraction` of the peak."""
        self.lr_cut_at: int | None = None
        """The first step whose recorded learning rate was below the peak (LOWERED of it), since the rate last stood
        at its peak."""
        self.fall_at_cut: list[float] | None = None
        """(earlier, later, standard error of their difference, first window's mean) of the loss's means over the
        halves of the `stuck_window_steps` steps before `lr_cut_at`, once judged."""
        self.opening = shared_loss.Spread()
        """The losses in the first `stuck_window_steps` steps."""
        self.window = shared_loss.Spread()
        """The losses of the current `stuck_window_steps` window after the first (the test for a clear fall)."""
        self.window_start: int | None = None
        self.learned: int | None = None
        """The step at whose window the loss had fallen clearly below the reference: not stuck from the start."""
        self.negative: int | None = None
        """The step of the first loss below zero: percent changes of such a loss mean nothing."""
        self.read_eval = shared_loss.LossReader(mode="eval")
        self.eval_best: float | None = None
        """The lowest eval loss before the latest one."""
        self.eval_last: float | None = None
        self.eval_error: str | None = None
        """The held-out error metric (MAE, RMSE, error rate, ...; else an R^2, read as 1 - R^2) that stands in for an eval
        loss the run does not record."""
        self.eval_is_loss = False
        """An eval loss has been read: no error metric stands in for it."""
        self.metrics = metric_progress.MetricProgress()
        """The eval-mode quality metrics the run records (the evidence that it learns where its loss says nothing)."""
        self.classes: int | None = None
        """K, the outputs of the last dense layer (chance level ln K), when the catalogue's module classes tell it."""
        self.pairs: int | None = None
        """B, the batch size the inputs' leading dimension records (chance level ln B of an in-batch contrastive loss)."""
        self.kernels = shared.KernelPair()
        self.grad_ratio: deque[tuple[int, float]] = deque()
        """(step, first/last kernel gradient l2 ratio) of the views in the last `stuck_window_steps` steps."""
        self.block = shared_loss.Spread()
        self.best_error = 0.0
        """The squared standard error of the best block's mean."""
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
        if "lr" in view.scalars:
            self._push_lr(view, p)
        self._push_eval(view, p)
        loss = self.read(view)
        if loss is None or not math.isfinite(loss):
            return []
        self.first = loss if self.first is None else self.first
        self.first_step = view.step if self.first_step is None else self.first_step
        if loss < 0 and self.negative is None:
            self.negative = view.step
        gap = shared.steps_since(self.last_step, view.step)
        self.last_step = view.step
        if view.step < self.first_step + p.stuck_window_steps:
            self.opening.push(loss)
        else:
            self._clear_fall(view, loss, gap, p)
        fast = self._not_learning(view, loss, p)
        if fast:
            return fast
        if self.block_start is None:
            self.block_start = view.step
        self.block.push(loss)
        # blocks are measured in training steps, as SageMaker's num_steps is, not in saved views: a
        # block ends with the last view before the next block, the one the save interval says is next
        if view.step + gap < self.block_start + p.num_steps:
            return []
        mean, error = self.block.mean, self.block.sq_error
        self.block, self.block_start = shared_loss.Spread(), None
        best, best_error = self.best, self.best_error
        if best is None or mean < best:
            self.best, self.best_error = mean, error
        if best is None or mean < best - abs(best) * p.diff_percent / 100.0:
            self.failed = 0
            return []
        self.failed += 1
        if self.failed < p.patience or self.negative is not None:
            return []  # a loss below zero: a percent of it means nothing
        if p.ignore_below_fraction is not None and best < p.ignore_below_fraction * self._reference(
            opening=True
        ):
            return []  # converged after real progress
        rise = math.sqrt(error + best_error)
        if self.learned is not None and mean > best + p.min_significance * rise and rise > 0:
            return []  # learned, then rose beyond the noise: by design (annealing, a curriculum) or unstable
        msg = (
            f"{p.mode} loss: mean {base.fmt(mean)} over the last {p.num_steps} steps is not {base.fmt(p.diff_percent)}% "
            f"below the best earlier block ({base.fmt(best)}), {self.failed} blocks in a row, {self.where(view)}"
        )
        return [self.finding(view, msg, tensor="loss", value=mean, threshold=best)]

    def _push_lr(self, view: StepView, p: Params) -> None:
        """Keep the steps since which the recorded learning rate is below each fraction of its peak, and the step it
        was first lowered at since it last stood at its peak."""

        def since(start: int | None, fraction: float | None) -> int | None:
            low = fraction is not None and self.lr.lowered(fraction)
            return (view.step if start is None else start) if low else None

        self.lr_low_since = since(self.lr_low_since, p.collapsed_lr_fraction)
        self.lr_stopped_since = since(self.lr_stopped_since, p.stopped_lr_fraction)
        if not self.lr.lowered(LOWERED):
            self.lr_cut_at, self.fall_at_cut = None, None  # at its peak (again: a warm restart)
        elif self.lr_cut_at is None:
            self.lr_cut_at = view.step

    def _judge_cut(self, p: Params) -> None:
        """Once the rate has been lowered, the loss's fall over the `stuck_window_steps` steps before: the means of
        their halves and the standard error of their difference (a plateau scheduler that cuts on a real plateau
        does so once the loss has sat still for its patience)."""
        if self.lr_cut_at is None or self.fall_at_cut is not None:
            return
        start = self.lr_cut_at - p.stuck_window_steps
        split = halves([x for s, x in self.recent if start <= s < self.lr_cut_at])
        if split is None:
            # lowered from the start (a decay every step): nothing before to judge
            self.fall_at_cut = [0.0, 0.0, 0.0, 0.0]
            return
        early, late, error = split
        # a rate cut within the first window: the fall since the start is the fall across the halves themselves
        opening = max(self.opening.mean, early) if self.opening.n else early
        self.fall_at_cut = [early, late, error, opening]

    def _stopped_by_schedule(self, view: StepView, last: list[float], p: Params) -> list[base.Finding]:
        """A rate lowered while the loss still fell, held below `stopped_lr_fraction` of its peak for
        `stopped_lr_share` of the steps before, over a last window whose loss no longer falls."""
        if p.stopped_lr_fraction is None or self.lr_stopped_since is None or self.first_step is None:
            return []
        if self.fall_at_cut is None or self.lr_cut_at is None:
            return []
        since = self.lr_stopped_since
        held = max(p.collapsed_lr_steps, p.stopped_lr_share * (since - self.first_step))
        early, late, error, opening = self.fall_at_cut
        if view.step - since < held or not (error > 0 and early - late >= p.min_significance * error):
            return []
        if early - late < p.stopped_fall_share * (opening - late):
            return []  # the last of a long descent: a plateau scheduler that cut as the loss levelled off
        split = halves(last)
        if split is None:
            return []
        first, second, now = split
        if now > 0 and first - second >= p.min_significance * now:
            return []  # still falling: the rate is low but the model learns
        self.reported_fast = True
        msg = (
            f"lr: the learning rate {base.fmt(self.lr.current)} has been below {base.fmt(p.stopped_lr_fraction)} of its "
            f"peak {base.fmt(self.lr.peak)} since step {since} {self.where(view)}, while the {p.mode} loss still fell "
            f"when the rate was first lowered at step {self.lr_cut_at} ({base.fmt(early)} -> {base.fmt(late)} over the "
            f"halves of the {p.stuck_window_steps} steps before, {base.fmt((early - late) / error)} standard errors of "
            f"the batch noise and {base.fmt(100 * (early - late) / (opening - late))}% of its fall from the first "
            f"steps' mean {base.fmt(opening)}) and "
            f"has not fallen over the last {p.stuck_window_steps} steps ({base.fmt(first)} -> "
            f"{base.fmt(second)}): the schedule has stopped the training, which was still learning when it "
            "began to cut"
        )
        hint = (
            "check the scheduler: ReduceLROnPlateau cuts the rate at every check when its mode does not match what it "
            "is stepped on (mode='max' on a loss, 'min' on an accuracy or R^2) or when it is stepped on the noisy "
            "batch loss; a decay tuned for a longer run (or per epoch, stepped per batch) ends training early"
        )
        return [self.finding(view, msg, tensor="lr", value=self.lr.current, hint=hint,
                             threshold=p.stopped_lr_fraction * (self.lr.peak or 0.0))]  # fmt: skip

    def _push_eval(self, view: StepView, p: Params) -> None:
        """Keep the latest eval loss and the lowest before it (train mode only: in eval mode it is the loss judged)."""
        if p.mode != "train" or not view.eval_scalars:
            return
        self.metrics.push(view)
        x = self.read_eval(view)
        if x is not None and not self.eval_is_loss:
            # an eval loss outranks an error metric read before it: its points are not comparable with the metric's
            self.eval_is_loss, self.eval_error, self.eval_best, self.eval_last = True, None, None, None
        elif x is None and not self.eval_is_loss:
            if self.eval_error is None:
                self.eval_error = held_out_error(view.eval_scalars)
            x = error_of(self.eval_error, view.eval_scalars) if self.eval_error is not None else None
        if x is not None and math.isfinite(x):
            if self.eval_last is not None:
                self.eval_best = (
                    self.eval_last if self.eval_best is None else min(self.eval_best, self.eval_last)
                )
            self.eval_last = x

    def _clear_fall(self, view: StepView, loss: float, gap: int, p: Params) -> None:
        """Add the loss to the current window after the first; at the window's end, note whether its mean fell
        `stuck_drop` below the reference and `min_significance` standard errors below the first window's mean."""
        assert self.first_step is not None
        if self.window_start is None:
            # windows aligned to the first step: first + W, first + 2W, ...
            self.window_start = view.step - (view.step - self.first_step) % p.stuck_window_steps
        self.window.push(loss)
        if view.step + gap < self.window_start + p.stuck_window_steps:
            return
        window, self.window, self.window_start = self.window, shared_loss.Spread(), None
        if self.learned is not None or not self.opening.n:
            return
        reference = self._reference(opening=True)
        pairs = self._pairs_chance(self.opening.mean)
        if pairs is not None:
            reference = min(reference, pairs)  # falling to ln B, chance of a contrastive loss, is no learning
        error = shared_loss.error_of_difference(window, self.opening)
        # below the stuck bound beyond the noise, as a stuck window must be above it
        if reference * (1 - p.stuck_drop) - window.mean >= p.min_significance * error:
            self.learned = view.step

    def _reference(self, *, opening: bool = False) -> float:
        """The loss "learning" is measured from: the first loss, or chance level ln K when that is lower (an
        inflated first loss, from heavy dropout or a bad init, falling to chance is no learning). With `opening` and
        K unknown (no module classes, one output), the mean of the first `stuck_window_steps` steps where that is
        lower: an init's large logits give a first loss 30% above where the model sits within a few dozen steps
        when it learns nothing (labels permuted against the inputs: 3.0, then 2.3 for 500 steps). Chance level
        counts only for a loss that starts within `CHANCE_FACTOR` of it."""
        first = self.first or 0.0
        start = self.opening.mean if self.opening.n else first
        if self.classes and start <= CHANCE_FACTOR * math.log(self.classes):
            return min(first, math.log(self.classes))
        if opening and self.opening.n:
            return min(first, self.opening.mean)
        return first

    def _chance_level(self, opening: float, recent: float) -> tuple[float, int, str] | None:
        """(ln n, n, what n counts) of the chance level nearest the recent loss: ln K for the K outputs of the last
        dense layer; ln B for the batch of B inputs, chance level of an in-batch contrastive loss (InfoNCE, CLIP:
        each example's match among the batch's B candidates), only for a loss that started within `CHANCE_FACTOR` of
        it (a loss that starts far below ln B is not over the batch)."""
        levels = []
        if self.classes:
            levels.append((math.log(self.classes), self.classes, f"its {self.classes} outputs"))
        pairs = self._pairs_chance(opening)
        if pairs is not None and self.pairs:
            levels.append((pairs, self.pairs, f"an in-batch contrastive loss over {self.pairs} pairs"))
        return min(levels, key=lambda lv: abs(recent - lv[0]), default=None)

    def _pairs_chance(self, opening: float) -> float | None:
        """ln B for the recorded batch B (not the same as K), for a loss whose first window's mean is within
        `CHANCE_FACTOR` of it; else None."""
        if not self.pairs or self.pairs == self.classes:
            return None
        chance = math.log(self.pairs)
        return chance if 0 < opening <= CHANCE_FACTOR * chance else None

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

    @staticmethod
    def _leaving(window: list[float], p: Params) -> bool:
        """The window's second half below its first by `leaving_significance` standard errors of their batch noise,
        at a pace that would take the loss a further `stuck_drop` down within another `stuck_steps` steps (the halves'
        means lie half a window apart)."""
        split = halves(window)
        if split is None or p.leaving_significance is None or p.stuck_steps is None:
            return False
        early, late, error = split
        fall = early - late
        pace = p.stuck_drop * abs(early) * (p.stuck_window_steps / 2) / p.stuck_steps
        return error > 0 and fall >= p.leaving_significance * error and fall >= pace

    def _not_learning(self, view: StepView, loss: float, p: Params) -> list[base.Finding]:
        """The fast paths: no progress at all since the first view, or a learning rate collapsed before any."""
        self.recent.append((view.step, loss))
        while self.recent and self.recent[0][0] <= view.step - 2 * p.stuck_window_steps:
            self.recent.popleft()  # two windows: the last one, and the one before it
        self._judge_cut(p)
        if view.names:
            if self.classes is None:
                self.classes = shared.output_classes(view)
            if self.pairs is None:
                self.pairs = input_batch(view)
            self._gradient_reaches_input(view, p)
        first = self.first
        if self.reported_fast or first is None or self.first_step is None or not view.saved:
            return []  # decided at saved steps: between them a view adds its loss to the windows
        cut = view.step - p.stuck_window_steps
        last = [x for s, x in self.recent if s > cut]
        before = [x for s, x in self.recent if s <= cut]
        if not first > 0:  # the other paths weigh falls as fractions of the loss
            return self._stopped_by_schedule(view, last, p)
        recent = sum(last) / len(last)
        learned = p.ignore_below_fraction if p.ignore_below_fraction is not None else 0.8
        if (
            p.collapsed_lr_fraction is not None
            and self.lr.lowered(p.collapsed_lr_fraction)
            and self.lr_low_since is not None
            and view.step - self.lr_low_since >= p.collapsed_lr_steps
            and recent > learned * self._reference()
        ):
            self.reported_fast = True
            msg = (
                f"lr: the learning rate {base.fmt(self.lr.current)} is below {base.fmt(p.collapsed_lr_fraction)} of its "
                f"peak {base.fmt(self.lr.peak)} (since step {self.lr_low_since}) {self.where(view)} while the {p.mode} loss {base.fmt(recent)} is still "
                f"{base.fmt(100 * recent / first)}% of its first value {base.fmt(first)}: training has stopped before "
                "the model learned"
            )
            hint = (
                "check the scheduler: one meant to step once per epoch (StepLR, MultiStepLR, ExponentialLR) "
                "stepped every batch decays the learning rate to nothing in a few hundred steps"
            )
            return [self.finding(view, msg, tensor="lr", value=self.lr.current, hint=hint,
                                 threshold=p.collapsed_lr_fraction * (self.lr.peak or 0.0))]  # fmt: skip
        stopped = self._stopped_by_schedule(view, last, p)
        if stopped:
            return stopped
        span = view.step - self.first_step
        if p.stuck_steps is None or span < p.stuck_steps:
            return []
        if self.learned is not None or self.negative is not None:
            return []  # a loss that fell clearly is not stuck from the start; one below zero has no scale for "2%"
        opening = self.opening.mean if self.opening.n else first
        level = self._chance_level(opening, recent)
        chance = level[0] if level is not None else None
        window = shared_loss.Spread.of(last)
        # Against the first loss, and against the mean of the first window (one batch's loss can be an outlier).
        # Where the run's own eval metric closed a fifth of its gap to its best score, the model learns, and a loss
        # above its first value alone says nothing against it: a self-distillation loss starts low, teacher and
        # student one network, and rises as the teacher's target moves, while it falls from its first window.
        # A loss still at its first window's level, or at chance level, stays the judge whatever the metric; one that
        # rose clearly above that level too moved, and with the metric learning it is an objective that rises by
        # design (a VQ-VAE's codebook and commitment terms grow as the encoder's outputs spread, while its held-out
        # reconstruction R^2 rises from 0.05 to 0.5), not a model that learned nothing.
        progress = self.metrics.learned(1 - learned, p.min_significance) or self.metrics.skilled(
            1 - learned, p.min_significance
        )
        from_first = recent > first * (1 - p.stuck_drop) and progress is None
        opening_noise = math.sqrt(window.var / window.n + window.var / max(self.opening.n, 1))
        above_opening = recent - opening * (1 + p.stuck_drop) >= p.min_significance * opening_noise
        near_chance = chance is not None and abs(recent - chance) <= p.stuck_drop * chance
        # A loss at its first window's level stays the judge against a learning metric only at chance level, where
        # the outputs predict nothing whatever the features score; elsewhere (a Tweedie deviance or a heavy-tailed
        # regression loss, mostly irreducible noise, falling 2-5% while the held-out R^2 climbs from 0.45 to 0.8)
        # the run's own held-out metric is the better evidence that the model learns.
        from_opening = recent > opening * (1 - p.stuck_drop) and not (
            progress is not None and (above_opening or not near_chance)
        )
        at_first = from_first or from_opening
        # at chance and no longer falling towards it (a slow start passes through chance level on its way down)
        flat = bool(before) and recent >= (1 - p.stuck_drop) * sum(before) / len(before)
        # With a metric that says the model learns, a loss stays "at chance" only where its outputs predict nothing
        # for any batch: uniform outputs score ln K on every batch, so its batch-to-batch spread is within `stuck_drop`
        # of chance level (an in-batch loss pinned at ln B while the features' accuracy climbs). A loss that swings 6%
        # from batch to batch around 0.70 (a point process's likelihood near ln 2, its held-out gain rising 0.54 ->
        # 0.71) predicts some batches better than others: it passes near ln K, its outputs are not uniform.
        pinned = chance is not None and math.sqrt(window.var) <= p.stuck_drop * chance
        at_chance = near_chance and flat and (progress is None or pinned)
        if not (at_first or at_chance):
            return []
        if self._leaving(last, p):
            return []  # falling away from its plateau now (a slow start): judged again at the next saved step
        ratio = min((r for _, r in self.grad_ratio), default=None)
        # A loss that rose clearly above its first value is no plateau of vanishing gradients: steps too small to
        # reach the first layers leave the loss where it was, they do not make it worse (batches that swing the
        # model from class to class, label-sorted data, do)
        rose = recent - first * (1 + p.stuck_drop) >= p.min_significance * math.sqrt(
            window.var / window.n + window.var
        )
        if ratio is not None and ratio < p.stuck_min_gradient_ratio and not rose:
            return []  # a plateau the gradient barely reaches: vanishing_gradient's, or one the run breaks out of
        # Each reference the window is still within `stuck_drop` of, and the noise of that claim. Under "stuck from
        # the start" the noise now is the noise then, so the last window's spread stands for both sides: the first
        # window's spread holds the init's transient (a learning rate far too high jumps 10x in its first steps).
        unit = window.var
        claims = []
        if from_first:
            claims.append((first, f"its first value {base.fmt(first)}", math.sqrt(unit / window.n + unit)))
        if from_opening:
            what = f"its mean over the first {p.stuck_window_steps} steps, {base.fmt(opening)},"
            claims.append((opening, what, opening_noise))
        if at_chance and level is not None:
            claims.append(
                (level[0], f"chance level ln {level[1]} = {base.fmt(level[0])}", math.sqrt(unit / window.n))
            )

        def strength(claim: tuple[float, str, float]) -> float:
            margin = recent - claim[0] * (1 - p.stuck_drop)
            return math.inf if claim[2] == 0 else margin / claim[2]

        reference, claimed, noise = max(claims, key=strength)
        significant = strength((reference, claimed, noise)) >= p.min_significance
        eval_best, eval_last = self.eval_best, self.eval_last
        # whether the held-out loss (or error) stopped falling; None without one
        eval_stuck: bool | None = None
        if eval_best is not None and eval_last is not None and eval_best > 0:
            eval_stuck = eval_last > eval_best * (1 - p.stuck_eval_drop)
        if eval_stuck is False and not rose:
            # the held-out loss (or error) still falls: a slow learner, whatever a training loss at its first level
            # says (dropout 0.5 on batches of 8, read at every step); one that rose beyond the noise is no plateau
            return []
        if not (significant or eval_stuck):
            return []  # too noisy to tell a stuck run from a slow one, and no eval loss says it is stuck
        self.reported_fast = True
        drop = base.fmt(100 * p.stuck_drop)
        reach = (
            f"; the gradient reaches the first layer (first/last ratio {base.fmt(ratio)} or more)"
            if ratio is not None and ratio >= p.stuck_min_gradient_ratio
            else ""
        )
        if significant:
            evidence = (
                f"; {base.fmt(recent - reference * (1 - p.stuck_drop))} above the bound "
                f"{base.fmt(reference * (1 - p.stuck_drop))} that {claimed} less {drop}% sets, "
                f"{base.fmt(p.min_significance)} standard errors of the batch noise ({base.fmt(noise)}) or more"
            )
        else:
            evidence = (
                f"; the batch noise (standard error {base.fmt(noise)}) cannot tell that alone, and the "
                f"{'eval loss' if self.eval_error is None else error_name(self.eval_error)} "
                f"{base.fmt(self.eval_last)} is not {base.fmt(100 * p.stuck_eval_drop)}% below its best earlier eval "
                f"point {base.fmt(self.eval_best)}"
            )
        hint = (
            "check that the labels match the inputs (not shuffled apart), that the network has nonlinearities and "
            "the loss takes raw logits (no softmax before CrossEntropyLoss), dropout's p, and the learning rate"
        )
        if progress is not None:
            evidence += (
                f"; {progress.name} moved from {base.fmt(progress.first)} to {base.fmt(progress.last)}, which does not "
                "outweigh a loss at this level"
            )
        # The evidence is the bound the mean had to fall below (the reference less `stuck_drop`), quoted as such.
        if at_first:
            reference, what = (
                (first, "its first value")
                if from_first
                else (opening, f"its mean over the first {p.stuck_window_steps} steps,")
            )
            bound = reference * (1 - p.stuck_drop)
            if recent > reference * (1 + p.stuck_drop):
                # the same condition holds for a loss that went up: say so, not "within 2%"
                state = (
                    f"is {base.fmt(recent / reference)}x {what} {base.fmt(reference)} (it had to fall below "
                    f"{base.fmt(bound)}) after {span} steps {self.where(view)}: the loss rose instead of falling"
                )
                hint = (
                    "a loss that rises from the start: check the learning rate (far too high) and its warmup, the "
                    "sign of the loss (minimised, not maximised), and that the labels match the inputs"
                )
            else:
                state = (
                    f"is still within {drop}% of {what} {base.fmt(reference)} (above {base.fmt(bound)}) after {span} "
                    f"steps {self.where(view)}: the model has learned nothing"
                )
        else:
            assert chance is not None and level is not None
            bound = chance * (1 - p.stuck_drop)
            state = (
                f"is still within {drop}% of ln {level[1]} = {base.fmt(chance)}, chance level for {level[2]} (above "
                f"{base.fmt(bound)}; first value {base.fmt(first)}), after {span} steps {self.where(view)}: the model "
                "has learned nothing"
            )
            if level[1] != self.classes:
                hint = (
                    "an in-batch contrastive loss (InfoNCE, CLIP) at ln(batch) has not learned to tell the matching "
                    "pair from the others: check that the two views are drawn with the same indices (not two "
                    "separately shuffled loaders), the temperature's direction, and that the labels are arange(batch)"
                )
        msg = f"{p.mode} loss: mean {base.fmt(recent)} over the last {p.stuck_window_steps} steps {state}{evidence}{reach}"
        return [self.finding(view, msg, tensor="loss", value=recent, threshold=bound, hint=hint)]

    def get_state(self) -> dict[str, Any]:
        return {
            "block": self.block.get_state(), "start": self.block_start, "last": self.last_step, "failed": self.failed,
            "best": self.best, "best_error": self.best_error, "first": self.first,
            "first_step": self.first_step, "recent": [list(x) for x in self.recent], "reported_fast": self.reported_fast,
            "classes": self.classes, "pairs": self.pairs, "grad_ratio": [list(x) for x in self.grad_ratio],
            "opening_spread": self.opening.get_state(), "window": self.window.get_state(),
            "window_start": self.window_start, "learned": self.learned, "negative": self.negative,
            "eval_best": self.eval_best, "eval_last": self.eval_last, "lr_low_since": self.lr_low_since,
            "lr_stopped_since": self.lr_stopped_since, "lr_cut_at": self.lr_cut_at, "fall_at_cut": self.fall_at_cut,
            "eval_error": self.eval_error, "eval_is_loss": self.eval_is_loss,
            "metrics": self.metrics.get_state(), **self.lr.get_state(),
        }  # fmt: skip

    def set_state(self, state: dict[str, Any]) -> None:
        self.block.set_state(state.get("block"))
        if "block" not in state and state.get("n"):  # a state saved before blocks kept their spread
            self.block.set_state([0.0, float(state.get("sum", 0.0)), 0.0, int(state["n"])])
        self.block_start = state.get("start")
        self.last_step = state.get("last")
        self.failed = int(state.get("failed", 0))
        self.best = state.get("best")
        self.best_error = float(state.get("best_error", 0.0))
        self.first = state.get("first")
        self.first_step = state.get("first_step")
        self.recent = deque((int(s), float(x)) for s, x in state.get("recent", []))
        self.reported_fast = bool(state.get("reported_fast", False))
        self.classes = state.get("classes")
        self.pairs = state.get("pairs")
        self.opening.set_state(state.get("opening_spread"))
        if "opening_spread" not in state and state.get("opening"):  # saved as (sum, count)
            total, n = state["opening"]
            self.opening.set_state([0.0, float(total), 0.0, int(n)])
        self.window.set_state(state.get("window"))
        self.window_start = state.get("window_start")
        self.learned = state.get("learned")
        self.negative = state.get("negative")
        self.eval_best = state.get("eval_best")
        self.eval_last = state.get("eval_last")
        self.eval_error = state.get("eval_error")
        self.eval_is_loss = bool(state.get("eval_is_loss", False))
        self.metrics.set_state(state.get("metrics"))
        self.grad_ratio = deque((int(s), float(x)) for s, x in state.get("grad_ratio", []))
        self.lr.set_state(state)
        self.lr_low_since = state.get("lr_low_since")
        self.lr_stopped_since = state.get("lr_stopped_since")
        self.lr_cut_at = state.get("lr_cut_at")
        fall = state.get("fall_at_cut")
        self.fall_at_cut = None if fall is None or len(fall) != 4 else [float(x) for x in fall]
