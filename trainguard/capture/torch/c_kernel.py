"""The PyTorch hook's CPU path: statistics of float32 CPU tensors in one pass, read in place.

On an accelerator the hook's reductions are asynchronous kernels over a packed buffer. On CPU
each torch reduction is a dispatch of several microseconds and a pass over memory, the packed
path needs a copy and about ten of them per saved step, and a background thread that would hide
them competes with training for the same cores. `_cstats` (C, built by setup.py when a compiler
is present) instead reads each tensor where it lies, once, and writes its row of statistic
columns (`run_format.STAT_COLUMNS`, float32, as the run stores them); for a tracked parameter also
update and distance to its saved copies, the Tier-1 "moved" share per unit and the refreshed
previous copy, in the same pass; optionally the log2 histogram. It holds no state and never
sees anything but addresses and sizes checked here. `AVAILABLE` is False when the module was
not built; the torch path then serves.
"""

from __future__ import annotations

import numpy as np
import torch

from trainguard.capture.torch import device_stats
from trainguard.store import run_format

try:
    from trainguard.capture import _cstats
except ImportError:  # installed without a C compiler: torch ops reduce CPU tensors instead
    _cstats = None  # type: ignore[assignment]

AVAILABLE = _cstats is not None
"""Whether the C kernel was built (setup.py builds it when a C compiler is present)."""

K = len(run_format.STAT_COLUMNS)
_HIST_OFFSET = 127 + run_format.HIST_MIN_EXPONENT - 1
"""Histogram bin = float32 exponent field - this (as `device_stats._exponent_bins`)."""
_F32 = torch.float32


_PLAIN = (torch.Tensor, torch.nn.Parameter)
_STRIDED = torch.strided
_F32_BYTES = 4


def usable(t: torch.Tensor) -> bool:
    """Whether the kernel can read `t` in place: built, and `t` a plain (no subclass: a DTensor's address is not
    its data), dense, contiguous, non-empty float32 CPU tensor whose storage holds every element from its
    offset on. Everything the kernel reads passes here first; anything else goes the torch way (`_kinds`)."""
    # ordered so the common answers come from the cheapest checks, every name a module global (no attribute of
    # `torch` looked up per call): each check costs ~0.1 us, and this runs for every tensor of every saved step
    return (
        AVAILABLE
        and type(t) in _PLAIN
        and t.dtype is _F32
        and t.is_cpu
        and t.layout is _STRIDED
        and t.is_contiguous()
        and (size := t.nbytes) > 0  # float32: the elements' bytes, read once
        and t.storage_offset() * _F32_BYTES + size <= t.untyped_storage().nbytes()
        and not t.is_neg()
    )


_UNIT_MODES = {
    **{kind: (0, "active") for kind in device_stats.RELU_FAMILY},
    **{kind: (1, "saturated") for kind in device_stats.SIGMOID_LIKE},
    **{kind: (2, "saturated") for kind in device_stats.TANH_LIKE},
}
"""Activation kind -> (the kernel's mode, the vector's kind), as `device_stats.unit_vector` defines them."""

_EXACT_COUNTS = 1 << 24
"""The kernel counts a unit's flags in float32: exact up to here; beyond it `unit_vector` returns None."""


def unit_vector(x: torch.Tensor, activation: str) -> tuple[str, np.ndarray] | None:
    """`device_stats.unit_vector` for a `usable` activation: (kind, float32 [units]) per-unit activity or
    saturation, units = dim 1; None for other activations (or a unit with over 2^24 values: use torch)."""
    mode = _UNIT_MODES.get(activation)
    assert _cstats is not None
    if mode is None or not usable(x):
        return None
    n = x.numel()
    units = int(x.shape[1]) if x.ndim >= 2 else n
    samples = int(x.shape[0]) if x.ndim >= 2 else 1
    rest = n // (samples * units)
    if samples * rest >= _EXACT_COUNTS:
        return None
    out = np.empty(units, np.float32)
    _cstats.units(x.data_ptr(), samples, units, rest, mode[0], out)
    return mode[1], out


def plain_row(x: torch.Tensor) -> tuple[int, int, int, int, int] | None:
    """`spec_row` of `x` without saved copies, or None when the kernel cannot read it (checked once)."""
    return (x.data_ptr(), x.numel(), 0, 0, 0) if usable(x) else None


def spec_row(
    x: torch.Tensor,
    prev: torch.Tensor | None = None,
    first: torch.Tensor | None = None,
    fresh: bool = False,
    *,
    checked: bool = False,
) -> tuple[int, int, int, int, int]:
    """The kernel's spec of `x` (address, n, prev, first, fresh; 0 for copies it has not); raise before the
    kernel reads a tensor it cannot. The addresses stay valid while `x` and the copies keep their storage.
    `checked`: the caller has just found `x` and `prev` `usable` (not checked again: ~0.6 us each)."""
    n = x.numel()
    tracked = prev is not None and first is not None
    if not (checked or usable(x)) or (
        tracked
        and not (
            (checked or usable(prev))  # type: ignore[arg-type]
            and usable(first)  # type: ignore[arg-type]
            and prev.numel() == n  # type: ignore[union-attr]
            and first.numel() == n  # type: ignore[union-attr]
        )
    ):
        raise ValueError(
            "the C kernel reads non-empty contiguous float32 CPU tensors (and copies of their size)"
        )
    if not tracked:
        return x.data_ptr(), n, 0, 0, 0
    return x.data_ptr(), n, prev.data_ptr(), first.data_ptr(), int(fresh)  # type: ignore[union-attr]


class HostRows:
    """The statistic rows of one saved step's tensors, written in place by the kernel as each is read.

    `add` reads a tensor (which must be `usable`) into the next row; `take` hands the rows and
    their tensor ids over and starts the next step. Tier-1 extras come back from `add`.
    """

    def __init__(self, capacity: int = 32) -> None:
        self._rows = np.empty((capacity, K), np.float32)
        self.ids: list[int] = []
        self.nonfinite = False
        """Whether a row written since the last `take` counts a NaN or Inf (the kernel says so as it reads)."""

    def add(
        self,
        tid: int,
        x: torch.Tensor,
        *,
        prev: torch.Tensor | None = None,
        first: torch.Tensor | None = None,
        fresh: bool = False,
        hist: bool = False,
        units: int = 0,
        checked: bool = False,
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Write the statistic columns of `x` as tensor `tid`; return its log2 histogram [HIST_BINS] if `hist`,
        and if `units` the share of each of `units` rows of `x` that differs from `prev` (NaN when `fresh`).

        With `prev` and `first` (float32 copies of `x`'s size), update_l2 and distance_l2 are filled
        (update_l2 NaN when `fresh`) and `prev` is overwritten with `x`; without them both are NaN.
        `checked`: as `spec_row`'s.
        """
        assert _cstats is not None
        x_at, n, prev_at, first_at, fresh_flag = spec_row(x, prev, first, fresh, checked=checked)
        if units and (not prev_at or n % units):
            raise ValueError(f"{units} units need a tracked tensor whose size they divide ({n})")
        row = self._room(1)
        h = np.empty(run_format.HIST_BINS, np.float32) if hist else None
        moved = np.empty(units, np.float32) if units else None
        self.nonfinite |= _cstats.reduce(
            x_at,
            n,
            self._rows,
            row,
            prev_at,
            first_at,
            bool(fresh_flag),
            h,
            _HIST_OFFSET,
            moved,
        )
        self.ids.append(tid)
        return h, moved

    def add_many(
        self,
        items: list[tuple[int, torch.Tensor, torch.Tensor | None, torch.Tensor | None, bool]],
        *,
        checked: bool = False,
    ) -> None:
        """`add` for several tensors in one kernel call, without histograms or moved shares: each item is
        (tid, x, prev, first, fresh). All are checked before any is read (`checked`: as `spec_row`'s)."""
        spec: list[int] = []
        for _, x, prev, first, fresh in items:
            spec += spec_row(x, prev, first, fresh, checked=checked)
        self.add_read([tid for tid, *_ in items], spec)

    def add_read(self, ids: list[int], spec: list[int]) -> None:
        """Read tensors `ids` in one kernel call from their `spec_row`s, concatenated into one flat list, which
        the caller made while the tensors and copies they name are still alive and unmoved."""
        assert _cstats is not None
        row = self._room(len(ids))
        if _cstats.reduce_many(spec, self._rows, row):
            self.nonfinite = True
        self.ids += ids

    def _room(self, count: int) -> int:
        """The first of `count` free rows, growing the buffer when needed."""
        row = len(self.ids)
        while row + count > len(self._rows):
            self._rows = np.concatenate([self._rows, np.empty_like(self._rows)])
        return row

    def take(self) -> tuple[list[int], np.ndarray, bool]:
        """Return the tensor ids and float32 [len(ids), K] statistic rows written so far, and whether one counts a
        NaN or Inf; start afresh.

        The rows go out as they are (cheaper than copying them out), in a buffer of exactly their count
        when it was the last step's too (usual: every saved step reads the same tensors), so that no
        slice is needed: each numpy call costs several microseconds in a saved step's cold caches.
        """
        ids, self.ids = self.ids, []
        nonfinite, self.nonfinite = self.nonfinite, False
        rows, n = self._rows, len(ids)
        if n == len(rows):
            self._rows = np.empty_like(rows)
            return ids, rows, nonfinite
        # the next step's size, if it reads the same tensors
        self._rows = np.empty((max(n, 1), K), np.float32)
        return ids, rows[:n], nonfinite

    def clear(self) -> None:
        self.ids = []
        self.nonfinite = False
