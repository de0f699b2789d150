"""Reads one rank of a run in our own format, incrementally.

`RankSource.poll()` lists the rank's prefix after the last key seen (`StartAfter`), so no key
is read twice and the whole prefix is never re-listed. Keys sort in write order, attempt by
attempt (see `run_format`): a rank restarted on the same URI continues after the earlier attempt's
segments, each segment carrying its `attempt`. A catalogue version newer than the one held (or
the first of a new attempt) is fetched by its key before the segment that needs it is returned.
An END of an attempt older than the newest one read is stale (the rank was restarted) and is
not reported by `ended()`; nor is one older than `not_before` (a sidecar's pod started after
it). A corrupt segment is reported through `problems` (a `Problem` naming its key) and skipped; later segments are still
read. A segment or catalogue of another major format version raises `UnsupportedVersion`
instead (not damage: a newer writer's every segment would be skipped), after the segments
before it are handed over. Other formats (smdebug, TensorBoard) provide classes with the same
three methods.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Protocol

from pydantic import ValidationError

from trainguard.store import errors, run_documents, run_format
from trainguard.store.backends import Store

log = logging.getLogger(__name__)


class Problem(str):
    """One object a reader skipped, as a message for people (the string itself) that also carries, as data,
    the object's key and, for one of our segments, what its key says (`segment`: attempt, sequence, steps).

    Readers append these to `Source.problems`; the evaluator turns each into a data gap over the steps
    `segment` names, without reading the message.
    """

    key: str
    segment: run_format.SegmentName | None

    def __new__(cls, message: str, *, key: str) -> Problem:  # noqa: PYI034 - Self needs Python 3.11
        self = super().__new__(cls, message)
        self.key = key
        self.segment = run_format.parse_segment_name(key)
        return self


class Source(Protocol):
    """What the reader, the follower and the evaluator need from one rank of any run format."""

    rank: int
    problems: list[str]
    """What was skipped, oldest first: `Problem`s where the reader knows the object, else plain messages."""

    def poll(self) -> list[run_format.Segment]:
        """Return the segments that appeared since the last call, in step order."""

    def catalogue(self) -> dict[int, run_format.TensorInfo]:
        """Return every tensor and scalar known so far, by id."""

    def ended(self) -> run_format.EndInfo | None:
        """Return the end marker once the rank has stopped writing, else None."""


def load_json_doc(store: Store, key: str, model: type[run_documents._Doc]) -> run_documents._Doc:
    """Fetch and validate a JSON document; raise FormatError naming the key on bad content."""
    raw = store.get(key)
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise errors.FormatError(
            f"{store.uri}/{key} is not valid JSON ({err}); the object is damaged"
        ) from err
    except RecursionError as err:  # json's parser recurses once per nesting level
        raise errors.FormatError(
            f"{store.uri}/{key} nests arrays or objects too deeply to parse; the object is damaged"
        ) from err
    if isinstance(doc, dict) and "format_version" in doc:
        run_format.check_version(str(doc["format_version"]), what=f"{store.uri}/{key}")
    try:
        return model.model_validate(doc)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise errors.FormatError(f"{store.uri}/{key}: field {where!r} {first['msg'].lower()}") from err


def load_catalogue(store: Store, rank: int, attempt: str, version: int) -> dict[int, run_format.TensorInfo]:
    """Fetch catalogue `version` of one writer attempt of a rank, by tensor id."""
    cat = load_json_doc(store, run_format.meta_key(rank, version, attempt=attempt), run_format.Catalogue)
    assert isinstance(cat, run_format.Catalogue)
    return cat.by_id()


def later_attempt(store: Store, rank: int, attempt: str) -> str | None:
    """Return the newest writer attempt of `rank` in the store that is later than `attempt`, or None.

    Lists the catalogues after `attempt`'s only (a few per attempt): every attempt PUTs its first
    catalogue before its first segment, so a later attempt with data has one.
    """
    keys = store.list(
        run_format.rank_prefix(rank) + run_format.CATALOGUE_NAME_PREFIX,
        start_after=run_format.after_attempt(rank, attempt, name_prefix=run_format.CATALOGUE_NAME_PREFIX),
    )
    return max((m[0] for m in map(run_format.parse_meta_name, keys) if m and m[0]), default=None)


class RankSource:
    """One rank of a TrainGuard run, read segment by segment."""

    def __init__(
        self, store: Store, rank: int, *, start_after: str | None = None, not_before: str | None = None
    ) -> None:
        self.store = store
        self.rank = rank
        self.prefix = run_format.rank_prefix(rank)
        self.last_key: str | None = start_after
        name = run_format.parse_segment_name(start_after) if start_after else None
        self.attempt: str | None = name.attempt if name else None
        """The writer attempt of the last segment read (None before the first)."""
        self.not_before = not_before
        self.problems: list[str] = []
        self.bytes_read = 0
        self._catalogue: dict[int, run_format.TensorInfo] = {}
        self._catalogue_at: tuple[str, int] = ("", -1)
        self._end: run_format.EndInfo | None = None

    def _ensure_catalogue(self, attempt: str, version: int) -> None:
        held_attempt, held_version = self._catalogue_at
        if attempt == held_attempt and version <= held_version:
            return
        self._catalogue = load_catalogue(self.store, self.rank, attempt, version)
        self._catalogue_at = (attempt, version)

    def poll(self) -> list[run_format.Segment]:
        keys = self.store.list(
            self.prefix, start_after=self.last_key or self.prefix + run_format.SEGMENT_NAME_PREFIX
        )
        out: list[run_format.Segment] = []
        for key in keys:
            name = run_format.parse_segment_name(key)
            if name is None:
                self.last_key = key  # not a segment: skipped, and not listed again
                continue
            try:
                data = self.store.get(key)
                self.bytes_read += len(data)
                seg = run_format.decode_segment(data, key=f"{self.store.uri}/{key}")
                self._ensure_catalogue(name.attempt, seg.catalogue_version)
                if name.attempt:
                    seg = dataclasses.replace(seg, attempt=name.attempt)
            except errors.NotFound as err:
                self._problem(f"{self.store.uri}/{key} was listed but is gone ({err}); skipped", key=key)
            except errors.UnsupportedVersion:
                if out:
                    return out  # hand over what was read; this key raises again next time
                raise  # not damage: skipping it would skip every later segment of that writer too
            except errors.FormatError as err:
                self._problem(str(err), key=key)
            except errors.StoreError:
                if out:
                    return out  # a passing failure: hand over what was read; this key is read again next time
                raise
            else:
                out.append(seg)
            self.last_key = key
            self.attempt = name.attempt
        return out

    def _problem(self, message: str, *, key: str) -> None:
        log.warning("trainguard: %s", message)
        self.problems.append(Problem(message, key=key))

    def catalogue(self) -> dict[int, run_format.TensorInfo]:
        if self._catalogue_at[1] < 0:
            # No segment yet: take the newest catalogue that exists, if any.
            metas = [
                m
                for m in map(
                    run_format.parse_meta_name,
                    self.store.list(self.prefix + run_format.CATALOGUE_NAME_PREFIX),
                )
                if m
            ]
            if metas:
                self._ensure_catalogue(*max(metas))
        return self._catalogue

    def ended(self) -> run_format.EndInfo | None:
        """Return the rank's END once it closes the newest attempt read; a stale one is read again next time."""
        if self._end is None or self._stale(self._end):
            try:
                doc = load_json_doc(self.store, run_format.end_key(self.rank), run_format.EndInfo)
            except errors.NotFound:
                return None
            assert isinstance(doc, run_format.EndInfo)
            self._end = doc
        return None if self._stale(self._end) else self._end

    def _stale(self, end: run_format.EndInfo) -> bool:
        """Whether `end` closes an attempt older than the newest read (or than `not_before`)."""
        return end.is_stale(self.attempt, self.not_before)
