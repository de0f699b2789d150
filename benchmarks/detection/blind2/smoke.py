"""Smoke test of the second blind split without the rules: `python -m benchmarks.detection.blind2.smoke
[--steps N] [--full] [--seeds a,b] [--programs a,b]`.

`--steps N` (default 12) runs every program N steps through the real hook into a temporary store and reads
the run back (how many steps were saved); `--full` runs them at full length with an inert hook and prints,
per program and seed, the first and last loss, the first and final oracle score, the first non-finite step
and the step the bug took effect, each bug beside its twin; with several seeds it ends with the oracle's
harm label of each bug (`suite.label`, the same as the benchmark's). Nothing here builds or runs a rule.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from types import ModuleType

from benchmarks.detection.blind.smoke import saved_steps
from benchmarks.detection.blind2 import suite
from benchmarks.detection.programs import Truth


def main(argv: Sequence[str] | None = None, *, split: ModuleType = suite, doc: str = __doc__) -> int:
    """The smoke runs of `split` (a blind split's `suite` module: `PREFIX`, `catalogue`, `train`, `label`; the third
    split runs its own through here), with `doc`'s first line as the command's description."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--programs", default="")
    ap.add_argument("--seeds", default="0")
    args = ap.parse_args(argv)
    progs = split.catalogue()
    if args.programs:
        wanted = {split.PREFIX + n.removeprefix(split.PREFIX) for n in args.programs.split(",")}
        progs = [p for p in progs if p.name in wanted]
    seeds = [int(s) for s in args.seeds.split(",")]
    truths: list[Truth] = []
    finals: dict[tuple[str, int], float] = {}
    t_all = time.perf_counter()
    for p in progs:
        for seed in seeds:
            t0, c0 = time.perf_counter(), time.process_time()
            if args.full:
                t = split.train(p, seed, out=None)
                truths.append(t)
                finals[p.name, seed] = t.final_val_acc
                nonfinite = next((i for i, x in enumerate(t.losses) if not math.isfinite(x)), None)
                twin = f" twin {finals[p.twin, seed]:.2f}" if (p.twin, seed) in finals else ""
                print(f"{p.name:<52} s{seed} loss {t.losses[0]:9.3g} -> {t.losses[-1]:9.3g}  score {t.scores[0]:.2f} "
                      f"-> {t.final_val_acc:.2f}{twin}  steps {len(t.losses)} nonfinite {nonfinite} effect "
                      f"{t.inject_step if p.fault else '-'}  {time.perf_counter() - t0:.1f}s ({time.process_time() - c0:.1f}s CPU)", flush=True)  # fmt: skip
            else:
                with tempfile.TemporaryDirectory() as root:
                    out = "file://" + os.path.join(root, "run")
                    t = split.train(replace(p, steps=args.steps), seed, out=out)
                    print(f"{p.name:<52} {len(t.losses)} steps, {saved_steps(out)} saved, loss {t.losses[0]:.3g} "
                          f"-> {t.losses[-1]:.3g}  {time.perf_counter() - t0:.1f}s ({time.process_time() - c0:.1f}s CPU)", flush=True)  # fmt: skip
    if args.full and len(seeds) > 1:
        split.label(truths, progs)
        print("\nbug: hurts against its twin over the seeds (the oracle's label), visible step per seed")
        for p in progs:
            runs = [t for t in truths if t.program == p.name]
            if p.fault is not None and runs:
                print(f"{p.name:<52} hurts {runs[0].should_stop}  visible {[t.manifest_step for t in runs]}")
    print(f"total {time.perf_counter() - t_all:.1f}s ({time.process_time():.1f}s CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
