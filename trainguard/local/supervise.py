"""Local mode: runs a training command under live supervision (`trainguard run`).

`Supervisor.run()` starts CMD in its own process group with `TRAINGUARD_OUT`, `TRAINGUARD_RUN_ID`,
`TRAINGUARD_STOP_FILE` (and `TRAINGUARD_SAVE_INTERVAL` when given) set, named by `capture.config`, follows what it writes with an `Evaluator` (all ranks) on a
thread and shows progress on stderr. A `stop` verdict writes the stop file first (cooperative):
when CMD polls it (`hook.should_stop()`), CMD gets `cooperative_seconds` to save its work and end by
itself; then, or at once when nothing polls the file, SIGTERM goes to the whole group, and SIGKILL
after `grace_period_seconds`. When CMD has exited, every rank gets an END.json that says how.
This module decides when to stop and puts the parts together; each job is a module of its own:
`process` (the process group and signals), `evaluation` (the evaluator thread), `ends` (the ranks'
END.json), `outcome` (what happened, the exit status), `progress` and `verdict_table` (what is printed).
It re-exports their public names, which `trainguard.commands` and the tests import from here.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

import prometheus_client

from trainguard.api.enums import Action, Mode, RuleState, Severity
from trainguard.api.rules_config import RuleSpec
from trainguard.capture import config as capture_config
from trainguard.local import ends
from trainguard.local.evaluation import EvaluationThread
from trainguard.local.outcome import (
    EXIT_NOTHING_CHECKED,
    EXIT_STOPPED,
    Outcome,
    exit_status,
    finding_dict,
    plain,
    rule_status_dict,
)
from trainguard.local.process import FORWARDED_SIGNALS, ProcessGroup, SuperviseError
from trainguard.local.progress import Progress, wrap
from trainguard.local.verdict_table import describe_verdict, rules_summary, verdict_table
from trainguard.sidecar import metrics
from trainguard.sidecar.evaluator import Evaluator
from trainguard.sidecar.verdicts import Verdict
from trainguard.stop_flag import watched
from trainguard.store import errors as store_errors
from trainguard.store import listing, run_format

__all__ = [
    "DEFAULT_RUNS_DIR",
    "EXIT_NOTHING_CHECKED",
    "EXIT_STOPPED",
    "FORWARDED_SIGNALS",
    "Outcome",
    "Progress",
    "SuperviseError",
    "Supervisor",
    "default_run_uri",
    "describe_verdict",
    "exit_status",
    "finding_dict",
    "local_path",
    "new_run_id",
    "rule_status_dict",
    "rules_summary",
    "verdict_table",
    "wrap",
]

DEFAULT_RUNS_DIR = listing.LOCAL_RUNS_DIR
"""Where `trainguard run` writes runs by default, under the working directory (`trainguard ls` looks there)."""


def new_run_id(*, clock: Callable[[], float] = time.time) -> str:
    """Return a run id that sorts by start time and is unique enough: `20261122-051000-3fa2c1`."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime(clock())) + "-" + secrets.token_hex(3)


def default_run_uri(run_id: str, *, base_dir: str | os.PathLike[str] | None = None) -> str:
    """Return `file://<base_dir or cwd>/trainguard-runs/<run_id>` as an absolute URI."""
    root = Path(base_dir or os.getcwd()).resolve() / DEFAULT_RUNS_DIR / run_id
    return "file://" + str(root)


def local_path(uri: str) -> Path | None:
    """Return the directory of a `file://` URI (or plain path), None for remote stores."""
    if uri.startswith("file://"):
        return Path(uri[len("file://") :])
    return None if "://" in uri else Path(uri).resolve()


@dataclass
class Supervisor:
    """Runs one command under supervision; create it, then call `run()` once (from the main thread
    if signals are to be passed on)."""

    command: Sequence[str]
    _: KW_ONLY
    run_uri: str | None = None
    run_id: str | None = None
    rules: list[RuleSpec] | None = None
    grace_period_seconds: float = 10.0
    """How long CMD may take to exit after SIGTERM before SIGKILL."""
    cooperative_seconds: float = 30.0
    """After a stop verdict, how long CMD may take to end by itself (the stop file is written at once) before
    SIGTERM, when it polls the stop file (`hook.should_stop()`); 0: SIGTERM with the stop file."""
    strict: bool = False
    """A rule whose `tensors` match no tensor is an Error, not a warning (`Evaluator(strict=...)`)."""
    poll_interval_seconds: float = 0.25
    """Pause between listings of the run when nothing is new; bounds detection latency."""
    registry: prometheus_client.CollectorRegistry | None = None
    """Where `run()` registers a metrics collector over its evaluator while CMD runs (served by the caller)."""
    env: Mapping[str, str] | None = None
    progress: Progress | None = None
    cwd: str | None = None
    tick_seconds: float = 0.1
    save_interval: int | None = None
    """Steps between saved steps that CMD's hook is told (`TRAINGUARD_SAVE_INTERVAL`); None: the hook's own."""
    _stop_verdict: Verdict | None = field(default=None, init=False)
    _stop_at: float | None = field(default=None, init=False)
    _started_at: float = field(default=0.0, init=False)
    """Unix time just before CMD started: what the store holds from before is an earlier run's."""
    _exited: threading.Event = field(default_factory=threading.Event, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _group: ProcessGroup | None = field(default=None, init=False)
    evaluator: Evaluator | None = field(default=None, init=False)
    stop_file: str | None = field(default=None, init=False)
    _exit_at: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        if not self.command:
            raise SuperviseError(
                "no command to run: give it after `--`, e.g. trainguard run -- python train.py"
            )
        if self.cooperative_seconds < 0:
            raise SuperviseError(
                f"cooperative_seconds (--grace) must not be negative, got {self.cooperative_seconds}"
            )
        if self.grace_period_seconds < 0:
            raise SuperviseError(
                f"grace_period_seconds must not be negative, got {self.grace_period_seconds}"
            )
        if self.save_interval is not None and self.save_interval < 1:
            raise SuperviseError(
                f"save_interval (--save-interval) must be at least 1, got {self.save_interval}"
            )
        self.run_id = self.run_id or new_run_id()
        self.run_uri = self.run_uri or default_run_uri(self.run_id)
        self.progress = self.progress or Progress(sys.stderr)
        self._group = ProcessGroup(
            grace_period_seconds=self.grace_period_seconds, tick_seconds=self.tick_seconds
        )

    # --- the command's environment ---------------------------------------------------------------
    def child_env(self, stop_file: str) -> dict[str, str]:
        """Return CMD's environment: ours (or `env`) plus the TRAINGUARD_* settings of this run, with
        this interpreter's bin directory first on PATH."""
        env = dict(os.environ if self.env is None else self.env)
        env.update(
            capture_config.to_env(
                out=self.run_uri, run_id=self.run_id, stop_file=stop_file, save_interval=self.save_interval
            )
        )
        # `python` in CMD should find trainguard: put this interpreter's bin directory (the venv) first.
        bin_dir = str(Path(sys.executable).parent)
        if bin_dir not in env.get("PATH", "").split(os.pathsep):
            env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
        return env

    # --- reacting to verdicts (on the evaluator thread) -------------------------------------------
    def _on_verdict(self, v: Verdict) -> None:
        """Show a verdict; on the first STOP while CMD runs, give CMD time to end by itself if it polls the stop
        file (which the evaluator wrote), else SIGTERM its group at once."""
        assert self.progress is not None and self._group is not None
        if v.state in (RuleState.ISSUES_FOUND, RuleState.ERROR):
            self.progress.line(describe_verdict(v))
        if v.action != Action.STOP:
            return
        with self._lock:
            if self._stop_verdict is not None or self._exited.is_set():
                return
            if not self._group.alive():
                return  # CMD's group is gone: it ended on its own, and its exit status stands
            self._stop_verdict = v
            self._stop_at = time.monotonic()
            cooperative = (
                self.cooperative_seconds > 0 and self.stop_file is not None and watched(self.stop_file)
            )
            if not cooperative:
                self._group.terminate()
        if cooperative:
            self.progress.line(
                f"stopping the run: rule {v.rule} asked for a stop; the stop file is written and the command polls "
                f"it (hook.should_stop()): it has {self.cooperative_seconds:g}s to save its work and exit, then "
                f"SIGTERM, then SIGKILL {self.grace_period_seconds:g}s later"
            )
        else:
            self.progress.line(
                f"stopping the run: rule {v.rule} asked for a stop; sent SIGTERM to process group {self._group.pgid}"
                f" (SIGKILL in {self.grace_period_seconds:g}s if it is still running)"
            )

    def _on_evaluation_error(self, error: str) -> None:
        assert self.progress is not None
        self.progress.line(f"evaluation failed ({error}); the command keeps running unsupervised")

    # --- the whole run --------------------------------------------------------------------------
    def run(self) -> Outcome:
        """Start CMD, supervise it until it exits, and return what happened."""
        assert self.progress is not None and self.run_uri is not None and self.run_id is not None
        path = local_path(self.run_uri)
        if path is not None:
            path.mkdir(parents=True, exist_ok=True)
        stop_dir = tempfile.mkdtemp(prefix="trainguard-stop-")
        self._started_at = time.time()
        self.stop_file = os.path.join(stop_dir, "stop")
        collector: metrics.EvaluatorCollector | None = None
        try:
            self.evaluator = Evaluator(
                self.run_uri,
                rules=self.rules,
                rank=None,
                checkpoint=False,
                stop_file=self.stop_file,
                strict=self.strict,
                # CMD starts after this: what an earlier run wrote on the same --out is not this run's
                not_before=self._started_at,
            )
            if self.registry is not None:
                collector = metrics.EvaluatorCollector(self.evaluator)
                self.registry.register(collector)
            self.evaluator.open()  # a run root that cannot be read is reported before CMD starts
            return self._supervise(self.evaluator)
        finally:
            self.progress.done()
            if collector is not None and self.registry is not None:
                self.registry.unregister(collector)
            shutil.rmtree(stop_dir, ignore_errors=True)

    def _supervise(self, ev: Evaluator) -> Outcome:
        assert self.progress is not None and self.run_uri is not None and self.run_id is not None
        assert self.stop_file is not None and self._group is not None
        group = self._group
        started = time.monotonic()
        evaluation = EvaluationThread(
            ev,
            on_verdict=self._on_verdict,
            on_error=self._on_evaluation_error,
            poll_interval_seconds=self.poll_interval_seconds,
        )
        try:
            with group.forward_signals():
                proc = group.start(self.command, env=self.child_env(self.stop_file), cwd=self.cwd)
                self.progress.start()
                self.progress.line(
                    f"run {self.run_id}: {' '.join(self.command)} (pid {proc.pid}), writing to {self.run_uri}"
                )
                evaluation.start()
                group.wait(proc, on_tick=lambda: self._tick(started))
                self._exit_at = time.monotonic()
                self._after_exit()
        finally:
            self._exited.set()
            evaluation.stop()
        stopped = self._stop_verdict is not None
        rank_ends: dict[int, run_format.EndInfo] = {}
        try:
            rank_ends = ends.close_ranks(
                ev,
                proc.returncode,
                started_at=self._started_at,
                stopped_by=self._stop_verdict.rule if self._stop_verdict is not None else None,
            )
        except store_errors.StoreError as err:
            self.progress.line(f"cannot write the ranks' END.json: {err}")
        # One last read after CMD exited: everything it wrote is in the store by now, and every rank has its
        # END. Then the evaluation is complete.
        evaluation.finish()
        ev.take_ends(rank_ends)  # the metric `trainguard_run_ended` tells the end as the Outcome does
        eval_errors = evaluation.errors
        nothing = ev.nothing_evaluated
        code = EXIT_STOPPED if stopped else exit_status(proc.returncode)
        if code == 0 and nothing is not None and not eval_errors:
            code = EXIT_NOTHING_CHECKED
        return Outcome(
            command=tuple(self.command),
            run_id=self.run_id,
            run_uri=self.run_uri,
            exit_code=code,
            returncode=proc.returncode,
            stopped=stopped,
            stop_verdict=self._stop_verdict,
            killed=group.killed,
            findings=list(ev.findings),
            rule_status=dict(ev.rule_status),
            last_step=ev.last_step,
            duration_seconds=self._exit_at - started,
            stop_latency_seconds=None if self._stop_at is None else round(self._exit_at - self._stop_at, 3),
            evaluation_error=eval_errors[0] if eval_errors else None,
            interrupted_by=group.interrupted_by,
            nothing_evaluated=nothing,
            recorded=bool(rank_ends) or ev.views_total > 0,
            sigterm_sent=group.term_sent_at is not None,
            ends=rank_ends,
            lost_steps=ev.lost_steps_total,
            unchecked_steps=ev.unchecked_steps_total,
            warnings=list(ev.warnings),
        )

    def _tick(self, started: float) -> None:
        """While CMD runs: update the progress line and enforce the cooperative and grace periods."""
        assert self.progress is not None and self.evaluator is not None and self._group is not None
        group = self._group
        ev = self.evaluator
        findings = list(ev.findings)
        self.progress.update(
            step=ev.last_step,
            findings=len(findings),
            critical=sum(1 for f in findings if plain(f.severity) == Severity.CRITICAL.value),
            elapsed_seconds=time.monotonic() - started,
            loss=ev.last_loss().get(Mode.TRAIN),
        )
        with self._lock:
            due = self._stop_at is not None and time.monotonic() - self._stop_at >= self.cooperative_seconds
            if due and group.term_sent_at is None:
                self.progress.line(
                    f"the command is still running {self.cooperative_seconds:g}s after the stop file: SIGTERM"
                )
                group.terminate()
        if group.kill_due():
            self.progress.line(
                f"the command is still running {self.grace_period_seconds:g}s after SIGTERM: SIGKILL"
            )
            group.kill()

    def _after_exit(self) -> None:
        """Processes CMD started in its group that outlive it after a stop get the same treatment."""
        assert self._group is not None
        with self._lock:
            if self._stop_at is not None and self._group.alive():
                self._group.terminate()  # CMD ended by itself (cooperative); what it left running gets SIGTERM now
        self._group.reap()
