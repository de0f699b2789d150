"""Smoke test of the blind split without the rules: `python -m benchmarks.detection.blind.smoke [--steps N]
[--full] [--programs a,b]`.

`--steps N` (default 12) runs every program N steps through the real hook into a temporary store and
reads the run back (how many steps were saved); `--full` runs them at full length with an inert hook and
prints, per program, the first and last loss, the final oracle score, the first non-finite step and the
step the bug took effect, each bug beside its twin. Nothing here builds or runs a rule.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace

from benchmarks.detection.blind import suite
from trainguard.store.runs import open_run


def saved_steps(out: str) -> int:
    """How many saved steps the run at `out` holds (rank 0)."""
    src = open_run(out).source(0)
    return sum(len(seg.steps) for seg in src.poll())


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--programs", default="")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    progs = suite.catalogue()
    if args.programs:
        wanted = {suite.PREFIX + n.removeprefix(suite.PREFIX) for n in args.programs.split(",")}
        progs = [p for p in progs if p.name in wanted]
    finals: dict[str, float] = {}
    for p in progs:
        t0 = time.perf_counter()
        if args.full:
            t = suite.train(p, args.seed, out=None)
            finals[p.name] = t.final_val_acc
            nonfinite = next((i for i, x in enumerate(t.losses) if not math.isfinite(x)), None)
            twin = f" twin {finals[p.twin]:.2f}" if p.twin in finals else ""
            print(f"{p.name:<50} loss {t.losses[0]:9.3g} -> {t.losses[-1]:9.3g}  score {t.scores[0]:.2f} -> "
                  f"{t.final_val_acc:.2f}{twin}  steps {len(t.losses)} nonfinite {nonfinite} effect "
                  f"{t.inject_step if p.fault else '-'}  {time.perf_counter() - t0:.1f}s", flush=True)  # fmt: skip
        else:
            with tempfile.TemporaryDirectory() as root:
                out = "file://" + os.path.join(root, "run")
                t = suite.train(replace(p, steps=args.steps), args.seed, out=out)
                print(f"{p.name:<50} {len(t.losses)} steps, {saved_steps(out)} saved, loss {t.losses[0]:.3g} -> "
                      f"{t.losses[-1]:.3g}  {time.perf_counter() - t0:.1f}s", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
