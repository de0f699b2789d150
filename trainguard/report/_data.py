"""The report's data: what is plotted and marked, read from a `Run` and the findings it is handed.

`collect_plots` picks the series of one rank (loss, gradient and weight norms, update ratios,
dead or saturated units); `collect_predictions` turns prediction counts into ROC, PR, score
distribution, calibration and AUC-over-steps plots per stream (`rules.auc`); `Marker` is a
finding as the report shows it, from a `Finding` or a `--json` entry. Drawing is left to `_svg`,
the page to `_html`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainguard.errors import TrainGuardError
from trainguard.rules import auc
from trainguard.rules.auc_drop import AucDropParams
from trainguard.rules.base import Finding
from trainguard.store import prediction_buckets, run_format
from trainguard.store.reader import Run

MAX_PREDICTION_STREAMS = 12
"""Prediction streams (a multi-class stream is one per class) drawn; the rest are listed as not drawn."""
DISTRIBUTION_BINS = 100
"""Score-distribution bins: the 10^4 log-odds buckets, 100 to a bin."""


FindingLike = Finding | Mapping[str, Any]
"""A finding as the report is handed it: a `Finding`, or an entry of a `--json` file."""


class ReportError(TrainGuardError):
    """The report cannot be made (unreadable --json file, no data in the run, ...)."""


@dataclass(frozen=True)
class Marker:
    """A finding as the report shows it, from a `Finding` or a `--json` entry."""

    rule: str
    severity: str
    step: int
    rank: int = 0
    tensor: str | None = None
    message: str = ""
    hint: str = ""

    @classmethod
    def of(cls, finding: FindingLike) -> Marker:
        d = finding if isinstance(finding, Mapping) else dataclasses.asdict(finding)
        sev = d.get("severity", "warning")
        return cls(
            rule=str(d.get("rule", "?")),
            severity=str(getattr(sev, "value", sev)),
            step=int(d.get("step") or 0),
            rank=int(d.get("rank") or 0),
            tensor=d.get("tensor"),
            message=str(d.get("message", "")),
            hint=str(d.get("hint") or ""),
        )


@dataclass(frozen=True)
class Plot:
    """One chart: named series over steps (or over `x_label` when it is not "step")."""

    key: str
    title: str
    series: dict[str, tuple[np.ndarray, np.ndarray]]
    log_y: bool = False
    y_label: str = ""
    note: str = ""
    x_label: str = "step"
    bands: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    """Shaded (x, low, high) ranges drawn under the series of the same name, in its colour."""
    y_range: tuple[float, float] | None = None
    """A fixed y-axis (a fraction's [0, 1]); None: fitted to the data."""
    y_limits: tuple[float, float] | None = None
    """Bounds a fitted y-axis never goes past (an AUC's [0, 1]: fitted, so small changes show)."""


FRACTION = (0.0, 1.0)
"""The y-axis of a fraction, a rate or a share: never below 0 or above 1, whatever the data."""


def _tensor_stat(
    run: Run, names: Iterable[str], stat: str, rank: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    out = {}
    for name in names:
        s = run.series(name, stat, rank=rank)
        if s.steps.size:
            out[name] = (s.steps, s.values)
    return out


def _ordered(run: Run, collection: str, rank: int, **filters: object) -> list[str]:
    tensors = [
        t
        for t in run.tensors(collection, rank=rank)
        if not t.is_scalar and all(getattr(t, k) == v for k, v in filters.items())
    ]
    tensors.sort(key=lambda t: (t.order if t.order is not None else 1 << 30, t.id))
    return [t.name for t in tensors]


def _unit_fractions(run: Run, kind: str, rank: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Dead units ("active" == 0 on every sample) or saturated units (on more than half the samples)."""
    names = {t.id: t.name for t in run.tensors(rank=rank)}
    order = {t.id: (t.order if t.order is not None else 1 << 30) for t in run.tensors(rank=rank)}
    acc: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    for seg in run.segments(rank):
        for (k, tid), vec in seg.units.items():
            if k != kind or tid not in names:
                continue
            frac = (vec <= 0).mean(axis=1) if kind == "active" else (vec > 0.5).mean(axis=1)
            steps, vals = acc.setdefault(tid, ([], []))
            steps.append(seg.tier1_steps[: len(frac)])
            vals.append(frac.astype(np.float64))
    return {
        names[tid]: (np.concatenate(s), np.concatenate(v))
        for tid, (s, v) in sorted(acc.items(), key=lambda i: order[i[0]])
    }


def collect_plots(run: Run, *, rank: int = 0) -> list[Plot]:
    """Return the report's charts for one rank, skipping those the run has no data for."""
    plots: list[Plot] = []
    cat = [t for t in run.tensors(rank=rank) if t.is_scalar]
    losses: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    metrics: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for t in sorted(cat, key=lambda t: (t.name, t.mode or "")):
        if t.name.startswith(run_format.GROUP_PREFIX):
            continue  # the optimizer's group settings, written where they change: a fact row, not a plot
        s = run.scalars(t.name, mode=t.mode or "train", rank=rank)
        if not s.steps.size:
            continue
        label = f"{t.name} ({t.mode})"
        (losses if t.collection == "losses" or "loss" in t.name.lower() else metrics)[label] = (
            s.steps,
            s.values,
        )
    plots.append(Plot("loss", "Loss (train and eval)", losses, log_y=_positive(losses), y_label="loss"))
    metrics, constant = _split_constant(metrics)
    plots.append(Plot("metrics", "Other scalars (learning rate, metrics)", metrics))
    # A scalar that never changes (a fixed learning rate) is one fact, not a plot: the page lists it.
    plots.append(Plot(CONSTANTS, "Scalars constant over the run", constant))
    plots.append(
        Plot(
            "grad_norm",
            "Gradient norms per layer",
            _tensor_stat(run, _ordered(run, "gradients", rank), "l2", rank),
            log_y=True,
            y_label="L2 norm",
        )
    )
    weights = _ordered(run, "weights", rank) + _ordered(run, "biases", rank)
    plots.append(
        Plot(
            "weight_norm",
            "Weight norms per layer",
            _tensor_stat(run, weights, "l2", rank),
            log_y=True,
            y_label="L2 norm",
        )
    )
    trainable = [n for n in weights if any(t.name == n and t.trainable for t in run.tensors(rank=rank))]
    ratios = {}
    upd = _tensor_stat(run, trainable, "update_l2", rank)
    norm = _tensor_stat(run, trainable, "l2", rank)
    for name, (steps, u) in upd.items():
        w = norm[name][1]
        with np.errstate(divide="ignore", invalid="ignore"):
            r = u / w
        # No update is defined at a tensor's first saved step (NaN there is not a fault): drop it,
        # but keep the non-finite ratios of a weight that itself went NaN/Inf.
        keep = np.isfinite(u) | ~np.isfinite(w)
        if np.isfinite(r[keep]).any():
            ratios[name] = (steps[keep], r[keep])
    plots.append(
        Plot(
            "update_ratio",
            "Update ratios (|dW| / |W| between saved steps)",
            ratios,
            log_y=True,
            y_label="ratio",
            note="Near 1e-3 per training step (so about 1e-2 across 10 steps) is usual; far below, the layer "
            "barely learns; far above, it may diverge.",
        )
    )
    plots.append(
        Plot(
            "dead_units",
            "Dead-unit fractions (ReLU family: units never active on the batch)",
            _unit_fractions(run, "active", rank),
            y_label="fraction of units",
            y_range=FRACTION,
        )
    )
    plots.append(
        Plot(
            "saturated_units",
            "Saturated-unit fractions (sigmoid/tanh: units saturated on most samples)",
            _unit_fractions(run, "saturated", rank),
            y_label="fraction of units",
            y_range=FRACTION,
        )
    )
    nonfinite = {}
    for name in _ordered(run, "gradients", rank) + weights + _ordered(run, "activations", rank):
        s_nan, s_inf = run.series(name, "nan", rank=rank), run.series(name, "inf", rank=rank)
        if s_nan.steps.size and (np.nansum(s_nan.values) + np.nansum(s_inf.values)) > 0:
            nonfinite[name] = (s_nan.steps, s_nan.values + s_inf.values)
    plots.append(Plot("nonfinite", "Non-finite values (NaN + Inf count)", nonfinite, y_label="elements"))
    return [p for p in plots if p.series]


CONSTANTS = "constants"
"""Key of the pseudo-plot holding the scalars that never changed; the page shows it as a line of facts."""


def _split_constant(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]],
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Split series into (varying, constant): constant ones hold one finite value at every step."""
    varying: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    constant: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, (steps, values) in series.items():
        flat = bool(values.size) and bool(np.isfinite(values).all()) and bool((values == values[0]).all())
        (constant if flat else varying)[name] = (steps, values)
    return varying, constant


def _positive(series: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> bool:
    vals = [v[np.isfinite(v)] for _, v in series.values()]
    finite = np.concatenate(vals) if vals else np.zeros(0)
    return bool(finite.size) and bool((finite > 0).all()) and float(finite.max() / finite.min()) > 50


# --- predictions ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PredictionStream:
    """One prediction stream's plots and its AUC over all its counts."""

    name: str
    mode: str
    estimate: auc.AucEstimate
    plots: list[Plot]


def _auc_over_steps(steps: np.ndarray, counts: np.ndarray, half_life: float) -> Plot:
    cum = np.zeros_like(counts[0])
    decayed = auc.DecayedCounts(half_life)
    lines: dict[str, list[tuple[float, float, float]]] = {"cumulative": [], "decayed": []}
    for step, delta in zip(steps, counts):
        cum += delta
        decayed.update(int(step), delta)
        for label, est in (("cumulative", auc.auc_from_counts(cum)), ("decayed", decayed.estimate())):
            lines[label].append((est.auc, 2 * est.se if math.isfinite(est.se) else 0.0, est.error_bound))
    x = steps.astype(np.float64)
    series, bands = {}, {}
    for label, rows in lines.items():
        a, two_se, tie = (np.asarray(c) for c in zip(*rows))
        name = label if label == "cumulative" else f"decayed (half-life {half_life:g} steps)"
        series[name] = (x, a)
        bands[name] = (x, a - two_se - tie, a + two_se + tie)
    return Plot(
        "auc",
        "AUC over steps",
        series,
        y_label="AUC",
        y_limits=FRACTION,
        bands=bands,
        note="Shaded: +/- 2 standard errors (Hanley-McNeil, effective counts for the decayed AUC) plus the "
        "tie bound of the buckets. The decayed AUC is what the auc_drop rule watches.",
    )


def _score_distributions(total: np.ndarray) -> Plot:
    b = total.shape[1]
    per = max(1, b // DISTRIBUTION_BINS)
    edges = -prediction_buckets.LOGIT_RANGE + np.arange(0, b + 1, per) * (
        2 * prediction_buckets.LOGIT_RANGE / b
    )
    centres = (edges[:-1] + edges[1:])[: math.ceil(b / per)] / 2
    binned = np.add.reduceat(total[:2], np.arange(0, b, per), axis=1)
    used = np.nonzero(binned.sum(axis=0))[0]
    lo, hi = (int(used[0]), int(used[-1]) + 1) if used.size else (0, binned.shape[1])
    series = {}
    for row, label in ((0, "positives"), (1, "negatives")):
        n = binned[row].sum()
        if n > 0:
            series[label] = (centres[lo:hi], binned[row, lo:hi] / n)
    return Plot(
        "score_dist",
        "Score distributions (share of each class per log-odds bin)",
        series,
        y_label="share",
        y_limits=FRACTION,
        x_label="score (log-odds)",
    )


def _prediction_plots(steps: np.ndarray, counts: np.ndarray, half_life: float) -> list[Plot]:
    total = counts.sum(axis=0)
    fpr, tpr = auc.roc_curve(total)
    recall, precision = auc.pr_curve(total)
    mean_score, rate, _ = auc.calibration(total)
    chance = (np.array([0.0, 1.0]), np.array([0.0, 1.0]))
    est = auc.auc_from_counts(total)
    return [
        Plot(
            "roc",
            "ROC curve",
            {"ROC": _corners(fpr, tpr), "chance": chance},
            y_label="true positive rate",
            y_range=FRACTION,
            x_label="false positive rate",
        ),
        Plot(
            "pr",
            "Precision-recall curve",
            {"PR": (recall, precision), "positive rate": (chance[0], np.full(2, est.positive_rate))},
            y_label="precision",
            y_range=FRACTION,
            x_label="recall",
        ),
        _score_distributions(total),
        Plot(
            "calibration",
            "Calibration (positive rate against mean score)",
            {"observed": (mean_score, rate), "perfect": chance},
            y_label="positive rate",
            y_range=FRACTION,
            x_label="mean score",
        ),
        _auc_over_steps(steps, counts, half_life),
    ]


def _corners(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep only the points where the curve turns (empty buckets add collinear points)."""
    if x.size < 3:
        return x, y
    dx, dy = np.diff(x), np.diff(y)
    turn = np.ones(x.size, bool)
    turn[1:-1] = (dx[:-1] * dy[1:] - dy[:-1] * dx[1:]) != 0
    return x[turn], y[turn]


def collect_predictions(run: Run, *, rank: int = 0) -> tuple[list[PredictionStream], int]:
    """Return the plotted prediction streams of one rank and how many more were not drawn."""
    infos = sorted((t for t in run.tensors("predictions", rank=rank)), key=lambda t: (t.name, t.mode or ""))
    half_life = AucDropParams().half_life_steps
    out = []
    for t in infos[:MAX_PREDICTION_STREAMS]:
        mode = t.mode or "train"
        steps, counts = run.predictions(t.name, mode=mode, rank=rank)
        if not steps.size:
            continue
        order = np.argsort(steps, kind="stable")
        steps, counts = steps[order], counts[order]
        est = auc.auc_from_counts(counts.sum(axis=0))
        out.append(PredictionStream(t.name, mode, est, _prediction_plots(steps, counts, half_life)))
    return out, max(0, len(infos) - MAX_PREDICTION_STREAMS)
