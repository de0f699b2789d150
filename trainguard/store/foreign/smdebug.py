"""Reads smdebug (SageMaker Debugger) output as a TrainGuard run: one rank per worker, statistics computed on read.

`runs.open_run` calls `open_smdebug` for a root `detect` recognises (`index/` and `events/`). `SmdebugSource` follows one
worker: it lists `index/` after the last key seen (an index JSON is smdebug's "step N of worker W is
complete" signal, written after the event file), fetches that step's event file once, cuts out each
record at the offsets the index gives, and turns raw tensors into Tier-0 rows with `stats.tier0`
(`update_l2`/`distance_l2` from consecutive raw values of weights and biases). Reductions-only tensors
(`smdebug/reductions/...`) fold back under their base tensor. Framing is in `tfrecord.py`, protobuf
decoding in `tfevent.py`; the format is described in shared/research/smdebug.md §1.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trainguard.api import sagemaker
from trainguard.api.enums import Collection, Mode
from trainguard.store import errors, run_format, stats
from trainguard.store.backends import Store
from trainguard.store.foreign import tfevent, tfrecord
from trainguard.store.reader import Run

log = logging.getLogger(__name__)

_BAD_DOCUMENT = (
    UnicodeDecodeError,
    json.JSONDecodeError,
    ValidationError,
    RecursionError,
    errors.RefusedObject,
)
"""What a damaged index or collections JSON raises (RecursionError: nested too deeply for json)."""

END_MARKER = "training_job_end.ts"
INDEX_PREFIX = "index/"
COLLECTIONS_PREFIX = "collections/"
REDUCTIONS_PREFIX = "smdebug/reductions/"
_INDEX_RE = re.compile(r"^index/\d{9}/(\d{12})_(.+)\.json$")
_COLLECTIONS_RE = re.compile(r"^collections/\d{9}/(.+)_collections\.json$")
_WORKER_RE = re.compile(r"^worker_(\d+)$")

MODES: dict[str, Mode] = {"TRAIN": Mode.TRAIN, "EVAL": Mode.EVAL, "PREDICT": Mode.EVAL, "GLOBAL": Mode.TRAIN}
"""smdebug ModeKeys -> our modes. PREDICT counts as eval (held-out data); GLOBAL (no mode set) as train."""
_MODE_KEYS = {"1": "TRAIN", "2": "EVAL", "3": "PREDICT", "4": "GLOBAL"}

_COLLECTIONS = sagemaker.COLLECTIONS
"""smdebug collection -> ours (kept with SageMaker's other names in `trainguard.api.sagemaker`)."""
_SCALAR_COLLECTIONS = (Collection.LOSSES, Collection.METRICS)
_PARAMETERS = (Collection.WEIGHTS, Collection.BIASES)


# --- the JSON documents smdebug writes (shared/research/smdebug.md §1.4, §1.5) ---------------------
class _Doc(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class IndexMeta(_Doc):
    mode: str = Field(description="TRAIN, EVAL, PREDICT or GLOBAL.")
    mode_step: int = Field(description="The step counted within the mode.")
    event_file_name: str = Field(description="The step's event file, relative to the run root.")


class TensorLocation(_Doc):
    tensorname: str
    start_idx: int = Field(ge=0, description="Byte offset of the framed record in the event file.")
    length: int = Field(gt=0, description="Bytes of the framed record (12 + payload + 4).")


class ShapeEntry(_Doc):
    tensorname: str
    shape: list[int]


class IndexDoc(_Doc):
    """`index/<bucket>/<step>_<worker>.json`: where each record of one step of one worker lies."""

    meta: IndexMeta
    tensor_payload: list[TensorLocation] = Field(default_factory=list)
    shape_payload: list[ShapeEntry] = Field(default_factory=list)


class CollectionDoc(_Doc):
    name: str = ""
    include_regex: list[str] = Field(default_factory=list)
    tensor_names: list[str] = Field(default_factory=list)


class CollectionsMeta(_Doc):
    num_workers: int = 1


class CollectionsDoc(_Doc):
    """`collections/000000000/<worker>_collections.json`: smdebug's CollectionManager export."""

    collections: dict[str, CollectionDoc] = Field(default_factory=dict)
    meta: CollectionsMeta = Field(default_factory=CollectionsMeta, alias="_meta")


# --- names and collections ------------------------------------------------------------------------
@dataclass(frozen=True)
class Naming:
    """What one smdebug tensor becomes in TrainGuard."""

    name: str
    collection: Collection
    scalar: bool


class Classifier:
    """Maps smdebug tensor names to our names and collections, by the collections JSON, then by name.

    `gradient/X` becomes `grad/X`; `scalar/X` (from `hook.save_scalar`) becomes the scalar `X`; other
    names are kept (`Sequential_0.weight`, `CrossEntropyLoss_output_0`). Without a collections JSON
    (it is exported only after the first saved step) the name rules mirror smdebug's default
    regexes, so a tensor is classified the same either way.
    """

    def __init__(self, doc: CollectionsDoc | None = None) -> None:
        self.doc = doc
        self._members: dict[str, list[str]] = {}
        self._regexes: list[tuple[str, re.Pattern[str]]] = []
        if doc is not None:
            for cname, coll in doc.collections.items():
                for t in coll.tensor_names:
                    self._members.setdefault(t, []).append(cname)
                for rx in coll.include_regex:
                    try:
                        self._regexes.append((cname, re.compile(rx)))
                    except re.error:
                        log.warning(
                            "trainguard: smdebug collection %s has an invalid regex %r; ignored", cname, rx
                        )

    def _smdebug_collection(self, name: str) -> Collection | None:
        names = self._members.get(name) or [c for c, rx in self._regexes if rx.search(name)]
        for smd_name, ours in _COLLECTIONS:
            if smd_name in names:
                return ours
        if any("activation" in n or "relu" in n for n in names):
            return Collection.ACTIVATIONS  # user-made collections such as `relu_activations`
        return None

    def classify(self, name: str, *, size: int, simple_value: bool = False) -> Naming:
        """Return our name, collection and whether it is a scalar, for a tensor holding `size` values."""
        coll = self._smdebug_collection(name) or _by_name(name, size=size)
        is_scalar = simple_value or name.startswith("scalar/") or (coll in _SCALAR_COLLECTIONS and size == 1)
        if is_scalar:
            short = name.removeprefix("scalar/")
            if coll not in _SCALAR_COLLECTIONS:
                coll = Collection.LOSSES if "loss" in short.lower() else Collection.METRICS
            return Naming(short, coll, True)
        if coll in _SCALAR_COLLECTIONS:
            coll = Collection.ACTIVATIONS  # a non-scalar "loss" (per-sample losses): a tensor like any other
        ours = "grad/" + name[len("gradient/") :] if name.startswith("gradient/") else name
        return Naming(ours, coll, False)


def _by_name(name: str, *, size: int) -> Collection:
    """smdebug's default collection regexes (`^gradient`, `^(?!gradient).*weight`, ...), plus scalars."""
    low = name.lower()
    if low.startswith("gradient/"):
        return Collection.GRADIENTS
    if "loss" in low and size == 1:
        return Collection.LOSSES
    if low.startswith("scalar/"):
        return Collection.METRICS
    if "weight" in low or "kernel" in low:
        return Collection.WEIGHTS
    if "bias" in low:
        return Collection.BIASES
    if re.search(r"_input_\d+$", name):
        return Collection.INPUTS
    return Collection.ACTIVATIONS


def reduction_parts(name: str) -> tuple[str, str] | None:
    """Return (base tensor name, reduction such as `abs_mean` or `l2`) of a reduction tensor, else None."""
    if not name.startswith(REDUCTIONS_PREFIX):
        return None
    red, _, base = name[len(REDUCTIONS_PREFIX) :].partition("/")
    return (base, red) if base else None


def stats_from_reductions(reductions: dict[str, float], *, count: int | None) -> np.ndarray:
    """Return a Tier-0 row from smdebug's stored reductions; what they cannot give is NaN.

    min, max, mean, abs_mean and l2 map directly. `count` comes from the index's shape
    (`save_shape=True`). std comes from `variance` (or `std`), stored by the framework's own op:
    PyTorch's is the unbiased (n-1) estimate, TensorFlow's and numpy's the population one. When
    count, mean and l2 are stored too, the convention is told apart by which of the two agrees with
    l2^2/n - mean^2, and the value is converted to our population std; otherwise it is taken as it
    is. nan/inf/zero counts and the update columns cannot be derived from reductions and stay NaN
    (unknown), not 0.
    """
    row = np.full(stats.K, np.nan, np.float32)
    col = run_format.COLUMN
    if count is not None:
        row[col["count"]] = count
    l2 = reductions.get("l2", reductions.get("abs_l2"))
    for ours, value in (
        ("min", reductions.get("min")),
        ("max", reductions.get("max")),
        ("mean", reductions.get("mean")),
        ("abs_mean", reductions.get("abs_mean")),
        ("l2", l2),
    ):
        if value is not None:
            row[col[ours]] = value
    variance = reductions.get("variance")
    if variance is None and "std" in reductions:
        variance = reductions["std"] ** 2
    if variance is not None:
        mean = reductions.get("mean")
        if count is not None and count > 1 and mean is not None and l2 is not None:
            population = l2 * l2 / count - mean * mean
            if abs(variance - population * count / (count - 1)) < abs(variance - population):
                variance = variance * (count - 1) / count  # Bessel-corrected (PyTorch): undo it
        row[col["std"]] = math.sqrt(variance) if variance >= 0 else math.nan
    return row


# --- one step of one worker -----------------------------------------------------------------------
@dataclass
class DecodedValue:
    """One record of an smdebug event file, decoded."""

    name: str
    step: int
    mode: str
    wall_time: float
    values: np.ndarray | None
    dtype: str
    simple_value: bool = False


@dataclass
class StepRead:
    """What `read_step` found: the index, the decoded records, and what was wrong."""

    step: int
    worker: str
    index: IndexDoc | None
    values: list[DecodedValue] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    bytes_read: int = 0


def parse_index_key(key: str) -> tuple[int, str] | None:
    """Return (global step, worker) of an index key, or None for any other key."""
    m = _INDEX_RE.match(key)
    return (int(m.group(1)), m.group(2)) if m else None


def read_step(store: Store, index_key: str) -> StepRead:
    """Read one step of one worker: its index JSON, then its event file in one GET, cut at the index's offsets.

    Each record's length CRC is checked; its footer may be smdebug's constant or a real payload
    CRC. A damaged record is reported in `problems` and skipped; the other records of the step
    are still returned. A missing or invalid index or event file leaves `values` empty.
    """
    parsed = parse_index_key(index_key)
    if parsed is None:
        raise ValueError(f"{index_key!r} is not an smdebug index key (index/<bucket>/<step>_<worker>.json)")
    step, worker = parsed
    out = StepRead(step=step, worker=worker, index=None)
    where = f"{store.uri}/{index_key}"
    try:
        raw = store.get(index_key)
        out.bytes_read += len(raw)
        out.index = IndexDoc.model_validate(json.loads(raw))
    except errors.NotFound as err:
        out.problems.append(f"{where} was listed but is gone ({err}); step {step} of {worker} skipped")
        return out
    except _BAD_DOCUMENT as err:
        out.problems.append(
            f"{where} is not a valid smdebug index ({_first_line(err)}); step {step} of {worker} skipped"
        )
        return out
    event_key = out.index.meta.event_file_name
    try:
        data = store.get(event_key)
    except errors.NotFound:
        out.problems.append(
            f"{where} points to {store.uri}/{event_key}, which does not exist; step {step} of {worker} skipped"
        )
        return out
    except errors.RefusedObject as err:
        out.problems.append(f"{err}; step {step} of {worker} skipped")
        return out
    out.bytes_read += len(data)
    mv = memoryview(data)
    for loc in out.index.tensor_payload:
        start, end = loc.start_idx, loc.start_idx + loc.length
        try:
            if end > len(mv):
                raise tfrecord.RecordError(f"the index gives bytes {start}-{end}, the file has {len(mv)}")
            rec = tfrecord.read_record(mv[:end], start)
            if rec.end != end:
                raise tfrecord.RecordError(
                    f"the record is {rec.end - start} bytes, the index says {loc.length}"
                )
            event = tfevent.decode_event(rec.payload)
        except (tfrecord.RecordError, tfevent.DecodeError) as err:
            out.problems.append(
                f"{store.uri}/{event_key}: record {loc.tensorname!r} (bytes {start}-{end}, step {step} of {worker}) "
                f"is damaged ({err}); skipped, the rest of the step is read"
            )
            continue
        for v in event.values:
            mode = _MODE_KEYS.get(v.plugins.get("mode", b"").decode("ascii", "replace"), out.index.meta.mode)
            if v.simple_value is not None:
                out.values.append(
                    DecodedValue(
                        v.tag,
                        step,
                        mode,
                        event.wall_time,
                        np.asarray(v.simple_value),
                        "float32",
                        simple_value=True,
                    )
                )
            elif v.tensor is not None:
                out.values.append(
                    DecodedValue(v.tag, step, mode, event.wall_time, v.tensor.values, v.tensor.dtype)
                )
    return out


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


# --- the Source ----------------------------------------------------------------------------------
@dataclass
class _Row:
    tid: int
    stats: np.ndarray
    raw: bool
    """True when computed from the raw tensor, False when folded from stored reductions."""
    hist: np.ndarray | None = None


@dataclass
class _StepRows:
    step: int
    wall_time: float
    rows: list[_Row]
    scalars: list[tuple[int, float]]
    tier1: bool = False


class SmdebugSource:
    """One smdebug worker as a `Source`: new steps as segments, in step order, each index read once.

    Tensors of EVAL/PREDICT steps are not turned into statistics (our runs hold tensor statistics
    of training steps only); their scalars (losses, metrics) are kept with mode `eval`. Tier-1
    log2 histograms of raw tensors are taken on every `tier1_interval_steps`-th saved train step,
    as the hook does (they cost about as much as all Tier-0 columns together).
    """

    def __init__(
        self,
        store: Store,
        *,
        rank: int,
        worker: str,
        start_after: str | None = None,
        tier1_interval_steps: int = 10,
    ) -> None:
        if tier1_interval_steps < 1:
            raise ValueError(f"tier1_interval_steps must be at least 1, got {tier1_interval_steps}")
        self.store = store
        self.rank = rank
        self.worker = worker
        self.tier1_interval_steps = tier1_interval_steps
        self._saved_train_steps = 0
        self.problems: list[str] = []
        self.bytes_read = 0
        self.last_key = start_after
        self._catalogue: dict[int, run_format.TensorInfo] = {}
        self._ids: dict[tuple[str, str | None], int] = {}
        self._prev: dict[int, np.ndarray] = {}
        self._first: dict[int, np.ndarray] = {}
        self._classifier: Classifier | None = None
        self._skipped_names: set[str] = set()
        self._end: run_format.EndInfo | None = None
        self._last_step: int | None = None
        self._last_wall_time = 0.0

    # Source protocol
    def poll(self) -> list[run_format.Segment]:
        """Return the steps whose index appeared since the last call, as segments in step order.

        A storage failure (after the backend's retries) ends the poll: the steps read before it
        are returned and the failed one is tried again by the next poll; with none read, it raises.
        """
        keys = self.store.list(INDEX_PREFIX, start_after=self.last_key or INDEX_PREFIX)
        steps: list[_StepRows] = []
        for key in keys:
            # Only this worker's finished index keys move the position: another worker's step N, or
            # smdebug's local `<key>.tmp` (renamed into place on close), can sort after a key of ours
            # that has not landed yet.
            parsed = parse_index_key(key)
            if parsed is None or parsed[1] != self.worker:
                continue
            try:
                if self._classifier is None:
                    self._classifier = self._load_classifier()
                read = read_step(self.store, key)
            except errors.StoreError:
                if steps:
                    break
                raise
            self.bytes_read += read.bytes_read
            for message in read.problems:
                self._problem(message)
            if read.index is not None:
                steps.append(self._rows(read))
            self.last_key = key
        return _segments(steps)

    def catalogue(self) -> dict[int, run_format.TensorInfo]:
        return self._catalogue

    def ended(self) -> run_format.EndInfo | None:
        """Return an EndInfo once `training_job_end.ts` exists (smdebug writes it at hook close)."""
        if self._end is None and self.store.exists(END_MARKER):
            last_step = self._last_step
            if last_step is None:  # not polled yet: the last index key of this worker says it
                steps = [
                    p[0]
                    for k in self.store.list(INDEX_PREFIX)
                    if (p := parse_index_key(k)) and p[1] == self.worker
                ]
                last_step = max(steps, default=None)
            self._end = run_format.EndInfo(
                status="ok", last_step=last_step, wall_time=self._last_wall_time, written_by="hook"
            )
        return self._end

    # internals
    def _problem(self, message: str) -> None:
        log.warning("trainguard: %s", message)
        self.problems.append(message)

    def _load_classifier(self) -> Classifier | None:
        """Load this worker's collections JSON (or any worker's); None while none exists yet."""
        doc = load_collections(self.store, worker=self.worker, problems=self.problems)
        return None if doc is None else Classifier(doc)

    def _id(self, naming: Naming, *, mode: str | None, shape: list[int], dtype: str) -> int:
        key = (naming.name, mode)
        tid = self._ids.get(key)
        if tid is None:
            tid = len(self._ids)
            self._ids[key] = tid
            base = naming.name.removeprefix("grad/")
            self._catalogue[tid] = run_format.TensorInfo(
                id=tid,
                name=naming.name,
                collection=naming.collection.value,
                shape=[] if naming.scalar else shape,
                dtype=dtype,
                module=base.rsplit(".", 1)[0] if "." in base and not naming.scalar else None,
                trainable=naming.collection in _PARAMETERS,
                mode=mode,
            )
        return tid

    def _rows(self, read: StepRead) -> _StepRows:
        assert read.index is not None
        classifier = self._classifier or Classifier(None)
        step_mode = MODES.get(read.index.meta.mode, Mode.TRAIN)
        shapes = {s.tensorname: s.shape for s in read.index.shape_payload}
        raws: dict[str, tuple[np.ndarray, str, Naming]] = {}
        reductions: dict[str, dict[str, float]] = {}
        out = _StepRows(step=read.step, wall_time=0.0, rows=[], scalars=[])
        for v in read.values:
            out.wall_time = max(out.wall_time, v.wall_time)
            if v.values is None:
                self._skip_once(v.name, f"dtype {v.dtype} is not numeric")
                continue
            if v.values.dtype.kind == "c":
                self._skip_once(v.name, f"dtype {v.dtype} is complex")
                continue
            red = reduction_parts(v.name)
            if red is not None:
                if v.values.size == 1:
                    reductions.setdefault(red[0], {})[red[1]] = float(v.values.reshape(()))
                continue
            naming = classifier.classify(v.name, size=int(v.values.size), simple_value=v.simple_value)
            if naming.scalar:
                mode = MODES.get(v.mode, step_mode).value
                tid = self._id(naming, mode=mode, shape=[], dtype=v.dtype)
                out.scalars.append((tid, float(np.asarray(v.values, np.float64).reshape(-1)[0])))
            else:
                raws[v.name] = (v.values, v.dtype, naming)
        if step_mode is Mode.TRAIN and (raws or reductions):
            out.tier1 = self._saved_train_steps % self.tier1_interval_steps == 0
            self._saved_train_steps += 1
            for values, dtype, naming in raws.values():
                tid = self._id(naming, mode=None, shape=list(values.shape), dtype=dtype)
                prev = first = None
                if naming.collection in _PARAMETERS:
                    prev = self._prev.get(tid)
                    first = self._first.setdefault(tid, values)
                    self._prev[tid] = values
                hist = stats.log2_hist(values) if out.tier1 else None
                out.rows.append(_Row(tid, stats.tier0(values, prev=prev, first=first), True, hist))
            for name, reds in reductions.items():
                if name in raws:
                    continue  # the raw tensor gives every column; its reductions add nothing
                shape = shapes.get(name)
                naming = classifier.classify(name, size=int(np.prod(shape)) if shape is not None else 2)
                if naming.scalar:
                    continue
                tid = self._id(naming, mode=None, shape=list(shape or []), dtype="unknown")
                count = int(np.prod(shape)) if shape is not None else None
                out.rows.append(_Row(tid, stats_from_reductions(reds, count=count), False))
        self._last_step = read.step
        self._last_wall_time = max(self._last_wall_time, out.wall_time)
        return out

    def _skip_once(self, name: str, why: str) -> None:
        if name not in self._skipped_names:
            self._skipped_names.add(name)
            self._problem(
                f"smdebug tensor {name!r} of {self.worker}: {why}; it has no statistics and is skipped"
            )


def _segments(steps: list[_StepRows]) -> list[run_format.Segment]:
    """Group consecutive steps with the same tensors (and the same raw/reduction split) into segments.

    Steps that carry only scalars (e.g. EVAL steps) join the current segment, whose `scalar_steps`
    may then hold steps without tensor statistics, as the run format allows.
    """
    groups: list[list[_StepRows]] = []
    group_keys: list[tuple[tuple[int, bool], ...] | None] = []
    for s in steps:
        key = tuple(sorted((r.tid, r.raw) for r in s.rows)) if s.rows else None
        if groups and (key is None or group_keys[-1] in (None, key)):
            groups[-1].append(s)
            group_keys[-1] = group_keys[-1] or key
        else:
            groups.append([s])
            group_keys.append(key)
    return [_segment(g) for g in groups]


def _segment(group: list[_StepRows]) -> run_format.Segment:
    with_rows = [s for s in group if s.rows]
    tids = sorted(r.tid for r in with_rows[0].rows) if with_rows else []
    stat_rows = []
    hists: dict[int, list[np.ndarray]] = {}
    for s in with_rows:
        by_tid = {r.tid: r for r in s.rows}
        stat_rows.append(np.stack([by_tid[t].stats for t in tids]))
        for t in tids:
            hist = by_tid[t].hist
            if hist is not None:
                hists.setdefault(t, []).append(hist)
    scalars = [(s.step, tid, value) for s in group for tid, value in s.scalars]
    steps = np.asarray([s.step for s in with_rows], np.int64)
    return run_format.Segment(
        steps=steps,
        wall_time=np.asarray([s.wall_time for s in with_rows], np.float64),
        tensor_ids=np.asarray(tids, np.int32),
        stats=np.stack(stat_rows).astype(np.float32) if stat_rows else np.zeros((0, 0, stats.K), np.float32),
        scalar_steps=np.asarray([x[0] for x in scalars], np.int64),
        scalar_ids=np.asarray([x[1] for x in scalars], np.int32),
        scalar_values=np.asarray([x[2] for x in scalars], np.float64),
        tier1_steps=np.asarray([s.step for s in with_rows if s.tier1], np.int64)
        if hists
        else np.zeros(0, np.int64),
        hists={t: np.stack(h) for t, h in hists.items()},
    )


# --- opening a run -------------------------------------------------------------------------------
def load_collections(
    store: Store, *, worker: str | None = None, problems: list[str] | None = None
) -> CollectionsDoc | None:
    """Return the collections JSON of `worker` (or the first one present), None if there is none yet."""
    keys = [k for k in store.list(COLLECTIONS_PREFIX) if _COLLECTIONS_RE.match(k)]
    if not keys:
        return None
    mine = [k for k in keys if _COLLECTIONS_RE.match(k).group(1) == worker]  # type: ignore[union-attr]
    key = (mine or keys)[0]
    try:
        return CollectionsDoc.model_validate(json.loads(store.get(key)))
    except _BAD_DOCUMENT as err:
        message = f"{store.uri}/{key} is not a valid smdebug collections file ({_first_line(err)}); collections are guessed from tensor names"
        log.warning("trainguard: %s", message)
        if problems is not None:
            problems.append(message)
        return CollectionsDoc()


def worker_ranks(workers: Iterable[str]) -> dict[int, str]:
    """Return rank -> worker: `worker_N` is rank N; other names (TF device strings) follow, sorted."""
    names = sorted(set(workers))
    out: dict[int, str] = {}
    for w in names:
        m = _WORKER_RE.match(w)
        if m:
            out[int(m.group(1))] = w
    nxt = max(out, default=-1) + 1
    for w in names:
        if not _WORKER_RE.match(w):
            out[nxt] = w
            nxt += 1
    return dict(sorted(out.items()))


def _start_time(store: Store, index_key: str | None) -> float:
    if index_key is None:
        return 0.0
    read = read_step(store, index_key)
    return min((v.wall_time for v in read.values), default=0.0)


def detect(store: Store, top: list[str]) -> bool:
    """Whether a root holds smdebug output: `index/` beside `events/` or `collections/`.

    Asks for those prefixes by name (one short listing each) rather than trusting `top`, which may be cut
    short on a root that also holds many other objects."""
    return bool(store.list(INDEX_PREFIX, delimiter="/", limit=1)) and any(
        store.list(p, delimiter="/", limit=1) for p in ("events/", COLLECTIONS_PREFIX)
    )


def open_smdebug(uri: str, store: Store) -> Run:
    """Open an smdebug output directory as a `reader.Run` of kind `smdebug`, one rank per worker."""
    index_keys = [k for k in store.list(INDEX_PREFIX) if parse_index_key(k)]
    workers = {parse_index_key(k)[1] for k in index_keys}  # type: ignore[index]
    workers |= {m.group(1) for k in store.list(COLLECTIONS_PREFIX) if (m := _COLLECTIONS_RE.match(k))}
    doc = load_collections(store)
    if doc is not None and all(_WORKER_RE.match(w) for w in workers):
        # Workers that have not written yet still count: `_meta.num_workers` is the world size.
        workers |= {f"worker_{i}" for i in range(doc.meta.num_workers)}
    ranks = worker_ranks(workers or {"worker_0"})
    info = run_format.RunInfo(
        run_id=uri.rstrip("/").rsplit("/", 1)[-1],
        framework="smdebug",
        world_size=max(doc.meta.num_workers if doc else 1, len(ranks)),
        start_time=_start_time(store, index_keys[0] if index_keys else None),
        config={
            "workers": {str(r): w for r, w in ranks.items()},
            "collections": sorted(doc.collections) if doc else [],
        },
    )
    return Run(
        uri,
        store,
        kind="smdebug",
        ranks=list(ranks),
        info=info,
        source_factory=lambda rank: SmdebugSource(store, rank=rank, worker=ranks[rank]),
    )
