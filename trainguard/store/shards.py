"""Merging the rows of a tensor's shards, written by several ranks, into the full tensor's statistics.

A rank holding part of a tensor (a DTensor shard: FSDP2, tensor parallelism) writes the statistic
columns of its part only; its catalogue entry says which part (`run_format.ShardInfo`). The hook
makes no collective call, so ranks never agree on anything at capture time: the merge happens
here, when a reader has every rank's rows (`reader.Run.series` does it by default).

How each column merges (n_i, and so on, are the parts' columns; copies of one part on several
ranks, `replica` > 0, are left out):

- count, nan, inf, zero: summed, exact.
- min, max: the smallest and largest, exact (a NaN in any part makes them NaN, as for one tensor).
- mean, abs_mean: sum(n_i * mean_i) / n: the formula is exact; the stored float32 means carry
  their rounding (about 1e-7 relative) into it.
- std: Chan's parallel formula, sqrt(sum(n_i * (std_i^2 + (mean_i - mean)^2)) / n), the population
  std of the whole; exact as a formula, with the same float32 rounding of its inputs (and the
  cancellation any std has when |mean| is many stds).
- l2, update_l2, distance_l2: the root of the summed squares, sqrt(sum(x_i^2)), which is the
  full tensor's norm (update_l2 is NaN when a part's is: its first saved step).

A step is merged only when its parts are all there: their counts add up to the full tensor's
size. While a rank has not written a step yet (ranks do not wait for one another) the step is
left out, not shown as the part that happens to be there.

Tier-1 data merge where that is exact, at the Tier-1 steps every part has:

- histograms: every part counts into the same fixed log2 bins (`run_format.HIST_MIN_EXPONENT`,
  `HIST_BINS`), so the full tensor's bin counts are the parts' summed, exact.
- per-unit vectors (a parameter's "moved" share per row of dim 0): a part that holds whole rows
  (every placement `S(0)` or `R`: FSDP2, a column-wise tensor-parallel weight) has its rows'
  shares, exact; they are laid at the part's row offset into the full tensor's vector. A part that
  holds a block of every row's columns (`S(1)` or another dim: a row-wise tensor-parallel weight)
  has each row's share of its own columns, a count over its width: the full row's share is the
  parts' counts summed over the full width, exact too. A strided shard (`_S`) or a flat piece
  (FSDP1's `FlatShard`) holds no block of rows or columns: its vectors stay per rank, and
  `units_per_shard` says why (the reader and `trainguard inspect` show it); so do an activation's
  (its units are channels, each a share of the samples the parts split).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from trainguard.store import run_format

_C = run_format.COLUMN

UNIT_COLLECTIONS = ("weights", "biases", "activations")
"""The collections whose tensors carry per-unit vectors (`moved` of a parameter, `active`/`saturated`)."""


def merge(
    steps: Sequence[np.ndarray], rows: Sequence[np.ndarray], size: int | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Merge the parts of one tensor: `steps[i]` int64[n_i] and `rows[i]` float64[n_i, K] are part i's rows (one
    rank's, a step at most once); return the steps where the parts' counts add up to `size` (the full tensor's
    elements), in order, and their merged rows float64[S, K]. The keys need not be steps: the evaluator merges
    one step's tensors at once, keyed by their index, with `size` one per index (int64[max key + 1])."""
    k = len(run_format.STAT_COLUMNS)
    if not steps:
        return np.zeros(0, np.int64), np.zeros((0, k))
    every = np.unique(np.concatenate(steps))
    x = np.zeros((every.size, len(steps), k))
    present = np.zeros((every.size, len(steps)), bool)
    for i, (s, r) in enumerate(zip(steps, rows)):
        where = np.searchsorted(every, s)
        x[where, i] = r
        present[where, i] = r[:, _C["count"]] > 0  # an empty part adds nothing (its other columns are NaN)
    x[~present] = 0.0
    n_i = x[..., _C["count"]]
    n = n_i.sum(axis=1)
    keep = n == (size if isinstance(size, int) else size[every])
    x, present, n_i, n, every = x[keep], present[keep], n_i[keep], n[keep], every[keep]
    out = np.full((every.size, k), np.nan)
    for col in ("count", "nan", "inf", "zero"):
        out[:, _C[col]] = x[..., _C[col]].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        out[:, _C["min"]] = np.where(present, x[..., _C["min"]], np.inf).min(axis=1)
        out[:, _C["max"]] = np.where(present, x[..., _C["max"]], -np.inf).max(axis=1)
        mean_i = x[..., _C["mean"]]
        mean = (n_i * mean_i).sum(axis=1) / n
        out[:, _C["mean"]] = mean
        out[:, _C["abs_mean"]] = (n_i * x[..., _C["abs_mean"]]).sum(axis=1) / n
        dev_sq = n_i * (x[..., _C["std"]] ** 2 + (mean_i - mean[:, None]) ** 2)
        out[:, _C["std"]] = np.sqrt(np.where(present, dev_sq, 0.0).sum(axis=1) / n)
        for col in ("l2", "update_l2", "distance_l2"):
            out[:, _C[col]] = np.sqrt(np.where(present, x[..., _C[col]] ** 2, 0.0).sum(axis=1))
    return every, out


def parts(infos: Sequence[tuple[int, run_format.TensorInfo]]) -> tuple[list[int], int] | None:
    """Of one tensor's catalogue entries on several ranks, (rank, entry): the ranks whose rows make up the full
    tensor (one per part: replica 0) and its size, or None when the tensor is not sharded (`of` at most 1)."""
    sharded = [(rank, t.shard) for rank, t in infos if t.shard is not None and t.skipped is None]
    if not sharded or all(s.of <= 1 for _, s in sharded):
        return None
    size = math.prod(sharded[0][1].global_shape)
    return [rank for rank, s in sharded if s.replica == 0 and s.of > 0], size


def units_per_shard(shard: run_format.ShardInfo, *, collection: str | None = None) -> str | None:
    """Why the per-unit vectors (rows of dim 0) of a tensor sharded as `shard` cannot be merged into the full
    tensor's, or None when its parts' vectors merge exactly (every part holds a block: whole rows, or a block of
    every row's columns, at a known offset). An activation's (`collection` "activations") units are its channels
    (dim 1), each a share of the samples: its parts' vectors are never merged."""
    if shard.of <= 1:
        return None
    if collection == "activations":
        return "an activation's units are its channels (dim 1), each a share of samples the parts split"
    odd = [p for p in shard.placements if not _BLOCK.fullmatch(p)]
    if odd:
        return f"placed as {', '.join(odd)}: a part holds a strided or flat piece of the tensor, not a block of it"
    if shard.offset is None or not shard.offset or len(shard.local_shape) != len(shard.global_shape):
        return "the part's offset is unknown"
    return None


_BLOCK = re.compile(r"R|S\(\d+\)")
"""Placements whose parts are blocks of the tensor: replicated, or sharded evenly along one dim."""


def row_width(shape: Sequence[int]) -> int:
    """The elements of one row (dim 0) of a tensor or a part of this shape: its per-unit share's denominator."""
    return math.prod(shape[1:]) if shape else 1


def merge_hists(steps: Sequence[np.ndarray], hists: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sum the parts' log2 histograms (the same fixed bins in every part): `steps[i]` int64[n_i] are part i's Tier-1
    steps and `hists[i]` [n_i, HIST_BINS] its counts; return the steps every part has, in order, and the summed
    counts float64[S, HIST_BINS] (exact: integer counts)."""
    every = _common(steps)
    if not steps:
        return every, np.zeros((0, run_format.HIST_BINS))
    return every, add_hists([np.asarray(h)[np.searchsorted(s, every)] for s, h in zip(steps, hists)])


def add_hists(parts: Sequence[np.ndarray]) -> np.ndarray:
    """The full tensor's histograms from its parts' at the same steps (each [..., HIST_BINS]): their counts summed,
    float64 (exact). An empty part (it holds no element: an uneven or FSDP1 split) writes none and adds nothing."""
    out: np.ndarray = np.sum([np.asarray(h, np.float64) for h in parts], axis=0)
    return out


def merge_units(
    steps: Sequence[np.ndarray],
    vectors: Sequence[np.ndarray],
    offsets: Sequence[int],
    units: int,
    widths: Sequence[int] | None = None,
    width: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Merge the parts' per-unit vectors: part i's `vectors[i]` [n_i, rows_i] (at its Tier-1 `steps[i]`) holds rows
    `offsets[i]` on of the full tensor's `units` rows, `widths[i]` elements of each (None: whole rows) of `width`.
    Return the steps every part has and the full vectors float64[S, units] (`place_units`); none when the parts
    do not cover every row's elements exactly once (then they cannot merge)."""
    every = _common(steps)
    out = place_units(
        [np.asarray(v)[np.searchsorted(s, every)] for s, v in zip(steps, vectors)],
        offsets,
        units,
        widths,
        width,
    )
    if not steps or out is None:
        return np.zeros(0, np.int64), np.zeros((0, units))
    return every, out


def place_units(
    vectors: Sequence[np.ndarray],
    offsets: Sequence[int],
    units: int,
    widths: Sequence[int] | None = None,
    width: int = 1,
) -> np.ndarray | None:
    """The full tensor's per-unit vectors float64[..., units] from its parts' at the same steps (`vectors[i]`
    [..., rows_i], holding rows `offsets[i]` on, `widths[i]` elements of each of a full row's `width`; None: whole
    rows), or None when the parts do not cover every row's elements exactly once. A row held whole by one part
    takes that part's share as it is; a row whose columns several parts hold takes their counts (share x width,
    an integer) summed over the full width: exact either way. NaN (a first save's) stays NaN."""
    if widths is None:
        widths, width = [1] * len(vectors), 1
    covered = np.zeros(units, np.int64)
    for v, at, w in zip(vectors, offsets, widths):
        covered[at : at + v.shape[-1]] += w
    if not vectors or not (covered == width).all():
        return None
    out = np.zeros((*vectors[0].shape[:-1], units))
    if all(w == width for w in widths):
        for v, at in zip(vectors, offsets):
            out[..., at : at + v.shape[-1]] = v
        return out
    for v, at, w in zip(vectors, offsets, widths):
        out[..., at : at + v.shape[-1]] += np.rint(
            np.asarray(v, np.float64) * w
        )  # the part's changed elements
    merged: np.ndarray = out / width
    return merged


def _common(steps: Sequence[np.ndarray]) -> np.ndarray:
    """The steps every part has, in order."""
    if not steps:
        return np.zeros(0, np.int64)
    every = np.unique(steps[0])
    for s in steps[1:]:
        every = np.intersect1d(every, s)
    return every.astype(np.int64)
