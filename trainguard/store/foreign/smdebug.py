"""Reads smdebug (SageMaker Debugger) output as a TrainGuard run: one rank per worker, statistics computed on read.

`runs.open_run` calls `open_smdebug` for a root `detect` recognises (`index/` and `events/`). `SmdebugSource` follows one
worker: it lists `index/` after the last key seen (an index JSON is smdebug's "step N of worker W is
complete" signal, written after the event file), fetches that step's event file once, cuts out each
record at the offsets the index gives, and turns raw tensors into Tier-0 rows with `stats.tier0`
(`update_l2`/`distance_l2` from consecutive raw values of weights and biases). Reductions-only tensors
(`smdebug/reductions/...`) fold back under their base tensor. Reading smdebug's files (the documents, names
and one step's event records) is in `smdebug_files.py`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from trainguard.api.enums import Mode
from trainguard.store import errors, run_format, stats
from trainguard.store.backends import Store
from trainguard.store.foreign.smdebug_files import (
    COLLECTIONS_PREFIX,
    COLLECTIONS_RE,
    END_MARKER,
    INDEX_PREFIX,
    MODES,
    PARAMETERS,
    WORKER_RE,
    Classifier,
    Naming,
    StepRead,
    load_collections,
    parse_index_key,
    read_step,
    reduction_parts,
    stats_from_reductions,
    worker_ranks,
)
from trainguard.store.reader import Run

log = logging.getLogger(__name__)


# --- the Source ----------------------------------------------------------------------------------
@dataclass
class _Row:
    tid: int
    stats: np.ndarray
    raw: bool
    """True when computed from the raw tensor, False when folded from stored reductions."""
    hist: np.ndarray | None = None


@dataclass
class _StepRows:
    step: int
    wall_time: float
    rows: list[_Row]
    scalars: list[tuple[int, float]]
    tier1: bool = False


class SmdebugSource:
    """One smdebug worker as a `Source`: new steps as segments, in step order, each index read once.

    Tensors of EVAL/PREDICT steps are not turned into statistics (our runs hold tensor statistics
    of training steps only); their scalars (losses, metrics) are kept with mode `eval`. Tier-1
    log2 histograms of raw tensors are taken on every `tier1_interval_steps`-th saved train step,
    as the hook does (they cost about as much as all Tier-0 columns together).
    """

    def __init__(
        self,
        store: Store,
        *,
        rank: int,
        worker: str,
        start_after: str | None = None,
        tier1_interval_steps: int = 10,
    ) -> None:
        if tier1_interval_steps < 1:
            raise ValueError(f"tier1_interval_steps must be at least 1, got {tier1_interval_steps}")
        self.store = store
        self.rank = rank
        self.worker = worker
        self.tier1_interval_steps = tier1_interval_steps
        self._saved_train_steps = 0
        self.problems: list[str] = []
        self.bytes_read = 0
        self.last_key = start_after
        self._catalogue: dict[int, run_format.TensorInfo] = {}
        self._ids: dict[tuple[str, str | None], int] = {}
        self._prev: dict[int, np.ndarray] = {}
        self._first: dict[int, np.ndarray] = {}
        self._classifier: Classifier | None = None
        self._skipped_names: set[str] = set()
        self._end: run_format.EndInfo | None = None
        self._last_step: int | None = None
        self._last_wall_time = 0.0

    # Source protocol
    def poll(self) -> list[run_format.Segment]:
        """Return the steps whose index appeared since the last call, as segments in step order.

        A storage failure (after the backend's retries) ends the poll: the steps read before it
        are returned and the failed one is tried again by the next poll; with none read, it raises.
        """
        keys = self.store.list(INDEX_PREFIX, start_after=self.last_key or INDEX_PREFIX)
        steps: list[_StepRows] = []
        for key in keys:
            # Only this worker's finished index keys move the position: another worker's step N, or
            # smdebug's local `<key>.tmp` (renamed into place on close), can sort after a key of ours
            # that has not landed yet.
            parsed = parse_index_key(key)
            if parsed is None or parsed[1] != self.worker:
                continue
            try:
                if self._classifier is None:
                    self._classifier = self._load_classifier()
                read = read_step(self.store, key)
            except errors.StoreError:
                if steps:
                    break
                raise
            self.bytes_read += read.bytes_read
            for message in read.problems:
                self._problem(message)
            if read.index is not None:
                steps.append(self._rows(read))
            self.last_key = key
        return _segments(steps)

    def catalogue(self) -> dict[int, run_format.TensorInfo]:
        return self._catalogue

    def ended(self) -> run_format.EndInfo | None:
        """Return an EndInfo once `training_job_end.ts` exists (smdebug writes it at hook close)."""
        if self._end is None and self.store.exists(END_MARKER):
            last_step = self._last_step
            if last_step is None:  # not polled yet: the last index key of this worker says it
                steps = [
                    p[0]
                    for k in self.store.list(INDEX_PREFIX)
                    if (p := parse_index_key(k)) and p[1] == self.worker
                ]
                last_step = max(steps, default=None)
            self._end = run_format.EndInfo(
                status="ok", last_step=last_step, wall_time=self._last_wall_time, written_by="hook"
            )
        return self._end

    # internals
    def _problem(self, message: str) -> None:
        log.warning("trainguard: %s", message)
        self.problems.append(message)

    def _load_classifier(self) -> Classifier | None:
        """Load this worker's collections JSON (or any worker's); None while none exists yet."""
        doc = load_collections(self.store, worker=self.worker, problems=self.problems)
        return None if doc is None else Classifier(doc)

    def _id(self, naming: Naming, *, mode: str | None, shape: list[int], dtype: str) -> int:
        key = (naming.name, mode)
        tid = self._ids.get(key)
        if tid is None:
            tid = len(self._ids)
            self._ids[key] = tid
            base = naming.name.removeprefix("grad/")
            self._catalogue[tid] = run_format.TensorInfo(
                id=tid,
                name=naming.name,
                collection=naming.collection.value,
                shape=[] if naming.scalar else shape,
                dtype=dtype,
                module=base.rsplit(".", 1)[0] if "." in base and not naming.scalar else None,
                trainable=naming.collection in PARAMETERS,
                mode=mode,
            )
        return tid

    def _rows(self, read: StepRead) -> _StepRows:
        assert read.index is not None
        classifier = self._classifier or Classifier(None)
        step_mode = MODES.get(read.index.meta.mode, Mode.TRAIN)
        shapes = {s.tensorname: s.shape for s in read.index.shape_payload}
        raws: dict[str, tuple[np.ndarray, str, Naming]] = {}
        reductions: dict[str, dict[str, float]] = {}
        out = _StepRows(step=read.step, wall_time=0.0, rows=[], scalars=[])
        for v in read.values:
            out.wall_time = max(out.wall_time, v.wall_time)
            if v.values is None:
                self._skip_once(v.name, f"dtype {v.dtype} is not numeric")
                continue
            if v.values.dtype.kind == "c":
                self._skip_once(v.name, f"dtype {v.dtype} is complex")
                continue
            red = reduction_parts(v.name)
            if red is not None:
                if v.values.size == 1:
                    reductions.setdefault(red[0], {})[red[1]] = float(v.values.reshape(()))
                continue
            naming = classifier.classify(v.name, size=int(v.values.size), simple_value=v.simple_value)
            if naming.scalar:
                mode = MODES.get(v.mode, step_mode).value
                tid = self._id(naming, mode=mode, shape=[], dtype=v.dtype)
                out.scalars.append((tid, float(np.asarray(v.values, np.float64).reshape(-1)[0])))
            else:
                raws[v.name] = (v.values, v.dtype, naming)
        if step_mode is Mode.TRAIN and (raws or reductions):
            out.tier1 = self._saved_train_steps % self.tier1_interval_steps == 0
            self._saved_train_steps += 1
            for values, dtype, naming in raws.values():
                tid = self._id(naming, mode=None, shape=list(values.shape), dtype=dtype)
                prev = first = None
                if naming.collection in PARAMETERS:
                    prev = self._prev.get(tid)
                    first = self._first.setdefault(tid, values)
                    self._prev[tid] = values
                hist = stats.log2_hist(values) if out.tier1 else None
                out.rows.append(_Row(tid, stats.tier0(values, prev=prev, first=first), True, hist))
            for name, reds in reductions.items():
                if name in raws:
                    continue  # the raw tensor gives every column; its reductions add nothing
                shape = shapes.get(name)
                naming = classifier.classify(name, size=int(np.prod(shape)) if shape is not None else 2)
                if naming.scalar:
                    continue
                tid = self._id(naming, mode=None, shape=list(shape or []), dtype="unknown")
                count = int(np.prod(shape)) if shape is not None else None
                out.rows.append(_Row(tid, stats_from_reductions(reds, count=count), False))
        self._last_step = read.step
        self._last_wall_time = max(self._last_wall_time, out.wall_time)
        return out

    def _skip_once(self, name: str, why: str) -> None:
        if name not in self._skipped_names:
            self._skipped_names.add(name)
            self._problem(
                f"smdebug tensor {name!r} of {self.worker}: {why}; it has no statistics and is skipped"
            )


def _segments(steps: list[_StepRows]) -> list[run_format.Segment]:
    """Group consecutive steps with the same tensors (and the same raw/reduction split) into segments.

    Steps that carry only scalars (e.g. EVAL steps) join the current segment, whose `scalar_steps`
    may then hold steps without tensor statistics, as the run format allows.
    """
    groups: list[list[_StepRows]] = []
    group_keys: list[tuple[tuple[int, bool], ...] | None] = []
    for s in steps:
        key = tuple(sorted((r.tid, r.raw) for r in s.rows)) if s.rows else None
        if groups and (key is None or group_keys[-1] in (None, key)):
            groups[-1].append(s)
            group_keys[-1] = group_keys[-1] or key
        else:
            groups.append([s])
            group_keys.append(key)
    return [_segment(g) for g in groups]


def _segment(group: list[_StepRows]) -> run_format.Segment:
    with_rows = [s for s in group if s.rows]
    tids = sorted(r.tid for r in with_rows[0].rows) if with_rows else []
    stat_rows = []
    hists: dict[int, list[np.ndarray]] = {}
    for s in with_rows:
        by_tid = {r.tid: r for r in s.rows}
        stat_rows.append(np.stack([by_tid[t].stats for t in tids]))
        for t in tids:
            hist = by_tid[t].hist
            if hist is not None:
                hists.setdefault(t, []).append(hist)
    scalars = [(s.step, tid, value) for s in group for tid, value in s.scalars]
    steps = np.asarray([s.step for s in with_rows], np.int64)
    return run_format.Segment(
        steps=steps,
        wall_time=np.asarray([s.wall_time for s in with_rows], np.float64),
        tensor_ids=np.asarray(tids, np.int32),
        stats=np.stack(stat_rows).astype(np.float32) if stat_rows else np.zeros((0, 0, stats.K), np.float32),
        scalar_steps=np.asarray([x[0] for x in scalars], np.int64),
        scalar_ids=np.asarray([x[1] for x in scalars], np.int32),
        scalar_values=np.asarray([x[2] for x in scalars], np.float64),
        tier1_steps=np.asarray([s.step for s in with_rows if s.tier1], np.int64)
        if hists
        else np.zeros(0, np.int64),
        hists={t: np.stack(h) for t, h in hists.items()},
    )


def _start_time(store: Store, index_key: str | None) -> float:
    if index_key is None:
        return 0.0
    read = read_step(store, index_key)
    return min((v.wall_time for v in read.values), default=0.0)


def detect(store: Store, top: list[str]) -> bool:
    """Whether a root holds smdebug output: `index/` beside `events/` or `collections/`.

    Asks for those prefixes by name (one short listing each) rather than trusting `top`, which may be cut
    short on a root that also holds many other objects."""
    return bool(store.list(INDEX_PREFIX, delimiter="/", limit=1)) and any(
        store.list(p, delimiter="/", limit=1) for p in ("events/", COLLECTIONS_PREFIX)
    )


def open_smdebug(uri: str, store: Store) -> Run:
    """Open an smdebug output directory as a `reader.Run` of kind `smdebug`, one rank per worker."""
    index_keys = [k for k in store.list(INDEX_PREFIX) if parse_index_key(k)]
    workers = {parse_index_key(k)[1] for k in index_keys}  # type: ignore[index]
    workers |= {m.group(1) for k in store.list(COLLECTIONS_PREFIX) if (m := COLLECTIONS_RE.match(k))}
    doc = load_collections(store)
    if doc is not None and all(WORKER_RE.match(w) for w in workers):
        # Workers that have not written yet still count: `_meta.num_workers` is the world size.
        workers |= {f"worker_{i}" for i in range(doc.meta.num_workers)}
    ranks = worker_ranks(workers or {"worker_0"})
    info = run_format.RunInfo(
        run_id=uri.rstrip("/").rsplit("/", 1)[-1],
        framework="smdebug",
        world_size=max(doc.meta.num_workers if doc else 1, len(ranks)),
        start_time=_start_time(store, index_keys[0] if index_keys else None),
        config={
            "workers": {str(r): w for r, w in ranks.items()},
            "collections": sorted(doc.collections) if doc else [],
        },
    )
    return Run(
        uri,
        store,
        kind="smdebug",
        ranks=list(ranks),
        info=info,
        source_factory=lambda rank: SmdebugSource(store, rank=rank, worker=ranks[rank]),
    )
