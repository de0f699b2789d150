"""The forward hooks `Hook` puts on the user's modules, each installed only while it is needed.

Any hook on a module sends every call of it down torch's slow path (~8 us a training step on the
benchmark's CPU, more than the rest of the hook costs on a step not saved). So the activation
forward hooks, and the registered modules' forward hooks that tell their forward returned (on the
GPU path, which reads the activations kept until then), are there for saved iterations only (`arm`), the registered modules' forward
pre-hook, which tells that an iteration started, for the iterations that need it (`watch`; the
hook decides which), and the pre-hooks that number the modules in the first training forward
(`CapturePlan.module_order`) until that forward is over (`finish_order`). What the hooks do is
the hook bodies', handed in.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from trainguard.capture.torch._plan import Activation, CapturePlan
from trainguard.store import writer

ForwardPreHook = Callable[[nn.Module, object], None]
RootPreHook = Callable[[nn.Module, tuple[object, ...], dict[str, object]], None]
"""The registered modules' pre-hook: it sees the keyword arguments too (a model's inputs, `_inputs`)."""
ForwardHook = Callable[[nn.Module, object, object], None]


class ForwardHooks:
    """The registered modules and the forward hooks installed on them and their submodules."""

    def __init__(
        self,
        plan: CapturePlan,
        *,
        on_forward: RootPreHook,
        on_activation: Callable[[Activation], ForwardHook],
        on_forward_end: ForwardHook,
    ) -> None:
        self.plan = plan
        self._on_forward = on_forward
        self._on_activation = on_activation
        self._on_forward_end = on_forward_end
        self.end_handles: list[RemovableHandle] = []
        """The registered modules' forward hooks, installed with the activation hooks (`arm`)."""
        self.roots: list[nn.Module] = []
        """The registered modules: their training forward starts an iteration (the hook's `_on_forward`)."""
        self.root_handles: list[RemovableHandle] = []
        """Their forward pre-hooks, installed only for iterations that need them (`watch`)."""
        self.order_handles: list[RemovableHandle] = []
        """Forward pre-hooks that number the modules in the first training forward, then go (`finish_order`)."""
        self.armed = False
        self.compiled = False
        """A registered module is `torch.compile`d: hooks inside it run eagerly (`_eager`), not traced."""

    def add(self, module: nn.Module, modules: dict[str, nn.Module]) -> None:
        """Watch a registered module's forward; number its submodules that own captured tensors in the first
        training forward (`modules`: its named modules)."""
        self.roots.append(module)
        self.compiled |= hasattr(module, "_orig_mod")  # torch.compile's OptimizedModule
        self.watch(False)
        self.watch(True)  # the new module too; the next optimizer step drops what is not needed
        order = self.plan.module_order
        owners = {p.module for p in self.plan.params} | {a.name for a in self.plan.activations}
        for name, m in modules.items():
            if name in owners and name not in order:
                self.order_handles.append(m.register_forward_pre_hook(self._eager(self._note_order(name))))

    def arm(self, on: bool, *, ends: bool = False, force: bool = False) -> None:
        """Install activation hooks for a saved iteration, remove them otherwise (no cost on other steps); with
        `ends`, the registered modules' forward hooks too (the path keeps activations until the forward returns)."""
        if on == self.armed and (on and ends) == bool(self.end_handles) and not force:
            return
        self.armed = on
        for act in self.plan.activations:
            if on and act.handle is None:
                act.handle = act.module.register_forward_hook(self._eager(self._on_activation(act)))
            elif not on and act.handle is not None:
                act.handle.remove()
                act.handle = None
        for h in self.end_handles:
            h.remove()
        self.end_handles = (
            [m.register_forward_hook(self._eager(self._on_forward_end)) for m in self.roots]
            if on and ends
            else []
        )

    def watch(self, on: bool) -> None:
        """Install (or remove) the forward pre-hook of every registered module."""
        if on and not self.root_handles:
            self.root_handles = [
                m.register_forward_pre_hook(self._on_forward, with_kwargs=True) for m in self.roots
            ]
        elif not on:
            for h in self.root_handles:
                h.remove()
            self.root_handles = []

    def finish_order(self, w: writer.RankWriter | None) -> None:
        """After the first training forward: drop the numbering hooks, give the weights and biases their module's
        `order` (gradients and activations are defined later, with it)."""
        for h in self.order_handles:
            h.remove()
        self.order_handles = []
        if w is not None:
            self.plan.annotate_order(w)

    def remove(self) -> None:
        """Remove every forward hook (capture failed or closed)."""
        for h in self.order_handles:
            h.remove()
        self.order_handles = []
        self.watch(False)
        self.arm(False, force=True)

    def _eager(self, hook: Callable[..., None]) -> Callable[..., None]:
        """`hook` as dynamo must call it inside a compiled module: run eagerly at a graph break, never traced
        (tracing the hook's bookkeeping would fail or bake it into the graph); unchanged otherwise."""
        if not self.compiled:
            return hook
        return torch.compiler.disable(hook)  # type: ignore[no-untyped-call,no-any-return]

    def _note_order(self, name: str) -> ForwardPreHook:
        order = self.plan.module_order

        def hook(module: nn.Module, args: object) -> None:
            if module.training and name not in order:
                order[name] = len(order)

        return hook
