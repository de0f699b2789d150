"""The registered optimizers: which of their steps ends a training iteration, and which steps go unseen.

`Hook.register_optimizer` hands every optimizer here. The hook counts one step per training
iteration, whatever the number of optimizers: an iteration ends at the optimizer step after which
every live optimizer has stepped since the previous end (`Optimizers.begin`, in the pre-hook, so
the path can stage that step). Live means registered, not replaced (a later optimizer sharing a
parameter with it replaces it: its hooks go) and not garbage-collected. An optimizer that does
not step (never did, or stopped) is waited for until another one has stepped
`MAX_STEPS_PER_ITERATION` times in the iteration, then set aside until it steps again. With one optimizer every step ends
an iteration, at the cost of one attribute test. Steps that change captured parameters without
being counted (an optimizer that is not registered, or was replaced) are `Blindness`'s.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.utils.hooks import RemovableHandle

MAX_STEPS_PER_ITERATION = 100
"""Steps one optimizer may take in an iteration while another live optimizer waits (a WGAN critic's
100 steps per generator step at the start of training); beyond them the waiting ones are set aside
until they step again, so an optimizer that is no longer stepped cannot stop the count."""

StepHook = Callable[[torch.optim.Optimizer, object, object], None]


@dataclass(eq=False)
class _Entry:
    """One registered optimizer, held weakly (the script owns it)."""

    ref: weakref.ref[torch.optim.Optimizer]
    name: str
    """Its class name, for messages."""
    params: frozenset[int]
    """`id()` of the parameters it owns (to find the optimizer a new one replaces)."""
    handles: list[RemovableHandle] = field(default_factory=list)
    in_iteration: int = 0
    """Its steps in the iteration in progress."""
    set_aside: bool = False
    """Not waited for (it never stepped, or stopped stepping) until it steps again."""


def param_ids(optimizer: torch.optim.Optimizer) -> frozenset[int]:
    """`id()` of every parameter of `optimizer`'s groups."""
    return frozenset(id(p) for group in optimizer.param_groups for p in group["params"])


class Optimizers:
    """The live registered optimizers and the iteration in progress."""

    def __init__(self) -> None:
        self.live: dict[int, _Entry] = {}
        """By `id()` of the optimizer (the global step hook reads it inline, as `owns` does)."""
        self.single = True
        """At most one live optimizer: each of its steps ends an iteration (the per-step fast path)."""

    def __bool__(self) -> bool:
        return bool(self.live)

    def register(self, optimizer: torch.optim.Optimizer, *, pre: StepHook, post: StepHook) -> list[str]:
        """Hook `optimizer`'s steps; it replaces every live optimizer that shares a parameter with it (their
        hooks go). Registering a live optimizer again changes nothing. Return a description of each replaced."""
        self._prune()
        if id(optimizer) in self.live:
            return []
        params = param_ids(optimizer)
        replaced = [e for e in self.live.values() if e.params & params]
        for e in replaced:
            self._drop(e)
        entry = _Entry(ref=weakref.ref(optimizer), name=type(optimizer).__name__, params=params)
        entry.handles = [optimizer.register_step_pre_hook(pre), optimizer.register_step_post_hook(post)]
        self.live[id(optimizer)] = entry
        self._reset_iteration()
        self.single = len(self.live) == 1
        return [f"{e.name} with {len(e.params)} parameters" for e in replaced]

    def owns(self, optimizer: torch.optim.Optimizer) -> bool:
        """Whether `optimizer` is live (registered and not replaced)."""
        e = self.live.get(id(optimizer))
        return e is not None and e.ref() is optimizer

    def begin(self, optimizer: torch.optim.Optimizer) -> bool:
        """In `optimizer`'s pre-hook: return whether this step ends the iteration in progress."""
        if self.single:
            return True
        self._prune()
        entry = self.live.get(id(optimizer))
        if entry is None:
            return False
        entry.set_aside = False
        entry.in_iteration += 1
        waiting = self._waiting(entry)
        if waiting and entry.in_iteration > MAX_STEPS_PER_ITERATION:
            for e in waiting:
                e.set_aside = True  # it does not step (any more): it must not stop the count
            waiting = []
        if waiting:
            return False
        self._reset_iteration()
        return True

    def remove(self) -> None:
        """Remove every optimizer's hooks (the hook closed or failed)."""
        for e in list(self.live.values()):
            self._drop(e)
        self.single = True

    def _waiting(self, entry: _Entry) -> list[_Entry]:
        return [e for e in self.live.values() if e is not entry and not e.in_iteration and not e.set_aside]

    def _reset_iteration(self) -> None:
        for e in self.live.values():
            e.in_iteration = 0

    def _drop(self, entry: _Entry) -> None:
        for h in entry.handles:
            h.remove()
        self.live = {k: e for k, e in self.live.items() if e is not entry}

    def _prune(self) -> None:
        """Forget optimizers the script let go (garbage-collected): they step no more."""
        dead = [e for e in self.live.values() if e.ref() is None]
        for e in dead:
            self._drop(e)
        if dead:
            self.single = len(self.live) <= 1
