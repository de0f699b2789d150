"""The evaluator's Prometheus metrics, built afresh from the evaluator's state on every scrape.

`EvaluatorCollector` reads anything shaped like an evaluator (`EvaluatorState`, which `Evaluator`
is); this module never imports the evaluator. Whoever runs an evaluator and serves metrics (the
`trainguard sidecar` command, local mode) builds the collector over it and registers it on a
`CollectorRegistry` of its own (never the global one), as prometheus_client's custom collectors
are registered, and unregisters it when done. Labels come from bounded sets only: rule names,
severities, collections, modes and end states, never tensor or layer names. Training gauges describe the newest step with statistics of
the lowest followed rank (one rank per sidecar in Kubernetes; rank 0 in local mode).
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

import numpy as np
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from trainguard.api.enums import Mode, RuleState, RunEnd, Severity
from trainguard.rules.step_view import COL, StepView
from trainguard.sidecar.running_auc import StreamSummary
from trainguard.sidecar.verdicts import RuleCounters, RuleStatus

DURATION_BUCKETS_SECONDS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
"""Evaluation time of one segment: about a millisecond for a small model, up to seconds for a large one."""


class Histogram:
    """Cumulative bucket counts and a sum, for a histogram exported by a custom collector."""

    def __init__(self, buckets: Sequence[float]) -> None:
        self.bounds = list(buckets)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    def buckets(self) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        total = 0
        for bound, count in zip([*map(floatToGoString, self.bounds), "+Inf"], self.counts):
            total += count
            out.append((bound, float(total)))
        return out


def collection_norms(view: StepView) -> dict[str, tuple[float | None, float | None, float]]:
    """Per collection: sqrt(sum l2^2) (None when a tensor's norm is unknown: a part of a sharded tensor whose
    other parts this evaluator does not read, `shard_merge`), median update_l2/l2 over trainable tensors (None
    if none), NaN+Inf count."""
    out: dict[str, tuple[float | None, float | None, float]] = {}
    collections = sorted({m.collection for m in view.meta})
    for coll in collections:
        rows = np.asarray([i for i, m in enumerate(view.meta) if m.collection == coll], dtype=np.int64)
        l2 = view.stats[rows, COL["l2"]]
        unknown = np.isnan(l2) & (view.stats[rows, COL["nan"]] == 0) & (view.stats[rows, COL["inf"]] == 0)
        norm = None if unknown.any() else float(np.sqrt(np.sum(l2 * l2)))  # NaN stays NaN: a diverged tensor
        trainable = np.asarray([view.meta[i].trainable for i in rows], dtype=bool)
        ratio: float | None = None
        if trainable.any():
            upd = view.stats[rows[trainable], COL["update_l2"]]
            base = view.stats[rows[trainable], COL["l2"]]
            with np.errstate(divide="ignore", invalid="ignore"):
                r = upd / base
            r = r[np.isfinite(r)]
            ratio = float(np.median(r)) if r.size else None
        nonfinite = float(np.nansum(view.stats[rows, COL["nan"]]) + np.nansum(view.stats[rows, COL["inf"]]))
        out[coll] = (norm, ratio, nonfinite)
    return out


class EvaluatorState(Protocol):
    """What the collector reads of an evaluator at scrape time (under its `lock`)."""

    @property
    def lock(self) -> threading.RLock: ...
    @property
    def last_step(self) -> int | None: ...
    @property
    def rule_status(self) -> Mapping[str, RuleStatus]: ...
    @property
    def durations(self) -> Histogram: ...
    @property
    def lag_seconds(self) -> float | None: ...
    @property
    def read_bytes_total(self) -> int: ...
    @property
    def segments_total(self) -> int: ...
    @property
    def corrupt_segments_total(self) -> int: ...
    @property
    def lost_steps_total(self) -> int: ...
    @property
    def unchecked_steps_total(self) -> int: ...
    @property
    def stop_requested(self) -> bool: ...
    @property
    def stop_watched(self) -> bool: ...
    @property
    def last_evaluation_time(self) -> float | None: ...
    @property
    def run_end(self) -> RunEnd | None: ...
    def counters(self) -> list[tuple[str, RuleCounters]]: ...
    def last_loss(self) -> dict[Mode, float]: ...
    def last_views(self) -> list[StepView]: ...
    def prediction_summary(self) -> dict[str, StreamSummary]: ...


class EvaluatorCollector(Collector):
    """Reads an evaluator at scrape time and yields every `trainguard_training_*`, `_rule_*`, `_sidecar_*`, `_run_ended` family."""

    def __init__(self, evaluator: EvaluatorState) -> None:
        """Register it with `registry.register(collector)`: duplicate series names fail there, not at scrape time."""
        self.evaluator = evaluator

    def describe(self) -> list[Metric]:
        # Names only, so registration checks duplicates without taking the evaluator's lock.
        return list(self._families(with_values=False))

    def collect(self) -> Iterator[Metric]:
        with self.evaluator.lock:
            families = list(self._families(with_values=True))
        yield from families

    def _families(self, *, with_values: bool) -> Iterator[Metric]:
        ev = self.evaluator
        step = GaugeMetricFamily("trainguard_training_step", "Last training step evaluated.")
        loss = GaugeMetricFamily(
            "trainguard_training_loss", "Last loss value, by mode (train or eval).", labels=["mode"]
        )
        norm = GaugeMetricFamily(
            "trainguard_training_tensor_l2_norm",
            "sqrt(sum of l2^2) over the tensors of a collection at the last step.",
            labels=["collection"],
        )
        ratio = GaugeMetricFamily(
            "trainguard_training_update_ratio",
            "Median over trainable tensors of update_l2/l2 at the last step.",
            labels=["collection"],
        )
        nonfinite = GaugeMetricFamily(
            "trainguard_training_nonfinite_values",
            "NaN plus Inf count at the last step.",
            labels=["collection"],
        )
        triggered = GaugeMetricFamily(
            "trainguard_rule_triggered", "1 once the rule found issues.", labels=["rule"]
        )
        not_checked = GaugeMetricFamily(
            "trainguard_rule_not_checked",
            "1 once the rule ended without ever getting what it reads (e.g. no eval loss recorded): not "
            "checked, rather than no issues.",
            labels=["rule"],
        )
        evaluations = CounterMetricFamily(
            "trainguard_rule_evaluations", "Steps given to the rule.", labels=["rule"]
        )
        rule_errors = CounterMetricFamily(
            "trainguard_rule_errors", "Exceptions raised by the rule.", labels=["rule"]
        )
        findings = CounterMetricFamily(
            "trainguard_rule_findings", "Findings reported by the rule.", labels=["rule", "severity"]
        )
        last_trigger = GaugeMetricFamily(
            "trainguard_rule_last_trigger_timestamp_seconds",
            "Unix time of the rule's last warning-or-worse finding.",
            labels=["rule"],
        )
        duration = HistogramMetricFamily(
            "trainguard_sidecar_evaluation_duration_seconds", "Time to evaluate one segment.", unit=""
        )
        lag = GaugeMetricFamily(
            "trainguard_sidecar_lag_seconds", "Evaluation time minus the step's wall time."
        )
        read_bytes = CounterMetricFamily(
            "trainguard_sidecar_read_bytes", "Bytes of segments read from the store."
        )
        segments = CounterMetricFamily("trainguard_sidecar_segments", "Segments evaluated.")
        corrupt = CounterMetricFamily(
            "trainguard_sidecar_corrupt_segments", "Segments skipped as corrupt or gone."
        )
        auc_decayed = GaugeMetricFamily(
            "trainguard_predictions_auc",
            "Decayed AUC (half-life 200 steps) of the primary prediction stream, by mode.",
            labels=["mode"],
        )
        auc_se = GaugeMetricFamily(
            "trainguard_predictions_auc_standard_error",
            "Hanley-McNeil standard error of the decayed AUC, from effective counts.",
            labels=["mode"],
        )
        auc_total = GaugeMetricFamily(
            "trainguard_predictions_cumulative_auc",
            "AUC over every prediction counted so far.",
            labels=["mode"],
        )
        pos_rate = GaugeMetricFamily(
            "trainguard_predictions_positive_rate",
            "Share of positive labels among predictions counted.",
            labels=["mode"],
        )
        stop = GaugeMetricFamily("trainguard_sidecar_stop_requested", "1 once a stop verdict was issued.")
        watched = GaugeMetricFamily(
            "trainguard_sidecar_stop_watched",
            "1 once a trainer polls the stop file (hook.should_stop()): a stop can wait for it to end by itself.",
        )
        lost = GaugeMetricFamily(
            "trainguard_capture_lost_steps",
            "Steps the followed ranks' hooks report lost: they never reached the store (an outage longer than "
            "the hook's pending memory, or one at its close).",
        )
        unchecked = GaugeMetricFamily(
            "trainguard_capture_unchecked_steps",
            "Training steps the followed ranks' hooks saw go by without counting them (blind: an optimizer not "
            "registered with the hook stepped, or no optimizer did); the rules never saw them.",
        )
        last_eval = GaugeMetricFamily(
            "trainguard_sidecar_last_evaluation_timestamp_seconds", "Unix time of the last segment evaluated."
        )
        ended = GaugeMetricFamily(
            "trainguard_run_ended",
            "1 for how the run ended (ok, stopped, crashed, killed, blind: not checked), 0 for the others; no "
            "series until every followed rank's END was read.",
            labels=["state"],
        )
        if with_values:
            if (end := ev.run_end) is not None:
                for state in RunEnd:
                    ended.add_metric([state.value], 1.0 if state is end else 0.0)
            if ev.last_step is not None:
                step.add_metric([], float(ev.last_step))
            for mode, value in sorted(ev.last_loss().items()):
                loss.add_metric([mode.value], value)
            views = ev.last_views()
            if views:
                for coll, (n, r, bad) in collection_norms(views[0]).items():
                    if n is not None:
                        norm.add_metric([coll], n)
                    if r is not None:
                        ratio.add_metric([coll], r)
                    nonfinite.add_metric([coll], bad)
            statuses = ev.rule_status
            for name, c in ev.counters():
                triggered.add_metric([name], 1.0 if statuses[name].state == RuleState.ISSUES_FOUND else 0.0)
                not_checked.add_metric([name], 0.0 if statuses[name].checked else 1.0)
                evaluations.add_metric([name], float(c.evaluations))
                rule_errors.add_metric([name], float(c.errors))
                for sev in Severity:
                    findings.add_metric([name, sev.value], float(c.findings.get(sev, 0)))
                if c.last_trigger_time is not None:
                    last_trigger.add_metric([name], c.last_trigger_time)
            duration.add_metric([], buckets=ev.durations.buckets(), sum_value=ev.durations.sum)
            if ev.lag_seconds is not None and math.isfinite(ev.lag_seconds):
                lag.add_metric([], ev.lag_seconds)
            read_bytes.add_metric([], float(ev.read_bytes_total))
            segments.add_metric([], float(ev.segments_total))
            corrupt.add_metric([], float(ev.corrupt_segments_total))
            stop.add_metric([], 1.0 if ev.stop_requested else 0.0)
            watched.add_metric([], 1.0 if ev.stop_watched else 0.0)
            lost.add_metric([], float(ev.lost_steps_total))
            unchecked.add_metric([], float(ev.unchecked_steps_total))
            if ev.last_evaluation_time is not None:
                last_eval.add_metric([], ev.last_evaluation_time)
            for pred_mode, summ in ev.prediction_summary().items():
                for fam, value in (
                    (auc_decayed, summ.decayed_auc),
                    (auc_se, summ.decayed_se),
                    (auc_total, summ.cumulative_auc),
                    (pos_rate, summ.positive_rate),
                ):
                    if math.isfinite(value):
                        fam.add_metric([pred_mode], value)
        yield from (
            step,
            loss,
            norm,
            ratio,
            nonfinite,
            triggered,
            not_checked,
            evaluations,
            rule_errors,
            findings,
            last_trigger,
        )
        yield from (duration, lag, read_bytes, segments, corrupt, stop, watched, lost, unchecked, last_eval)
        yield from (auc_decayed, auc_se, auc_total, pos_rate, ended)
