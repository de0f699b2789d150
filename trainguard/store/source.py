"""Reads one rank of a run in our own format, incrementally.

`RankSource.poll()` lists the rank's prefix after the last key seen (`StartAfter`), so no key
is read twice and the whole prefix is never re-listed. A catalogue version newer than the one
held is fetched by its key before the segment that needs it is returned. A corrupt segment is
reported through `problems` and skipped; later segments are still read. A segment or catalogue of
another major format version raises `UnsupportedVersion` instead (not damage: a newer writer's
every segment would be skipped), after the segments before it are handed over. Other formats
(smdebug, TensorBoard) provide classes with the same three methods.
"""

from __future__ import annotations

import json
import logging
from typing import Protocol

from pydantic import ValidationError

from trainguard.store import errors, format
from trainguard.store.backend import Store

log = logging.getLogger(__name__)


class Source(Protocol):
    """What the reader, the follower and the evaluator need from one rank of any run format."""

    rank: int
    problems: list[str]

    def poll(self) -> list[format.Segment]:
        """Return the segments that appeared since the last call, in step order."""

    def catalogue(self) -> dict[int, format.TensorInfo]:
        """Return every tensor and scalar known so far, by id."""

    def ended(self) -> format.EndInfo | None:
        """Return the end marker once the rank has stopped writing, else None."""


def load_json_doc(store: Store, key: str, model: type[format._Doc]) -> format._Doc:
    """Fetch and validate a JSON document; raise FormatError naming the key on bad content."""
    raw = store.get(key)
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise errors.FormatError(
            f"{store.uri}/{key} is not valid JSON ({err}); the object is damaged"
        ) from err
    if isinstance(doc, dict) and "format_version" in doc:
        format.check_version(str(doc["format_version"]), what=f"{store.uri}/{key}")
    try:
        return model.model_validate(doc)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise errors.FormatError(f"{store.uri}/{key}: field {where!r} {first['msg'].lower()}") from err


class RankSource:
    """One rank of a TrainGuard run, read segment by segment."""

    def __init__(self, store: Store, rank: int, *, start_after: str | None = None) -> None:
        self.store = store
        self.rank = rank
        self.prefix = format.rank_prefix(rank)
        self.last_key: str | None = start_after
        self.problems: list[str] = []
        self.bytes_read = 0
        self._catalogue: dict[int, format.TensorInfo] = {}
        self._catalogue_version = -1
        self._end: format.EndInfo | None = None

    def _ensure_catalogue(self, version: int) -> None:
        if version <= self._catalogue_version:
            return
        cat = load_json_doc(self.store, format.meta_key(self.rank, version), format.Catalogue)
        assert isinstance(cat, format.Catalogue)
        self._catalogue = cat.by_id()
        self._catalogue_version = version

    def poll(self) -> list[format.Segment]:
        keys = self.store.list(self.prefix, start_after=self.last_key or self.prefix + "seg-")
        out: list[format.Segment] = []
        for key in keys:
            if format.parse_segment_name(key) is None:
                self.last_key = key  # not a segment: skipped, and not listed again
                continue
            try:
                data = self.store.get(key)
                self.bytes_read += len(data)
                seg = format.decode_segment(data, key=f"{self.store.uri}/{key}")
                self._ensure_catalogue(seg.catalogue_version)
            except errors.NotFound as err:
                self._problem(f"{self.store.uri}/{key} was listed but is gone ({err}); skipped")
            except errors.UnsupportedVersion:
                if out:
                    return out  # hand over what was read; this key raises again next time
                raise  # not damage: skipping it would skip every later segment of that writer too
            except errors.FormatError as err:
                self._problem(str(err))
            except errors.StoreError:
                if out:
                    return out  # a passing failure: hand over what was read; this key is read again next time
                raise
            else:
                out.append(seg)
            self.last_key = key
        return out

    def _problem(self, message: str) -> None:
        log.warning("trainguard: %s", message)
        self.problems.append(message)

    def catalogue(self) -> dict[int, format.TensorInfo]:
        if self._catalogue_version < 0:
            # No segment yet: take the newest catalogue that exists, if any.
            metas = [k for k in self.store.list(self.prefix + "meta-") if k.endswith(".json")]
            if metas:
                self._ensure_catalogue(int(metas[-1].rsplit("-", 1)[1].split(".")[0]))
        return self._catalogue

    def ended(self) -> format.EndInfo | None:
        if self._end is None:
            try:
                doc = load_json_doc(self.store, format.end_key(self.rank), format.EndInfo)
            except errors.NotFound:
                return None
            assert isinstance(doc, format.EndInfo)
            self._end = doc
        return self._end
