"""The registered modules' inputs on saved steps: which tensors are read, under which names (`input/<arg>`).

The registered modules' forward pre-hook (`_forward.ForwardHooks.watch`) hands the hook the args and
kwargs of each training forward; on a saved iteration `Inputs.take` picks the tensors passed directly
(not inside lists or dicts), at most `MAX_INPUTS` per module, names them after the forward's
parameters, defines them in the catalogue (collection `inputs`) the first time and returns the
floating ones to read. The hook reads them as it reads an activation (`_paths.Paths.add_activation`):
no copy where the path reads in place, one op on the GPU path. Integer and boolean inputs (token
ids, indices, masks) are defined with the reason and never read: their moments say nothing of the
data's scale. Only the first training forward of a module in an iteration is read (gradient
accumulation runs several).
"""

from __future__ import annotations

import inspect

import torch
from torch import nn

from trainguard.capture.torch import _kinds
from trainguard.store import writer

MAX_INPUTS = 8
"""Tensors read per module and forward at most: a forward taking more is not one of a model's inputs."""

INTEGER_INPUT = "integer input (token ids, indices, masks): its moments say nothing of the data's scale"
"""The catalogue's `skipped` of an integer or boolean input."""


class Inputs:
    """Names, catalogue ids and the last step read of each registered module's inputs."""

    def __init__(self) -> None:
        self._names: dict[int, list[str]] = {}
        """id of a registered module -> its forward's positional parameter names."""
        self._tids: dict[str, int | None] = {}
        """input name -> its catalogue id, None for an input that is not read (`skipped`)."""
        self._taken: dict[int, int] = {}
        """id of a registered module -> the step whose inputs were last taken."""

    def take(
        self,
        module: nn.Module,
        place: int,
        args: tuple[object, ...],
        kwargs: dict[str, object],
        *,
        step: int,
        w: writer.RankWriter,
    ) -> list[tuple[int, torch.Tensor]]:
        """The (catalogue id, tensor) of each floating input of `module`'s forward to read at saved step `step`,
        defining new names; empty when this step's were taken already. `place`: the module's place among the
        registered ones (the first's inputs are `input/<arg>`, the k-th's `input/<k>.<arg>`)."""
        key = id(module)
        if self._taken.get(key) == step:
            return []
        self._taken[key] = step
        names = self._names.get(key)
        if names is None:
            names = self._names[key] = _positional_names(module)
        prefix = f"input/{place}." if place else "input/"
        found = [(names[i] if i < len(names) else f"arg{i}", a) for i, a in enumerate(args)]
        found += list(kwargs.items())
        out: list[tuple[int, torch.Tensor]] = []
        for name, value in found:
            if not isinstance(value, torch.Tensor):
                continue
            if len(out) == MAX_INPUTS:
                break
            tid = self._define(prefix + name, value, w)
            if tid is not None:
                t = _kinds.local(value).detach()
                if t.numel():
                    out.append((tid, t))
        return out

    def _define(self, name: str, t: torch.Tensor, w: writer.RankWriter) -> int | None:
        """The id to read `name` under, defining it from the first tensor seen; None when it is not read."""
        if name in self._tids:
            return self._tids[name]
        integer = not t.is_floating_point() and not t.is_complex()
        skipped = INTEGER_INPUT if integer else _kinds.unreadable(t)
        tid = w.define(
            name,
            collection="inputs",
            shape=list(t.shape),
            dtype=str(t.dtype).removeprefix("torch."),
            shard=None if skipped else _kinds.shard_info(t),
            skipped=skipped,
        )
        self._tids[name] = None if skipped else tid
        return self._tids[name]


def _positional_names(module: nn.Module) -> list[str]:
    """The positional parameter names of the model's forward, looking through torch.compile and DDP wrappers
    (whose own forward takes `*args`); empty when they cannot be told."""
    inner = getattr(module, "_orig_mod", module)
    if isinstance(inner, nn.parallel.DistributedDataParallel):
        inner = getattr(inner.module, "_orig_mod", inner.module)
    try:
        params = inspect.signature(inner.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in kinds]
