"""The CPU's "stream" for the PyTorch hook: a background thread that reduces saved steps.

On an accelerator the hook's reductions are asynchronous kernels and the training thread only
launches them. On CPU the same kernels would run on the training thread, so the hook instead
snapshots the step's tensors into a packed buffer (the only work that must happen before
training moves on) and hands the rest -- reductions, histograms, the host copy and the write --
to this worker. torch releases the GIL inside its kernels, so the worker overlaps training
when a core is free; on a fully loaded CPU it only moves the work, it does not remove it.

Bounded: at most `max_in_flight` snapshots are submitted and not yet reduced. A saved step that
finds them all busy waits a little (`wait_for_room`, within the hook's wait allowance), then is
skipped by the hook and counted. The first error
stops the worker: later jobs are dropped and the hook, polling `error` from the training
thread, disables capture (a worker never touches the hook's state or its module hooks).

The transfer (`_transfer.Transfer`) runs one as its delivery thread: there a job writes a saved
step whose copy to the host is done, and a slot job holds one of the transfer's host buffers.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable


class StatsWorker:
    """One daemon thread running submitted jobs in order; `slot` jobs count against `max_in_flight`."""

    def __init__(self, max_in_flight: int, *, name: str = "trainguard-stats") -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self.max_in_flight = max_in_flight
        self.error: tuple[str, BaseException] | None = None
        """(what failed, the exception) of the first failing job; the worker runs nothing after it."""
        self.cpu_seconds = 0.0
        """CPU time the worker thread spent in jobs (its own thread, whatever core it ran on)."""
        self.jobs_done = 0
        self._jobs: collections.deque[tuple[str, Callable[[], None], bool]] = collections.deque()
        self._in_flight = 0
        self._busy = False
        self._stopped = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def in_flight(self) -> int:
        """Slot jobs submitted and not finished."""
        return self._in_flight

    def has_room(self) -> bool:
        """Whether one more slot job may be submitted now."""
        return self._in_flight < self.max_in_flight and self.error is None and not self._stopped

    def wait_for_room(self, timeout: float) -> bool:
        """Wait at most `timeout` seconds until `has_room`; return it."""
        if self.has_room():
            return True
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self.has_room() and self.error is None and not self._stopped:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return self.has_room()

    def submit(self, what: str, job: Callable[[], None], *, slot: bool) -> None:
        """Queue `job` (never blocks). A `slot` job holds one of the `max_in_flight` snapshot buffers."""
        with self._cond:
            if self._stopped or self.error is not None:
                return
            if slot:
                self._in_flight += 1
            self._jobs.append((what, job, slot))
            self._cond.notify()  # the worker: whoever submits is not waiting

    def drain(self, timeout: float) -> bool:
        """Wait until every submitted job has run (or was dropped after an error); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._jobs or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def stop(self) -> None:
        """Drop queued jobs and end the thread after the job in progress (does not wait)."""
        with self._cond:
            self._stopped = True
            self._in_flight -= sum(1 for *_, slot in self._jobs if slot)
            self._jobs.clear()
            self._cond.notify_all()

    def join(self, timeout: float) -> bool:
        """Wait for the thread to end (after `stop`); False if it is still running a job."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stopped:
                    self._cond.wait()
                if not self._jobs:
                    return
                what, job, slot = self._jobs.popleft()
                self._busy = True
            started = time.thread_time()
            try:
                job()
            except BaseException as err:  # noqa: BLE001 - the hook reports it from the training thread
                with self._cond:
                    if self.error is None:
                        self.error = (what, err)
                    self._in_flight -= sum(1 for *_, s in self._jobs if s)
                    self._jobs.clear()
            finally:
                self.cpu_seconds += time.thread_time() - started
                with self._cond:
                    self.jobs_done += 1
                    if slot:
                        self._in_flight -= 1
                    self._busy = False
                    self._cond.notify_all()
