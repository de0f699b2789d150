"""Evaluator throughput: the full default rule set over a stored run, beside smdebug's trial API + a rule.

One command: `.venv/bin/python benchmarks/evaluator_throughput.py [--steps 10000] [--peer-steps 300]`.

Ours: a run of `--steps` saved steps of a 100-tensor model (20 layers x weight, bias, their two
gradients and the ReLU output, plus per-unit activity on Tier-1 steps and the loss) is written with
`RankWriter`, then `Evaluator(uri, checkpoint=False)` with the default rules reads and evaluates
all of it; we report tensor-steps per second (best of `--repeat`).
Peer: the same statistics (one float32 vector per tensor and step) written as smdebug output by
smdebug's own FileWriter, read with `create_trial` and an ExplodingTensor rule through
`invoke_rule`, in `.venv-smdebug` (dev/smdebug-venv.sh) over `--peer-steps` steps, since smdebug
needs minutes for the full run; its cost per tensor-step does not depend on the run's length.
The ratio compares the two in this one run. Target: ours >= 100x faster.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from trainguard.api.enums import Action
from trainguard.api.rules_config import RuleSpec
from trainguard.sidecar.evaluator import Evaluator
from trainguard.store import run_format
from trainguard.store.backends.local import FileStore
from trainguard.store.writer import RankWriter, WriterConfig

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = ROOT / ".venv-smdebug" / "bin" / "python"
LAYERS = 20
WIDTH = 256
BATCH = 64
SAVE_INTERVAL = 10


def model_tensors() -> list[dict[str, object]]:
    """The catalogue of a 20-layer MLP: 100 tensors, in execution order per layer."""
    out: list[dict[str, object]] = []
    for i in range(LAYERS):
        m = f"fc{i}"
        out += [
            {"name": f"{m}.weight", "collection": "weights", "shape": [WIDTH, WIDTH], "trainable": True},
            {"name": f"{m}.bias", "collection": "biases", "shape": [WIDTH], "trainable": True},
            {"name": f"grad/{m}.weight", "collection": "gradients", "shape": [WIDTH, WIDTH]},
            {"name": f"grad/{m}.bias", "collection": "gradients", "shape": [WIDTH]},
            {"name": f"act/{m}", "collection": "activations", "shape": [BATCH, WIDTH], "activation": "relu"},
        ]
        for t in out[-5:]:
            t.update(module=m, order=i)
    return out


def healthy_stats(tensors: list[dict[str, object]], steps: int, *, seed: int = 0) -> np.ndarray:
    """Return float32[steps, T, K]: slowly moving statistics of a healthy run, columns as STAT_COLUMNS."""
    rng = np.random.default_rng(seed)
    t = np.arange(steps, dtype=np.float64)[:, None]
    T = len(tensors)
    count = np.array([float(np.prod(x["shape"])) for x in tensors])  # type: ignore[arg-type]
    kind = np.array([str(x["collection"]) for x in tensors])
    base_std = np.select(
        [kind == "weights", kind == "biases", kind == "gradients", kind == "activations"],
        [0.06, 0.02, 2e-3, 0.6],
        1.0,
    )
    std = base_std * (1 + 0.1 * np.exp(-t / 3000)) * (1 + 0.03 * rng.standard_normal((steps, T)))
    mean = np.where(kind == "activations", 0.4, 0.0) + 0.01 * std * rng.standard_normal((steps, T))
    out = np.zeros((steps, T, len(run_format.STAT_COLUMNS)), np.float64)
    c = run_format.COLUMN
    out[..., c["count"]] = count
    out[..., c["zero"]] = np.where(kind == "activations", 0.45, 0.0) * count
    out[..., c["min"]] = mean - 3.5 * std
    out[..., c["max"]] = mean + 3.5 * std
    out[..., c["mean"]] = mean
    out[..., c["std"]] = std
    out[..., c["abs_mean"]] = np.abs(mean) + 0.8 * std
    out[..., c["l2"]] = np.sqrt(count * (std**2 + mean**2))
    trainable = np.isin(kind, ["weights", "biases"])
    out[..., c["update_l2"]] = np.where(trainable, out[..., c["l2"]] * 1e-3 * SAVE_INTERVAL, np.nan)
    out[..., c["distance_l2"]] = np.where(trainable, out[..., c["l2"]] * 1e-3 * np.sqrt(t + 1), np.nan)
    out[0, :, c["update_l2"]] = np.nan
    return out.astype(np.float32)


def write_run(root: Path, stats: np.ndarray, tensors: list[dict[str, object]]) -> str:
    """Write the run with RankWriter (one segment per 50 saved steps, as the hook's default) and return its URI."""
    uri = "file://" + str(root)
    w = RankWriter(FileStore(uri), run_id="throughput", framework="benchmark",
                   config=WriterConfig(flush_every_steps=50, flush_interval_seconds=1e9, max_pending_bytes=2**40))  # fmt: skip
    ids = np.array([w.define(**x) for x in tensors], np.int32)  # type: ignore[arg-type]
    loss_id = w.define("loss", collection="losses", mode="train")
    val_id = w.define("val_loss", collection="losses", mode="eval")
    acts = [i for i, x in enumerate(tensors) if x["collection"] == "activations"]
    rng = np.random.default_rng(1)
    t0 = 1.8e9
    for s in range(stats.shape[0]):
        step = s * SAVE_INTERVAL
        trend = 0.2 + 2.1 * np.exp(-s / 3000)
        w.write_scalars(step, [loss_id], [trend + 0.02 * rng.standard_normal()])
        if s % 50 == 0:  # a healthy validation loss: falls with the training loss, a few percent above it
            w.write_scalars(step, [val_id], [trend * 1.03])
        units = None
        if s % 10 == 0:  # Tier 1 on every 10th saved step, as the hook's default
            units = {("active", int(ids[i])): rng.uniform(0.3, 0.7, WIDTH).astype(np.float32) for i in acts}
        w.write_step(step, ids, stats[s], wall_time=t0 + s, units=units)
    w.close()
    if w.errors:
        raise SystemExit(f"writing the benchmark run failed: {w.errors[0]}")
    return uri


def time_ours(
    uri: str, *, repeat: int, last_step: int, rules: list[RuleSpec] | None = None
) -> tuple[float, int, int]:
    """Return (best seconds, findings, rules) of a full evaluation (default rules unless `rules`)."""
    best, findings, n_rules = float("inf"), 0, 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        ev = Evaluator(uri, rules=rules, checkpoint=False)
        while not ev.ended:
            ev.poll()
        best = min(best, time.perf_counter() - t0)
        if ev.last_step != last_step:
            raise SystemExit(f"the evaluator stopped at step {ev.last_step}, expected {last_step}")
        findings, n_rules = len(ev.findings), len(ev.rule_names)
    return best, findings, n_rules


def time_peer(work: Path, stats: np.ndarray, tensors: list[dict[str, object]]) -> dict[str, float] | None:
    if not PEER_PYTHON.exists():
        print(f"(peer skipped: {PEER_PYTHON} is missing; run dev/smdebug-venv.sh to create it)")
        return None
    # NaN marks "not a parameter" in our update/distance columns; smdebug's rule would read it as a NaN tensor.
    np.save(work / "peer_stats.npy", np.nan_to_num(stats, nan=0.0))
    names = [str(x["name"]) for x in tensors]
    (work / "peer_names.json").write_text(
        json.dumps({"names": names, "steps": [s * SAVE_INTERVAL for s in range(len(stats))]})
    )
    cmd = [str(PEER_PYTHON), str(Path(__file__).with_name("smdebug_peer.py")), "throughput",
           "--stats", str(work / "peer_stats.npy"), "--names", str(work / "peer_names.json"), "--out", str(work / "smdebug")]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        print(f"(peer failed with status {res.returncode}: {res.stderr.strip()[-2000:]})")
        return None
    out: dict[str, float] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=10_000, help="saved steps in our run (default 10000)")
    ap.add_argument("--peer-steps", type=int, default=300, help="saved steps smdebug reads (default 300)")
    ap.add_argument(
        "--repeat", type=int, default=3, help="evaluations of our run; the best counts (default 3)"
    )
    args = ap.parse_args()
    tensors = model_tensors()
    stats = healthy_stats(tensors, args.steps)
    with tempfile.TemporaryDirectory(prefix="tg-throughput-") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        uri = write_run(work / "run", stats, tensors)
        write_s = time.perf_counter() - t0
        last = (args.steps - 1) * SAVE_INTERVAL
        seconds, findings, rules = time_ours(uri, repeat=args.repeat, last_step=last)
        one_rule = [RuleSpec(type="exploding_tensor", action=Action.STOP)]
        single_s, _, _ = time_ours(uri, repeat=args.repeat, last_step=last, rules=one_rule)
        peer = time_peer(work, stats[: args.peer_steps], tensors) if args.peer_steps > 0 else None
    ours_ts = args.steps * len(tensors)
    print(
        f"\nEvaluator throughput: {len(tensors)} tensors x {args.steps:,} saved steps, healthy synthetic run "
        f"(written in {write_s:.1f} s; {findings} findings from {rules} default rules)"
    )
    print(f"{'system':<46}{'tensor-steps':>14}{'seconds':>10}{'ms / tensor-step':>18}{'tensor-steps/s':>16}")

    def row(label: str, n: int, secs: float) -> float:
        print(f"{label:<46}{n:>14,}{secs:>10.2f}{1e3 * secs / n:>18.5f}{n / secs:>16,.0f}")
        return n / secs

    ours_rate = row(f"TrainGuard Evaluator, all {rules} default rules", ours_ts, seconds)
    single_rate = row("TrainGuard Evaluator, exploding_tensor only", ours_ts, single_s)
    if peer is not None:
        n = int(peer["tensor_steps"])
        row(
            "smdebug create_trial + read every value",
            n,
            float(peer["create_trial_s"]) + float(peer["read_values_s"]),
        )
        peer_rate = row("smdebug create_trial + ExplodingTensor rule", n, float(peer["trial_and_rule_s"]))
        ratio = ours_rate / peer_rate
        print(f"\nratio, all default rules vs smdebug trial + one rule: {ratio:,.0f}x   target >= 100x: "
              f"{'met' if ratio >= 100 else 'NOT met'}")  # fmt: skip
        print(f"ratio, the same rule on both sides: {single_rate / peer_rate:,.0f}x")
        print(
            f"(smdebug wrote its {n:,} tensor-steps in {float(peer['write_s']):.1f} s; its rule fired at {peer['rule_fired_at']})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
