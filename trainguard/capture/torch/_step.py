"""A saved step while it is gathered: the rows, tensors and scalars collected before it is handed on.

`SavedStep` holds what the hook bodies of one saved step read so far and decides, per tensor,
how it is read: in place by the C kernel (rows final, on the host), copied into the packed
buffer (`plan.CapturePlan.packs`), or reduced where it lies with torch ops. `Scalars` holds the
scalars recorded at every step: a float is written at once, a device tensor waits for the next
saved step's one copy. `Pending` is a step reduced on the device whose results still have to come
to the host (`_finalize.StepWriter`). Which path hands a step on is left to `_multi_path`, `_packed`,
`_kernel_path` and `_worker_path`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from trainguard.capture.torch import _param_groups, c_kernel, device_stats
from trainguard.store import writer
from trainguard.store.stats import MOVED

Result = torch.Tensor | np.ndarray
"""A per-unit vector or histogram: a device tensor (its host copy still to come), or a host array from the C kernel."""
HostUnits = dict[tuple[str, int], np.ndarray]
HostHists = dict[int, np.ndarray]
HistBlock = tuple[list[int], torch.Tensor]
"""Histograms of several tensors in one device tensor: their ids and float64 [len(ids), HIST_BINS] rows, in order."""
UnitBlock = tuple[list[tuple[str, int]], list[int], torch.Tensor]
"""Per-unit vectors of several tensors in one flat device tensor: their keys, lengths, and the vectors end to end."""
ScalarValue = tuple[int, int, float | torch.Tensor]
"""(step, tensor id, value) of a scalar waiting for its step's copy."""

MAX_HELD_SCALARS = 4096
"""Device scalars held for a saved step's copy at most (references to one-element tensors, a few hundred bytes
each); beyond, they leave in a copy of their own, or are dropped and counted when no host buffer is free."""


@dataclass
class Group:
    """One device's share of a saved step: packed slots in layout order, plus large tensors."""

    packer: device_stats.Packed
    ids: list[int] = field(default_factory=list)
    numels: list[int] = field(default_factory=list)
    tensors: list[torch.Tensor] = field(default_factory=list)
    tracked: int = 0
    n_params: int = 0
    layout: device_stats._Layout | None = None
    slot: int = 0
    """The layout's snapshot buffer this step is loaded into (see `StatsWorker`)."""
    units: tuple[int, ...] = ()
    """Per tracked parameter: the units of its Tier-1 "moved" vector (0: none); set on Tier-1 steps only."""


@dataclass
class Pending:
    """A reduced saved step whose results still live on the device."""

    step: int
    ids: list[int]
    counts: list[int]
    parts: list[torch.Tensor]
    """float64 device tensors: raw moments [T_i, RAW] of each group, in `ids` order."""
    units: dict[tuple[str, int], Result]
    hists: dict[int, Result]
    host_ids: list[int] = field(default_factory=list)
    host_stats: np.ndarray | None = None
    """Finished float32 statistic rows [len(host_ids), K] of the tensors the C kernel read (`c_kernel`)."""
    host_nonfinite: bool = False
    """Whether one of `host_stats` counts a NaN or Inf (the kernel said so)."""
    groups: list[Group] = field(default_factory=list)
    """Loaded packed buffers still to reduce (`PackedPath.reduce`): then their rows join `parts`."""
    unit_inputs: list[tuple[int, str, torch.Tensor]] = field(default_factory=list)
    """(tensor id, activation kind, float32 copy) of the Tier-1 per-unit vectors still to compute."""
    tier1: bool = False
    nan_update: list[int] = field(default_factory=list)
    """Rows (places in `ids`) whose update_l2 is NaN though the device wrote one: no previous copy (the
    multi-tensor reduction, `_multi_path`, writes 0 there and leaves the marking to the host)."""
    nan_distance: list[int] = field(default_factory=list)
    """Rows whose distance_l2 is NaN likewise: not tracked."""
    estimates: list[tuple[list[int], torch.Tensor]] = field(default_factory=list)
    """Sampled update/distance (`CapturePlan.sampled_estimates`): tensor ids and float64 [T, 2] squared estimates,
    which replace those tensors' update_l2 and distance_l2 when the step is written."""
    hist_blocks: list[HistBlock] = field(default_factory=list)
    """Histograms a group's one op wrote together (`_multi_path`): one result each, split into `hists` on the host."""
    unit_blocks: list[UnitBlock] = field(default_factory=list)
    """Per-unit vectors a group's one op wrote together, likewise split into `units` on the host."""


class Path(Protocol):
    """How a saved step is read and handed on: `_multi_path.MultiPath` (GPUs), `_packed.PackedPath` (other
    accelerators, and the general path),
    `_worker_path.WorkerPath` (CPU tensors no kernel reads) or `_kernel_path.KernelPath` (the C kernel reads it all).
    One is chosen at registration and checked again at each saved step (`_paths.Paths`)."""

    def stage(self, step: int) -> bool:
        """Optimizer pre-hook of saved step `step`: take its gradients and the activations gathered so far.
        False, having done nothing, when the path cannot take this step (the hook then stages it on the
        general path)."""
        ...

    def complete(self, step: int, optimizer: torch.optim.Optimizer) -> Pending | None:
        """Optimizer post-hook: take the weights and hand the step on; return it when its results still
        have to come to the host at the next iteration (`_finalize.StepWriter`), else None."""
        ...


class SavedStep:
    """What the saved step in progress has gathered so far, until a path hands it on (then `reset`)."""

    def __init__(self, *, kernel: bool, packs: Callable[[torch.Tensor], bool]) -> None:
        self.kernel = kernel
        """Float32 CPU tensors are read in place by the C kernel (`c_kernel`), on the training thread."""
        self.packs = packs
        self.acts_small: dict[torch.device, list[tuple[int, torch.Tensor]]] = {}
        """Copies of the small activations, per device, to be loaded into the packed buffer with the gradients."""
        self.reduced: list[tuple[int, int, torch.Tensor]] = []
        """(tensor id, elements, raw moments) of the tensors reduced one by one with torch ops so far in this step."""
        self.host = c_kernel.HostRows()
        """Statistic rows of the tensors the C kernel read so far in this step."""
        self.batch: list[tuple[int, torch.Tensor, torch.Tensor | None, torch.Tensor | None, bool]] = []
        """Tensors of the hook body in progress for one `HostRows.add_many` call (`read_batch`)."""
        self.units: dict[tuple[str, int], Result] = {}
        self.unit_inputs: list[tuple[int, str, torch.Tensor]] = []
        self.hists: dict[int, Result] = {}
        self.hist_blocks: list[HistBlock] = []
        self.unit_blocks: list[UnitBlock] = []

    def add_activation(self, tid: int, kind: str, output: torch.Tensor, tier1: bool) -> None:
        """Read one activation in its forward hook: now (a later in-place op may change it), or as a copy."""
        row = c_kernel.plain_row(output) if not tier1 and self.kernel else None
        if row is not None:  # read now, in one call
            self.host.add_read([tid], [*row])
            return
        if self.packs(output):
            # detached, so no graph (and no no_grad context) is needed; a copy, as later in-place ops
            # must not change it
            copy = output.detach().to(torch.float32, copy=True)
            self.acts_small.setdefault(output.device, []).append((tid, copy))
            if tier1:
                self.unit_inputs.append((tid, kind, copy))  # computed with the reductions
            return
        with torch.no_grad():
            if tier1:
                unit: tuple[str, Result] | None = None
                if self.kernel:
                    unit = c_kernel.unit_vector(output, kind)
                if unit is None:
                    unit = device_stats.unit_vector(output, kind)
                if unit is not None:
                    self.units[(unit[0], tid)] = unit[1]
            self.reduce_now(tid, output, tier1)
            self.read_batch()

    def reduce_now(
        self, tid: int, t: torch.Tensor, tier1: bool, history: device_stats._History | None = None
    ) -> None:
        """Reduce one tensor that is not packed (large, or read in place by the C kernel) into this step."""
        hist: Result | None
        moved: Result | None
        if self.kernel and c_kernel.usable(t) and (history is None or c_kernel.usable(history.prev)):
            prev, first, fresh = (
                (None, None, False) if history is None else (history.prev, history.first, history.fresh)
            )
            if history is not None:
                history.fresh = False
            if not tier1:  # the common case: read with the other tensors of this hook in one kernel call
                self.batch.append((tid, t, prev, first, fresh))
                return
            units = device_stats.unit_count(t) if history is not None else 0
            hist, moved = self.host.add(
                tid, t, prev=prev, first=first, fresh=fresh, hist=True, units=units, checked=True
            )
        else:
            raw, hist, moved = device_stats.reduce_one(t, history, hist=tier1, moved=tier1)
            self.reduced.append((tid, t.numel(), raw))
        if hist is not None:
            self.hists[tid] = hist
        if moved is not None:
            self.units[(MOVED, tid)] = moved

    def read_batch(self) -> None:
        """Read the tensors `reduce_now` set aside for the C kernel in one call (the end of each hook body)."""
        if self.batch:
            batch, self.batch = self.batch, []
            self.host.add_many(batch, checked=True)  # `reduce_now` found each x and prev usable

    def take_reduced(self, ids: list[int], counts: list[int], parts: list[torch.Tensor]) -> None:
        """Append the rows of the tensors reduced one by one so far (`reduced`) to a step's ids, sizes and parts."""
        for tid, n, raw in self.reduced:
            parts.append(raw[None, :])
            ids.append(tid)
            counts.append(n)

    def reset(self) -> None:
        """Forget what was gathered for the saved step in progress (handed on, or skipped)."""
        self.reduced = []
        self.batch = []
        self.host.clear()
        self.units = {}
        self.unit_inputs = []
        self.hists = {}
        self.hist_blocks = []
        self.unit_blocks = []


class Scalars:
    """Scalars of every step: on a device they wait for the next saved step's copy (held as references: no copy and
    no host read before it); on the host a saved step's are written at once, and an unsaved step's finite values wait
    in a list for the next saved step's write (or a flush), which writes them in one call: an unsaved step pays a list
    append instead of the writer's locked path. A value that is not finite is written at once, with those before
    it, so the writer's first-NaN flush is as early as ever."""

    def __init__(
        self, w: writer.RankWriter, *, kernel: bool, wants_optimizer: bool, save_interval: int
    ) -> None:
        self._writer = w
        self._kernel = kernel
        self._wants_optimizer = wants_optimizer
        self._interval = save_interval
        self.held: list[ScalarValue] = []
        """Device scalars not copied yet, in the order they were recorded."""
        self.host: list[tuple[int, int, float]] = []
        """Finite host values of unsaved steps not written yet, in the order they were recorded."""
        self._ids: dict[tuple[str, str, str | None], int] = {}
        """Each (name, mode, collection) recorded so far and its id: a scalar recorded every step looks it up once."""
        self.groups: _param_groups.ParamGroups | None = None
        """The registered optimizers' parameter groups, recorded with `lr` (set by the hook when it captures
        the optimizer collection)."""

    def add(
        self, step: int, name: str, value: float | torch.Tensor, *, mode: str, collection: str | None
    ) -> None:
        """Write a scalar now (on the host) or with the step's copy (on a device); `collection` None: "losses" for a
        name with "loss" in it, else "metrics" (the catalogue keeps a name's first)."""
        if isinstance(value, torch.Tensor):
            # on CPU reading it is no transfer, no sync and no graph; a plain 0-d tensor's tolist() is its number, read
            # at ~60% of item()'s cost and without an op dispatch (every step pays it); a subclass reads by item()
            v: float | int | bool | None = None
            if self._kernel and value.is_cpu:
                if type(value) is torch.Tensor and not value.dim():
                    v = value.tolist()  # type: ignore[assignment]  # a number, for a 0-d tensor
                elif value.numel() == 1:
                    v = value.item()
            if v is None:
                value = value.detach()
            else:
                value = v if type(v) is float else float(v)
        else:
            value = float(value)
        tid = self._ids.get((name, mode, collection))
        if tid is None:
            coll = collection or ("losses" if "loss" in name.lower() else "metrics")
            tid = self._ids[(name, mode, collection)] = self._writer.define(name, collection=coll, mode=mode)
        if not isinstance(value, float):
            self.held.append((step, tid, value))  # on the device: it joins the step's one copy
        elif (
            step % self._interval and value - value == 0.0
        ):  # an unsaved step's finite value (inf - inf is NaN)
            self.host.append((step, tid, value))
        else:
            if self.host:
                self.write_host()
            self._writer.write_scalar(step, tid, value)  # on the host: nothing to wait for

    def add_lr(self, step: int, optimizer: torch.optim.Optimizer) -> None:
        """Record the first parameter group's learning rate as `lr` (collection "optimizer"), if captured, and
        every registered optimizer's group hyperparameters that changed (`_param_groups`)."""
        if self._wants_optimizer and optimizer.param_groups:
            lr = optimizer.param_groups[0].get("lr")
            if lr is not None:
                self.add(step, "lr", lr, mode="train", collection="optimizer")
        if self.groups is not None:
            self.groups.record(step, self.add)

    def write_host(self) -> None:
        """Write the host values waiting since the last saved step."""
        rows, self.host = self.host, []
        self._writer.write_scalar_rows(rows)

    def take(self) -> list[ScalarValue]:
        """Write the waiting host values; return the held device scalars and hold none."""
        if self.host:
            self.write_host()
        held, self.held = self.held, []
        return held
