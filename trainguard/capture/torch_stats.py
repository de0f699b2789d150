"""Tier-0 and Tier-1 statistics of PyTorch tensors, computed on the tensors' own device.

Called by `torch_hook.Hook` on saved steps only. Small tensors are copied into one padded
float32 buffer per device (`Packed`) and reduced with a fixed number of kernels whatever their
count; tensors above `pack_max_numel` are reduced one by one (`reduce_large`), where launch
overhead is small next to the work. Both give raw moments (`RAW_COLUMNS`, float64 rows on the
device); the host turns them into `format.STAT_COLUMNS` after the step's single transfer
(`to_host`), so nothing here waits on the device. Definitions live in `store.stats` (numpy),
against which every column is tested; half and fp8 dtypes are upcast to float32 first.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import torch

from trainguard.store import format

RAW_COLUMNS = (
    "nan", "inf", "zero", "min", "max", "sum", "abs_sum", "sq_sum", "dev_sq_sum", "update_sq_sum", "distance_sq_sum",
)  # fmt: skip
"""Per-tensor raw moments as computed on the device; `finish` derives the statistic columns from them."""
NAN, INF, ZERO, MIN, MAX, SUM, ABS, SQ, DEV, UPD, DIST = range(len(RAW_COLUMNS))

RELU_FAMILY = ("relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "prelu", "selu", "celu", "rrelu", "mish", "hardswish")
SATURATING = ("sigmoid", "tanh", "hardsigmoid", "hardtanh")

_ONE_PASS_VARIANCE_MIN = 1.0 / 16
"""On CPU, std comes from sum and sum of squares when the variance keeps at least this share of
the mean square (relative error below ~1e-5); otherwise a second, exact pass runs."""


def to_host(payload: torch.Tensor) -> np.ndarray:
    """Copy one device tensor to host memory: the only device-to-host transfer of a saved step."""
    return payload.detach().to("cpu").numpy()


def as_float32(t: torch.Tensor) -> torch.Tensor:
    """Return `t` detached, as float32 (a copy only when the dtype differs)."""
    t = t.detach()
    return t if t.dtype == torch.float32 else t.to(torch.float32)


def _counts_needed(abs_sums: torch.Tensor) -> bool:
    """Whether NaN/Inf must be counted element by element.

    On accelerators always (branch-free, no sync). On CPU the check reads one host flag: an
    element that is NaN or Inf makes its tensor's |x| sum non-finite, so finite sums prove
    both counts are zero and the element-wise pass is skipped.
    """
    if abs_sums.device.type != "cpu":
        return True
    return not bool(torch.isfinite(abs_sums).all())


def _exact_variance_needed(sq: torch.Tensor, one_pass_var_times_n: torch.Tensor) -> bool:
    if sq.device.type != "cpu":
        return True
    return bool((one_pass_var_times_n < _ONE_PASS_VARIANCE_MIN * sq).any())


@dataclass
class _History:
    """Device copies of the tracked parameters at the previous saved step and at the first one."""

    prev: torch.Tensor
    first: torch.Tensor
    fresh: bool = True


class _Layout:
    """Where each tensor sits in the padded [rows, width] buffer; pads stay zero forever."""

    def __init__(self, numels: tuple[int, ...], *, device: torch.device, width: int) -> None:
        rows = [max(1, -(-n // width)) for n in numels]
        starts = list(itertools.accumulate([0] + rows[:-1]))
        self.count = len(numels)
        self.width = width
        self.rows = sum(rows)
        self.buffer = torch.zeros(self.rows, width, dtype=torch.float32, device=device)
        flat = self.buffer.view(-1)
        self.views = [flat[s * width : s * width + n] for s, n in zip(starts, numels)]
        self.owner = torch.repeat_interleave(torch.arange(self.count), torch.tensor(rows)).to(device)
        self.last = torch.tensor([s + r - 1 for s, r in zip(starts, rows)], dtype=torch.long, device=device)
        tail = torch.tensor([n - (r - 1) * width for n, r in zip(numels, rows)])
        self.tail_pad = (torch.arange(width)[None, :] >= tail[:, None]).to(device)
        self.n = torch.tensor(numels, dtype=torch.float64, device=device)
        self.pad = torch.tensor([r * width - n for n, r in zip(numels, rows)], dtype=torch.float64, device=device)
        self.row_starts = starts
        self.row_counts = rows

    def rows_of(self, k: int) -> int:
        """Number of buffer rows taken by the first `k` tensors."""
        return sum(self.row_counts[:k])

    def per_tensor_sum(self, row_values: torch.Tensor, *, upto_rows: int | None = None) -> torch.Tensor:
        """Sum row statistics [R, c] into per-tensor float64 [T, c] (segments never mix NaN)."""
        owner = self.owner if upto_rows is None else self.owner[:upto_rows]
        out = torch.zeros(self.count, row_values.shape[1], dtype=torch.float64, device=row_values.device)
        return out.index_add_(0, owner, row_values.to(torch.float64))

    def per_tensor_extreme(self, row_values: torch.Tensor, reduce: str) -> torch.Tensor:
        out = torch.empty(self.count, dtype=row_values.dtype, device=row_values.device)
        return out.scatter_reduce_(0, self.owner, row_values, reduce, include_self=False)


@dataclass
class Packed:
    """Reduces many small tensors of one device with a fixed number of kernel launches.

    The tensors of a saved step are copied into one zero-padded float32 buffer of shape
    [rows, width]; every statistic is a row reduction followed by a segment reduction over
    rows. The first `tracked` tensors are trainable parameters: their rows also give
    update_l2 and distance_l2 against device copies kept from earlier saved steps.
    Memory: the buffer (all packed tensors, float32, padded to `width`) plus two copies of
    the tracked parameters' rows.
    """

    device: torch.device
    width: int = 512
    max_layouts: int = 8
    _layouts: OrderedDict[tuple[int, ...], _Layout] = field(default_factory=OrderedDict)
    _history: dict[tuple[int, ...], _History] = field(default_factory=dict)

    def layout(self, numels: tuple[int, ...]) -> _Layout:
        """Return the cached layout for these tensor sizes (activation shapes may vary by step)."""
        lay = self._layouts.get(numels)
        if lay is None:
            lay = _Layout(numels, device=self.device, width=self.width)
            self._layouts[numels] = lay
            while len(self._layouts) > self.max_layouts:
                self._layouts.popitem(last=False)
        else:
            self._layouts.move_to_end(numels)
        return lay

    def load(self, lay: _Layout, tensors: list[torch.Tensor], *, start: int = 0) -> None:
        """Copy `tensors` into slots `start...` of the layout's buffer (dtype conversion included)."""
        if tensors:
            torch._foreach_copy_(lay.views[start : start + len(tensors)], [t.detach().reshape(-1) for t in tensors])

    def reduce(self, lay: _Layout, *, tracked: int) -> torch.Tensor:
        """Return float64 [T, len(RAW_COLUMNS)] raw moments of the loaded buffer."""
        b = lay.buffer
        absb = b.abs()
        rows = torch.stack(
            [b.sum(1), absb.sum(1), torch.linalg.vector_norm(b, dim=1).square(), torch.sign(absb).sum(1)], 1
        )
        s, a, q, nz = lay.per_tensor_sum(rows).unbind(1)
        tails = b.index_select(0, lay.last)
        mx = b.amax(1).index_copy(0, lay.last, tails.masked_fill(lay.tail_pad, -torch.inf).amax(1))
        mn = b.amin(1).index_copy(0, lay.last, tails.masked_fill(lay.tail_pad, torch.inf).amin(1))
        mx_t = lay.per_tensor_extreme(mx, "amax").to(torch.float64)
        mn_t = lay.per_tensor_extreme(mn, "amin").to(torch.float64)
        if _counts_needed(a):
            nan, inf = lay.per_tensor_sum(torch.stack([b.isnan().sum(1), b.isinf().sum(1)], 1)).unbind(1)
        else:
            nan = inf = torch.zeros_like(s)
        # sign(NaN) is 0, so `nz` counts finite non-zeros and infinities; NaN is not zero.
        zero = lay.n - nz - nan
        mean = s / lay.n
        dev = q - s * mean
        if _exact_variance_needed(q, dev):
            d = b - mean.to(torch.float32).index_select(0, lay.owner)[:, None]
            d.index_copy_(0, lay.last, d.index_select(0, lay.last).masked_fill(lay.tail_pad, 0.0))
            dev = lay.per_tensor_sum(torch.linalg.vector_norm(d, dim=1).square()[:, None])[:, 0]
        upd = torch.full_like(s, torch.nan)
        dist = torch.full_like(s, torch.nan)
        if tracked:
            upd, dist = self._updates(lay, tracked, upd, dist)
        return torch.stack([nan, inf, zero, mn_t, mx_t, s, a, q, dev, upd, dist], 1)

    def _updates(
        self, lay: _Layout, tracked: int, upd: torch.Tensor, dist: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        r = lay.rows_of(tracked)
        key = tuple(int(v.numel()) for v in lay.views[:tracked])
        cur = lay.buffer[:r]
        hist = self._history.get(key)
        if hist is None:
            hist = self._history[key] = _History(prev=cur.clone(), first=cur.clone())
        sq = torch.stack(
            [torch.linalg.vector_norm(cur - hist.prev, dim=1), torch.linalg.vector_norm(cur - hist.first, dim=1)], 1
        ).square()
        per = lay.per_tensor_sum(sq, upto_rows=r)
        keep = torch.arange(lay.count, device=cur.device) < tracked
        upd = torch.where(keep, per[:, 0], upd) if not hist.fresh else upd
        dist = torch.where(keep, per[:, 1], dist)
        hist.prev.copy_(cur)
        hist.fresh = False
        return upd, dist

    def histograms(self, lay: _Layout) -> torch.Tensor:
        """Return float64 [T, HIST_BINS] log2-magnitude histograms of the loaded tensors."""
        codes = _hist_codes(lay.buffer) + (lay.owner * (format.HIST_BINS + 1))[:, None]
        counts = torch.bincount(codes.reshape(-1), minlength=lay.count * (format.HIST_BINS + 1))
        hist = counts.reshape(lay.count, format.HIST_BINS + 1)[:, : format.HIST_BINS].to(torch.float64)
        hist[:, 0] -= lay.pad  # the zero padding landed in the zero bin
        return hist


def _hist_codes(x: torch.Tensor) -> torch.Tensor:
    """Bin index per element of a float32 tensor: 0 for zeros, HIST_BINS for non-finite (dropped)."""
    bits = x.contiguous().view(torch.int32)
    exponent = (bits >> 23) & 0xFF
    # floor(log2|x|) = exponent - 127 for normal numbers; bin b holds [2^(b-40), 2^(b-39)).
    b = (exponent - 127 - format.HIST_MIN_EXPONENT + 1).clamp_(1, format.HIST_BINS - 1)
    b = torch.where((bits & 0x7FFFFFFF) == 0, 0, b)
    return torch.where(exponent == 0xFF, format.HIST_BINS, b).to(torch.long)


def histogram(x: torch.Tensor) -> torch.Tensor:
    """Return float64 [HIST_BINS] log2-magnitude histogram of one tensor (see `store.stats.log2_hist`)."""
    counts = torch.bincount(_hist_codes(as_float32(x)).reshape(-1), minlength=format.HIST_BINS + 1)
    return counts[: format.HIST_BINS].to(torch.float64)


def reduce_large(x: torch.Tensor, history: _History | None = None) -> torch.Tensor:
    """Return float64 [len(RAW_COLUMNS)] raw moments of one (large) tensor, without packing it.

    With `history`, also the squared distances to the previous and first saved copies, and
    the previous copy is refreshed in place.
    """
    t = as_float32(x).reshape(-1)
    n = t.numel()
    nan = torch.full((), torch.nan, dtype=torch.float64, device=t.device)
    if n == 0:
        none = torch.zeros((), dtype=torch.float64, device=t.device)
        return torch.stack([none, none, none] + [nan] * 8)
    a = t.abs().sum(dtype=torch.float64)
    s = t.sum(dtype=torch.float64)
    q = torch.linalg.vector_norm(t, dtype=torch.float64).square()
    mn, mx = torch.aminmax(t)
    if _counts_needed(a):
        n_nan = t.isnan().sum().to(torch.float64)
        n_inf = t.isinf().sum().to(torch.float64)
    else:
        n_nan = n_inf = torch.zeros((), dtype=torch.float64, device=t.device)
    zero = n - torch.count_nonzero(t).to(torch.float64)
    dev = torch.linalg.vector_norm(t - (s / n).to(torch.float32), dtype=torch.float64).square()
    upd = dist = nan
    if history is not None:
        prev = history.prev.reshape(-1)
        if not history.fresh:
            upd = torch.linalg.vector_norm(t - as_float32(prev), dtype=torch.float64).square()
        dist = torch.linalg.vector_norm(t - as_float32(history.first.reshape(-1)), dtype=torch.float64).square()
        prev.copy_(x.detach().reshape(-1))
        history.fresh = False
    return torch.stack([n_nan, n_inf, zero, mn.to(torch.float64), mx.to(torch.float64), s, a, q, dev, upd, dist])


def new_history(x: torch.Tensor) -> _History:
    """Start update/distance tracking of a large parameter: two device copies in its own dtype."""
    return _History(
        prev=x.detach().clone(memory_format=torch.contiguous_format),
        first=x.detach().clone(memory_format=torch.contiguous_format),
    )


def unit_vector(x: torch.Tensor, activation: str) -> tuple[str, torch.Tensor] | None:
    """Return (kind, float64 [units]) per-unit activity or saturation; units are dim 1 (see `store.stats`)."""
    t = as_float32(x)
    if t.ndim <= 1:
        t = t.reshape(1, -1)
    per_unit = t.movedim(1, -1).reshape(-1, t.shape[1])
    if activation in RELU_FAMILY:
        kind, flags = "active", per_unit > 0
    elif activation in ("sigmoid", "hardsigmoid"):
        kind, flags = "saturated", (per_unit < 0.01) | (per_unit > 0.99)
    elif activation in ("tanh", "hardtanh"):
        kind, flags = "saturated", per_unit.abs() > 0.99
    else:
        return None
    return kind, flags.to(torch.float64).mean(0)


def finish(raw: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Turn host float64 raw moments [T, RAW] into float32 [T, K] statistic columns."""
    n = counts.astype(np.float64)
    out = np.full((raw.shape[0], len(format.STAT_COLUMNS)), np.nan, dtype=np.float64)
    col = format.COLUMN
    out[:, col["count"]] = n
    out[:, col["nan"]] = raw[:, NAN]
    out[:, col["inf"]] = raw[:, INF]
    out[:, col["zero"]] = raw[:, ZERO]
    has = n > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out[has, col["min"]] = raw[has, MIN]
        out[has, col["max"]] = raw[has, MAX]
        out[has, col["mean"]] = raw[has, SUM] / n[has]
        out[has, col["std"]] = np.sqrt(np.maximum(raw[has, DEV], 0.0) / n[has])
        out[has, col["abs_mean"]] = raw[has, ABS] / n[has]
        out[has, col["l2"]] = np.sqrt(raw[has, SQ])
        out[:, col["update_l2"]] = np.sqrt(raw[:, UPD])
        out[:, col["distance_l2"]] = np.sqrt(raw[:, DIST])
    return out.astype(np.float32)
