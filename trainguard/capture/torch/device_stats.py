"""Tier-0 and Tier-1 statistics of PyTorch tensors, computed on the tensors' own device.

Called by `hook.Hook` on saved steps only, where `multi_stats` (`_multi`) has no kernel, and
for Tier-1 extras. Small tensors are copied into one padded float32 buffer per device (`Packed`)
and reduced with a fixed number of kernels whatever their count; tensors above `pack_max_numel`
are reduced one by one (`reduce_large`, float32 passes), where launch overhead is small next to
the work. Both give raw moments (`RAW_COLUMNS`, float64 rows on the device); the host turns them
into `run_format.STAT_COLUMNS` after the step's transfer (`_finalize`, `_transfer`), so nothing
here waits on the device. On CPU, where the device is the host, the
packed path instead reduces its per-row moments per tensor in numpy and runs the element-wise
corrections (NaN/Inf counts, an exact variance pass, padding masked out of min/max) only where
one host read shows they can matter. Definitions live in `store.stats` (numpy), against which
every column is tested; half and fp8 dtypes are upcast to float32 first. With the C kernel built
(`c_kernel`), float32 CPU tensors do not come here at all: the hook reads them with it.
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import torch

from trainguard.store import run_format

RAW_COLUMNS = (
    "nan", "inf", "zero", "min", "max", "sum", "abs_sum", "sq_sum", "dev_sq_sum", "update_sq_sum", "distance_sq_sum",
)  # fmt: skip
"""Per-tensor raw moments as computed on the device; `finish` derives the statistic columns from them."""
NAN, INF, ZERO, MIN, MAX, SUM, ABS, SQ, DEV, UPD, DIST = range(len(RAW_COLUMNS))

RELU_FAMILY = (
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "gelu",
    "silu",
    "prelu",
    "selu",
    "celu",
    "rrelu",
    "mish",
    "hardswish",
)
SIGMOID_LIKE = ("sigmoid", "hardsigmoid")
"""Saturated below 0.01 or above 0.99."""
TANH_LIKE = ("tanh", "hardtanh")
"""Saturated where |x| > 0.99."""
SATURATING = SIGMOID_LIKE + TANH_LIKE

_ONE_PASS_VARIANCE_MIN = 1.0 / 16
"""On CPU, std comes from sum and sum of squares when the variance keeps at least this share of
the mean square (relative error below ~1e-5); otherwise a second, exact pass runs."""


def to_host(payload: torch.Tensor) -> np.ndarray:
    """Copy one device tensor to host memory, blocking (the statistics worker, the CPU and tests; the hook's
    saved steps on accelerators go through `_transfer` without waiting)."""
    return payload.detach().to("cpu").numpy()


def as_float32(t: torch.Tensor) -> torch.Tensor:
    """Return `t` detached, as float32 (a copy only when the dtype differs)."""
    t = t.detach()
    return t if t.dtype == torch.float32 else t.to(torch.float32)


def _counts_needed(abs_sums: torch.Tensor) -> bool:
    """Whether NaN/Inf must be counted element by element.

    On accelerators always (branch-free, no sync). On CPU an element that is NaN or Inf makes
    its tensor's |x| sum non-finite, so a finite sum proves both counts are zero.
    """
    if abs_sums.device.type != "cpu":
        return True
    return not math.isfinite(float(abs_sums.sum()))


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
        self._starts = starts
        self.numels = numels
        self.buffer = torch.zeros(self.rows, width, dtype=torch.float32, device=device)
        self.views = self._views(self.buffer)
        self._slots: list[tuple[torch.Tensor, list[torch.Tensor]]] = [(self.buffer, self.views)]
        """Buffers of the snapshots in flight (`slot`); slot 0 is `buffer`."""
        self.owner = torch.repeat_interleave(torch.arange(self.count), torch.tensor(rows)).to(device)
        self.last = torch.tensor([s + r - 1 for s, r in zip(starts, rows)], dtype=torch.long, device=device)
        tail = torch.tensor([n - (r - 1) * width for n, r in zip(numels, rows)])
        self.tail_pad = (torch.arange(width)[None, :] >= tail[:, None]).to(device)
        self.n = torch.tensor(numels, dtype=torch.float64, device=device)
        self.pad = torch.tensor(
            [r * width - n for n, r in zip(numels, rows)], dtype=torch.float64, device=device
        )
        self.padded = self.pad > 0
        self.host_starts = np.asarray(starts, dtype=np.int64)
        """First row of each tensor, for numpy's segment reductions (`np.add.reduceat`)."""
        self.host_n = np.asarray(numels, dtype=np.float64)
        self.host_pad = np.asarray([r * width - n for n, r in zip(numels, rows)], dtype=np.float64)
        self.row_counts = rows
        self.row_sums = torch.zeros(6, self.rows, dtype=torch.float32, device=device)
        self.scratch = torch.empty(self.rows, width, dtype=torch.float32, device=device)
        """Reused for |x|, the non-zero flags and the update differences: no allocation per step."""
        self.ones = torch.ones(width, dtype=torch.float32, device=device)
        """Row sums are `buffer @ ones` (BLAS)."""
        self.lengths = torch.tensor(rows, dtype=torch.long, device=device)
        self.all_nan = torch.full((self.count,), torch.nan, dtype=torch.float64, device=device)
        self._tracked: dict[int, tuple[int, tuple[int, ...], torch.Tensor]] = {}
        self._unit_codes: dict[tuple[int, tuple[int, ...]], tuple[torch.Tensor, torch.Tensor]] = {}

    def _views(self, buffer: torch.Tensor) -> list[torch.Tensor]:
        flat = buffer.view(-1)
        return [flat[s * self.width : s * self.width + n] for s, n in zip(self._starts, self.numels)]

    def slot(self, i: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The buffer of snapshot slot `i` and its per-tensor views (made on first use, then kept).

        With a statistics worker (`hook`), the training thread loads step k into slot
        k mod N while the worker still reduces earlier steps from the other slots.
        """
        while len(self._slots) <= i:
            buffer = torch.zeros_like(self.buffer)
            self._slots.append((buffer, self._views(buffer)))
        return self._slots[i]

    def _tracked_info(self, k: int) -> tuple[int, tuple[int, ...], torch.Tensor]:
        info = self._tracked.get(k)
        if info is None:
            nan_after = torch.zeros(self.count, dtype=torch.float64, device=self.buffer.device)
            nan_after[k:] = torch.nan
            info = self._tracked[k] = (sum(self.row_counts[:k]), self.numels[:k], nan_after)
        return info

    def tracked_rows(self, k: int) -> tuple[int, tuple[int, ...]]:
        """Rows taken by the first `k` tensors, and their sizes (the key of their history)."""
        rows, key, _ = self._tracked_info(k)
        return rows, key

    def untracked_nan(self, k: int) -> torch.Tensor:
        """float64 [T]: 0 for the first `k` tensors, NaN after (added to columns only they have)."""
        return self._tracked_info(k)[2]

    def unit_codes(self, tracked: int, units: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        """int64 [rows of the first `tracked` tensors * width]: each element's unit (row of dim 0), numbered
        across tensors in order, `sum(units)` for padding and tensors with `units` 0; and float32 [sum(units)]
        elements per unit. Made once per (tracked, units), then kept (Tier-1 steps only)."""
        key = (tracked, units)
        cached = self._unit_codes.get(key)
        if cached is None:
            r = self.tracked_rows(tracked)[0]
            total = sum(units)
            codes = np.full(r * self.width, total, dtype=np.int64)
            sizes = np.ones(max(total, 1), dtype=np.float32)[:total]
            first = 0
            for i, u in enumerate(units):
                if u:
                    per = self.numels[i] // u
                    start = self._starts[i] * self.width
                    codes[start : start + self.numels[i]] = first + np.arange(self.numels[i]) // per
                    sizes[first : first + u] = per
                    first += u
            dev = self.buffer.device
            cached = self._unit_codes[key] = (
                torch.from_numpy(codes).to(dev),
                torch.from_numpy(sizes).to(dev),
            )
        return cached

    def per_tensor(self, row_values: torch.Tensor, reduce: str = "sum") -> torch.Tensor:
        """Reduce row statistics [R, ...] over each tensor's rows into float64 [T, ...] (segments never mix NaN)."""
        # unsafe: skip the checks of `lengths` (built here, never negative, summing to the rows), which read
        # two values back to the host on every call: a device sync each on accelerators
        return torch.segment_reduce(
            row_values.to(torch.float64), reduce, lengths=self.lengths, axis=0, unsafe=True
        )


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
    host_finish: bool = True
    """On CPU, reduce the row moments per tensor in numpy (`_finish_on_host`); False takes the
    accelerators' branch-free torch path there too (tests cover both on any machine)."""
    _layouts: OrderedDict[tuple[int, ...], _Layout] = field(default_factory=OrderedDict)
    _history: dict[tuple[int, ...], _History] = field(default_factory=dict)

    def _on_host(self) -> bool:
        """Whether a saved step is finished with numpy on the host (CPU) rather than branch-free on the device."""
        return self.host_finish and self.device.type == "cpu"

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

    def load(self, lay: _Layout, tensors: list[torch.Tensor], *, start: int = 0, slot: int = 0) -> None:
        """Copy `tensors` into places `start...` of the buffer of `slot` (dtype conversion included)."""
        if tensors:
            views = lay.slot(slot)[1]
            # under no_grad (the hook's case) reshape records no graph, so no detach() is needed
            torch._foreach_copy_(views[start : start + len(tensors)], [t.reshape(-1) for t in tensors])

    def reduce(self, lay: _Layout, *, tracked: int, slot: int = 0) -> torch.Tensor:
        """Return float64 [T, len(RAW_COLUMNS)] raw moments of the buffer of `slot`.

        Calls must come in the order of the saved steps (the update history moves on with each).
        """
        b = lay.slot(slot)[0]
        rows = lay.row_sums  # [6, R]: sum, |x| sum, x^2 sum, non-zeros, update^2, distance^2 per row
        scratch = lay.scratch
        # Row sums as matrix-vector products with a ones vector (one BLAS pass each, the fastest
        # reduction on CPU), sums of squares as a fused norm (no squared copy).
        torch.mv(b, lay.ones, out=rows[0])
        torch.linalg.vector_norm(b, dim=1, out=rows[2]).square_()
        torch.mv(torch.abs(b, out=scratch), lay.ones, out=rows[1])
        on_host = self._on_host()
        if on_host:
            # sign(|x|): 1 for every non-zero (denormals included), 0 for zeros -- and for NaN, whose
            # counts (zeros included) come from the element-wise path whenever a NaN is present.
            # One vectorised pass, where comparisons are not vectorised on CPU.
            torch.mv(scratch.sign_(), lay.ones, out=rows[3])
        fresh = self._updates(lay, b, tracked, rows) if tracked else True
        row_max, row_min = b.amax(1), b.amin(1)
        if on_host:
            return torch.from_numpy(self._finish_on_host(lay, b, tracked, fresh, row_max, row_min))
        # accelerators: every correction runs, branch-free, so nothing waits on the device
        s, a, q, _, upd, dist = lay.per_tensor(rows.t()).unbind(1)
        _mask_padding(lay, b, row_max, row_min)
        extremes = lay.per_tensor(torch.stack([row_max, row_min.neg_()], 1), "max")
        mx_t, mn_t = extremes[:, 0], extremes[:, 1].neg()
        mean = s / lay.n
        nan, inf, zero = lay.per_tensor(_row_counts(b)).unbind(1)
        zero = zero - lay.pad
        dev = lay.per_tensor(_row_dev_squares(lay, b, mean))
        untracked = lay.untracked_nan(tracked)
        upd = upd + (lay.all_nan if fresh else untracked)
        dist = dist + untracked
        return torch.stack([nan, inf, zero, mn_t, mx_t, s, a, q, dev, upd, dist], 1)

    def _finish_on_host(
        self,
        lay: _Layout,
        b: torch.Tensor,
        tracked: int,
        fresh: bool,
        row_max: torch.Tensor,
        row_min: torch.Tensor,
    ) -> np.ndarray:
        """CPU: the per-tensor reductions of the row moments in numpy, where a small-array op costs a
        fraction of a torch op's dispatch; and the element-wise corrections only where they can matter.

        NaN/Inf are counted element by element only when some |x| sum is non-finite (finite sums
        prove both counts zero); std takes a second, exact pass only where the one-pass variance
        keeps less than `_ONE_PASS_VARIANCE_MIN` of the mean square; and the zero padding is masked
        out of min/max only for a padded tensor without zeros whose extreme came out as 0.
        """
        starts = lay.host_starts
        n = lay.host_n
        # Inf - Inf and 0/0 (empty tensors) give NaN, as they should
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            s, a, q, nz, upd, dist = np.add.reduceat(lay.row_sums.numpy().astype(np.float64), starts, axis=1)
            mx = np.maximum.reduceat(row_max.numpy(), starts)
            mn = np.minimum.reduceat(row_min.numpy(), starts)
            if (((mx == 0) | (mn == 0)) & (lay.host_pad > 0) & (nz == n)).any():
                _mask_padding(lay, b, row_max, row_min)
                mx = np.maximum.reduceat(row_max.numpy(), starts)
                mn = np.minimum.reduceat(row_min.numpy(), starts)
            mean = s / n
            dev = q - s * mean
            if not np.isfinite(a.sum()):
                nan, inf, zero = np.add.reduceat(_row_counts(b).numpy().astype(np.float64), starts, axis=0).T
                zero = zero - lay.host_pad
            else:
                nan = inf = np.zeros_like(s)
                zero = n - nz
            if (dev < _ONE_PASS_VARIANCE_MIN * q).any():
                rows = _row_dev_squares(lay, b, torch.from_numpy(mean)).numpy()
                dev = np.add.reduceat(rows.astype(np.float64), starts)
        untracked = np.where(np.arange(lay.count) < tracked, 0.0, np.nan)
        upd = upd + (np.nan if fresh else untracked)
        dist = dist + untracked
        return np.stack(
            [nan, inf, zero, mn.astype(np.float64), mx.astype(np.float64), s, a, q, dev, upd, dist], 1
        )

    def _updates(self, lay: _Layout, b: torch.Tensor, tracked: int, rows: torch.Tensor) -> bool:
        """Fill rows[4:6] of the tracked rows of `b` with squared update and distance; return whether this is the first save."""
        r, key = lay.tracked_rows(tracked)
        cur = b[:r]
        hist = self._history.get(key)
        if hist is None:
            hist = self._history[key] = _History(prev=cur.clone(), first=cur.clone())
        diff = lay.scratch[:r]
        torch.linalg.vector_norm(torch.sub(cur, hist.prev, out=diff), dim=1, out=rows[4, :r]).square_()
        torch.linalg.vector_norm(torch.sub(cur, hist.first, out=diff), dim=1, out=rows[5, :r]).square_()
        hist.prev.copy_(cur)
        fresh, hist.fresh = hist.fresh, False
        return fresh

    def moved(self, lay: _Layout, tracked: int, units: tuple[int, ...], *, slot: int = 0) -> torch.Tensor:
        """Return float64 [sum(units)]: per unit (row of dim 0) of the first `tracked` tensors in `slot`, the share
        of its elements that differ from the copy of the previous saved step (`units[i]` 0 skips tensor i).

        Tier-1 steps only, and before `reduce`, which moves that copy on. NaN while there is no
        previous copy (the first saved step). Fixed kernels on the device: no host sync.
        """
        r, key = lay.tracked_rows(tracked)
        hist = self._history.get(key)
        total = sum(units)
        if hist is None or hist.fresh:
            return torch.full((total,), torch.nan, dtype=torch.float64, device=lay.buffer.device)
        codes, sizes = lay.unit_codes(tracked, units)
        changed = torch.ne(lay.slot(slot)[0][:r], hist.prev).reshape(-1).to(torch.float32)
        counts = torch.zeros(total + 1, dtype=torch.float32, device=changed.device).index_add_(
            0, codes, changed
        )
        return (counts[:total] / sizes).to(
            torch.float64
        )  # counts are exact: a packed tensor has < 2^24 elements

    def histograms(self, lay: _Layout, raw: torch.Tensor, *, slot: int = 0) -> torch.Tensor:
        """Return float64 [T, HIST_BINS] log2-magnitude histograms of the tensors in `slot`; `raw` is `reduce`'s result."""
        codes = (
            _exponent_bins(lay.slot(slot)[0]) + (lay.owner.to(torch.int32) * run_format.HIST_BINS)[:, None]
        )
        counts = bin_counts(codes, lay.count * run_format.HIST_BINS, host=self._on_host())
        return fix_bins(counts.reshape(lay.count, run_format.HIST_BINS).to(torch.float64), raw, pad=lay.pad)


def bin_counts(codes: torch.Tensor, length: int, *, host: bool) -> torch.Tensor:
    """int64 [length]: how often each code in `codes` (0 <= code < length) occurs.

    `bincount` where `host` (on CPU, the fastest); elsewhere a scatter-add of ones, because CUDA's
    `bincount` reads the smallest and largest code back to the host first: a device sync."""
    flat = codes.reshape(-1)
    if host:
        return torch.bincount(flat, minlength=length)
    flat = flat.to(torch.int64)
    ones = torch.ones((), dtype=torch.int64, device=flat.device).expand_as(flat)
    return torch.zeros(length, dtype=torch.int64, device=flat.device).scatter_add_(0, flat, ones)


def _mask_padding(lay: _Layout, b: torch.Tensor, row_max: torch.Tensor, row_min: torch.Tensor) -> None:
    """Redo the row extremes of each tensor's last row with the zero padding past its end masked out."""
    tails = b.index_select(0, lay.last)
    row_max.index_copy_(0, lay.last, tails.masked_fill(lay.tail_pad, -torch.inf).amax(1))
    row_min.index_copy_(0, lay.last, tails.masked_fill(lay.tail_pad, torch.inf).amin(1))


def _row_counts(b: torch.Tensor) -> torch.Tensor:
    """[R, 3] NaN, Inf and zero counts of each row (padding counts as zeros)."""
    return torch.stack([b.isnan().sum(1), b.isinf().sum(1), (b == 0).sum(1)], 1)


def _row_dev_squares(lay: _Layout, b: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
    """[R] sum over each row of (x - its tensor's mean)^2, padding excluded: the exact variance pass."""
    d = b - mean.to(device=b.device, dtype=torch.float32).index_select(0, lay.owner)[:, None]
    d.index_copy_(0, lay.last, d.index_select(0, lay.last).masked_fill(lay.tail_pad, 0.0))
    norms: torch.Tensor = torch.linalg.vector_norm(d, dim=1)
    return norms.square()


def _exponent_bins(x: torch.Tensor) -> torch.Tensor:
    """int32 bin of each element of a float32 tensor, from its exponent bits alone (no compares).

    floor(log2|x|) is exponent - 127 for normal numbers and bin b holds [2^(b-40), 2^(b-39)),
    so bin = exponent - 87, clamped to 1..63. Zeros and denormals (exponent 0) land in bin 1 and
    NaN/Inf (exponent 255) in bin 63; `fix_bins` moves or drops them using known counts.
    """
    exponent = (x.contiguous().view(torch.int32) >> 23) & 0xFF
    return (exponent - (127 + run_format.HIST_MIN_EXPONENT - 1)).clamp_(1, run_format.HIST_BINS - 1)


def fix_bins(hist: torch.Tensor, raw: torch.Tensor, *, pad: torch.Tensor | float = 0.0) -> torch.Tensor:
    """Move exact zeros (and zero padding) out of bin 1 into bin 0; drop NaN/Inf from bin 63.

    In-place ops on the bins' views: four ops without padding (an indexed assignment, `hist[..., 1] -= v`,
    costs an op and a copy back each: seven). Integer counts in float64: exact in any order."""
    zeros = raw[..., ZERO]
    hist[..., 1].sub_(zeros if isinstance(pad, float) and pad == 0.0 else zeros + pad)
    hist[..., 0].copy_(zeros)
    hist[..., run_format.HIST_BINS - 1].sub_(raw[..., NAN]).sub_(raw[..., INF])
    return hist


def histogram(x: torch.Tensor, raw: torch.Tensor) -> torch.Tensor:
    """Return float64 [HIST_BINS] log2-magnitude histogram of one tensor; `raw` is `reduce_large(x)`."""
    counts = bin_counts(_exponent_bins(as_float32(x)), run_format.HIST_BINS, host=x.device.type == "cpu")
    return fix_bins(counts.to(torch.float64), raw)


def reduce_large(x: torch.Tensor, history: _History | None = None) -> torch.Tensor:
    """Return float64 [len(RAW_COLUMNS)] raw moments of one (large) tensor, without packing it.

    With `history`, also the squared distances to the previous and first saved copies, and
    the previous copy is refreshed in place. Passes over the tensor accumulate in float32 (torch's
    blocked reductions: ~1e-7 relative, where the columns are stored as float32), counts in int64
    (exact), and the variance is a second pass around the mean (no `q - s^2/n` cancellation); only
    the one row is float64. Used where `multi_stats` has no kernel (`_multi.available`), and as its
    reference.
    """
    t = as_float32(x).reshape(-1)
    n = t.numel()
    device = t.device
    if n == 0:
        none = torch.zeros((), dtype=torch.float64, device=device)
        nan = torch.full((), torch.nan, dtype=torch.float64, device=device)
        return torch.stack([none, none, none] + [nan] * 8)
    a = t.abs().sum()
    s = t.sum()
    q = torch.linalg.vector_norm(t).square()
    mn, mx = torch.aminmax(t)
    if _counts_needed(a):
        n_nan = t.isnan().sum()
        n_inf = t.isinf().sum()
    else:
        n_nan = n_inf = torch.zeros((), dtype=torch.int64, device=device)
    zero = n - torch.count_nonzero(t)
    # squared deviations around the mean, shifted by the first element: exact 0 for a constant tensor (whose
    # float32 sum/n need not be the constant), and no cancellation for a large mean
    shifted = t - t[0]
    dev = torch.linalg.vector_norm(shifted - shifted.sum() / n).square()
    upd = dist = torch.full((), torch.nan, dtype=torch.float32, device=device)
    if history is not None:
        prev = history.prev.reshape(-1)
        if not history.fresh:
            upd = torch.linalg.vector_norm(t - as_float32(prev)).square()
        dist = torch.linalg.vector_norm(t - as_float32(history.first.reshape(-1))).square()
        prev.copy_(x.detach().reshape(-1))
        history.fresh = False
    counts = torch.stack([n_nan, n_inf, zero]).to(torch.float64)
    moments = torch.stack([mn, mx, s, a, q, dev, upd, dist]).to(torch.float64)
    return torch.cat([counts, moments])


def reduce_one(
    x: torch.Tensor, history: _History | None = None, *, hist: bool = False, moved: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Return one tensor's raw moments (float64 [len(RAW_COLUMNS)]), its histogram if `hist` and, if `moved` and it
    has a `history` and units (`unit_count`), its Tier-1 "moved" vector; the previous copy moves on.
    Torch ops on the tensor's device (`reduce_large`, `histogram`, `moved_large`), no sync."""
    units = unit_count(x) if moved and history is not None else 0
    mv = moved_large(x, history) if units and history is not None else None  # before the copy moves on
    raw = reduce_large(x, history)
    return raw, histogram(x, raw) if hist else None, mv


def unit_count(x: torch.Tensor) -> int:
    """The units of a parameter's per-unit "moved" vector: the size of dim 0, or 0 when it has one unit or none."""
    return int(x.shape[0]) if x.ndim >= 1 and x.shape[0] > 1 and x.numel() else 0


def moved_large(x: torch.Tensor, history: _History) -> torch.Tensor:
    """float64 [units] share of each unit's elements (row of dim 0) of a large parameter that differ from its
    previous saved copy; NaN on the first save. Call before `reduce_large`, which moves the copy on."""
    if history.fresh:
        return torch.full((x.shape[0],), torch.nan, dtype=torch.float64, device=x.device)
    changed = torch.ne(x.detach().reshape(x.shape[0], -1), history.prev.reshape(x.shape[0], -1))
    return changed.sum(1, dtype=torch.float64) / (x.numel() // x.shape[0])


def new_history(x: torch.Tensor) -> _History:
    """Start update/distance tracking of a large parameter: two device copies in its own dtype."""
    return _History(
        prev=x.detach().clone(memory_format=torch.contiguous_format),
        first=x.detach().clone(memory_format=torch.contiguous_format),
    )


def unit_vector(x: torch.Tensor, activation: str) -> tuple[str, torch.Tensor] | None:
    """Return (kind, float64 [units]) per-unit activity or saturation; units are dim 1 (see `store.stats`); None
    for a kind with no per-unit vector (a model's input), before any copy.

    Three ops for an activation of the ReLU family (the flags, their count per unit in one reduction over every
    other dim, the division), where a mean over a units-last copy took six: no permuted copy, no float64 copy
    of the flags. "active" (x > 0) reads `x` in its own dtype (the comparison with 0 is exact in any); the
    saturation thresholds compare in float32, as the kernel does."""
    if activation in RELU_FAMILY:
        kind, t = "active", x
    elif activation in SATURATING:
        kind, t = "saturated", x if x.dtype == torch.float32 else as_float32(x)
    else:
        return None
    if t.ndim <= 1:
        t = t.reshape(1, -1)
    if kind == "active":
        flags = t > 0
    elif activation in SIGMOID_LIKE:
        flags = (t < 0.01) | (t > 0.99)
    else:
        flags = t.abs() > 0.99
    per_unit = flags.sum([0, *range(2, t.ndim)], dtype=torch.float64)  # the count of each unit's flags
    return kind, per_unit.div_(flags.numel() // max(t.shape[1], 1))


def finish(raw: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Turn host float64 raw moments [T, RAW] into float32 [T, K] statistic columns (`run_format.STAT_COLUMNS` order)."""
    n = counts.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.stack(
            [
                n,
                raw[:, NAN],
                raw[:, INF],
                raw[:, ZERO],
                raw[:, MIN],
                raw[:, MAX],
                raw[:, SUM] / n,
                np.sqrt(np.maximum(raw[:, DEV], 0.0) / n),
                raw[:, ABS] / n,
                np.sqrt(raw[:, SQ]),
                np.sqrt(raw[:, UPD]),
                np.sqrt(raw[:, DIST]),
            ],
            1,
        )
    if not n.all():  # an empty tensor has counts but no moments
        out[n == 0, run_format.COLUMN["min"] : run_format.COLUMN["l2"] + 1] = np.nan
    return out.astype(np.float32)
