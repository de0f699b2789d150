"""Two checks of the PyTorch hook on a GPU that a timing table does not show: syncs and kernel launches.

    python -m benchmarks.hook_gpu_checks sync [--steps 20]      # no host sync in steady state
    python -m benchmarks.hook_gpu_checks kernels [--steps 10]   # kernels the hook adds per saved step
    python -m benchmarks.hook_gpu_checks profile [--steps 10]   # where a saved step's time goes
    python -m benchmarks.hook_gpu_checks profile-large          # the same for the 0.94B GPT, kernels only
    python -m benchmarks.hook_gpu_checks profile-large --sampled   # ... with update/distance from the fixed sample

Both train the GPU benchmark's 110M-parameter GPT (`hook_overhead_gpu.gpt`: AdamW, bf16 autocast)
with the hook at save_interval 1, the loss recorded every step. `sync` first runs `--steps` steps
without the hook under `torch.cuda.set_sync_debug_mode("error")` (the loop alone must not
synchronise), then warms the hook up (its first saved steps allocate its buffers and saved copies)
and runs `--steps` steady-state steps with it under the same mode: a synchronising call inside the
hook raises there and the hook, failing open, reports it in `hook.errors`. The mode does not see
non-blocking copies (they do not synchronise) and has gaps of its own; the timing table is the
final word. `kernels` counts the CUDA kernels `torch.profiler` records over `--steps` steps with
the hook and without it, one step at a time, and prints the difference per saved step, Tier-0
steps (bounded) apart from Tier-1 ones (every `tier1_interval`-th saved step: histograms and
per-unit vectors), with the kernels the hook adds most (the CPU proxies bound the
ops the hook dispatches: tests/capture/test_torch_hook_gpu_proxies.py). `profile` times single
steps from a device synchronisation to the next, plain and hooked, Tier-0 steps, Tier-1 steps and
the steps right after a Tier-1 one (which deliver its results) apart, each with its host time (until
the step's Python returns) beside its wall time and with the device memory segments the caching
allocator added, over four Tier-1 cycles at least, and
prints where the hooked steps' host time goes (cProfile, the hook's own functions) and the kernels
by device time (torch.profiler); it starts by timing `multi_stats` on the same tensors under each of
`SIZES` (elements per register block and per work item, programs, warps: the shipped ones first),
so that one run says which sizes fit the card, and the host time of one call with compiled kernels
launched directly and through `JITFunction.run`. `profile-large` times and profiles the 0.94B GPT's
steps (`hook_overhead_gpu.GPT1B`), which the device paces, a plain step's kernels beside the saved steps';
with `--sampled` (either profile) the hook keeps a fixed sample for update/distance instead of full copies
(`history_max_fraction` 0, what it chooses by itself for parameters above its memory bound).
`sync` and `kernels` exit non-zero on failure, `profile` when a size's rows disagree with the shipped sizes'.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter

import torch

import trainguard.torch as tg
from benchmarks.hook_overhead_gpu import GPT1B, gpt

KERNELS_PER_SAVED_STEP_MAX = 40
"""The bound of the design note: ~4 multi-tensor launches and their cleanups, one per activation, a few more (the
activations are now one op per group: 9 kernels on the 110M GPT, docs/benchmarks.md)."""


def _model(
    device: torch.device, hooked: bool, large: bool = False, sampled: bool = False
) -> tuple[tg.Hook | None, object]:
    """The 110M GPT (`large`: the 0.94B one) with its training step, hooked at save_interval 1 or not (`sampled`:
    update/distance from the fixed sample, `history_max_fraction` 0)."""
    module, opt, step = gpt(device, **(GPT1B if large else {}))
    hook = None
    if hooked:
        hook = tg.Hook(
            f"file://{tempfile.mkdtemp(prefix='tg-gpu-check-')}/run",
            save_interval=1,
            **({"history_max_fraction": 0.0} if sampled else {}),
        )
        hook.register_module(module)
        hook.register_optimizer(opt)
    return hook, step


def _run(hook: tg.Hook | None, step: object, steps: int) -> None:
    for _ in range(steps):
        loss = step()  # type: ignore[operator]
        if hook is not None:
            hook.record_scalar("loss", loss)


def check_sync(device: torch.device, steps: int) -> int:
    _, plain = _model(device, hooked=False)
    _run(None, plain, 3)
    torch.cuda.synchronize(device)
    torch.cuda.set_sync_debug_mode("error")
    try:
        _run(None, plain, steps)
    except RuntimeError as err:
        torch.cuda.set_sync_debug_mode("default")
        print(f"the training loop alone synchronises, so the hook cannot be judged this way: {err}")
        return 2
    finally:
        torch.cuda.set_sync_debug_mode("default")
    del plain
    hook, hooked = _model(device, hooked=True)
    assert hook is not None
    _run(hook, hooked, 5)  # the first saved steps allocate the hook's buffers and saved copies
    torch.cuda.synchronize(device)
    torch.cuda.set_sync_debug_mode("error")
    try:
        _run(hook, hooked, steps)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    errors = list(hook.errors)
    hook.close()
    print(
        f"{steps} steady-state steps at save_interval 1 under set_sync_debug_mode('error'): "
        f"{'no synchronisation' if not errors else 'FAILED: ' + '; '.join(errors)}; "
        f"skipped saved steps {hook.skipped_steps}"
    )
    return 1 if errors else 0


def _step_kernels(hook: tg.Hook | None, step: object) -> Counter[str]:
    """The CUDA kernels (by name, copies left out) of one training step."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        _run(hook, step, 1)
        torch.cuda.synchronize()
    return Counter(
        e.name
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA and "Memcpy" not in e.name
    )


def _tier1(hook: tg.Hook) -> bool:
    """Whether the hook's next step is a Tier-1 one (at save_interval 1 every step is saved)."""
    return hook._plan.tier1(hook.step)


def check_kernels(device: torch.device, steps: int) -> int:
    _, plain_step = _model(device, hooked=False)
    _run(None, plain_step, 5)
    plain = statistics.median(sum(_step_kernels(None, plain_step).values()) for _ in range(3))
    del plain_step
    hook, hooked = _model(device, hooked=True)
    assert hook is not None
    _run(hook, hooked, 5)
    by_tier: dict[bool, list[Counter[str]]] = {False: [], True: []}
    for _ in range(max(steps, hook._plan.config.tier1_interval + 1)):
        tier1 = _tier1(hook)
        by_tier[tier1].append(_step_kernels(hook, hooked))
    errors = list(hook.errors)
    hook.close()
    added = {t: [sum(c.values()) - plain for c in cs] for t, cs in by_tier.items()}
    tier0 = statistics.median(added[False])
    ok = tier0 <= KERNELS_PER_SAVED_STEP_MAX and not errors
    for t, cs in by_tier.items():
        if cs:
            top = sum(cs, Counter()).most_common(12)
            print(
                f"Tier-{int(t)} steps, most frequent kernels (over {len(cs)} steps, the plain step's included):"
            )
            for name, n in top:
                print(f"  {n / len(cs):8.1f}  {name[:110]}")
    print(
        f"CUDA kernels per step at save_interval 1: {plain:.0f} without the hook; added per Tier-0 saved step "
        f"{tier0:.0f} (bound {KERNELS_PER_SAVED_STEP_MAX}), per Tier-1 saved step "
        f"{statistics.median(added[True]) if added[True] else float('nan'):.0f}{'' if ok else ' FAILED'}"
        + (f"; hook errors: {errors}" if errors else "")
    )
    return 0 if ok else 1


def _timed_step(hook: tg.Hook | None, step: object) -> tuple[float, float]:
    """(host ms, wall ms) of one step from a device synchronisation: host until the step's Python returns (its
    kernels enqueued), wall until the device has run them too."""
    torch.cuda.synchronize()
    started = time.perf_counter()
    _run(hook, step, 1)
    host = time.perf_counter()
    torch.cuda.synchronize()
    return 1000 * (host - started), 1000 * (time.perf_counter() - started)


def _step_kind(hook: tg.Hook, after_tier1: bool) -> str:
    """How a hooked step at save_interval 1 is classed: the step after a Tier-1 one delivers that step's larger
    results (its copy is polled then), so it is timed apart."""
    return "Tier-1" if _tier1(hook) else "after Tier-1" if after_tier1 else "Tier-0"


def _median_ms(samples: list[tuple[float, float]]) -> str:
    return (
        f"{statistics.median(w for _, w in samples):.2f} ms "
        f"(host {statistics.median(h for h, _ in samples):.2f}; median of {len(samples)})"
    )


PARTIALS_CASES = (
    ("activation, bf16 [16, 1024, 768] x12", torch.bfloat16, [16 * 1024 * 768] * 12, False),
    (
        "GPT 110M parameters, fp32, with update/distance",
        torch.float32,
        [50304 * 768, *[768 * 768 * 4] * 12, *[768] * 100],
        True,
    ),
    ("gradients, fp32, 150 tensors", torch.float32, [50304 * 768, *[768 * 3072] * 24, *[768] * 125], False),
)
"""The tensors `multi_stats` is timed on: (what, dtype, sizes, with history)."""

SIZES = (
    (2048, 131072, 16, 8, 6, 16, 128),
    (2048, 131072, 8, 16, 3, 16, None),
    (2048, 131072, 16, 8, 4, 16, 128),
    (2048, 131072, 16, 8, 8, 16, 128),
    (2048, 131072, 32, 4, 6, 16, 96),
    (2048, 131072, 8, 16, 8, 16, None),
    (2048, 262144, 16, 8, 6, 16, 128),
)
"""Kernel sizes tried (`_multi_kernel.Config`): elements per block of the histogram and moved kernels, elements per
work item, programs per SM, warps, software-pipelining stages of the partials kernel's block loop (None: Triton's
default), bytes each thread reads per block, registers per thread (None: the compiler's choice). The first is the
shipped configuration; it is timed again at the end, and each row's ratio is against the mean of its two timings
(a card's clocks move while it warms up: the first sizes timed in a run have read up to 25% slow). The others:
the 16-warp, 3-stage sizes shipped before, fewer and more stages (bytes in flight), five 4-warp programs per SM,
16 warps with 8 stages, longer items."""


def compare_sizes(device: torch.device, reps: int = 20) -> int:
    """Device time of `multi_stats` (partials and merge launches) under each of `SIZES`, on the same tensors in the
    same run (the shipped sizes first and again last), with the bandwidth each reaches and its total time against
    the shipped sizes; fails when a configuration's rows disagree with the shipped one's beyond rounding. The last
    line names the fastest."""
    from trainguard.capture.torch import _multi, _multi_kernel

    g = torch.Generator(device=device).manual_seed(0)
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    shipped = _multi_kernel.config
    cases = []
    for what, dtype, sizes, history in PARTIALS_CASES:
        xs = [(torch.randn(n, device=device, generator=g) * 0.02 + 0.01).to(dtype) for n in sizes]
        prevs = [x.clone() for x in xs] if history else []
        firsts = [x.clone() for x in xs] if history else []
        nbytes = sum(x.numel() * x.element_size() for x in xs) * (
            4 if history else 1
        )  # prev read and written
        cases.append((what, xs, prevs, firsts, nbytes))
    print("### multi_stats under each kernel size (CUDA events, median of reps; us and GB/s per tensor set)")
    print(
        "| row | chunk | programs | warps | stages | registers | "
        + " | ".join(c[0] for c in cases)
        + " | total x shipped |"
    )
    print("|---|---|---|---|---|---|" + "---|" * (len(cases) + 1))
    failed = 0
    reference: list[torch.Tensor] = []
    totals: dict[tuple[int, int, int, int, int | None, int | None, int | None], float] = {}
    shipped_totals: list[float] = []
    try:
        for n, sizes in enumerate((*SIZES, SIZES[0])):
            block, chunk, per_sm, warps, stages, row_bytes, regs = sizes
            cfg = _multi_kernel.Config(
                block, chunk, 256, per_sm * sms, warps, stages, row=row_bytes, max_registers=regs
            )
            row = f"| {row_bytes} B/thread | {chunk} | {per_sm} x SMs | {warps} | {stages or '-'} | {regs or '-'} | "
            _multi_kernel.config = lambda _device, cfg=cfg: cfg  # type: ignore[assignment,misc]
            cells, total = [], 0.0
            try:
                for i, (_, xs, prevs, firsts, nbytes) in enumerate(cases):
                    out = torch.empty(len(xs), _multi.WIDTH, dtype=torch.float64, device=device)
                    for _ in range(3):  # compile and warm up
                        torch.ops.trainguard.multi_stats(xs, prevs, firsts, out)
                    times = []
                    for _ in range(reps):
                        start, end = (
                            torch.cuda.Event(enable_timing=True),
                            torch.cuda.Event(enable_timing=True),
                        )
                        start.record()
                        torch.ops.trainguard.multi_stats(xs, prevs, firsts, out)
                        end.record()
                        end.synchronize()
                        times.append(1000 * start.elapsed_time(end))
                    us = statistics.median(times)
                    total += us
                    cells.append(f"{us:.0f} ({nbytes / us / 1e3:.0f})")
                    if len(reference) <= i:
                        reference.append(out.clone())
                    elif not torch.allclose(reference[i], out, rtol=1e-5, atol=1e-9, equal_nan=True):
                        print(
                            f"  rows disagree with the shipped sizes' by {(reference[i] - out).abs().max()}"
                        )
                        failed = 1
            except Exception as err:  # noqa: BLE001 -- a size the card cannot run is a row, not the end
                print(f"{row}failed: {type(err).__name__}: {err} |")
                continue
            if sizes == SIZES[0]:
                shipped_totals.append(total)
            if n < len(SIZES):
                totals[sizes] = total
            base = statistics.mean(shipped_totals)
            print(row + " | ".join(cells) + f" | {total / base:.2f} |")
    finally:
        _multi_kernel.config = shipped  # type: ignore[misc]
        torch.cuda.empty_cache()
    base = statistics.mean(shipped_totals)
    totals[SIZES[0]] = base
    best = min(totals, key=totals.__getitem__)
    print(
        f"the shipped sizes timed first and last: {' and '.join(f'{t:.0f}' for t in shipped_totals)} us in all; "
        f"fastest sizes: Config(block={best[0]}, chunk={best[1]}, merge_block=256, programs={best[2]} * sms, "
        f"num_warps={best[3]}, stages={best[4]}, row={best[5]}, max_registers={best[6]}), {totals[best] / base:.2f}x the shipped sizes (the ratios above "
        "are against the mean of the shipped sizes' two timings, the rows before the last against the first alone)\n"
    )
    return failed


def compare_launch_host_time(device: torch.device, calls: int = 200) -> None:
    """Host time of one `multi_stats` call (the hook's direct call: two kernel launches) with the compiled kernels
    launched directly (`_multi_kernel._DIRECT`) and through `JITFunction.run`, on 12 small tensors."""
    from trainguard.capture.torch import _multi, _multi_kernel

    xs = [torch.randn(4096, device=device, dtype=torch.bfloat16) for _ in range(12)]
    out = torch.empty(len(xs), _multi.WIDTH, dtype=torch.float64, device=device)
    per_call = {}
    for direct in (False, True):
        _multi_kernel._DIRECT = direct
        for _ in range(5):
            _multi.reduce_group(xs, [], [], out)
        torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(calls):
            _multi.reduce_group(xs, [], [], out)
        per_call[direct] = 1e6 * (time.perf_counter() - started) / calls
        torch.cuda.synchronize()
    _multi_kernel._DIRECT = True
    print(
        f"### multi_stats host time per call (2 launches, {calls} calls, no sync between): through "
        f"JITFunction.run {per_call[False]:.1f} us, compiled kernels launched directly {per_call[True]:.1f} us\n"
    )


def check_profile(device: torch.device, steps: int, large: bool = False, sampled: bool = False) -> int:
    """`multi_stats` timed under each kernel size, single steps timed plain and hooked (Tier-0, Tier-1 and the
    step after a Tier-1 one apart, wall and host time), then one of each profiled: host time (cProfile) and kernels by device time (torch.profiler). `large`: the
    0.94B GPT, paced by the device, without the sizes and the host profile, and with a plain step's kernels
    beside the saved steps' (what the hook adds is their difference). `sampled`: the hook keeps the fixed sample for
    update/distance instead of full copies."""
    failed = 0
    if not large:
        failed = compare_sizes(device)
        compare_launch_host_time(device)
    import cProfile
    import io
    import pstats

    from torch.profiler import ProfilerActivity, profile

    def kernels(title: str, hook: tg.Hook | None, step: object) -> None:
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            _run(hook, step, 1)
            torch.cuda.synchronize()
        print(f"\n### {title}: kernels by device time (torch.profiler, the whole step)")
        print(
            prof.key_averages().table(
                sort_by="self_cuda_time_total", row_limit=40 if large else 20, max_name_column_width=60
            )
        )

    _, plain_step = _model(device, hooked=False, large=large)
    _run(None, plain_step, 5)
    plain = [_timed_step(None, plain_step) for _ in range(steps)]
    if large:
        kernels("plain step", None, plain_step)
        del plain_step
        torch.cuda.empty_cache()
    hook, hooked = _model(device, hooked=True, large=large, sampled=sampled)
    assert hook is not None
    _run(hook, hooked, 5)
    # whole Tier-1 cycles, at least 4, so that a Tier-1 step and the one after it have more than two samples
    times: dict[str, list[tuple[float, float]]] = {"Tier-0": [], "Tier-1": [], "after Tier-1": []}
    segments = torch.cuda.memory_stats(device).get("segment.all.allocated", 0)
    after_tier1 = False
    for _ in range(max(steps, 4 * hook._plan.config.tier1_interval)):
        kind = _step_kind(hook, after_tier1)
        times[kind].append(_timed_step(hook, hooked))
        after_tier1 = kind == "Tier-1"
    grown = torch.cuda.memory_stats(device).get("segment.all.allocated", 0) - segments
    print(
        "single steps at save_interval 1, each from a synchronisation to the next (wall; host: until the step's "
        f"Python returned): plain {_median_ms(plain)}; "
        + "; ".join(f"{k} saved step {_median_ms(v)}" for k, v in times.items() if v)
        + f"; device memory segments the caching allocator added over the hooked steps: {grown}"
    )
    for kind in ("Tier-0", "Tier-1", "after Tier-1"):
        while _tier1(hook) != (kind != "Tier-0"):
            _run(hook, hooked, 1)
        if kind == "after Tier-1":
            _run(hook, hooked, 1)  # the Tier-1 step whose results the next one delivers
        if not large:
            torch.cuda.synchronize()
            cpu = cProfile.Profile()
            cpu.enable()
            _run(hook, hooked, 1)
            cpu.disable()
            torch.cuda.synchronize()
            text = io.StringIO()
            stats = pstats.Stats(cpu, stream=text)
            stats.sort_stats("tottime").print_stats(12)
            stats.sort_stats("tottime").print_stats("trainguard", 25)
            print(f"\n### {kind} saved step: host time by function (cProfile, trainguard's own)")
            print("\n".join(line for line in text.getvalue().splitlines() if line.strip()))
            continue  # the profiled step was this kind's: the kernels are taken from the next such step
        kernels(f"{kind} saved step", hook, hooked)
    if not large:
        for kind in ("Tier-0", "Tier-1"):
            while _tier1(hook) != (kind == "Tier-1"):
                _run(hook, hooked, 1)
            kernels(f"{kind} saved step", hook, hooked)
    errors = list(hook.errors)
    hook.close()
    if errors:
        print(f"hook errors: {errors}")
    return 1 if errors or failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("check", choices=("sync", "kernels", "profile", "profile-large"))
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--device", default="cuda")
    ap.add_argument(
        "--sampled",
        action="store_true",
        help="profile: update/distance from the fixed sample (history_max_fraction 0)",
    )
    args = ap.parse_args()
    device = torch.device(args.device)
    if device.type != "cuda" or not torch.cuda.is_available():
        raise SystemExit("no CUDA device: these checks need a GPU")
    if args.check == "sync":
        return check_sync(device, args.steps or 20)
    if args.check in ("profile", "profile-large"):
        return check_profile(
            device, args.steps or 10, large=args.check == "profile-large", sampled=args.sampled
        )
    return check_kernels(device, args.steps or 10)


if __name__ == "__main__":
    sys.exit(main())
