"""Inline SVG charts: one `Plot` with its finding markers as an `<svg>` element, no library needed.

Axes, ticks (linear or log), thinned series (non-finite points always kept), error bands,
dashed lines at each rule's first finding per tensor (the rule's name written once per plot), dots
on sparse series, breaks where a series has a gap (no line across steps that were never
measured) and triangles at the first NaN/Inf of a series. On a log axis exact zeros are drawn
in a lane labelled 0 below the log range (a dead layer's gradient is 0, and must not vanish); a
fraction's axis is [0, 1]. The data comes from `_data`; the page around the charts is `_html`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence

import numpy as np

from trainguard.report._data import Marker, Plot

MAX_SERIES_PER_PLOT = 12
"""More lines than this are unreadable; tensors named by findings are kept first, then execution order."""
MAX_POINTS_PER_SERIES = 800
"""Longer series are thinned (non-finite points always kept) to keep the page small."""
MAX_MARKERS_PER_PLOT = 40
SPARSE_POINTS = 30
"""A series with at most this many points gets a dot on each: two Tier-1 samples drawn as a bare line read as a
trend that was never measured."""
GAP_FACTOR = 2.0
"""A series' line breaks where two points are more than this many times its usual spacing apart (the median
step between its points): no line is drawn across steps that were never measured."""
ZERO_LANE = 18
"""Height in pixels of the lane under a log axis where exact zeros are drawn."""
LABEL_ROWS = 3
"""Rows of finding labels along a plot's top edge; labels that would overlap move down a row."""
LABEL_CHAR_WIDTH = 6.3
"""Width of one character of a finding label (10 px bold system font), to keep labels from overlapping."""
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79",
    "#637939", "#8c6d31",
)  # fmt: skip
SEVERITY_COLOURS = {"critical": "#d62728", "warning": "#ff9800", "info": "#1f77b4"}


def fmt(v: float) -> str:
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    a = abs(v)
    if 1 <= a < 1e5 and abs(v - round(v)) < 1e-9 * a:
        return str(round(v))  # 1000, not 1e+03
    return f"{v:.0e}" if a >= 1e5 or a < 1e-3 else f"{v:.3g}"


def _ticks(lo: float, hi: float, *, log: bool, integer: bool = False, target: int = 5) -> list[float]:
    """Return round tick positions in [lo, hi]: on a log axis (lo, hi in log10) whole decades, or 1, 2 and 5
    times a power of ten when the axis spans less than two decades; 1/2/5 x 10^k steps otherwise."""
    if log and hi - lo >= 2:
        stride = max(1, math.ceil((hi - lo) / target))
        return [float(e) for e in range(math.ceil(lo), math.floor(hi) + 1) if e % stride == 0]
    if log:
        return [t for t in _log_candidates(lo, hi) if lo - 1e-9 <= t <= hi + 1e-9]
    raw = (hi - lo) / target
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _log_candidates(lo: float, hi: float) -> list[float]:
    """log10 of 1, 2 and 5 times the powers of ten around [lo, hi]."""
    return [k + math.log10(m) for k in range(math.floor(lo) - 1, math.ceil(hi) + 1) for m in (1, 2, 5)]


def _log_axis(lo: float, hi: float) -> tuple[float, float]:
    """Widen a short log axis (log10 bounds) to the nearest round values below and above, so that it
    has at least two ticks at 1, 2 or 5 times a power of ten."""
    if len(_ticks(lo, hi, log=True)) >= 2:
        return lo, hi
    cands = _log_candidates(lo, hi)
    below = max((c for c in cands if c <= lo), default=math.floor(lo))
    above = min((c for c in cands if c >= hi), default=math.ceil(hi))
    return below, above


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
    plot: Plot,
    markers: Sequence[Marker],
    *,
    width: int = 700,
    height: int = 260,
    x_range: tuple[float, float] | None = None,
) -> tuple[str, list[str]]:
    """Return (svg markup, the labels drawn, in colour order) for one plot with finding markers.

    A plot over steps starts at step 0 and, with `x_range`, spans it (the page gives every plot the
    run's last step, so plots side by side share one x-axis)."""
    left, right, bottom = 64, 14, 34
    marks = _plot_markers(markers)
    top = 14 + (_label_rows(marks) * 11 if marks else 0)  # room for the findings' labels above the plot
    pw, ph = width - left - right, height - top - bottom
    labels, _ = _pick_series(plot, markers)
    data = {n: _thin(*plot.series[n]) for n in labels}
    all_steps = np.concatenate(
        [s for s, _ in data.values()] + [np.asarray([m.step for m in markers], np.int64)]
    )
    x0, x1 = float(all_steps.min()), float(all_steps.max())
    if plot.x_label == "step":
        x0 = min(x0, 0.0)
        if x_range is not None:
            x0, x1 = min(x0, x_range[0]), max(x1, x_range[1])
    x1 = x1 if x1 > x0 else x0 + 1

    def ty(v: np.ndarray) -> np.ndarray:
        """Values as drawn: log10 on a log axis, where exact zeros become -inf (the zero lane) and negatives NaN."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return (
                np.where(v > 0, np.log10(np.where(v > 0, v, 1)), np.where(v == 0, -np.inf, np.nan))
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
    if plot.log_y:
        y0, y1 = _log_axis(y0, y1)
    elif plot.y_range is not None:
        y0, y1 = plot.y_range
    elif plot.y_limits is not None:
        y0, y1 = max(y0, plot.y_limits[0]), min(y1, plot.y_limits[1])
    zeros = plot.log_y and any(bool((v == 0).any()) for _, v in data.values())
    lane = ZERO_LANE if zeros else 0
    zero_y = top + ph - lane / 2

    def px(s: float) -> float:
        return left + (s - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        if y == -math.inf:
            return zero_y
        return top + (1 - (y - y0) / (y1 - y0)) * (ph - lane)

    def drawn(y: float) -> bool:
        return math.isfinite(y) or (zeros and y == -math.inf)

    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" data-plot="{plot.key}" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-label="{html.escape(plot.title)}">'
        ),
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#ccc"/>',
    ]
    if zeros:  # the lane of exact zeros, below the log range and apart from it
        parts.append(
            f'<g class="zero-lane"><rect x="{left}" y="{top + ph - lane}" width="{pw}" height="{lane}" fill="#f4f4f4"/>'
            f'<line x1="{left}" x2="{left + pw}" y1="{top + ph - lane}" y2="{top + ph - lane}" stroke="#bbb" '
            f'stroke-dasharray="3 3"/><text x="{left - 6}" y="{zero_y + 4:.1f}" text-anchor="end" class="tick">0</text>'
            f'<text x="{left + pw - 4}" y="{zero_y + 3.5:.1f}" text-anchor="end" class="tick">exactly 0 (below the '
            "log scale)</text></g>"
        )
    for y in _ticks(y0, y1, log=plot.log_y):
        label = fmt(10**y) if plot.log_y else fmt(y)
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
            f"{int(s) if over_steps else fmt(s)}</text>"
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
        gap = _gap_limit(plot.series[name][0], steps)
        d, pen, last = [], False, None
        for s, y in zip(steps, yv):
            if not drawn(y):
                pen = False
                continue
            if last is not None and s - last > gap:
                pen = False  # steps in between were never measured: no line across them
            d.append(f"{'L' if pen else 'M'}{px(float(s)):.1f} {py(float(y)):.1f}")
            pen, last = True, s
        parts.append(
            f'<path class="series" data-series="{html.escape(name)}" d="{" ".join(d)}" fill="none" '
            f'stroke="{colour}" stroke-width="1.5"><title>{html.escape(name)}</title></path>'
        )
        if len(d) <= SPARSE_POINTS:  # few measurements: show each one, not only the line between them
            dots = "".join(
                f'<circle cx="{px(float(s)):.1f}" cy="{py(float(y)):.1f}" r="2.5"/>'
                for s, y in zip(steps, yv)
                if drawn(y)
            )
            parts.append(f'<g class="points" data-series="{html.escape(name)}" fill="{colour}">{dots}</g>')
        bad = np.nonzero(~np.isfinite(values))[0]
        if bad.size:  # where the values went NaN/Inf: a triangle on the top edge
            s = float(steps[bad[0]])
            parts.append(
                f'<path class="nonfinite" d="M{px(s):.1f} {top} l-5 -8 h10 z" fill="{colour}">'
                f"<title>{html.escape(name)}: {values[bad[0]]} at step {int(s)}</title></path>"
            )
    named = _labelled(marks)
    layout = dict(zip(named, _label_layout([marks[k] for k in named], px, width - 2), strict=True))
    for k, m in enumerate(marks):
        colour = SEVERITY_COLOURS.get(m.severity, "#555")
        x = px(m.step)
        row, flip = layout.get(k, (0, False))
        label = (
            f'<text class="finding-label" x="{x - 3 if flip else x + 3:.1f}" y="{10 + row * 11}" '
            f'text-anchor="{"end" if flip else "start"}" fill="{colour}">{html.escape(m.rule)}</text>'
            if k in layout
            else ""
        )
        tip = html.escape(
            f"{m.rule} ({m.severity}) at step {m.step}"
            + (f", {m.tensor}" if m.tensor else "")
            + f": {m.message}"
        )
        parts.append(
            f'<g class="finding finding-{html.escape(m.severity)}" data-rule="{html.escape(m.rule)}" data-step="{m.step}">'
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{11 + row * 11 if label else top}" y2="{top + ph}" stroke="{colour}" '
            f'stroke-dasharray="4 3"/>{label}<title>{tip}</title>'
        )
        if m.tensor in data:
            steps, values = data[m.tensor]
            hit = np.nonzero(steps == m.step)[0]
            y = float(ty(values[hit[:1]])[0]) if hit.size else float("nan")
            if drawn(y):
                parts.append(
                    f'<circle cx="{x:.1f}" cy="{py(y):.1f}" r="4" fill="none" stroke="{colour}" stroke-width="2"/>'
                )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts), labels


def undrawn(plot: Plot, name: str) -> str:
    """A legend note for a series that a glance at the lines would misread: never finite, or zero throughout on a
    log axis (drawn in the zero lane)."""
    values = plot.series[name][1]
    finite = values[np.isfinite(values)]
    if not finite.size:
        return ' <i class="muted">(no finite value)</i>'
    if plot.log_y and not (finite > 0).any():
        return ' <i class="muted">(zero throughout: on the 0 lane under the log axis)</i>'
    return ""


def _gap_limit(measured: np.ndarray, drawn_steps: np.ndarray) -> float:
    """The largest step between two drawn points that the line may cross: GAP_FACTOR times the series' usual
    spacing (the median over its measured points, times the thinning stride where it was thinned)."""
    if measured.size < 3:
        return math.inf
    usual = float(np.median(np.diff(measured)))
    stride = max(1.0, measured.size / max(drawn_steps.size, 1))
    return GAP_FACTOR * max(usual, 1.0) * math.ceil(stride)


def _labelled(marks: Sequence[Marker]) -> list[int]:
    """Indices of the markers whose rule name is written: each rule's first, once per plot."""
    seen: set[str] = set()
    out = []
    for k, m in enumerate(marks):
        if m.rule not in seen:
            seen.add(m.rule)
            out.append(k)
    return out


def _label_rows(marks: Sequence[Marker]) -> int:
    return min(LABEL_ROWS, max(1, len({m.rule for m in marks})))


def _label_layout(
    marks: Sequence[Marker], px: Callable[[float], float], right_edge: float
) -> list[tuple[int, bool]]:
    """Where each marker's label goes: (row, whether it ends at the line instead of starting there). A label
    that would run past the right edge ends at its line; a label overlapping one already placed in a row
    moves down a row."""
    ends = [-math.inf] * _label_rows(marks)
    out = []
    for m in marks:
        x = float(px(m.step))
        width = LABEL_CHAR_WIDTH * len(m.rule)
        flip = x + 3 + width > right_edge
        start = x - 3 - width if flip else x + 3
        row = next((r for r, end in enumerate(ends) if start > end + 4), int(np.argmin(ends)))
        ends[row] = start + width
        out.append((row, flip))
    return out


def _plot_markers(markers: Sequence[Marker]) -> list[Marker]:
    """The first finding of each (rule, tensor), at most MAX_MARKERS_PER_PLOT: a marker per repeat would hide the plot."""
    seen: dict[tuple[str, str | None], Marker] = {}
    for m in sorted(markers, key=lambda m: m.step):
        seen.setdefault((m.rule, m.tensor), m)
    return list(seen.values())[:MAX_MARKERS_PER_PLOT]
