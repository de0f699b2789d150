"""The CPU statistics worker's path: the CPU's "stream", used when no C kernel reads the parameters.

On CPU there are no asynchronous kernels to hide behind, so the optimizer's hooks only snapshot
the step's tensors into one of `stats_in_flight` packed buffers (staged and collected by
`_packed.PackedPath`), and a background thread (`worker_thread.StatsWorker`) reduces, copies and
writes the step, with the scalars recorded before it. A step that finds every buffer busy waits
within a small allowance (`WORKER_WAIT_SHARE` of the training time), then is skipped and counted
(END.json `skipped_steps`). Failures inside the worker reach the hook through `StatsWorker.error`,
which the hook polls from the training thread.
"""

from __future__ import annotations

import logging
import time

import torch

from trainguard.capture.config import CaptureConfig
from trainguard.capture.torch._finalize import StepWriter
from trainguard.capture.torch._packed import PackedPath
from trainguard.capture.torch._step import Pending, ScalarValue
from trainguard.capture.torch.worker_thread import StatsWorker
from trainguard.store import writer

log = logging.getLogger(__name__)

WORKER_DRAIN_SECONDS = 10.0
"""The longest `flush` and `close` wait for the statistics worker's saved steps in flight."""

WORKER_WAIT_SHARE = 0.02
"""Waiting for a busy statistics worker may take at most this share of the training time: the
allowance accrues with wall time (up to `max_block_seconds`, the longest the hook may hold up one
step, which is also where it starts, so a start-up hiccup is absorbed); beyond it a saved step is
skipped instead of waited for."""


class WorkerPath:
    """Saved steps of CPU tensors snapshot on the training thread and reduced and written on the worker."""

    def __init__(
        self, packed: PackedPath, step_writer: StepWriter, w: writer.RankWriter, config: CaptureConfig
    ) -> None:
        self.packed = packed
        self.step_writer = step_writer
        self._writer = w
        self._config = config
        self.worker = StatsWorker(config.stats_in_flight)
        self._slots_in_flight: list[int] = []
        """Snapshot slots of the steps submitted to the worker, oldest first (it finishes them in order)."""
        self._slot = 0
        """The slot the step staged last was loaded into."""
        self._max_wait_seconds = config.max_block_seconds
        """The longest one wait: `max_block_seconds`, the longest the hook may hold up a step at once."""
        self._wait_allowance = self._max_wait_seconds
        self._wait_clock = time.monotonic()
        self._skipped_step = -1
        self.skipped_steps = 0
        """Saved steps skipped because the worker held every snapshot buffer (also in END.json)."""

    def stage(self, step: int) -> bool:
        """Snapshot the step's gradients and activations into a free buffer, or skip the step if none frees up."""
        if not self._room():
            self._skip(step)
            return True
        self._slot = self._free_slot()
        self.packed.load(step, slot=self._slot)
        return True

    def complete(self, step: int, optimizer: torch.optim.Optimizer) -> Pending | None:
        """Snapshot the weights and hand the step, with the scalars recorded before it, to the worker."""
        if self._skipped_step == step:
            return None
        with torch.no_grad():
            pending = self.packed.collect(step, optimizer)
        scalars = self.packed.scalars.take()
        self._slots_in_flight.append(self._slot)
        self.worker.submit(f"step {step}", lambda: self._reduce_and_write(pending, scalars), slot=True)
        return None

    def flush(self, scalars: list[ScalarValue]) -> None:
        """Hand the worker the scalars still held and wait (at most `WORKER_DRAIN_SECONDS`) until it is done."""
        if scalars:
            self.worker.submit("scalars", lambda: self.step_writer.write(None, scalars), slot=False)
        if not self.worker.drain(WORKER_DRAIN_SECONDS):
            log.warning("trainguard: statistics worker still busy after %.0fs at flush", WORKER_DRAIN_SECONDS)

    def _reduce_and_write(self, pending: Pending, scalars: list[ScalarValue]) -> None:
        """The worker's job: reduce one saved step, then write it with the scalars recorded before it.

        Touches only the step's own objects, its packer (whose buffers and update history are the
        worker's while it runs: steps come in order, each in its own slot) and the thread-safe writer.
        """
        with torch.no_grad():
            self.packed.reduce(pending)
            self.step_writer.write(pending, scalars)

    def _room(self) -> bool:
        """Whether a snapshot buffer is free, waiting for one within the wait allowance (`WORKER_WAIT_SHARE`)."""
        worker = self.worker
        if worker.has_room():
            return True
        now = time.monotonic()
        limit = self._max_wait_seconds
        self._wait_allowance = min(limit, self._wait_allowance + WORKER_WAIT_SHARE * (now - self._wait_clock))
        room = worker.wait_for_room(self._wait_allowance)
        self._wait_clock = time.monotonic()
        self._wait_allowance = max(0.0, self._wait_allowance - (self._wait_clock - now))
        return room

    def _free_slot(self) -> int:
        """The lowest snapshot slot the worker is done with: the same, cache-warm buffer while it keeps up."""
        busy = self._slots_in_flight
        del busy[: len(busy) - self.worker.in_flight]  # the worker finishes slot jobs in submission order
        return min(set(range(self.worker.max_in_flight)).difference(busy))

    def _skip(self, step: int) -> None:
        """Drop saved step `step`: every snapshot buffer is still with the worker, and training must not wait."""
        if not self.skipped_steps:
            log.warning(
                "trainguard: statistics worker still busy with %d saved steps; step %d skipped "
                "(further skips are only counted: END.json skipped_steps)",
                self._config.stats_in_flight,
                step,
            )
        self.skipped_steps += 1
        self._writer.skipped_steps = self.skipped_steps
        self._skipped_step = step
        self.packed.skip()
