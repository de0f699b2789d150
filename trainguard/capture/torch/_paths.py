"""Which path takes a saved step: chosen at registration, checked again cheaply at every saved step.

`Hook.register_module` lays the capture plan out and chooses (`Paths.choose`): the C kernel's path
(`_kernel_path.KernelPath`) when it reads every captured parameter, else the statistics worker's
(`_worker_path.WorkerPath`) for CPU tensors when `stats_worker` is on, else the multi-tensor path
(`_multi_path.MultiPath`: one `multi_stats` op per group, where its kernel runs: CUDA with Triton),
else the packed path (`_packed.PackedPath`: other accelerators, and the general path). Registration cannot settle it for
good: a script may register its model before `.to(device)` or `.half()`, or convert it mid-run,
and an optimizer may give a parameter new storage inside `step()`. So each saved step checks the
choice again, at the cost of a comparison: the kernel's path compares its parameters' data
addresses when it reads them (`CapturePlan.native_plan_holds`), the others each parameter's
device and dtype (`CapturePlan.refresh`); a change lays the plan out again and chooses again. A
step the chosen path declines (the kernel's, for a tensor it cannot read) goes the packed way.
The first saved step after a module's registration also reads its parameters before the update,
as their initial-weights record (`_initial`), on the path chosen for that step.
"""

from __future__ import annotations

import torch

from trainguard.capture.config import CaptureConfig
from trainguard.capture.torch._finalize import StepWriter
from trainguard.capture.torch._initial import InitialWeights
from trainguard.capture.torch._kernel_path import KernelPath
from trainguard.capture.torch._multi_path import MultiPath, runs_on
from trainguard.capture.torch._packed import PackedPath
from trainguard.capture.torch._plan import CapturePlan
from trainguard.capture.torch._step import Path, Pending, SavedStep, Scalars, ScalarValue
from trainguard.capture.torch._worker_path import WORKER_DRAIN_SECONDS, WorkerPath
from trainguard.capture.torch.worker_thread import StatsWorker
from trainguard.store import writer


class Paths:
    """The hook's paths, the one its plan calls for (`current`), and the saved step staged on one of them."""

    def __init__(
        self,
        plan: CapturePlan,
        saved: SavedStep,
        scalars: Scalars,
        step_writer: StepWriter,
        w: writer.RankWriter,
        config: CaptureConfig,
        *,
        kernel: bool,
    ) -> None:
        self.plan = plan
        self.packed = PackedPath(plan, saved, scalars, w)
        self.kernel = KernelPath(plan, saved, scalars, step_writer) if kernel else None
        self.multi = MultiPath(plan, saved, scalars, step_writer, w)
        self.saved = saved
        self.initial = InitialWeights(plan, w)
        """The parameters whose weights before any update are still to be read (`_initial`)."""
        self.worker_path: WorkerPath | None = None
        """The statistics worker's path, made the first time a plan calls for it (it starts a thread)."""
        self.worker: StatsWorker | None = None
        """Its thread (an attribute, not a property: the hook looks for its error on every optimizer step)."""
        self.current: Path = self.packed
        self._step_writer = step_writer
        self._writer = w
        self._config = config
        self._staged_by: Path | None = None
        self._staged_step = -1
        """The saved step a path staged in the optimizer's pre-hook, and which path: it completes the step."""

    def choose(self) -> None:
        """Lay the plan out if it has no layout or a parameter changed device or dtype, and choose the path for
        it; else nothing (one comparison per parameter)."""
        if not self.plan.refresh():
            return
        plan, previous = self.plan, self.current
        plan.annotate_history(self._writer)
        self.packed.laid_out()
        if self.kernel is not None and plan.native_plan is not None:
            self.current = self.kernel
        elif self._multi_serves() and not (self._config.stats_worker and plan.on_cpu):
            self.current = self.multi
        elif not self._config.stats_worker or not plan.on_cpu or plan.kernel_reads_params:
            self.current = self.packed
        else:
            if self.worker_path is None:
                self.worker_path = WorkerPath(self.packed, self._step_writer, self._writer, self._config)
                self.worker = self.worker_path.worker
            self.current = self.worker_path
        if previous is self.worker_path and self.current is not previous:
            self.worker_path.flush([])  # the worker's steps in flight are written before the next path's

    def _multi_serves(self) -> bool:
        """Whether the multi-tensor path takes the plan: every captured parameter is a floating tensor on a device
        where `multi_stats` runs its kernel (`_multi_path.runs_on`), and none is read by the C kernel."""
        params = [p.param for p in self.plan.params if p.tid is not None or p.want_grad]
        return (
            bool(params)
            and not self.plan.kernel_reads_params
            and all(t.is_floating_point() and runs_on(t.device) for t in params)
        )

    def add_activation(self, tid: int, kind: str, output: torch.Tensor, tier1: bool) -> None:
        """An activation captured in its forward hook, read as the current path reads them."""
        if self.current is self.multi:
            self.multi.add_activation(tid, kind, output, tier1)
        else:
            self.saved.add_activation(tid, kind, output, tier1)

    @property
    def keeps_activations(self) -> bool:
        """The current path keeps a saved step's activations until the registered module's forward returns."""
        return self.current is self.multi

    def forward_done(self) -> None:
        """A registered module's training forward of a saved step returned: the activations kept are read."""
        self.multi.flush_activations()

    def stage(self, step: int) -> None:
        """Stage saved step `step` on the current path. The kernel's path goes first without looking at the
        plan (that keeps it cheap: it checks its parameters when it reads them); any other step has the
        choice checked first (`choose`). A step the path declines goes the packed way. The first saved step
        after a registration reads the new parameters' initial weights first (`read_initial`). Activations the
        multi-tensor path kept and still holds (no registered module's forward returned) are reduced first."""
        self.multi.flush_activations()
        if self.initial.seen != len(self.plan.params):  # `InitialWeights.due`, inline: asked every saved step
            self.read_initial()
        kernel = self.kernel
        path: Path
        if kernel is not None and self.current is kernel and kernel.stage(step):
            path = kernel
        else:
            declined = kernel is not None and self.current is kernel  # it looked at this step and left it
            self.choose()
            path = self.current
            if (declined and path is kernel) or not path.stage(step):
                path = self.packed
                path.stage(step)
        self._staged_by, self._staged_step = path, step

    def read_initial(self) -> None:
        """Read the parameters registered since the last saved step into this step, as their initial-weights
        records (`_initial`), before its update: on the path chosen for the tensors as they are now (one op per
        group on the multi-tensor path, else each where it lies: the C kernel in place, or torch ops), whose
        step hands the rows on with its own. A step skipped after this (a busy statistics worker) drops them."""
        self.choose()
        got = self.initial.take()
        if not got:
            return
        if self.current is self.multi:
            self.multi.read_initial(got)
            return
        with torch.no_grad():
            for tid, x in got:
                self.saved.reduce_now(tid, x, False)
            self.saved.read_batch()

    def complete(self, step: int, optimizer: torch.optim.Optimizer) -> Pending | None:
        """Complete saved step `step` on the path that staged it; return what it leaves for the next iteration."""
        if self._staged_step != step:
            self.stage(step)
        path = self._staged_by
        assert path is not None
        self._staged_by, self._staged_step = None, -1
        return path.complete(step, optimizer)

    def flush(self, scalars: list[ScalarValue]) -> None:
        """With a statistics worker: hand it `scalars` and wait (at most `WORKER_DRAIN_SECONDS`) for its steps."""
        if self.worker_path is not None:
            self.worker_path.flush(scalars)

    def skip(self) -> None:
        """Forget what the saved step in progress gathered (its activations): it is not written (`Hook._skip`)."""
        self.packed.skip()
        self.multi.skip()
        self._staged_by, self._staged_step = None, -1

    def drop(self) -> None:
        """Capture failed: forget the staged step and stop the worker (what it still holds is dropped; what it
        wrote stays), and the activations the multi-tensor path kept (their memory goes back)."""
        self.packed.drop()
        self.multi.release()
        if self.worker is not None:
            self.worker.stop()

    def close(self) -> None:
        """Stop the worker; steps it still holds (flush waited for them in vain) are noted in END.json."""
        worker = self.worker
        if worker is None:
            return
        if worker.in_flight:
            self._writer.errors.append(
                f"statistics worker still held {worker.in_flight} saved steps after "
                f"{WORKER_DRAIN_SECONDS:.0f}s at close; they are not written"
            )
        worker.stop()
