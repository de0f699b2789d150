"""The objects one rank's writer has yet to upload, and the thread that uploads them through store outages.

Used by `writer.RankWriter` (which hands over run.json and END.json) and `step_buffer.StepBuffer`
(catalogues and segments); `submit` never waits. One background thread takes objects from a list
bounded in bytes (`max_pending_bytes`) and names each on upload, in upload order: each writer is one
*attempt* of its rank (`run_format.attempt_id` of its start time, raised past any later attempt it
finds in the store before its first upload), numbering its segments as they are uploaded, so a
restarted rank never overwrites an earlier attempt's objects and a follower listing after its last
key misses no segment. When the store fails (down, full, throttling, a network cut) the failed object
stays at the head of the list and is retried with backoff, without end, while new segments queue
behind it; when the list is full, new segments are dropped and their steps counted (`lost_steps`), and
the segment after a gap says which steps are missing (`Segment.lost_before`). Only a store that
refused the very first object (no bucket, wrong credentials) disables the queue: a setup error,
logged once (fail open). Between tries the thread calls `on_tick` (the buffer's flush on time).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from trainguard.store import errors, rank_end, run_format
from trainguard.store.backends import Store
from trainguard.store.source import later_attempt
from trainguard.store.writer_config import MIB, WriterConfig

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Item:
    """One object waiting for upload: run, meta or segment (its key is named at upload)."""

    kind: str
    payload: object
    nbytes: int = 0
    """For a segment: its arrays' bytes, counted against `max_pending_bytes`."""


def size_text(n: int) -> str:
    """`64 MiB`, `6.0 kB`: a memory size for messages."""
    return f"{n / MIB:g} MiB" if n >= MIB else f"{n / 1000:.1f} kB"


def segment_nbytes(seg: run_format.Segment) -> int:
    """The bytes a segment's arrays hold in memory while it waits for upload."""
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


class UploadQueue:
    """Uploads one rank's objects in order on a thread of its own; counts what it had to drop."""

    def __init__(
        self,
        store: Store,
        *,
        rank: int,
        config: WriterConfig,
        attempt: str,
        errors_list: list[str],
    ) -> None:
        self.store = store
        self.rank = rank
        self.config = config
        self.attempt = attempt
        """This writer's attempt id; final once the first object is uploaded (see `_claim_attempt`)."""
        self.errors = errors_list
        """The writer's error list (shared with it): this queue appends what disabled it or lost data."""
        self.disabled = False
        self.bytes_written = 0
        self.objects_written = 0
        self.lost_steps = 0
        """Steps whose data never reached the store: dropped while it failed and the pending list was full,
        or still pending when `drain` ran out of time."""
        self.outage_seconds = 0.0
        """Time during which uploads failed, summed over the outages."""
        self._claimed = False
        self._seq = 0  # upload order of this attempt's segments; the upload thread's alone
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
        self._on_tick: Callable[[], None] = lambda: None
        self._thread = threading.Thread(target=self._run, name=f"trainguard-writer-{rank}", daemon=True)

    def start(self, on_tick: Callable[[], None]) -> None:
        """Start the upload thread; it calls `on_tick` about every quarter of the flush interval."""
        self._on_tick = on_tick
        self._thread.start()

    @property
    def in_outage(self) -> bool:
        """Whether the store is failing uploads now."""
        return self._outage_since is not None

    @property
    def pending_count(self) -> int:
        """Objects waiting for upload now (the one being uploaded included)."""
        return len(self._pending)

    @property
    def pending_bytes(self) -> int:
        """Bytes of segments waiting for upload now."""
        return self._pending_bytes

    def submit(self, kind: str, payload: object) -> None:
        """Hand an object to the uploader (never waits); a segment that finds the pending list full is dropped
        and its steps are counted lost."""
        if self.disabled:
            return
        item = _Item(kind, payload)
        with self._cond:
            if isinstance(payload, run_format.Segment):
                item.nbytes = segment_nbytes(payload)
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
                size_text(self.config.max_pending_bytes),
                self.store.uri,
            )
        self._outage_lost += n
        self.lost_steps += n

    def fail(self, message: str) -> None:
        """Disable the queue for good (a store that refused its first object, or a bug); log once."""
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
            self._tick()
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

    def _tick(self) -> None:
        try:
            self._on_tick()
        except Exception as err:  # noqa: BLE001 - the background thread must never die silently
            self.fail(f"flush failed: {type(err).__name__}: {err}")

    def _pause(self, seconds: float, tick: float) -> None:
        """Wait before the next try, ticking meanwhile (segments keep being made during an outage); cut short
        once `drain` runs, whose deadline calls for a try soon."""
        until = time.monotonic() + seconds
        while True:
            with self._cond:
                if self._closing:
                    until = min(until, time.monotonic() + 0.2)
                left = until - time.monotonic()
                if left <= 0 or self._stopping:
                    return
                self._cond.wait(min(left, tick))
            self._tick()

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
                self.fail(f"cannot upload {key}: {err}; capture disabled, training continues")
            else:
                self._outage(key, err)
            return False
        except errors.StoreError as err:
            self._outage(key, err)
            return False
        except Exception as err:  # noqa: BLE001 - fail open on anything unexpected, never crash training
            self.fail(
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
                size_text(self.config.max_pending_bytes),
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
        """Wait at most `timeout` seconds until every object handed over is written (or dropped); True if idle."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
        return True

    def drain(self, until: float) -> None:
        """Upload what is pending until `until` (monotonic), then abandon the rest (counted lost) and stop
        the thread once it is idle; the outage in progress, if any, is added to `outage_seconds`."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            while (self._pending or self._busy) and time.monotonic() < until:
                self._cond.wait(min(until - time.monotonic(), 0.05))
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
                f"and the {size_text(self.config.max_pending_bytes)} of pending segments were full"
                if not left
                else f"{self.lost_steps} steps lost in all (the store failed for {self.outage_seconds:.1f}s)"
            )

    def join(self, deadline: float) -> None:
        """Wait for the upload thread to end, until `deadline` (monotonic) at most."""
        self._thread.join(max(0.0, deadline - time.monotonic()))

    def write_end(self, end: run_format.EndInfo, deadline: float) -> None:
        """PUT END.json for this attempt, trying again while `deadline` (monotonic) leaves time (a store just
        back may still answer errors for a moment). Runs on a thread of `RankWriter.close`'s."""
        key = run_format.end_key(self.rank)
        while True:
            try:
                if not self._claimed:
                    self._claim_attempt()
                data = rank_end.write(self.store, self.rank, end.model_copy(update={"attempt": self.attempt}))
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
