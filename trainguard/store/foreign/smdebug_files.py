"""smdebug's files, read one at a time: the index and collections documents, the names and collections
smdebug gives tensors (`Classifier`), reductions folded back into our statistic columns, and one step of
one worker decoded from its event file (`read_step`).

Used by `smdebug.py`, which follows a worker step by step and turns what is read here into segments.
Framing is in `tfrecord.py`, protobuf decoding in `tfevent.py`; the format is described in
shared/research/smdebug.md §1. A damaged document or record is reported in `problems`, never raised.
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
COLLECTIONS_RE = re.compile(r"^collections/\d{9}/(.+)_collections\.json$")
WORKER_RE = re.compile(r"^worker_(\d+)$")

MODES: dict[str, Mode] = {"TRAIN": Mode.TRAIN, "EVAL": Mode.EVAL, "PREDICT": Mode.EVAL, "GLOBAL": Mode.TRAIN}
"""smdebug ModeKeys -> our modes. PREDICT counts as eval (held-out data); GLOBAL (no mode set) as train."""
_MODE_KEYS = {"1": "TRAIN", "2": "EVAL", "3": "PREDICT", "4": "GLOBAL"}

_COLLECTIONS = sagemaker.COLLECTIONS
"""smdebug collection -> ours (kept with SageMaker's other names in `trainguard.api.sagemaker`)."""
_SCALAR_COLLECTIONS = (Collection.LOSSES, Collection.METRICS)
PARAMETERS = (Collection.WEIGHTS, Collection.BIASES)


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
            f"{where} is not a valid smdebug index ({first_line(err)}); step {step} of {worker} skipped"
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


def first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


# --- opening a run -------------------------------------------------------------------------------
def load_collections(
    store: Store, *, worker: str | None = None, problems: list[str] | None = None
) -> CollectionsDoc | None:
    """Return the collections JSON of `worker` (or the first one present), None if there is none yet."""
    keys = [k for k in store.list(COLLECTIONS_PREFIX) if COLLECTIONS_RE.match(k)]
    if not keys:
        return None
    mine = [k for k in keys if COLLECTIONS_RE.match(k).group(1) == worker]  # type: ignore[union-attr]
    key = (mine or keys)[0]
    try:
        return CollectionsDoc.model_validate(json.loads(store.get(key)))
    except _BAD_DOCUMENT as err:
        message = f"{store.uri}/{key} is not a valid smdebug collections file ({first_line(err)}); collections are guessed from tensor names"
        log.warning("trainguard: %s", message)
        if problems is not None:
            problems.append(message)
        return CollectionsDoc()


def worker_ranks(workers: Iterable[str]) -> dict[int, str]:
    """Return rank -> worker: `worker_N` is rank N; other names (TF device strings) follow, sorted."""
    names = sorted(set(workers))
    out: dict[int, str] = {}
    for w in names:
        m = WORKER_RE.match(w)
        if m:
            out[int(m.group(1))] = w
    nxt = max(out, default=-1) + 1
    for w in names:
        if not WORKER_RE.match(w):
            out[nxt] = w
            nxt += 1
    return dict(sorted(out.items()))
