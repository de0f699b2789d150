"""The report page: facts, the stop banner, the findings table and the charts, in one HTML file.

`render(run, findings=...)` returns the page; `write_report(uri, path, findings=...)` opens the run
(the newest attempt of a rank written more than once), takes the findings it is handed or those
of a `--json` file, and writes it. No JavaScript, no external CSS or fonts: the file opens
anywhere, offline.
"""

from __future__ import annotations

import datetime
import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trainguard.report._data import (
    CONSTANTS,
    FindingLike,
    Marker,
    Plot,
    ReportError,
    collect_plots,
    collect_predictions,
)
from trainguard.report._svg import PALETTE, fmt, svg_plot, undrawn
from trainguard.store import errors, listing, run_format
from trainguard.store.reader import Run
from trainguard.store.runs import open_run

MAX_FINDING_ROWS = 200


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:2400px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px} .muted{color:#666}
table{border-collapse:collapse;margin:8px 0} td,th{border-bottom:1px solid #e4e4e4;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f6f6f6} .sev{font-weight:600} .sev-critical{color:#d62728} .sev-warning{color:#e65100} .sev-info{color:#1f77b4}
.banner{padding:10px 14px;border-radius:6px;margin:12px 0} .banner.stopped{background:#fdecea;border:1px solid #f5c2c0}
.banner.ok{background:#e8f5e9;border:1px solid #b9dfbb} .banner.warn{background:#fff4e5;border:1px solid #ffd59e}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(540px,1fr));gap:18px}
figure{margin:0;border:1px solid #ddd;border-radius:6px;padding:10px;background:#fafafa;min-width:0}
figure svg{width:100%;height:auto;display:block}
figcaption{font-weight:600;margin-bottom:4px} .legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px}
.legend span::before{content:"";display:inline-block;width:12px;height:3px;margin-right:5px;vertical-align:middle;background:var(--c)}
svg .tick{font-size:10px;fill:#555} svg .axis{font-size:11px;fill:#333} svg .finding-label{font-size:10px;font-weight:600} code{background:#f2f2f2;padding:0 3px;border-radius:3px}
"""


def _groups(markers: Sequence[Marker]) -> dict[tuple[str, int, str | None], list[Marker]]:
    """Findings grouped as the table shows them: by rule, rank and tensor, each group in step order."""
    groups: dict[tuple[str, int, str | None], list[Marker]] = {}
    for m in sorted(markers, key=lambda m: (m.step, m.rank)):
        groups.setdefault((m.rule, m.rank, m.tensor), []).append(m)
    return groups


def _worst(ms: Sequence[Marker]) -> str:
    return max(ms, key=lambda m: {"critical": 2, "warning": 1}.get(m.severity, 0)).severity


def _findings_table(markers: Sequence[Marker]) -> str:
    if not markers:
        return '<p class="muted">No findings: every rule stayed quiet.</p>'
    groups = _groups(markers)
    rows = []
    for (rule, rank, tensor), ms in list(groups.items())[:MAX_FINDING_ROWS]:
        first = ms[0]
        worst = _worst(ms)
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
    if run.steps(rank=rank).size:
        return None
    catalogue = run.tensors(rank=rank)
    tensors = [t for t in catalogue if not t.is_scalar]
    if not tensors and any(t.is_scalar for t in catalogue):
        return None  # a run of scalars only (a TensorBoard log, a Recorder of losses) is evaluated on them
    if tensors:
        return (
            "the run holds no saved step with tensor statistics (a PyTorch script must call "
            "hook.register_optimizer(optimizer): its steps count the saved steps)"
        )
    return "the run holds no step"


def _ended(run: Run, rank: int) -> str:
    """How the rank ended, from its END.json, with the steps it lost."""
    try:
        end = run.ended(rank=rank)
    except errors.StoreError as err:
        return f"unknown: {err}"
    if end is None:
        return "no END.json (still writing, or killed before it closed)"
    return end.outcome() + (f"; {end.lost_steps} steps never reached the store" if end.lost_steps else "")


def end_state(run: Run) -> str | None:
    """How the run ended, from every rank's END.json (`store.listing.end_state`: crashed, stopped, killed, running or
    no END, ok), or None for a format without END markers (smdebug, TensorBoard)."""
    if run.format != "trainguard":
        return None
    ends: dict[int, run_format.EndInfo | None] = {}
    for rank in run.ranks:
        try:
            ends[rank] = run.ended(rank=rank)
        except errors.StoreError as err:
            return f"unknown: {err}"
    return listing.end_state(ends)


def _banner(
    outcome: Mapping[str, Any] | None,
    markers: Sequence[Marker],
    *,
    nothing: str | None = None,
    ended: str | None = None,
) -> str:
    """The line at the top: how the run ended first (a stop, a crash, a kill, no END), then what the rules found.
    Green only for a run that ended ok (or has no END markers to say otherwise) with no warning."""
    worst = {m.severity for m in markers}
    n = sum(1 for ms in _groups(markers).values() if _worst(ms) in ("critical", "warning"))
    found = (
        f"{n} warning or critical finding{'' if n == 1 else 's'} (by rule, rank and tensor); see the table below"
        if n
        else f"not checked, nothing was evaluated: {nothing}"
        if nothing is not None
        else "no warning from the rules"
    )
    if outcome and outcome.get("stopped"):
        stop = outcome.get("stop") or {}
        return (
            f'<div class="banner stopped"><b>Stopped by rule {html.escape(str(outcome.get("stopped_by")))}</b> at step '
            f"{html.escape(str(stop.get('step')))}"
            + (
                f" (exit status {html.escape(str(outcome['exit_code']))})"
                if outcome.get("exit_code") is not None
                else ""
            )
            + f": "
            f"{html.escape(str(stop.get('message', '')))}{_earlier_sign(stop.get('earlier_sign'))}</div>"
        )
    if ended is not None and ended.startswith(("crashed", "killed")):
        head, _, how = ended.partition(": ")
        return (
            f'<div class="banner stopped"><b>{html.escape(head[:1].upper() + head[1:])}</b>'
            f"{': ' + html.escape(how) if how else ''}. Up to then: {html.escape(found)}.</div>"
        )
    if nothing is not None:  # the script ran, but the rules had nothing to look at; a capture error says why
        why = f" The rank ended {ended}." if ended is not None and ended.startswith("error") else ""
        return (
            f'<div class="banner warn"><b>Nothing was evaluated</b> (not checked): {html.escape(nothing)}.'
            f"{html.escape(why)}</div>"
        )
    if ended is not None and ended != "ok":
        if ended.startswith("error"):
            return (
                f'<div class="banner warn"><b>Capture failed</b>: {html.escape(ended.partition(": ")[2])}; the rules '
                f"saw what reached the store: {html.escape(found)}.</div>"
            )
        if ended.startswith("stopped"):
            where = ended[len("stopped") :]  # " (rank 1)" of several ranks
            return (  # no verdict record of the run names the rule (`trainguard report` reads it when there is one)
                f'<div class="banner stopped"><b>Stopped</b>{html.escape(where)}: a rule with action stop ended the '
                f"run, and no verdict record of it says which; {html.escape(found)}.</div>"
            )
        return (
            f'<div class="banner warn"><b>Not finished</b>: {html.escape(ended)}: the run was still being written '
            f"or was killed before it closed; {html.escape(found)}.</div>"
        )
    if "critical" in worst or "warning" in worst:
        # Count what the table shows: one row per rule, rank and tensor.
        return f'<div class="banner warn">{found[:1].upper() + found[1:]}.</div>'
    return (
        '<div class="banner ok">No warnings: the run ended normally and the rules found nothing wrong.</div>'
    )


def _earlier_sign(sign: Mapping[str, Any] | None) -> str:
    if not sign:
        return ""
    return (
        f"<br>Earlier sign at step {html.escape(str(sign.get('step')))}: rule "
        f"<b>{html.escape(str(sign.get('rule')))}</b> ({html.escape(str(sign.get('severity')))}): "
        f"{html.escape(str(sign.get('message', '')))}"
    )


def _figure(
    plot: Plot,
    markers: Sequence[Marker],
    *,
    id_prefix: str = "plot",
    x_range: tuple[float, float] | None = None,
) -> str:
    svg, labels = svg_plot(plot, markers, x_range=x_range)
    hidden = len(plot.series) - len(labels)
    legend = "".join(
        f'<span style="--c:{PALETTE[i % len(PALETTE)]}">{html.escape(n)}{undrawn(plot, n)}</span>'
        for i, n in enumerate(labels)
    )
    extra = f'<span class="muted">+{hidden} more not drawn</span>' if hidden > 0 else ""
    note = f'<div class="muted">{html.escape(plot.note)}</div>' if plot.note else ""
    return (
        f'<figure id="{id_prefix}-{plot.key}"><figcaption>{html.escape(plot.title)}</figcaption>{svg}'
        f'<div class="legend">{legend}{extra}</div>{note}</figure>'
    )


def _groups_text(run: Run, rank: int) -> str:
    """Each optimizer parameter group's settings (format 2.5; written where they change): `0.0 (SGD, 4 tensors):
    lr 0.1 -> 0.001 (2 changes, steps 0-200), momentum 0.9`."""
    parts = []
    for g in run.optimizer_groups(rank=rank):
        settings = []
        for what, s in sorted(g.hyperparameters.items()):
            if not s.values.size:
                continue
            if s.values.size == 1 or np.all(s.values == s.values[0]):
                settings.append(f"{what} {fmt(float(s.values[0]))}")
            else:
                settings.append(
                    f"{what} {fmt(float(s.values[0]))} -> {fmt(float(s.values[-1]))} "
                    f"({s.values.size - 1} changes, steps {int(s.steps[0])}-{int(s.steps[-1])})"
                )
        head = f"{g.key} ({g.optimizer or 'optimizer not named'}, {len(g.tensors)} tensors)"
        parts.append(head + (": " + ", ".join(settings) if settings else ""))
    return "; ".join(parts)


def _constants_text(plot: Plot) -> str:
    return "; ".join(
        f"{name} = {fmt(float(values[0]))} at all {values.size} steps from {int(steps[0])} to {int(steps[-1])}"
        for name, (steps, values) in plot.series.items()
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
    findings: Iterable[FindingLike] = (),
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
    facts.append(("ended", html.escape(_ended(run, rank))))
    if run.problems:
        facts.append(
            ("unreadable", html.escape(f"{len(run.problems)} objects skipped; first: {run.problems[0]}"))
        )
    sharded = sum(1 for t in run.tensors(rank=rank) if t.shard is not None and t.shard.of > 1)
    if sharded:
        facts.append(
            ("sharded", f"{sharded} tensors held in parts by the ranks: plotted merged (the full tensors)")
        )
    per_shard = run.units_per_shard(rank=rank)
    if per_shard:
        facts.append((
            "per shard",
            "per-unit vectors not merged, read and judged per shard (statistics and histograms merge):<br>"
            + "<br>".join(f"<code>{html.escape(n)}</code>: {html.escape(why)}" for n, why in per_shard.items()),
        ))  # fmt: skip
    skipped = run.skipped(rank=rank)
    if skipped:
        facts.append((
            "not read",
            "<br>".join(f"<code>{html.escape(n)}</code>: {html.escape(why)}" for n, why in sorted(skipped.items())),
        ))  # fmt: skip
    if outcome and outcome.get("command"):
        facts.append(("command", f"<code>{html.escape(' '.join(map(str, outcome['command'])))}</code>"))
    plots = collect_plots(run, rank=rank)
    for plot in plots:
        if plot.key == CONSTANTS:
            facts.append(("constant scalars", html.escape(_constants_text(plot))))
    groups = _groups_text(run, rank)
    if groups:
        facts.append(("optimizer groups", html.escape(groups)))
    plots = [p for p in plots if p.key != CONSTANTS]
    # Every plot over steps spans 0 to the run's last step, so plots read against each other.
    last = max((float(s.max()) for p in plots for s, _ in p.series.values() if s.size), default=0.0)
    figures = [_figure(plot, mine, x_range=(0.0, last)) for plot in plots]
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    page_title = title or f"TrainGuard report: {run_id}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{html.escape(page_title)}</title>'
        f"<style>{_CSS}</style></head><body>"
        f'<h1>{html.escape(page_title)}</h1><div class="muted">generated {generated}</div>'
        + _banner(outcome, markers, nothing=nothing_evaluated(run, rank), ended=end_state(run))
        + "<table>"
        + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
        + "</table><h2>Findings</h2>"
        + _findings_table(markers)
        + "<h2>Plots</h2>"
        + (
            '<p class="muted">Dashed lines, labelled with the rule, mark the first finding of each rule and tensor '
            "(the table above has the message); open circles mark the tensor a finding names; dots are the measured "
            "points of sparse series; triangles on the top edge mark the first NaN/Inf of a series.</p>"
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


def report_run(uri: str, *, rank: int = 0, run: Run | None = None) -> Run:
    """The run at `uri` (or `run`) as the report shows it: `rank` must be there, and a rank written by several
    attempts (the URI reused) shows its newest attempt."""
    run = run or open_run(uri)
    if rank not in run.ranks:
        raise ReportError(f"run {uri} has no rank {rank}; ranks present: {run.ranks}")
    attempts = run.attempts(rank)
    if len(attempts) > 1:
        run = run.at_attempt(attempts[-1])
    return run


def write_report(
    uri: str,
    path: str | Path,
    *,
    findings: Iterable[FindingLike] | None = None,
    json_file: str | Path | None = None,
    rank: int = 0,
    outcome: Mapping[str, Any] | None = None,
    run: Run | None = None,
) -> Path:
    """Write the report of the run at `uri` to `path` and return the path.

    Findings come from `findings`, else from `json_file` (a `--json` document, whose outcome adds the
    stop banner); the report evaluates nothing itself (`evaluator.evaluate_stored` does, for a caller
    that has no findings). `outcome` (a `trainguard run --json` document) adds the stop banner.
    """
    run = report_run(uri, rank=rank, run=run)
    if findings is None:
        if json_file is None:
            raise ReportError(f"no findings to mark for {uri}: pass findings, or the file written by --json")
        findings, doc = load_json_findings(json_file)
        outcome = outcome or (doc if "stopped" in doc else None)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(run, findings=findings, rank=rank, outcome=outcome), encoding="utf-8")
    return out
