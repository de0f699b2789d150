"""Run the evaluator sidecar: follow a pod's ranks of a run, evaluate rules, serve /metrics, /healthz and /findings.

Reads a SidecarConfig YAML (mounted at /etc/trainguard/sidecar.yaml by the operator). The rank
comes from the config; else, with a DebugJob configured, the pod index i comes from RANK or
JOB_COMPLETION_INDEX and the sidecar follows the global ranks of that pod's processes,
[i * ranks_per_pod, (i + 1) * ranks_per_pod) (torchrun numbers them node_rank * nproc + local_rank);
with neither a rank nor a DebugJob it follows all ranks. Each verdict is logged and printed as
one JSON line on stdout. A `stop` verdict on any followed rank creates the stop file, which every
process of the pod reads. With a DebugJob, each followed rank's report is patched into its status
under its own key. As a pod's native sidecar (a DebugJob's, or one the attach webhook injected:
`ranks_from_env`) the process keeps serving after the run ended until it gets SIGTERM: a native
sidecar that exits is restarted, and the Job controller counts that restart as a failure of a pod
whose restartPolicy is OnFailure (a JobSet's, a TrainJob's), failing the workload. Otherwise it
exits when the run ended.
In a DebugJob pod the sidecar follows its own pod's trainer only: a retried pod (the Job's
backoffLimit) writes a new attempt of the same ranks, and the writer attempts from before the pod
started (kept in a file of the pod's shared volume, which outlives a restarted sidecar) are left
to the earlier pod's evaluator.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

POD_STARTED_FILE = "pod-started-at"
"""Beside the stop file: when the pod's first sidecar started (Unix time)."""
HELP = "run the rule evaluator of one pod's ranks (used inside a DebugJob pod)"

log = logging.getLogger("trainguard.sidecar")


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", required=True, metavar="FILE", help="sidecar config (YAML, SidecarConfig)"
    )


def rank_from_env(env: dict[str, str] | os._Environ[str]) -> int | None:
    """Return the pod's index (its node rank) from RANK or JOB_COMPLETION_INDEX (Indexed Jobs), or None if neither is set."""
    from trainguard.errors import ConfigError

    for name in ("RANK", "JOB_COMPLETION_INDEX"):
        value = env.get(name)
        if value not in (None, ""):
            try:
                rank = int(value)
            except ValueError:
                raise ConfigError(
                    f"environment variable {name}={value!r} is not a rank (a non-negative integer)"
                ) from None
            if rank < 0:
                raise ConfigError(
                    f"environment variable {name}={value!r} is not a rank (a non-negative integer)"
                )
            return rank
    return None


def pod_started_at(marker: str, now: float) -> float:
    """Return when this pod's first sidecar started: read from `marker`, or `now` written there.

    `marker` is on the pod's emptyDir, so a restarted sidecar container finds its pod's start again.
    """
    try:
        with open(marker, encoding="utf-8") as f:
            return float(f.read())
    except (OSError, ValueError):
        pass
    try:
        with open(marker, "w", encoding="utf-8") as f:
            f.write(repr(now))
    except OSError as err:
        log.warning(
            "cannot keep the pod's start time in %s (%s); a restarted sidecar uses its own", marker, err
        )
    return now


def main(args: argparse.Namespace) -> int:
    import prometheus_client

    from trainguard.api import findings as api_findings
    from trainguard.errors import ConfigError
    from trainguard.sidecar import config as sidecar_config
    from trainguard.sidecar import findings, metrics
    from trainguard.sidecar.evaluator import Evaluator
    from trainguard.sidecar.report_status import FULL_REPORT_RANKS, StatusReporter
    from trainguard.sidecar.server import MetricsServer
    from trainguard.sidecar.verdicts import Verdict
    from trainguard.store import backends

    cfg = sidecar_config.load_sidecar_config(args.config)
    ranks: list[int] | None = None
    index: int | None = None
    if cfg.rank is not None:
        ranks = [cfg.rank]
    elif cfg.debugjob is not None or cfg.ranks_from_env:
        index = rank_from_env(os.environ)
        if index is None:
            raise ConfigError(
                f"{args.config}: no rank: set `rank` in the config, or RANK / JOB_COMPLETION_INDEX in the environment"
            )
        ranks = cfg.pod_ranks(index)
    options = backends.for_uri(cfg.run_uri).options(cfg.store)
    registry = prometheus_client.CollectorRegistry()
    not_before = (
        pod_started_at(os.path.join(os.path.dirname(cfg.stop_file), POD_STARTED_FILE), time.time())
        if cfg.debugjob is not None and cfg.stop_file
        else None
    )
    evaluator = Evaluator(
        cfg.run_uri,
        rules=cfg.rules or None,
        ranks=ranks,
        store=backends.open_store(cfg.run_uri, **options),
        checkpoint=cfg.checkpoint,
        stop_file=cfg.stop_file,
        not_before=not_before,
    )
    collector = metrics.EvaluatorCollector(evaluator)
    registry.register(collector)
    evaluator.open()  # the run and the checkpoint, before anything reports the restored statuses
    stop = threading.Event()
    running = threading.Event()

    def health() -> tuple[bool, dict[str, Any]]:
        details = {
            "following": running.is_set(),
            "rank": ranks[0] if ranks else None,
            "ranks": ranks,
            "last_step": evaluator.last_step,
            "ended": evaluator.ended,
            "stop_requested": evaluator.stop_requested,
            "last_error": evaluator.last_error,
        }
        return running.is_set() or evaluator.ended, details

    condensed = cfg.world_size is not None and cfg.world_size > FULL_REPORT_RANKS
    reporter = (
        StatusReporter(cfg.debugjob, ranks=ranks, evaluator=evaluator, pod_index=index if condensed else None)
        if cfg.debugjob is not None and ranks is not None
        else None
    )

    def on_verdict(verdict: Verdict) -> None:
        print(json.dumps({"verdict": verdict.to_dict()}), flush=True)
        log.info(
            "verdict: %s %s at step %s on rank %s: %s",
            verdict.rule,
            verdict.state.value,
            verdict.step,
            verdict.rank,
            verdict.message,
        )
        if reporter is not None:
            reporter.on_verdict(verdict)

    def on_signal(signum: int, frame: object) -> None:
        log.info("got %s; stopping", signal.Signals(signum).name)
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    server = MetricsServer(
        registry, health=health, address=cfg.metrics_address, port=cfg.metrics_port,
        documents={api_findings.PATH: lambda: findings.document_bytes(evaluator)},
    )  # fmt: skip
    log.info(
        "following %s (%s) with %d rules; metrics at %s/metrics",
        cfg.run_uri, "all ranks" if ranks is None else f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}",
        len(evaluator.rule_names), server.url,
    )  # fmt: skip
    if reporter is not None:
        reporter.start()
    try:
        running.set()
        evaluator.run(
            stop,
            on_verdict,
            poll_interval_seconds=cfg.poll_interval_seconds,
            idle_timeout_seconds=cfg.idle_timeout_seconds,
        )
        running.clear()
        if evaluator.ended:
            log.info("the run ended at step %s; evaluation complete", evaluator.last_step)
        if cfg.debugjob is not None or cfg.ranks_from_env:
            # A native sidecar that exits is restarted (a failure to the Job of an OnFailure pod); keep serving
            # /metrics, the final verdicts included, until the pod stops us.
            stop.wait()
    finally:
        running.clear()
        if reporter is not None:
            reporter.close()
        server.close()
        registry.unregister(collector)
        for s, handler in previous.items():
            signal.signal(s, handler)
        sys.stdout.flush()
    return 0
