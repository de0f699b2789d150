"""The packed path: a saved step's small tensors reduced together in one buffer per device.

The path for accelerators, and the general path on any device. In the optimizer's pre-hook
`stage` loads the gradients and the small activations gathered during the forward into each
device's packed buffer (`device_stats.Packed`; large tensors and those the C kernel reads are
reduced one by one, `SavedStep.reduce_now`); in the post-hook `complete` loads the weights,
reduces everything with a fixed number of asynchronous kernels and returns the step as a
`Pending`, whose results reach the host in one copy at the start of the next iteration
(`Hook._finalize`). `_worker_path.WorkerPath` stages and collects through this path too, and reduces
on its thread instead.
"""

from __future__ import annotations

import torch

from trainguard.capture.torch import device_stats
from trainguard.capture.torch._plan import CapturePlan
from trainguard.capture.torch._step import Group, Pending, SavedStep, Scalars
from trainguard.store import writer
from trainguard.store.stats import MOVED


class PackedPath:
    """Stages and reduces saved steps with one packed buffer per device (`Packed`, kept between steps)."""

    def __init__(self, plan: CapturePlan, saved: SavedStep, scalars: Scalars, w: writer.RankWriter) -> None:
        self.plan = plan
        self.saved = saved
        self.scalars = scalars
        self._writer = w
        self._packers: dict[torch.device, device_stats.Packed] = {}
        self._staged: dict[torch.device, Group] | None = None

    def stage(self, step: int) -> bool:
        """Optimizer pre-hook of saved step `step`: load its gradients and activations; reduced on the device."""
        self.load(step, slot=0)
        return True

    def complete(self, step: int, optimizer: torch.optim.Optimizer) -> Pending | None:
        """Optimizer post-hook: load the weights and reduce the step on the device; its results stay there."""
        with torch.no_grad():
            pending = self.collect(step, optimizer)
            self.reduce(pending)
        return pending

    def laid_out(self) -> None:
        """The plan was laid out again: forget the buffers of devices that no longer pack a parameter, so that
        update tracking starts afresh when parameters come back to one (its saved copies would be stale)."""
        keep = {device for device, *_ in self.plan.per_device}
        self._packers = {device: p for device, p in self._packers.items() if device in keep}

    def drop(self) -> None:
        """Forget a staged step (capture failed)."""
        self._staged = None

    def skip(self) -> None:
        """Forget everything gathered for the saved step in progress: it is not written (`WorkerPath`)."""
        self._staged = None
        self.saved.acts_small = {}
        self.saved.reset()

    def _packer(self, device: torch.device) -> device_stats.Packed:
        p = self._packers.get(device)
        if p is None:
            p = self._packers[device] = device_stats.Packed(device)
        return p

    def _group(self, groups: dict[torch.device, Group], device: torch.device) -> Group:
        g = groups.get(device)
        if g is None:
            g = groups[device] = Group(self._packer(device))
        return g

    def load(self, step: int, *, slot: int) -> None:
        """Lay out this step's small tensors per device and load gradients and activations into snapshot `slot`."""
        with torch.no_grad():
            self._load(step, slot)

    def _load(self, step: int, slot: int) -> None:
        plan, saved = self.plan, self.saved
        groups: dict[torch.device, Group] = {}
        tier1 = plan.tier1(step)
        for device, ids, numels, tensors, tracked in plan.per_device:
            units = tuple(device_stats.unit_count(t) for t in tensors[:tracked]) if tier1 else ()
            groups[device] = Group(
                self._packer(device),
                list(ids),
                list(numels),
                list(tensors),
                tracked=tracked,
                n_params=len(ids),
                units=units,
            )
        for p in plan.grad_params:
            got = plan.gradient(p, self._writer)  # this rank's part of a readable gradient (`_kinds`)
            if got is None:
                continue
            tid, grad = got
            if not plan.packs(grad):
                saved.reduce_now(tid, grad, tier1)
                continue
            g = self._group(groups, grad.device)
            g.ids.append(tid)
            g.numels.append(grad.numel())
            g.tensors.append(grad)
        saved.read_batch()
        for device, acts in saved.acts_small.items():
            g = self._group(groups, device)
            for tid, t in acts:
                g.ids.append(tid)
                g.numels.append(t.numel())
                g.tensors.append(t)
        saved.acts_small = {}
        for g in groups.values():
            g.slot = slot
            g.layout = g.packer.layout(tuple(g.numels))
            g.packer.load(g.layout, g.tensors[g.n_params :], start=g.n_params, slot=g.slot)
            g.tensors = g.tensors[: g.n_params]
        self._staged = groups

    def collect(self, step: int, optimizer: torch.optim.Optimizer) -> Pending:
        """Snapshot the weights into the staged buffers and gather the step (not reduced yet) as a `Pending`."""
        plan, saved = self.plan, self.saved
        assert self._staged is not None and plan.config is not None
        tier1 = plan.tier1(step)
        ids: list[int] = []
        counts: list[int] = []
        parts: list[torch.Tensor] = []
        for g in self._staged.values():
            assert g.layout is not None
            g.packer.load(g.layout, g.tensors, start=0, slot=g.slot)
            g.tensors = []
        for p in plan.large_params:
            assert p.tid is not None  # only captured parameters are planned
            if p.history is None and plan.exact_history(p):
                p.history = device_stats.new_history(p.param)
            saved.reduce_now(p.tid, p.param, tier1, p.history)
        saved.read_batch()
        estimates = plan.sampled_estimates()
        saved.take_reduced(ids, counts, parts)
        self.scalars.add_lr(step, optimizer)
        host_ids, host_stats, host_nonfinite = saved.host.take()
        pending = Pending(
            step,
            ids,
            counts,
            parts,
            saved.units,
            saved.hists,
            host_ids=host_ids,
            host_stats=host_stats,
            host_nonfinite=host_nonfinite,
            groups=list(self._staged.values()),
            unit_inputs=saved.unit_inputs,
            tier1=tier1,
            estimates=estimates,
            hist_blocks=saved.hist_blocks,  # activations the multi-tensor path read before the path changed
            unit_blocks=saved.unit_blocks,
        )
        self._staged = None
        saved.reset()
        return pending

    def reduce(self, pending: Pending) -> None:
        """Reduce the pending step's packed buffers (histograms and per-unit vectors on Tier-1 steps: activity
        or saturation of activations, and the share of each parameter unit's row that moved)."""
        for g in pending.groups:
            assert g.layout is not None
            if pending.tier1 and any(g.units):  # before `reduce`, which moves the previous copies on
                moved, first = g.packer.moved(g.layout, g.tracked, g.units, slot=g.slot), 0
                for tid, u in zip(g.ids, g.units):
                    if u:
                        pending.units[(MOVED, tid)] = moved[first : first + u]
                        first += u
            raw = g.packer.reduce(g.layout, tracked=g.tracked, slot=g.slot)
            pending.parts.append(raw)
            pending.ids += g.ids
            pending.counts += g.numels
            if pending.tier1:
                for tid, h in zip(g.ids, g.packer.histograms(g.layout, raw, slot=g.slot).unbind(0)):
                    pending.hists[tid] = h
        for tid, kind, t in pending.unit_inputs:
            unit = device_stats.unit_vector(t, kind)
            if unit is not None:
                pending.units[(unit[0], tid)] = unit[1]
        pending.groups = []
        pending.unit_inputs = []
