"""The steps one rank's writer holds until they become a segment, and when that happens (the flush policy).

Used by `writer.RankWriter` on the training thread (`write_step`, `write_scalar`, `write_record`,
`together`) and by the upload thread (`maybe_flush`, flushing on time). A buffer becomes one
segment when it holds `flush_every_steps` saved steps, when it is older than
`flush_interval_seconds`, when the tensor set changes, and at once for the run's first NaN/Inf
(a step's counts or a scalar), so divergence reaches the evaluator without waiting. A flush hands
the catalogue's new version (if any) and then the segment to the upload queue; naming and
uploading them is `upload_queue.py`'s. Writes inside `together()` land in one segment.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from trainguard.store import run_format
from trainguard.store.tensor_catalogue import TensorCatalogue
from trainguard.store.upload_queue import UploadQueue
from trainguard.store.writer_config import WriterConfig

_NONFINITE_COLUMNS = slice(run_format.COLUMN["nan"], run_format.COLUMN["inf"] + 1)
assert _NONFINITE_COLUMNS.stop - _NONFINITE_COLUMNS.start == 2  # nan and inf are neighbours: a view, no copy

_INT32, _FLOAT32 = np.dtype(np.int32), np.dtype(np.float32)


def _as(a: object, dtype: np.dtype) -> np.ndarray:
    """`np.asarray(a, dtype)`, without its call when `a` already is such an array: a saved step runs with cold
    caches, where each numpy call costs several microseconds (the hook hands over arrays of the right type)."""
    if type(a) is np.ndarray and a.dtype is dtype:
        return a
    return np.asarray(a, dtype)


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


class StepBuffer:
    """Buffered steps of one rank and the policy that flushes them. Thread-safe (one reentrant lock)."""

    def __init__(
        self,
        *,
        config: WriterConfig,
        catalogue: TensorCatalogue,
        queue: UploadQueue,
        clock: Callable[[], float],
    ) -> None:
        self.config = config
        self.catalogue = catalogue
        self.queue = queue
        self._clock = clock
        self._lock = threading.RLock()
        self._buf = _Buffer()
        self.last_step: int | None = None
        """The highest step written (statistics, scalar or record), for END.json."""
        self.closed = False
        self._nonfinite_sent = False  # the first NaN/Inf leaves at once (see _flush_first_nonfinite)
        self._together = 0
        self._flush_wanted = False

    def _refused(self) -> bool:
        return self.queue.disabled or self.closed

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
        """Buffer the statistics of one saved step (see `RankWriter.write_step`)."""
        if self._refused():
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
                    b.units.setdefault(k, []).append(_as(v, _FLOAT32))
                for k2, h in (hists or {}).items():
                    b.hists.setdefault(k2, []).append(_as(h, _FLOAT32))
            # the highest step: a saved step's rows may land after the next steps' scalars (the hook's delivery thread)
            if self.last_step is None or step > self.last_step:
                self.last_step = int(step)
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
        if self._refused() or not ids:
            return
        with self._lock:  # reentrant: the values land together
            for tid, value in zip(ids, values):  # not strict: the writer never raises into its caller
                self.write_scalar(int(step), int(tid), float(value))

    def write_scalar(self, step: int, tensor_id: int, value: float) -> None:
        """Buffer one scalar value (the hook's call, once per recorded scalar)."""
        if self._refused():
            return
        with self._lock:
            b = self._buf
            if b.opened_at is None:
                b.opened_at = self._clock()
            b.scalar_steps.append(step)
            b.scalar_ids.append(tensor_id)
            b.scalar_values.append(value)
            if self.last_step is None or step > self.last_step:
                self.last_step = step
            if not self._nonfinite_sent and not math.isfinite(value):
                self._flush_first_nonfinite()

    def write_scalar_rows(self, rows: Sequence[tuple[int, int, float]]) -> None:
        """Buffer (step, id, value) rows of any steps at once, in their order."""
        if self._refused() or not rows:
            return
        steps, ids, values = zip(*rows)  # not strict: the writer never raises into its caller
        with self._lock:
            b = self._buf
            if b.opened_at is None:
                b.opened_at = self._clock()
            b.scalar_steps.extend(map(int, steps))  # map: no Python frame per row (a generator resumes one)
            b.scalar_ids.extend(map(int, ids))
            b.scalar_values.extend(map(float, values))
            top = max(steps)
            if self.last_step is None or top > self.last_step:
                self.last_step = int(top)
            if not self._nonfinite_sent and not all(map(math.isfinite, b.scalar_values[-len(values) :])):
                self._flush_first_nonfinite()

    def write_record(self, step: int, name: str, array: np.ndarray) -> None:
        """Buffer one array of a per-step record stream (see `RankWriter.write_record`)."""
        if self._refused():
            return
        with self._lock:
            b = self._buf
            if b.opened_at is None:
                b.opened_at = self._clock()
            steps, arrays = b.records.setdefault(name, ([], []))
            steps.append(int(step))
            arrays.append(np.asarray(array))
            self.last_step = max(self.last_step or 0, int(step))

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
        """Keep the writes made inside the block in one segment (see `RankWriter.together`)."""
        with self._lock:
            self._together += 1
            try:
                yield
            finally:
                self._together -= 1
                if not self._together and self._flush_wanted:
                    self._flush_wanted = False
                    self._flush_locked()

    def flush(self) -> None:
        """Hand the buffered steps to the upload queue as one segment."""
        with self._lock:
            self._flush_locked()

    def close(self) -> None:
        """Flush and take no more writes (a write racing with this lands before it, or not at all)."""
        with self._lock:
            self._flush_locked()
            self.closed = True

    def maybe_flush(self) -> None:
        """Flush if the buffer is older than `flush_interval_seconds` (called by the upload thread)."""
        with self._lock:
            opened = self._buf.opened_at
            if opened is not None and self._clock() - opened >= self.config.flush_interval_seconds:
                self._flush_locked()

    def _flush_locked(self) -> None:
        b = self._buf
        if b.empty() or self.queue.disabled:
            self._buf = _Buffer()
            return
        # The catalogue goes into the queue before the segment that refers to it (ordered PUTs).
        meta = self.catalogue.take_version()
        if meta is not None:
            self.queue.submit("meta", meta)
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
            # `np.array` stacks a list of same-shaped arrays as `np.stack` does, at a third of its cost: a segment of
            # Tier-1 steps stacks one list per tensor and per unit vector
            units={k: np.array(v) for k, v in b.units.items() if len(v) == len(b.tier1_steps)},
            hists={k: np.array(v) for k, v in b.hists.items() if len(v) == len(b.tier1_steps)},
            catalogue_version=max(self.catalogue.version, 0),
            extra=extra,
        )
        self._buf = _Buffer()
        self.queue.submit("segment", seg)
