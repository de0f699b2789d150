"""The cooperative stop flag: the evaluator creates a file, the training process polls it.

The file lives on a volume both processes see (a shared emptyDir in a pod, a temp dir in
local mode). `StopFlag.is_set()` costs one `stat` at most every `check_interval_seconds`, so
calling `hook.should_stop()` on every step is free. `request_stop` is the evaluator's side.
A module of its own under `trainguard` (it imports nothing of ours), so that capture and the
evaluator share it without either importing the other.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

WATCHED_SUFFIX = ".watched"
"""`<stop file>.watched` exists once a training process has polled the stop file: it will see a stop and
can end by itself (save a checkpoint), so the supervisor gives it a grace period before SIGTERM."""


def watched(path: str) -> bool:
    """Whether a training process has polled the stop file at `path` (`StopFlag.is_set` was called)."""
    return os.path.exists(path + WATCHED_SUFFIX)


class StopFlag:
    """Reads the stop file; sticky once set."""

    def __init__(self, path: str | None, *, check_interval_seconds: float = 0.2) -> None:
        self.path = path
        self.check_interval_seconds = check_interval_seconds
        self._next_check = 0.0
        self._set = False
        self._announced = False

    def is_set(self) -> bool:
        if self._set or not self.path:
            return self._set
        if not self._announced:
            self._announced = True
            try:  # once: this process polls the stop file, so a stop can wait for it to end by itself
                Path(self.path + WATCHED_SUFFIX).touch()
            except OSError:
                pass  # a read-only or missing directory: the supervisor then does not wait for us
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + self.check_interval_seconds
            self._set = os.path.exists(self.path)
        return self._set

    @property
    def told(self) -> bool:
        """Whether `is_set()` has answered True: this process was asked to stop (END.json says `stopped`)."""
        return self._set

    def reason(self) -> str | None:
        """Return the rule and message the evaluator wrote into the file, if any."""
        if not self.is_set() or not self.path:
            return None
        try:
            return str(json.loads(Path(self.path).read_text()).get("message", ""))
        except (
            OSError,
            ValueError,
            RecursionError,
            AttributeError,
        ):  # a damaged file: the stop stands, unexplained
            return None


def request_stop(path: str, *, rule: str, message: str) -> None:
    """Create the stop file atomically with the triggering rule's name and message."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps({"rule": rule, "message": message, "time": time.time()}))
    os.replace(tmp, p)
