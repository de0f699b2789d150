"""Local mode: runs a training command under live supervision (`trainguard run`).

`Supervisor.run()` starts CMD in its own process group with `TRAINGUARD_OUT`, `TRAINGUARD_RUN_ID`
and `TRAINGUARD_STOP_FILE` set, follows what it writes with an `Evaluator` (all ranks) on a
thread and shows progress on stderr. A `stop` verdict writes the stop file first (cooperative):
when CMD polls it (`hook.should_stop()`), CMD gets `cooperative_seconds` to save its work and end by
itself; then, or at once when nothing polls the file, SIGTERM goes to the whole group, and SIGKILL
after `grace_period_seconds`. When CMD has exited, every rank gets an END.json that says how: the
supervisor writes one for a rank that has none (killed, stopped) and adds CMD's exit status to the
others. The verdict table and the HTML report are left to the command. Invariant: CMD's exit status
is passed through unless a rule stopped it (`EXIT_STOPPED`, 3) or it ended well but TrainGuard
checked nothing (`EXIT_NOTHING_CHECKED`, 4).
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import prometheus_client

from trainguard.api.enums import Action, RuleState, Severity
from trainguard.api.rules_config import RuleSpec
from trainguard.errors import TrainGuardError
from trainguard.rules.base import Finding
from trainguard.sidecar import metrics
from trainguard.sidecar.evaluator import Evaluator
from trainguard.sidecar.verdicts import RuleStatus, Verdict
from trainguard.stop_flag import watched
from trainguard.store import errors as store_errors
from trainguard.store import run_format
from trainguard.store.runs import list_ranks, read_run_info
from trainguard.store.source import load_json_doc

EXIT_STOPPED = 3
"""Exit status of `trainguard run` when a rule stopped the command (CMD's own status otherwise)."""
EXIT_NOTHING_CHECKED = 4
"""Exit status of `trainguard run` when the command exited 0 but nothing was evaluated: it wrote no
TrainGuard data (no hook or Recorder was created), or no saved step (no optimizer registered)."""

DEFAULT_RUNS_DIR = "trainguard-runs"
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Signals that reach `trainguard run` and are passed on to CMD's process group: CMD runs in its
own group (so a stop reaches every process it started), hence the terminal's Ctrl-C reaches only us."""


_OWN_GROUP: dict[str, Any] = (
    {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}
)
"""Popen arguments that put CMD in a process group of its own. Python 3.10 lacks `process_group`;
a new session also makes a new group (CMD then has no controlling terminal, which training
scripts do not need)."""


class SuperviseError(TrainGuardError):
    """The command could not be started or supervised."""


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


def exit_status(returncode: int) -> int:
    """Return a shell-style exit status: the code itself, or 128+N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def finding_dict(finding: Finding) -> dict[str, Any]:
    """Return a finding as JSON-able values: the contract's keys first, NaN/Inf numbers as None."""
    d = finding.to_dict()
    out: dict[str, Any] = {k: d.get(k) for k in ("rule", "severity", "step", "rank", "tensor", "message")}
    for k, v in d.items():
        if k not in out:
            out[k] = None if isinstance(v, float) and not math.isfinite(v) else v
    return out


@dataclass(frozen=True)
class Outcome:
    """What happened to a supervised command."""

    command: tuple[str, ...]
    run_id: str
    run_uri: str
    exit_code: int
    """`EXIT_STOPPED` when a rule stopped CMD, else CMD's own status (128+N when killed by signal N)."""
    returncode: int
    """Popen's view: CMD's code, or -N when a signal N ended it."""
    stopped: bool
    stop_verdict: Verdict | None
    killed: bool
    """True when CMD ignored SIGTERM for the grace period and got SIGKILL."""
    findings: list[Finding]
    rule_status: Mapping[str, RuleStatus]
    last_step: int | None
    duration_seconds: float
    stop_latency_seconds: float | None = None
    """From the stop verdict to CMD's exit."""
    evaluation_error: str | None = None
    interrupted_by: str | None = None
    """Name of the signal (SIGINT, ...) that `trainguard run` received and passed on, if any."""
    nothing_evaluated: str | None = None
    """Why no step was evaluated (`Evaluator.nothing_evaluated`), or None when some were."""
    recorded: bool = True
    """Whether CMD wrote any TrainGuard data at all."""
    sigterm_sent: bool = False
    """Whether CMD got SIGTERM; a cooperative stop (CMD ended by itself after the stop file) sends none."""
    ends: Mapping[int, run_format.EndInfo] = field(default_factory=dict)
    """Each rank's END.json after the supervisor completed them."""
    lost_steps: int = 0
    """Steps the ranks' hooks report lost (never stored)."""
    unchecked_steps: int = 0
    """Steps the ranks' hooks saw go by without counting them (blind: an optimizer they did not know)."""
    warnings: list[str] = field(default_factory=list)
    """Configuration warnings of the evaluation (a rule whose `tensors` match nothing)."""

    @property
    def stopped_by(self) -> str | None:
        return self.stop_verdict.rule if self.stop_verdict else None

    @property
    def severe_findings(self) -> list[Finding]:
        """The findings at warning or critical, in the order they were made."""
        return [
            f
            for f in self.findings
            if _value(f.severity) in (Severity.WARNING.value, Severity.CRITICAL.value)
        ]

    @property
    def earlier_sign(self) -> Finding | None:
        """The first warning or critical finding of another rule at a step before the stop's, if any: often
        the cause of which the stop is a consequence (an overshooting learning rate before the NaN)."""
        v = self.stop_verdict
        if v is None:
            return None
        earlier = (f for f in self.severe_findings if f.rule != v.rule and f.step < v.step)
        return min(earlier, key=lambda f: f.step, default=None)

    def to_json(self) -> dict[str, Any]:
        """Return the `--json` document: stopped, stopped_by, exit_code, findings, and context."""
        v = self.stop_verdict
        return {
            "stopped": self.stopped,
            "stopped_by": self.stopped_by,
            "exit_code": self.exit_code,
            "findings": [finding_dict(f) for f in self.findings],
            "command": list(self.command),
            "run_id": self.run_id,
            "run_uri": self.run_uri,
            "returncode": self.returncode,
            "killed": self.killed,
            "interrupted_by": self.interrupted_by,
            "last_step": self.last_step,
            "duration_seconds": round(self.duration_seconds, 3),
            "stop": None
            if v is None
            else {
                "rule": v.rule,
                "step": v.step,
                "rank": v.rank,
                "severity": _value(v.severity),
                "message": v.message,
                "time": v.time,
                "latency_to_exit_seconds": self.stop_latency_seconds,
                "earlier_sign": None if (e := self.earlier_sign) is None else finding_dict(e),
            },
            "rules": {name: rule_status_dict(st) for name, st in self.rule_status.items()},
            "evaluation_error": self.evaluation_error,
            "recorded": self.recorded,
            "nothing_evaluated": self.nothing_evaluated,
            "sigterm_sent": self.sigterm_sent,
            "lost_steps": self.lost_steps,
            "unchecked_steps": self.unchecked_steps,
            "ranks_ended": {str(r): end.outcome() for r, end in sorted(self.ends.items())},
            "warnings": list(self.warnings),
        }


def _value(x: object) -> object:
    return getattr(x, "value", x)


def rule_status_dict(status: RuleStatus) -> dict[str, Any]:
    """Return one `Evaluator.rule_status` entry as plain JSON values."""
    return {
        k: _value(getattr(status, k, None))
        for k in ("state", "action", "severity", "step", "message", "time")
    }


class Progress:
    """The live progress line and the rule lines on stderr.

    On a terminal the progress line sits on the bottom row, outside a scroll region that holds
    everything else (the way apt draws its progress bar), so CMD's own output scrolls above it and
    never mixes with it; it is redrawn only when its text changes. Elsewhere (CI logs, pipes) a
    plain line is written at most every `interval_seconds`, and only when the step moved. Rule
    lines are written at once. Thread-safe: the evaluator thread prints rule lines.
    """

    def __init__(
        self, stream: TextIO, *, tty: bool | None = None, interval_seconds: float = 10.0, quiet: bool = False
    ):
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.interval_seconds = interval_seconds
        self.quiet = quiet
        self._lock = threading.Lock()
        self._rows = 0
        self._drawn = ""
        self._last_line_at = 0.0
        self._last_step: int | None = None

    def start(self) -> None:
        """Reserve the terminal's bottom row for the progress line (terminals only)."""
        if self.quiet or not self.tty:
            return
        rows = shutil.get_terminal_size((80, 0)).lines
        if rows < 4:
            return
        with self._lock:
            self._rows = rows
            # newline first, so the cursor's line is not the one taken away; then save cursor, set
            # the scroll region to rows 1..N-1, restore the cursor inside it.
            self.stream.write(f"\n\x1b7\x1b[1;{rows - 1}r\x1b8\x1b[1A")
            self.stream.flush()

    def line(self, text: str) -> None:
        """Write a message on its own line."""
        if self.quiet:
            return
        with self._lock:
            self.stream.write(f"[trainguard] {text}\n")
            self.stream.flush()

    def update(self, *, step: int | None, findings: int, critical: int, elapsed_seconds: float) -> None:
        if self.quiet:
            return
        where = "waiting for the first saved step" if step is None else f"step {step}"
        text = f"[trainguard] {where} | findings: {findings}"
        text += f" ({critical} critical)" if critical else ""
        text += f" | {elapsed_seconds:.0f}s"
        with self._lock:
            if self._rows:
                if text == self._drawn:
                    return
                width = shutil.get_terminal_size((100, 20)).columns - 1
                self.stream.write(f"\x1b7\x1b[{self._rows};1H\x1b[2K\x1b[7m{text[:width]}\x1b[0m\x1b8")
                self._drawn = text
            else:
                now = time.monotonic()
                if step == self._last_step or now - self._last_line_at < self.interval_seconds:
                    return
                self._last_line_at = now
                self._last_step = step
                self.stream.write(text + "\n")
            self.stream.flush()

    def done(self) -> None:
        """Give the bottom row back: reset the scroll region and clear the progress line."""
        with self._lock:
            if self._rows:
                self.stream.write(f"\x1b7\x1b[r\x1b[{self._rows};1H\x1b[2K\x1b8")
                self._rows = 0
            self.stream.flush()


def describe_verdict(v: Verdict) -> str:
    """One line: `step 30 rank 0: exploding_tensor (critical, stop): <message>`."""
    return f"step {v.step} rank {v.rank}: {v.rule} ({_value(v.severity)}, {_value(v.action)}): {v.message}"


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
    _stop_verdict: Verdict | None = field(default=None, init=False)
    _stop_at: float | None = field(default=None, init=False)
    _started_at: float = field(default=0.0, init=False)
    """Unix time just before CMD started: what the store holds from before is an earlier run's."""
    _term_sent_at: float | None = field(default=None, init=False)
    _exited: threading.Event = field(default_factory=threading.Event, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _pgid: int | None = field(default=None, init=False)
    _interrupted_by: str | None = field(default=None, init=False)
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
        self.run_id = self.run_id or new_run_id()
        self.run_uri = self.run_uri or default_run_uri(self.run_id)
        self.progress = self.progress or Progress(sys.stderr)

    # --- the command's environment and process group ----------------------------------------
    def child_env(self, stop_file: str) -> dict[str, str]:
        """Return CMD's environment: ours (or `env`) plus the TRAINGUARD_* settings of this run, with
        this interpreter's bin directory first on PATH."""
        env = dict(os.environ if self.env is None else self.env)
        env["TRAINGUARD_OUT"] = str(self.run_uri)
        env["TRAINGUARD_RUN_ID"] = str(self.run_id)
        env["TRAINGUARD_STOP_FILE"] = stop_file
        # `python` in CMD should find trainguard: put this interpreter's bin directory (the venv) first.
        bin_dir = str(Path(sys.executable).parent)
        if bin_dir not in env.get("PATH", "").split(os.pathsep):
            env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
        return env

    def _signal_group(self, signum: int) -> bool:
        """Send a signal to CMD's process group; return False when the group is gone."""
        if self._pgid is None:
            return False
        try:
            os.killpg(self._pgid, signum)
            return True
        except ProcessLookupError:
            return False

    def _on_verdict(self, v: Verdict) -> None:
        """Show a verdict; on the first STOP while CMD runs, give CMD time to end by itself if it polls the stop
        file (which the evaluator wrote), else SIGTERM its group at once."""
        assert self.progress is not None
        if v.state in (RuleState.ISSUES_FOUND, RuleState.ERROR):
            self.progress.line(describe_verdict(v))
        if v.action != Action.STOP:
            return
        with self._lock:
            if self._stop_verdict is not None or self._exited.is_set():
                return
            if not self._signal_group(0):
                return  # CMD's group is gone: it ended on its own, and its exit status stands
            self._stop_verdict = v
            self._stop_at = time.monotonic()
            cooperative = (
                self.cooperative_seconds > 0 and self.stop_file is not None and watched(self.stop_file)
            )
            if not cooperative:
                self._terminate()
        if cooperative:
            self.progress.line(
                f"stopping the run: rule {v.rule} asked for a stop; the stop file is written and the command polls "
                f"it (hook.should_stop()): it has {self.cooperative_seconds:g}s to save its work and exit, then "
                f"SIGTERM, then SIGKILL {self.grace_period_seconds:g}s later"
            )
        else:
            self.progress.line(
                f"stopping the run: rule {v.rule} asked for a stop; sent SIGTERM to process group {self._pgid}"
                f" (SIGKILL in {self.grace_period_seconds:g}s if it is still running)"
            )

    def _terminate(self) -> None:
        """SIGTERM CMD's group (once) and start the grace period before SIGKILL."""
        if self._term_sent_at is None and self._signal_group(signal.SIGTERM):
            self._term_sent_at = time.monotonic()

    @contextlib.contextmanager
    def _forward_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        count: dict[int, int] = {}

        def forward(signum: int, frame: FrameType | None) -> None:
            count[signum] = count.get(signum, 0) + 1
            self._interrupted_by = signal.Signals(signum).name
            # A second Ctrl-C means "now": CMD gets SIGKILL.
            self._signal_group(signal.SIGKILL if count[signum] > 1 and signum == signal.SIGINT else signum)

        previous = {s: signal.signal(s, forward) for s in FORWARDED_SIGNALS}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    # --- the evaluation thread ----------------------------------------------------------------
    def _evaluate(self, stop: threading.Event, errors: list[str]) -> None:
        try:
            assert self.evaluator is not None
            self.evaluator.run(
                stop,
                self._on_verdict,
                poll_interval_seconds=self.poll_interval_seconds,
                idle_timeout_seconds=365 * 24 * 3600.0,  # CMD's lifetime bounds following, not idleness
            )
        except Exception as err:  # noqa: BLE001 - an evaluator bug must never take the training down
            errors.append(f"{type(err).__name__}: {err}")
            assert self.progress is not None
            self.progress.line(
                f"evaluation failed ({type(err).__name__}: {err}); the command keeps running unsupervised"
            )

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
        assert self.stop_file is not None
        started = time.monotonic()
        eval_stop = threading.Event()
        eval_errors: list[str] = []
        thread = threading.Thread(
            target=self._evaluate, args=(eval_stop, eval_errors), name="trainguard-evaluator", daemon=True
        )
        try:
            with self._forward_signals():
                try:
                    proc = subprocess.Popen(
                        list(self.command), env=self.child_env(self.stop_file), cwd=self.cwd, **_OWN_GROUP
                    )
                except OSError as err:
                    raise SuperviseError(
                        f"cannot start {self.command[0]!r}: {err.strerror or err}; check the command"
                    ) from err
                self._pgid = proc.pid
                self.progress.start()
                self.progress.line(
                    f"run {self.run_id}: {' '.join(self.command)} (pid {proc.pid}), writing to {self.run_uri}"
                )
                thread.start()
                killed = self._wait(proc, started)
        finally:
            self._exited.set()
            eval_stop.set()
            if thread.is_alive():
                thread.join()
        stopped = self._stop_verdict is not None
        ends: dict[int, run_format.EndInfo] = {}
        try:
            ends = self._close_ranks(ev, proc.returncode, stopped=stopped)
        except store_errors.StoreError as err:
            self.progress.line(f"cannot write the ranks' END.json: {err}")
        # One last read after CMD exited: everything it wrote is in the store by now, and every rank has its
        # END. Then the evaluation is complete.
        if not eval_errors:
            try:
                ev.poll(on_verdict=self._on_verdict)
                ev.finish()
            except Exception as err:  # noqa: BLE001 - report what we have rather than nothing
                eval_errors.append(f"{type(err).__name__}: {err}")
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
            killed=killed,
            findings=list(ev.findings),
            rule_status=dict(ev.rule_status),
            last_step=ev.last_step,
            duration_seconds=self._exit_at - started,
            stop_latency_seconds=None if self._stop_at is None else round(self._exit_at - self._stop_at, 3),
            evaluation_error=eval_errors[0] if eval_errors else None,
            interrupted_by=self._interrupted_by,
            nothing_evaluated=nothing,
            recorded=bool(ends) or ev.views_total > 0,
            sigterm_sent=self._term_sent_at is not None,
            ends=ends,
            lost_steps=ev.lost_steps_total,
            unchecked_steps=ev.unchecked_steps_total,
            warnings=list(ev.warnings),
        )

    def _close_ranks(self, ev: Evaluator, returncode: int, *, stopped: bool) -> dict[int, run_format.EndInfo]:
        """Give every rank of CMD's run an END.json that says how it ended, and return them by rank.

        A rank without one (killed by the stop or a signal, or crashed before its hook closed) gets one written
        by the supervisor: `stopped`, `crashed` or `ok` by how CMD ended. A rank whose hook wrote one gets
        CMD's exit status added (and `error` instead of `ok` when CMD failed). So `evaluate --follow` and
        readers see every rank end, and `inspect` and the report say how."""
        store = ev.store
        ours = run_format.attempt_id(self._started_at)
        # this run's ranks: those it wrote segments for, and every rank of its run.json (a rank that died
        # before its first segment); not the ranks an earlier run left on the same --out
        attempts = {r: ev.attempt_of(r) for r in list_ranks(store)}
        ranks = {r for r, a in attempts.items() if a is not None and a >= ours}
        try:
            info = read_run_info(store)
        except store_errors.StoreError:  # unreadable: the ranks with segments are all there is to go on
            info = None
        if info is not None and info.start_time >= self._started_at:
            ranks |= set(range(info.world_size))
        code = exit_status(returncode)
        sig = (
            signal.Signals(-returncode).name
            if returncode < 0 and -returncode in signal.valid_signals()
            else None
        )
        out: dict[int, run_format.EndInfo] = {}
        for rank in sorted(ranks):
            key = run_format.end_key(rank)
            try:
                end = load_json_doc(store, key, run_format.EndInfo)
            except store_errors.NotFound:
                end = None
            except store_errors.FormatError:
                end = None  # a damaged END is replaced: the supervisor knows how the rank ended
            if isinstance(end, run_format.EndInfo) and end.attempt is not None and end.attempt < ours:
                end = None  # an earlier run's: this run's rank ended without one
            if end is None:
                status = "stopped" if stopped else ("ok" if code == 0 else "crashed")
                reason = (
                    f"the command was stopped by rule {self._stop_verdict.rule}"
                    if stopped and self._stop_verdict is not None
                    else f"the command ended (exit status {code}) before the rank's hook closed"
                )
                new = run_format.EndInfo(
                    status=status, last_step=ev.rank_progress(rank)[0], wall_time=time.time(),
                    written_by="supervisor", errors=[reason], exit_code=code, signal=sig,
                    # this run's attempt: a later run on the same --out sees it as stale, not as its own end
                    attempt=ev.attempt_of(rank) or ours,
                )  # fmt: skip
            else:
                assert isinstance(end, run_format.EndInfo)
                if end.exit_code is not None:
                    out[rank] = end
                    continue
                failed = code != 0 and not stopped
                new = end.model_copy(
                    update={"exit_code": code, "signal": sig, "status": "error" if failed and end.status == "ok" else end.status}
                )  # fmt: skip
            store.put(key, new.model_dump_json().encode())
            out[rank] = new
        return out

    def _wait(self, proc: subprocess.Popen[bytes], started: float) -> bool:
        """Wait for CMD, updating progress and enforcing the grace period; return True if SIGKILL was sent."""
        assert self.progress is not None and self.evaluator is not None
        killed = False
        while True:
            try:
                proc.wait(timeout=self.tick_seconds)
                break
            except subprocess.TimeoutExpired:
                pass
            ev = self.evaluator
            findings = list(ev.findings)
            self.progress.update(
                step=ev.last_step,
                findings=len(findings),
                critical=sum(1 for f in findings if _value(f.severity) == Severity.CRITICAL.value),
                elapsed_seconds=time.monotonic() - started,
            )
            with self._lock:
                due = (
                    self._stop_at is not None and time.monotonic() - self._stop_at >= self.cooperative_seconds
                )
                if due and self._term_sent_at is None:
                    self.progress.line(
                        f"the command is still running {self.cooperative_seconds:g}s after the stop file: SIGTERM"
                    )
                    self._terminate()
            sent = self._term_sent_at
            if sent is not None and not killed and time.monotonic() - sent >= self.grace_period_seconds:
                self.progress.line(
                    f"the command is still running {self.grace_period_seconds:g}s after SIGTERM: SIGKILL"
                )
                killed = self._signal_group(signal.SIGKILL)
        self._exit_at = time.monotonic()
        # Processes CMD started in its group that outlive it after a stop get the same treatment.
        with self._lock:
            if self._stop_at is not None and self._signal_group(0):
                self._terminate()  # CMD ended by itself (cooperative); what it left running gets SIGTERM now
        if self._term_sent_at is not None and not killed:
            deadline = self._term_sent_at + self.grace_period_seconds
            while self._signal_group(0) and time.monotonic() < deadline:
                time.sleep(self.tick_seconds)
            if self._signal_group(0):
                killed = self._signal_group(signal.SIGKILL)
        return killed


def _importance(status: Mapping[str, Any]) -> int:
    """Sort key of a verdict row: what needs attention first (critical, warning, error, still open, quiet)."""
    state, severity = status["state"], status["severity"]
    if state == RuleState.ISSUES_FOUND.value:
        return 0 if severity == Severity.CRITICAL.value else 1
    return {RuleState.ERROR.value: 2, RuleState.IN_PROGRESS.value: 3}.get(str(state), 4)


def verdict_table(rule_status: Mapping[str, RuleStatus], *, width: int = 120, quiet: bool = False) -> str:
    """Return the end-of-run table: one row per rule with state, action, severity, step, message.

    Rows that need attention come first: issues (critical, then warning), errors, rules still in progress,
    then the quiet ones in their configured order. With `quiet` the quiet rules are one closing line.
    """
    header = ("RULE", "STATE", "ACTION", "SEVERITY", "STEP", "MESSAGE")
    ordered = sorted(
        ((name, rule_status_dict(st)) for name, st in rule_status.items()),
        key=lambda item: _importance(item[1]),
    )  # sorted() keeps the configured order within each group
    quiet_names = [name for name, d in ordered if _importance(d) == 4]
    rows = []
    for name, d in ordered:
        if quiet and _importance(d) == 4:
            continue
        triggered = d["state"] == RuleState.ISSUES_FOUND.value
        rows.append(
            (
                name,
                str(d["state"] or "-"),
                str(d["action"] or "-"),
                str(d["severity"] or "-") if triggered else "-",
                "-" if d["step"] is None else str(d["step"]),
                str(d["message"] or ""),
            )
        )
    lines = []
    if rows:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
        for r in [header, *rows]:
            left = "  ".join(
                c.ljust(w) if i != 4 else c.rjust(w) for i, (c, w) in enumerate(zip(r[:5], widths))
            )
            room = max(width - len(left) - 2, 20)
            msg = r[5] if len(r[5]) <= room else r[5][: room - 3] + "..."
            lines.append((left + "  " + msg).rstrip())
    if quiet and quiet_names:
        lines.append(
            f"{'all ' if not rows else ''}{len(quiet_names)} rules found no issues"
            + (f": {', '.join(quiet_names)}" if len(quiet_names) <= 5 else " (--quiet hides them)")
        )
    return "\n".join(lines)
