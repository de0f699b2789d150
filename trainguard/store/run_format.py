"""The run format, version 2 (2.1): key names, the JSON documents and the segment codec.

This module is the contract between the hook (writer), the evaluator (follower) and offline
analysis. Everything is readable with numpy alone; segments are `.npz` archives loaded with
`allow_pickle=False`, so nothing from storage is ever unpickled. Moving bytes is left to the
backends (`backends/`); buffering and uploading to `writer.py`; listing and parsing a whole
run to `reader.py` and `follow.py`.

Layout under a run root:

    run.json                                    RunInfo, written by rank 0 when it starts
    rank-00000/meta-<attempt>-000000.json       Catalogue version 0 (append-only; new tensors -> new version)
    rank-00000/seg-<attempt>-<seq>-<first>-<last>.npz
                                                one immutable segment per flush
    rank-00000/END.json                         EndInfo, when the rank exits (written by the hook or the operator)
    evaluator/rank-00000/state.json             the evaluator's checkpoint (position and rule state)
    evaluator/ranks-00004_00005/state.json      the same for an evaluator that follows several ranks (a pod's)

`<attempt>` identifies one writer of the rank: its start time in milliseconds (13 digits), raised
past any attempt already in the store. A rank written again on the same URI (a Job retry, a run
resumed from a checkpoint) is a new attempt: its keys never overwrite the earlier attempt's, and
sort after them. `<seq>` (9 digits) counts one attempt's segments in the order they were uploaded,
so keys sort in write order and a follower that lists after the last key it read (`StartAfter`)
misses none, whatever steps a segment holds (`<first>`, `<last>`: 12 digits, for people).
Format 1 named segments `seg-<first>-<last>-<seq>.npz` and catalogues `meta-<version>.json`, with
no attempt; readers still read those runs (as one attempt named "").
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from trainguard.store import errors

FORMAT_VERSION = "2.2"
"""Major.minor. Readers refuse a major version they do not know (`READABLE_MAJORS`) and accept any minor.
2.1 added the optional `lost.before`/`lost.total` segment members and END.json's `lost_steps`, later the
optional `extra.blind` record (int64[n, 2]: blind since step, unchecked steps) and END.json's
`unchecked_steps`/`blind_since_step`; 2.2 the optional catalogue fields `shard` and `skipped` (`TensorInfo`).
Readers that do not know an optional field ignore it."""
READABLE_MAJORS = ("1", "2")
"""Format 1 differs only in key names (no attempt; see the module docstring)."""

STAT_COLUMNS: tuple[str, ...] = (
    "count",
    "nan",
    "inf",
    "zero",
    "min",
    "max",
    "mean",
    "std",
    "abs_mean",
    "l2",
    "update_l2",
    "distance_l2",
)
"""The fixed statistic columns of `Segment.stats` (K = 12).

`count`, `nan`, `inf`, `zero` are element counts. `min max mean std abs_mean l2` are taken over
all elements (a tensor holding NaN gives NaN there; the `nan`/`inf` columns say why). `std` is
the population standard deviation. `update_l2` is ||W - W at the previous saved step|| and
`distance_l2` is ||W - W at the first saved step||, both NaN for tensors that are not parameters.
"""

COLUMN: dict[str, int] = {name: i for i, name in enumerate(STAT_COLUMNS)}
HIST_BINS = 64
"""Tier-1 histograms: bin 0 counts exact zeros, bins 1..63 count |x| in [2^(b-40), 2^(b-39)), clamped."""
HIST_MIN_EXPONENT = -39

UNIT_KINDS = ("active", "saturated", "moved")
"""Tier-1 per-unit vectors: fraction of samples on which each unit was active (ReLU family,
output > 0) or saturated (sigmoid output < 0.01 or > 0.99 / tanh |output| > 0.99), both keyed by
the activation's id; and, keyed by a trainable parameter's id, the fraction of each unit's
elements (row of dim 0) that changed since the previous saved step ("moved", exactly W != W_prev;
parameters with more than one unit and a previous copy only)."""

RUN_INFO_KEY = "run.json"
END_KEY = "END.json"
BLIND_RECORD = "blind"
"""The record stream (segment member `extra.blind`, int64[n, 2]: blind since step, unchecked steps so far) of a
hook that sees optimizer steps of captured parameters without counting them (format 2.1, optional)."""
EVALUATOR_PREFIX = "evaluator"
RANK_NAME_PREFIX = "rank-"
"""What every rank's folder name starts with: listing it lists the ranks (`rank_prefix`)."""
SEGMENT_NAME_PREFIX = "seg-"
"""What every segment's name starts with, inside its rank's folder (`segment_key`)."""
CATALOGUE_NAME_PREFIX = "meta-"
"""What every catalogue's name starts with, inside its rank's folder (`meta_key`)."""
EVALUATOR_STATE_NAME = "state.json"
"""The evaluator checkpoint's name inside its folder (`evaluator_state_key`)."""

ATTEMPT_DIGITS = 13
# widths are minimums: never drop a long run
_SEG_RE = re.compile(r"^seg-(\d{13})-(\d{9,})-(\d{12,})-(\d{12,})\.npz$")
_SEG_V1_RE = re.compile(r"^seg-(\d{12,})-(\d{12,})-(\d{6,})\.npz$")
_META_RE = re.compile(r"^meta-(?:(\d{13})-)?(\d{6,})\.json$")
_RANK_RE = re.compile(r"^rank-(\d{5})/$")


def rank_prefix(rank: int) -> str:
    """Return the key prefix of one rank, e.g. `rank-00003/`."""
    return f"{RANK_NAME_PREFIX}{rank:05d}/"


def parse_rank_prefix(prefix: str) -> int | None:
    """Return the rank of a `rank-NNNNN/` prefix, or None for any other name."""
    m = _RANK_RE.match(prefix)
    return int(m.group(1)) if m else None


class SegmentName(NamedTuple):
    """What a segment's key says: the writer attempt, its upload sequence number and the step range."""

    attempt: str
    """The writer attempt (13 digits), or "" for a format-1 key."""
    seq: int
    first_step: int
    last_step: int


def attempt_id(start_time: float) -> str:
    """Return the attempt id of a writer started at `start_time` (Unix seconds): milliseconds, 13 digits."""
    return f"{round(start_time * 1000):0{ATTEMPT_DIGITS}d}"


def attempt_time(attempt: str) -> float:
    """Return the start time (Unix seconds) of an attempt id; `attempt_id` of it gives the id back."""
    return int(attempt) / 1000


def segment_key(rank: int, attempt: str, seq: int, first_step: int, last_step: int) -> str:
    """Return the key of a segment. Keys sort by attempt, then upload order (`seq`)."""
    return (
        f"{rank_prefix(rank)}{SEGMENT_NAME_PREFIX}{attempt}-{seq:09d}-{first_step:012d}-{last_step:012d}.npz"
    )


def after_attempt(rank: int, attempt: str, *, name_prefix: str = SEGMENT_NAME_PREFIX) -> str:
    """Return a key that sorts after every segment (`name_prefix=CATALOGUE_NAME_PREFIX`: catalogue) of
    `attempt` and before those of any later attempt."""
    return f"{rank_prefix(rank)}{name_prefix}{attempt}-~"


def parse_segment_name(name: str) -> SegmentName | None:
    """Return what a segment key (or file name) says, or None if it is not one (format 1 keys too)."""
    base = name.rsplit("/", 1)[-1]
    m = _SEG_RE.match(base)
    if m:
        return SegmentName(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)))
    m = _SEG_V1_RE.match(base)
    return SegmentName("", int(m.group(3)), int(m.group(1)), int(m.group(2))) if m else None


def meta_key(rank: int, version: int, *, attempt: str) -> str:
    """Return the key of catalogue `version` of one writer attempt of a rank ("": a format-1 catalogue)."""
    return f"{rank_prefix(rank)}{CATALOGUE_NAME_PREFIX}{attempt + '-' if attempt else ''}{version:06d}.json"


def parse_meta_name(name: str) -> tuple[str, int] | None:
    """Return (attempt, version) of a catalogue key, or None if it is not one."""
    m = _META_RE.match(name.rsplit("/", 1)[-1])
    return (m.group(1) or "", int(m.group(2))) if m else None


def end_key(rank: int) -> str:
    return f"{rank_prefix(rank)}{END_KEY}"


def evaluator_state_key(ranks: int | Sequence[int] | None) -> str:
    """Where the evaluator of one rank, of a set of ranks (a pod's), or of all ranks (`None`) keeps its checkpoint.

    One rank: `evaluator/rank-00003/state.json`; several: `evaluator/ranks-00004_00005/state.json`.
    """
    if ranks is None:
        who = "all"
    else:
        chosen = [ranks] if isinstance(ranks, int) else sorted(set(ranks))
        who = (
            f"{RANK_NAME_PREFIX}{chosen[0]:05d}"
            if len(chosen) == 1
            else "ranks-" + "_".join(f"{r:05d}" for r in chosen)
        )
    return f"{EVALUATOR_PREFIX}/{who}/{EVALUATOR_STATE_NAME}"


class _Doc(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ShardInfo(_Doc):
    """Which part of a full tensor one rank's rows describe (format 2.2; a tensor without it is whole)."""

    global_shape: list[int] = Field(description="Shape of the full tensor.")
    local_shape: list[int] = Field(description="Shape of the part this rank holds and reads.")
    offset: list[int] | None = Field(
        default=None, description="Where the part starts in the full tensor, per dim (None: unknown)."
    )
    placements: list[str] = Field(
        default_factory=list,
        description="How the tensor is laid over the device mesh: `Shard(dim=0)`, `Replicate()`.",
    )
    index: int = Field(default=0, description="Which of the `of` disjoint parts this is.")
    of: int = Field(
        default=1,
        description="How many disjoint parts make up the full tensor (0: this rank holds none of it).",
    )
    replica: int = Field(
        default=0,
        description="Copies of one part on several ranks (Replicate placements) are numbered; the merge reads "
        "copy 0 only.",
    )


class TensorInfo(_Doc):
    """One entry of the tensor catalogue: a captured tensor or a recorded scalar."""

    id: int = Field(description="Stable id within the rank; segments refer to tensors by it.")
    name: str = Field(description="`fc1.weight`, `grad/fc1.weight`, `act/relu1`, or a scalar's own name.")
    collection: str = Field(description="One of trainguard.api.enums.Collection.")
    shape: list[int] = Field(default_factory=list, description="Tensor shape; [] for scalars.")
    dtype: str = Field(default="float32", description="Dtype in the framework's spelling, e.g. bfloat16.")
    module: str | None = Field(default=None, description="Module path that owns the tensor, if any.")
    module_type: str | None = Field(
        default=None,
        description="Class of the owning module (`Linear`, `Conv2d`, `Embedding`, `GRU`; the nearest framework class "
        "of a subclass), so rules can tell an embedding table or a recurrent matrix from a dense kernel.",
    )
    trainable: bool = Field(default=False, description="True for parameters that the optimizer updates.")
    activation: str | None = Field(default=None, description="relu, leaky_relu, gelu, sigmoid, tanh, ...")
    order: int | None = Field(default=None, description="Forward execution order of the owning module.")
    mode: str | None = Field(default=None, description="For scalars: train or eval.")
    units: int | None = Field(default=None, description="Number of units (channels) for per-unit vectors.")
    shard: ShardInfo | None = Field(
        default=None,
        description="This rank holds a part of the tensor (a DTensor shard: FSDP2, tensor parallelism): its rows "
        "describe that part, `shape` is the full tensor's; readers merge the ranks' parts (format 2.2).",
    )
    history: Literal["exact", "sampled"] | None = Field(
        default=None,
        description="How update_l2 and distance_l2 of a trainable parameter were computed: `sampled` estimates them "
        "from a fixed sample of `history_sample` elements (the full copies would have exceeded the hook's "
        "history_max_fraction of device memory); absent or `exact`: from full copies.",
    )
    history_sample: int | None = Field(
        default=None, description="With `history: sampled`: the elements in the tensor's fixed sample."
    )
    skipped: str | None = Field(
        default=None,
        description="Why the hook does not read this tensor (a kind it cannot read: sparse, quantized, complex, "
        "meta, a tensor subclass, ...); it has no rows (format 2.2).",
    )

    @property
    def is_scalar(self) -> bool:
        return self.mode is not None and self.collection != "predictions"

    @property
    def is_predictions(self) -> bool:
        """A prediction-count stream (`pred/<name>[/class<c>]`), stored as `extra.pred.<id>` records."""
        return self.collection == "predictions" and self.mode is not None


class Catalogue(_Doc):
    """`rank-NNNNN/meta-<attempt>-VVVVVV.json`: every tensor the rank's writer attempt has written so far."""

    format_version: str = FORMAT_VERSION
    rank: int
    version: int
    tensors: list[TensorInfo]

    def by_id(self) -> dict[int, TensorInfo]:
        return {t.id: t for t in self.tensors}


class RunInfo(_Doc):
    """`run.json`: written once by rank 0 when the run starts."""

    format_version: str = FORMAT_VERSION
    run_id: str
    framework: str = Field(description="pytorch, numpy, smdebug, tensorboard, ...")
    world_size: int = 1
    start_time: float = Field(description="Unix time (seconds) when the hook started.")
    columns: list[str] = Field(default_factory=lambda: list(STAT_COLUMNS))
    config: dict[str, object] = Field(default_factory=dict, description="The hook's settings.")


class EndInfo(_Doc):
    """`rank-NNNNN/END.json`: the rank has stopped writing."""

    format_version: str = FORMAT_VERSION
    status: str = Field(
        description="ok (closed cleanly), error (capture failed or steps lost: see `errors`), crashed (the script "
        "failed: its `exception` and `exit_code`, or it died without closing), killed (a signal ended it: `signal`), "
        "stopped (a stop rule ended it: the script left after should_stop() said so, or the supervisor stopped it)."
    )
    last_step: int | None = None
    wall_time: float
    written_by: str = Field(default="hook", description="hook, operator, or supervisor (local mode)")
    attempt: str | None = Field(
        default=None,
        description="The writer attempt this END closes; None (the operator, format 1): whichever is current. "
        "An END of an attempt older than the newest one in the store is stale: that rank was restarted.",
    )
    errors: list[str] = Field(default_factory=list, description="Capture errors, once each, newest last.")
    skipped_steps: int = Field(
        default=0,
        description="Saved steps the hook skipped: its statistics worker still held every snapshot buffer.",
    )
    lost_steps: int = Field(
        default=0,
        description="Steps whose data never reached the store: dropped while it failed and the writer's pending "
        "segments filled their memory, or still pending when the rank closed (format 2.1).",
    )
    store_outage_seconds: float = Field(
        default=0.0, description="Time during which the store refused or failed uploads, summed (format 2.1)."
    )
    unchecked_steps: int = Field(
        default=0,
        description="Training iterations the hook saw go by without counting a step (an optimizer not registered "
        "with it, or replaced, stepped captured parameters; or train scalars kept coming with no optimizer step): "
        "the rules never saw them.",
    )
    blind_since_step: int | None = Field(
        default=None,
        description="The first step not counted of the blind spell still going on when the rank closed, if one "
        "was: from there on training went on and the hook counted no step.",
    )
    exception: str | None = Field(
        default=None,
        description="The uncaught exception that ended the script (`Type: message`), as the hook saw it at exit.",
    )
    exit_code: int | None = Field(
        default=None,
        description="The training command's exit status, where the supervisor saw it (local mode): 128+N for "
        "signal N.",
    )
    signal: str | None = Field(
        default=None, description="The signal that ended the command (SIGKILL, ...), if one did."
    )

    def is_stale(self, *newer: str | None) -> bool:
        """Whether this END closes a writer attempt older than the newest of `newer` (attempt ids; None: not known).

        The one staleness rule: such an END belongs to an earlier run of a rank that was restarted since.
        An END without an attempt (the operator's, format 1) closes whichever attempt is current: never stale.
        """
        marks = [a for a in newer if a]
        return self.attempt is not None and bool(marks) and self.attempt < max(marks)

    def outcome(self) -> str:
        """One phrase on how the rank ended: `ok`, `error: exited with status 1; ZeroDivisionError: ...`."""
        parts = [self.status]
        how = []
        if self.signal:
            how.append(f"killed by {self.signal}")
        elif self.exit_code is not None and self.exit_code != 0:
            how.append(f"exited with status {self.exit_code}")
        if self.exception:
            how.append(self.exception)
        if not how and self.status != "ok" and self.errors:
            how.append(self.errors[0])
        return parts[0] + (": " + "; ".join(how) if how else "")


def check_version(found: str, *, what: str) -> None:
    """Raise UnsupportedVersion when `found` has another major version than ours."""
    major = found.split(".", 1)[0]
    if major not in READABLE_MAJORS:
        known = " and ".join(f"{m}.x" for m in READABLE_MAJORS)
        raise errors.UnsupportedVersion(
            f"{what} has run-format version {found}; this TrainGuard reads {known}. Upgrade TrainGuard to read it."
        )


@dataclass(frozen=True)
class Segment:
    """Consecutive saved steps of one rank, as written by one flush.

    `stats[s, t, k]` is statistic `STAT_COLUMNS[k]` of tensor `tensor_ids[t]` at `steps[s]`.
    Scalars come as parallel arrays (`scalar_steps`, `scalar_ids`, `scalar_values`) and may fall
    on steps without tensor statistics. Tier-1 data are taken at `tier1_steps` (a subset of
    `steps`): `units[(kind, tensor_id)]` is float32[len(tier1_steps), units] and
    `hists[tensor_id]` is float32[len(tier1_steps), HIST_BINS].
    """

    steps: np.ndarray
    wall_time: np.ndarray
    tensor_ids: np.ndarray
    stats: np.ndarray
    scalar_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    scalar_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    scalar_values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    tier1_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    units: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    hists: dict[int, np.ndarray] = field(default_factory=dict)
    catalogue_version: int = 0
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    attempt: str = ""
    """The writer attempt, from the segment's key (set by the reader; not stored in the object)."""
    lost_before: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Steps of this writer attempt that never reached the store, just before this segment: empty, or
    int64[3] (first step, last step, number of steps) of the segments the writer dropped while the store
    failed and its pending buffer was full. Stored as `lost.before` (format 2.1)."""
    lost_steps_total: int = 0
    """Steps this writer attempt lost so far, this gap included (`lost.total`; 0 when there is no gap)."""

    @property
    def first_step(self) -> int:
        return int(min(self._all_steps(), default=0))

    @property
    def last_step(self) -> int:
        return int(max(self._all_steps(), default=0))

    def _all_steps(self) -> list[int]:
        out: list[int] = []
        if self.steps.size:
            out += [int(self.steps[0]), int(self.steps[-1])]
        if self.scalar_steps.size:
            out += [int(self.scalar_steps.min()), int(self.scalar_steps.max())]
        for name, arr in self.extra.items():
            if name.endswith(".steps") and arr.size:
                out += [int(arr.min()), int(arr.max())]
        return out


SEGMENT_COMPRESSLEVEL = 1
"""Deflate level of segment objects (any level reads back the same)."""


def encode_segment(seg: Segment) -> bytes:
    """Serialise a segment to the bytes of one `.npz` object (zip, deflate)."""
    arrays: dict[str, np.ndarray] = {
        "format_version": np.array(FORMAT_VERSION),
        "catalogue_version": np.array(seg.catalogue_version, np.int64),
        "steps": np.asarray(seg.steps, np.int64),
        "wall_time": np.asarray(seg.wall_time, np.float64),
        "tensor_ids": np.asarray(seg.tensor_ids, np.int32),
        "stats": np.asarray(seg.stats, np.float32),
        "scalar_steps": np.asarray(seg.scalar_steps, np.int64),
        "scalar_ids": np.asarray(seg.scalar_ids, np.int32),
        "scalar_values": np.asarray(seg.scalar_values, np.float64),
        "tier1_steps": np.asarray(seg.tier1_steps, np.int64),
    }
    for (kind, tid), vec in seg.units.items():
        arrays[f"units.{kind}.{tid}"] = np.asarray(vec, np.float32)
    for tid, hist in seg.hists.items():
        arrays[f"hist.{tid}"] = np.asarray(hist, np.float32)
    for name, arr in seg.extra.items():
        arrays[f"extra.{name}"] = np.asarray(arr)
    if seg.lost_before.size:
        arrays["lost.before"] = np.asarray(seg.lost_before, np.int64)
        arrays["lost.total"] = np.array(seg.lost_steps_total, np.int64)
    buf = io.BytesIO()
    # np.savez_compressed's layout, at deflate level 1: a segment is small float statistics that
    # compress about 3x at any level, and level 6 costs the writer thread (which shares the GIL
    # with training) half again as much CPU for 3% fewer bytes
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=SEGMENT_COMPRESSLEVEL) as zf:
        for name, arr in arrays.items():
            with zf.open(name + ".npy", "w") as member:
                np.lib.format.write_array(member, np.asanyarray(arr), allow_pickle=False)
    return buf.getvalue()


_CORRUPT_ERRORS = (
    zipfile.BadZipFile,  # no archive, or a member whose CRC does not match
    zlib.error,  # damaged deflate data
    NotImplementedError,  # a damaged header naming an unknown compression method
    RuntimeError,  # a damaged header claiming encryption
    ValueError,  # a damaged .npy header
    OSError,
    EOFError,
    KeyError,
    struct.error,
)
"""What a damaged segment can raise while it is unpacked; each becomes `SegmentCorrupt`."""

MAX_SEGMENT_BYTES = 256 * 2**20
"""The most a segment may unpack to, all arrays together. A segment holds statistics: 500 saved steps of
3,000 tensors are 72 MB. The sizes the archive declares are checked before anything is unpacked, and
each array's declared shape against its member's size before it is allocated, so a member that
claims (or inflates to) more, a decompression bomb, is refused without taking the memory."""


def _read_member(zf: zipfile.ZipFile, member: zipfile.ZipInfo) -> np.ndarray:
    """Read one `.npy` member whole (so zipfile checks its CRC), allocating only what its header declares,
    once that is known to match the member's size. Raises ValueError on any mismatch."""
    with zf.open(member) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"member {member.filename} has .npy version {version}, which segments never use")
        if dtype.hasobject:
            raise ValueError(
                f"member {member.filename} holds Python objects, which allow_pickle=False refuses"
            )
        count = 1
        for n in shape:
            count *= n  # Python ints: a declared (10**12,) stays a number, never an allocation
        body = member.file_size - f.tell()
        if count * dtype.itemsize != body:
            raise ValueError(
                f"member {member.filename} declares shape {tuple(shape)} of {dtype} "
                f"({count * dtype.itemsize} bytes) but holds {body} bytes"
            )
        out = np.empty(count, dtype)
        if body and f.readinto(out.data.cast("B")) != body:  # type: ignore[attr-defined]  # a ZipExtFile
            raise EOFError(f"member {member.filename} ends early")
        if f.read(1):
            raise ValueError(f"member {member.filename} holds more bytes than its header says")
    return out.reshape(shape, order="F" if fortran else "C")


def _unpack(data: bytes, key: str, max_bytes: int) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = zf.infolist()
        declared = sum(m.file_size for m in members)
        if declared > max_bytes:
            raise errors.SegmentCorrupt(
                f"segment {key} unpacks to {declared} bytes, more than the {max_bytes} a segment may hold "
                f"(format.MAX_SEGMENT_BYTES); it is not read, later segments are"
            )
        return {m.filename.removesuffix(".npy"): _read_member(zf, m) for m in members}


def _check_lengths(key: str, arrays: dict[str, np.ndarray], seg: Segment) -> None:
    """Raise SegmentCorrupt unless the arrays that run in parallel have matching lengths."""
    problems: list[str] = []

    def same(what: str, a: np.ndarray, n: int, ndim: int = 1) -> None:
        if a.ndim != ndim or a.shape[0] != n:
            problems.append(f"{what} has shape {a.shape}, expected {n} rows")

    n_steps, n_scalars, n_tier1 = seg.steps.shape[0], seg.scalar_steps.shape[0], seg.tier1_steps.shape[0]
    for name in ("steps", "tensor_ids", "scalar_steps", "tier1_steps"):
        if arrays[name].ndim != 1:
            problems.append(f"{name} has shape {arrays[name].shape}, expected one dimension")
    same("wall_time", seg.wall_time, n_steps)
    same("scalar_ids", seg.scalar_ids, n_scalars)
    same("scalar_values", seg.scalar_values, n_scalars)
    for (kind, tid), vec in seg.units.items():
        same(f"units.{kind}.{tid}", vec, n_tier1, 2)
    for tid, hist in seg.hists.items():
        same(f"hist.{tid}", hist, n_tier1, 2)
    for name, arr in seg.extra.items():
        steps = seg.extra.get(name + ".steps")
        if steps is not None and (steps.ndim != 1 or arr.ndim < 1 or arr.shape[0] != steps.shape[0]):
            problems.append(f"extra.{name} has shape {arr.shape}, its steps {steps.shape}")
    if seg.lost_before.shape not in ((0,), (3,)):
        problems.append(f"lost.before has shape {seg.lost_before.shape}, expected (3,)")
    if problems:
        raise errors.SegmentCorrupt(
            f"segment {key}: {'; '.join(problems)}; it is skipped, later segments are read"
        )


def decode_segment(data: bytes, *, key: str = "<segment>", max_bytes: int = MAX_SEGMENT_BYTES) -> Segment:
    """Parse the bytes of a segment; raise SegmentCorrupt naming `key` on any damage.

    Nothing larger than `max_bytes` is unpacked, no array is allocated before its declared size is checked
    against what its member holds, and arrays that run in parallel must have the same length: a damaged or
    hostile segment is refused with one message, never a traceback or an exhausted memory."""
    try:
        # Each member is read whole, which makes zipfile check its CRC (np.load on the archive reads
        # only the bytes an array needs and can miss damage); then parsed as .npy without pickle.
        arrays = _unpack(data, key, max_bytes)
    except _CORRUPT_ERRORS as err:
        raise errors.SegmentCorrupt(
            f"segment {key} is truncated or corrupt ({type(err).__name__}: {err}); it is skipped, later segments are read"
        ) from err
    try:
        check_version(str(arrays["format_version"]), what=f"segment {key}")
        steps = arrays["steps"].astype(np.int64, copy=False)
        stats = arrays["stats"].astype(np.float32, copy=False)
        tensor_ids = arrays["tensor_ids"].astype(np.int32, copy=False)
        if stats.ndim != 3 or stats.shape[0] != steps.shape[0] or stats.shape[1] != tensor_ids.shape[0]:
            raise errors.SegmentCorrupt(
                f"segment {key}: stats has shape {stats.shape}, expected ({steps.shape[0]}, {tensor_ids.shape[0]}, K)"
            )
        units: dict[tuple[str, int], np.ndarray] = {}
        hists: dict[int, np.ndarray] = {}
        extra: dict[str, np.ndarray] = {}
        for name, arr in arrays.items():
            if name.startswith("units."):
                _, kind, tid = name.split(".", 2)
                units[(kind, int(tid))] = arr
            elif name.startswith("hist."):
                hists[int(name.split(".", 1)[1])] = arr
            elif name.startswith("extra."):
                extra[name.split(".", 1)[1]] = arr
        seg = Segment(
            steps=steps,
            wall_time=arrays["wall_time"].astype(np.float64, copy=False),
            tensor_ids=tensor_ids,
            stats=stats,
            scalar_steps=arrays["scalar_steps"].astype(np.int64, copy=False),
            scalar_ids=arrays["scalar_ids"].astype(np.int32, copy=False),
            scalar_values=arrays["scalar_values"].astype(np.float64, copy=False),
            tier1_steps=arrays["tier1_steps"].astype(np.int64, copy=False),
            units=units,
            hists=hists,
            catalogue_version=int(arrays["catalogue_version"]),
            extra=extra,
            lost_before=arrays.get("lost.before", np.zeros(0, np.int64)).astype(np.int64, copy=False),
            lost_steps_total=int(arrays.get("lost.total", 0)),
        )
        _check_lengths(key, arrays, seg)
        return seg
    except KeyError as err:
        raise errors.SegmentCorrupt(f"segment {key} lacks the array {err}; it is skipped") from err
    except (ValueError, TypeError) as err:
        raise errors.SegmentCorrupt(f"segment {key} holds a malformed array ({err}); it is skipped") from err
