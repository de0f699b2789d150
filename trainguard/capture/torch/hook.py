"""The PyTorch hook (`import trainguard.torch as tg`; `tg.Hook`): its public API and lifecycle.

The step counter counts training iterations: one step per optimizer step with one optimizer, one per
iteration with several (GAN generator and discriminator; `_optimizers.Optimizers` tells which
optimizer step ends an iteration, and a new optimizer over the same parameters replaces the old
one). Training that goes on without a counted step (an optimizer it does not know steps captured parameters,
or train scalars keep coming without steps) makes the hook blind:
`_blindness.Blindness` records it for the evaluator and END.json. On steps that are not saved the hook does
nothing but count (activation hooks are only installed for saved iterations, the registered
modules' forward pre-hook for saved iterations and the one after each; on a saved iteration it also
reads the modules' floating inputs as `input/<arg>`, `_inputs`). On a saved step the
optimizer's pre-hook stages the gradients (at the first saved step after a registration also the
new parameters before they move: their initial-weights record, `_initial`), its post-hook takes the
weights, and the step is handed on by one of four paths behind one interface (`_step.Path`), chosen when a module is
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

On the first two, the step's results and its scalars (with them, every step's since the saved step before:
`record_scalar` keeps train scalars at every step) leave for the host in ONE non-blocking copy
per device at the start of the next iteration (`_finalize.StepWriter.send`, `_transfer.Transfer`);
the hook's next calls poll it and, once it is done, hand it to a delivery thread that finishes and
writes the step off the training thread; only `flush` and `close` wait.
A saved step that finds every host buffer in flight is skipped and counted (`_skip`). Prediction
counts (`record_predictions`, `_streams`) accumulate on the device and follow in a second, small
copy of their own. Which forward hooks are installed when is `_forward`. Every hook
body that does real work is decorated with one fail-open guard (`_guard.fail_open`): a failure
disables capture, is logged once and lands in END.json.

`Hook` is the public facade over three parts, one job each: `_hook_state.HookState` (the state, failure,
and a saved step's way out: finalisation, transfer polling, skips, the forward-hook bodies),
`_stepping.Stepping` (the optimizer's step hooks and the step counter) and `_recording.Recording`
(`record_scalar`, `record_predictions`). This module keeps registration, flush, close and the context manager.
"""

from __future__ import annotations

import atexit
import time
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook

from trainguard.capture import exit_watch
from trainguard.capture.torch._guard import fail_open
from trainguard.capture.torch._plan import ACTIVATION_KINDS
from trainguard.capture.torch._recording import Recording
from trainguard.capture.torch._stepping import Stepping
from trainguard.capture.torch._worker_path import WORKER_DRAIN_SECONDS

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["ACTIVATION_KINDS", "Hook"]


class Hook(Stepping, Recording):
    """Captures a PyTorch training run into a TrainGuard run. Inert (all methods no-ops) without a config."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Hook:
        """Return a hook configured by `TRAINGUARD_*` variables; an inert hook when TRAINGUARD_OUT is unset."""
        return cls(environ=environ, **overrides)

    # --- registration -----------------------------------------------------------------------------
    @fail_open("register_module")
    def register_module(self, module: nn.Module) -> None:
        """Capture the module's weights, biases, gradients and activations (on saved steps)."""
        if not self.enabled:
            return
        assert self._writer is not None
        self._forward.add(module, self._plan.add_module(module, self._writer))
        self._paths.choose()  # the path for the tensors as they are now; each saved step checks it again
        # new modules: what this step needs
        self._forward.arm(self.is_saved_step(), ends=self._paths.keeps_activations, force=True)
        self._captures.clear()
        if self._any_step is None:
            self._any_step = register_optimizer_step_post_hook(self._on_any_step)

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
        if self.enabled and (self._pending is not None or self._scalars.held or self._scalars.host):
            self._finalize()
        if self.enabled:
            self._transfer.wait()
            self._check_delivery()
        self._writer.flush()

    def wait_idle(self, timeout: float = WORKER_DRAIN_SECONDS) -> bool:
        """Wait at most `timeout` seconds until the statistics worker, the transfer's delivery thread and the
        uploader have nothing in flight; True if all are idle. Writes nothing early (unlike `flush`): for benchmarks and tests."""
        deadline = time.monotonic() + timeout
        worker = self._worker
        if worker is not None and not worker.drain(timeout):
            return False
        if not self._transfer.drain(max(0.0, deadline - time.monotonic())):
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
        self._transfer.close()
        if self._writer is not None:
            self._paths.close()
            if self._forward.roots and not self._registered_optimizer and not self._failed:
                self._no_optimizer("at close")
            self._blindness.end(step=self.step)
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
