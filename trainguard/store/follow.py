"""Yields one rank's new segments in step order as they land.

Polls `Source.poll()` (which lists after the last key seen, so no key is read twice), sleeps
`poll_interval_seconds` between empty polls, ends when the rank's END marker appears (after one
last poll, so nothing written before END is missed), and gives up on a writer that stays silent
for `idle_timeout_seconds`, setting `timed_out`. Parsing lives in `run_format.py` and `source.py`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from trainguard.store import run_format
from trainguard.store.source import Source


class Follower:
    """An iterator over new segments of one rank; `ended`/`timed_out` say why it stopped."""

    def __init__(
        self,
        source: Source,
        *,
        poll_interval_seconds: float = 0.2,
        idle_timeout_seconds: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
        stop: threading.Event | None = None,
    ) -> None:
        if poll_interval_seconds <= 0:
            raise ValueError(f"poll_interval_seconds must be positive, got {poll_interval_seconds}")
        self.source = source
        self.poll_interval_seconds = poll_interval_seconds
        self.idle_timeout_seconds = idle_timeout_seconds
        self.end: run_format.EndInfo | None = None
        self.timed_out = False
        self._clock = clock
        self._stop = stop or threading.Event()

    @property
    def ended(self) -> bool:
        return self.end is not None

    def stop(self) -> None:
        """Make the iteration end at its next poll (from another thread)."""
        self._stop.set()

    def __iter__(self) -> Iterator[run_format.Segment]:
        last_data = self._clock()
        while not self._stop.is_set():
            segs = self.source.poll()
            if segs:
                last_data = self._clock()
                yield from segs
                continue
            end = self.source.ended()
            if end is not None:
                # END is written after the last segment; one more poll picks up any segment listed late.
                yield from self.source.poll()
                self.end = end
                return
            if self._clock() - last_data > self.idle_timeout_seconds:
                self.timed_out = True
                return
            self._stop.wait(self.poll_interval_seconds)
