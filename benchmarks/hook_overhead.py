"""Training-step overhead and bytes written: no hook vs TrainGuard's hook vs smdebug's PyTorch hook.

One command, one table:

    .venv/bin/python benchmarks/hook_overhead.py [--steps 1000] [--reps 5] [--threads 1] [--no-stats-worker]
        [--skip-smdebug] [--skip-torch-path]

The model and loop are those of `shared/research/smdebug_probe.py`: MLP 32->256->256->10
(76k parameters), batch 64, SGD, torch on one thread, 1000 steps. Our hook runs in this
process; smdebug 1.0.34 runs in `.venv-smdebug` (made by `dev/smdebug-venv.sh`) through
`benchmarks/peers/smdebug_train.py`, which times its own no-hook baseline in the same process.
All configurations of a process train in lockstep, `--block` steps each in rotating order, so
the load of this noisy shared 2-core VM falls on all of them alike; each repetition is a fresh
run of `--steps` steps. "x no hook" is the median over `--reps` of each repetition's ratio to
the no-hook models of the same repetition (the peer: to its own no-hook loop), with the range of
those ratios beside it; step times are medians. Bytes and objects are
everything each hook wrote (segments, catalogue, run.json, END.json), per saved step.

On CPU our hook reads float32 tensors in place with its C kernel (`native_stats`, the default).
The rows "torch path" run the same hook with `native_stats=False`: torch ops over packed buffers,
reduced on the statistics worker thread (`--no-stats-worker`: on the training thread); for them
the table also gives the worker's CPU time per saved step (work moved off the training thread,
which a fully loaded CPU still pays) and the saved steps skipped because it was still busy.
The rows "no update_l2/distance_l2" run it with `track_updates=False` (no saved copies to read
and refresh): the part of the overhead that those two columns cost.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

import trainguard.torch as tg
from trainguard.capture.torch import c_kernel

ROOT = Path(__file__).resolve().parent.parent
PEER_SCRIPT = ROOT / "benchmarks" / "peers" / "smdebug_train.py"
SAME_AS_PEER = ("weights", "biases", "gradients", "losses")
TORCH_PATH = "torch path"
"""Rows whose hook runs with native_stats=False: what the C kernel buys, measured in the same run."""
UNTRACKED = "no update_l2/distance_l2"
"""Rows whose hook runs with track_updates=False: what reading and refreshing the saved copies costs."""
TARGET_OVERHEAD = {10: 0.05, 1: 0.30}
TARGET_BYTES_FACTOR = 50.0


@dataclass
class Result:
    """Timings of one configuration over repetitions, and what it wrote per run."""

    label: str
    save_interval: int | None
    seconds: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)
    """Loop seconds without a hook measured in the same process (for the peer's own ratio)."""
    bytes_per_run: list[int] = field(default_factory=list)
    objects_per_run: list[int] = field(default_factory=list)
    worker_cpu_per_run: list[float] = field(default_factory=list)
    """CPU seconds of our statistics worker thread per run."""
    skipped_per_run: list[int] = field(default_factory=list)


def build() -> tuple[nn.Module, nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    return model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05)


@dataclass
class Trainer:
    """One configuration's model, optimizer and hook, advanced a block of steps at a time."""

    result: Result
    hook: tg.Hook | None
    out: Path
    parts: tuple[nn.Module, nn.Module, torch.optim.Optimizer] = field(default_factory=build)

    def __post_init__(self) -> None:
        model, _, opt = self.parts
        if self.hook is not None:
            self.hook.register_module(model)
            self.hook.register_optimizer(opt)

    def run(self, steps: int) -> float:
        """Train `steps` steps; return their wall seconds. Then wait, untimed, until the hook's background
        threads are idle: the next configuration's block must not pay for this one's worker or uploader
        (without this, the model trained right after the torch-path rows ran ~7% slower)."""
        model, loss_fn, opt = self.parts
        hook = self.hook
        started = time.perf_counter()
        for _ in range(steps):
            x = torch.randn(64, 32)
            y = torch.randint(0, 10, (64,))
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            if hook is not None:
                hook.record_scalar("loss", loss)
        seconds = time.perf_counter() - started
        if hook is not None:
            hook.wait_idle(5.0)
        return seconds

    def finish(self) -> None:
        if self.hook is not None:
            self.hook.close()
            if self.hook.errors:
                raise SystemExit(f"the hook failed during the benchmark: {self.hook.errors}")
            size, count = disk_usage(self.out)
            self.result.bytes_per_run.append(size)
            self.result.objects_per_run.append(count)
            self.result.worker_cpu_per_run.append(self.hook.worker_cpu_seconds)
            self.result.skipped_per_run.append(self.hook.skipped_steps)
        shutil.rmtree(self.out, ignore_errors=True)


def disk_usage(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def run_ours(
    results: list[Result],
    collections: dict[str, tuple[str, ...] | None],
    *,
    steps: int,
    block: int,
    stats_worker: bool = True,
) -> None:
    """One repetition: every configuration trains in lockstep, `block` steps at a time in rotating order,
    so the load of a shared machine falls on all of them alike."""
    trainers: list[Trainer] = []
    for r in results:
        out = Path(tempfile.mkdtemp(prefix="tg-bench-"))
        hook = None
        if r.save_interval is not None:
            settings: dict[str, object] = {
                "save_interval": r.save_interval,
                "stats_worker": stats_worker,
                "native_stats": TORCH_PATH not in r.label,
                "track_updates": UNTRACKED not in r.label,
            }
            if collections.get(r.label):
                settings["collections"] = list(collections[r.label] or ())
            hook = tg.Hook(f"file://{out}/run", **settings)  # type: ignore[arg-type]
        trainers.append(Trainer(r, hook, out))
    seconds = [0.0] * len(trainers)
    for i, start in enumerate(range(0, steps, block)):
        n = min(block, steps - start)
        for j in [(k + i) % len(trainers) for k in range(len(trainers))]:
            seconds[j] += trainers[j].run(n)
    for t, sec in zip(trainers, seconds):
        t.result.seconds.append(sec)
        t.finish()


def run_peer(python: str, *, steps: int, save_interval: int, reps: int, block: int) -> Result:
    cmd = [python, str(PEER_SCRIPT), "--steps", str(steps), "--save-interval", str(save_interval)]
    cmd += ["--reps", str(reps), "--block", str(block)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"smdebug peer failed ({' '.join(cmd)}):\n{proc.stderr[-2000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return Result(
        "smdebug 1.0.34 (w+b+g+loss)",
        save_interval,
        seconds=data["hook_s"],
        baseline=data["no_hook_s"],
        bytes_per_run=data["bytes"],
        objects_per_run=data["files"],
    )


def median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def print_header(header: tuple[str, ...]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")


def timing_cells(
    label: str, save_interval: int | None, seconds: list[float], steps: int, paired: list[float]
) -> tuple[str, ...]:
    """A row's first cells: configuration, save interval, step ms (median), x no hook (the median of the
    paired ratios) and the range of those ratios."""
    return (
        label,
        "-" if save_interval is None else str(save_interval),
        f"{1000 * median(seconds) / steps:.3f}",
        f"{median(paired):.3f}",
        f"{min(paired):.3f}-{max(paired):.3f}",
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument(
        "--block", type=int, default=50, help="steps each configuration runs before the next takes over"
    )
    ap.add_argument("--smdebug-python", default=str(ROOT / ".venv-smdebug" / "bin" / "python"))
    ap.add_argument("--skip-smdebug", action="store_true", help="only our hook (no peer venv needed)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (the probe uses 1)")
    ap.add_argument(
        "--no-stats-worker", action="store_true", help="reduce saved steps on the training thread"
    )
    ap.add_argument(
        "--skip-torch-path",
        action="store_true",
        help="leave out the rows without the C kernel (native_stats=False)",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    # Two models without a hook: the ratios use the mean of both, and the table shows the spread between
    # them, the noise floor of every ratio (it caught the baseline paying for other hooks' threads).
    baselines = [Result("no hook", None), Result("no hook, second model", None)]
    labels = ["w+b+g+loss", f"w+b+g+loss, {UNTRACKED}", "all collections"] + (
        [] if args.skip_torch_path else [f"all collections, {TORCH_PATH}"]
    )
    ours = [Result(f"trainguard ({label})", si) for si in (10, 1) for label in labels]
    collections = {r.label: (SAME_AS_PEER if "w+b+g" in r.label else None) for r in ours}
    Trainer(Result("warm-up", None), None, Path(tempfile.mkdtemp())).run(200)  # first-call costs of torch
    for _ in range(args.reps):
        run_ours(
            [*baselines, *ours],
            collections,
            steps=args.steps,
            block=args.block,
            stats_worker=not args.no_stats_worker,
        )

    peers: list[Result] = []
    if not args.skip_smdebug:
        if not os.access(args.smdebug_python, os.X_OK):
            raise SystemExit(
                f"{args.smdebug_python} is missing: run dev/smdebug-venv.sh first, or pass --skip-smdebug"
            )
        peers = [
            run_peer(
                args.smdebug_python, steps=args.steps, save_interval=si, reps=args.reps, block=args.block
            )
            for si in (10, 1)
        ]

    base_s = statistics.fmean(median(b.seconds) for b in baselines)
    spread = abs(median(baselines[0].seconds) - median(baselines[1].seconds)) / base_s
    # Each repetition's ratio is taken against the no-hook models of the same repetition (they trained
    # in the same rotation, so a slower or faster spell of the machine falls on both), then the median
    # over repetitions: a paired estimate, less noisy than a ratio of medians
    base_per_rep = [statistics.fmean(pair) for pair in zip(*(b.seconds for b in baselines))]
    print(
        f"# hook overhead: MLP 76k params, batch 64, SGD, {args.steps} steps, torch {args.threads} thread(s), "
        f"median of {args.reps} paired ratios, CPU path: C kernel (c_kernel.AVAILABLE={c_kernel.AVAILABLE}); torch path with the "
        f"statistics worker {'off' if args.no_stats_worker else 'on'}; "
        f"load average {os.getloadavg()[0]:.2f} at the end"
    )
    print(
        f"# no-hook loop: {base_s:.3f} s here (two models {100 * spread:.1f}% apart: the noise floor of each ratio); "
        f"{median([t for p in peers for t in p.baseline]):.3f} s in the peer's venv"
    )
    header = (
        "configuration",
        "save_int",
        "step ms",
        "x no hook",
        "range over reps",
        "bytes/saved step",
        "objects/saved step",
        "worker CPU ms/saved step",
        "skipped saved steps",
    )
    print_header(header)
    rows: dict[tuple[str, int | None], tuple[float, float]] = {}
    for r in [*baselines, *ours, *peers]:
        paired = [sec / ref for sec, ref in zip(r.seconds, r.baseline or base_per_rep)]
        ratio = median(paired)
        saved = math.ceil(args.steps / r.save_interval) if r.save_interval else 0
        per_bytes = median([b / saved for b in r.bytes_per_run]) if saved else math.nan
        per_objects = median([o / saved for o in r.objects_per_run]) if saved else math.nan
        rows[(r.label, r.save_interval)] = (ratio, per_bytes)
        worker = TORCH_PATH in r.label and not args.no_stats_worker  # the C kernel's path has no worker
        cells = (
            *timing_cells(r.label, r.save_interval, r.seconds, args.steps, paired),
            "-" if not saved else f"{per_bytes:,.0f}",
            "-" if not saved else f"{per_objects:.3f}",
            f"{1000 * median([c / saved for c in r.worker_cpu_per_run]):.3f}" if worker else "-",
            f"{median([float(k) for k in r.skipped_per_run]):.0f} of {saved}" if worker else "-",
        )
        print("| " + " | ".join(cells) + " |")
    print()
    for si in (10, 1):
        same = rows[("trainguard (w+b+g+loss)", si)]
        full = rows[("trainguard (all collections)", si)]
        verdict = "meets" if full[0] - 1 <= TARGET_OVERHEAD[si] else "MISSES"
        line = (
            f"save_interval {si}: overhead {100 * (same[0] - 1):.1f}% (w+b+g+loss), {100 * (full[0] - 1):.1f}% "
            f"(all collections) -> {verdict} the {100 * TARGET_OVERHEAD[si]:.0f}% target"
        )
        untracked = rows[(f"trainguard (w+b+g+loss, {UNTRACKED})", si)]
        line += f"; {100 * (untracked[0] - 1):.1f}% without update_l2/distance_l2 (w+b+g+loss)"
        torch_path = rows.get((f"trainguard (all collections, {TORCH_PATH})", si))
        if torch_path:
            line += f"; without the C kernel {100 * (torch_path[0] - 1):.1f}% (all collections)"
        peer = rows.get(("smdebug 1.0.34 (w+b+g+loss)", si))
        if peer:
            factor = peer[1] / same[1]
            line += (
                f"; smdebug {100 * (peer[0] - 1):.0f}%; step-time ratio ours/smdebug {same[0] / peer[0]:.3f}; "
                f"bytes per saved step {factor:,.0f}x fewer than smdebug "
                f"({'meets' if factor >= TARGET_BYTES_FACTOR else 'MISSES'} the {TARGET_BYTES_FACTOR:.0f}x target)"
            )
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
