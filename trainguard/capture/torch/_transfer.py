"""The saved steps' way to the host: one non-blocking copy per device into a small ring of host buffers.

A saved step's results (raw moments, Tier-1 extras, the scalars recorded with it) lie in one flat
float64 tensor per device (`_finalize.ResultBuffer`). `Transfer.send` starts their copy to the
host without waiting: on CUDA `pinned.copy_(results, non_blocking=True)` into one of `slots`
preallocated pinned buffers, then a CUDA event recorded behind it. The hook calls `poll` from its
next hook bodies (the next training forward, the next optimizer pre-hook): it only queries the
events, and hands each slot whose copy is done, in the order sent, to one background delivery
thread (`worker_thread.StatsWorker`), which reads the slot and runs the callback given with it
(finishing the rows in numpy and writing the step) while training goes on. A slot returns to the
ring once its delivery is over, not before: the thread reads its buffer until then. Only `wait`
(the hook's `flush` and `close`) blocks, on `event.synchronize()` and on the thread. When every slot
is in flight or being delivered a saved step is not waited for: the hook skips it and counts it
(`RankWriter.skipped_steps`), so the training step never waits on the device or the thread. A
delivery that fails stops the thread; the hook finds `error` from the training thread and
disables capture.

How a slot's buffer is made, how its copy is marked and how it is read back is a `Staging`, one
per device type: `PinnedStaging` (CUDA: pinned memory, events) and `HostStaging` (the CPU, and
accelerators without events here: a plain copy that is complete when it returns; results already
on the CPU are written at once by the caller, with no slot and no thread). Tests inject
their own (`Transfer(staging=...)`): pinned memory and events need a GPU, so the CPU proxies of the
hook's cost run `PinnedStaging.copy` under FakeTensorMode with plain buffers and markers of their
own (`pin_memory`, `record`, `read`).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from trainguard.capture.torch.worker_thread import StatsWorker

log = logging.getLogger(__name__)

DEFAULT_SLOTS = 3
"""Saved steps in flight to the host (or being delivered) at most: with results one step late, 3 leave room for a
slow poll."""

DELIVERY_DRAIN_SECONDS = 10.0
"""The longest `wait` (flush, close) waits for the delivery thread: a delivery takes milliseconds, and the writer it
calls never waits on the store."""

DELIVERY = "writing a saved step"
"""What a failing delivery is reported as (`Transfer.error`, then the hook's error in END.json)."""


class Marker(Protocol):
    """What marks a copy's completion (a CUDA event)."""

    def query(self) -> bool:
        """True once the copy is complete (never blocks)."""
        ...

    def synchronize(self) -> None:
        """Block until the copy is complete."""
        ...


class Staging(Protocol):
    """How one device's results reach host memory: the buffers, the copy and its completion marker."""

    at_once: bool
    """The results are host memory already (the CPU): a step is written at once, on the caller's thread, with no
    slot, unless steps sent before it are still on their way."""

    def host_buffer(self, numel: int) -> torch.Tensor:
        """A float64 host tensor of at least `numel` elements (allocated once per slot, grown rarely)."""
        ...

    def copy(self, host: torch.Tensor, results: torch.Tensor) -> Marker:
        """Start copying `results` into `host` (same size); return what tells when it is done."""
        ...

    def read(self, host: torch.Tensor) -> np.ndarray:
        """The host buffer's values once its copy is done."""
        ...


class _Done:
    """A copy that was complete when it returned."""

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None


DONE: Marker = _Done()


class HostStaging:
    """Results on the CPU, or on an accelerator without events here: a plain copy, complete on return."""

    def __init__(self, *, at_once: bool = False) -> None:
        self.at_once = at_once

    def host_buffer(self, numel: int) -> torch.Tensor:
        return torch.empty(numel, dtype=torch.float64)

    def copy(self, host: torch.Tensor, results: torch.Tensor) -> Marker:
        host.copy_(results)
        return DONE

    def read(self, host: torch.Tensor) -> np.ndarray:
        return host.numpy()


class PinnedStaging:
    """CUDA: pinned host buffers, a non-blocking copy on the current stream, an event recorded after it."""

    at_once = False
    pin_memory = True
    """Page-locked host buffers: what lets the copy run without the host (a pageable one would be synchronous)."""

    def host_buffer(self, numel: int) -> torch.Tensor:
        return torch.empty(numel, dtype=torch.float64, pin_memory=self.pin_memory)

    def copy(self, host: torch.Tensor, results: torch.Tensor) -> Marker:
        host.copy_(results, non_blocking=True)
        return self.record(results.device)

    def record(self, device: torch.device) -> Marker:
        """An event behind the work queued so far on `device`'s current stream (the copy)."""
        event = torch.cuda.Event()  # type: ignore[no-untyped-call]
        event.record(torch.cuda.current_stream(device))
        return event

    def read(self, host: torch.Tensor) -> np.ndarray:
        return host.numpy()


def staging_for(device: torch.device) -> Staging:
    """The staging of a device type: pinned and non-blocking on CUDA, a plain copy elsewhere (at once on the CPU)."""
    return PinnedStaging() if device.type == "cuda" else HostStaging(at_once=device.type == "cpu")


Delivered = Callable[[dict[torch.device, np.ndarray]], None]
"""Called with each device's host values (views of the slot's buffers, valid during the call)."""


@dataclass
class _Slot:
    """One saved step in flight: the host buffers it fills and, per device, the part being filled and its marker."""

    buffers: dict[torch.device, torch.Tensor] = field(default_factory=dict)
    pending: list[tuple[torch.device, torch.Tensor, Marker]] = field(default_factory=list)
    deliver: Delivered | None = None

    def done(self) -> bool:
        return all(marker.query() for _, _, marker in self.pending)

    def forget(self) -> None:
        self.pending, self.deliver = [], None


class Transfer:
    """A ring of `slots` host buffers per device; each saved step takes one until its copies are done and it is
    delivered (on the delivery thread)."""

    def __init__(
        self, *, slots: int = DEFAULT_SLOTS, staging: Callable[[torch.device], Staging] = staging_for
    ) -> None:
        if slots < 1:
            raise ValueError(f"a transfer needs at least one slot, got {slots}")
        self._slots = slots
        self._staging_for = staging
        self._stagings: dict[torch.device, Staging] = {}
        self._free: list[_Slot] = [_Slot() for _ in range(slots)]
        """Slots ready for a step. Only the training thread takes one (`send`); the delivery thread gives them
        back (under `_lock`), so one found here stays here until taken."""
        self.busy: deque[_Slot] = deque()
        """Slots sent whose copies are not known done, oldest first (the optimizer's pre-hook tests it inline every
        step). The training thread's alone."""
        self._lock = threading.Lock()
        self._handed: list[_Slot] = []
        """Slots handed to the delivery thread and not delivered yet, oldest first (under `_lock`)."""
        self._delivering: _Slot | None = None
        """The slot the delivery thread reads now (under `_lock`): `drop` leaves it to the thread."""
        self._thread: StatsWorker | None = None
        """The delivery thread, started at the first hand-over (a CPU-only run never needs one)."""
        self._spent_seconds = 0.0
        """CPU time of the delivery threads stopped so far (`drop`, `close`)."""

    @property
    def in_flight(self) -> int:
        """Saved steps sent and not delivered yet (copying, or handed to the delivery thread)."""
        return len(self.busy) + len(self._handed)

    @property
    def error(self) -> tuple[str, BaseException] | None:
        """(what failed, the exception) of the first failing delivery; nothing is delivered after it."""
        thread = self._thread
        return None if thread is None else thread.error

    @property
    def delivery_cpu_seconds(self) -> float:
        """CPU time the delivery thread spent in deliveries so far (its own thread, whatever core it ran on)."""
        thread = self._thread
        return self._spent_seconds + (0.0 if thread is None else thread.cpu_seconds)

    def at_once(self, devices: Iterable[torch.device]) -> bool:
        """Whether results on `devices` are written at once, without a slot: each one's staging says so, and no
        step sent before is still on its way (it is written first)."""
        return not self.in_flight and all(self.staging(d).at_once for d in devices)

    def staging(self, device: torch.device) -> Staging:
        """The staging of `device`, made on first use, then kept."""
        staging = self._stagings.get(device)
        if staging is None:
            staging = self._stagings[device] = self._staging_for(device)
        return staging

    def has_room(self) -> bool:
        """Whether a step can be sent now (after handing over those whose copies are done)."""
        if not self._free:
            self.poll()
        return bool(self._free)

    def send(self, results: dict[torch.device, torch.Tensor], deliver: Delivered) -> bool:
        """Start copying each device's flat float64 `results`; `deliver` gets their host values on the delivery
        thread once all are done (handed over by `poll` or `wait`). False, having started nothing, when every slot
        is in flight or being delivered."""
        if not self.has_room():
            return False
        slot = self._free.pop()
        for device, values in results.items():
            staging = self.staging(device)
            n = values.numel()
            host = slot.buffers.get(device)
            if host is None or host.numel() < n:
                # once per slot and device in steady state: the step's results keep their size
                host = slot.buffers[device] = staging.host_buffer(
                    max(n, 1024, 2 * (0 if host is None else host.numel()))
                )
            part = host[:n]
            slot.pending.append((device, part, staging.copy(part, values)))
        slot.deliver = deliver
        self.busy.append(slot)
        return True

    def poll(self) -> None:
        """Hand every step whose copies are done, in the order sent, to the delivery thread; stop at the first
        still in flight. Never waits (event queries only)."""
        while self.busy and self.busy[0].done():
            self._hand_over(self.busy.popleft())

    def wait(self) -> None:
        """Wait for every step in flight and for its delivery (flush and close only; the thread at most
        `DELIVERY_DRAIN_SECONDS`)."""
        while self.busy:
            slot = self.busy.popleft()
            for _, _, marker in slot.pending:
                marker.synchronize()
            self._hand_over(slot)
        self.drain(DELIVERY_DRAIN_SECONDS)

    def drain(self, timeout: float) -> bool:
        """Wait at most `timeout` seconds for the deliveries handed over so far; False, logged, if one is still
        running then."""
        thread = self._thread
        if thread is None or thread.drain(timeout):
            return True
        log.warning("trainguard: saved steps still being written after %.0fs", timeout)
        return False

    def drop(self) -> None:
        """Forget the steps in flight and those waiting for delivery without delivering them (capture failed);
        the one the thread delivers now, if any, ends on its own. Never waits."""
        while self.busy:
            slot = self.busy.popleft()
            slot.forget()
            self._free.append(slot)
        self._stop_thread()  # its queued deliveries are dropped with it
        with self._lock:
            for slot in self._handed:
                if slot is not self._delivering:
                    slot.forget()
                    self._free.append(slot)
            self._handed = [s for s in self._handed if s is self._delivering]

    def close(self) -> None:
        """End the delivery thread (after `wait`: nothing is left for it). Does not wait."""
        self._stop_thread()

    def _stop_thread(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop()
            self._spent_seconds += thread.cpu_seconds

    def _hand_over(self, slot: _Slot) -> None:
        """Queue a slot whose copies are done for delivery (its buffers are the thread's until then)."""
        thread = self._thread
        if thread is None:
            thread = self._thread = StatsWorker(self._slots, name="trainguard-delivery")
        with self._lock:
            self._handed.append(slot)
        # after a failure the thread takes nothing more: the slot then waits here for the hook's `drop`
        thread.submit(DELIVERY, functools.partial(self._deliver, slot), slot=True)

    def _deliver(self, slot: _Slot) -> None:
        """On the delivery thread: read the slot and run its callback, then give the slot back to the ring."""
        with self._lock:
            if slot not in self._handed:
                return  # dropped (`drop`) before its turn
            self._delivering = slot
        try:
            deliver = slot.deliver
            host = {d: self._stagings[d].read(part) for d, part, _ in slot.pending}
            if deliver is not None:
                deliver(host)
        finally:
            with self._lock:
                self._delivering = None
                if slot in self._handed:
                    self._handed.remove(slot)
                slot.forget()
                self._free.append(slot)
