"""One reduction per group: the raw moments of many tensors of one device and dtype in one op call.

`multi_stats` is the custom op `trainguard::multi_stats`; `multi_hist` (`trainguard::multi_hist`)
is its Tier-1 companion, the log2-magnitude histograms of the same tensors in one launch and one merge,
and `multi_moved` (`trainguard::multi_moved`) the other, each parameter unit's share of elements
changed since the previous saved copy, in one launch. For T tensors `multi_stats` writes the float64 rows
[T, len(device_stats.RAW_COLUMNS)] that `device_stats.reduce_large` would give one by one (NaN, Inf
and zero counts, min, max, sum, |x| sum, x^2 sum, squared deviations around the mean, and with a
history the squared distances to the previous and first copies, refreshing the previous copy), with
one Triton kernel launch over all of them and one cleanup launch (`_multi_kernel`). It is a
`torch.library` op with a fake implementation, so it is a single node under FakeTensorMode,
`torch.compile` and the CPU proxies of the hook's cost. `multi_sample_diff` (`trainguard::multi_sample_diff`), the same
kind of op, gathers a fixed sample of each tensor's elements and writes their weighted differences from the
previous and first saved samples in one launch (sampled update/distance, `_sampled`).

Where the fast kernel runs (`available`): CUDA with Triton importable, and CPU under Triton's
interpreter (TRITON_INTERPRET=1, for tests). Elsewhere the op still gives the right rows, tensor
by tensor with torch ops (`_reference`), and the hook keeps its other paths. Triton is imported
only when the kernel first runs, never with this module.
"""

from __future__ import annotations

import functools
import os
from types import ModuleType
from typing import NamedTuple

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from trainguard.capture.torch import device_stats
from trainguard.store import run_format

WIDTH = len(device_stats.RAW_COLUMNS)
"""Columns of a row of `out`."""


def available(device: torch.device) -> bool:
    """Whether `multi_stats` runs its Triton kernel on `device`: CUDA with Triton installed, or CPU
    under Triton's interpreter (TRITON_INTERPRET=1), for float32, bfloat16, float16 and float64
    tensors. Elsewhere, and for other dtypes, it reduces tensor by tensor with torch ops."""
    if device.type == "cuda":
        return torch.cuda.is_available() and _triton_installed()
    if device.type == "cpu":
        return _interpreting() and _triton_installed()
    return False


@functools.cache
def _triton_installed() -> bool:
    """Whether Triton imports (tried once, on first need: never with this module)."""
    try:
        import triton.language  # noqa: F401
    except (ImportError, OSError, RuntimeError):  # absent, or a build that cannot load here
        return False
    return True


@functools.cache
def _kernels() -> ModuleType:
    """`_multi_kernel`, imported on the first launch (it imports Triton), then at the cost of a cached call: an
    import statement in a function runs the import system's Python each time, at every op of a saved step."""
    from trainguard.capture.torch import _multi_kernel

    return _multi_kernel


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


@torch.library.custom_op("trainguard::multi_stats", mutates_args=("prevs", "out"))
def multi_stats(
    xs: list[torch.Tensor], prevs: list[torch.Tensor], firsts: list[torch.Tensor], out: torch.Tensor
) -> None:
    """Write into row i of `out` (float64 [T, WIDTH]) the raw moments of `xs[i]`, as `reduce_large` does.

    `xs`: T >= 1 contiguous tensors of one floating dtype on one device. `prevs`, `firsts`: both
    empty (no history: update and distance are 0), or T tensors with the sizes of `xs` (in their
    dtype or float32), the previous and first saved copies; then `prevs[i]` becomes a copy of `xs[i]`. An
    empty tensor gives counts 0 and NaN moments. Devices without the kernel (`available`) get here.
    """
    _check(xs, prevs, firsts, out)
    _reference(xs, prevs, firsts, out)


@multi_stats.register_fake
def _(
    xs: list[torch.Tensor], prevs: list[torch.Tensor], firsts: list[torch.Tensor], out: torch.Tensor
) -> None:
    """Mutation only: `out` and `prevs` are written in place; nothing is allocated or read back."""
    _check(xs, prevs, firsts, out)


@multi_stats.register_kernel("cpu")
def _(
    xs: list[torch.Tensor], prevs: list[torch.Tensor], firsts: list[torch.Tensor], out: torch.Tensor
) -> None:
    """The Triton kernel under the interpreter (TRITON_INTERPRET=1), else torch ops."""
    _run(xs, prevs, firsts, out, kernel=_kernel_for(out.device))


@multi_stats.register_kernel("cuda")
def _(
    xs: list[torch.Tensor], prevs: list[torch.Tensor], firsts: list[torch.Tensor], out: torch.Tensor
) -> None:
    """The Triton kernel where Triton is installed, else torch ops."""
    _run(xs, prevs, firsts, out, kernel=_kernel_for(out.device))


def reduce_group(
    xs: list[torch.Tensor],
    prevs: list[torch.Tensor],
    firsts: list[torch.Tensor],
    out: torch.Tensor,
    *,
    checked: bool = False,
    plain: bool = False,
) -> None:
    """`multi_stats`, called straight where nothing watches the dispatcher, else through it.

    A torch op call costs tens of microseconds of host time before the kernel is reached; the hook
    makes a dozen or more per saved step, on a host that often paces the GPU. Real tensors with no
    dispatch mode active (no FakeTensorMode, no tracing, no recording mode) go to the implementation
    directly; anything else gets the registered op, a single node as before. `checked`: the caller
    made the group so that every tensor has xs[0]'s dtype and device, is contiguous, and each prev
    and first is a contiguous copy of its tensor, in its dtype (`_multi_path`: one group per layout, whose copies
    are remade when a parameter's size, dtype or device changes), so the direct call skips the per-tensor
    checks (a loop over every tensor, prev and first at each saved step); the op itself always checks. `plain`: the caller
    knows every x is a plain `torch.Tensor` or `nn.Parameter` (`PLAIN`: a parameter group's own objects, whose
    type cannot change), so `_unwatched` need not look at each.
    """
    if _unwatched(xs, out, plain=plain):
        _run(xs, prevs, firsts, out, kernel=_kernel_for(out.device), per_tensor=not checked)
    else:
        torch.ops.trainguard.multi_stats(xs, prevs, firsts, out)


def hist_group(
    xs: list[torch.Tensor], out: torch.Tensor, *, checked: bool = False, plain: bool = False
) -> None:
    """`multi_hist`, called as `reduce_group` calls `multi_stats` (`checked` and `plain` as there)."""
    if _unwatched(xs, out, plain=plain):
        _run_hist(xs, out, kernel=_kernel_for(out.device), per_tensor=not checked)
    else:
        torch.ops.trainguard.multi_hist(xs, out)


def _unwatched(xs: list[torch.Tensor], out: torch.Tensor, *, plain: bool = False) -> bool:
    """Plain tensors (no subclass: not fake, not functional; `plain`: known to be) and no dispatch mode on the
    stack."""
    if _get_current_dispatch_mode() is not None or torch.compiler.is_compiling():
        return False
    return type(out) is torch.Tensor and (plain or all(map(PLAIN.__contains__, map(type, xs))))


PLAIN = (torch.Tensor, torch.nn.Parameter)
"""The tensor types the op's direct call takes (`_unwatched`): anything else goes through the dispatcher."""


def _kernel_for(device: torch.device) -> bool:
    """What the op's backend implementation for `device` would choose: the Triton kernel or torch ops."""
    if device.type == "cuda":
        return _triton_installed()
    return device.type == "cpu" and _interpreting() and _triton_installed()


def _run(
    xs: list[torch.Tensor],
    prevs: list[torch.Tensor],
    firsts: list[torch.Tensor],
    out: torch.Tensor,
    *,
    kernel: bool,
    per_tensor: bool = True,
) -> None:
    _check(xs, prevs, firsts, out, per_tensor=per_tensor)
    if kernel:
        kernels = _kernels()  # Triton is imported here, on first use
        # checked: each copy has its tensor's dtype, so one dtype across prevs and across firsts
        if kernels.supports(xs, prevs if per_tensor else [], firsts if per_tensor else []):
            kernels.launch(xs, prevs, firsts, out)
            return
    _reference(xs, prevs, firsts, out)


@torch.library.custom_op("trainguard::multi_hist", mutates_args=("out",))
def multi_hist(xs: list[torch.Tensor], out: torch.Tensor) -> None:
    """Write into row i of `out` (float64 [T, HIST_BINS]) the raw exponent-bin counts of `xs[i]`.

    The counts `device_stats.bin_counts(device_stats._exponent_bins(x))` gives, before
    `device_stats.fix_bins` (zeros and denormals in bin 1, NaN and Inf in the last bin, bin 0 empty).
    `xs` as for `multi_stats`. Devices without the kernel (`available`) get here.
    """
    _check_hist(xs, out)
    _hist_reference(xs, out)


@multi_hist.register_fake
def _(xs: list[torch.Tensor], out: torch.Tensor) -> None:
    """Mutation only: `out` is written in place."""
    _check_hist(xs, out)


@multi_hist.register_kernel("cpu")
def _(xs: list[torch.Tensor], out: torch.Tensor) -> None:
    """The Triton kernel under the interpreter (TRITON_INTERPRET=1), else torch ops."""
    _run_hist(xs, out, kernel=_kernel_for(out.device))


@multi_hist.register_kernel("cuda")
def _(xs: list[torch.Tensor], out: torch.Tensor) -> None:
    """The Triton kernel where Triton is installed, else torch ops."""
    _run_hist(xs, out, kernel=_kernel_for(out.device))


def _run_hist(xs: list[torch.Tensor], out: torch.Tensor, *, kernel: bool, per_tensor: bool = True) -> None:
    _check_hist(xs, out, per_tensor=per_tensor)
    if kernel:
        kernels = _kernels()  # Triton is imported here, on first use
        if kernels.supports(xs, [], []):
            kernels.launch_histograms(xs, out, run_format.HIST_BINS, 127 + run_format.HIST_MIN_EXPONENT - 1)
            return
    _hist_reference(xs, out)


@torch.library.custom_op("trainguard::multi_moved", mutates_args=("out",))
def multi_moved(xs: list[torch.Tensor], prevs: list[torch.Tensor], out: torch.Tensor) -> None:
    """Write into `out` (float64 [sum of the xs' dim-0 sizes]) each unit's "moved" share, tensor after tensor:
    for each row of dim 0 of `xs[i]`, the share of its elements that differ from `prevs[i]`'s (NaN differs
    from everything), as `device_stats.moved_large` gives one tensor at a time (Tier-1 steps).

    `xs`: T >= 1 contiguous non-empty tensors of one floating dtype on one device; `prevs`: their previous saved
    copies, contiguous, with the same sizes, in their dtype or float32. Devices without the kernel get here.
    """
    _check_moved(xs, prevs, out)
    _moved_reference(xs, prevs, out)


@multi_moved.register_fake
def _(xs: list[torch.Tensor], prevs: list[torch.Tensor], out: torch.Tensor) -> None:
    """Mutation only: `out` is written in place."""
    _check_moved(xs, prevs, out)


@multi_moved.register_kernel("cpu")
def _(xs: list[torch.Tensor], prevs: list[torch.Tensor], out: torch.Tensor) -> None:
    """The Triton kernel under the interpreter (TRITON_INTERPRET=1), else torch ops."""
    _run_moved(xs, prevs, out, kernel=_kernel_for(out.device))


@multi_moved.register_kernel("cuda")
def _(xs: list[torch.Tensor], prevs: list[torch.Tensor], out: torch.Tensor) -> None:
    """The Triton kernel where Triton is installed, else torch ops."""
    _run_moved(xs, prevs, out, kernel=_kernel_for(out.device))


def moved_group(
    xs: list[torch.Tensor], prevs: list[torch.Tensor], out: torch.Tensor, *, checked: bool = False
) -> None:
    """`multi_moved`, called as `reduce_group` calls `multi_stats` (`checked` as there)."""
    if _unwatched(xs, out) and all(type(p) in PLAIN for p in prevs):
        _run_moved(xs, prevs, out, kernel=_kernel_for(out.device), per_tensor=not checked)
    else:
        torch.ops.trainguard.multi_moved(xs, prevs, out)


def _run_moved(
    xs: list[torch.Tensor],
    prevs: list[torch.Tensor],
    out: torch.Tensor,
    *,
    kernel: bool,
    per_tensor: bool = True,
) -> None:
    _check_moved(xs, prevs, out, per_tensor=per_tensor)
    if kernel:
        kernels = _kernels()  # Triton is imported here, on first use
        if kernels.supports(xs, prevs if per_tensor else [], []):  # checked: one dtype across prevs
            kernels.launch_moved(xs, prevs, out)
            return
    _moved_reference(xs, prevs, out)


class Samples(NamedTuple):
    """`multi_sample_diff`'s vectors, a slot per sampled element, tensor after tensor (S slots, all contiguous on the
    tensors' device)."""

    indices: torch.Tensor
    """int64: each sampled element's flat index in its tensor."""
    weight: torch.Tensor
    """float32: the factor each difference is scaled by."""
    prev: torch.Tensor
    """float32: the previous saved sample, refreshed by the op."""
    first: torch.Tensor
    """float32: the first saved sample."""
    diff: torch.Tensor
    """float32 [2, S]: the weighted differences from `prev` and from `first`, written by the op."""


@torch.library.custom_op("trainguard::multi_sample_diff", mutates_args=("prev", "diff"))
def multi_sample_diff(
    xs: list[torch.Tensor],
    sizes: list[int],
    index: torch.Tensor,
    weight: torch.Tensor,
    prev: torch.Tensor,
    first: torch.Tensor,
    diff: torch.Tensor,
) -> None:
    """A fixed sample of each tensor's elements against its previous and first saved samples, in one launch.

    Tensor after tensor, the next `sizes[t]` positions s of the sample vectors (`Samples`) hold `xs[t]`'s elements
    at flat `index[s]`: with v those elements in float32, `diff[0, s] = (v - prev[s]) * weight[s]`, `diff[1, s] =
    (v - first[s]) * weight[s]`, and `prev[s]` becomes v (`_sampled.SampledHistory`). `xs`: T >= 1 floating tensors
    of one dtype on one device. Devices without the kernel get here, and so do groups with a tensor that is not
    contiguous (`torch.take` tensor by tensor, which reads any layout in its logical order).
    """
    _run_sample_diff(xs, sizes, Samples(index, weight, prev, first, diff), kernel=False)


@multi_sample_diff.register_fake
def _(
    xs: list[torch.Tensor],
    sizes: list[int],
    index: torch.Tensor,
    weight: torch.Tensor,
    prev: torch.Tensor,
    first: torch.Tensor,
    diff: torch.Tensor,
) -> None:
    """Mutation only: `prev` and `diff` are written in place."""
    _check_sample_diff(xs, sizes, Samples(index, weight, prev, first, diff))


@multi_sample_diff.register_kernel(("cpu", "cuda"))
def _(
    xs: list[torch.Tensor],
    sizes: list[int],
    index: torch.Tensor,
    weight: torch.Tensor,
    prev: torch.Tensor,
    first: torch.Tensor,
    diff: torch.Tensor,
) -> None:
    """The Triton kernel where Triton runs (CUDA; the CPU under the interpreter, TRITON_INTERPRET=1), else torch
    ops."""
    _run_sample_diff(xs, sizes, Samples(index, weight, prev, first, diff), kernel=_kernel_for(diff.device))


def sample_diff_group(
    xs: list[torch.Tensor], sizes: list[int], samples: Samples, *, checked: bool = False
) -> None:
    """`multi_sample_diff`, called as `reduce_group` calls `multi_stats`: straight to the implementation where
    nothing watches the dispatcher, else through the registered op (parameters as they are: the op only reads
    them, as `multi_stats` does, and its torch ops detach them). `checked`: the caller made the group of one dtype and device
    (`_sampled.SampledHistory`, one per (device, dtype) group of the plan), so the direct call skips the loop
    over every tensor; the op itself always checks."""
    if _unwatched(xs, samples.diff):
        _run_sample_diff(xs, sizes, samples, kernel=_kernel_for(samples.diff.device), per_tensor=not checked)
    else:
        torch.ops.trainguard.multi_sample_diff(xs, sizes, *samples)


def _run_sample_diff(
    xs: list[torch.Tensor], sizes: list[int], samples: Samples, *, kernel: bool, per_tensor: bool = True
) -> None:
    _check_sample_diff(xs, sizes, samples, per_tensor=per_tensor)
    if kernel and all(x.is_contiguous() for x in xs):
        kernels = _kernels()  # Triton is imported here, on first use
        if kernels.supports(xs, [], []):
            kernels.launch_sample_diff(xs, tuple(sizes), samples)
            return
    _sample_diff_reference(xs, sizes, samples)


def _check_sample_diff(
    xs: list[torch.Tensor], sizes: list[int], samples: Samples, *, per_tensor: bool = True
) -> None:
    """As `_check` for `multi_sample_diff`: T floating tensors of one dtype and device (any layout), a size per
    tensor, and contiguous sample vectors of the sizes' sum on that device (no host reads: the indices' values
    are the caller's, `_sampled.sample_index`'s; `per_tensor` False: xs[0] for the tensors)."""
    device = samples.diff.device
    if not xs or not xs[0].dtype.is_floating_point:
        raise ValueError("multi_sample_diff gathers from at least one floating tensor")
    for i, x in enumerate(xs if per_tensor else xs[:1]):
        if x.dtype != xs[0].dtype or x.device != device:
            raise ValueError(
                f"multi_sample_diff takes tensors of one dtype and device ({xs[0].dtype} on {device}); "
                f"xs[{i}] is {x.dtype} on {x.device}: sample it apart"
            )
    if len(sizes) != len(xs) or min(sizes) < 0:
        raise ValueError(
            f"multi_sample_diff takes one sample size >= 0 per tensor; got {len(xs)} tensors, sizes {sizes}"
        )
    total = sum(sizes)
    for name, t in samples._asdict().items():
        dtype = torch.int64 if name == "indices" else torch.float32
        shape = (2, total) if name == "diff" else (total,)
        if t.dtype != dtype or tuple(t.shape) != shape or not t.is_contiguous() or t.device != device:
            raise ValueError(
                f"multi_sample_diff: {name} must be a contiguous {dtype} {list(shape)} tensor (S, the sizes' sum, "
                f"is {total}) on {device}; got {t.dtype} {list(t.shape)} on {t.device}"
            )


def _sample_diff_reference(xs: list[torch.Tensor], sizes: list[int], samples: Samples) -> None:
    """`multi_sample_diff` in plain torch ops (a `torch.take` per tensor): the definition the kernel is tested
    against."""
    index, weight, prev, first, diff = samples
    v = torch.empty(prev.shape, dtype=xs[0].dtype, device=prev.device)
    start = 0
    for x, n in zip(xs, sizes):
        torch.take(x.detach(), index[start : start + n], out=v[start : start + n])
        start += n
    v32 = v.to(torch.float32)
    torch.sub(v32, prev, out=diff[0])
    torch.sub(v32, first, out=diff[1])
    diff.mul_(weight)
    prev.copy_(v32)


def _check_moved(
    xs: list[torch.Tensor], prevs: list[torch.Tensor], out: torch.Tensor, *, per_tensor: bool = True
) -> None:
    """As `_check` for `multi_moved`: T non-empty tensors with a prev each, a float64 out with a slot per unit
    (`per_tensor` False: `out` and the counts only, xs[0] for the inputs)."""
    _check_inputs(xs if per_tensor else xs[:1], out.device, "multi_moved")
    units = sum([x.shape[0] if x.ndim else 1 for x in xs])
    if out.dtype != torch.float64 or tuple(out.shape) != (units,) or not out.is_contiguous():
        raise ValueError(
            f"multi_moved writes into a contiguous float64 [{units}] tensor (the xs' dim-0 sizes, summed); "
            f"got {out.dtype} {list(out.shape)}"
        )
    if len(prevs) != len(xs):
        raise ValueError(f"multi_moved takes one prev per tensor; got {len(xs)} tensors, {len(prevs)} prevs")
    if not per_tensor:
        return
    kinds = (xs[0].dtype, torch.float32)
    for i, (x, p) in enumerate(zip(xs, prevs)):
        if not x.numel() or p.numel() != x.numel() or p.dtype not in kinds or p.device != x.device:
            raise ValueError(
                f"multi_moved: xs[{i}] must have elements, and prevs[{i}] as many ({x.numel()}), {kinds[0]} or "
                f"float32, on {x.device}; got {p.dtype} {list(p.shape)} on {p.device}"
            )
        if not p.is_contiguous():
            raise ValueError(f"multi_moved: prevs[{i}] must be contiguous")


def _moved_reference(xs: list[torch.Tensor], prevs: list[torch.Tensor], out: torch.Tensor) -> None:
    """`multi_moved` in plain torch ops, tensor by tensor: the definition the kernel is tested against."""
    start = 0
    for x, p in zip(xs, prevs):
        units = x.shape[0] if x.ndim else 1
        changed = torch.ne(x.reshape(units, -1), p.reshape(units, -1))
        out[start : start + units].copy_(changed.sum(1, dtype=torch.float64) / (x.numel() // units))
        start += units


def _check_hist(xs: list[torch.Tensor], out: torch.Tensor, *, per_tensor: bool = True) -> None:
    """As `_check` for `multi_hist`: T contiguous floating tensors of one dtype and device, a float64 out
    (`per_tensor` False: xs[0] and `out` only)."""
    if (
        out.dtype != torch.float64
        or tuple(out.shape) != (len(xs), run_format.HIST_BINS)
        or not out.is_contiguous()
    ):
        raise ValueError(
            f"multi_hist writes into a contiguous float64 [{len(xs)}, {run_format.HIST_BINS}] tensor; "
            f"got {out.dtype} {list(out.shape)}"
        )
    _check_inputs(xs if per_tensor else xs[:1], out.device, "multi_hist")


def _hist_reference(xs: list[torch.Tensor], out: torch.Tensor) -> None:
    """`multi_hist` in plain torch ops, tensor by tensor: the definition the kernel is tested against."""
    host = out.device.type == "cpu"
    for i, x in enumerate(xs):
        codes = device_stats._exponent_bins(device_stats.as_float32(x))
        out[i].copy_(device_stats.bin_counts(codes, run_format.HIST_BINS, host=host))


def _check(
    xs: list[torch.Tensor],
    prevs: list[torch.Tensor],
    firsts: list[torch.Tensor],
    out: torch.Tensor,
    *,
    per_tensor: bool = True,
) -> None:
    """Refuse arguments the op does not define, saying what the caller must send instead (no host reads);
    `per_tensor` False: xs[0] and `out` only (`reduce_group`'s `checked`)."""
    if not xs:
        raise ValueError("multi_stats needs at least one tensor in xs")
    if len(prevs) != len(firsts) or (prevs and len(prevs) != len(xs)):
        raise ValueError(
            f"multi_stats takes no history (prevs and firsts empty) or one prev and first per tensor; "
            f"got {len(xs)} tensors, {len(prevs)} prevs, {len(firsts)} firsts"
        )
    dtype, device = xs[0].dtype, xs[0].device
    if out.dtype != torch.float64 or tuple(out.shape) != (len(xs), WIDTH) or out.device != device:
        raise ValueError(
            f"multi_stats writes into a float64 [{len(xs)}, {WIDTH}] tensor on {device}; "
            f"got {out.dtype} {list(out.shape)} on {out.device}"
        )
    if not out.is_contiguous():
        raise ValueError("multi_stats writes into a contiguous out (a row slice of a contiguous buffer)")
    _check_inputs(xs if per_tensor else xs[:1], device, "multi_stats")
    # the kernel writes prev and reads first in place: their sizes are checked, element for element
    if prevs and per_tensor:
        kinds = (dtype, torch.float32)
        for i, (x, p, f) in enumerate(zip(xs, prevs, firsts)):
            n = x.numel()
            for name, h in (("prevs", p), ("firsts", f)):
                if h.numel() != n or h.dtype not in kinds or h.device != device or not h.is_contiguous():
                    raise ValueError(
                        f"multi_stats: {name}[{i}] must be contiguous, with the {n} elements of xs[{i}], "
                        f"{dtype} or float32, on {device}; got {h.dtype} {list(h.shape)} on {h.device}"
                    )


def _check_inputs(xs: list[torch.Tensor], device: torch.device, op: str) -> None:
    """T >= 1 contiguous floating tensors of one dtype on `device` (the op's out's); `op` names it in errors."""
    if not xs:
        raise ValueError(f"{op} needs at least one tensor in xs")
    dtype = xs[0].dtype
    if not dtype.is_floating_point:
        raise ValueError(f"{op} reduces floating tensors, not {dtype}")
    for i, x in enumerate(xs):
        if x.dtype != dtype or x.device != device or not x.is_contiguous():
            raise ValueError(
                f"{op} takes contiguous tensors of one dtype and device ({dtype} on {device}); "
                f"xs[{i}] is {x.dtype} on {x.device}, contiguous={x.is_contiguous()}: reduce it apart"
            )


def _reference(
    xs: list[torch.Tensor], prevs: list[torch.Tensor], firsts: list[torch.Tensor], out: torch.Tensor
) -> None:
    """The op in plain torch ops, tensor by tensor through `reduce_large` (float64 accumulation).

    The definition the kernel is tested against, and the op where the kernel cannot run.
    """
    rows = []
    for i, x in enumerate(xs):
        if prevs:
            history = device_stats._History(prev=prevs[i], first=firsts[i], fresh=False)
            rows.append(device_stats.reduce_large(x, history))
        else:
            row = device_stats.reduce_large(x)
            if x.numel():  # no history: update and distance are 0, not NaN (the caller marks them)
                row[device_stats.UPD :] = 0.0
            rows.append(row)
    out.copy_(torch.stack(rows))
