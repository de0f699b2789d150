"""Training that goes on without the hook counting a step: where the hook goes blind.

The hook puts one global optimizer post-hook on torch (`torch.optim.optimizer.register_optimizer_step_post_hook`)
and hands here each step of an optimizer that is not live in `_optimizers.Optimizers` (never
registered, or replaced) but owns a captured parameter; and (`no_steps`) train scalars that keep
coming while a registered module trains and no step is counted. Those steps are counted in iterations as
the hook counts its own: a new one starts when an optimizer steps again, or when the optimizers of
the one in progress are gone (an optimizer re-created per epoch); several stepping in turn share
one. One such iteration between two counted steps is tolerated (a replaced optimizer still stepped
beside its successor: the parameters are still checked at each counted step); a second opens a
blind spell "since step N", N being the first step not counted, which closes at the next counted
step. Scalars count in iterations of the train scalars a counted step usually has (the most common count: a
loop with gradient accumulation records several); a spell needs twice that many. While it lasts a small record
`blind` = int64[2] (since, unchecked) goes to the writer at its second iteration and every `MARK_EVERY` after (the
evaluator turns it into a `data_gap` finding during the run); END.json gets the totals. A spell of train scalars
alone (no optimizer of captured parameters stepped at all: a loss scaler or an inf check that skips every step)
also writes `no_step` = int64[2] (since, iterations) beside each marker and at close, which the rule
`optimizer_not_stepping` judges.
"""

from __future__ import annotations

import logging
import weakref

import numpy as np
import torch

from trainguard.store import run_format, writer

log = logging.getLogger(__name__)

RECORD = run_format.BLIND_RECORD
"""The writer record stream of the marker (segment member `extra.blind`, int64[n, 2]: since, unchecked)."""
NO_STEP_RECORD = run_format.NO_STEP_RECORD
"""The record stream of a spell without any optimizer step (segment member `extra.no_step`, int64[n, 2]: since,
iterations)."""

MARK_EVERY = 10
"""Uncounted iterations between two markers of one blind spell (the first comes at its second step): a saved
step's worth at the default save interval, so a rule judging the spell sees it grow as it would see steps."""


class Blindness:
    """The blind spells of one hook: the one in progress and the unchecked steps of all of them."""

    def __init__(self, w: writer.RankWriter) -> None:
        self._writer = w
        self._round: weakref.WeakSet[torch.optim.Optimizer] = weakref.WeakSet()
        """The optimizers that stepped in the uncounted iteration in progress."""
        self._iterations = 0
        """Uncounted iterations of optimizers since the last counted step."""
        self._idle_iterations = 0
        """Iterations' worth of train scalars recorded since the last counted step, beyond the one in progress."""
        self.pending = False
        """Something uncounted came since the last counted step (the hook's per-step test)."""
        self.since: int | None = None
        """The first step not counted of the blind spell in progress, None while steps are counted."""
        self._marked = 0
        """The unchecked steps of the spell in progress that the last marker gave."""
        self._closed_unchecked = 0
        self._warned = False

    @property
    def unchecked(self) -> int:
        """Steps not counted in all blind spells so far, the one in progress included."""
        return self._closed_unchecked + (self._count() if self.since is not None else 0)

    def uncounted(self, optimizer: torch.optim.Optimizer, *, step: int) -> None:
        """A step of `optimizer` (not registered, or replaced) changed captured parameters; `step`: the steps
        counted so far (the number the next counted step gets)."""
        if optimizer in self._round or not self._round:
            self._round = weakref.WeakSet()
            self._iterations += 1
        self._round.add(optimizer)
        self._note(
            step,
            f"a {type(optimizer).__name__} that is not registered with the hook (or was replaced) steps captured "
            "parameters",
        )

    def no_steps(self, iterations: int, *, step: int) -> None:
        """Train scalars came, `iterations` iterations' worth, while a registered module trains, and no step was
        counted (the optimizer did not step: a hand-written update, steps skipped)."""
        self._idle_iterations = iterations
        self._note(
            step, f"train scalars kept coming ({iterations} iterations' worth) and no optimizer step came"
        )

    def counted(self) -> None:
        """A step was counted again: the blind spell in progress, if any, is over."""
        if self.since is not None:
            self._closed_unchecked += self._count()
            self.since = None
        self._round = weakref.WeakSet()
        self._iterations = self._idle_iterations = self._marked = 0
        self.pending = False

    def end(self, *, step: int) -> None:
        """At close: give the writer the totals for END.json (`unchecked_steps`, `blind_since_step`), and a spell
        without optimizer steps its final count; `step`: the steps counted so far."""
        if self.since is not None and self._count() != self._marked:
            self._mark(step, self.since)
        self._writer.unchecked_steps = self.unchecked
        self._writer.blind_since_step = self.since

    def _count(self) -> int:
        return max(self._iterations, self._idle_iterations)

    def _note(self, step: int, why: str) -> None:
        """Something uncounted came: open a blind spell at its second iteration; mark it now and then."""
        self.pending = True
        count = self._count()
        if count < 2:
            return
        if self.since is None:
            self.since = step
            self._warn(step, why)
        if not self._marked or count - self._marked >= MARK_EVERY:
            self._mark(step, self.since)

    def _mark(self, step: int, since: int) -> None:
        """Write the spell's marker (and, when no optimizer of captured parameters stepped in it, its `no_step`
        record) at the last counted step, `step` - 1."""
        count = self._marked = self._count()
        at = max(step - 1, 0)
        self._writer.write_record(at, RECORD, np.array([since, count], np.int64))
        if not self._iterations:
            self._writer.write_record(at, NO_STEP_RECORD, np.array([since, self._idle_iterations], np.int64))

    def _warn(self, step: int, why: str) -> None:
        if self._warned:
            return
        self._warned = True
        advice = (
            "if a loss scaler or an inf check skips the steps, the weights stand still while it lasts (the rule "
            "optimizer_not_stepping warns when it goes on); else call hook.register_optimizer(optimizer) for the "
            "optimizer that updates the model"
            if not self._iterations
            else "call hook.register_optimizer(optimizer) for every optimizer the script creates"
        )
        log.warning("trainguard: blind since step %d: %s, and the hook counts no step; %s", step, why, advice)
