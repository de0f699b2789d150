"""`metric_against_loss`: a quality metric the run records getting worse while its training loss improves.

A program that optimises the wrong objective (a policy-gradient or reward sign flipped, labels shifted,
mixture weights normalised over the wrong axis, a ranking target reversed) leaves every tensor statistic
healthy: the loss falls, gradients and updates look normal. What it cannot hide is the metric the author
records beside the loss (`hook.record_scalar("val_acc", ..., mode="eval")`, an episode return, an F1): it
moves the wrong way while the loss improves.

Which way a metric should move is read from its name (`direction`): names with a token of `HIGHER`
(accuracy, AUC, F1, IoU, PCK, reward, return, score, ...) or a stem of `AT_CUTOFF` with its cutoff (`hr10`, `delta1`)
should rise, names with a token of `LOWER` (MAE,
perplexity, error rate, ...) should fall; a name with tokens of both, of neither (a Q-value, a KL term,
a sparsity), or containing "loss" is not judged. Each metric and the loss are compared between two
windows: the first records of the run and the latest ones, each window at least `min_records` records
spanning at least `window_steps` steps, the latest one starting after the first ends (a metric recorded
fewer than twice `min_records` times is never judged). The finding needs, at once:
- the loss's latest window mean below its first by `loss_significance` standard errors (the spread of
  the losses within the windows): the objective is being optimised;
- the metric's latest window worse than its first by `metric_significance` standard errors of its own
  noise, and by at least `min_worsening` of the first window's magnitude: a validation accuracy that
  slips 1% once a model starts to overfit is `overfit`'s business, not a wrong objective;
- both at `confirm` records of the metric in a row (the latest window slides one record at a time: a
  noisy metric tested again at every record crosses a 2-standard-error bound by chance).

It reads every step's train scalars (`every_step`): a training metric recorded per batch is noisy and
needs its samples. Healthy runs it leaves alone on the detection benchmarks (2-core x86-64 VM figures in
docs/calibration.md): noisy RL returns, accuracy flat at 100% while the loss still falls, label smoothing,
mixup, GANs (several losses and no total: no loss is read), a VAE whose KL weight raises its loss, early
stopping, and metrics recorded a few times. Reported once per run.

A second reading needs no worsening: an accuracy (its chance level 1/K for the K outputs of the last dense layer:
`trainguard.rules.chance`) that reads exactly the same value at every record of both windows, within
`frozen_band` of the way from chance to 1 (an untrained model's score, or one frozen after its first steps), while the loss fell by
`loss_significance` standard errors. A model that trains changes its held-out predictions; one whose score does
not move by a single example is not the model that trains (an EMA teacher whose update rebinds a name instead of
writing the teacher's tensors in place, an EMA built with decay 1.0, a stale copy evaluated). An accuracy frozen at its best (1) or well above
chance (a saturated language model's 0.82) is not judged, nor an R² (one clipped at 0 reads 0 however its model
changes: the chance-level reading below judges it).

Two chance-level readings need no worsening either (`chance_band`), on the metrics whose chance level does not
depend on what the run leaves unrecorded: an R² (0, predicting the mean), an area under the ROC curve (0.5, a
random ranking), a correlation of the scores with the truth (0, no relation) and a scorer's Gini coefficient (2 AUC -
1, 0; `chance.ranking_chance_level`). Such a metric at most `chance_band` of the way from chance to 1 at
every record of both windows, its latest window not significantly above its first (a slow start rises), while
the loss fell by `loss_significance` standard errors: what the loss optimises does not carry to held-out data at
all (a KL term multiplied by the dataset size, so the posterior stays at its prior; coordinates in pixel units
that a Fourier-feature network fits on its training pixels and nowhere between them; a reward model fitted to swapped
preferences whose held-out correlation is clipped at 0). And a ROC AUC or a correlation whose latest window lies below
chance by `metric_significance` standard errors of its spread and by `min_worsening` of the way to a reversed order (0
for an AUC, -1 for a correlation), while the loss fell: the model ranks the negatives above the positives (a pairwise
loss with its positive and negative swapped). Its
first window need not be better: an AUC that starts at chance and falls is judged against chance, not against a
first window whose spread holds the fall itself.

The band reading needs no fall of the loss on a held-out (eval-mode) R² or ROC AUC: at chance at every record of
both windows beside a loss that fell less than `loss_significance` standard errors between them, the model learned
nothing that carries to held-out data, and has stopped learning (random Fourier features redrawn at every forward
pass: the loss falls by a fifth in its first 5 steps as the output fits the target's mean, then stays flat, too early
and too far for `loss_not_decreasing`'s stuck path, which asks for a loss still within 2% of its first value). On the
detection benchmarks' healthy runs no held-out R² or AUC stayed at chance past its 6th record (step 150-174 of 300);
the two windows span 8. A training-mode metric is not read so: it scores the batches the loss was taken on, and says
nothing the flat loss does not.
A first-record reading compares a held-out (eval-mode) metric's latest `min_records` records (spanning
`window_steps` steps, the first record left out) with its very first record, while the loss fell by
`loss_significance` standard errors: worse by `min_worsening` of the first record's magnitude, and by as many
standard errors as a t statistic needs to be as unlikely as `metric_significance` normal ones (`t_bound`): the noise
of one record and of the window's mean is taken from the spread of every record after the first (a trend only widens
it), and a spread estimated from a few records is itself noisy (5 records after the first: a bound of 5.9; 7: 4.7;
at a plain 3 a pure-noise held-out return whose first record was a high draw was reported in 1 of 20 synthetic
runs). The two-window reading cannot see a metric that falls within its first window (targets given as ranks
instead of the sorting permutation: a pointer network's position accuracy 0.28-0.32 at its first record (step 24),
0.15-0.21 at every later one, a first window whose spread holds the fall itself). On the detection benchmarks'
stored runs (2-core x86-64 VM) no healthy held-out metric's last 4 records lay more than 9% below its first record
(a graph attention network under dropout 0.6, 0.5 standard errors); the bugs it finds lose 35-46%. A training-mode
metric is not read so: one batch's score is no baseline.

A fit-not-carried reading needs no worsening and no chance level: the loss's latest window at most `fit_share` (1%)
of its first (the training targets fitted almost perfectly) while a held-out share of examples scored right (an
accuracy, an exact match, F1, hits; 0 at worst, 1 at best) stays at most `floor_band` (0.1) at every record of its
first window and its latest (the first-record reading's window). A fit that close carries to held-out data from the
same source, unless the labels the loss reads are not the ones the metric scores (an extractive reader trained on
the exclusive end of each span while its exact match reads spans inclusively: loss 3.3 to 0.002, exact match 0-0.064
at every record) or the labels are memorised noise. Its bound sits far from both healthy and buggy figures: on the
detection benchmarks' stored runs (2-core x86-64 VM) no healthy held-out share stayed at or below 0.15 past its first
record, and the loss ratios it asks for are three orders of magnitude.

A never-right reading needs no fit that close: such a held-out share at exactly 0 at every record of its first window
and its latest (`never_right`) while the loss fell by `loss_significance` standard errors. Not one held-out example
scored right at any record while the model trains: what the loss optimises does not reach what the metric scores (a
scale-invariant log loss for depth with its weight at 1, which leaves the overall scale free: the loss falls 40-fold
while the share of pixels within a factor 1.25 reads 0 at every record; heatmap targets of width zero, all empty, so
the heatmap's peak lies anywhere). A share is a count over held-out examples: exactly 0 is no noise around a low
level, and a model that learns leaves 0 within its first few records. The two windows are apart, so the reading needs
at least twice `min_records` records at 0: on the detection benchmarks' stored runs (2-core x86-64 VM) a healthy
held-out share read 0 at most at its first 4 records (a CTC recogniser's exact match, steps 24-99, then 0.1 and 0.98;
a segmentation network's mean IoU under plain SGD at its first 3).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from pydantic import Field

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base, chance, shared, shared_loss
from trainguard.rules.record_windows import Windows, complete, mean_err, t_bound, z_of
from trainguard.rules.step_view import GROUP_PREFIX, StepView

HIGHER = frozenset(
    {
        "acc", "accuracy", "auc", "auroc", "auprc", "f1", "iou", "miou", "dice", "score", "skill", "reward",
        "rewards", "return", "returns", "success", "recall", "precision", "hits", "r2", "exact", "bleu",
        "rouge", "map", "ndcg", "mrr", "explained", "1nn", "top1", "top5", "pck", "purity", "correlation", "corr",
        "pearson", "spearman", "kendall", "cindex", "concordance", "gain", "progress", "removed", "reduction",
        "reduced", "improvement", "gini",
    }
)  # fmt: skip
"""Name tokens of metrics that should rise (a trailing number is dropped: `hits10`, `recall5`). The amount taken off
an error counts too (`error_removed`, `mse_reduction`, as `deviance_explained`): beside a token of `LOWER` it makes a
name of both, which is not judged (a colouriser's `val_colour_error_removed`, the share of its colour error removed,
rose as its loss fell and was read as an error that grew: the sixteenth blind split, docs/calibration.md)."""
AT_CUTOFF = frozenset({"hr", "delta"})
"""Name stems that name a share scored right only with their cutoff attached: `hr10` (the hit rate at 10 of a
recommender), `delta1` (the share of depth pixels within a factor 1.25 of the truth). Alone, `hr` may be an hour
and `delta` any difference: they are not read."""
_CUTOFF = re.compile(r"([a-z]+)[0-9]+")
LOWER = frozenset(
    {"mae", "mse", "rmse", "mape", "error", "err", "ppl", "perplexity", "nll", "wer", "cer", "ter", "impurity"}
)  # fmt: skip
"""Name tokens of metrics that should fall."""
_TOKEN = re.compile(r"[a-z0-9]+")
SHARES = frozenset(
    {
        "acc",
        "accuracy",
        "exact",
        "f1",
        "iou",
        "miou",
        "dice",
        "hits",
        "recall",
        "precision",
        "top1",
        "top5",
        "success",
        "pck",
        "purity",
        "hr",
        "delta",
    }
)
"""Name tokens of a share of examples scored right: 0 at worst, 1 at best (the fit-not-carried reading), with a
stem of `AT_CUTOFF` and its number (`hr5`, `delta1`)."""


def _tokens(low: str) -> set[str]:
    """The name tokens of a lower-cased metric name as `HIGHER`, `LOWER` and `SHARES` read them: a trailing number
    dropped (`hits10` reads `hits`) unless the token is known with it (`top5`); a stem of `AT_CUTOFF` with its
    number reads as the stem itself, and without one as nothing."""
    out = set()
    for t in _TOKEN.findall(low):
        if t in HIGHER or t in LOWER:
            out.add(t)
            continue
        cut = _CUTOFF.fullmatch(t)
        stem = t.rstrip("0123456789")
        if stem in AT_CUTOFF:
            if cut:
                out.add(stem)
            continue
        out.add(stem)
    if {"c", "index"} <= out:
        out.add("cindex")  # `c_index`: the concordance index, spelt in two tokens
    return out


@functools.lru_cache(maxsize=4096)
def is_share(name: str) -> bool:
    """Whether the metric `name` is a share of examples scored right (0 at worst, 1 at best)."""
    return bool(_tokens(name.lower()) & SHARES)


@functools.lru_cache(maxsize=4096)
def direction(name: str) -> int:
    """+1 for a metric whose name says higher is better, -1 lower is better, 0 not known (not judged)."""
    low = name.lower()
    if "loss" in low or low.startswith(GROUP_PREFIX):
        return 0
    tokens = _tokens(low)
    up, down = bool(tokens & (HIGHER | AT_CUTOFF)), bool(tokens & LOWER)
    return 0 if up == down else (1 if up else -1)


class MetricAgainstLoss(base.Rule):
    name = "metric_against_loss"
    category = RuleCategory.PROGRESS
    default_action = Action.NOTIFY
    every_step = True
    needs = "quality metric (a scalar named like accuracy, AUC, F1, reward, return, score, MAE, perplexity)"
    summary = (
        "A recorded quality metric (accuracy, reward, F1, MAE, ...) getting significantly worse while the "
        "training loss falls significantly: the loss optimises something else than the metric."
    )
    hint = (
        "check the objective against what the metric measures: the sign of a reward or policy-gradient term, "
        "labels shifted or in another order than the outputs, the axis a normalisation or a distance runs over"
    )

    class Params(base.Params):
        window_steps: int = Field(
            default=50,
            ge=1,
            description="Steps a window (the first records of a series, its latest ones) spans at least.",
        )
        min_records: int = Field(
            default=4, ge=2, description="Records a window holds at least (its noise is estimated from them)."
        )
        loss_significance: float = Field(
            default=3.0,
            ge=0,
            description="Standard errors by which the loss's latest window must lie below its first.",
        )
        metric_significance: float = Field(
            default=3.0,
            ge=0,
            description="Standard errors of the metric's own noise by which its latest window must be worse "
            "than its first. With 2 (and `confirm` 1) a metric of pure noise beside a falling loss was reported "
            "in 8 of 100 synthetic runs (its mean 0.2 below zero, spread 0.3); with 3 and `confirm` 2 in none.",
        )
        min_worsening: float = Field(
            default=0.25,
            ge=0,
            description="Share of the first window's magnitude by which the metric must be worse: on the "
            "detection benchmarks' healthy runs a validation metric slipped by at most 1.3% as a model "
            "overfit; the wrong objectives lost 29-100%.",
        )
        confirm: int = Field(
            default=2,
            ge=1,
            description="Records of the metric in a row at which all of it must hold: the latest window slides "
            "one record at a time, and a noisy metric compared again at each one would cross its significance "
            "bound by chance.",
        )
        frozen_band: float | None = Field(
            default=0.5,
            ge=0,
            lt=1,
            description="The frozen-metric reading: an accuracy (chance level 1/K) that reads exactly the same value "
            "at every record of its first and latest windows, at most this fraction of the way from chance to 1, "
            "while the loss fell (`loss_significance`). An untrained model's accuracy scatters around 1/K with the "
            "classes its argmax happens to favour: a 4-class MLP's at initialisation read 0.15-0.38 over torch seeds "
            "0-5; a model frozen after its first step scores more on an easy task (an EMA built with decay 1.0 kept "
            "a tabular ResNet's weights after one step: 0.43-0.56 for 4 classes, 0.24-0.41 of the way). On the "
            "detection benchmarks' healthy runs an accuracy near chance changed within 3 eval records (a mean "
            "teacher's at 0.25-0.28 for its first 2-3), and no accuracy below 1 stayed exactly put while the loss "
            "fell (none even at a band of 0.99); the half-way bound keeps a saturated model's accuracy (a language "
            "model's 0.82, 0.8 of the way from its 1/K) out. None: off.",
        )
        chance_band: float | None = Field(
            default=0.1,
            ge=0,
            lt=1,
            description="The chance-level readings, on an R² (chance level 0) or an area under the ROC curve "
            "(0.5): every record of the metric's first and latest windows at most this fraction of the way from "
            "chance to 1 while the loss fell (`loss_significance`); or, for a ROC AUC, its latest window below 0.5 "
            "by `metric_significance` standard errors and `min_worsening` of the way to 0. On the detection "
            "benchmarks' healthy runs the R² and AUCs closest to chance reached 0.13 of the way within their first 8 "
            "eval records (a mixture of experts whose R² read 0 at its first 2, then rose significantly), and no "
            "healthy AUC averaged below 0.497 over 4 records; the bugs found sit at 0-0.06 of the way, or at "
            "AUC 0.18-0.22. None: off.",
        )
        fit_share: float | None = Field(
            default=0.01,
            gt=0,
            lt=1,
            description="The fit-not-carried reading: the loss's latest window mean at most this share of its first "
            "window's (a training objective fitted almost perfectly) while a held-out share of examples scored right "
            "(accuracy, exact match, F1, hits, ...) stays at most `floor_band` at every record of its first window and "
            "its latest. On the detection benchmarks' stored runs (2-core x86-64 VM) no healthy run's held-out share "
            "stayed at or below 0.15 past its first record; the reader trained on one-past-the-end span labels fits "
            "its loss to 0.1% of its start and scores 0-0.064. None: off.",
        )
        never_right: bool = Field(
            default=True,
            description="The never-right reading: a held-out share of examples scored right (accuracy, PCK, hits at "
            "k, ...) at exactly 0 at every record of its first window and its latest while the loss fell "
            "(`loss_significance`), whatever the fall's size. On the detection benchmarks' stored runs (2-core x86-64 "
            "VM) a healthy held-out share read 0 at most at its first 4 records (a CTC recogniser's exact match); the "
            "two windows, apart, hold 8 at least. A depth network trained with a fully scale-invariant loss read 0 at "
            "every record. False: off.",
        )
        floor_band: float = Field(
            default=0.1,
            ge=0,
            lt=1,
            description="The fit-not-carried reading's bound on the held-out share (0 at worst, 1 at best).",
        )
        loss_name: str | None = Field(
            default=None, description="Scalar to read; default `loss`, else the only scalar named *loss*."
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: MetricAgainstLoss.Params = self.params  # type: ignore[assignment]
        self.read = shared_loss.LossReader(name=p.loss_name, single=True)
        self.loss = Windows()
        self.metrics: dict[str, Windows] = {}
        """Per directed metric, keyed `mode:name`."""
        self.streak: dict[str, int] = {}
        """Per metric: its latest records in a row at which it was worse while the loss fell."""
        self.reported = False
        self.classes: int | None = None
        """K, the outputs of the last dense layer (an accuracy's chance level 1/K), when the catalogue tells it."""

    def has_input(self, view: StepView) -> bool:
        return any(direction(n) for n in (*view.scalars, *view.eval_scalars))

    def check(self, view: StepView) -> list[base.Finding]:
        p: MetricAgainstLoss.Params = self.params  # type: ignore[assignment]
        if self.reported:
            return []
        if view.names and self.classes is None:
            self.classes = shared.output_classes(view)
        loss = self.read(view)
        if loss is not None and math.isfinite(loss):
            self.loss.add(view.step, loss, p.min_records, p.window_steps)
        fresh = []
        for mode, scalars in (("train", view.scalars), ("eval", view.eval_scalars)):
            for name, x in scalars.items():
                if math.isfinite(x) and direction(name):
                    key = f"{mode}:{name}"
                    self.metrics.setdefault(key, Windows()).add(
                        view.step, float(x), p.min_records, p.window_steps
                    )
                    fresh.append(key)
        if not fresh:
            return []
        zl, l1, l2 = 0.0, 0.0, 0.0
        if self.loss.apart(p.min_records, p.window_steps):
            l1, l2, shift = self.loss.compare()
            zl = -shift
        for key in fresh:
            found = None
            if zl >= p.loss_significance:
                # the chance-level readings first: an AUC below 0.5 says more than "it got worse"
                found = (
                    self._chance(view, key, (l1, l2, zl), p)
                    or self._judge(view, key, (l1, l2, zl), p)
                    or self._from_first(view, key, (l1, l2, zl), p)
                    or self._frozen(view, key, (l1, l2, zl), p)
                    or self._not_carried(view, key, (l1, l2, zl), p)
                )
            elif key.startswith("eval:") and self.loss.apart(p.min_records, p.window_steps):
                found = self._chance(view, key, (l1, l2, zl), p, fell=False)
            self.streak[key] = self.streak.get(key, 0) + 1 if found is not None else 0
            if found is not None and self.streak[key] >= p.confirm:
                self.reported = True
                return [found]
        return []

    def _judge(
        self, view: StepView, key: str, loss: tuple[float, float, float], p: MetricAgainstLoss.Params
    ) -> base.Finding | None:
        w = self.metrics[key]
        if not w.apart(p.min_records, p.window_steps):
            return None
        mode, _, name = key.partition(":")
        sign = direction(name)
        m1, m2, shift = w.compare()
        zm = -sign * shift  # standard errors worse
        share = sign * (m1 - m2) / abs(m1) if m1 else 0.0
        if m1 == 0 or zm < p.metric_significance or share < p.min_worsening:
            return None
        l1, l2, zl = loss
        way = "fell" if sign > 0 else "rose"
        msg = (
            f"the {mode} metric {name!r}, which by its name should {'rise' if sign > 0 else 'fall'}, {way} from a mean of "
            f"{base.fmt(m1)} over its first {len(w.first)} records (steps {w.first[0][0]}-{w.first[-1][0]}) to "
            f"{base.fmt(m2)} over its latest {len(w.latest)} (steps {w.latest[0][0]}-{w.latest[-1][0]}), "
            f"{base.fmt(100 * share)}% worse (at least {base.fmt(100 * p.min_worsening)}%) and "
            f"{base.fmt(zm)} standard errors of its own noise, while the training loss fell from {base.fmt(l1)} to "
            f"{base.fmt(l2)} ({base.fmt(zl)} standard errors) {self.where(view)}: the loss is not optimising what "
            "the metric measures"
        )
        return self.finding(view, msg, tensor=name, value=m2)

    def _from_first(
        self, view: StepView, key: str, loss: tuple[float, float, float], p: MetricAgainstLoss.Params
    ) -> base.Finding | None:
        """The first-record reading (see the module docstring): a held-out metric's latest window worse than its
        very first record, by `metric_significance` standard errors and `min_worsening` of the first."""
        w = self.metrics[key]
        mode, _, name = key.partition(":")
        if mode != "eval" or not w.first or not complete(w.tail, p.min_records, p.window_steps):
            return None
        sign = direction(name)
        (s0, x0), n = w.first[0], len(w.tail)
        m2, _ = mean_err(w.tail)
        count, _, ss = w.after
        var = ss / (count - 1)  # the spread of every record after the first: a trend only widens it
        zm = -sign * z_of(x0, var, m2, var / n)  # one record's noise against the window mean's
        share = sign * (x0 - m2) / abs(x0) if x0 else 0.0
        bound = t_bound(p.metric_significance, count - 1)
        if zm < bound or share < p.min_worsening:
            return None
        l1, l2, zl = loss
        msg = (
            f"the {mode} metric {name!r}, which by its name should {'rise' if sign > 0 else 'fall'}, read "
            f"{base.fmt(x0)} at its first record (step {s0}) and {base.fmt(m2)} over its latest {n} (steps "
            f"{w.tail[0][0]}-{w.tail[-1][0]}), {base.fmt(100 * share)}% worse (at least "
            f"{base.fmt(100 * p.min_worsening)}%) and {base.fmt(zm)} standard errors of the spread of its records "
            f"after the first, while the "
            f"training loss fell from {base.fmt(l1)} to {base.fmt(l2)} ({base.fmt(zl)} standard errors) "
            f"{self.where(view)}: the model gets worse on held-out data from its first evaluation on, so the loss "
            "is not optimising what the metric measures"
        )
        return self.finding(view, msg, tensor=name, value=m2, threshold=x0)

    def _frozen(
        self, view: StepView, key: str, loss: tuple[float, float, float], p: MetricAgainstLoss.Params
    ) -> base.Finding | None:
        """The frozen-metric reading (see the module docstring)."""
        w = self.metrics[key]
        mode, _, name = key.partition(":")
        level = chance.chance_level(name, self.classes)
        # an accuracy: chance 1/K > 0
        if p.frozen_band is None or not level or not w.apart(p.min_records, p.window_steps):
            return None
        values = {x for _, x in (*w.first, *w.latest)}
        if len(values) != 1:
            return None
        value = values.pop()
        if not chance.near_chance(value, level, p.frozen_band):
            return None
        l1, l2, zl = loss
        records = len(w.first) + len(w.latest)
        msg = (
            f"the {mode} metric {name!r} read exactly {base.fmt(value)} at all {records} of its records in steps "
            f"{w.first[0][0]}-{w.latest[-1][0]}, {base.fmt((value - level) / (1 - level))} of the way from chance level "
            f"1/{self.classes} = {base.fmt(level)} to 1, while the training loss fell from "
            f"{base.fmt(l1)} to {base.fmt(l2)} ({base.fmt(zl)} standard errors) {self.where(view)}: the model it "
            "evaluates does not change, so it is not the model that trains"
        )
        hint = (
            "check that the evaluated model is the trained one or is updated from it: an EMA/mean-teacher update "
            "written as `t = decay * t + (1 - decay) * s` rebinds the loop variable and leaves the teacher untouched "
            "(use t.mul_(decay).add_(s, alpha=1 - decay) under torch.no_grad()), a copy taken before training, or "
            "an optimizer built on another copy of the parameters"
        )
        return self.finding(view, msg, tensor=name, value=value, threshold=level, hint=hint)

    def _not_carried(
        self, view: StepView, key: str, loss: tuple[float, float, float], p: MetricAgainstLoss.Params
    ) -> base.Finding | None:
        """The fit-not-carried reading (see the module docstring): the loss fitted to `fit_share` of its start while
        a held-out share of examples scored right stays at most `floor_band` at every record of both windows."""
        w = self.metrics[key]
        mode, _, name = key.partition(":")
        l1, l2, zl = loss
        if mode != "eval" or not is_share(name):
            return None
        if not w.first or not complete(w.tail, p.min_records, p.window_steps):
            return None
        apart = (*w.first, *w.latest)
        if p.never_right and w.apart(p.min_records, p.window_steps) and all(x == 0 for _, x in apart):
            return self._never_right(view, name, apart, loss)
        rows = (*w.first, *w.tail)
        if p.fit_share is None or l1 <= 0 or l2 > p.fit_share * l1:
            return None
        if any(not 0 <= x <= p.floor_band for _, x in rows):
            return None
        m2, _ = mean_err(w.tail)
        msg = (
            f"the {mode} metric {name!r} (a share of examples scored right, 1 at best) stayed at or below "
            f"{base.fmt(p.floor_band)} at all {len(rows)} records of its first and latest windows (steps "
            f"{rows[0][0]}-{rows[-1][0]}; at most {base.fmt(max(x for _, x in rows))}, {base.fmt(m2)} over the latest "
            f"{len(w.tail)}), while the training loss fell from {base.fmt(l1)} to {base.fmt(l2)}, "
            f"{base.fmt(100 * l2 / l1)}% of its start (at most {base.fmt(100 * p.fit_share)}%; {base.fmt(zl)} standard "
            f"errors) {self.where(view)}: the training targets are fitted almost perfectly and the fit does not carry "
            "to what the metric scores"
        )
        hint = (
            "check that the labels the loss reads are the ones the metric scores: an end index taken as exclusive "
            "where the metric reads it inclusively, labels or targets shifted by one position, start and end or "
            "input and target swapped, or targets that are empty (a width or radius that rounds to zero); or that the "
            "model is not memorising labels paired at random with its inputs"
        )
        return self.finding(view, msg, tensor=name, value=m2, threshold=p.floor_band, hint=hint)

    def _never_right(
        self, view: StepView, name: str, rows: tuple[tuple[int, float], ...], loss: tuple[float, float, float]
    ) -> base.Finding:
        """The never-right reading (see the module docstring): a held-out share at exactly 0 at every record of its
        first and latest windows while the loss fell significantly."""
        l1, l2, zl = loss
        msg = (
            f"the eval metric {name!r} (a share of examples scored right, 1 at best) read exactly 0 at all "
            f"{len(rows)} records of its first and latest windows (steps {rows[0][0]}-{rows[-1][0]}): not one "
            f"held-out example scored right, while the training loss fell from {base.fmt(l1)} to {base.fmt(l2)} "
            f"({base.fmt(zl)} standard errors) {self.where(view)}: what the loss optimises does not reach what the "
            "metric scores at all"
        )
        hint = (
            "check what the loss rewards against what the metric scores: a loss term that makes the prediction free "
            "where the metric reads it (a scale-invariant loss with its weight at 1 leaves the overall scale "
            "unconstrained), targets that are empty or constant (a width that rounds to zero), or a prediction the "
            "metric reads on another scale, in other units or another order than the loss"
        )
        return self.finding(view, msg, tensor=name, value=0.0, threshold=0.0, hint=hint)

    def _chance(
        self,
        view: StepView,
        key: str,
        loss: tuple[float, float, float],
        p: MetricAgainstLoss.Params,
        *,
        fell: bool = True,
    ) -> base.Finding | None:
        """The chance-level readings (see the module docstring): an R² or ROC AUC at its chance level at every
        record of both windows, or a ROC AUC whose latest window lies significantly below 0.5 (only where the loss
        `fell` significantly: the held-out metric at chance beside a flat loss is the reading without a fall)."""
        w = self.metrics[key]
        mode, _, name = key.partition(":")
        plain = chance.chance_level(name, self.classes)
        level = chance.ranking_chance_level(name, self.classes)
        if p.chance_band is None or level is None or not w.apart(p.min_records, p.window_steps):
            return None
        if plain is not None and plain > 0:
            return None  # an accuracy: its argmax scatters around 1/K (the frozen reading judges it)
        ranked = plain is None  # a ROC AUC or a correlation: below chance, the order is reversed
        l1, l2, zl = loss
        m2, e2 = mean_err(w.latest)
        trend = f"while the training loss fell from {base.fmt(l1)} to {base.fmt(l2)} ({base.fmt(zl)} standard errors)"
        if not fell:
            trend = (
                f"while the training loss went from {base.fmt(l1)} over its first window to {base.fmt(l2)} over its "
                f"latest ({base.fmt(zl)} standard errors lower, under the {base.fmt(p.loss_significance)} of a fall)"
            )
        if ranked and fell:  # below chance the scores order the examples the wrong way round
            worst = chance.reversed_score(name)
            zb = -z_of(level, 0.0, m2, e2)
            share = (level - m2) / (level - worst)
            if zb >= p.metric_significance and share >= p.min_worsening:
                kind = (
                    "a correlation with the truth, 0 at chance"
                    if worst < 0
                    else "an area under the ROC curve, 0.5 at chance"
                )
                msg = (
                    f"the {mode} metric {name!r} ({kind}) averaged "
                    f"{base.fmt(m2)} over its latest {len(w.latest)} records (steps {w.latest[0][0]}-"
                    f"{w.latest[-1][0]}), {base.fmt(zb)} standard errors and {base.fmt(100 * share)}% of the way "
                    f"below chance (at least {base.fmt(100 * p.min_worsening)}%), {trend} {self.where(view)}: "
                    + (
                        "the model's scores run against the truth"
                        if worst < 0
                        else "the model learns to rank the negatives above the positives"
                    )
                )
                hint = (
                    "check which side of each pair or label is the positive one: a seen and an unseen item swapped "
                    "in a pairwise (BPR) loss, labels inverted, or a score whose sign the metric reads the other way"
                )
                return self.finding(view, msg, tensor=name, value=m2, threshold=level, hint=hint)
        rows = (*w.first, *w.latest)
        top = level + p.chance_band * (1 - level)
        m1, e1 = mean_err(w.first)
        if any(x > top for _, x in rows) or z_of(m1, e1, m2, e2) >= p.metric_significance:
            return None  # above the band once, or leaving chance (a slow start rises significantly)
        msg = (
            f"the {mode} metric {name!r} stayed at or below {base.fmt(top)}, {base.fmt(p.chance_band)} of the way "
            f"from its chance level {base.fmt(level)} to 1, at all {len(rows)} records of its first and latest "
            f"windows (steps {w.first[0][0]}-{w.latest[-1][0]}; at most {base.fmt(max(x for _, x in rows))}, "
            f"{base.fmt(m2)} over the latest {len(w.latest)}), not significantly above its first window, {trend} "
            f"{self.where(view)}: "
            + (
                "what the loss optimises does not carry to the held-out data at all"
                if fell
                else "the model learned nothing that carries to held-out data beyond its first steps (a constant, "
                "the target's mean), and its loss has stopped falling"
            )
        )
        hint = (
            "check that the held-out data go through the same model and features as the training batches (inputs "
            "scaled differently, inputs or targets paired differently), that the loss's "
            "terms are weighted as meant (a KL or penalty scaled by the dataset size swamps the fit), and that the "
            "labels or pairs the loss reads are the ones the metric scores"
        )
        if not fell:
            hint = (
                "check that the inputs reach the model the same way at every step (random features or a projection "
                "redrawn at each forward pass, inputs shuffled apart from their targets), and that the gradient "
                "reaches the layers that read the inputs"
            )
        return self.finding(view, msg, tensor=name, value=m2, threshold=top, hint=hint)

    def get_state(self) -> dict[str, Any]:
        return {
            "classes": self.classes,
            "loss": self.loss.get_state(),
            "metrics": {k: w.get_state() for k, w in self.metrics.items()},
            "streak": dict(self.streak),
            "reported": self.reported,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.loss = Windows(state.get("loss"))
        self.metrics = {k: Windows(v) for k, v in state.get("metrics", {}).items()}
        self.streak = {k: int(v) for k, v in state.get("streak", {}).items()}
        self.reported = bool(state.get("reported", False))
        self.classes = state.get("classes")
