"""Writes one rank of a run: buffers saved steps, flushes segments, uploads in the background.

Called by the capture layer (`capture.recorder`, `capture.torch.hook`) on the training thread.
`write_step` only appends small host arrays to a buffer; encoding and the PUT happen on one
background thread fed by a bounded queue. The training thread never waits on the store for
more than `max_block_seconds`; when the queue stays full or the store keeps failing, the
writer disables itself, logs once, and records the error in `END.json` (fail open).
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

import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Sequence
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


@dataclass(frozen=True)
class WriterConfig:
    """How often a rank flushes and how long it may hold up training."""

    flush_every_steps: int = 500
    """Saved steps per segment at most: bounds a segment's size when steps are fast; `flush_interval_seconds`
    bounds latency. At 50, a loop saving every 0.6 ms step spent ~7% of its time making a segment
    every 30 ms (each segment costs ~1.5 ms of CPU, whatever its size)."""
    flush_interval_seconds: float = 1.0
    """A buffer older than this is flushed even if not full: bounds detection latency (about 1 s locally)."""
    queue_max_segments: int = 64
    """Segments waiting for upload at most; beyond it the training thread waits up to `max_block_seconds`."""
    max_block_seconds: float = 0.05
    """The longest a full queue may block a training step before the writer gives up (fail open)."""
    close_timeout_seconds: float = 30.0
    """How long `close()` waits for pending uploads before abandoning them."""

    def __post_init__(self) -> None:
        for name in ("flush_every_steps", "queue_max_segments"):
            if getattr(self, name) <= 0:
                raise ValueError(f"WriterConfig.{name} must be positive, got {getattr(self, name)}")
        for name in ("flush_interval_seconds", "max_block_seconds", "close_timeout_seconds"):
            if getattr(self, name) < 0:
                raise ValueError(f"WriterConfig.{name} must not be negative, got {getattr(self, name)}")


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
        self.errors: list[str] = []
        self.skipped_steps = 0
        """Saved steps the capture layer skipped (it counts them here; END.json reports them)."""
        self.disabled = False
        self.closed = False
        self.bytes_written = 0
        self.objects_written = 0
        self._queue: queue.Queue[tuple[str, object] | None] = queue.Queue(self.config.queue_max_segments)
        self._stop = threading.Event()
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
            if len(b.steps) >= self.config.flush_every_steps:
                self._flush_locked()

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
        """Queue an object for upload; `kind` is run, meta, segment or end (its key is named at upload)."""
        if self.disabled:
            return
        try:
            self._queue.put((kind, payload), timeout=self.config.max_block_seconds)
        except queue.Full:
            self._fail(
                f"upload queue full for {self.config.max_block_seconds}s ({self.config.queue_max_segments} segments "
                f"waiting): the store at {self.store.uri} is too slow; capture disabled, training continues"
            )

    def _fail(self, message: str) -> None:
        if not self.disabled:
            log.error("trainguard: %s", message)
        self.disabled = True
        self.errors.append(message)

    def _run(self) -> None:
        interval = max(min(self.config.flush_interval_seconds / 4, 0.25), 0.01)
        while True:
            try:
                item = self._queue.get(timeout=interval)
            except queue.Empty:
                if self._stop.is_set():
                    return
                try:
                    self.maybe_flush()
                except Exception as err:  # noqa: BLE001 - the background thread must never die silently
                    self._fail(f"flush failed: {type(err).__name__}: {err}")
                continue
            try:
                if item is None:
                    return
                self._upload(*item)
            finally:
                self._queue.task_done()

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
            self._seq += 1
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

    def _upload(self, kind: str, payload: object) -> None:
        if self.disabled and kind != "end":
            return
        key = kind
        try:
            if not self._claimed:
                self._claim_attempt()
            key, data = self._key(kind, payload)
            self.store.put(key, data)
            self.bytes_written += len(data)
            self.objects_written += 1
        except errors.StoreError as err:
            self._fail(f"cannot upload {key}: {err}; capture disabled, training continues")
        except Exception as err:  # noqa: BLE001 - fail open on anything unexpected, never crash training
            self._fail(
                f"cannot upload {key}: {type(err).__name__}: {err}; capture disabled, training continues"
            )

    def wait_idle(self, timeout: float) -> bool:
        """Wait at most `timeout` seconds until every object handed to the uploader is written (or dropped);
        True if it is idle. For benchmarks and tests: training never waits on this."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.001)
        return True

    @staticmethod
    def _left(deadline: float) -> float:
        return max(0.0, deadline - time.monotonic())

    def _drop_pending(self) -> None:
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return
            self._queue.task_done()

    def close(self, *, status: str = "ok") -> None:
        """Flush, write END.json and wait (bounded) for pending uploads. Idempotent."""
        if self.closed:
            return
        with self._lock:
            self._flush_locked()
            self.closed = True
        end = run_format.EndInfo(
            status="error" if self.errors and status == "ok" else status,
            last_step=self._last_step,
            wall_time=self._clock(),
            errors=self.errors[-20:],
            skipped_steps=self.skipped_steps,
        )
        deadline = time.monotonic() + self.config.close_timeout_seconds
        if self.disabled:
            self._drop_pending()  # skipped by the uploader anyway; END.json must not wait behind them
        try:
            self._queue.put(("end", end), timeout=self._left(deadline))
            self._queue.put(None, timeout=self._left(deadline))
        except queue.Full:
            self.errors.append(
                f"upload queue still full at close after {self.config.close_timeout_seconds}s; END.json not written"
            )
        self._stop.set()
        self._thread.join(self._left(deadline))
        if self._thread.is_alive():
            log.error(
                "trainguard: uploads still pending after %.0fs at close; abandoned",
                self.config.close_timeout_seconds,
            )
