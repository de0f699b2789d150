"""`WriterConfig`: how often one rank's writer flushes, how much it keeps while the store fails, how long it
may take to close.

Read by `step_buffer` (the flush policy), `upload_queue` (pending memory, retries) and `writer`
(`close`). The capture settings (`capture.config`) map onto it; each field says what it costs.
"""

from __future__ import annotations

from dataclasses import dataclass

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
