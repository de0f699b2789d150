"""The segment codec: `Segment` (consecutive saved steps of one rank) to and from the bytes of one `.npz` object.

Part of the run format (`run_format` re-exports it). Numpy alone reads a segment; it is loaded without
pickle, its members are checked against each other, and a corrupt or oversized object raises
`errors.SegmentCorrupt`, naming the key.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass, field

import numpy as np

from trainguard.store import errors
from trainguard.store.run_vocabulary import FORMAT_VERSION, check_version


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
