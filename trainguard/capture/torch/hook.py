"""The PyTorch hook (`import trainguard.torch as tg`; `tg.Hook`): its public API and lifecycle.

The step counter counts training iterations: one step per optimizer step with one optimizer, one per
iteration with several (GAN generator and discriminator; `_optimizers.Optimizers` tells which
optimizer step ends an iteration, and a new optimizer over the same parameters replaces the old
one). Training that goes on without a counted step (an optimizer it does not know steps captured parameters,
or train scalars keep coming without steps) makes the hook blind:
`_blindness.Blindness` records it for the evaluator and END.json. On steps that are not saved the hook does
nothing but count (activation hooks are only installed for saved iterations, the registered
modules' forward pre-hook for saved iterations and the one after each). On a saved step the
optimizer's pre-hook stages the gradients, its post-hook takes the weights, and the step is
handed on by one of four paths behind one interface (`_step.Path`), chosen when a module is
registered and checked again cheaply at each saved step (`_paths.Paths`: the capture plan,
`_plan.CapturePlan`, is laid out again and the path chosen again when a parameter changed device
or dtype):

- `_multi_path.MultiPath` (GPUs: `multi_stats` has its kernel there): one op per group of
  gradients, of parameters, and per activation, into the device's result buffer;
- `_packed.PackedPath` (other accelerators, and the general path): reduces on the device;
- `_kernel_path.KernelPath` (float32 CPU tensors, the C kernel built): reads them in place on the
  training thread and writes the step there and then;
- `_worker_path.WorkerPath` (CPU tensors without the kernel): snapshots them, and a background thread
  reduces, copies and writes the step.

On the first two, the step's results and its scalars leave for the host in ONE non-blocking copy
per device at the start of the next iteration (`_finalize.StepWriter.send`, `_transfer.Transfer`);
the hook's next calls poll it and write the step once it is done; only `flush` and `close` wait.
A saved step that finds every host buffer in flight is skipped and counted (`_skip`). Prediction
counts (`record_predictions`, `_streams`) accumulate on the device and follow in a second, small
copy of their own. Which forward hooks are installed when is `_forward`. Every hook
body that does real work is decorated with one fail-open guard (`_guard.fail_open`): a failure
disables capture, is logged once and lands in END.json.
"""

from __future__ import annotations

import atexit
import logging
import time
import weakref
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.hooks import RemovableHandle

from trainguard.capture import exit_watch
from trainguard.capture.config import CaptureConfig
from trainguard.capture.torch import c_kernel
from trainguard.capture.torch._blindness import Blindness
from trainguard.capture.torch._finalize import StepWriter
from trainguard.capture.torch._forward import ForwardHooks
from trainguard.capture.torch._guard import fail_open
from trainguard.capture.torch._optimizers import Optimizers, param_ids
from trainguard.capture.torch._paths import Paths
from trainguard.capture.torch._plan import (
    ACTIVATION_KINDS,
    DEFAULT_PACK_MAX_NUMEL,
    Activation,
    CapturePlan,
    NativePlan,
)
from trainguard.capture.torch._step import MAX_HELD_SCALARS, Pending, SavedStep, Scalars
from trainguard.capture.torch._streams import PredictionStreams
from trainguard.capture.torch._transfer import Transfer
from trainguard.capture.torch._worker_path import WORKER_DRAIN_SECONDS
from trainguard.capture.torch.worker_thread import StatsWorker
from trainguard.stop_flag import StopFlag
from trainguard.store import writer

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["ACTIVATION_KINDS", "Hook"]

log = logging.getLogger(__name__)


class Hook:
    """Captures a PyTorch training run into a TrainGuard run. Inert (all methods no-ops) without a config."""

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
        """The most train scalars one counted step had so far."""
        self._blind_after_scalars = 1 << 62
        """Train scalars since the last counted step beyond which the hook may be blind: twice the most a step had."""
        self._plan = CapturePlan(config, pack_max_numel=pack_max_numel, kernel=self._native)
        self._forward = ForwardHooks(
            self._plan, on_forward=self._on_forward, on_activation=self._activation_hook
        )
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
        self._scalars = Scalars(w, kernel=self._native, wants_optimizer=config.wants("optimizer"))
        self._step_writer = StepWriter(w, self._transfer)
        self._paths = Paths(
            self._plan, self._saved, self._scalars, self._step_writer, w, config, kernel=self._native
        )
        self._blindness = Blindness(w)
        exit_watch.install()
        atexit.register(self.close)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Hook:
        """Return a hook configured by `TRAINGUARD_*` variables; an inert hook when TRAINGUARD_OUT is unset."""
        return cls(environ=environ, **overrides)

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

    # --- registration -----------------------------------------------------------------------------
    @fail_open("register_module")
    def register_module(self, module: nn.Module) -> None:
        """Capture the module's weights, biases, gradients and activations (on saved steps)."""
        if not self.enabled:
            return
        assert self._writer is not None
        self._forward.add(module, self._plan.add_module(module, self._writer))
        self._paths.choose()  # the path for the tensors as they are now; each saved step checks it again
        self._forward.arm(self.is_saved_step(), force=True)  # new modules: what this step needs
        self._captures.clear()
        if self._any_step is None:
            self._any_step = register_optimizer_step_post_hook(self._on_any_step)

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

    @fail_open("register_optimizer")
    def register_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Count steps on `optimizer.step()`, read gradients before it and weights after it, record `lr`.

        Several optimizers may be registered: the step count goes on with one step per training iteration
        (an iteration ends when every registered optimizer stepped). A new optimizer that shares a parameter
        with one registered before replaces it (an optimizer re-created per epoch or stage): the old one's
        steps are not counted any more. Registering the same optimizer again changes nothing.
        """
        if not self.enabled:
            return
        replaced = self._optimizers.register(optimizer, pre=self._on_step_begin, post=self._on_step_end)
        self._registered_optimizer = True
        self._captures.pop(optimizer, None)
        if replaced:
            log.info(
                "trainguard: %s replaces %s (shared parameters)",
                type(optimizer).__name__,
                ", ".join(replaced),
            )

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
    def _on_forward(self, module: nn.Module, args: object) -> None:
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

    @fail_open("finalising a saved step")
    def _finalize_pending(self) -> None:
        self._finalize()

    @fail_open("writing a saved step")
    def _poll(self) -> None:
        """Write the saved steps whose copies to the host are done (never waits)."""
        self._transfer.poll()

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

    def _on_any_step(self, optimizer: torch.optim.Optimizer, args: object, kwargs: object) -> None:
        """torch's global optimizer post-hook: a step of an optimizer that is not registered (or was replaced)
        and owns a captured parameter is not counted (`_blindness`)."""
        if self._optimizers.owns(optimizer):
            return  # a registered optimizer: every step of the run comes here first
        captures = self._captures.get(optimizer)
        if captures is False or not self.enabled:
            return
        self._uncounted_step(optimizer, captures)

    @fail_open("watching the steps of a {0.__class__.__name__} that is not registered")
    def _uncounted_step(self, optimizer: torch.optim.Optimizer, captures: bool | None) -> None:
        if captures is None:
            captures = self._captures[optimizer] = bool(
                param_ids(optimizer) & {id(p.param) for p in self._plan.params}
            )
        if captures:
            self._blindness.uncounted(optimizer, step=self.step)

    def _on_step_begin(self, optimizer: torch.optim.Optimizer, args: object, kwargs: object) -> None:
        if not self._optimizers.single:
            self._ends_iteration = self._optimizers.begin(optimizer)
            if not self._ends_iteration:
                return  # another optimizer's step ends this iteration
        if self._forward.order_handles and self._plan.module_order:
            self._forward.finish_order(self._writer)  # after the first training forward
        if self._pending is None and self.step % self._save_interval and not self._transfer.in_flight:
            return  # a step that is not saved, with nothing left to write
        self._begin_step(self.step)

    @fail_open("optimizer step {0} (gradients)")
    def _begin_step(self, step: int) -> None:
        """The optimizer's pre-hook of a step that is saved or has a pending step to write first."""
        if self._pending is not None:
            self._finalize()
        self._transfer.poll()
        if self.enabled and self.is_saved_step(step) and self._skipped != step:
            if self._transfer.has_room():
                self._paths.stage(step)
            else:
                self._skip(step)

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

    def _on_step_end(self, optimizer: torch.optim.Optimizer, args: object, kwargs: object) -> None:
        if not self._optimizers.single and not self._ends_iteration:
            return
        self._ends_iteration = False
        step = self.step
        self.step += 1
        if self._train_scalars:
            self._count_scalars()
        if self._blindness.pending:
            self._blindness.counted()
        self._in_iteration = False
        worker = self._paths.worker
        if worker is not None and worker.error is not None:
            self._check_worker()
        if step % self._save_interval and self.step % self._save_interval and not self._predictions:
            if self._forward.root_handles and not self._needs_forward(self.step):
                self._forward.watch(False)  # the iteration after a saved one is over
            return  # neither this step nor the next is saved: nothing to finish, nothing to arm
        if not self.enabled:
            return
        self._end_step(step, optimizer)
        if self._predictions:
            self._ship_predictions()  # no registered module: the steps end here

    @fail_open("optimizer step {0} (weights)")
    def _end_step(self, step: int, optimizer: torch.optim.Optimizer) -> None:
        """The optimizer's post-hook around a saved step: complete it, arm what the next iteration needs."""
        if self.is_saved_step(step) and self._skipped != step:
            self._pending = self._paths.complete(step, optimizer)
        self._forward.arm(self.is_saved_step())
        self._forward.watch(self._needs_forward(self.step))

    # --- saved steps --------------------------------------------------------------------------------
    def _finalize(self) -> None:
        """Bring the pending step and the scalars recorded so far to the host in one copy, and write them."""
        pending, self._pending = self._pending, None
        scalars = self._scalars.take()
        if not self._step_writer.send(pending, scalars):
            # a slot was free when the step was staged; something sent since took it: wait this once
            self._transfer.wait()
            self._step_writer.send(pending, scalars)

    # --- scalars and control --------------------------------------------------------------------------
    def record_scalar(
        self, name: str, value: float | torch.Tensor, *, mode: str = "train", collection: str | None = None
    ) -> None:
        """Record a scalar (a float or a one-element tensor, which stays on its device until the step's copy).

        A scalar belongs to the iteration in progress: after `optimizer.step()` and before the
        next training forward of a registered module, that is the step just completed. Train
        scalars are kept on saved steps only; eval scalars always. On an iteration where neither
        its step nor the one before is saved the forward is not watched (`ForwardHooks.watch`), so a
        value recorded during it belongs to the step just completed: no train scalar is kept
        either way; an eval scalar recorded mid-iteration lands one step back. `collection` None
        means "losses" for a name with "loss" in it, else "metrics".
        """
        if mode == "train" and self._registered_optimizer:
            n = self._train_scalars = self._train_scalars + 1
            if n > self._blind_after_scalars:
                self._scalars_without_steps(n)
        step = self._record_step()
        if (mode == "train" and step % self._save_interval) or self._writer is None or not self.enabled:
            return
        self._add_scalar(step, name, value, mode, collection)

    def _count_scalars(self) -> None:
        """A step was counted: learn how many train scalars a step has (a spell needs twice the most)."""
        n, self._train_scalars = self._train_scalars, 0
        if n > self._scalars_per_step:
            self._scalars_per_step = n
            self._blind_after_scalars = 2 * n

    @fail_open("record_scalar (train scalars without steps)")
    def _scalars_without_steps(self, n: int) -> None:
        """Train scalars keep coming and no step is counted: blind, if a registered module trains."""
        if self.enabled and any(m.training for m in self._forward.roots):
            # beyond the iteration in progress (a loss recorded after the last counted step belongs to it)
            self._blindness.no_steps(n // self._scalars_per_step - 1, step=self.step)

    @fail_open("record_scalar({1!r})")
    def _add_scalar(
        self, step: int, name: str, value: float | torch.Tensor, mode: str, collection: str | None
    ) -> None:
        self._scalars.add(step, name, value, mode=mode, collection=collection)
        if self._pending is None and len(self._scalars.held) >= MAX_HELD_SCALARS:
            self._finalize()  # a long eval loop between saved steps: bound what is held

    def _record_step(self) -> int:
        """The step a value recorded now belongs to: the iteration in progress, else the step just completed."""
        return self.step if self._in_iteration or self.step == 0 else self.step - 1

    def record_predictions(
        self,
        scores: Any,
        labels: Any,
        *,
        name: str = "predictions",
        mode: str = "train",
        logits: bool = False,
        max_classes: int = 10,
    ) -> None:
        """Add a batch of predictions to bucket counts (AUC, ROC, PR, calibration downstream).

        Same semantics as `Recorder.record_predictions`. Binary: `scores` [N] probabilities (or
        logits with `logits=True`) and 0/1 `labels`. Multi-class: `scores` [N, C] probabilities and
        integer `labels`, counted one-vs-rest for the `max_classes` most frequent classes of the
        first batch (whose labels are read on the host once). Counts accumulate on the scores'
        device on every call without a host sync; they belong to the step a scalar recorded now
        would (`record_scalar`). Train counts are written on saved steps (everything since the
        previous saved step), eval counts for every step that has some, the rest at `close`; they
        add up exactly. Written counts reach the host in a second small copy of their own
        (float64[3, 10^4] per stream and class) right after the saved step's copy, when the device
        has just synchronised: they do not ride in the step's one copy. A failure (e.g. scores and
        labels of different lengths) never raises: it disables capture like any hook failure.
        """
        if not self.enabled or self.config is None or not self.config.wants("predictions"):
            return
        self._add_predictions(name, mode, scores, labels, logits, max_classes)

    @fail_open("record_predictions({0!r})")
    def _add_predictions(
        self, name: str, mode: str, scores: Any, labels: Any, logits: bool, max_classes: int
    ) -> None:
        streams = self._predictions
        if streams is None:
            assert self._writer is not None
            streams = self._predictions = PredictionStreams(
                self._writer, self._step_writer, is_saved_step=self.is_saved_step
            )
        step = self._record_step()
        streams.add(step, scores, labels, name=name, mode=mode, logits=logits, max_classes=max_classes)

    @fail_open("writing prediction counts")
    def _ship_predictions(self, final: bool = False) -> None:
        """Write the counts of the streams whose step is over (all of them when `final`), in one copy."""
        assert self._predictions is not None
        self._predictions.ship(self._record_step(), final=final)

    def should_stop(self) -> bool:
        """True once the evaluator asked this job to stop (cooperative stop)."""
        return self._stop.is_set()

    def stop_reason(self) -> str | None:
        """The message the evaluator left with the stop request, if any."""
        return self._stop.reason()

    def flush(self) -> None:
        """Write the pending step and scalars and hand the buffer to the uploader.

        With a statistics worker, wait (at most `WORKER_DRAIN_SECONDS`) for its steps in flight first.
        """
        if self._writer is None:
            return
        self._flush()

    @fail_open("flush")
    def _flush(self) -> None:
        assert self._writer is not None
        if self._paths.worker_path is not None and self.enabled:
            self._paths.flush(self._scalars.take())
            self._check_worker()
        if self.enabled and (self._pending is not None or self._scalars.held):
            self._finalize()
        if self.enabled:
            self._transfer.wait()
        self._writer.flush()

    def wait_idle(self, timeout: float = WORKER_DRAIN_SECONDS) -> bool:
        """Wait at most `timeout` seconds until the statistics worker and the uploader have nothing in flight;
        True if both are idle. Writes nothing early (unlike `flush`): for benchmarks and tests."""
        deadline = time.monotonic() + timeout
        worker = self._worker
        if worker is not None and not worker.drain(timeout):
            return False
        return self._writer is None or self._writer.wait_idle(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        """Flush, write END.json, remove every hook. Idempotent; also runs at interpreter exit."""
        self._close(exception=exit_watch.uncaught())

    def _close(self, *, exception: str | None) -> None:
        if self._closed:
            return
        if self.enabled and self._predictions:
            self._ship_predictions(True)  # counts since the last written step still belong to the run
        if self.enabled:
            self.flush()
        self._closed = True
        self._remove_handles()
        if self._writer is not None:
            self._paths.close()
            if self._forward.roots and not self._registered_optimizer and not self._failed:
                self._no_optimizer("at close")
            self._blindness.end()
            # a stop that should_stop() told the script about ended the run: END.json says `stopped`
            self._writer.close(exception=exception, status="stopped" if self._stop.told else "ok")
            atexit.unregister(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # an exception ending the block is what ended the capture (the excepthook, if any, comes too late)
        self._close(exception=exit_watch.describe(exc) if exc is not None else exit_watch.uncaught())
