"""Same data on every rank: the evaluator's cross-rank check that the followed ranks train on different data.

A data-parallel job whose ranks all read the same batches (no `DistributedSampler`, or one that every rank
seeds and shards alike) trains like one rank at the cost of many. The rules cannot see it: each judges one
rank in isolation. This check sits beside them in the evaluator, which follows several ranks (a pod's ranks
in the sidecar, every rank in `trainguard run` and `evaluate`): at each saved step that two followed ranks
both have, it compares what depends on the rank's own batch, the train losses (scalars whose name says
"loss") and the statistics (mean, std, abs mean, l2) of the first activation in execution order (it comes
before any dropout; DDP keeps the weights equal, so equal inputs give equal activations). Ranks on different
batches differ there by their sampling noise (far above 1e-5 of the value); ranks on the same batches agree
to float noise (the same operations on the same numbers). An activation that differs clears a loss that
agrees (a script that averages its loss over the ranks before recording it). When the lowest followed rank
and another agree at `STEPS_NEEDED` consecutive common steps, across which the values themselves change
(a loss stuck at one value agrees whatever the data), `SameData` returns one `same_data_on_ranks` finding,
with the steps, the values and the ranks; `judging.Judge` hands it to the verdict state machine.

Bounded: a few values per rank for the last `KEPT_STEPS` steps. Not checkpointed: a restarted evaluator
counts again from its next steps (the finding, once made, is restored with the statuses).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from trainguard.api.enums import Severity
from trainguard.rules.base import Finding, fmt
from trainguard.rules.step_view import COL, StepView

CHECK = "same_data_on_ranks"
"""The check's name, shown beside the rules (its status and finding), like `data_gap`."""
HINT = (
    "give each rank its own part of the data: a DistributedSampler(dataset, num_replicas=world_size, rank=rank) "
    "with sampler.set_epoch(epoch) each epoch, or shard the stream by rank; with the same data on every rank the "
    "job trains like one rank and the effective batch is not what it seems"
)
STEPS_NEEDED = 5
"""Consecutive common saved steps at which two ranks must agree (50 training steps at save_interval 10)."""
RTOL = 1e-5
"""Relative agreement that counts as equal: float noise of the same computation, far below the sampling noise
of different batches."""
KEPT_STEPS = 64
"""Steps of each rank kept while waiting for the other ranks to reach them."""
_ACTIVATION_COLUMNS = ("mean", "std", "abs_mean", "l2")


@dataclass
class _Pair:
    """Agreement between the lowest followed rank and one other."""

    steps: list[int] = field(default_factory=list)
    """The consecutive common steps (newest last) at which they agreed, at most STEPS_NEEDED."""
    values: list[dict[str, float]] = field(default_factory=list)
    """The lower rank's evidence at each of those steps."""


class SameData:
    """Compares the data-dependent values of the followed ranks at their common saved steps."""

    def __init__(self) -> None:
        self._kept: dict[int, dict[int, dict[str, float]]] = {}
        """Evidence by rank, then step (the last KEPT_STEPS steps of each rank)."""
        self._pairs: dict[int, _Pair] = {}
        """Agreement of each other rank with the lowest one seen."""
        self.found = False
        """Whether the finding was made (once per evaluation)."""
        self._names: tuple[str, ...] = ()
        self._first_activation: int | None = None
        """The row of the first activation in execution order of views with `_names`."""

    def add(self, view: StepView) -> Finding | None:
        """Take one rank's view; return the finding when this view completes the evidence, else None."""
        if self.found or not view.names:
            return None
        if view.names is not self._names and view.names != self._names:  # one tuple per catalogue layout
            self._names = view.names
            acts = view.rows(collections=("activations",))
            self._first_activation = int(acts[0]) if len(acts) else None
        evidence = _evidence(view, self._first_activation)
        if not evidence:
            return None
        kept = self._kept.setdefault(view.rank, {})
        kept[view.step] = evidence
        if len(kept) > KEPT_STEPS:
            del kept[min(kept)]
        low = min(self._kept)
        others = [r for r in self._kept if r != low] if view.rank == low else [view.rank]
        for rank in others:
            finding = self._compare(low, rank, view.step)
            if finding is not None:
                self.found = True
                return finding
        return None

    def _compare(self, low: int, rank: int, step: int) -> Finding | None:
        a, b = self._kept[low].get(step), self._kept[rank].get(step)
        if a is None or b is None:
            return None
        pair = self._pairs.setdefault(rank, _Pair())
        if pair.steps and step <= pair.steps[-1]:
            return None  # compared already (a step that came in two views)
        common = a.keys() & b.keys()
        if not common or not all(_close(a[k], b[k]) for k in common):
            pair.steps, pair.values = [], []
            return None
        pair.steps.append(step)
        pair.values.append({k: v for k, v in a.items() if k in common})
        del pair.steps[:-STEPS_NEEDED], pair.values[:-STEPS_NEEDED]
        if len(pair.steps) < STEPS_NEEDED or not _changes(pair.values):
            return None
        return self._finding(low, rank, pair)

    def _finding(self, low: int, rank: int, pair: _Pair) -> Finding:
        agreeing = sorted(r for r, p in self._pairs.items() if len(p.steps) >= STEPS_NEEDED)
        shown = ", ".join(
            f"{k} {fmt(pair.values[0][k])} -> {fmt(pair.values[-1][k])}" for k in list(pair.values[-1])[:3]
        )
        many = len(agreeing) > 1
        ranks = f"rank{'s' if many else ''} {', '.join(map(str, agreeing))} train{'' if many else 's'}"
        message = (
            f"{ranks} on the same data as rank {low}: at the {len(pair.steps)} saved steps "
            f"{', '.join(map(str, pair.steps))} their train losses and first activation agree to within "
            f"{fmt(RTOL)} of their values, which change from step to step ({shown}, on each rank), where "
            "different batches differ by their sampling noise"
        )
        return Finding(
            rule=CHECK, severity=Severity.WARNING, step=pair.steps[-1], rank=rank,
            message=f"{message}; {HINT}", hint=HINT, value=float(len(pair.steps)), threshold=float(STEPS_NEEDED),
        )  # fmt: skip


def _evidence(view: StepView, row: int | None) -> dict[str, float]:
    """The values of a view that depend on the rank's own batch: train losses, the statistics of the first
    activation (`row`; finite ones only)."""
    out = {k: float(v) for k, v in view.scalars.items() if "loss" in k.lower()}
    if row is not None:
        name = view.names[row]
        for c in _ACTIVATION_COLUMNS:
            out[f"{name} {c}"] = float(view.stats[row, COL[c]])
    return {k: v for k, v in out.items() if math.isfinite(v)}


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= RTOL * max(abs(a), abs(b))


def _changes(values: list[dict[str, float]]) -> bool:
    """Whether some value changed across the steps by more than the agreement tolerance."""
    return any(not _close(values[0][k], v[k]) for k in values[0] for v in values[1:] if k in v)
