"""Sharded tensors across the followed ranks: the rules see the full tensor, never a part as the whole.

A rank holding part of a tensor (FSDP2, tensor parallelism: `shard` in its catalogue) wrote its part's
statistics only. `ShardMerger` sits between the view builder and the rules (`evaluator.py` calls it).
For a tensor whose parts all lie on followed ranks, the *owner* (the lowest rank holding a part, copy 0)
has its views held until every part of that step has arrived, then gets the merged row in place of its
part (`store/shards.merge`, the one home of the arithmetic); the other holders' views lose that row (its
part is in the owner's). A held step whose part can no longer come (its rank ended, or wrote later steps
without it) or whose rank is more than `max_held_views` views behind is released without those tensors and
reported (`Gap`): the merged tensor is not judged there, rather than judged on part of it. A tensor with
parts on ranks nobody here follows (another pod's) is judged per part, with only the columns that hold
for a part as for the whole (count, NaN, Inf, min, max; the others NaN). Held views live in memory only.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

from trainguard.rules.step_view import StepView
from trainguard.store import run_format, shards

MAX_HELD_VIEWS = 256
"""Views of an owner held at most while a part holder lags; past it the oldest is released without the
merged tensors (a gap). Bounds memory; a healthy run's ranks are a segment or two apart."""

PER_PART_COLUMNS = ("count", "nan", "inf", "min", "max")
"""The columns that say of a part what they say of the whole (a NaN or a bound there is one of the tensor)."""

_C = run_format.COLUMN
_NOT_PER_PART = [i for c, i in _C.items() if c not in PER_PART_COLUMNS]

Catalogue = Mapping[int, run_format.TensorInfo]


@dataclass(frozen=True)
class Gap:
    """Sharded tensors not judged at `step` on `owner` because `rank`'s part never came (`why`)."""

    owner: int
    rank: int | None
    step: int
    tensors: tuple[str, ...]
    why: str

    def message(self) -> str:
        shown = ", ".join(self.tensors[:3]) + (", ..." if len(self.tensors) > 3 else "")
        whose = f"rank {self.rank}'s part" if self.rank is not None else "a part"
        return (
            f"{len(self.tensors)} sharded tensors ({shown}) are not judged from step {self.step} on where "
            f"{whose} is missing ({self.why}); the rules see a sharded tensor only once all its parts are there, "
            "never a part as the whole"
        )


@dataclass
class _Plan:
    """What to do with each sharded tensor of the followed ranks, as their catalogues say now."""

    owner: dict[str, int]
    """Merged tensors (every part on a followed rank, or maybe: a followed rank has no catalogue yet) -> owner."""
    holders: dict[str, dict[int, int]]
    """Merged tensor -> {rank: part index} of its copy-0 parts known so far."""
    per_part: set[str]
    """Tensors with parts on ranks not followed here: judged per part on the exact columns."""


class ShardMerger:
    """Holds owners' views until their sharded tensors' parts are all in, and strips parts from the others'."""

    def __init__(self, *, max_held_views: int = MAX_HELD_VIEWS) -> None:
        self.max_held_views = max_held_views
        self._plan = _Plan({}, {}, set())
        self._plan_key: tuple[tuple[int, int], ...] = ()
        self._held: dict[int, deque[StepView]] = {}
        self._parts: dict[tuple[str, int], dict[int, np.ndarray]] = {}
        self._frontier: dict[int, int] = {}
        """Each rank's newest step with tensor statistics read so far."""
        self._reported: set[tuple[int | None, str]] = set()

    # --- what the catalogues say -----------------------------------------------------------------
    def replan(self, catalogues: Mapping[int, Catalogue], followed: Collection[int]) -> None:
        """Classify the sharded tensors by the followed ranks' catalogues (cheap when none changed)."""
        key = tuple((r, id(c)) for r, c in sorted(catalogues.items()))
        if key == self._plan_key:
            return
        self._plan_key = key
        infos: dict[str, list[tuple[int, run_format.ShardInfo]]] = {}
        for rank, cat in catalogues.items():
            for t in cat.values():
                if t.shard is not None and t.shard.of > 1 and t.skipped is None and not t.is_scalar:
                    infos.setdefault(t.name, []).append((rank, t.shard))
        unknown = any(not catalogues.get(r) for r in followed)  # a rank not started yet may hold a part
        plan = _Plan({}, {}, set())
        for name, held in infos.items():
            copy0 = {rank: s.index for rank, s in held if s.replica == 0}
            if not copy0:
                continue
            if set(copy0.values()) >= set(range(held[0][1].of)) or unknown:
                plan.owner[name] = min(copy0)
                plan.holders[name] = copy0
            else:
                plan.per_part.add(name)
        self._plan = plan

    @property
    def per_part(self) -> frozenset[str]:
        """The tensors judged per part (parts on ranks not followed here), as the catalogues say now."""
        return frozenset(self._plan.per_part)

    def holds(self, rank: int) -> bool:
        """Whether views of `rank` are held, waiting for parts."""
        return bool(self._held.get(rank))

    def held_from(self, rank: int) -> int | None:
        """The step of `rank`'s oldest held view (not judged yet), or None."""
        held = self._held.get(rank)
        return held[0].step if held else None

    # --- views in, views out ---------------------------------------------------------------------
    def take(self, rank: int, views: list[StepView]) -> list[StepView]:
        """Take `rank`'s new views (step order): keep their parts for merging, and return the views to judge
        now (an owner's are held, returned later by `release`)."""
        plan = self._plan
        if not plan.owner and not plan.per_part:
            return views
        out: list[StepView] = []
        for view in views:
            if view.names:
                self._frontier[rank] = max(self._frontier.get(rank, view.step), view.step)
            owns = False
            drop: list[int] = []
            for i, name in enumerate(view.names):
                if name in plan.owner:
                    if rank in plan.holders[name]:  # a copy of another rank's part (replica > 0) adds nothing
                        self._parts.setdefault((name, view.step), {})[rank] = view.stats[i]
                    owns = owns or plan.owner[name] == rank
                    if plan.owner[name] != rank:
                        drop.append(i)
            if owns or self._held.get(rank):  # held in order: a later step's view never overtakes a held one
                self._held.setdefault(rank, deque()).append(view)
                continue
            out.append(self._per_part(_without(view, drop)))
        return out

    def release(self, ended: Collection[int], *, final: bool = False) -> tuple[list[StepView], list[Gap]]:
        """The held views whose parts are all in (merged), or whose parts can no longer come (without those
        tensors), in step order per owner; with `final` (the evaluation ends) every held view. `ended`: the
        ranks whose END was seen (they write nothing more)."""
        out: list[StepView] = []
        gaps: list[Gap] = []
        for owner, held in self._held.items():
            while held:
                view = held[0]
                merged, missing = self._merge(
                    owner, view, ended, force=final or len(held) > self.max_held_views
                )
                if merged is None:
                    break
                held.popleft()
                out.append(merged)
                for (rank, why), names in missing.items():
                    if (rank, why) not in self._reported:
                        self._reported.add((rank, why))
                        gaps.append(
                            Gap(owner=owner, rank=rank, step=view.step, tensors=tuple(names), why=why)
                        )
        return out, gaps

    # --- internals -------------------------------------------------------------------------------
    def _merge(
        self, owner: int, view: StepView, ended: Collection[int], *, force: bool
    ) -> tuple[StepView | None, dict[tuple[int | None, str], list[str]]]:
        """The owner's held `view` with its merged rows, and the tensors left out by whose missing part; None
        while a part may still come."""
        plan = self._plan
        rows: dict[int, np.ndarray] = {}
        missing: dict[tuple[int | None, str], list[str]] = {}
        for i, name in enumerate(view.names):
            if plan.owner.get(name) != owner:
                continue
            got = self._parts.get((name, view.step), {})
            size = int(np.prod(view.meta[i].shape))
            ranks = sorted(got)
            steps, merged = shards.merge(
                [np.array([view.step])] * len(ranks), [got[r][None, :] for r in ranks], size
            )
            if steps.size:
                rows[i] = merged[0]
                continue
            why = self._why_missing(name, view.step, got, ended, force=force)
            if why is None:
                return None, {}
            missing.setdefault(why, []).append(name)
        for i, name in enumerate(view.names):
            if plan.owner.get(name) == owner:
                self._parts.pop((name, view.step), None)
        stats = view.stats.copy()
        for i, row in rows.items():
            stats[i] = row
        left_out = [i for i, n in enumerate(view.names) if plan.owner.get(n) == owner and i not in rows]
        return self._per_part(_without(dataclasses.replace(view, stats=stats), left_out)), missing

    def _why_missing(
        self, name: str, step: int, got: Mapping[int, np.ndarray], ended: Collection[int], *, force: bool
    ) -> tuple[int | None, str] | None:
        """Why a part of `name` at `step` will not come (the rank, the reason), or None while it may."""
        lagging = [r for r in self._plan.holders[name] if r not in got]
        for rank in lagging:
            if rank in ended:
                return rank, f"rank {rank} ended"
            if self._frontier.get(rank, -1) > step:
                return rank, f"rank {rank} wrote later steps without it"
        if not force:
            return None
        first = lagging[0] if lagging else None
        return first, f"rank {first} lags too far behind" if first is not None else "its rank never wrote it"

    def _per_part(self, view: StepView) -> StepView:
        """Blank the columns that do not hold for a part as for the whole in rows of tensors judged per part."""
        rows = [i for i, n in enumerate(view.names) if n in self._plan.per_part]
        if not rows:
            return view
        stats = view.stats.copy()
        stats[np.ix_(rows, _NOT_PER_PART)] = np.nan
        return dataclasses.replace(view, stats=stats)


def _without(view: StepView, rows: list[int]) -> StepView:
    """`view` without the tensors at `rows`."""
    if not rows:
        return view
    keep = [i for i in range(len(view.names)) if i not in set(rows)]
    return dataclasses.replace(
        view,
        names=tuple(view.names[i] for i in keep),
        meta=tuple(view.meta[i] for i in keep),
        stats=view.stats[keep],
    )
