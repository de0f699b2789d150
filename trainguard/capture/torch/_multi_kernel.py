"""The Triton kernels behind `_multi.multi_stats` and `_multi.multi_hist`: one launch reads every tensor once, one more merges.

Imported by `_multi` only when the op runs its kernel, so that Triton is never imported with the
hook. The first launch (`_partials_fn`) walks a work list of (tensor, chunk) items through a device
table of addresses: each program takes items pid, pid + grid, ... and writes one row of partial
moments per item, in fixed places (no atomics: the same inputs give bitwise the same rows). The
second (`_merge_fn`) folds each tensor's partial rows, in order, into its row of `out`.

Numerics. Elements are upcast to float32 in registers, as `device_stats.as_float32` does. Each thread
is a lane: per block it reads `Config.row` bytes of consecutive elements (one 16-byte vector load), takes
their mean and squared deviations in registers (shifted by the item's first element: a constant tensor
gives exactly 0) and merges them into its float32 running mean and M2 with Chan's formula; it also keeps
the zero count, min, max, the |x| sum and, with history, the squared update and distance. Nothing is
reduced across lanes inside the loop: at the item's end the lanes' (count, mean, M2) are merged in
float64 (Chan), as are the items' rows by the merge launch: never sum(x^2) - sum(x)^2 / n, which loses
everything when the mean dwarfs the spread. Sum and sum of squares are derived in float64 (n * mean,
M2 + n * mean^2). The first pass counts neither NaN nor Inf and takes min and max unmasked; an item whose
|x| sum, M2 or mean is not finite (a NaN or Inf among its elements, or float32 overflow) is read again by
a careful pass that counts them, leaves NaN out of min and max and sets the sums as torch's are (NaN with
a NaN, +-Inf with infinities of one sign, NaN with both); if that pass finds no NaN or Inf, the item is
read once more scaled by 2^-72. Update and distance come from the first pass, which refreshes prev;
differences above 2^56 are squared scaled, element by element. On an H200 this kernel took 0.75x the
time of the per-lane Welford kernel it replaced (docs/benchmarks.md). Whole blocks are read without
masks (vector loads where every address is 16-byte aligned); the last, partial block of an item with
masks.

Histograms (`multi_hist`, Tier-1 steps) walk the same work list: each item's elements are binned by
their float32 exponent with `tl.histogram` in registers and the item's counts written to a row of
its own (no atomics), which a second launch sums per tensor.

`multi_sample_diff` gathers a fixed sample of each tensor's elements (`_sampled.SampledHistory`) and writes their
weighted differences from the previous and first saved samples, refreshing the previous ones, in one launch over
the same kind of address table, a work list of (tensor, first sampled element, count) items.

Work lists and address tables are cached per layout (`_Layout`): the list once per layout, an
address table per set of addresses (a small host-to-device copy, non-blocking from pinned memory on
CUDA). Offsets are int64, so tensors over 2^31 elements are read whole.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import torch
import triton.language as tl
from triton.compiler import CompiledKernel
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction

if TYPE_CHECKING:
    from trainguard.capture.torch import _multi

log = logging.getLogger(__name__)

PARTS = 13
"""Columns of a partial row: n, nan, inf, zero, min, max, sum, |x| sum, x^2 sum, mean, M2, update^2, distance^2."""

# The reductions go through tl.reduce with the combine functions of tl.sum/tl.max/tl.min, which
# Triton decorates once, at its own import, either for the compiler or for the interpreter (by
# TRITON_INTERPRET then). tl.sum and friends would call them in that mode only; the interpreter
# recognises these three by identity and reduces in numpy, whichever mode made them, so the CPU
# kernels below run in any process. (Private names of Triton 3.x's standard library.)
_ADD = tl.standard._sum_combine
_MAX = tl.standard._elementwise_max
_MIN = tl.standard._elementwise_min
_LIBRARY_INTERPRETED = isinstance(_ADD, InterpretedFunction)
"""Triton was imported under TRITON_INTERPRET=1: its compiler cannot run our kernels on CUDA either."""

_TL_DTYPES = {
    torch.float32: tl.float32,
    torch.float16: tl.float16,
    torch.bfloat16: tl.bfloat16,
    torch.float64: tl.float64,
}


@dataclass(frozen=True)
class Config:
    """Sizes of the work: elements per register block and per work item, and the grid's bound."""

    block: int
    """Elements the histogram and moved kernels reduce at once in registers (a power of two)."""
    chunk: int
    """Elements per work item, a multiple of `block` and of the partials kernel's block: a partial row each."""
    merge_block: int
    """Partial rows folded at once by `_merge` (a power of two)."""
    programs: int
    """The most programs `_partials` launches; they share the items round-robin."""
    num_warps: int
    stages: int | None = None
    """Software-pipelining stages of `_partials_fn`'s block loop (`tl.range`'s `num_stages`); None: Triton's default."""
    row: int = 16
    """Bytes of consecutive elements each thread reads per block of `_partials_fn` (16: one vector load)."""
    hist_block: int | None = None
    """Elements per `tl.histogram` of the histogram kernel (a power of two dividing `chunk`); None: `block`."""
    max_registers: int | None = None
    """Registers per thread the partials kernel may use (ptxas `.maxnreg`), so that more programs fit on a
    multiprocessor at once; None: as many as the compiler takes."""
    tier1_warps: int | None = None
    """Warps of the histogram and moved kernels (Tier-1 steps); None: `num_warps`."""


@functools.cache
def config(device: torch.device) -> Config:
    """The sizes for `device`: GPU-sized on CUDA; small on the CPU interpreter, which runs each block in numpy."""
    if device.type == "cuda" and not _interpreting(device):
        return gpu_config(torch.cuda.get_device_properties(device).multi_processor_count)
    return Config(block=128, chunk=512, merge_block=16, programs=4, num_warps=1, row=16)


def gpu_config(sms: int) -> Config:
    """The sizes for a CUDA device with `sms` multiprocessors.

    The partials kernel: 8 warps capped at 128 registers per thread (two programs per SM), a 16-byte row per
    thread per block, 131,072 elements per item, 16 programs per SM, the block loop pipelined in 6 stages (its
    loads go through shared memory, so the stages hold bytes in flight without registers). On an H200
    (`benchmarks/hook_gpu_checks.py profile`, docs/benchmarks.md): 0.72-0.91x the device time of the 16-warp,
    3-stage sizes before it, which kept one program of 128 registers per thread on each SM with 16 KB in
    flight, and the 0.94B GPT at every step 1.081x / 1.086x against 1.090x / 1.093x. The moved kernel: 2,048-element
    blocks in 16 warps; the histogram kernel: whole 8,192-element blocks per `tl.histogram` (`hist_block`) in
    16 warps (`tier1_warps`)."""
    return Config(
        block=2048,
        chunk=131072,
        merge_block=256,
        programs=16 * sms,
        num_warps=8,
        stages=6,
        row=16,
        hist_block=8192,
        max_registers=128,
        tier1_warps=16,
    )


def partials_block(cfg: Config, itemsize: int) -> tuple[int, int]:
    """`_partials_fn`'s (LANES, ROW) for elements of `itemsize` bytes: a lane per thread, `cfg.row` bytes a lane."""
    return 32 * cfg.num_warps, max(1, cfg.row // itemsize)


def _interpreting(device: torch.device) -> bool:
    return device.type == "cpu" or _LIBRARY_INTERPRETED


def _partials_fn(  # type: ignore[no-untyped-def]
    table_ptr,
    static_ptr,
    part_ptr,
    n_items,
    n_tensors,
    X_DTYPE: tl.constexpr,
    P_DTYPE: tl.constexpr,
    F_DTYPE: tl.constexpr,
    HISTORY: tl.constexpr,
    ALIGNED: tl.constexpr,
    LANES: tl.constexpr,
    ROW: tl.constexpr,
    CHUNK: tl.constexpr,
    STAGES: tl.constexpr,
):
    """One partial row per work item (`_Layout.static`: numels, then item tensors, then item starts), reading
    LANES x ROW elements per block, one lane per thread: each lane takes
    ROW consecutive elements (one vector load of 16 bytes where ROW fills it), reduces them in its own registers
    (the block's mean and squared deviations, two passes over registers) and merges that into its running
    (mean, M2) with Chan's formula: one set of accumulators per lane while the bytes in flight grow with ROW.
    Sum and sum of squares are not accumulated: they follow from the count, mean and M2 in float64 at the
    item's end. The first pass counts zeros only and takes min and max unmasked; an item whose |x| sum, M2 or
    mean comes out NaN or infinite (a NaN or Inf among its elements, or float32 overflow) is read again by a
    careful pass that counts NaN and Inf, leaves NaN out of min and max, and sets the sums as torch's would;
    if that finds no NaN or Inf, once more scaled by 2^-72. Update and distance come from the first pass,
    which refreshes prev."""
    BLOCK: tl.constexpr = LANES * ROW
    lanes = tl.arange(0, LANES)
    grid = lanes[:, None] * ROW + tl.arange(0, ROW)[None, :]
    for item in range(tl.program_id(0), n_items, tl.num_programs(0)):
        t = tl.load(static_ptr + n_tensors + item)
        start = tl.load(static_ptr + n_tensors + n_items + item)
        end = tl.minimum(start + CHUNK, tl.load(static_ptr + t))
        x_base = tl.load(table_ptr + t).to(tl.pointer_type(X_DTYPE))
        p_base = tl.load(table_ptr + n_tensors + t).to(tl.pointer_type(P_DTYPE))
        f_base = tl.load(table_ptr + 2 * n_tensors + t).to(tl.pointer_type(F_DTYPE))
        if ALIGNED:  # every address is 16-byte aligned: vector loads
            x_base = tl.multiple_of(x_base, 16)
            p_base = tl.multiple_of(p_base, 16)
            f_base = tl.multiple_of(f_base, 16)
        pivot = tl.load(x_base + start).to(tl.float32)
        blocks = (end - start) // BLOCK
        full_end = start + blocks * BLOCK
        # a lane's count in the partial block: what of its ROW elements lies below the item's end
        tail_n = tl.minimum(tl.maximum(end - full_end - lanes * ROW, 0), ROW).to(tl.float32)
        n_l = (blocks * ROW).to(tl.float64) + tail_n.to(tl.float64)
        n_acc = tl.reduce(n_l, 0, _ADD)
        # the item's results, set by the passes below (loop-carried, hence defined first)
        mean_acc = tl.cast(0.0, tl.float64)
        m2 = tl.cast(0.0, tl.float64)
        s = tl.cast(0.0, tl.float64)
        a = tl.cast(0.0, tl.float64)
        q = tl.cast(0.0, tl.float64)
        u = tl.cast(0.0, tl.float64)
        d = tl.cast(0.0, tl.float64)
        nan_c = tl.cast(0, tl.int32)
        inf_c = tl.cast(0, tl.int32)
        zero_c = tl.cast(0, tl.int32)
        mn = tl.cast(float("inf"), tl.float32)
        mx = tl.cast(float("-inf"), tl.float32)
        bad = False
        for careful in tl.static_range(2):
            scale = tl.cast(1.0, tl.float32)
            unscale = tl.cast(1.0, tl.float64)
            again = (careful == 0) | bad
            while again:
                a_l = tl.full([LANES], 0.0, tl.float32)
                mean_l = tl.full([LANES], 0.0, tl.float32)
                m2_l = tl.full([LANES], 0.0, tl.float32)
                u_l = tl.full([LANES], 0.0, tl.float32)
                ub_l = tl.full([LANES], 0.0, tl.float32)
                d_l = tl.full([LANES], 0.0, tl.float32)
                db_l = tl.full([LANES], 0.0, tl.float32)
                nan_l = tl.full([LANES], 0, tl.int32)
                inf_l = tl.full([LANES], 0, tl.int32)
                zero_l = tl.full([LANES], 0, tl.int32)
                mn_l = tl.full([LANES], float("inf"), tl.float32)
                mx_l = tl.full([LANES], float("-inf"), tl.float32)
                shift = pivot * scale
                for tail in tl.static_range(2):  # whole blocks without masks, then the last, partial one
                    for off in tl.range(
                        full_end if tail else start,
                        end if tail else full_end,
                        BLOCK,
                        num_stages=STAGES,
                    ):
                        idx = off + grid
                        if ALIGNED:
                            idx = tl.max_contiguous(tl.multiple_of(idx, [ROW, ROW]), [1, ROW])
                        if tail:
                            valid = idx < end
                            raw = tl.load(x_base + idx, mask=valid, other=0.0)
                        else:  # no mask: vector loads
                            raw = tl.load(x_base + idx)
                        x = raw.to(tl.float32)
                        xs = x
                        if careful:
                            xs = x * scale
                            is_nan = x != x  # noqa: PLR0124 -- NaN alone is unequal to itself
                            nan_l += tl.reduce(is_nan.to(tl.int32), 1, _ADD)
                            inf_l += tl.reduce((tl.abs(x) == float("inf")).to(tl.int32), 1, _ADD)
                            ordered = ~is_nan
                            if tail:
                                ordered = ordered & valid
                            lo = tl.where(ordered, x, float("inf"))
                            hi = tl.where(ordered, x, float("-inf"))
                        elif tail:
                            lo = tl.where(valid, x, float("inf"))
                            hi = tl.where(valid, x, float("-inf"))
                        else:  # no NaN here, or the careful pass reads the item again
                            lo = x
                            hi = x
                        mn_l = tl.minimum(mn_l, tl.reduce(lo, 1, _MIN))
                        mx_l = tl.maximum(mx_l, tl.reduce(hi, 1, _MAX))
                        if tail:
                            zero_l += tl.reduce(((x == 0.0) & valid).to(tl.int32), 1, _ADD)
                        else:
                            zero_l += tl.reduce((x == 0.0).to(tl.int32), 1, _ADD)
                        a_l += tl.reduce(tl.abs(xs), 1, _ADD)
                        # the lane's ROW values (shifted by the item's first element): their mean and squared
                        # deviations, then Chan's merge into the lane's running (mean, M2) over k earlier blocks
                        k = ((off - start) // BLOCK).to(tl.float32)
                        if tail:
                            y = tl.where(valid, xs - shift, 0.0)
                            b_mean = tl.reduce(y, 1, _ADD) / tl.maximum(tail_n, 1.0)
                            dev = tl.where(valid, y - b_mean[:, None], 0.0)
                            frac = tail_n / tl.maximum(k * ROW + tail_n, 1.0)
                        else:
                            y = xs - shift
                            b_mean = tl.reduce(y, 1, _ADD) * (1.0 / ROW)
                            dev = y - b_mean[:, None]
                            frac = 1.0 / (k + 1.0)
                        delta = b_mean - mean_l
                        mean_l += delta * frac
                        m2_l += tl.reduce(dev * dev, 1, _ADD) + delta * delta * (k * ROW) * frac
                        if HISTORY and not careful:  # the first pass only: it refreshes prev
                            if tail:
                                prev = tl.load(p_base + idx, mask=valid, other=0.0)
                                first = tl.load(f_base + idx, mask=valid, other=0.0)
                            else:
                                prev = tl.load(p_base + idx)
                                first = tl.load(f_base + idx)
                            du = x - prev.to(tl.float32)
                            big_u = tl.abs(du) > 72057594037927936.0  # squared in float32 only below 2^56
                            du = tl.where(big_u, du * 2.0**-72, du)
                            u_l += tl.reduce(tl.where(big_u, 0.0, du * du), 1, _ADD)
                            ub_l += tl.reduce(tl.where(big_u, du * du, 0.0), 1, _ADD)
                            dd = x - first.to(tl.float32)
                            big_d = tl.abs(dd) > 72057594037927936.0
                            dd = tl.where(big_d, dd * 2.0**-72, dd)
                            d_l += tl.reduce(tl.where(big_d, 0.0, dd * dd), 1, _ADD)
                            db_l += tl.reduce(tl.where(big_d, dd * dd, 0.0), 1, _ADD)
                            if tail:
                                tl.store(p_base + idx, raw.to(P_DTYPE), mask=valid)
                            else:
                                tl.store(p_base + idx, raw.to(P_DTYPE))
                nan_c = tl.reduce(nan_l, 0, _ADD)
                inf_c = tl.reduce(inf_l, 0, _ADD)
                zero_c = tl.reduce(zero_l, 0, _ADD)
                mn = tl.reduce(mn_l, 0, _MIN)
                mx = tl.reduce(mx_l, 0, _MAX)
                a = tl.reduce(a_l.to(tl.float64), 0, _ADD) * unscale
                # the lanes' (count, mean, M2) merged at once (Chan over a group), in float64
                lane_mean = mean_l.to(tl.float64)
                y_mean = tl.reduce(n_l * lane_mean, 0, _ADD) / tl.maximum(n_acc, 1.0)
                spread = n_l * (lane_mean - y_mean) * (lane_mean - y_mean)
                m2 = (tl.reduce(m2_l.to(tl.float64), 0, _ADD) + tl.reduce(spread, 0, _ADD)) * (
                    unscale * unscale
                )
                mean_acc = pivot.to(tl.float64) + y_mean * unscale
                total = a + m2 + tl.abs(mean_acc)
                if careful:
                    # float32 overflow with finite elements (|x| near 2^64 or above): once more, scaled
                    again = (nan_c + inf_c == 0) & ~(tl.abs(total) < float("inf")) & (scale == 1.0)
                    scale = tl.cast(2.0**-72, tl.float32)
                    unscale = tl.cast(4722366482869645213696.0, tl.float64)
                else:
                    bad = ~(tl.abs(total) < float("inf"))
                    again = False
                    if HISTORY:
                        big2 = tl.cast(2.0**144, tl.float64)
                        u = (
                            tl.reduce(u_l.to(tl.float64), 0, _ADD)
                            + tl.reduce(ub_l.to(tl.float64), 0, _ADD) * big2
                        )
                        d = (
                            tl.reduce(d_l.to(tl.float64), 0, _ADD)
                            + tl.reduce(db_l.to(tl.float64), 0, _ADD) * big2
                        )
        # sums from (count, mean, M2); with NaN or Inf among the elements, what torch's sums give
        s = n_acc * mean_acc
        q = m2 + n_acc * mean_acc * mean_acc
        pos_inf = mx == float("inf")
        neg_inf = mn == float("-inf")
        s = tl.where(
            pos_inf, tl.where(neg_inf, float("nan"), float("inf")), tl.where(neg_inf, float("-inf"), s)
        )
        s = tl.where(nan_c > 0, float("nan"), s)
        q = tl.where(nan_c > 0, float("nan"), tl.where(inf_c > 0, float("inf"), q))
        row = part_ptr + item
        tl.store(row, n_acc)
        tl.store(row + n_items, nan_c.to(tl.float64))
        tl.store(row + 2 * n_items, inf_c.to(tl.float64))
        tl.store(row + 3 * n_items, zero_c.to(tl.float64))
        tl.store(row + 4 * n_items, mn.to(tl.float64))
        tl.store(row + 5 * n_items, mx.to(tl.float64))
        tl.store(row + 6 * n_items, s)
        tl.store(row + 7 * n_items, a)
        tl.store(row + 8 * n_items, q)
        tl.store(row + 9 * n_items, mean_acc)
        tl.store(row + 10 * n_items, m2)
        tl.store(row + 11 * n_items, u)
        tl.store(row + 12 * n_items, d)


def _merge_fn(  # type: ignore[no-untyped-def]
    static_ptr,
    part_ptr,
    out_ptr,
    n_items,
    n_tensors,
    CB: tl.constexpr,
):
    """Row t of `out` from tensor t's partial rows (`_Layout.static` ends with each tensor's first item)."""
    t = tl.program_id(0)
    first = tl.load(static_ptr + n_tensors + 2 * n_items + t)
    last = tl.load(static_ptr + n_tensors + 2 * n_items + t + 1)
    lanes = tl.arange(0, CB)
    n_acc = tl.cast(0.0, tl.float64)
    mean_acc = tl.cast(0.0, tl.float64)
    m2_acc = tl.cast(0.0, tl.float64)
    nan_c = tl.cast(0.0, tl.float64)
    inf_c = tl.cast(0.0, tl.float64)
    zero_c = tl.cast(0.0, tl.float64)
    s_acc = tl.cast(0.0, tl.float64)
    a_acc = tl.cast(0.0, tl.float64)
    q_acc = tl.cast(0.0, tl.float64)
    u_acc = tl.cast(0.0, tl.float64)
    d_acc = tl.cast(0.0, tl.float64)
    mn = tl.cast(float("inf"), tl.float64)
    mx = tl.cast(float("-inf"), tl.float64)
    for off in range(first, last, CB):
        idx = off + lanes
        ok = idx < last
        n = tl.load(part_ptr + idx, mask=ok, other=0.0)
        nan_c += tl.reduce(tl.load(part_ptr + n_items + idx, mask=ok, other=0.0), 0, _ADD)
        inf_c += tl.reduce(tl.load(part_ptr + 2 * n_items + idx, mask=ok, other=0.0), 0, _ADD)
        zero_c += tl.reduce(tl.load(part_ptr + 3 * n_items + idx, mask=ok, other=0.0), 0, _ADD)
        mn = tl.minimum(
            mn, tl.reduce(tl.load(part_ptr + 4 * n_items + idx, mask=ok, other=float("inf")), 0, _MIN)
        )
        mx = tl.maximum(
            mx, tl.reduce(tl.load(part_ptr + 5 * n_items + idx, mask=ok, other=float("-inf")), 0, _MAX)
        )
        s_acc += tl.reduce(tl.load(part_ptr + 6 * n_items + idx, mask=ok, other=0.0), 0, _ADD)
        a_acc += tl.reduce(tl.load(part_ptr + 7 * n_items + idx, mask=ok, other=0.0), 0, _ADD)
        q_acc += tl.reduce(tl.load(part_ptr + 8 * n_items + idx, mask=ok, other=0.0), 0, _ADD)
        u_acc += tl.reduce(tl.load(part_ptr + 11 * n_items + idx, mask=ok, other=0.0), 0, _ADD)
        d_acc += tl.reduce(tl.load(part_ptr + 12 * n_items + idx, mask=ok, other=0.0), 0, _ADD)
        # the partial rows' (n, mean, M2) merged exactly as a group, then into the running total (Chan)
        means = tl.load(part_ptr + 9 * n_items + idx, mask=ok, other=0.0)
        g_n = tl.reduce(n, 0, _ADD)
        g_mean = tl.reduce(n * means, 0, _ADD) / g_n
        spread = tl.where(ok, n * (means - g_mean) * (means - g_mean), 0.0)
        m2s = tl.load(part_ptr + 10 * n_items + idx, mask=ok, other=0.0)
        g_m2 = tl.reduce(m2s, 0, _ADD) + tl.reduce(spread, 0, _ADD)
        delta = g_mean - mean_acc
        n_new = n_acc + g_n
        mean_acc += delta * (g_n / n_new)
        m2_acc += g_m2 + delta * delta * (n_acc * g_n / n_new)
        n_acc = n_new
    nan = float("nan")
    empty = n_acc == 0.0
    mn = tl.where((nan_c > 0) | empty, nan, mn)
    mx = tl.where((nan_c > 0) | empty, nan, mx)
    m2_acc = tl.where((nan_c + inf_c > 0) | empty, nan, m2_acc)
    row = out_ptr + t * 11  # len(device_stats.RAW_COLUMNS), in its order
    tl.store(row, nan_c)
    tl.store(row + 1, inf_c)
    tl.store(row + 2, zero_c)
    tl.store(row + 3, mn)
    tl.store(row + 4, mx)
    tl.store(row + 5, tl.where(empty, nan, s_acc))
    tl.store(row + 6, tl.where(empty, nan, a_acc))
    tl.store(row + 7, tl.where(empty, nan, q_acc))
    tl.store(row + 8, m2_acc)
    tl.store(row + 9, tl.where(empty, nan, u_acc))
    tl.store(row + 10, tl.where(empty, nan, d_acc))


def _hist_partials_fn(  # type: ignore[no-untyped-def]
    table_ptr,
    static_ptr,
    part_ptr,
    n_items,
    n_tensors,
    X_DTYPE: tl.constexpr,
    ALIGNED: tl.constexpr,
    BLOCK: tl.constexpr,
    CHUNK: tl.constexpr,
    BINS: tl.constexpr,
    LOW: tl.constexpr,
):
    """One int32 row of BINS exponent-bin counts per work item, in fixed places (no atomics).

    An element's bin is its float32 exponent less LOW, clamped to 1..BINS-1, as
    `device_stats._exponent_bins` gives; elements past the item's end count in bin 0, which the merge
    empties. Whole blocks are read without masks (vector loads where every address is 16-byte aligned),
    the last, partial block of an item with masks; each `tl.histogram` (a shared-memory pass between two
    barriers) takes a whole block.
    """
    lanes = tl.arange(0, BLOCK)
    bins = tl.arange(0, BINS)
    for item in range(tl.program_id(0), n_items, tl.num_programs(0)):
        t = tl.load(static_ptr + n_tensors + item)
        start = tl.load(static_ptr + n_tensors + n_items + item)
        end = tl.minimum(start + CHUNK, tl.load(static_ptr + t))
        x_base = tl.load(table_ptr + t).to(tl.pointer_type(X_DTYPE))
        if ALIGNED:
            x_base = tl.multiple_of(x_base, 16)
        full_end = start + (end - start) // BLOCK * BLOCK
        acc = tl.full([BINS], 0, tl.int32)
        for off in range(start, full_end, BLOCK):
            idx = off + lanes
            if ALIGNED:
                idx = tl.max_contiguous(tl.multiple_of(idx, BLOCK), BLOCK)
            x = tl.load(x_base + idx).to(tl.float32)
            exponent = (x.to(tl.int32, bitcast=True) >> 23) & 0xFF
            acc += tl.histogram(tl.minimum(tl.maximum(exponent - LOW, 1), BINS - 1), BINS)
        for off in range(full_end, end, BLOCK):  # at most once: the partial block
            idx = off + lanes
            valid = idx < end
            x = tl.load(x_base + idx, mask=valid, other=0.0).to(tl.float32)
            exponent = (x.to(tl.int32, bitcast=True) >> 23) & 0xFF
            b = tl.minimum(tl.maximum(exponent - LOW, 1), BINS - 1)
            acc += tl.histogram(tl.where(valid, b, 0), BINS)
        tl.store(part_ptr + item * BINS + bins, acc)


def _hist_merge_fn(  # type: ignore[no-untyped-def]
    static_ptr,
    part_ptr,
    out_ptr,
    n_items,
    n_tensors,
    BINS: tl.constexpr,
):
    """Row t of `out` (float64 [T, BINS]): the sum of tensor t's partial histogram rows, in order, bin 0 empty."""
    t = tl.program_id(0)
    first = tl.load(static_ptr + n_tensors + 2 * n_items + t)
    last = tl.load(static_ptr + n_tensors + 2 * n_items + t + 1)
    bins = tl.arange(0, BINS)
    acc = tl.full([BINS], 0, tl.int64)
    for item in range(first, last):
        acc += tl.load(part_ptr + item * BINS + bins).to(tl.int64)
    tl.store(out_ptr + t * BINS + bins, tl.where(bins == 0, 0, acc).to(tl.float64))  # bin 0 held the padding


def _moved_fn(  # type: ignore[no-untyped-def]
    table_ptr,
    static_ptr,
    out_ptr,
    n_rows,
    n_tensors,
    X_DTYPE: tl.constexpr,
    P_DTYPE: tl.constexpr,
    C_DTYPE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """out[row] = the share of the row's elements that differ from prev's (`_MovedLayout.static`: each tensor's
        row length, then its first row [T + 1], then each row's tensor [R]); each program takes rows pid, pid +
        grid, ..., compares in C_DTYPE (float32 where neither dtype is float64: exact, as every float16, bfloat16 and
    float32 value is one; NaN differs from everything) and counts per lane."""
    lanes = tl.arange(0, BLOCK)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        t = tl.load(static_ptr + 2 * n_tensors + 1 + row)
        length = tl.load(static_ptr + t)
        first = (row - tl.load(static_ptr + n_tensors + t)) * length
        x_base = tl.load(table_ptr + t).to(tl.pointer_type(X_DTYPE))
        p_base = tl.load(table_ptr + n_tensors + t).to(tl.pointer_type(P_DTYPE))
        acc = tl.full([BLOCK], 0, tl.int32)
        for off in range(0, length, BLOCK):
            valid = off + lanes < length
            x = tl.load(x_base + first + off + lanes, mask=valid, other=0.0).to(C_DTYPE)
            prev = tl.load(p_base + first + off + lanes, mask=valid, other=0.0).to(C_DTYPE)
            acc += ((x != prev) & valid).to(tl.int32)
        tl.store(out_ptr + row, tl.reduce(acc, 0, _ADD).to(tl.float64) / length.to(tl.float64))


def _sample_diff_fn(  # type: ignore[no-untyped-def]
    table_ptr,
    static_ptr,
    index_ptr,
    weight_ptr,
    prev_ptr,
    first_ptr,
    upd_ptr,
    dist_ptr,
    n_items,
    n_tensors,
    X_DTYPE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """For each sampled element s of tensor t (`_sample_layout`'s `static`: each item's tensor [N], its first
    element in the sample vectors [N], its element count [N], its tensor's element count [N]): v = xs[t].flatten()
    [index[s]] in float32, upd[s] = (v - prev[s]) * weight[s], dist[s] = (v - first[s]) * weight[s], prev[s] = v.
    Each program takes items pid, pid + grid, ... and does BLOCK elements at a time, in float32 as torch's ops
    would (a subtraction, then a product: nothing to contract). An index outside its tensor reads nothing and
    gives NaN (the caller's indices are in range; the kernel never reads memory it was not given). `n_tensors`
    is unused (the launch's arguments keep the other kernels' order)."""
    lanes = tl.arange(0, BLOCK)
    for item in range(tl.program_id(0), n_items, tl.num_programs(0)):
        base = tl.load(table_ptr + tl.load(static_ptr + item)).to(tl.pointer_type(X_DTYPE))
        start = tl.load(static_ptr + n_items + item)
        count = tl.load(static_ptr + 2 * n_items + item)
        numel = tl.load(static_ptr + 3 * n_items + item)
        for off in range(0, count, BLOCK):
            valid = off + lanes < count
            at = start + off + lanes
            where = tl.load(index_ptr + at, mask=valid, other=0)
            inside = valid & (where >= 0) & (where < numel)
            v = tl.load(base + where, mask=inside, other=float("nan")).to(tl.float32)
            w = tl.load(weight_ptr + at, mask=valid, other=0.0)
            tl.store(upd_ptr + at, (v - tl.load(prev_ptr + at, mask=valid, other=0.0)) * w, mask=valid)
            tl.store(dist_ptr + at, (v - tl.load(first_ptr + at, mask=valid, other=0.0)) * w, mask=valid)
            tl.store(prev_ptr + at, v, mask=valid)


# counts vary from group to group: no compiled variant per value (Triton specialises 1 and multiples of 16)
_SIZES = ["n_items", "n_tensors"]
_compiled = (
    JITFunction(_partials_fn, do_not_specialize=_SIZES),
    JITFunction(_merge_fn, do_not_specialize=_SIZES),
)
_interpreted = (InterpretedFunction(_partials_fn), InterpretedFunction(_merge_fn))
_hist_compiled = (
    JITFunction(_hist_partials_fn, do_not_specialize=_SIZES),
    JITFunction(_hist_merge_fn, do_not_specialize=_SIZES),
)
_hist_interpreted = (InterpretedFunction(_hist_partials_fn), InterpretedFunction(_hist_merge_fn))
_moved_compiled = JITFunction(_moved_fn, do_not_specialize=["n_rows", "n_tensors"])
_moved_interpreted = InterpretedFunction(_moved_fn)
_sample_compiled = JITFunction(_sample_diff_fn, do_not_specialize=_SIZES)
_sample_interpreted = InterpretedFunction(_sample_diff_fn)


_DIRECT = True
"""Launch compiled kernels directly (`_launch`); False: through `JITFunction.run` at every launch (the `profile`
check compares the host time of the two)."""

_kernels: dict[tuple[object, ...], CompiledKernel] = {}
"""Compiled kernels by what Triton specialises them on: the function, the current device, the warps, the tensor
arguments' 16-byte alignment and the compile-time constants (the two counts are never specialised)."""


def _launch(
    fn: JITFunction | InterpretedFunction,
    grid: int,
    args: tuple[object, ...],
    num_warps: int,
    max_registers: int | None = None,
    tensors: int = 3,
) -> None:
    """`fn[(grid,)](*args, num_warps=num_warps)` (and `maxnreg`): the first time through `JITFunction.run`, which compiles the
    kernel and returns it; then that compiled kernel launched directly, without `run`'s binding of the
    arguments and cache look-up (tens of microseconds of host time each). `args`: `tensors` tensors (three but
    for `_sample_diff_fn`'s eight), the item and tensor counts (int32 range), then the compile-time constants, in the
    kernel's order. A Triton whose compiled kernels refuse this launch (before launching) turns direct launches
    off for the process. `max_registers` caps the registers per thread (ptxas `.maxnreg`) of the compiled kernel."""
    global _DIRECT
    if not _DIRECT or isinstance(fn, InterpretedFunction):
        fn[(grid,)](*args, **_options(num_warps, max_registers))
        return
    pointers = [a for a in args[:tensors] if isinstance(a, torch.Tensor)]
    assert len(pointers) == tensors
    key = (
        fn,
        torch.cuda.current_device(),
        num_warps,
        max_registers,
        *(a.data_ptr() % 16 == 0 for a in pointers),
        *args[tensors + 2 :],
    )
    kernel = _kernels.get(key)
    if kernel is None:
        kernel = fn[(grid,)](*args, **_options(num_warps, max_registers))
        if kernel is not None:
            _kernels[key] = kernel
        return
    try:
        kernel[(grid, 1, 1)](*args)
    except (TypeError, AttributeError) as err:
        _DIRECT = False
        log.warning(
            "trainguard: launching compiled Triton kernels directly failed (%s); launching through Triton",
            err,
        )
        fn[(grid,)](*args, **_options(num_warps, max_registers))


def _options(num_warps: int, max_registers: int | None) -> dict[str, int]:
    """Triton's launch options (compilation ones included) for a launch through `JITFunction.run`."""
    return (
        {"num_warps": num_warps}
        if max_registers is None
        else {"num_warps": num_warps, "maxnreg": max_registers}
    )


def _to_device(values: list[int], device: torch.device) -> torch.Tensor:
    """int64 `values` on `device`: on CUDA one non-blocking copy from pinned memory, which the caching
    host allocator keeps until the copy has run (so it can never be overwritten while in flight)."""
    host = torch.tensor(values, dtype=torch.int64)
    if device.type == "cuda":
        return host.pin_memory().to(device, non_blocking=True)
    return host.to(device)


_V = TypeVar("_V")


def _cached(cache: OrderedDict[Hashable, _V], key: Hashable, make: Callable[[], _V], limit: int) -> _V:
    """`cache[key]`, made by `make()` on a miss, the least recently used entries dropped past `limit`: the work lists
    and address tables below, each made once and reused at every saved step."""
    got = cache.get(key)
    if got is None:
        got = cache[key] = make()
        while len(cache) > limit:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return got


@dataclass
class _Layout:
    """The work list of one set of tensor sizes on one device and stream, and its address tables.

    `static` is int64 on the device: numels [T], each item's tensor [N], each item's first element
    [N], then each tensor's first item [T + 1] (items of a tensor are consecutive). `partials` is
    float64 [PARTS, N], rewritten by every call.
    """

    static: torch.Tensor
    partials: torch.Tensor
    n_items: int
    tables: OrderedDict[Hashable, torch.Tensor] = field(default_factory=OrderedDict)
    hist_partials: torch.Tensor | None = None
    """int32 [N, bins]: per item exponent-bin counts (`launch_histograms`), made at the first Tier-1 step."""

    @classmethod
    def build(cls, numels: tuple[int, ...], device: torch.device, chunk: int) -> _Layout:
        owners: list[int] = []
        starts: list[int] = []
        firsts = [0]
        for i, n in enumerate(numels):
            count = -(-n // chunk)
            owners += [i] * count
            starts += range(0, count * chunk, chunk)
            firsts.append(firsts[-1] + count)
        static = _to_device(list(numels) + owners + starts + firsts, device)
        partials = torch.empty(PARTS, max(len(owners), 1), dtype=torch.float64, device=device)
        return cls(static=static, partials=partials, n_items=len(owners))

    def table(self, addresses: tuple[int, ...]) -> torch.Tensor:
        """int64 on the device: the addresses given, made once per set (`multi_stats`: xs, prevs, firsts, 0 without
        history; `multi_hist`: xs)."""
        return _cached(
            self.tables, addresses, lambda: _to_device(list(addresses), self.static.device), _MAX_TABLES
        )


_MAX_LAYOUTS = 32
_MAX_TABLES = 64
"""Address sets kept per layout (least recently used first out). Activations of one shape share a
layout, one address set each (a GPT's blocks: one per block), and the caching allocator gives them
the same addresses step after step: with room for all of them a saved step copies no table.
Gradients freed each step (`set_to_none`) mostly come back at the same addresses too; a new set is
one small copy. A table is 24 bytes per tensor on the device."""
_layouts: OrderedDict[Hashable, _Layout] = OrderedDict()


_moved_layouts: OrderedDict[Hashable, tuple[torch.Tensor, int]] = OrderedDict()
"""`multi_moved`'s row tables per (device, shapes): int64 on the device and the number of rows."""


def _moved_layout(xs: list[torch.Tensor]) -> tuple[torch.Tensor, int]:
    """The row table of `xs` (`_moved_fn`'s `static`), made once per set of shapes."""
    device = xs[0].device
    shapes = tuple((x.shape[0] if x.ndim else 1, x.numel()) for x in xs)

    def make() -> tuple[torch.Tensor, int]:
        lengths: list[int] = []
        firsts = [0]
        owners: list[int] = []
        for i, (units, n) in enumerate(shapes):
            lengths.append(n // units)
            firsts.append(firsts[-1] + units)
            owners += [i] * units
        return _to_device(lengths + firsts + owners, device), len(owners)

    return _cached(_moved_layouts, (device, shapes), make, _MAX_LAYOUTS)


def _layout(xs: list[torch.Tensor], chunk: int) -> _Layout:
    device = xs[0].device
    stream = torch.cuda.current_stream(device).stream_id if device.type == "cuda" else 0
    numels = tuple(x.numel() for x in xs)
    return _cached(
        _layouts, (device, stream, chunk, numels), lambda: _Layout.build(numels, device, chunk), _MAX_LAYOUTS
    )


def supports(xs: list[torch.Tensor], prevs: list[torch.Tensor], firsts: list[torch.Tensor]) -> bool:
    """Whether the kernel reads these tensors: a dtype it knows, and one dtype across prevs and across firsts."""
    if xs[0].dtype not in _TL_DTYPES:
        return False
    return all(len({h.dtype for h in hs}) <= 1 for hs in (prevs, firsts))


def _prepare(
    xs: list[torch.Tensor], addresses: tuple[int, ...]
) -> tuple[Config, _Layout, torch.Tensor, bool]:
    """What both ops' launches start from: the device's sizes, the tensors' layout, its address table for
    `addresses` (xs first: the kernels find tensor t's address at entry t) and whether the interpreter runs."""
    device = xs[0].device
    cfg = config(device)
    lay = _layout(xs, cfg.chunk)
    return cfg, lay, lay.table(addresses), _interpreting(device)


def _numpy_quiet(interpreting: bool) -> contextlib.AbstractContextManager[object]:
    """The interpreter runs the kernels in numpy, which warns where NaN and Inf flow as they should."""
    return np.errstate(all="ignore") if interpreting else contextlib.nullcontext()


def launch(
    xs: list[torch.Tensor], prevs: list[torch.Tensor], firsts: list[torch.Tensor], out: torch.Tensor
) -> None:
    """Run the two launches for arguments `_multi._check` accepted and `supports` reads."""
    history = bool(prevs)
    addresses = tuple(x.data_ptr() for x in xs)
    if history:
        addresses += tuple(p.data_ptr() for p in prevs) + tuple(f.data_ptr() for f in firsts)
    else:
        addresses += (0,) * (2 * len(xs))
    cfg, lay, table, interpreting = _prepare(xs, addresses)
    x_dtype = _TL_DTYPES[xs[0].dtype]
    partials_kernel, merge_kernel = _interpreted if interpreting else _compiled
    with _numpy_quiet(interpreting):
        if lay.n_items:
            _launch(
                partials_kernel,
                min(lay.n_items, cfg.programs),
                (
                    table,
                    lay.static,
                    lay.partials,
                    lay.n_items,
                    len(xs),
                    x_dtype,
                    _TL_DTYPES[prevs[0].dtype] if history else x_dtype,
                    _TL_DTYPES[firsts[0].dtype] if history else x_dtype,
                    history,
                    all(address % 16 == 0 for address in addresses),
                    *partials_block(cfg, xs[0].element_size()),
                    cfg.chunk,
                    cfg.stages,
                ),
                cfg.num_warps,
                cfg.max_registers,
            )
        _launch(
            merge_kernel, len(xs), (lay.static, lay.partials, out, lay.n_items, len(xs), cfg.merge_block), 1
        )


def launch_histograms(xs: list[torch.Tensor], out: torch.Tensor, bins: int, low: int) -> None:
    """Run the two histogram launches for arguments `_multi._check_hist` accepted: raw exponent-bin counts."""
    cfg, lay, table, interpreting = _prepare(xs, tuple(x.data_ptr() for x in xs))  # the xs' addresses only
    if lay.hist_partials is None:
        lay.hist_partials = torch.empty(max(lay.n_items, 1), bins, dtype=torch.int32, device=xs[0].device)
    partials_kernel, merge_kernel = _hist_interpreted if interpreting else _hist_compiled
    with _numpy_quiet(interpreting):
        if lay.n_items:
            _launch(
                partials_kernel,
                min(lay.n_items, cfg.programs),
                (
                    table,
                    lay.static,
                    lay.hist_partials,
                    lay.n_items,
                    len(xs),
                    _TL_DTYPES[xs[0].dtype],
                    all(x.data_ptr() % 16 == 0 for x in xs),
                    cfg.hist_block or cfg.block,
                    cfg.chunk,
                    bins,
                    low,
                ),
                cfg.tier1_warps or cfg.num_warps,
            )
        _launch(merge_kernel, len(xs), (lay.static, lay.hist_partials, out, lay.n_items, len(xs), bins), 1)


def launch_moved(xs: list[torch.Tensor], prevs: list[torch.Tensor], out: torch.Tensor) -> None:
    """Run `multi_moved`'s launch for arguments `_multi._check_moved` accepted (one row of `out` per unit)."""
    device = xs[0].device
    cfg = config(device)
    static, n_rows = _moved_layout(xs)
    table = _to_device([x.data_ptr() for x in xs] + [p.data_ptr() for p in prevs], device)
    interpreting = _interpreting(device)
    with _numpy_quiet(interpreting):
        _launch(
            _moved_interpreted if interpreting else _moved_compiled,
            min(n_rows, 16 * cfg.programs),
            (
                table,
                static,
                out,
                n_rows,
                len(xs),
                _TL_DTYPES[xs[0].dtype],
                _TL_DTYPES[prevs[0].dtype],
                tl.float64 if torch.float64 in (xs[0].dtype, prevs[0].dtype) else tl.float32,
                cfg.block,
            ),
            cfg.tier1_warps or cfg.num_warps,
        )


SAMPLE_ITEM_BLOCKS = 4
"""`_sample_diff_fn`'s work items: at most this many blocks of `Config.block` sampled elements each (small items:
the gathers wait on memory, and more programs hide more of it)."""

_sample_layouts: OrderedDict[Hashable, tuple[torch.Tensor, int]] = OrderedDict()
"""`multi_sample_diff`'s item tables per (device, item size, sample sizes, tensor sizes): int64 on the device and
the number of items."""
_sample_tables: OrderedDict[Hashable, torch.Tensor] = OrderedDict()
"""`multi_sample_diff`'s address tables per (device, the tensors' addresses): parameters keep theirs from step to
step, so a saved step copies no table."""


def _sample_layout(
    sizes: tuple[int, ...], numels: tuple[int, ...], device: torch.device, item: int
) -> tuple[torch.Tensor, int]:
    """The item table of samples of `sizes` from tensors of `numels` elements (`_sample_diff_fn`'s `static`), made
    once per set of sizes."""

    def make() -> tuple[torch.Tensor, int]:
        owners: list[int] = []
        starts: list[int] = []
        counts: list[int] = []
        first = 0
        for t, n in enumerate(sizes):
            for off in range(0, n, item):
                owners.append(t)
                starts.append(first + off)
                counts.append(min(item, n - off))
            first += n
        within = [numels[t] for t in owners]
        return _to_device(owners + starts + counts + within, device), len(owners)

    return _cached(_sample_layouts, (device, item, sizes, numels), make, _MAX_LAYOUTS)


def launch_sample_diff(xs: list[torch.Tensor], sizes: tuple[int, ...], samples: _multi.Samples) -> None:
    """Run `multi_sample_diff`'s launch for arguments `_multi._check_sample_diff` accepted."""
    device = xs[0].device
    cfg = config(device)
    static, n_items = _sample_layout(
        sizes, tuple(x.numel() for x in xs), device, SAMPLE_ITEM_BLOCKS * cfg.block
    )
    if not n_items:
        return
    addresses = tuple(x.data_ptr() for x in xs)
    table = _cached(
        _sample_tables, (device, addresses), lambda: _to_device(list(addresses), device), _MAX_TABLES
    )
    interpreting = _interpreting(device)
    index, weight, prev, first, diff = samples
    with _numpy_quiet(interpreting):
        _launch(
            _sample_interpreted if interpreting else _sample_compiled,
            min(n_items, cfg.programs),
            (
                table,
                static,
                index,
                weight,
                prev,
                first,
                diff[0],
                diff[1],
                n_items,
                len(xs),
                _TL_DTYPES[xs[0].dtype],
                cfg.block,
            ),
            cfg.tier1_warps or cfg.num_warps,
            tensors=8,
        )
