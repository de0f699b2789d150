"""The optimizer's step hooks: counting training iterations and handing saved steps on (part of `hook.Hook`).

`Stepping` registers optimizers (`_optimizers.Optimizers` tells which optimizer step ends an iteration),
counts one step per iteration in the optimizer's post-hook, stages a saved step's gradients in its
pre-hook and takes the weights in its post-hook, and watches the steps of optimizers that are not
registered (`_blindness`). On a step that is not saved the hooks cost a few int operations and nothing
more: keep it so.
"""

from __future__ import annotations

import logging

import torch

from trainguard.capture.torch._guard import fail_open
from trainguard.capture.torch._hook_state import HookState
from trainguard.capture.torch._optimizers import param_ids

log = logging.getLogger(__name__)


class Stepping(HookState):
    """The optimizer's step hooks and the step counter of `hook.Hook`."""

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
        if self._scalars.groups is not None:
            self._scalars.groups.register(optimizer)
        if replaced:
            log.info(
                "trainguard: %s replaces %s (shared parameters)",
                type(optimizer).__name__,
                ", ".join(replaced),
            )

    def _on_any_step(self, optimizer: torch.optim.Optimizer, args: object, kwargs: object) -> None:
        """torch's global optimizer post-hook: a step of an optimizer that is not registered (or was replaced)
        and owns a captured parameter is not counted (`_blindness`)."""
        entry = self._optimizers.live.get(id(optimizer))  # `Optimizers.owns`, inline: every step comes here
        if entry is not None and entry.ref() is optimizer:
            return  # a registered optimizer
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
        if self._pending is None and self.step % self._save_interval and not self._transfer.busy:
            return  # a step that is not saved, with nothing left to write
        self._begin_step(self.step)

    @fail_open("optimizer step {0} (gradients)")
    def _begin_step(self, step: int) -> None:
        """The optimizer's pre-hook of a step that is saved or has a pending step to write first."""
        if self._pending is not None:
            self._finalize()
        self._transfer.poll()
        if self._transfer.error is not None:
            self._check_delivery()
        if self.enabled and self.is_saved_step(step) and self._skipped != step:
            if self._transfer.has_room():
                self._paths.stage(step)
            else:
                self._skip(step)

    def _on_step_end(self, optimizer: torch.optim.Optimizer, args: object, kwargs: object) -> None:
        if not self._optimizers.single and not self._ends_iteration:
            return
        self._ends_iteration = False
        step = self.step
        self.step += 1
        n = self._train_scalars
        if n:
            if n == self._scalars_per_step:  # the usual count: `_count_scalars`' answer cannot change
                self._train_scalars = 0
                self._scalar_counts[n] += 1
            else:
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
        self._forward.arm(self.is_saved_step(), ends=self._paths.keeps_activations)
        self._forward.watch(self._needs_forward(self.step))

    def _count_scalars(self) -> None:
        """A step was counted: learn how many train scalars a step has, the most common count (a spell needs
        twice that many). Not the most: steps skipped by a loss scaler before the first counted one, or an
        extra scalar once per epoch, would inflate it and make a later spell count too few iterations."""
        n, self._train_scalars = self._train_scalars, 0
        seen = self._scalar_counts
        c = seen[n] = seen.get(n, 0) + 1
        if n != self._scalars_per_step and c > seen.get(self._scalars_per_step, 0):
            self._scalars_per_step = n
            self._blind_after_scalars = 2 * n
