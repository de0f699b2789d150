"""CMD's process group: start it, signal it, end it (SIGTERM once, SIGKILL after the grace period).

`ProcessGroup` is driven by `supervise.Supervisor`, which decides when to stop; this module only
knows how. CMD runs in a process group of its own, so a stop reaches every process it started, and
the signals that reach `trainguard run` (Ctrl-C, SIGTERM, SIGHUP) are passed on to the group.
Invariant: SIGTERM is sent once, and SIGKILL only `grace_period_seconds` after it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import Any

from trainguard.errors import TrainGuardError

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


def signal_name(returncode: int) -> str | None:
    """Return the name of the signal that ended a process (Popen's -N), or None when it exited."""
    if returncode < 0 and -returncode in signal.valid_signals():
        return signal.Signals(-returncode).name
    return None


class ProcessGroup:
    """One command in a process group of its own; `start()` it once, then `wait()` for it."""

    def __init__(self, *, grace_period_seconds: float, tick_seconds: float) -> None:
        self.grace_period_seconds = grace_period_seconds
        """How long the group may take to exit after SIGTERM before SIGKILL."""
        self.tick_seconds = tick_seconds
        """Pause between checks while waiting (progress updates, grace deadlines)."""
        self.pgid: int | None = None
        self.term_sent_at: float | None = None
        """`time.monotonic()` when SIGTERM went to the group; None until then."""
        self.killed = False
        """Whether the group got SIGKILL (it outlived the grace period)."""
        self.interrupted_by: str | None = None
        """Name of the last signal `trainguard run` received and passed on, if any."""

    def start(
        self, command: Sequence[str], *, env: Mapping[str, str], cwd: str | None
    ) -> subprocess.Popen[bytes]:
        """Start `command` in a new process group; raise `SuperviseError` when it cannot start."""
        try:
            proc = subprocess.Popen(list(command), env=dict(env), cwd=cwd, **_OWN_GROUP)
        except OSError as err:
            raise SuperviseError(
                f"cannot start {command[0]!r}: {err.strerror or err}; check the command"
            ) from err
        self.pgid = proc.pid
        return proc

    def signal(self, signum: int) -> bool:
        """Send a signal to the group (0: only check it); return False when the group is gone."""
        if self.pgid is None:
            return False
        try:
            os.killpg(self.pgid, signum)
            return True
        except ProcessLookupError:
            return False

    def alive(self) -> bool:
        """Whether any process of the group is still running."""
        return self.signal(0)

    def terminate(self) -> None:
        """SIGTERM the group (once) and start the grace period before SIGKILL."""
        if self.term_sent_at is None and self.signal(signal.SIGTERM):
            self.term_sent_at = time.monotonic()

    def kill_due(self) -> bool:
        """Whether the grace period after SIGTERM has run out and the group has not had SIGKILL yet."""
        sent = self.term_sent_at
        return sent is not None and not self.killed and time.monotonic() - sent >= self.grace_period_seconds

    def kill(self) -> None:
        """SIGKILL the group."""
        self.killed = self.signal(signal.SIGKILL)

    def wait(self, proc: subprocess.Popen[bytes], *, on_tick: Callable[[], None]) -> None:
        """Wait for CMD to exit, calling `on_tick` every `tick_seconds` while it runs."""
        while True:
            try:
                proc.wait(timeout=self.tick_seconds)
                return
            except subprocess.TimeoutExpired:
                on_tick()

    def reap(self) -> None:
        """After CMD exited: wait out the grace period for what it left running after SIGTERM, then SIGKILL it."""
        if self.term_sent_at is None or self.killed:
            return
        deadline = self.term_sent_at + self.grace_period_seconds
        while self.alive() and time.monotonic() < deadline:
            time.sleep(self.tick_seconds)
        if self.alive():
            self.kill()

    @contextlib.contextmanager
    def forward_signals(self) -> Iterator[None]:
        """Pass the signals of `FORWARDED_SIGNALS` on to the group while inside (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        count: dict[int, int] = {}

        def forward(signum: int, frame: FrameType | None) -> None:
            count[signum] = count.get(signum, 0) + 1
            self.interrupted_by = signal.Signals(signum).name
            # A second Ctrl-C means "now": CMD gets SIGKILL.
            self.signal(signal.SIGKILL if count[signum] > 1 and signum == signal.SIGINT else signum)

        previous = {s: signal.signal(s, forward) for s in FORWARDED_SIGNALS}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
