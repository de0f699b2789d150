"""Writes one rank of a run: `RankWriter`, the facade over the writer's three parts.

Called by the capture layer (`capture.recorder`, `capture.torch.hook`) on the training thread.
`write_step` only appends small host arrays to a buffer; encoding and the PUT happen on one
background thread, so the training thread never waits on the store. The parts:
`tensor_catalogue` (ids and catalogue versions), `step_buffer` (the buffered steps and the flush
policy: full, on time, a new tensor set, the run's first NaN/Inf at once) and `upload_queue` (the
pending list bounded in bytes, keys named in upload order per writer attempt, retries through
store outages, steps dropped and counted when the list is full). Only a store that refused the very
first object disables the writer: a setup error, logged once and recorded in `END.json` (fail
open). `close()` is bounded (`close_timeout_seconds`): what is still pending then is counted lost,
and END.json is written (through `rank_end.write`) on a thread of its own, so a store that accepts
connections and never answers cannot hold the script's exit longer. The statistics themselves are
computed by the caller; this package never sees a tensor.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import numpy as np

from trainguard.store import run_format
from trainguard.store.backends import Store
from trainguard.store.step_buffer import StepBuffer
from trainguard.store.tensor_catalogue import TensorCatalogue
from trainguard.store.upload_queue import UploadQueue
from trainguard.store.writer_config import MIB, WriterConfig

__all__ = ["MIB", "RankWriter", "WriterConfig"]

log = logging.getLogger(__name__)


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
        self.errors: list[str] = []
        """Capture errors, newest last (END.json `errors`); the capture layer appends its own."""
        self.skipped_steps = 0
        """Saved steps the capture layer skipped (it counts them here; END.json reports them)."""
        self.dropped_scalars = 0
        """Device scalars the capture layer dropped rather than wait for the device (END.json `dropped_scalars`)."""
        self.unchecked_steps = 0
        """Steps the capture layer saw go by without counting them (END.json `unchecked_steps`)."""
        self.blind_since_step: int | None = None
        """The first step not counted of the blind spell in progress at close (END.json `blind_since_step`)."""
        self.catalogue = TensorCatalogue(rank)
        self.uploads = UploadQueue(
            store,
            rank=rank,
            config=self.config,
            attempt=run_format.attempt_id(self._clock()),
            errors_list=self.errors,
        )
        self.buffer = StepBuffer(
            config=self.config, catalogue=self.catalogue, queue=self.uploads, clock=clock
        )
        self.uploads.start(on_tick=self.buffer.maybe_flush)
        if rank == 0:
            info = run_format.RunInfo(
                run_id=run_id,
                framework=framework,
                world_size=world_size,
                start_time=self._clock(),
                config=dict(hook_config or {}),
            )
            self.uploads.submit("run", info.model_dump_json(indent=1).encode())

    # --- catalogue -------------------------------------------------------------------------
    def define(self, name: str, *, collection: str, mode: str | None = None, **attrs: object) -> int:
        """Return the id of a tensor (or, with `mode`, a scalar), adding it to the catalogue if new."""
        return self.catalogue.define(name, collection=collection, mode=mode, **attrs)

    def annotate(self, tensor_id: int, **attrs: object) -> None:
        """Set catalogue attributes of an id returned by `define` that were not known then (e.g. `order`);
        the catalogue is written again before the next segment."""
        self.catalogue.annotate(tensor_id, **attrs)

    def info(self, tensor_id: int) -> run_format.TensorInfo:
        """Return the catalogue entry of an id returned by `define`."""
        return self.catalogue.info(tensor_id)

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
        self.buffer.write_step(
            step, tensor_ids, stats, wall_time=wall_time, units=units, hists=hists, nonfinite=nonfinite
        )

    def write_scalars(self, step: int, ids: Sequence[int], values: Sequence[float]) -> None:
        """Buffer scalar values recorded at `step` (any step, saved or not)."""
        self.buffer.write_scalars(step, ids, values)

    def write_scalar(self, step: int, tensor_id: int, value: float) -> None:
        """Buffer one scalar value (the hook's call, once per recorded scalar)."""
        self.buffer.write_scalar(step, tensor_id, value)

    def write_scalar_rows(self, rows: Sequence[tuple[int, int, float]]) -> None:
        """Buffer (step, id, value) rows of any steps at once (the hook's unsaved steps' values, at a saved step)."""
        self.buffer.write_scalar_rows(rows)

    def write_record(self, step: int, name: str, array: np.ndarray) -> None:
        """Buffer one array of a per-step record stream (e.g. prediction counts `pred.<id>`).

        The segment stores the stacked arrays as `extra.<name>` and their steps as `extra.<name>.steps`.
        """
        self.buffer.write_record(step, name, array)

    def together(self) -> AbstractContextManager[None]:
        """Keep the writes made inside the block in one segment: one step's statistics and scalars then never
        straddle two segments (a flush they call for waits for the end of the block, and the uploader's
        flush on time waits for the lock), so a dropped segment loses whole steps and counts each once."""
        return self.buffer.together()

    def flush(self) -> None:
        """Hand the buffered steps to the uploader as one segment."""
        self.buffer.flush()

    def maybe_flush(self) -> None:
        """Flush if the buffer is older than `flush_interval_seconds` (the upload thread calls this)."""
        self.buffer.maybe_flush()

    # --- state -------------------------------------------------------------------------------
    @property
    def attempt(self) -> str:
        """This writer's attempt id; final once the first object is uploaded."""
        return self.uploads.attempt

    @property
    def disabled(self) -> bool:
        """True once the store refused the first object (or a bug struck): nothing more is written."""
        return self.uploads.disabled

    @property
    def closed(self) -> bool:
        return self.buffer.closed

    @property
    def last_step(self) -> int | None:
        """The highest step written so far (END.json `last_step`)."""
        return self.buffer.last_step

    @property
    def lost_steps(self) -> int:
        """Steps whose data never reached the store: dropped while it failed and the pending list was full,
        or still pending when `close()` ran out of time (END.json `lost_steps`)."""
        return self.uploads.lost_steps

    @property
    def outage_seconds(self) -> float:
        """Time during which uploads failed, summed over the outages (END.json `store_outage_seconds`)."""
        return self.uploads.outage_seconds

    @property
    def bytes_written(self) -> int:
        return self.uploads.bytes_written

    @property
    def objects_written(self) -> int:
        return self.uploads.objects_written

    @property
    def pending_bytes(self) -> int:
        """Bytes of segments waiting for upload now."""
        return self.uploads.pending_bytes

    def _fail(self, message: str) -> None:
        """Disable the writer for good (the recorder's call when capture itself fails); log once."""
        self.uploads.fail(message)

    def wait_idle(self, timeout: float) -> bool:
        """Wait at most `timeout` seconds until every object handed to the uploader is written (or dropped);
        True if it is idle. For benchmarks and tests: training never waits on this."""
        return self.uploads.wait_idle(timeout)

    # --- close -------------------------------------------------------------------------------
    def close(self, *, status: str = "ok", exception: str | None = None) -> None:
        """Flush, wait (bounded) for pending uploads, write END.json. Idempotent; at most `close_timeout_seconds`.

        What is still pending when the time for it runs out is counted lost (the object being uploaded at
        that moment too, though it may still land). END.json is written on a thread of its own, so a store
        that accepts connections and never answers holds `close()` no longer than the deadline."""
        if self.closed:
            return
        self.buffer.close()
        deadline = time.monotonic() + self.config.close_timeout_seconds
        self.uploads.drain(deadline - self.config.end_timeout_seconds)
        end = run_format.EndInfo(
            status="error" if (self.errors or exception) and status == "ok" else status,
            last_step=self.last_step,
            wall_time=self._clock(),
            errors=self.errors[-20:],
            skipped_steps=self.skipped_steps,
            dropped_scalars=self.dropped_scalars,
            lost_steps=self.lost_steps,
            unchecked_steps=self.unchecked_steps,
            blind_since_step=self.blind_since_step,
            store_outage_seconds=round(self.outage_seconds, 3),
            exception=exception,
        )
        writer = threading.Thread(
            target=self.uploads.write_end,
            args=(end, deadline),
            name=f"trainguard-end-{self.rank}",
            daemon=True,
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
        self.uploads.join(deadline)
