"""Writes one rank of a run: buffers saved steps, flushes segments, uploads in the background.

Called by the capture layer (`capture.recorder`, `capture.torch.hook`) on the training thread.
`write_step` only appends small host arrays to a buffer; encoding and the PUT happen on one
background thread, which takes segments from a pending list bounded in bytes
(`max_pending_bytes`). The training thread never waits on the store. When the store fails
(down, full, throttling, a network cut) the uploader keeps the failed object at the head of the
list and retries it with backoff, without end, while new segments queue behind it; when the
list is full, new segments are dropped and their steps counted (`lost_steps`), and the segment
after a gap says which steps are missing (`Segment.lost_before`). So an outage the list covers
loses nothing, and a longer one loses an exact, stated number of steps. Only a store that refused
the very first object (no bucket, wrong credentials) disables the writer: that is a setup
error, logged once and recorded in `END.json` (fail open). `close()` is bounded
(`close_timeout_seconds`): what is still pending then is counted lost, and END.json is written
on a thread of its own, so a store that accepts connections and never answers cannot hold the
script's exit longer.
The run's first NaN/Inf (in a step's counts or a scalar) is flushed at once, so divergence
reaches the evaluator without waiting for the flush interval.
The statistics themselves are computed by the caller; this module never sees a tensor.

Keys are named on the upload thread, in upload order: each writer is one *attempt* of its rank
(`run_format.attempt_id` of its start time, raised past any later attempt it finds in the store before
its first upload), and numbers its segments in the order they are uploaded. A restarted rank thus
never overwrites an earlier attempt's objects, and a follower listing after its last key misses no
segment, whatever steps the segment holds.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from trainguard.store import errors, run_format
from trainguard.store.backends import Store
from trainguard.store.source import later_attempt

_NONFINITE_COLUMNS = slice(run_format.COLUMN["nan"], run_format.COLUMN["inf"] + 1)
assert _NONFINITE_COLUMNS.stop - _NONFINITE_COLUMNS.start == 2  # nan and inf are neighbours: a view, no copy

log = logging.getLogger(__name__)

_INT32, _FLOAT32 = np.dtype(np.int32), np.dtype(np.float32)


def _as(a: object, dtype: np.dtype) -> np.ndarray:
    """`np.asarray(a, dtype)`, without its call when `a` already is such an array: a saved step runs with cold
    caches, where each numpy call costs several microseconds (the hook hands over arrays of the right type)."""
    if type(a) is np.ndarray and a.dtype is dtype:
        return a
    return np.asarray(a, dtype)


MIB = 2**20


@dataclass(frozen=True)
class WriterConfig:
    """How often a rank flushes, how much it keeps while the store fails, and how long it may take to close."""

    flush_every_steps: int = 500
    """Saved steps per segment at most: bounds a segment's size when steps are fast; `flush_interval_seconds`
    bounds latency. At 50, a loop saving every 0.6 ms step spent ~7% of its time making a segment
    every 30 ms (each segment costs ~1.5 ms of CPU, whatever its size)."""
    flush_interval_seconds: float = 1.0
    """A buffer older than this is flushed even if not full: bounds detection latency (about 1 s locally)."""
    max_pending_bytes: int = 64 * MIB
    """Memory for segments waiting for upload (their arrays' bytes). While the store fails, segments wait here
    and are retried; when it is full, new segments are dropped and their steps counted in END.json
    `lost_steps`. A model of 1,000 captured tensors saving one step a second makes about 50 kB of segments a
    second, so 64 MiB hold some twenty minutes of it (`benchmarks/store_faults.py` prints the rate of its run)."""
    retry_min_seconds: float = 0.5
    """The first pause before an upload that failed is tried again; each further failure doubles it."""
    retry_max_seconds: float = 2.0
    """The longest pause between two tries: a store that comes back is used again within this (plus one try,
    which on S3 is the backend's own few quick attempts). Short, because while the pending memory is full
    every second of delay is a second of dropped steps; one try every 2 s costs a down store nothing."""
    close_timeout_seconds: float = 10.0
    """The longest `close()` takes. Pending uploads get all of it but `end_timeout_seconds`; what is still
    pending then is counted lost."""
    end_timeout_seconds: float = 3.0
    """The part of `close_timeout_seconds` kept for writing END.json (a small object: one PUT)."""

    def __post_init__(self) -> None:
        for name in ("flush_every_steps", "max_pending_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"WriterConfig.{name} must be positive, got {getattr(self, name)}")
        for name in (
            "flush_interval_seconds",
            "retry_min_seconds",
            "retry_max_seconds",
            "close_timeout_seconds",
            "end_timeout_seconds",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"WriterConfig.{name} must not be negative, got {getattr(self, name)}")
        if self.end_timeout_seconds > self.close_timeout_seconds:
            raise ValueError(
                f"WriterConfig.end_timeout_seconds ({self.end_timeout_seconds}) is part of close_timeout_seconds "
                f"({self.close_timeout_seconds}) and cannot exceed it"
            )


@dataclass(eq=False)
class _Item:
    """One object waiting for upload: run, meta, segment or end (its key is named at upload)."""

    kind: str
    payload: object
    nbytes: int = 0
    """For a segment: its arrays' bytes, counted against `max_pending_bytes`."""


def _size(n: int) -> str:
    """`64 MiB`, `6.0 kB`: a memory size for messages."""
    return f"{n / MIB:g} MiB" if n >= MIB else f"{n / 1000:.1f} kB"


def _segment_nbytes(seg: run_format.Segment) -> int:
    arrays = [seg.steps, seg.wall_time, seg.tensor_ids, seg.stats, seg.scalar_steps, seg.scalar_ids]
    arrays += [
        seg.scalar_values,
        seg.tier1_steps,
        *seg.units.values(),
        *seg.hists.values(),
        *seg.extra.values(),
    ]
    return sum(a.nbytes for a in arrays)


def _segment_steps(seg: run_format.Segment) -> np.ndarray:
    """The distinct steps a segment holds anything of (statistics, scalars, records)."""
    parts = [seg.steps, seg.scalar_steps] + [a for n, a in seg.extra.items() if n.endswith(".steps")]
    return np.unique(np.concatenate([np.asarray(p, np.int64).ravel() for p in parts]))


@dataclass
class _Buffer:
    tensor_ids: np.ndarray | None = None
    steps: list[int] = field(default_factory=list)
    wall_time: list[float] = field(default_factory=list)
    stats: list[np.ndarray] = field(default_factory=list)
    scalar_steps: list[int] = field(default_factory=list)
    scalar_ids: list[int] = field(default_factory=list)
    scalar_values: list[float] = field(default_factory=list)
    tier1_steps: list[int] = field(default_factory=list)
    units: dict[tuple[str, int], list[np.ndarray]] = field(default_factory=dict)
    hists: dict[int, list[np.ndarray]] = field(default_factory=dict)
    records: dict[str, tuple[list[int], list[np.ndarray]]] = field(default_factory=dict)
    opened_at: float | None = None

    def empty(self) -> bool:
        return not self.steps and not self.scalar_steps and not self.records


class RankWriter:
    """The writing side of one rank. Thread-safe; never raises into the caller after construction."""

    def __init__(
        self,
        store: Store,
        *,
        rank: int = 0,
        world_size: int = 1,
        run_id: str = "",
        framework: str = "numpy",
        hook_config: dict[str, object] | None = None,
        config: WriterConfig | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.rank = rank
        self.config = config or WriterConfig()
        self._clock = clock
        self._lock = threading.RLock()
        self._buf = _Buffer()
        self._seq = 0  # upload order of this attempt's segments; the upload thread's alone
        self.attempt = run_format.attempt_id(self._clock())
        """This writer's attempt id; final once the first object is uploaded (see `_claim_attempt`)."""
        self._claimed = False
        self._catalogue: list[run_format.TensorInfo] = []
        self._ids: dict[tuple[str, str | None], int] = {}
        self._catalogue_version = -1
        self._catalogue_dirty = False
        self._last_step: int | None = None
        self._nonfinite_sent = False  # the first NaN/Inf leaves at once (see _flush_first_nonfinite)
        self._together = 0
        self._flush_wanted = False
        self.errors: list[str] = []
        self.skipped_steps = 0
        """Saved steps the capture layer skipped (it counts them here; END.json reports them)."""
        self.unchecked_steps = 0
        """Steps the capture layer saw go by without counting them (END.json `unchecked_steps`)."""
        self.blind_since_step: int | None = None
        """The first step not counted of the blind spell in progress at close (END.json `blind_since_step`)."""
        self.disabled = False
        self.closed = False
        self.bytes_written = 0
        self.objects_written = 0
        self.lost_steps = 0
        """Steps whose data never reached the store: dropped while it failed and the pending list was full,
        or still pending when `close()` ran out of time (END.json `lost_steps`)."""
        self.outage_seconds = 0.0
        """Time during which uploads failed, summed over the outages (END.json `store_outage_seconds`)."""
        self._outage_since: float | None = None
        """monotonic() of the first failure of the outage in progress, None while the store works."""
        self._outage_lost = 0
        """Steps dropped during the outage in progress (for its log lines)."""
        self._dropping = False
        """The pending list was full: new segments are dropped until an upload succeeds again."""
        self._gap: list[int] | None = None
        """[first step, last step, steps] of the segments dropped since the last one accepted."""
        self._pending: collections.deque[_Item] = collections.deque()
        self._pending_bytes = 0
        self._busy = False
        """The uploader is working on `_pending[0]` (outside the condition's lock)."""
        self._closing = False
        self._stopping = False
        self._cond = threading.Condition(threading.Lock())
        self._thread = threading.Thread(target=self._run, name=f"trainguard-writer-{rank}", daemon=True)
        self._thread.start()
        if rank == 0:
            info = run_format.RunInfo(
                run_id=run_id,
                framework=framework,
                world_size=world_size,
                start_time=self._clock(),
                config=dict(hook_config or {}),
            )
            self._submit("run", info.model_dump_json(indent=1).encode())

    # --- catalogue -------------------------------------------------------------------------
    def define(self, name: str, *, collection: str, mode: str | None = None, **attrs: object) -> int:
        """Return the id of a tensor (or, with `mode`, a scalar), adding it to the catalogue if new."""
        key = (name, mode)
        tid = self._ids.get(key)  # known names need no lock: ids are only ever added, under it
        if tid is not None:
            return tid
        with self._lock:
            tid = self._ids.get(key)
            if tid is None:
                tid = len(self._catalogue)
                self._catalogue.append(
                    run_format.TensorInfo(id=tid, name=name, collection=collection, mode=mode, **attrs)  # type: ignore[arg-type]
                )
                self._ids[key] = tid
                self._catalogue_dirty = True
            return tid

    def annotate(self, tensor_id: int, **attrs: object) -> None:
        """Set catalogue attributes of an id returned by `define` that were not known then (e.g. `order`);
        the catalogue is written again before the next segment."""
        with self._lock:
            info = self._catalogue[tensor_id]
            if any(getattr(info, k) != v for k, v in attrs.items()):
                self._catalogue[tensor_id] = info.model_copy(update=attrs)
                self._catalogue_dirty = True

    def info(self, tensor_id: int) -> run_format.TensorInfo:
        """Return the catalogue entry of an id returned by `define`."""
        return self._catalogue[tensor_id]

    def _publish_catalogue(self) -> None:
        # The catalogue goes into the queue before the segment that refers to it (ordered PUTs).
        if self._catalogue_dirty:
            self._catalogue_version += 1
            cat = run_format.Catalogue(
                rank=self.rank, version=self._catalogue_version, tensors=list(self._catalogue)
            )
            self._submit("meta", (self._catalogue_version, cat.model_dump_json().encode()))
            self._catalogue_dirty = False

    # --- data --------------------------------------------------------------------------------
    def write_step(
        self,
        step: int,
        tensor_ids: np.ndarray,
        stats: np.ndarray,
        *,
        wall_time: float | None = None,
        units: dict[tuple[str, int], np.ndarray] | None = None,
        hists: dict[int, np.ndarray] | None = None,
        nonfinite: bool | None = None,
    ) -> None:
        """Buffer the statistics of one saved step: `stats` is float32[T, K] for `tensor_ids` int32[T].

        `nonfinite`: whether a row counts a NaN or Inf, from a caller that already knows (the hook's C
        kernel); None: the rows are looked at here.
        """
        if self.disabled or self.closed:
            return
        with self._lock:
            ids = _as(tensor_ids, _INT32)
            if (
                self._buf.tensor_ids is not None
                and self._buf.steps
                and ids is not self._buf.tensor_ids  # a caller that keeps its ids array pays no comparison
                and not np.array_equal(ids, self._buf.tensor_ids)
            ):
                self._flush_locked()
            b = self._buf
            if b.opened_at is None:
                b.opened_at = self._clock()
            b.tensor_ids = ids
            b.steps.append(int(step))
            b.wall_time.append(self._clock() if wall_time is None else float(wall_time))
            b.stats.append(_as(stats, _FLOAT32))
            if units or hists:
                b.tier1_steps.append(int(step))
                for k, v in (units or {}).items():
                    b.units.setdefault(k, []).append(np.asarray(v, np.float32))
                for k2, h in (hists or {}).items():
                    b.hists.setdefault(k2, []).append(np.asarray(h, np.float32))
            self._last_step = int(step)
            if not self._nonfinite_sent and (
                b.stats[-1][:, _NONFINITE_COLUMNS].any() if nonfinite is None else nonfinite
            ):
                self._flush_first_nonfinite()
                return
            if (
                len(b.steps) >= self.config.flush_every_steps
                # on time, here too: the uploader, which flushes idle buffers, may be held in a PUT that hangs
                or self._clock() - b.opened_at >= self.config.flush_interval_seconds
            ):
                self._flush_or_defer()

    def write_scalars(self, step: int, ids: Sequence[int], values: Sequence[float]) -> None:
        """Buffer scalar values recorded at `step` (any step, saved or not)."""
        if self.disabled or self.closed or not ids:
            return
        with self._lock:  # reentrant: the values land together
            for tid, value in zip(ids, values):  # not strict: the writer never raises into its caller
                self.write_scalar(int(step), int(tid), float(value))

    def write_scalar(self, step: int, tensor_id: int, value: float) -> None:
        """Buffer one scalar value (the hook's call, once per recorded scalar)."""
        if self.disabled or self.closed:
            return
        with self._lock:
            b = self._buf
            if b.opened_at is None:
                b.opened_at = self._clock()
            b.scalar_steps.append(step)
            b.scalar_ids.append(tensor_id)
            b.scalar_values.append(value)
            if self._last_step is None or step > self._last_step:
                self._last_step = step
            if not self._nonfinite_sent and not math.isfinite(value):
                self._flush_first_nonfinite()

    def _flush_first_nonfinite(self) -> None:
        """Flush now: the run's first NaN/Inf (a step's counts or a scalar) was just buffered.

        Divergence is what the evaluator must see first, so it does not wait for the flush
        interval or a full buffer; later non-finite steps batch as usual (one extra object per run).
        Called with the lock held; the callers check `_nonfinite_sent` first, so healthy steps
        pay one comparison.
        """
        self._nonfinite_sent = True
        self._flush_or_defer()

    def _flush_or_defer(self) -> None:
        """Flush now, or at the end of the `together()` block in progress (called with the lock held)."""
        if self._together:
            self._flush_wanted = True
        else:
            self._flush_locked()

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """Keep the writes made inside the block in one segment: one step's statistics and scalars then never
        straddle two segments (a flush they call for waits for the end of the block, and the uploader's
        flush on time waits for the lock), so a dropped segment loses whole steps and counts each once."""
        with self._lock:
            self._together += 1
            try:
                yield
            finally:
                self._together -= 1
                if not self._together and self._flush_wanted:
                    self._flush_wanted = False
                    self._flush_locked()

    def write_record(self, step: int, name: str, array: np.ndarray) -> None:
        """Buffer one array of a per-step record stream (e.g. prediction counts `pred.<id>`).

        The segment stores the stacked arrays as `extra.<name>` and their steps as `extra.<name>.steps`.
        """
        if self.disabled or self.closed:
            return
        with self._lock:
            b = self._buf
            if b.opened_at is None:
                b.opened_at = self._clock()
            steps, arrays = b.records.setdefault(name, ([], []))
            steps.append(int(step))
            arrays.append(np.asarray(array))
            self._last_step = max(self._last_step or 0, int(step))

    def flush(self) -> None:
        """Hand the buffered steps to the uploader as one segment."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        b = self._buf
        if b.empty() or self.disabled:
            self._buf = _Buffer()
            return
        self._publish_catalogue()
        n_t = 0 if b.tensor_ids is None else len(b.tensor_ids)
        extra: dict[str, np.ndarray] = {}
        for name, (rec_steps, arrays) in b.records.items():
            extra[name] = np.stack(arrays)
            extra[name + ".steps"] = np.asarray(rec_steps, np.int64)
        seg = run_format.Segment(
            steps=np.asarray(b.steps, np.int64),
            wall_time=np.asarray(b.wall_time, np.float64),
            tensor_ids=b.tensor_ids if b.tensor_ids is not None else np.zeros(0, np.int32),
            stats=np.stack(b.stats)
            if b.stats
            else np.zeros((0, n_t, len(run_format.STAT_COLUMNS)), np.float32),
            scalar_steps=np.asarray(b.scalar_steps, np.int64),
            scalar_ids=np.asarray(b.scalar_ids, np.int32),
            scalar_values=np.asarray(b.scalar_values, np.float64),
            tier1_steps=np.asarray(b.tier1_steps, np.int64),
            units={k: np.stack(v) for k, v in b.units.items() if len(v) == len(b.tier1_steps)},
            hists={k: np.stack(v) for k, v in b.hists.items() if len(v) == len(b.tier1_steps)},
            catalogue_version=max(self._catalogue_version, 0),
            extra=extra,
        )
        self._buf = _Buffer()
        self._submit("segment", seg)

    def maybe_flush(self) -> None:
        """Flush if the buffer is older than `flush_interval_seconds` (called by the background thread)."""
        with self._lock:
            opened = self._buf.opened_at
            if opened is not None and self._clock() - opened >= self.config.flush_interval_seconds:
                self._flush_locked()

    # --- upload ------------------------------------------------------------------------------
    def _submit(self, kind: str, payload: object) -> None:
        """Hand an object to the uploader (never waits); a segment that finds the pending list full is dropped
        and its steps are counted lost."""
        if self.disabled:
            return
        item = _Item(kind, payload)
        with self._cond:
            if isinstance(payload, run_format.Segment):
                item.nbytes = _segment_nbytes(payload)
                if self._dropping or (
                    self._pending_bytes and self._pending_bytes + item.nbytes > self.config.max_pending_bytes
                ):
                    # once full, drop every new segment until the store takes one again: one gap per outage,
                    # not a smaller segment squeezed in here and there
                    self._drop(payload)
                    return
                if self._gap is not None:  # the segment after a gap says which steps are missing
                    item.payload = dataclasses.replace(
                        payload, lost_before=np.asarray(self._gap, np.int64), lost_steps_total=self.lost_steps
                    )
                    self._gap = None
                self._pending_bytes += item.nbytes
            self._pending.append(item)
            self._cond.notify_all()

    def _drop(self, seg: run_format.Segment) -> None:
        """Count a segment that cannot be kept as lost (called with the condition held)."""
        steps = _segment_steps(seg)
        if not steps.size:
            return
        n = int(steps.size)
        if self._gap is None:
            self._gap = [int(steps[0]), int(steps[-1]), n]
        else:
            self._gap = [
                min(self._gap[0], int(steps[0])),
                max(self._gap[1], int(steps[-1])),
                self._gap[2] + n,
            ]
        self._dropping = True
        if not self._outage_lost:
            log.warning(
                "trainguard: %s of segments wait for the store at %s: newer segments are dropped until it "
                "is back (steps lost are counted in END.json lost_steps), training continues",
                _size(self.config.max_pending_bytes),
                self.store.uri,
            )
        self._outage_lost += n
        self.lost_steps += n

    def _fail(self, message: str) -> None:
        """Disable the writer for good (a store that refused its first object, or a bug); log once."""
        if not self.disabled:
            log.error("trainguard: %s", message)
        self.disabled = True
        self.errors.append(message)
        with self._cond:
            for item in self._pending:
                if isinstance(item.payload, run_format.Segment):
                    self._drop(item.payload)
            self._pending.clear()
            self._pending_bytes = 0
            self._cond.notify_all()

    def _next(self, wait_seconds: float) -> _Item | None:
        """Return the object to upload next (marking the uploader busy), or None after `wait_seconds`
        without one; raise StopIteration once closed and drained."""
        with self._cond:
            if not self._pending and not self._stopping:
                self._cond.wait(wait_seconds)
            if not self._pending:
                if self._stopping:
                    raise StopIteration
                return None
            self._busy = True
            return self._pending[0]

    def _done(self, item: _Item) -> None:
        """Take an uploaded (or abandoned) object off the list."""
        with self._cond:
            self._busy = False
            if self._pending and self._pending[0] is item:
                self._pending.popleft()
                self._pending_bytes -= item.nbytes
            self._cond.notify_all()

    def _run(self) -> None:
        tick = max(min(self.config.flush_interval_seconds / 4, 0.25), 0.01)
        failures = 0
        while True:
            self._flush_due()
            try:
                item = self._next(tick)
            except StopIteration:
                return
            if item is None:
                continue
            if self._upload(item):
                failures = 0
                self._done(item)
                continue
            with self._cond:
                self._busy = False
                self._cond.notify_all()
            if not self.disabled:
                failures += 1
                retry = self.config.retry_min_seconds * 2 ** (failures - 1)
                self._pause(min(self.config.retry_max_seconds, retry), tick)

    def _flush_due(self) -> None:
        try:
            self.maybe_flush()
        except Exception as err:  # noqa: BLE001 - the background thread must never die silently
            self._fail(f"flush failed: {type(err).__name__}: {err}")

    def _pause(self, seconds: float, tick: float) -> None:
        """Wait before the next try, flushing the buffer on time meanwhile (segments keep being made during an
        outage); cut short once close() runs, whose deadline calls for a try soon."""
        until = time.monotonic() + seconds
        while True:
            with self._cond:
                if self._closing:
                    until = min(until, time.monotonic() + 0.2)
                left = until - time.monotonic()
                if left <= 0 or self._stopping:
                    return
                self._cond.wait(min(left, tick))
            self._flush_due()

    def _claim_attempt(self) -> None:
        """Raise this writer's attempt id past any later attempt already in the store (a clock behind).

        One short listing, once, before the first upload. A listing that fails leaves the id from
        the clock: the upload after it reports the store's failure if there is one.
        """
        self._claimed = True
        try:
            later = later_attempt(self.store, self.rank, self.attempt)
        except Exception as err:  # noqa: BLE001 - fail open: a listing is a check, not a requirement
            log.debug("trainguard: cannot list rank %d to check the attempt id (%s)", self.rank, err)
            return
        if later is not None:
            self.attempt = f"{int(later) + 1:0{run_format.ATTEMPT_DIGITS}d}"

    def _key(self, kind: str, payload: object) -> tuple[str, bytes]:
        """Name and serialise one queued object (on the upload thread, in upload order)."""
        if kind == "segment":
            assert isinstance(payload, run_format.Segment)
            key = run_format.segment_key(
                self.rank, self.attempt, self._seq, payload.first_step, payload.last_step
            )
            return key, run_format.encode_segment(payload)
        if kind == "meta":
            assert isinstance(payload, tuple)
            version, data = payload
            return run_format.meta_key(self.rank, int(version), attempt=self.attempt), bytes(data)
        if kind == "end":
            assert isinstance(payload, run_format.EndInfo)
            return run_format.end_key(self.rank), payload.model_copy(
                update={"attempt": self.attempt}
            ).model_dump_json().encode()
        assert kind == "run" and isinstance(payload, bytes)
        return run_format.RUN_INFO_KEY, payload

    def _upload(self, item: _Item) -> bool:
        """PUT one object; return True when it is stored. A store error starts (or continues) an outage,
        except a refusal of the writer's very first object, which disables it (a setup error)."""
        key = item.kind
        try:
            if not self._claimed:
                self._claim_attempt()
            key, data = self._key(item.kind, item.payload)
            self.store.put(key, data)
        except (errors.AccessDenied, errors.NotFound) as err:
            if not self.objects_written:
                self._fail(f"cannot upload {key}: {err}; capture disabled, training continues")
            else:
                self._outage(key, err)
            return False
        except errors.StoreError as err:
            self._outage(key, err)
            return False
        except Exception as err:  # noqa: BLE001 - fail open on anything unexpected, never crash training
            self._fail(
                f"cannot upload {key}: {type(err).__name__}: {err}; capture disabled, training continues"
            )
            return False
        if item.kind == "segment":
            self._seq += 1  # a failed PUT keeps its number: the retry writes the same key
        self._dropping = False
        self.bytes_written += len(data)
        self.objects_written += 1
        if self._outage_since is not None:
            self._recovered()
        return True

    def _outage(self, key: str, err: Exception) -> None:
        if self._outage_since is None:
            self._outage_since = time.monotonic()
            log.warning(
                "trainguard: cannot upload %s (%s); training continues, segments wait in memory (up to %s) "
                "and are retried until the store is back",
                key,
                err,
                _size(self.config.max_pending_bytes),
            )
        else:
            log.debug("trainguard: upload of %s failed again (%s)", key, err)

    def _recovered(self) -> None:
        assert self._outage_since is not None
        took = time.monotonic() - self._outage_since
        self.outage_seconds += took
        with self._cond:
            lost, self._outage_lost, self._outage_since = self._outage_lost, 0, None
        if lost:
            log.warning(
                "trainguard: the store at %s is back after %.1fs; %d steps were lost",
                self.store.uri,
                took,
                lost,
            )
        else:
            log.info(
                "trainguard: the store at %s is back after %.1fs; nothing was lost", self.store.uri, took
            )

    def wait_idle(self, timeout: float) -> bool:
        """Wait at most `timeout` seconds until every object handed to the uploader is written (or dropped);
        True if it is idle. For benchmarks and tests: training never waits on this."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
        return True

    @property
    def pending_bytes(self) -> int:
        """Bytes of segments waiting for upload now."""
        return self._pending_bytes

    def close(self, *, status: str = "ok", exception: str | None = None) -> None:
        """Flush, wait (bounded) for pending uploads, write END.json. Idempotent; at most `close_timeout_seconds`.

        What is still pending when the time for it runs out is counted lost (the object being uploaded at
        that moment too, though it may still land). END.json is written on a thread of its own, so a store
        that accepts connections and never answers holds `close()` no longer than the deadline."""
        if self.closed:
            return
        with self._lock:
            self._flush_locked()
            self.closed = True
        deadline = time.monotonic() + self.config.close_timeout_seconds
        drain_until = deadline - self.config.end_timeout_seconds
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            while (self._pending or self._busy) and time.monotonic() < drain_until:
                self._cond.wait(min(drain_until - time.monotonic(), 0.05))
            left = [item for item in self._pending if isinstance(item.payload, run_format.Segment)]
            lost_before = self.lost_steps
            for item in left:
                assert isinstance(item.payload, run_format.Segment)
                self._drop(item.payload)
            self._pending.clear()
            self._pending_bytes = 0
            self._stopping = True
            self._cond.notify_all()
        if left:
            self.errors.append(
                f"{self.lost_steps - lost_before} steps in {len(left)} segments still waited for the store at "
                f"{self.store.uri} {self.config.close_timeout_seconds - self.config.end_timeout_seconds:g}s into "
                "close; they were abandoned"
            )
        if self._outage_since is not None:
            self.outage_seconds += time.monotonic() - self._outage_since
        if self.lost_steps:
            self.errors.append(
                f"{self.lost_steps} steps lost: the store at {self.store.uri} failed for {self.outage_seconds:.1f}s "
                f"and the {_size(self.config.max_pending_bytes)} of pending segments were full"
                if not left
                else f"{self.lost_steps} steps lost in all (the store failed for {self.outage_seconds:.1f}s)"
            )
        end = run_format.EndInfo(
            status="error" if (self.errors or exception) and status == "ok" else status,
            last_step=self._last_step,
            wall_time=self._clock(),
            errors=self.errors[-20:],
            skipped_steps=self.skipped_steps,
            lost_steps=self.lost_steps,
            unchecked_steps=self.unchecked_steps,
            blind_since_step=self.blind_since_step,
            store_outage_seconds=round(self.outage_seconds, 3),
            exception=exception,
        )
        writer = threading.Thread(
            target=self._write_end, args=(end, deadline), name=f"trainguard-end-{self.rank}", daemon=True
        )
        writer.start()
        writer.join(max(0.0, deadline - time.monotonic()))
        if writer.is_alive():
            message = (
                f"END.json not written: the store at {self.store.uri} did not answer within "
                f"{self.config.close_timeout_seconds:g}s of close"
            )
            log.error("trainguard: %s", message)
            self.errors.append(message)
        self._thread.join(max(0.0, deadline - time.monotonic()))

    def _write_end(self, end: run_format.EndInfo, deadline: float) -> None:
        """PUT END.json, trying again while `deadline` (monotonic) leaves time (a store just back may still
        answer errors for a moment)."""
        key = run_format.end_key(self.rank)
        while True:
            try:
                if not self._claimed:
                    self._claim_attempt()
                key, data = self._key("end", end)
                self.store.put(key, data)
                break
            except Exception as err:  # noqa: BLE001 - close() reports it; nothing may reach the training script
                passing = isinstance(err, errors.StoreError) and not isinstance(
                    err, (errors.AccessDenied, errors.NotFound)
                )
                if passing and deadline - time.monotonic() > 0.5:
                    time.sleep(0.2)
                    continue
                message = f"cannot upload {key}: {err}; END.json not written"
                log.error("trainguard: %s", message)
                self.errors.append(message)
                return
        self.bytes_written += len(data)
        self.objects_written += 1
