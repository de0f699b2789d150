"""Reads a TensorBoard log directory as a TrainGuard run: its scalars, as rank 0.

`runs.open_run` calls `open_tensorboard` for a root `detect` recognises (`*tfevents*` files). `TensorBoardSource` reads
every event file below the root (subdirectories included), remembers how far it has read each one
(TensorBoard appends to a file while training runs) and returns only records it has not returned
before; a record cut off at the end of a file is left for the next poll. Scalars are `simple_value`
values and the tensor-encoded scalars (plugin `scalars`) that `torch.utils.tensorboard`
(`new_style=True`) and TF2 write. Histograms, images, audio and text are ignored.

Modes: a scalar is `eval` when its tag has a word `val`, `valid`, `validation`, `eval`, `evaluation`,
`test` or `testing` (words are split at any non-alphanumeric character, so `val_loss` and
`accuracy/test` are eval, `interval` is not), or when a directory between the root and its event
file is such a word (`logs/eval/`, `logs/validation/`); otherwise it is `train`. Other directories
(`logs/run2/`) prefix the tag (`run2/loss`), so runs logged side by side do not mix; `train`/`eval`
directories do not. TensorBoard has no end marker, so `ended()` is always None and `follow()` on a
TensorBoard run ends by its idle timeout. Framing and protobuf decoding live in `tfrecord.py` and
`tfevent.py`.
"""

from __future__ import annotations

import logging
import re

import numpy as np

from trainguard.api.enums import Collection, Mode
from trainguard.store import backends, errors, run_format, stats
from trainguard.store.backends import Store
from trainguard.store.foreign import tfevent, tfrecord
from trainguard.store.reader import Run

log = logging.getLogger(__name__)

EVAL_WORDS = frozenset({"val", "valid", "validation", "eval", "evaluation", "test", "testing"})
TRAIN_WORDS = frozenset({"train", "training"})
_WORD = re.compile(r"[A-Za-z0-9]+")


def is_event_file(key: str) -> bool:
    """Return whether a key names a TensorBoard event file (`events.out.tfevents.*`, smdebug's `*.tfevents`)."""
    return "tfevents" in key.rsplit("/", 1)[-1]


def scalar_name_and_mode(key: str, tag: str) -> tuple[str, Mode]:
    """Return (our scalar name, mode) for `tag` logged in the event file `key` (relative to the root)."""
    dirs = key.split("/")[:-1]
    words = {w.lower() for w in _WORD.findall(tag)}
    mode = Mode.EVAL if words & EVAL_WORDS or any(d.lower() in EVAL_WORDS for d in dirs) else Mode.TRAIN
    prefix = [d for d in dirs if d.lower() not in EVAL_WORDS | TRAIN_WORDS]
    return "/".join([*prefix, tag]), mode


def _scalar_value(value: tfevent.Value) -> float | None:
    if value.simple_value is not None:
        return value.simple_value
    t = value.tensor
    if t is None or t.values is None or t.values.size != 1 or t.values.dtype.kind not in "biuf":
        return None
    if "scalars" in value.plugins or not value.plugins:
        return float(np.asarray(t.values, np.float64).reshape(-1)[0])
    return None


class TensorBoardSource:
    """A TensorBoard log directory as one rank's `Source`: new scalar records as segments."""

    def __init__(self, store: Store, *, rank: int = 0) -> None:
        self.store = store
        self.rank = rank
        self.problems: list[str] = []
        self.bytes_read = 0
        self._offsets: dict[str, int] = {}
        self._dead: set[str] = set()
        self._catalogue: dict[int, run_format.TensorInfo] = {}
        self._ids: dict[tuple[str, str], int] = {}
        self._ignored: set[str] = set()

    def poll(self) -> list[run_format.Segment]:
        points: list[tuple[int, int, float, float]] = []  # (step, tensor id, value, wall time)
        for key in self.store.list(""):
            if not is_event_file(key) or key in self._dead:
                continue
            try:
                data = self.store.get(key)
            except errors.NotFound:
                continue  # removed between listing and reading
            except errors.RefusedObject as err:
                self._dead.add(key)
                self.problems.append(str(err))
                log.warning("trainguard: %s", err)
                continue
            except errors.StoreError:
                if points:
                    break  # return what was read; this file is read again by the next poll
                raise
            self.bytes_read += len(data)  # the whole file: the Store protocol has no ranged GET
            offset = self._offsets.get(key, 0)
            if len(data) <= offset:
                continue
            self._offsets[key] = self._read(key, data, offset, points)
        if not points:
            return []
        points.sort(key=lambda p: p[0])
        steps = np.unique(np.asarray([p[0] for p in points], np.int64))
        wall = np.zeros(steps.size)
        np.maximum.at(wall, np.searchsorted(steps, [p[0] for p in points]), [p[3] for p in points])
        return [
            run_format.Segment(
                steps=steps,
                wall_time=wall,
                tensor_ids=np.zeros(0, np.int32),
                stats=np.zeros((steps.size, 0, stats.K), np.float32),
                scalar_steps=np.asarray([p[0] for p in points], np.int64),
                scalar_ids=np.asarray([p[1] for p in points], np.int32),
                scalar_values=np.asarray([p[2] for p in points], np.float64),
            )
        ]

    def _read(self, key: str, data: bytes, offset: int, points: list[tuple[int, int, float, float]]) -> int:
        """Decode the records of one file from `offset`; return the offset to resume from."""
        where = f"{self.store.uri}/{key}"
        while offset < len(data):
            try:
                rec = tfrecord.read_record(data, offset)
            except tfrecord.RecordError as err:
                if err.truncated:
                    return offset  # the writer has not finished this record yet
                if err.next_offset is None:
                    self._problem(f"{where}: {err}; the rest of this file cannot be framed and is skipped")
                    self._dead.add(key)
                    return len(data)
                self._problem(f"{where}: {err}; this record is skipped, the next ones are read")
                offset = err.next_offset
                continue
            offset = rec.end
            try:
                event = tfevent.decode_event(rec.payload)
            except tfevent.DecodeError as err:
                self._problem(f"{where}: record at byte {rec.offset} is not an Event ({err}); skipped")
                continue
            for value in event.values:
                scalar = _scalar_value(value)
                if scalar is None:
                    if value.kind not in self._ignored:
                        self._ignored.add(value.kind)
                        log.info(
                            "trainguard: %s: %s summaries are not read (only scalars)", where, value.kind
                        )
                    continue
                name, mode = scalar_name_and_mode(key, value.tag)
                points.append((event.step, self._id(name, mode), scalar, event.wall_time))
        return offset

    def _id(self, name: str, mode: Mode) -> int:
        tid = self._ids.get((name, mode.value))
        if tid is None:
            tid = self._ids[(name, mode.value)] = len(self._ids)
            collection = Collection.LOSSES if "loss" in name.lower() else Collection.METRICS
            self._catalogue[tid] = run_format.TensorInfo(
                id=tid, name=name, collection=collection.value, mode=mode.value
            )
        return tid

    def _problem(self, message: str) -> None:
        log.warning("trainguard: %s", message)
        self.problems.append(message)

    def catalogue(self) -> dict[int, run_format.TensorInfo]:
        return self._catalogue

    def ended(self) -> run_format.EndInfo | None:
        return None


def _start_time(store: Store, key: str) -> float:
    try:
        return tfevent.decode_event(tfrecord.read_record(store.get(key)).payload).wall_time
    except (errors.NotFound, tfrecord.RecordError, tfevent.DecodeError):
        return 0.0


PROBE_FOLDERS = 16
"""Folders below the root that `detect` looks into (`logs/train/`, `logs/eval/`, a run's name)."""


def detect(store: Store, top: list[str]) -> bool:
    """Whether a root holds a TensorBoard log: event files among `top` (the root's first entries) or in
    one of its first `PROBE_FOLDERS` folders (first page of each). Bounded, so a root that holds many
    other objects is not listed whole."""
    if any(is_event_file(k) for k in top if not k.endswith("/")):
        return True
    folders = [k for k in top if k.endswith("/")][:PROBE_FOLDERS]
    return any(any(map(is_event_file, store.list(f, limit=backends.PROBE_KEYS))) for f in folders)


def open_tensorboard(uri: str, store: Store) -> Run:
    """Open a TensorBoard log directory as a `reader.Run` of kind `tensorboard` with one rank, 0."""
    files = [k for k in store.list("") if is_event_file(k)]
    info = run_format.RunInfo(
        run_id=uri.rstrip("/").rsplit("/", 1)[-1],
        framework="tensorboard",
        start_time=_start_time(store, files[0]) if files else 0.0,
        config={"event_files": len(files)},
    )
    return Run(
        uri,
        store,
        kind="tensorboard",
        ranks=[0],
        info=info,
        source_factory=lambda r: TensorBoardSource(store, rank=r),
    )
