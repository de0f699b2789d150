"""The catalogue one rank's writer keeps: every tensor and scalar it has defined, by id.

Used by `writer.RankWriter` (`define`, `annotate`, `info`) and by `step_buffer.StepBuffer`, which
takes a new catalogue version (`take_version`) before each segment that needs one, so the
catalogue always reaches the store before the segments that refer to it. Ids are only ever
added, so a known name is looked up without the lock. Uploading is left to `upload_queue.py`.
"""

from __future__ import annotations

import threading

from trainguard.store import run_format


class TensorCatalogue:
    """Ids of one rank's tensors and scalars, and the catalogue versions that publish them. Thread-safe."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self._lock = threading.Lock()
        self._entries: list[run_format.TensorInfo] = []
        self._ids: dict[tuple[str, str | None], int] = {}
        self.version = -1
        """The newest version taken (-1: none yet)."""
        self._dirty = False

    def define(self, name: str, *, collection: str, mode: str | None = None, **attrs: object) -> int:
        """Return the id of a tensor (or, with `mode`, a scalar), adding it to the catalogue if new."""
        key = (name, mode)
        tid = self._ids.get(key)  # known names need no lock: ids are only ever added, under it
        if tid is not None:
            return tid
        with self._lock:
            tid = self._ids.get(key)
            if tid is None:
                tid = len(self._entries)
                self._entries.append(
                    run_format.TensorInfo(id=tid, name=name, collection=collection, mode=mode, **attrs)  # type: ignore[arg-type]
                )
                self._ids[key] = tid
                self._dirty = True
            return tid

    def annotate(self, tensor_id: int, **attrs: object) -> None:
        """Set attributes of an id returned by `define` that were not known then (e.g. `order`); the
        catalogue is published again before the next segment."""
        with self._lock:
            info = self._entries[tensor_id]
            if any(getattr(info, k) != v for k, v in attrs.items()):
                self._entries[tensor_id] = info.model_copy(update=attrs)
                self._dirty = True

    def info(self, tensor_id: int) -> run_format.TensorInfo:
        """Return the catalogue entry of an id returned by `define`."""
        return self._entries[tensor_id]

    def take_version(self) -> tuple[int, bytes] | None:
        """Return (version, JSON) of a new catalogue version when something changed since the last one, else None."""
        with self._lock:
            if not self._dirty:
                return None
            self.version += 1
            cat = run_format.Catalogue(rank=self.rank, version=self.version, tensors=list(self._entries))
            self._dirty = False
            return self.version, cat.model_dump_json().encode()
