"""The saved steps' way to the host: one non-blocking copy per device into a small ring of host buffers.

A saved step's results (raw moments, Tier-1 extras, the scalars recorded with it) lie in one flat
float64 tensor per device (`_finalize.ResultBuffer`). `Transfer.send` starts their copy to the
host without waiting: on CUDA `pinned.copy_(results, non_blocking=True)` into one of `slots`
preallocated pinned buffers, then a CUDA event recorded behind it. The hook calls `poll` from its
next hook bodies (the next training forward, the next optimizer pre-hook): each slot whose event
`query()` says done is handed, in the order sent, to the callback given with it, which writes the
step. Only `wait` (the hook's `flush` and `close`) blocks, on `event.synchronize()`. When every slot
is still in flight a saved step is not waited for: the hook skips it and counts it
(`RankWriter.skipped_steps`), so the training step never waits on the device.

How a slot's buffer is made, how its copy is marked and how it is read back is a `Staging`, one
per device type: `PinnedStaging` (CUDA: pinned memory, events) and `HostStaging` (the CPU, and
accelerators without events here: a plain copy that is complete when it returns). Tests inject
their own (`Transfer(staging=...)`): pinned memory and events need a GPU, so the CPU proxies of the
hook's cost run `PinnedStaging.copy` under FakeTensorMode with plain buffers and markers of their
own (`pin_memory`, `record`, `read`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

DEFAULT_SLOTS = 3
"""Saved steps in flight to the host at most: with results one step late, 3 leave room for a slow poll."""


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
    """One saved step in flight: the host buffers it fills and the markers of their copies."""

    buffers: dict[torch.device, torch.Tensor] = field(default_factory=dict)
    pending: list[tuple[torch.device, int, Marker]] = field(default_factory=list)
    deliver: Delivered | None = None

    def done(self) -> bool:
        return all(marker.query() for _, _, marker in self.pending)


class Transfer:
    """A ring of `slots` host buffers per device; each saved step takes one until its copies are done."""

    def __init__(
        self, *, slots: int = DEFAULT_SLOTS, staging: Callable[[torch.device], Staging] = staging_for
    ) -> None:
        if slots < 1:
            raise ValueError(f"a transfer needs at least one slot, got {slots}")
        self._staging_for = staging
        self._stagings: dict[torch.device, Staging] = {}
        self._free: list[_Slot] = [_Slot() for _ in range(slots)]
        self.busy: deque[_Slot] = deque()
        """Slots sent and not delivered yet, oldest first (the optimizer's pre-hook tests it inline every step)."""

    @property
    def in_flight(self) -> int:
        """Saved steps sent and not delivered yet."""
        return len(self.busy)

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
        """Whether a step can be sent now (after delivering those whose copies are done)."""
        if not self._free:
            self.poll()
        return bool(self._free)

    def send(self, results: dict[torch.device, torch.Tensor], deliver: Delivered) -> bool:
        """Start copying each device's flat float64 `results`; `deliver` gets their host values once all are
        done (from `poll` or `wait`). False, having started nothing, when every slot is in flight."""
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
            slot.pending.append((device, n, staging.copy(host[:n], values)))
        slot.deliver = deliver
        self.busy.append(slot)
        return True

    def poll(self) -> None:
        """Deliver, in the order sent, every step whose copies are done; stop at the first still in flight."""
        while self.busy and self.busy[0].done():
            self._deliver(self.busy.popleft())

    def wait(self) -> None:
        """Wait for every step in flight and deliver them (flush and close only)."""
        while self.busy:
            slot = self.busy.popleft()
            for _, _, marker in slot.pending:
                marker.synchronize()
            self._deliver(slot)

    def drop(self) -> None:
        """Forget the steps in flight without delivering them (capture failed)."""
        while self.busy:
            slot = self.busy.popleft()
            slot.pending, slot.deliver = [], None
            self._free.append(slot)

    def _deliver(self, slot: _Slot) -> None:
        deliver, pending = slot.deliver, slot.pending
        host = {d: self._stagings[d].read(slot.buffers[d][:n]) for d, n, _ in pending}
        slot.pending, slot.deliver = [], None
        try:
            if deliver is not None:
                deliver(host)
        finally:
            self._free.append(slot)
