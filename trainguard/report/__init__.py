"""The HTML report of a run: one self-contained page with inline SVG plots and the findings.

`render(run, findings=...)` returns the page; `write_report(uri, path)` opens the run, takes the
findings from a `--json` file or from an offline evaluation with the default rules, and writes it.
Called by `trainguard report` and at the end of `trainguard run`. Pure Python and numpy: no
matplotlib, no JavaScript, no external CSS or fonts, so the file opens anywhere, offline. Plots
read only the statistics in the store (`Run`); the rules are left to the evaluator. Runs with
prediction counts (`record_predictions`) get a "Model quality" section per stream: ROC, PR,
score distributions, calibration and the AUC over steps with its error band (`rules.auc`).
"""

from __future__ import annotations

import dataclasses
import datetime
import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trainguard.errors import TrainGuardError
from trainguard.rules import auc
from trainguard.rules.auc_drop import AucDropParams
from trainguard.store import errors, predictions, run_format
from trainguard.store.reader import Run
from trainguard.store.runs import open_run

MAX_SERIES_PER_PLOT = 12
"""More lines than this are unreadable; tensors named by findings are kept first, then execution order."""
MAX_POINTS_PER_SERIES = 800
"""Longer series are thinned (non-finite points always kept) to keep the page small."""
MAX_MARKERS_PER_PLOT = 40
MAX_FINDING_ROWS = 200
MAX_PREDICTION_STREAMS = 12
"""Prediction streams (a multi-class stream is one per class) drawn; the rest are listed as not drawn."""
DISTRIBUTION_BINS = 100
"""Score-distribution bins: the 10^4 log-odds buckets, 100 to a bin."""
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79",
    "#637939", "#8c6d31",
)  # fmt: skip
SEVERITY_COLOURS = {"critical": "#d62728", "warning": "#ff9800", "info": "#1f77b4"}


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
    def of(cls, finding: Any) -> Marker:
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


# --- data ---------------------------------------------------------------------------------------
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
        s = run.scalars(t.name, mode=t.mode or "train", rank=rank)
        if not s.steps.size:
            continue
        label = f"{t.name} ({t.mode})"
        (losses if t.collection == "losses" or "loss" in t.name.lower() else metrics)[label] = (
            s.steps,
            s.values,
        )
    plots.append(Plot("loss", "Loss (train and eval)", losses, log_y=_positive(losses), y_label="loss"))
    plots.append(Plot("metrics", "Other scalars (learning rate, metrics)", metrics))
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
        )
    )
    plots.append(
        Plot(
            "saturated_units",
            "Saturated-unit fractions (sigmoid/tanh: units saturated on most samples)",
            _unit_fractions(run, "saturated", rank),
            y_label="fraction of units",
        )
    )
    nonfinite = {}
    for name in _ordered(run, "gradients", rank) + weights + _ordered(run, "activations", rank):
        s_nan, s_inf = run.series(name, "nan", rank=rank), run.series(name, "inf", rank=rank)
        if s_nan.steps.size and (np.nansum(s_nan.values) + np.nansum(s_inf.values)) > 0:
            nonfinite[name] = (s_nan.steps, s_nan.values + s_inf.values)
    plots.append(Plot("nonfinite", "Non-finite values (NaN + Inf count)", nonfinite, y_label="elements"))
    return [p for p in plots if p.series]


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
        bands=bands,
        note="Shaded: +/- 2 standard errors (Hanley-McNeil, effective counts for the decayed AUC) plus the "
        "tie bound of the buckets. The decayed AUC is what the auc_drop rule watches.",
    )


def _score_distributions(total: np.ndarray) -> Plot:
    b = total.shape[1]
    per = max(1, b // DISTRIBUTION_BINS)
    edges = -predictions.LOGIT_RANGE + np.arange(0, b + 1, per) * (2 * predictions.LOGIT_RANGE / b)
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
            x_label="false positive rate",
        ),
        Plot(
            "pr",
            "Precision-recall curve",
            {"PR": (recall, precision), "positive rate": (chance[0], np.full(2, est.positive_rate))},
            y_label="precision",
            x_label="recall",
        ),
        _score_distributions(total),
        Plot(
            "calibration",
            "Calibration (positive rate against mean score)",
            {"observed": (mean_score, rate), "perfect": chance},
            y_label="positive rate",
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


# --- SVG ----------------------------------------------------------------------------------------
def _fmt(v: float) -> str:
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    a = abs(v)
    return f"{v:.0e}" if a >= 1e5 or a < 1e-3 else f"{v:.3g}"


def _ticks(lo: float, hi: float, *, log: bool, integer: bool = False, target: int = 5) -> list[float]:
    """Return round tick positions in [lo, hi]: whole decades on a log axis, 1/2/5 x 10^k steps otherwise."""
    if log and hi - lo >= 2:
        stride = max(1, math.ceil((hi - lo) / target))
        return [float(e) for e in range(math.ceil(lo), math.floor(hi) + 1) if e % stride == 0]
    raw = (hi - lo) / target
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _thin(steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if steps.size <= MAX_POINTS_PER_SERIES:
        return steps, values
    keep = np.zeros(steps.size, bool)
    keep[:: math.ceil(steps.size / MAX_POINTS_PER_SERIES)] = True
    keep[-1] = True
    keep |= ~np.isfinite(values)
    return steps[keep], values[keep]


def _pick_series(plot: Plot, markers: Sequence[Marker]) -> tuple[list[str], int]:
    named = [m.tensor for m in markers if m.tensor]
    first = [n for n in dict.fromkeys(named) if n in plot.series]
    rest = [n for n in plot.series if n not in first]
    chosen = (first + rest)[:MAX_SERIES_PER_PLOT]
    return chosen, len(plot.series) - len(chosen)


def svg_plot(
    plot: Plot, markers: Sequence[Marker], *, width: int = 700, height: int = 260
) -> tuple[str, list[str]]:
    """Return (svg markup, the labels drawn, in colour order) for one plot with finding markers."""
    left, right, top, bottom = 64, 14, 14, 34
    pw, ph = width - left - right, height - top - bottom
    labels, _ = _pick_series(plot, markers)
    data = {n: _thin(*plot.series[n]) for n in labels}
    all_steps = np.concatenate(
        [s for s, _ in data.values()] + [np.asarray([m.step for m in markers], np.int64)]
    )
    x0, x1 = float(all_steps.min()), float(all_steps.max())
    x1 = x1 if x1 > x0 else x0 + 1

    def ty(v: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return (
                np.where(v > 0, np.log10(np.where(v > 0, v, 1)), np.nan)
                if plot.log_y
                else v.astype(np.float64)
            )

    bands = {n: plot.bands[n] for n in labels if n in plot.bands}
    y_all = [ty(v) for _, v in data.values()] + [ty(b) for _, lo, hi in bands.values() for b in (lo, hi)]
    finite = np.concatenate([t[np.isfinite(t)] for t in y_all])
    y0, y1 = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if y1 - y0 < 1e-12:  # a constant series: centre it, with a margin relative to its value
        half = 0.5 if plot.log_y or y0 == 0 else abs(y0) * 0.5
        y0, y1 = y0 - half, y1 + half
    pad = (y1 - y0) * 0.05
    y0, y1 = y0 - pad, y1 + pad

    def px(s: float) -> float:
        return left + (s - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + (1 - (y - y0) / (y1 - y0)) * ph

    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" data-plot="{plot.key}" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-label="{html.escape(plot.title)}">'
        ),
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#ccc"/>',
    ]
    for y in _ticks(y0, y1, log=plot.log_y):
        label = _fmt(10**y) if plot.log_y else _fmt(y)
        parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#eee"/>')
        parts.append(
            f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end" class="tick">{label}</text>'
        )
    over_steps = plot.x_label == "step"
    for s in _ticks(x0, x1, log=False, integer=over_steps):
        parts.append(
            f'<line x1="{px(s):.1f}" x2="{px(s):.1f}" y1="{top + ph}" y2="{top + ph + 4}" stroke="#999"/>'
        )
        parts.append(
            f'<text x="{px(s):.1f}" y="{top + ph + 15}" text-anchor="middle" class="tick">'
            f"{int(s) if over_steps else _fmt(s)}</text>"
        )
    parts.append(
        f'<text x="{left + pw}" y="{height - 2}" text-anchor="end" class="axis">{html.escape(plot.x_label)}</text>'
    )
    if plot.y_label:
        parts.append(
            f'<text transform="translate(12,{top + ph / 2}) rotate(-90)" text-anchor="middle" class="axis">'
            f"{html.escape(plot.y_label)}{' (log)' if plot.log_y else ''}</text>"
        )
    for i, name in enumerate(labels):
        if name in bands:  # under every series
            stride = math.ceil(len(bands[name][0]) / MAX_POINTS_PER_SERIES)
            bx, lo, hi = (np.asarray(a, np.float64)[::stride] for a in bands[name])
            ok = np.isfinite(ty(lo)) & np.isfinite(ty(hi))
            edge = [f"{px(x):.1f} {py(y):.1f}" for x, y in zip(bx[ok], ty(lo[ok]))]
            edge += [f"{px(x):.1f} {py(y):.1f}" for x, y in zip(bx[ok][::-1], ty(hi[ok])[::-1])]
            if edge:
                parts.append(
                    f'<path class="band" data-series="{html.escape(name)}" d="M{" L".join(edge)} Z" '
                    f'fill="{PALETTE[i % len(PALETTE)]}" fill-opacity="0.18" stroke="none"/>'
                )
    for i, name in enumerate(labels):
        steps, values = data[name]
        yv = ty(values)
        colour = PALETTE[i % len(PALETTE)]
        d, pen = [], False
        for s, y in zip(steps, yv):
            if not math.isfinite(y):
                pen = False
                continue
            d.append(f"{'L' if pen else 'M'}{px(float(s)):.1f} {py(float(y)):.1f}")
            pen = True
        parts.append(
            f'<path class="series" data-series="{html.escape(name)}" d="{" ".join(d)}" fill="none" '
            f'stroke="{colour}" stroke-width="1.5"><title>{html.escape(name)}</title></path>'
        )
        bad = np.nonzero(~np.isfinite(values))[0]
        if bad.size:  # where the values went NaN/Inf: a triangle on the top edge
            s = float(steps[bad[0]])
            parts.append(
                f'<path class="nonfinite" d="M{px(s):.1f} {top} l-5 -8 h10 z" fill="{colour}">'
                f"<title>{html.escape(name)}: {values[bad[0]]} at step {int(s)}</title></path>"
            )
    for m in _plot_markers(markers):
        colour = SEVERITY_COLOURS.get(m.severity, "#555")
        x = px(m.step)
        tip = html.escape(
            f"{m.rule} ({m.severity}) at step {m.step}"
            + (f", {m.tensor}" if m.tensor else "")
            + f": {m.message}"
        )
        parts.append(
            f'<g class="finding finding-{html.escape(m.severity)}" data-rule="{html.escape(m.rule)}" data-step="{m.step}">'
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + ph}" stroke="{colour}" stroke-dasharray="4 3"/>'
            f"<title>{tip}</title>"
        )
        if m.tensor in data:
            steps, values = data[m.tensor]
            hit = np.nonzero(steps == m.step)[0]
            y = float(ty(values[hit[:1]])[0]) if hit.size else float("nan")
            if math.isfinite(y):
                parts.append(
                    f'<circle cx="{x:.1f}" cy="{py(y):.1f}" r="4" fill="none" stroke="{colour}" stroke-width="2"/>'
                )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts), labels


def _undrawn(plot: Plot, name: str) -> str:
    """A legend note for a series with no point to draw: all zero on a log axis, or never finite."""
    values = plot.series[name][1]
    finite = values[np.isfinite(values)]
    if not finite.size:
        return ' <i class="muted">(no finite value)</i>'
    if plot.log_y and not (finite > 0).any():
        return ' <i class="muted">(zero throughout, not drawn on the log axis)</i>'
    return ""


def _plot_markers(markers: Sequence[Marker]) -> list[Marker]:
    """The first finding of each (rule, tensor), at most MAX_MARKERS_PER_PLOT: a marker per repeat would hide the plot."""
    seen: dict[tuple[str, str | None], Marker] = {}
    for m in sorted(markers, key=lambda m: m.step):
        seen.setdefault((m.rule, m.tensor), m)
    return list(seen.values())[:MAX_MARKERS_PER_PLOT]


# --- the page -------------------------------------------------------------------------------------
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1500px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px} .muted{color:#666}
table{border-collapse:collapse;margin:8px 0} td,th{border-bottom:1px solid #e4e4e4;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f6f6f6} .sev{font-weight:600} .sev-critical{color:#d62728} .sev-warning{color:#e65100} .sev-info{color:#1f77b4}
.banner{padding:10px 14px;border-radius:6px;margin:12px 0} .banner.stopped{background:#fdecea;border:1px solid #f5c2c0}
.banner.ok{background:#e8f5e9;border:1px solid #b9dfbb} .banner.warn{background:#fff4e5;border:1px solid #ffd59e}
.grid{display:flex;flex-wrap:wrap;gap:18px} figure{margin:0;border:1px solid #ddd;border-radius:6px;padding:10px;background:#fafafa;max-width:700px}
figcaption{font-weight:600;margin-bottom:4px} .legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;max-width:700px}
.legend span::before{content:"";display:inline-block;width:12px;height:3px;margin-right:5px;vertical-align:middle;background:var(--c)}
svg .tick{font-size:10px;fill:#555} svg .axis{font-size:11px;fill:#333} code{background:#f2f2f2;padding:0 3px;border-radius:3px}
"""


def _findings_table(markers: Sequence[Marker]) -> str:
    if not markers:
        return '<p class="muted">No findings: every rule stayed quiet.</p>'
    groups: dict[tuple[str, int, str | None], list[Marker]] = {}
    for m in sorted(markers, key=lambda m: (m.step, m.rank)):
        groups.setdefault((m.rule, m.rank, m.tensor), []).append(m)
    rows = []
    for (rule, rank, tensor), ms in list(groups.items())[:MAX_FINDING_ROWS]:
        first = ms[0]
        worst = max(ms, key=lambda m: {"critical": 2, "warning": 1}.get(m.severity, 0)).severity
        steps = f"{first.step}" + (f" (and {len(ms) - 1} later, last {ms[-1].step})" if len(ms) > 1 else "")
        rows.append(
            f'<tr class="finding-row" data-rule="{html.escape(rule)}"><td>{html.escape(rule)}</td>'
            f'<td class="sev sev-{html.escape(worst)}">{html.escape(worst)}</td><td>{steps}</td><td>{rank}</td>'
            f"<td>{html.escape(tensor or '-')}</td><td>{html.escape(first.message)}"
            + (
                f'<br><span class="muted">{html.escape(first.hint)}</span>'
                if first.hint and first.hint not in first.message
                else ""
            )
            + "</td></tr>"
        )
    more = len(groups) - MAX_FINDING_ROWS
    return (
        "<table><tr><th>rule</th><th>severity</th><th>first step</th><th>rank</th><th>tensor</th><th>message</th></tr>"
        + "".join(rows)
        + "</table>"
        + (f'<p class="muted">{more} more groups not shown.</p>' if more > 0 else "")
    )


def nothing_evaluated(run: Run, rank: int) -> str | None:
    """Why the rules had nothing to look at on `rank`, or None: no step at all, or tensors registered but no saved
    step with their statistics (a PyTorch hook whose optimizer was never registered)."""
    steps = run.steps(rank=rank)
    if steps.size:
        return None
    tensors = [t for t in run.tensors(rank=rank) if not t.is_scalar]
    scalars = [t for t in run.tensors(rank=rank) if t.is_scalar]
    if not tensors and scalars:
        return None  # a run of scalars only (a TensorBoard log, a Recorder of losses) is evaluated on them
    if tensors:
        return (
            "the run holds no saved step with tensor statistics (a PyTorch script must call "
            "hook.register_optimizer(optimizer): its steps count the saved steps)"
        )
    return "the run holds no step"


def _banner(
    outcome: Mapping[str, Any] | None, markers: Sequence[Marker], *, nothing: str | None = None
) -> str:
    worst = {m.severity for m in markers}
    if outcome and outcome.get("stopped"):
        stop = outcome.get("stop") or {}
        return (
            f'<div class="banner stopped"><b>Stopped by rule {html.escape(str(outcome.get("stopped_by")))}</b> at step '
            f"{html.escape(str(stop.get('step')))} (exit status {html.escape(str(outcome.get('exit_code')))}): "
            f"{html.escape(str(stop.get('message', '')))}{_earlier_sign(stop.get('earlier_sign'))}</div>"
        )
    if nothing is not None:
        return f'<div class="banner warn"><b>Nothing was evaluated</b>: {html.escape(nothing)}.</div>'
    if "critical" in worst or "warning" in worst:
        n = sum(1 for m in markers if m.severity in ("critical", "warning"))
        return f'<div class="banner warn">{n} warning or critical findings; see below.</div>'
    return '<div class="banner ok">No warnings: the rules found nothing wrong with this run.</div>'


def _earlier_sign(sign: Mapping[str, Any] | None) -> str:
    if not sign:
        return ""
    return (
        f"<br>Earlier sign at step {html.escape(str(sign.get('step')))}: rule "
        f"<b>{html.escape(str(sign.get('rule')))}</b> ({html.escape(str(sign.get('severity')))}): "
        f"{html.escape(str(sign.get('message', '')))}"
    )


def _figure(plot: Plot, markers: Sequence[Marker], *, id_prefix: str = "plot") -> str:
    svg, labels = svg_plot(plot, markers)
    hidden = len(plot.series) - len(labels)
    legend = "".join(
        f'<span style="--c:{PALETTE[i % len(PALETTE)]}">{html.escape(n)}{_undrawn(plot, n)}</span>'
        for i, n in enumerate(labels)
    )
    extra = f'<span class="muted">+{hidden} more not drawn</span>' if hidden > 0 else ""
    note = f'<div class="muted">{html.escape(plot.note)}</div>' if plot.note else ""
    return (
        f'<figure id="{id_prefix}-{plot.key}"><figcaption>{html.escape(plot.title)}</figcaption>{svg}'
        f'<div class="legend">{legend}{extra}</div>{note}</figure>'
    )


def _predictions_section(run: Run, rank: int) -> str:
    """The "Model quality" section: one block of plots per prediction stream; empty without predictions."""
    streams, hidden = collect_predictions(run, rank=rank)
    if not streams:
        return ""
    blocks = []
    for i, st in enumerate(streams):
        e = st.estimate
        summary = (
            f"AUC {e.auc:.4f} &plusmn; {2 * e.se:.4f} (2 SE), tie bound {e.error_bound:.1e}; "
            f"{e.positives + e.negatives:.0f} examples, positive rate {e.positive_rate:.2%}"
            if math.isfinite(e.auc)
            else f"AUC undefined: {e.positives:.0f} positives and {e.negatives:.0f} negatives"
        )
        label = f"{st.name} ({st.mode})"
        blocks.append(
            f'<section class="prediction-stream" data-stream="{html.escape(label)}">'
            f'<h3>{html.escape(label)}</h3><p class="auc-summary">{summary}</p>'
            f'<div class="grid">{"".join(_figure(p, (), id_prefix=f"pred{i}") for p in st.plots)}</div></section>'
        )
    more = f'<p class="muted">{hidden} more prediction streams not drawn.</p>' if hidden else ""
    return (
        '<h2 id="predictions">Model quality from predictions</h2>'
        '<p class="muted">From the bucket counts of <code>record_predictions</code> over the whole run '
        "(10<sup>4</sup> log-odds buckets); the AUC is exact within the tie bound.</p>"
        + "".join(blocks)
        + more
    )


def render(
    run: Run,
    *,
    findings: Iterable[Any] = (),
    rank: int = 0,
    outcome: Mapping[str, Any] | None = None,
    title: str | None = None,
) -> str:
    """Return the report page of one rank of `run`, with `findings` (Finding objects or dicts) marked."""
    markers = [Marker.of(f) for f in findings]
    mine = [m for m in markers if m.rank == rank]
    run_id = run.info.run_id if run.info else Path(run.uri.rstrip("/")).name
    steps = run.steps(rank=rank)
    facts = [
        ("run", f"<code>{html.escape(run.uri)}</code>"),
        ("format", html.escape(f"{run.format}" + (f", framework {run.info.framework}" if run.info else ""))),
        (
            "ranks",
            html.escape(
                ", ".join(map(str, run.ranks)) + (f" (plots: rank {rank})" if len(run.ranks) > 1 else "")
            ),
        ),
        (
            "saved steps",
            f"{steps.size}" + (f" (steps {int(steps[0])} to {int(steps[-1])})" if steps.size else ""),
        ),
    ]
    if run.attempt:
        started = datetime.datetime.fromtimestamp(run_format.attempt_time(run.attempt), datetime.timezone.utc)
        facts.append((
            "attempt",
            f"the newest, started {started:%Y-%m-%d %H:%M:%S} UTC: the rank was written more than once on this URI",
        ))  # fmt: skip
    try:
        end = run.ended(rank=rank)
    except errors.StoreError as err:
        facts.append(("ended", html.escape(f"unknown: {err}")))
    else:
        ended = "no END.json (still writing, or killed before it closed)" if end is None else end.outcome()
        if end is not None and end.lost_steps:
            ended += f"; {end.lost_steps} steps never reached the store"
        facts.append(("ended", html.escape(ended)))
    if run.problems:
        facts.append(
            ("unreadable", html.escape(f"{len(run.problems)} objects skipped; first: {run.problems[0]}"))
        )
    if outcome and outcome.get("command"):
        facts.append(("command", f"<code>{html.escape(' '.join(map(str, outcome['command'])))}</code>"))
    figures = [_figure(plot, mine) for plot in collect_plots(run, rank=rank)]
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    page_title = title or f"TrainGuard report: {run_id}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{html.escape(page_title)}</title>'
        f"<style>{_CSS}</style></head><body>"
        f'<h1>{html.escape(page_title)}</h1><div class="muted">generated {generated}</div>'
        + _banner(outcome, markers, nothing=nothing_evaluated(run, rank))
        + "<table>"
        + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
        + "</table><h2>Findings</h2>"
        + _findings_table(markers)
        + "<h2>Plots</h2>"
        + (
            '<p class="muted">Dashed lines mark the first finding of each rule and tensor (hover for the message); '
            "circles mark the tensor a finding names; triangles on the top edge mark the first NaN/Inf of a series.</p>"
        )
        + (
            f'<div class="grid">{"".join(figures)}</div>'
            if figures
            else '<p class="muted">The run holds no statistics to plot.</p>'
        )
        + _predictions_section(run, rank)
        + "</body></html>\n"
    )


def load_json_findings(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Return (findings, the whole document) of a `trainguard run/evaluate --json` file."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError, RecursionError) as err:
        raise ReportError(
            f"cannot read findings from {path}: {err}; pass the file written by --json"
        ) from err
    if not isinstance(doc, dict) or not isinstance(doc.get("findings"), list):
        raise ReportError(
            f"{path} has no `findings` list; pass the file written by `trainguard run --json` or `evaluate --json`"
        )
    return doc["findings"], doc


def evaluate_findings(uri: str, *, attempt: str | None = None) -> list[Any]:
    """Evaluate a stored run once with the default rules and return every finding (with `attempt`: of the
    writer attempts from that one on only)."""
    from trainguard.sidecar.evaluator import Evaluator

    ev = Evaluator(
        uri, checkpoint=False, not_before=None if attempt is None else run_format.attempt_time(attempt)
    )
    try:
        before = -1
        while ev.segments_total != before and not ev.ended:  # until a poll brings nothing new
            before = ev.segments_total
            ev.poll()
    finally:
        ev.close()
    return list(ev.findings)


def write_report(
    uri: str,
    path: str | Path,
    *,
    findings: Iterable[Any] | None = None,
    json_file: str | Path | None = None,
    rank: int = 0,
    outcome: Mapping[str, Any] | None = None,
    run: Run | None = None,
) -> Path:
    """Write the report of the run at `uri` to `path` and return the path.

    Findings come from `findings`, else from `json_file`, else from evaluating the run with the
    default rules; `outcome` (a `trainguard run --json` document) adds the stop banner. A rank
    written by several attempts (the URI reused) is reported for its newest attempt.
    """
    run = run or open_run(uri)
    if rank not in run.ranks:
        raise ReportError(f"run {uri} has no rank {rank}; ranks present: {run.ranks}")
    attempts = run.attempts(rank)
    if len(attempts) > 1:
        run = run.at_attempt(attempts[-1])
    if findings is None and json_file is not None:
        findings, doc = load_json_findings(json_file)
        outcome = outcome or (doc if "stopped" in doc else None)
    if findings is None:
        findings = evaluate_findings(uri, attempt=run.attempt)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(run, findings=findings, rank=rank, outcome=outcome), encoding="utf-8")
    return out
