"""What each registered optimizer does to its parameters: its class, each group's hyperparameters and members.

`Stepping.register_optimizer` hands every registered optimizer to `ParamGroups.register`, which annotates the
catalogue entry of each captured parameter it holds with the optimizer's class and the parameter's group
(`run_format.GROUP_PREFIX`, format 2.5). `Scalars.add_lr` calls `record` at each saved step: it writes a group's
hyperparameters (`run_format.GROUP_HYPERPARAMETERS`) as train scalars `group/<k>.<g>/<name>` of collection
"optimizer" when one differs from the value last written, so a constant learning rate is written once and a
schedule's at the saved steps where it moved; a saved step otherwise costs a comparison of a few floats per group.
Groups added later (`add_param_group`) are annotated at the next saved step. Rules read these records to tell a
parameter frozen by design (its group's learning rate is 0) from one whose update is lost.

Fail-open on its own: an error here is logged once and stops these records only, never the hook or training.
"""

from __future__ import annotations

import logging
import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from trainguard.capture.torch._plan import Param
from trainguard.store import run_format, writer

log = logging.getLogger(__name__)

Values = dict[str, float]


class ScalarSink(Protocol):
    """Where a group's scalar goes (`_step.Scalars.add`)."""

    def __call__(self, step: int, name: str, value: float, *, mode: str, collection: str | None) -> None: ...


def hyperparameters(group: dict[str, object]) -> Values:
    """The recorded hyperparameters of one parameter group that it has (a tensor learning rate only on the CPU:
    reading one on a device would synchronise it)."""
    out: Values = {}
    for key in ("lr", "initial_lr", "eps", "momentum", "weight_decay"):
        x = _number(group.get(key))
        if x is not None:
            out[key] = x
    betas = group.get("betas")
    if isinstance(betas, tuple | list) and len(betas) == 2:
        for key, b in zip(("beta1", "beta2"), betas, strict=True):
            x = _number(b)
            if x is not None:
                out[key] = x
    nesterov = group.get("nesterov")
    if isinstance(nesterov, bool):
        out["nesterov"] = float(nesterov)
    return out


def _number(x: object) -> float | None:
    if type(x) is float:  # the usual case, asked for several keys of every group at each saved step
        return x
    if isinstance(x, torch.Tensor):
        return float(x.item()) if x.is_cpu and x.numel() == 1 else None
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x)


@dataclass(eq=False)
class _Optimizer:
    """One registered optimizer, held weakly (the script owns it)."""

    ref: weakref.ref[torch.optim.Optimizer]
    index: int
    """Its place in registration order: the k of its groups' `<k>.<g>`."""
    written: list[Values] = field(default_factory=list)
    """Per group: the values last written (a group not written yet has none)."""
    annotated: tuple[int, int] = (-1, -1)
    """(groups, captured parameters) when its groups' members were last annotated."""


class ParamGroups:
    """The registered optimizers' groups: their members in the catalogue, their hyperparameters as scalars."""

    def __init__(self, w: writer.RankWriter, params: Sequence[Param]) -> None:
        self._writer = w
        self._params = params
        """The capture plan's parameters (the list grows as modules are registered)."""
        self._optimizers: list[_Optimizer] = []
        self._count = 0
        self._failed = False

    def register(self, optimizer: torch.optim.Optimizer) -> None:
        """Follow `optimizer`'s groups from the next saved step on (registering it again changes nothing)."""
        if self._failed or any(o.ref() is optimizer for o in self._optimizers):
            return
        self._optimizers = [o for o in self._optimizers if o.ref() is not None]
        self._optimizers.append(_Optimizer(ref=weakref.ref(optimizer), index=self._count))
        self._count += 1

    def record(self, step: int, write: ScalarSink) -> None:
        """At saved step `step`: annotate new groups' members, write each hyperparameter that changed."""
        if self._failed:
            return
        try:
            for o in self._optimizers:
                optimizer = o.ref()
                if optimizer is not None:
                    self._record(step, o, optimizer, write)
        except Exception as err:  # noqa: BLE001 - these records must never stop the hook or training
            self._failed = True
            log.warning(
                "trainguard: optimizer groups are no longer recorded (%s: %s)", type(err).__name__, err
            )

    def _record(self, step: int, o: _Optimizer, optimizer: torch.optim.Optimizer, write: ScalarSink) -> None:
        groups = optimizer.param_groups
        if o.annotated != (len(groups), len(self._params)):
            self._annotate(o, optimizer)
        while len(o.written) < len(groups):
            o.written.append({})
        for g, group in enumerate(groups):
            now = hyperparameters(group)
            before = o.written[g]
            if now == before:
                continue  # the common case: nothing changed since the last saved step
            key = f"{o.index}.{g}"
            for name, x in now.items():
                old = before.get(name)
                if old is None or (old != x and not (math.isnan(old) and math.isnan(x))):
                    write(step, run_format.group_scalar(key, name), x, mode="train", collection="optimizer")
            o.written[g] = now

    def _annotate(self, o: _Optimizer, optimizer: torch.optim.Optimizer) -> None:
        """Name the optimizer and group on the catalogue entry of each captured parameter its groups hold."""
        cls = type(optimizer).__name__
        tids = {id(p.source): p.tid for p in self._params if p.tid is not None}
        for g, group in enumerate(optimizer.param_groups):
            for p in group["params"]:
                tid = tids.get(id(p))
                if tid is not None:
                    self._writer.annotate(tid, optimizer=cls, param_group=f"{o.index}.{g}")
        o.annotated = (len(optimizer.param_groups), len(self._params))
