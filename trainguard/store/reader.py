"""`Run`: a whole run as numpy arrays, whatever wrote it.

One interface over every format a run can be in: ranks, steps, the tensor catalogue by
collection, statistic series, scalars by mode, and `follow()`. A `Run` reads through one
`Source` per rank (ours in `source.py`, foreign ones in `foreign/`); which format a root holds
is decided by `runs.open_run`. Series are built from segments loaded once and cached; following
is left to `follow.py`.
A rank written by several attempts (restarted on the same URI) reads as its attempts one after
the other: series hold every attempt's steps in write order (steps start again where an attempt
restarted from an earlier step), each segment resolved with its own attempt's catalogue.
A tensor sharded over ranks (FSDP2, tensor parallelism: each rank wrote its part) reads as the
full tensor, its parts merged by `shards`; a rank's own rows stay readable (`merge=False`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from trainguard.store import errors, run_format, shards
from trainguard.store.backends import Store
from trainguard.store.follow import Follower
from trainguard.store.source import Source, load_catalogue


class Series(NamedTuple):
    """Values of one statistic or scalar over steps; unpacks as `steps, values`."""

    steps: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class OptimizerGroup:
    """One optimizer parameter group as the run records it (format 2.5, `run_format.GROUP_PREFIX`)."""

    key: str
    """`<k>.<g>`: group g of the k-th optimizer registered."""
    optimizer: str | None
    """The optimizer's class (`AdamW`), None when no captured parameter names it."""
    tensors: list[str]
    """The captured parameters it holds."""
    hyperparameters: dict[str, Series]
    """Each recorded hyperparameter (`lr`, `eps`, ...): its value at each saved step where it was written (the
    first saved step after the registration, then where it changed; it holds its value in between)."""


@dataclass
class _Loaded:
    segments: list[run_format.Segment]
    catalogues: dict[str, dict[int, run_format.TensorInfo]]
    """Each writer attempt's newest catalogue, in attempt order."""

    def tensors(self) -> list[run_format.TensorInfo]:
        """Every tensor and scalar of every attempt; a name in several attempts as the newest knows it."""
        out: dict[tuple[str, str | None], run_format.TensorInfo] = {}
        for cat in self.catalogues.values():
            out.update({(t.name, t.mode): t for t in cat.values()})
        return list(out.values())

    def only(self, attempt: str) -> _Loaded:
        """One writer attempt's segments and catalogue, taken from what was read (not read again)."""
        return _Loaded(
            segments=[s for s in self.segments if s.attempt == attempt],
            catalogues={attempt: self.catalogues.get(attempt, {})},
        )


class Run:
    """A stored run opened for reading. Create it with `open_run`."""

    def __init__(
        self,
        uri: str,
        store: Store,
        *,
        kind: str,
        ranks: list[int],
        source_factory: Callable[[int], Source],
        info: run_format.RunInfo | None = None,
    ) -> None:
        self.uri = uri
        self.store = store
        self.format = kind
        self.ranks = ranks
        self.info = info
        self._source_factory = source_factory
        self._loaded: dict[int, _Loaded] = {}
        self.problems: list[str] = []
        self.attempt: str | None = None
        """The one writer attempt this run shows (`at_attempt`), or None for all of them."""
        self._merged: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        """Merged rows of sharded tensors, by name (`merged`), made once per opened run."""
        self._whole: Run | None = None
        """For a view made by `at_attempt`: the run it reads its segments from."""

    def at_attempt(self, attempt: str) -> Run:
        """Return this run restricted to one writer attempt (see `attempts`): its segments and catalogue only.

        The view shares what this run read: segments are not read a second time."""
        view = Run(
            self.uri,
            self.store,
            kind=self.format,
            ranks=self.ranks,
            source_factory=self._source_factory,
            info=self.info,
        )
        view.attempt, view._whole, view.problems = attempt, self, self.problems
        return view

    def source(self, rank: int = 0) -> Source:
        """Return a fresh incremental reader of one rank (for the evaluator and `follow`)."""
        self._check_rank(rank)
        return self._source_factory(rank)

    def _check_rank(self, rank: int) -> None:
        if rank not in self.ranks:
            raise errors.NotFound(f"run {self.uri} has no rank {rank}; ranks present: {self.ranks}")

    def _load(self, rank: int) -> _Loaded:
        if rank not in self._loaded and self._whole is not None and self.attempt is not None:
            self._loaded[rank] = self._whole._load(rank).only(self.attempt)
        if rank not in self._loaded:
            src = self.source(rank)
            segs: list[run_format.Segment] = []
            # poll() hands over what it read before a failure and raises at that key on the next call, so
            # read until a call brings nothing new: the failure surfaces instead of a silently short run
            while new := src.poll():
                segs += new
            self.problems.extend(src.problems)
            newest = {s.attempt: s.catalogue_version for s in segs}  # versions only grow within an attempt
            current = getattr(src, "attempt", None) or ""  # the attempt whose catalogue the source holds
            catalogues = {
                a: dict(src.catalogue()) if a == current else load_catalogue(self.store, rank, a, version)
                for a, version in newest.items()
            } or {"": dict(src.catalogue())}
            self._loaded[rank] = _Loaded(segments=segs, catalogues=catalogues)
        return self._loaded[rank]

    def attempts(self, rank: int = 0) -> list[str]:
        """Return the writer attempts of a rank in write order (one unless it was restarted on this URI)."""
        return list(self._load(rank).catalogues)

    def segments(self, rank: int = 0) -> list[run_format.Segment]:
        return self._load(rank).segments

    def tensors(self, collection: str | None = None, *, rank: int = 0) -> list[run_format.TensorInfo]:
        """Return the catalogue (tensors and scalars), optionally only one collection."""
        return [t for t in self._load(rank).tensors() if collection is None or t.collection == collection]

    def collections(self, *, rank: int = 0) -> dict[str, list[str]]:
        """Return tensor names grouped by collection."""
        out: dict[str, list[str]] = {}
        for t in self.tensors(rank=rank):
            out.setdefault(t.collection, []).append(t.name)
        return out

    def steps(self, *, rank: int = 0) -> np.ndarray:
        """Return every step with tensor statistics, in order."""
        segs = self._load(rank).segments
        return np.concatenate([s.steps for s in segs]) if segs else np.zeros(0, np.int64)

    def last_step(self, *, rank: int = 0) -> int | None:
        segs = self._load(rank).segments
        return max((s.last_step for s in segs), default=None)

    def _ids(self, rank: int, match: Callable[[run_format.TensorInfo], bool]) -> dict[str, int]:
        """Return, for each attempt of `rank` whose catalogue has an entry that `match`es, its id there."""
        return {
            attempt: t.id
            for attempt, cat in self._load(rank).catalogues.items()
            for t in cat.values()
            if match(t)
        }

    def _find(self, name: str, rank: int, *, scalar: bool, mode: str | None = None) -> dict[str, int]:
        """Return the id of a tensor or scalar in each attempt that has it; raise NotFound if none does."""
        ids = self._ids(rank, lambda t: t.name == name and (t.mode == mode if scalar else not t.is_scalar))
        if ids:
            return ids
        names = sorted({t.name for t in self._load(rank).tensors() if t.is_scalar == scalar})
        what = f"scalar {name!r} (mode {mode})" if scalar else f"tensor {name!r}"
        shown = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
        raise errors.NotFound(f"run {self.uri} rank {rank} has no {what}; available: {shown or 'none'}")

    def series(self, name: str, stat: str, *, rank: int = 0, merge: bool = True) -> Series:
        """Return one statistic column of one tensor over all saved steps (absent steps are skipped).

        A tensor sharded over ranks (its catalogue entry on `rank` has a `shard` of several parts) reads as
        the full tensor's statistics, merged from every rank's part (`shards.merge`: a step appears once all
        its parts are there); `merge=False` gives `rank`'s own rows, of its part only."""
        if stat not in run_format.COLUMN:
            raise KeyError(f"unknown statistic {stat!r}; columns are: {', '.join(run_format.STAT_COLUMNS)}")
        col = run_format.COLUMN[stat]
        if merge and self.format == "trainguard":
            merged = self.merged(name, rank=rank)
            if merged is not None:
                return Series(merged[0], merged[1][:, col])
        steps, rows = self._rows(name, rank, [col])
        return Series(steps, rows[:, 0])

    def merged(self, name: str, *, rank: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
        """The full tensor's steps and statistic rows float64[S, K] merged from its shards on every rank, or None
        when `rank`'s catalogue has `name` as a whole tensor (not sharded). Raises NotFound if it has no `name`."""
        self._find(name, rank, scalar=False)
        if not any(
            t.shard is not None for t in self.tensors(rank=rank) if t.name == name and not t.is_scalar
        ):
            return None
        if name not in self._merged:
            entries = [
                (r, t) for r in self.ranks for t in self.tensors(rank=r) if t.name == name and not t.is_scalar
            ]
            found = shards.parts(entries)
            if found is None:
                return None
            ranks, size = found
            every = list(range(len(run_format.STAT_COLUMNS)))
            read = [self._rows(name, r, every) for r in ranks]
            self._merged[name] = shards.merge([s for s, _ in read], [v for _, v in read], size)
        return self._merged[name]

    def hists(self, name: str, *, rank: int = 0, merge: bool = True) -> Series:
        """The log2 histograms of one tensor at its Tier-1 steps: values float64[S, HIST_BINS] (bin edges:
        `run_format.HIST_MIN_EXPONENT`). A sharded tensor's are the full tensor's, its parts' counts summed at
        the steps every part has (`shards.merge_hists`: exact); `merge=False` gives `rank`'s part's."""
        parts = self._parts(name, rank, held=True) if merge and self.format == "trainguard" else None
        if parts is None:
            return Series(*self._tier1(name, rank, None))
        read = [self._tier1(name, r, None) for r, _ in parts]
        return Series(*shards.merge_hists([s for s, _ in read], [h for _, h in read]))

    def units(self, name: str, kind: str, *, rank: int = 0, merge: bool = True) -> Series:
        """One tensor's per-unit vectors of `kind` ("moved", "active", "saturated") at its Tier-1 steps: values
        float64[S, units]. A sharded tensor's parts that hold blocks of it merge into the full tensor's (whole rows
        laid side by side, blocks of every row's columns counted over the full width: `shards.merge_units`,
        exact, at the steps every part has); where they cannot be
        (`per_shard` says why) this raises `errors.NotMerged`: read each rank's part with `merge=False`."""
        parts = self._parts(name, rank, held=True) if merge and self.format == "trainguard" else None
        if parts is None:
            return Series(*self._tier1(name, rank, kind))
        why = self.per_shard(name, rank=rank).get("units")
        if why is not None:
            raise errors.NotMerged(
                f"the per-unit vectors of {name!r} in run {self.uri} stay per shard ({why}): read each rank's "
                "part with units(..., rank=r, merge=False)"
            )
        read = [self._tier1(name, r, kind) for r, _ in parts]
        offsets = [int(shard.offset[0]) for _, shard in parts]  # type: ignore[index]  # known: per_shard checked
        whole = parts[0][1].global_shape
        return Series(
            *shards.merge_units(
                [s for s, _ in read],
                [v for _, v in read],
                offsets,
                int(whole[0]),
                [shards.row_width(shard.local_shape) for _, shard in parts],
                shards.row_width(whole),
            )
        )

    def per_shard(self, name: str, *, rank: int = 0) -> dict[str, str]:
        """What of a sharded tensor cannot be merged into the full tensor's and stays per rank, with why: {"units":
        reason} when its per-unit vectors do not concatenate (`shards.units_per_shard`); empty for a tensor whose
        data all merge, or one that is whole."""
        for t in self.tensors(rank=rank):
            if t.name == name and not t.is_scalar and t.shard is not None:
                why = shards.units_per_shard(t.shard, collection=t.collection)
                return {} if why is None else {"units": why}
        return {}

    def units_per_shard(self, *, rank: int = 0) -> dict[str, str]:
        """The sharded tensors of `rank` with per-unit vectors (weights, biases, activations) whose vectors stay per
        rank, each with why (`shards.units_per_shard`), by name: what `trainguard inspect`, the report and the
        evaluator's warnings name as read per shard."""
        out = {
            t.name: shards.units_per_shard(t.shard, collection=t.collection)
            for t in self.tensors(rank=rank)
            if t.shard is not None and not t.is_scalar and t.collection in shards.UNIT_COLLECTIONS
        }
        return {name: why for name, why in sorted(out.items()) if why is not None}

    def _parts(
        self, name: str, rank: int, *, held: bool = False
    ) -> list[tuple[int, run_format.ShardInfo]] | None:
        """The ranks whose parts make up sharded tensor `name` with each one's shard; None when it is whole. With
        `held`, only the parts that hold elements (an empty one writes no Tier-1 data and adds none)."""
        self._find(name, rank, scalar=False)
        entries = [
            (r, t) for r in self.ranks for t in self.tensors(rank=r) if t.name == name and not t.is_scalar
        ]
        found = shards.parts(entries)
        if found is None:
            return None
        by_rank = {r: t.shard for r, t in entries if t.shard is not None}
        return [(r, by_rank[r]) for r in found[0] if not held or math.prod(by_rank[r].local_shape) > 0]

    def _tier1(self, name: str, rank: int, kind: str | None) -> tuple[np.ndarray, np.ndarray]:
        """One tensor's Tier-1 steps on one rank and its histograms (`kind` None) or per-unit vectors of `kind`."""
        ids = self._find(name, rank, scalar=False)
        steps: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for seg in self._load(rank).segments:
            tid = ids.get(seg.attempt, -1)
            got = seg.hists.get(tid) if kind is None else seg.units.get((kind, tid))
            if got is not None and len(got):
                steps.append(seg.tier1_steps[: len(got)])
                values.append(np.asarray(got, np.float64))
        if not steps:
            width = run_format.HIST_BINS if kind is None else 0
            return np.zeros(0, np.int64), np.zeros((0, width))
        return np.concatenate(steps), np.concatenate(values)

    def _rows(self, name: str, rank: int, cols: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Steps and columns `cols` (float64[n, len(cols)]) of one tensor's rows on one rank."""
        ids = self._find(name, rank, scalar=False)
        steps: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for seg in self._load(rank).segments:
            where = np.nonzero(seg.tensor_ids == ids.get(seg.attempt, -1))[0]
            if where.size:
                steps.append(seg.steps)
                values.append(seg.stats[:, where[0]][:, cols].astype(np.float64))
        if not steps:
            return np.zeros(0, np.int64), np.zeros((0, len(cols)))
        return np.concatenate(steps), np.concatenate(values)

    def optimizer_groups(self, *, rank: int = 0) -> list[OptimizerGroup]:
        """The optimizers' parameter groups of `rank`, by key (empty for runs before format 2.5)."""
        members: dict[str, list[run_format.TensorInfo]] = {}
        for t in self.tensors(rank=rank):
            if t.param_group is not None and not t.is_scalar:
                members.setdefault(t.param_group, []).append(t)
        hyper: dict[str, dict[str, Series]] = {}
        for name in self.scalar_names(mode="train", rank=rank):
            key, _, what = name.removeprefix(run_format.GROUP_PREFIX).partition("/")
            if name.startswith(run_format.GROUP_PREFIX) and what:
                hyper.setdefault(key, {})[what] = self.scalars(name, rank=rank)
        return [
            OptimizerGroup(
                key=key,
                optimizer=next((t.optimizer for t in members.get(key, [])), None),
                tensors=[t.name for t in members.get(key, [])],
                hyperparameters=hyper.get(key, {}),
            )
            for key in sorted(
                set(members) | set(hyper), key=lambda k: [int(x) if x.isdigit() else -1 for x in k.split(".")]
            )
        ]

    def skipped(self, *, rank: int = 0) -> dict[str, str]:
        """The tensors the hook did not read on `rank`, each with the reason (catalogue `skipped`)."""
        return {t.name: t.skipped for t in self.tensors(rank=rank) if t.skipped is not None}

    def scalars(self, name: str, *, mode: str = "train", rank: int = 0) -> Series:
        """Return a scalar's recorded values in one mode."""
        ids = self._find(name, rank, scalar=True, mode=mode)
        steps: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for seg in self._load(rank).segments:
            mask = seg.scalar_ids == ids.get(seg.attempt, -1)
            if mask.any():
                steps.append(seg.scalar_steps[mask])
                values.append(seg.scalar_values[mask])
        if not steps:
            return Series(np.zeros(0, np.int64), np.zeros(0))
        return Series(np.concatenate(steps), np.concatenate(values))

    def predictions(self, name: str = "pred/predictions", *, mode: str = "train", rank: int = 0) -> Series:
        """Return prediction bucket counts: steps int64[n] and counts float64[n, 3, B] (delta per record)."""
        loaded = self._load(rank)
        ids = self._ids(rank, lambda t: t.is_predictions and t.name == name and t.mode == mode)
        if not ids:
            found = sorted(f"{t.name} ({t.mode})" for t in loaded.tensors() if t.is_predictions)
            raise errors.NotFound(
                f"run {self.uri} rank {rank} has no predictions {name!r} in mode {mode}; found: {found or 'none'}"
            )
        steps, values = [], []
        for seg in loaded.segments:
            tid = ids.get(seg.attempt)
            arr = None if tid is None else seg.extra.get(f"pred.{tid}")
            if arr is not None:
                steps.append(seg.extra[f"pred.{tid}.steps"])
                values.append(arr.astype(np.float64))
        if not steps:
            return Series(np.zeros(0, np.int64), np.zeros((0, 3, 0)))
        return Series(np.concatenate(steps), np.concatenate(values))

    def scalar_names(self, *, mode: str | None = None, rank: int = 0) -> list[str]:
        return sorted(
            {t.name for t in self.tensors(rank=rank) if t.is_scalar and (mode is None or t.mode == mode)}
        )

    def ended(self, *, rank: int = 0) -> run_format.EndInfo | None:
        return self.source(rank).ended()

    def follow(
        self,
        *,
        rank: int = 0,
        poll_interval_seconds: float = 0.2,
        idle_timeout_seconds: float = 600.0,
    ) -> Follower:
        """Iterate over new segments of one rank as they land; see `follow.Follower`."""
        return Follower(
            self.source(rank),
            poll_interval_seconds=poll_interval_seconds,
            idle_timeout_seconds=idle_timeout_seconds,
        )
