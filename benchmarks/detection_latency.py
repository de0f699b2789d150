"""Detection latency: a NaN written at step s -> the training command receives SIGTERM from `trainguard run`.

One command: `.venv/bin/python benchmarks/detection_latency.py [--runs 10] [--peer-runs 3]`.

Each run starts `trainguard run -- python <trainer>` (the real CLI, default settings: save every
10 steps, flush at least every second, poll every 0.25 s). The trainer is a numpy loop with the
`Recorder` at `--step-seconds` per step; at a random saved step s between 100 and 200 its weights
turn NaN, and it notes the wall time when it hands step s to the recorder. Its SIGTERM handler
notes the wall time it was signalled. Latency = SIGTERM time - NaN time, so it includes the
flush, the store, the poll, the rules and the signal. Median and p90 over the runs.
Peer: smdebug 1.0.34 (`.venv-smdebug`, dev/smdebug-venv.sh) following a PyTorch trainer under its
hook with `create_trial` + `invoke_rule` (shared/research/smdebug_probe.py --realtime), same step
time and save interval; its latency is NaN step -> rule fired, since smdebug cannot stop a job.
Target: our median <= 1.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = ROOT / ".venv-smdebug" / "bin" / "python"

TRAINER = textwrap.dedent(
    """
    import signal, sys, time
    import numpy as np
    import trainguard

    stamp, nan_at, step_seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])

    def on_term(signum, frame):
        with open(stamp + ".term", "w") as f:
            f.write(repr(time.time()))
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_term)
    rng = np.random.default_rng(0)
    w = rng.normal(size=(64, 64)).astype(np.float32)
    with trainguard.Recorder() as rec:
        for step in range(nan_at + 3000):
            if step == nan_at:
                w[:] = np.nan
            rec.record_tensor("fc.weight", w, collection="weights")
            rec.record_tensor("grad/fc.weight", w * 1e-3, collection="gradients")
            rec.record_scalar("loss", float(np.mean(w * w)))
            rec.step()
            if step == nan_at:
                with open(stamp + ".nan", "w") as f:
                    f.write(repr(time.time()))
            w -= 1e-4 * w
            time.sleep(step_seconds)
    """
)


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 100]) of a non-empty list."""
    xs = sorted(values)
    k = (len(xs) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def one_run(
    work: Path, i: int, *, nan_at: int, step_seconds: float
) -> tuple[float | None, int, dict[str, object]]:
    """Run the trainer once under `trainguard run`; return (latency seconds or None, exit status, --json doc)."""
    trainer = work / "trainer.py"
    trainer.write_text(TRAINER)
    stamp = work / f"run{i}"
    out = work / f"out{i}.json"
    cmd = [sys.executable, "-m", "trainguard", "run", "--quiet", "--no-report", "--json", str(out),
           "--out", f"file://{work}/runs/{i}", "--", sys.executable, str(trainer), str(stamp), str(nan_at), str(step_seconds)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    doc = json.loads(out.read_text()) if out.exists() else {}
    try:
        latency = float((stamp.with_suffix(".term")).read_text()) - float(
            (stamp.with_suffix(".nan")).read_text()
        )
    except (OSError, ValueError):
        latency = None
        sys.stderr.write(res.stderr[-2000:])
    return latency, res.returncode, doc


def peer_runs(work: Path, runs: int, *, step_seconds: float) -> list[float]:
    if runs <= 0:
        return []
    if not PEER_PYTHON.exists():
        print(f"(peer skipped: {PEER_PYTHON} is missing; run dev/smdebug-venv.sh to create it)")
        return []
    out: list[float] = []
    for i in range(runs):
        nan_at = random.randrange(100, 201, 10)
        cmd = [str(PEER_PYTHON), str(Path(__file__).with_name("smdebug_peer.py")), "latency", "--out", str(work / f"smd{i}"),
               "--nan-at", str(nan_at), "--steps", str(nan_at + 300), "--step-seconds", str(step_seconds)]  # fmt: skip
        res = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600)
        try:
            doc = json.loads(res.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            print(f"(peer run {i} failed: {res.stderr.strip()[-500:]})")
            continue
        if doc.get("latency_s") is not None:
            out.append(float(doc["latency_s"]))
            print(f"  smdebug run {i + 1}: NaN at step {nan_at}, rule fired at step {doc['fired_at_step']}, "
                  f"{doc['latency_s']:.2f} s")  # fmt: skip
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="runs of ours (default 10)")
    ap.add_argument("--peer-runs", type=int, default=3, help="runs of smdebug (default 3; 0 skips it)")
    ap.add_argument(
        "--step-seconds", type=float, default=0.02, help="seconds per training step (default 0.02)"
    )
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    random.seed(args.seed)
    ours: list[float] = []
    failures = 0
    with tempfile.TemporaryDirectory(prefix="tg-latency-") as tmp:
        work = Path(tmp)
        print("TrainGuard (trainguard run, default settings):")
        for i in range(args.runs):
            nan_at = random.randrange(100, 201, 10)
            latency, rc, doc = one_run(work, i, nan_at=nan_at, step_seconds=args.step_seconds)
            ok = rc == 3 and doc.get("stopped_by") == "exploding_tensor" and latency is not None
            failures += not ok
            if latency is not None:
                ours.append(latency)
            shown = "-" if latency is None else f"{latency:.2f} s"
            print(
                f"  run {i + 1}: NaN at step {nan_at}, exit {rc}, stopped by {doc.get('stopped_by')}, SIGTERM after {shown}"
            )
        print("smdebug 1.0.34 (create_trial + invoke_rule following the trainer; detection only):")
        peer = peer_runs(work, args.peer_runs, step_seconds=args.step_seconds)
    print(f"\nDetection latency, NaN at step s -> SIGTERM ({args.step_seconds * 1000:.0f} ms per step)")
    print(f"{'system':<46}{'runs':>6}{'median s':>10}{'p90 s':>8}{'min s':>8}{'max s':>8}")
    rows = [("TrainGuard: NaN written -> CMD got SIGTERM", ours)]
    if peer:
        rows.append(("smdebug: NaN written -> rule fired (no stop)", peer))
    for label, xs in rows:
        if xs:
            print(
                f"{label:<46}{len(xs):>6}{statistics.median(xs):>10.2f}{percentile(xs, 90):>8.2f}{min(xs):>8.2f}{max(xs):>8.2f}"
            )
    if ours and peer:
        print(
            f"\nratio of medians (smdebug / ours): {statistics.median(peer) / statistics.median(ours):.1f}x"
        )
    if ours:
        med = statistics.median(ours)
        print(
            f"target median <= 1.5 s: {'met' if med <= 1.5 else 'NOT met'} ({med:.2f} s); runs not stopped by exploding_tensor: {failures}"
        )
    return 0 if ours and not failures else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
