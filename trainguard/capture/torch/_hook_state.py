"""The hook's state and the way out of a saved step (the base of `hook.Hook`).

`HookState` holds everything a hook keeps (set up in its `__init__`, the parts behind the writer only when
configured), the state it reports (`enabled`, `errors`, the step counts), how a failure disables capture
(`_fail`), and what happens to a saved step once it is reduced: its finalisation (`_finalize`: the pending
step and the scalars leave for the host in one copy), the polling of the transfer (and taking up a failure
of its delivery thread), skipping a step when every host buffer is in flight (`_skip`), shipping prediction counts, and the forward-hook bodies that
drive these at the start of an iteration. The optimizer's step hooks and step counting are
`_stepping`, recording scalars and predictions `_recording`, the public facade `hook`.
"""

from __future__ import annotations

import atexit
import logging
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from trainguard.capture import exit_watch
from trainguard.capture.config import CaptureConfig
from trainguard.capture.torch import c_kernel
from trainguard.capture.torch._blindness import Blindness
from trainguard.capture.torch._finalize import StepWriter
from trainguard.capture.torch._forward import ForwardHooks
from trainguard.capture.torch._guard import fail_open
from trainguard.capture.torch._inputs import Inputs
from trainguard.capture.torch._optimizers import Optimizers
from trainguard.capture.torch._param_groups import ParamGroups
from trainguard.capture.torch._paths import Paths
from trainguard.capture.torch._plan import (
    DEFAULT_PACK_MAX_NUMEL,
    Activation,
    CapturePlan,
    NativePlan,
)
from trainguard.capture.torch._step import Pending, SavedStep, Scalars
from trainguard.capture.torch._streams import PredictionStreams
from trainguard.capture.torch._transfer import Transfer
from trainguard.capture.torch.worker_thread import StatsWorker
from trainguard.stop_flag import StopFlag
from trainguard.store import writer

log = logging.getLogger(__name__)


class HookState:
    """The hook's state, its failure and the saved step's way out; `hook.Hook` is the public class."""

    def __init__(
        self,
        out: str | None = None,
        *,
        config: CaptureConfig | None = None,
        environ: Mapping[str, str] | None = None,
        pack_max_numel: int = DEFAULT_PACK_MAX_NUMEL,
        transfer: Transfer | None = None,
        **settings: Any,
    ) -> None:
        """Configure from `config`, else from `out` and `settings` over `TRAINGUARD_*` in `environ` (default os.environ).

        `transfer`: how saved steps reach the host (default: a ring of 3 pinned buffers and non-blocking
        copies on CUDA, `_transfer.Transfer`); the CPU proxies of the hook's cost pass one that runs
        under FakeTensorMode.
        """
        if config is None:
            overrides: dict[str, Any] = dict(settings)
            if out:
                overrides["out"] = out
            config = CaptureConfig.from_env(environ, **overrides)
        self.config = config
        self.pack_max_numel = pack_max_numel
        self._save_interval = config.save_interval if config else 1
        """`config.save_interval`, read by the per-step fast paths (steps that are not saved cost a few int operations)."""
        self._native = bool(config and config.native_stats and c_kernel.AVAILABLE)
        """Float32 CPU tensors are read in place by the C kernel (`c_kernel`), on the training thread."""
        self.step = 0
        """Training iterations completed (optimizer steps with one optimizer); the step in progress has this number."""
        self._in_iteration = False
        self._placed: dict[str, bool] = {}
        """Per train scalar name: recorded before the optimizer step (True) or after it (False), as last seen on
        an iteration whose forward was watched (`_recording.Recording._train_step`)."""
        self._optimizers = Optimizers()
        """The live registered optimizers (their step hooks) and which step ends an iteration."""
        self._registered_optimizer = False
        self._ends_iteration = False
        """With several optimizers: whether the step in progress ends the iteration (told by its pre-hook)."""
        self._any_step: RemovableHandle | None = None
        """The global optimizer post-hook that finds uncounted steps of captured parameters (`_blindness`)."""
        self._captures: weakref.WeakKeyDictionary[torch.optim.Optimizer, bool] = weakref.WeakKeyDictionary()
        """Whether an optimizer that is not registered owns a captured parameter (weak: ids are reused)."""
        self._train_scalars = 0
        """Train scalars recorded since the last counted step (`_blindness`: do they keep coming without steps?)."""
        self._scalars_per_step = 0
        """The train scalars a counted step had most often so far."""
        self._scalar_counts: dict[int, int] = {}
        """How many counted steps had each number of train scalars."""
        self._first_scalar: str | None = None
        """The first train scalar's name, while no step was counted (`_recording`: has the optimizer ever stepped?)."""
        self._first_scalar_repeats = 0
        """How often it was recorded before the first counted step."""
        self._blind_after_scalars = 1 << 62
        """Train scalars since the last counted step beyond which the hook may be blind: twice the most a step had."""
        self._plan = CapturePlan(config, pack_max_numel=pack_max_numel, kernel=self._native)
        self._forward = ForwardHooks(
            self._plan,
            on_forward=self._on_forward,
            on_activation=self._activation_hook,
            on_forward_end=self._on_forward_end,
        )
        self._inputs = Inputs() if config is not None and config.wants("inputs") else None
        """The registered modules' inputs read on saved steps (`input/<arg>`), when the collection is captured."""
        self._pending: Pending | None = None
        """A saved step reduced on the device, sent to the host at the start of the next iteration (`_finalize`)."""
        self._skipped = -1
        """The last saved step skipped because every host buffer was in flight (`_skip`)."""
        self._predictions: PredictionStreams | None = None
        self._writer: writer.RankWriter | None = None
        self._stop = StopFlag(config.stop_file if config else None)
        self._closed = False
        self._failed = False
        self._forwards_without_optimizer = 0
        self._warned_no_optimizer = False
        self._transfer = transfer if transfer is not None else Transfer()
        """Saved steps on their way to the host: polled by the hook bodies, waited for by flush and close only."""
        if config is None:
            return
        # The parts below exist only for a configured hook; every method that reaches them first checks
        # `enabled` or the writer.
        w = self._writer = config.open_writer(framework="pytorch")
        self._saved = SavedStep(kernel=self._native, packs=self._plan.packs)
        self._scalars = Scalars(
            w,
            kernel=self._native,
            wants_optimizer=config.wants("optimizer"),
            save_interval=config.save_interval,
        )
        if config.wants("optimizer"):
            self._scalars.groups = ParamGroups(w, self._plan.params)
        self._step_writer = StepWriter(w, self._transfer)
        self._paths = Paths(
            self._plan, self._saved, self._scalars, self._step_writer, w, config, kernel=self._native
        )
        self._blindness = Blindness(w)
        exit_watch.install()
        atexit.register(self.close)

    if TYPE_CHECKING:

        def close(self) -> None: ...  # `hook.Hook.close`

    # --- state ------------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        """True while the hook captures: configured, not closed, and no failure so far."""
        w = self._writer
        return w is not None and not w.disabled and not self._closed and not self._failed

    @property
    def errors(self) -> list[str]:
        return [] if self._writer is None else list(self._writer.errors)

    @property
    def lost_steps(self) -> int:
        """Steps whose data never reached the store: the store failed for longer than the pending segments'
        memory (`max_pending_bytes`) covers, or `close()` ran out of time; also END.json `lost_steps`."""
        return 0 if self._writer is None else self._writer.lost_steps

    @property
    def skipped_steps(self) -> int:
        """Saved steps skipped because the statistics worker held every snapshot buffer, or every host buffer of the
        transfer was still in flight (also in END.json)."""
        return 0 if self._writer is None else self._writer.skipped_steps

    @property
    def worker_cpu_seconds(self) -> float:
        """CPU seconds the statistics worker thread has spent so far (0 without one)."""
        worker = self._worker
        return 0.0 if worker is None else worker.cpu_seconds

    @property
    def _worker(self) -> StatsWorker | None:
        """The statistics worker's thread, once a plan called for it (`_paths.Paths`)."""
        return None if self._writer is None else self._paths.worker

    @property
    def _native_plan(self) -> NativePlan | None:
        """The C kernel's plan of the parameters, while the kernel reads them all (`_kernel_path.KernelPath`)."""
        return self._plan.native_plan

    @property
    def _order_handles(self) -> list[RemovableHandle]:
        """The pre-hooks numbering the modules in the first training forward (`_forward.ForwardHooks`)."""
        return self._forward.order_handles

    def is_saved_step(self, step: int | None = None) -> bool:
        """Return whether `step` (default: the step in progress) is a saved step."""
        return (
            self.config is not None
            and ((self.step if step is None else step) % self.config.save_interval) == 0
        )

    def _fail(self, where: str, err: BaseException) -> None:
        message = f"{where} failed: {type(err).__name__}: {err}; capture disabled, training continues"
        if not self._failed:
            log.error("trainguard: %s", message)
        self._failed = True
        if self._writer is not None:
            # The store is fine: only capture stops. Unlike RankWriter._fail (a failing store), the
            # writer stays up, so the steps written before the failure still land, and END.json
            # carries the error.
            self._writer.errors.append(message)
            self._paths.drop()
            self._blindness.counted()  # capture is off: what follows is a failure, not blindness
            self._transfer.drop()
        self._remove_handles()
        self._pending = None

    def _check_worker(self) -> None:
        """On the training thread: turn a failure inside the statistics worker into a hook failure."""
        worker = self._worker
        failure = worker.error if worker is not None else None
        if failure is not None and not self._failed:
            self._fail(f"statistics worker ({failure[0]})", failure[1])

    def _check_delivery(self) -> None:
        """On the training thread: turn a failure on the transfer's delivery thread into a hook failure."""
        failure = self._transfer.error
        if failure is not None and not self._failed:
            self._fail(*failure)

    def _no_optimizer(self, when: str) -> None:
        """Say once that steps are not counted: no optimizer was registered (logged, and in END.json)."""
        if self._warned_no_optimizer:
            return
        self._warned_no_optimizer = True
        message = (
            f"no optimizer registered {when}: no step is counted and nothing is saved; call "
            "hook.register_optimizer(optimizer) after creating the optimizer"
        )
        log.warning("trainguard: %s", message)
        if self._writer is not None:
            self._writer.errors.append(message)

    def _needs_forward(self, step: int) -> bool:
        """Whether the training forward of iteration `step` must be seen (`ForwardHooks.watch`): it finalises a
        pending step, numbers modules or ships prediction counts, or a value recorded during it belongs to a
        saved step (this one) rather than to the one before (`_record_step`), which matters when either is
        saved."""
        return bool(
            not self._optimizers  # no optimizer steps: nothing else ends an iteration
            or self._predictions
            or self._forward.order_handles
            or self._pending is not None
            or self._transfer.in_flight
            or self.is_saved_step(step)
            or self.is_saved_step(step - 1)
        )

    def _remove_handles(self) -> None:
        self._optimizers.remove()
        if self._any_step is not None:
            self._any_step.remove()
            self._any_step = None
        self._forward.remove()

    # --- hook bodies ------------------------------------------------------------------------------
    def _on_forward(self, module: nn.Module, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        if not module.training:
            return
        if not self._registered_optimizer:
            self._forwards_without_optimizer += 1
            if self._forwards_without_optimizer == 2:  # the first may precede the optimizer (shape checks)
                self._no_optimizer("after two training forwards")
        self._in_iteration = True
        if self._forward.order_handles and self._plan.module_order:
            self._forward.finish_order(self._writer)  # a second training forward (no optimizer step between)
        if self._pending is not None:
            self._finalize_pending()
        if self._transfer.in_flight:
            self._poll()
            if self._skipped != self.step and self.is_saved_step() and not self._transfer.has_room():
                self._skip(self.step)  # decided before its activations: a skipped step does no work at all
        if self._predictions:
            self._ship_predictions()
        if self._inputs is not None and self._skipped != self.step and self.is_saved_step() and self.enabled:
            self._capture_inputs(module, args, kwargs)  # after the step before left, as an activation would

    @fail_open("finalising a saved step")
    def _finalize_pending(self) -> None:
        self._finalize()

    @fail_open("writing a saved step")
    def _poll(self) -> None:
        """Hand the saved steps whose copies to the host are done to the delivery thread (never waits); take up a
        delivery that failed."""
        self._transfer.poll()
        if self._transfer.error is not None:
            self._check_delivery()

    def _activation_hook(self, act: Activation) -> Callable[[nn.Module, object, object], None]:
        def hook(module: nn.Module, inputs: object, output: object) -> None:
            if (
                not module.training
                or act.captured_step == self.step
                or not self.is_saved_step()
                or self._skipped == self.step
            ):
                return
            self._capture_activation(act, output)

        return hook

    @fail_open("reading the activations kept until the forward's end")
    def _on_forward_end(self, module: nn.Module, inputs: object, output: object) -> None:
        if module.training and self.is_saved_step() and self._skipped != self.step and self.enabled:
            self._paths.forward_done()

    @fail_open("capturing act/{0.name}")
    def _capture_activation(self, act: Activation, output: object) -> None:
        if not isinstance(output, torch.Tensor) or not output.is_floating_point() or not self.enabled:
            return
        act.captured_step = self.step
        assert self._writer is not None
        if self._pending is not None:
            self._finalize()  # the step before goes first: its rows must leave the result buffer before these
        read = self._plan.define_activation(act, output, self._writer)  # None: a kind it does not read
        if read is not None:
            self._paths.add_activation(read[0], act.kind, read[1], self._plan.tier1(self.step))

    @fail_open("capturing the inputs")
    def _capture_inputs(self, module: nn.Module, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        """Read the registered module's inputs of this saved step, as its activations are read (`_inputs`)."""
        assert self._writer is not None and self._inputs is not None
        place = self._forward.roots.index(module)
        taken = self._inputs.take(module, place, args, kwargs, step=self.step, w=self._writer)
        tier1 = self._plan.tier1(self.step) if taken else False
        for tid, t in taken:
            self._paths.add_activation(tid, "input", t, tier1)

    def _skip(self, step: int) -> None:
        """Every host buffer is still in flight: skip saved step `step` rather than wait for the device (counted
        in END.json `skipped_steps`; its update_l2 spans two intervals at the next saved step)."""
        assert self._writer is not None
        self._paths.skip()
        self._skipped = step
        if not self._writer.skipped_steps:
            log.warning(
                "trainguard: every host buffer still in flight (the device is far behind); step %d skipped "
                "(further skips are only counted: END.json skipped_steps)",
                step,
            )
        self._writer.skipped_steps += 1

    # --- saved steps --------------------------------------------------------------------------------
    def _finalize(self) -> None:
        """Bring the pending step and the scalars recorded so far to the host in one copy, and write them."""
        pending, self._pending = self._pending, None
        scalars = self._scalars.take()
        if not self._step_writer.send(pending, scalars):
            # a slot was free when the step was staged; something sent since took it: wait this once
            self._transfer.wait()
            self._step_writer.send(pending, scalars)

    def _record_step(self) -> int:
        """The step a value recorded now belongs to: the iteration in progress, else the step just completed."""
        return self.step if self._in_iteration or self.step == 0 else self.step - 1

    @fail_open("writing prediction counts")
    def _ship_predictions(self, final: bool = False) -> None:
        """Write the counts of the streams whose step is over (all of them when `final`), in one copy."""
        assert self._predictions is not None
        self._predictions.ship(self._record_step(), final=final)
