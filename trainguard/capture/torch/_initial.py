"""The initial-weights record: each captured weight and bias read once, before any optimizer update.

A saved step's parameters are read in the optimizer's post-hook, after its update, so the first
saved step's weight rows have already moved once (a large learning rate's first update looks like
a bad init there). `InitialWeights` hands `_paths.Paths.stage` every captured parameter once, in the
optimizer's pre-hook of the first saved step after the parameter was registered (step 0 for a model
registered before training), defining its record `init/<name>` (collection `initial`:
`run_format.INITIAL_COLLECTION`) in the catalogue then; the path that takes the step reads them
with its other tensors (`MultiPath.read_initial`, else `SavedStep.reduce_now`: the C kernel in
place or torch ops), so the record is a row of that step like any other. No update history is
involved: its update_l2 and distance_l2 are NaN. Later saved steps pay one comparison (`due`).
"""

from __future__ import annotations

import torch

from trainguard.capture.torch._plan import CapturePlan
from trainguard.store import run_format, writer


class InitialWeights:
    """Which captured parameters still need their initial-weights record; defines it when they get it."""

    def __init__(self, plan: CapturePlan, w: writer.RankWriter) -> None:
        self.plan = plan
        self._writer = w
        self.seen = 0
        """How many of the plan's parameters (`CapturePlan.params`, only ever appended to) were handed out."""
        self._recorded: set[int] = set()
        """Ids of the records defined so far: a parameter registered again keeps the record it has."""

    def due(self) -> bool:
        """Whether a parameter was registered since the last `take` (one comparison: asked at every saved step)."""
        return self.seen != len(self.plan.params)

    def take(self) -> list[tuple[int, torch.Tensor]]:
        """The (record id, tensor to read) of each captured parameter registered since the last call, its record
        defined with the parameter's catalogue entry (shape, module, shard); none for a parameter that is not
        read (its collection not captured, an empty shard here) or already has one. Read them before the update."""
        params, self.seen = self.plan.params[self.seen :], len(self.plan.params)
        out: list[tuple[int, torch.Tensor]] = []
        for p in params:
            x = p.param
            if p.tid is None or not x.numel():
                continue
            info = self._writer.info(p.tid)
            tid = self._writer.define(
                run_format.initial_name(p.name),
                collection=run_format.INITIAL_COLLECTION,
                shape=info.shape,
                dtype=str(x.dtype).removeprefix("torch."),
                module=info.module,
                module_type=info.module_type,
                trainable=info.trainable,
                shard=info.shard,
            )
            if tid not in self._recorded:
                self._recorded.add(tid)
                out.append((tid, x.detach()))
        return out
