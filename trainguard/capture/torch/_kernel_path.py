"""The C kernel's path on CPU: a saved step read in place, on the training thread, and written at once.

Used while the plan has a `NativePlan` (the kernel reads every captured parameter: all float32
CPU). Code that runs once per saved step runs with cold caches (a numpy call then costs 10-25 us,
not 1), so this path is short: `stage` reads the gradients in one kernel call (one each, with a
histogram, on a Tier-1 step) without looking at the plan; `complete` reads the parameters from
the spec made once and kept while their storage stays put, and hands the rows to the writer
then and there. A step the kernel cannot read whole (an activation or gradient it cannot read)
is declined at `stage` and goes the general way (`_packed.PackedPath`); a parameter that moved
where the kernel cannot read it drops the plan (`CapturePlan.native_plan_holds`).
"""

from __future__ import annotations

from typing import cast

import numpy as np
import torch

from trainguard.capture.torch import c_kernel, device_stats
from trainguard.capture.torch._finalize import StepWriter, apply_estimates
from trainguard.capture.torch._plan import CapturePlan, NativePlan
from trainguard.capture.torch._step import HostHists, HostUnits, Pending, SavedStep, Scalars


class KernelPath:
    """Saved steps the C kernel reads whole: gradients at `stage`, parameters and the write at `complete`."""

    def __init__(
        self, plan: CapturePlan, saved: SavedStep, scalars: Scalars, step_writer: StepWriter
    ) -> None:
        self.plan = plan
        self.saved = saved
        self.scalars = scalars
        self.step_writer = step_writer

    def stage(self, step: int) -> bool:
        """The gradients, in one call (with a Tier-1 histogram each: one call each). False, having done
        nothing, when the step must go the general way: no plan, or something the kernel cannot read."""
        saved = self.saved
        if self.plan.native_plan is None or saved.acts_small or saved.reduced:
            return False  # the parameters' plan itself is checked when they are read (`complete`)
        ids: list[int] = []
        grads: list[torch.Tensor] = []
        spec: list[int] = []
        usable = c_kernel.usable
        for p in self.plan.grad_params:
            # the source's own gradient where it is not sharded: no property call per parameter per step
            grad = p.grad if p.sharded else p.source.grad
            if grad is None or p.grad_skipped or not p.source.requires_grad:  # frozen now: stale, if any
                continue
            n = grad.numel()
            if not n:  # an empty shard here
                continue
            tid = p.grad_tid
            if tid is None or not usable(
                grad
            ):  # new to the catalogue, or one the kernel cannot read (sparse too)
                return False
            ids.append(tid)
            grads.append(grad)
            spec += (grad.data_ptr(), n, 0, 0, 0)  # `c_kernel.plain_row`, its check done above
        if self.plan.tier1(step):
            for tid, grad in zip(ids, grads):
                saved.reduce_now(tid, grad, True)
        else:
            saved.host.add_read(ids, spec)
        return True

    def complete(self, step: int, optimizer: torch.optim.Optimizer) -> Pending | None:
        """The parameters (unless the optimizer step moved them where the kernel cannot read them: then they
        wait for the next saved step); the rows go to the writer now (only a per-unit vector the torch
        path computed makes them wait for the next iteration's copy, returned as a `Pending`)."""
        plan = self.plan.native_plan
        assert plan is not None
        saved = self.saved
        tier1 = self.plan.tier1(step)
        if self.plan.native_plan_holds(plan):
            self._read_params(plan, tier1)
        estimates = []
        if self.plan.any_sampled:  # exact mode, the usual case, enters no grad-mode context per saved step
            with torch.no_grad():
                estimates = self.plan.sampled_estimates()  # CPU tensors: read at once
        self.scalars.add_lr(step, optimizer)
        ids, stats, nonfinite = saved.host.take()
        if estimates:
            apply_estimates(ids, stats, [(e_ids, e.numpy()) for e_ids, e in estimates])
        units, hists = saved.units, saved.hists
        if tier1:
            saved.units, saved.hists = {}, {}
        if all(isinstance(v, np.ndarray) for v in (*units.values(), *hists.values())):
            # on the host already: nothing to copy, so nothing waits for the next iteration
            self.step_writer.write_rows(
                step, ids, stats, cast(HostUnits, units), cast(HostHists, hists), nonfinite
            )
            return None
        # a per-unit vector the torch path computed: it joins the step's one copy
        return Pending(step, [], [], [], units, hists, ids, stats, nonfinite, tier1=tier1)

    def _read_params(self, plan: NativePlan, tier1: bool) -> None:
        """The plan's parameters in one kernel call from its spec (made here when missing, with the saved
        copies); on a Tier-1 step one call each, with histogram and "moved" shares."""
        assert self.plan.config is not None
        if plan.spec is None:
            for p in plan.params:
                if p.history is None and self.plan.exact_history(p):
                    p.history = device_stats.new_history(p.param)
            plan.spec = []
            for p in plan.params:
                h = p.history
                plan.spec += c_kernel.spec_row(p.param, *((h.prev, h.first, h.fresh) if h else ()))
            plan.ids = [p.tid for p in plan.params]  # type: ignore[misc]  # planned parameters are captured
        elif plan.fresh:
            plan.spec[4::5] = [int(p.history is not None and p.history.fresh) for p in plan.params]
        if tier1:
            for p in plan.params:
                self.saved.reduce_now(p.tid, p.param, True, p.history)  # type: ignore[arg-type]
        else:
            self.saved.host.add_read(plan.ids, plan.spec)
        if plan.fresh:
            for p in plan.params:
                if p.history is not None:
                    p.history.fresh = False
            plan.spec[4::5] = [0] * len(plan.params)
            plan.fresh = False
