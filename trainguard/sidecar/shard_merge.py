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

The Tier-1 data of a merged tensor merge at the steps that have them, as the reader's do (`store/shards`):
its histograms are the parts' summed (exact), its per-unit vectors laid side by side at the parts' row
offsets where every part holds whole rows, or counted over the full width where parts hold blocks of every
row's columns (`S(1)`: exact too). Where a part holds a strided or flat piece, or for an activation, the
owner's view keeps its own part's vectors and names the tensor in
`StepView.per_shard` with why (its rules say "per shard"); so does a tensor judged per part. A histogram
or vector some part lacks at that step is left out, never one part's shown as the whole's.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

from trainguard.rules.step_view import StepView, TensorMeta
from trainguard.store import run_format, shards

MAX_HELD_VIEWS = 256
"""Views of an owner held at most while a part holder lags; past it the oldest is released without the
merged tensors (a gap). Bounds memory; a healthy run's ranks are a segment or two apart."""

PER_PART_COLUMNS = ("count", "nan", "inf", "min", "max")
"""The columns that say of a part what they say of the whole (a NaN or a bound there is one of the tensor)."""

PER_PART_WHY = "this rank's part only: its other parts are on ranks this evaluator does not follow"
"""`StepView.per_shard`'s reason for the Tier-1 data of a tensor judged per part."""

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
    units_why: dict[str, str] = dataclasses.field(default_factory=dict)
    """Merged tensors whose per-unit vectors do not merge -> why (the owner's part is judged)."""
    offsets: dict[str, dict[int, tuple[int, int]]] = dataclasses.field(default_factory=dict)
    """Merged tensors whose per-unit vectors do -> {rank: (its part's first row, elements of a row it holds)} of
    the copy-0 parts."""
    rows: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)
    """Those tensors -> the full tensor's rows (dim 0: the length of its per-unit vectors) and a row's elements."""


@dataclass(frozen=True)
class _Layout:
    """What one rank's views with one tensor set hold of the merged tensors (row numbers)."""

    owned: list[int]
    """Rows of tensors this rank owns (merged into its view)."""
    drop: list[int]
    """Rows of merged tensors another rank owns (left out of this rank's view)."""
    parts: dict[str, int]
    """Merged tensor -> its row, for the copy-0 parts this rank holds."""
    owners: set[int]
    """The owners of those parts (the rank itself when it holds none)."""


class ShardMerger:
    """Holds owners' views until their sharded tensors' parts are all in, and strips parts from the others'."""

    def __init__(self, *, max_held_views: int = MAX_HELD_VIEWS) -> None:
        self.max_held_views = max_held_views
        self._plan = _Plan({}, {}, set())
        self._plan_key: tuple[tuple[int, int], ...] = ()
        self._held: dict[int, deque[StepView]] = {}
        self._parts: dict[int, dict[int, StepView]] = {}
        """Step -> rank -> that rank's view holding parts of merged tensors, until its owners released the step."""
        self._released: dict[int, int] = {}
        """Each owner's newest step released."""
        self._layouts: dict[tuple[int, tuple[str, ...]], _Layout] = {}
        self._cuts: dict[
            tuple[tuple[str, ...], tuple[int, ...]],
            tuple[np.ndarray, tuple[str, ...], tuple[TensorMeta, ...], frozenset[str]],
        ] = {}
        self._maps: dict[tuple[tuple[str, ...], int, tuple[str, ...]], tuple[np.ndarray, np.ndarray]] = {}
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
        infos: dict[str, list[tuple[int, run_format.TensorInfo, run_format.ShardInfo]]] = {}
        for rank, cat in catalogues.items():
            for t in cat.values():
                if t.shard is not None and t.shard.of > 1 and t.skipped is None and not t.is_scalar:
                    infos.setdefault(t.name, []).append((rank, t, t.shard))
        unknown = any(not catalogues.get(r) for r in followed)  # a rank not started yet may hold a part
        plan = _Plan({}, {}, set())
        for name, held in infos.items():
            copy0 = {rank: s.index for rank, _, s in held if s.replica == 0}
            if not copy0:
                continue
            if set(copy0.values()) >= set(range(held[0][2].of)) or unknown:
                # an empty part (FSDP1's piece of none of it, an uneven split) writes no row: neither owns nor waits
                full = {r: s.index for r, _, s in held if s.replica == 0 and math.prod(s.local_shape) > 0}
                plan.holders[name] = full or copy0
                plan.owner[name] = min(plan.holders[name])
                self._plan_units(plan, name, [(r, t, s) for r, t, s in held if s.replica == 0])
            else:
                plan.per_part.add(name)
        self._plan = plan
        self._layouts.clear()
        self._maps.clear()
        self._cuts.clear()

    @staticmethod
    def _plan_units(
        plan: _Plan, name: str, copy0: list[tuple[int, run_format.TensorInfo, run_format.ShardInfo]]
    ) -> None:
        """How merged tensor `name`'s per-unit vectors merge (`shards.units_per_shard`, the reader's rule)."""
        if copy0[0][1].collection not in shards.UNIT_COLLECTIONS:
            return
        owner = plan.owner[name]
        for _, t, s in copy0:
            why = shards.units_per_shard(s, collection=t.collection)
            if why is not None:
                plan.units_why[name] = f"rank {owner}'s part only: {why}"
                return
        plan.offsets[name] = {
            r: (int(s.offset[0]), shards.row_width(s.local_shape)) for r, _, s in copy0 if s.offset
        }
        whole = copy0[0][2].global_shape
        plan.rows[name] = (int(whole[0]), shards.row_width(whole)) if whole else (0, 1)

    @property
    def units_per_shard(self) -> dict[str, str]:
        """The merged tensors whose per-unit vectors are judged per shard (the owner's part), with why."""
        return dict(self._plan.units_why)

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

    def forget(self, rank: int) -> None:
        """`rank` was restarted (a new writer attempt, its rules start over): drop its held views and parts, and
        what it had read, so its new steps are neither merged with nor judged against the old attempt's."""
        self._held.pop(rank, None)
        self._frontier.pop(rank, None)
        self._released.pop(rank, None)
        for parts in self._parts.values():
            parts.pop(rank, None)

    # --- views in, views out ---------------------------------------------------------------------
    def take(self, rank: int, views: list[StepView]) -> list[StepView]:
        """Take `rank`'s new views (step order): keep their parts for merging, and return the views to judge
        now (an owner's are held, returned later by `release`)."""
        if not self._plan.owner and not self._plan.per_part:
            return views
        out: list[StepView] = []
        for view in views:
            layout = self._layout(rank, view.names)
            if view.names:
                self._frontier[rank] = max(self._frontier.get(rank, view.step), view.step)
            # kept while an owner of its parts may still merge this step (a rank may hold parts of several owners')
            if layout.parts and view.step > min(self._released.get(o, -1) for o in layout.owners):
                self._parts.setdefault(view.step, {})[rank] = view  # a reference: rows are not copied
            if layout.owned or self._held.get(rank):  # in order: a later step never overtakes a held one
                self._held.setdefault(rank, deque()).append(view)
                continue
            out.append(self._per_part(self._without(view, layout.drop)))
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
                force = final or len(held) > self.max_held_views
                merged, missing = self._merge(owner, view, ended, force=force)
                if merged is None:
                    break
                held.popleft()
                if (
                    view.names
                ):  # a scalar-only view of a step (its statistics in the next segment) takes no parts
                    self._released[owner] = view.step
                out.append(merged)
                for (rank, why), names in missing.items():
                    if (rank, why) not in self._reported:
                        self._reported.add((rank, why))
                        gaps.append(
                            Gap(owner=owner, rank=rank, step=view.step, tensors=tuple(names), why=why)
                        )
        owners = set(self._plan.owner.values())
        floor = min((self._released.get(o, -1) for o in owners), default=-1)
        for step in [s for s in self._parts if s <= floor]:
            del self._parts[step]
        return out, gaps

    # --- internals -------------------------------------------------------------------------------
    def _layout(self, rank: int, names: tuple[str, ...]) -> _Layout:
        """What `rank`'s views with these tensor names hold of merged tensors (cached per names)."""
        key = (rank, names)
        layout = self._layouts.get(key)
        if layout is None:
            owner, holders = self._plan.owner, self._plan.holders
            parts = {n: j for j, n in enumerate(names) if n in owner and rank in holders[n]}
            layout = _Layout(
                owned=[i for i, n in enumerate(names) if owner.get(n) == rank],
                drop=[i for i, n in enumerate(names) if n in owner and owner[n] != rank],
                parts=parts,
                owners={owner[n] for n in parts} or {rank},
            )
            self._layouts[key] = layout
        return layout

    def _rows_of(
        self, view: StepView, owned: list[int], rank: int, part: StepView
    ) -> tuple[np.ndarray, np.ndarray]:
        """The owner's rows (of `owned`) that `part` (rank's view) holds parts of, and those parts' rows there."""
        key = (view.names, rank, part.names)
        found = self._maps.get(key)
        if found is None:
            where = self._layout(rank, part.names).parts
            pairs = [(i, where[view.names[i]]) for i in owned if view.names[i] in where]
            found = (np.asarray([a for a, _ in pairs], np.int64), np.asarray([b for _, b in pairs], np.int64))
            self._maps[key] = found
        return found

    def _merge(
        self, owner: int, view: StepView, ended: Collection[int], *, force: bool
    ) -> tuple[StepView | None, dict[tuple[int | None, str], list[str]]]:
        """The owner's held `view` with its merged rows, and the tensors left out by whose missing part; None
        while a part may still come."""
        layout = self._layout(owner, view.names)
        owned = layout.owned
        parts = self._parts.get(view.step, {})
        keys: list[np.ndarray] = []
        rows_of: list[np.ndarray] = []
        for rank, part in parts.items():
            mine, theirs = self._rows_of(view, owned, rank, part)
            keys.append(mine)
            rows_of.append(part.stats[theirs])
        sizes = np.zeros(len(view.names), np.int64)
        sizes[owned] = [math.prod(view.meta[i].shape) for i in owned]
        # all of the step's tensors in one merge, keyed by their row (`shards.merge`: the one home of the arithmetic)
        merged_at, merged = shards.merge(keys, rows_of, sizes)
        rows = dict(zip(merged_at.tolist(), merged))
        missing: dict[tuple[int | None, str], list[str]] = {}
        for i in owned:
            if i in rows:
                continue
            name = view.names[i]
            got = {r for r, part in parts.items() if name in self._layout(r, part.names).parts}
            why = self._why_missing(name, view.step, got, ended, force=force)
            if why is None:
                return None, {}
            missing.setdefault(why, []).append(name)
        stats = view.stats.copy()
        for i, row in rows.items():
            stats[i] = row
        left_out = [i for i in owned if i not in rows]
        whole = self._tier1(dataclasses.replace(view, stats=stats), [view.names[i] for i in rows], parts)
        # its parts of tensors another rank owns are in that rank's merged rows: left out here, as from any holder's
        return self._per_part(self._without(whole, sorted(left_out + layout.drop))), missing

    def _tier1(self, view: StepView, merged: list[str], parts: Mapping[int, StepView]) -> StepView:
        """The owner's `view` with the full tensors' histograms and per-unit vectors of the `merged` tensors, from
        the parts' views of its step (`shards.add_hists`, `shards.place_units`): exact, or left out where a part
        lacks them; per-unit vectors that do not merge stay the owner's part, named in `per_shard`."""
        if not any(p.hists or p.units for p in parts.values()):
            return view
        hists, units, notes = dict(view.hists), dict(view.units), dict(view.per_shard)
        kinds = {r: _kinds(p) for r, p in parts.items()}
        count = _C["count"]
        for name in merged:
            held = []  # the parts holding elements (an empty part writes no Tier-1 data and adds none)
            for r, p in parts.items():
                row = self._layout(r, p.names).parts.get(name)
                if row is not None and p.stats[row, count] > 0:
                    held.append((r, p))
            got = [p.hists.get(name) for _, p in held]
            hists.pop(name, None)
            if got and all(h is not None for h in got):
                hists[name] = shards.add_hists(got)  # type: ignore[arg-type]  # none is None
            why = self._plan.units_why.get(name)
            offsets = self._plan.offsets.get(name, {})
            for kind in sorted({k for r, _ in held for k in kinds[r].get(name, ())}):
                if why is not None:
                    notes[name] = why  # the owner's own part, if it has one
                    continue
                vecs = [p.units.get((kind, name)) for _, p in held]
                units.pop((kind, name), None)
                if all(v is not None for v in vecs) and all(r in offsets for r, _ in held):
                    at, widths = zip(*(offsets[r] for r, _ in held))
                    rows, width = self._plan.rows.get(name, (0, 1))
                    full = shards.place_units(vecs, at, rows, widths, width)  # type: ignore[arg-type]
                    if full is not None:
                        units[(kind, name)] = full
        return dataclasses.replace(view, hists=hists, units=units, per_shard=notes)

    def _why_missing(
        self, name: str, step: int, got: Collection[int], ended: Collection[int], *, force: bool
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
        """Blank the columns that do not hold for a part as for the whole in rows of tensors judged per part, and
        name those with Tier-1 data in `per_shard` (a part's histogram and per-unit vectors are its own)."""
        per_part = self._plan.per_part
        rows = [i for i, n in enumerate(view.names) if n in per_part]
        if not rows:
            return view
        stats = view.stats.copy()
        stats[np.ix_(rows, _NOT_PER_PART)] = np.nan
        if not (view.hists or view.units):
            return dataclasses.replace(view, stats=stats)
        tier1 = {n for n in view.hists if n in per_part} | {n for _, n in view.units if n in per_part}
        notes = {**view.per_shard, **dict.fromkeys(tier1, PER_PART_WHY)}
        return dataclasses.replace(view, stats=stats, per_shard=notes)

    def _without(self, view: StepView, rows: list[int]) -> StepView:
        """`view` without the tensors at `rows`, their Tier-1 data included (names and metadata shared by every view
        of that tensor set, as the view builder's are: rules that cache by them stay cheap)."""
        if not rows:
            return view
        key = (view.names, tuple(rows))
        cut = self._cuts.get(key)
        if cut is None:
            gone = set(rows)
            keep = [i for i in range(len(view.names)) if i not in gone]
            cut = (
                np.asarray(keep, np.int64),
                tuple(view.names[i] for i in keep),
                tuple(view.meta[i] for i in keep),
                frozenset(view.names[i] for i in gone),
            )
            self._cuts[key] = cut
        keep_at, names, meta, dropped = cut
        out = dataclasses.replace(view, names=names, meta=meta, stats=view.stats[keep_at])
        if not (view.hists or view.units):
            return out
        return dataclasses.replace(
            out,
            hists={n: h for n, h in view.hists.items() if n not in dropped},
            units={k: v for k, v in view.units.items() if k[1] not in dropped},
        )


def _kinds(view: StepView) -> dict[str, list[str]]:
    """The kinds of per-unit vectors `view` holds, by tensor name."""
    out: dict[str, list[str]] = {}
    for kind, name in view.units:
        out.setdefault(name, []).append(kind)
    return out
