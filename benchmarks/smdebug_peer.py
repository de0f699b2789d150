"""The peer side of our evaluator benchmarks: SageMaker Debugger (smdebug 1.0.34) doing the same work.

Runs in the peer's own venv (`dev/smdebug-venv.sh` creates `.venv-smdebug`), never in ours; the
benchmarks in this folder call it in a subprocess and read the JSON it prints last.

    throughput --stats S.npy --names N.json --out DIR
        writes the same content our run holds (per step and tensor, the float32 statistics vector)
        as smdebug output with smdebug's own FileWriter, then times `create_trial`, reading every
        value, and an ExplodingTensor-style rule through smdebug's `Rule`/`invoke_rule`.
    latency --out DIR --nan-at S --step-seconds T
        trains a small MLP under the smdebug PyTorch hook in a subprocess, with a NaN written into
        a weight at step S, while this process follows it with `create_trial` + `invoke_rule` (the
        approach of shared/research/smdebug_probe.py --realtime); prints the seconds from the
        trainer's NaN step to detection. smdebug detects only: it has no way to stop the trainer.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import time

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")

import numpy as np


def _quiet() -> None:
    logging.getLogger("smdebug").setLevel(logging.ERROR)


def exploding_rule(trial, names=None):  # type: ignore[no-untyped-def]
    """An ExplodingTensor rule written against smdebug's public Rule API (smdebug ships none)."""
    from smdebug.exceptions import TensorUnavailableForStep
    from smdebug.rules import Rule

    class ExplodingTensor(Rule):
        def __init__(self, base_trial):  # type: ignore[no-untyped-def]
            super().__init__(base_trial, action_str="")
            self.names = names

        def set_required_tensors(self, step):  # type: ignore[no-untyped-def]
            for name in self.names or self.base_trial.tensor_names():
                self.req_tensors.add(name, steps=[step])

        def invoke_at_step(self, step):  # type: ignore[no-untyped-def]
            for t in self.req_tensors.get():
                try:
                    v = t.value(step)
                except TensorUnavailableForStep:
                    continue
                if not np.isfinite(v).all():
                    return True
            return False

    return ExplodingTensor(trial)


def write_content(out: str, stats: np.ndarray, names: list[str], steps: list[int]) -> float:
    """Write stats[s, t] as tensor `names[t]` at step `steps[s]` with smdebug's FileWriter; return seconds."""
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.modes import ModeKeys
    from smdebug.core.writer import FileWriter

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    for s, step in enumerate(steps):
        writer = FileWriter(trial_dir=out, worker="worker_0", step=step)
        for t, name in enumerate(names):
            writer.write_tensor(tdata=stats[s, t], tname=name, mode=ModeKeys.TRAIN, mode_step=step)
        writer.close()
    manager = CollectionManager()
    manager.get("default").include(".*")
    manager.export(out, "worker_0_collections.json")
    with open(os.path.join(out, "training_job_end.ts"), "w"):
        pass
    return time.perf_counter() - t0


def throughput(args: argparse.Namespace) -> dict[str, object]:
    from smdebug.exceptions import RuleEvaluationConditionMet
    from smdebug.rules.rule_invoker import invoke_rule
    from smdebug.trials import create_trial

    stats = np.load(args.stats, allow_pickle=False)
    with open(args.names) as f:
        doc = json.load(f)
    names, steps = doc["names"], doc["steps"]
    write_s = write_content(args.out, stats, names, steps)
    t0 = time.perf_counter()
    trial = create_trial(args.out)
    create_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    n = 0
    for name in trial.tensor_names():
        for _ in trial.tensor(name).values().values():
            n += 1
    read_s = time.perf_counter() - t0
    # The rule on a fresh trial, so it reads the values itself as a rule job would.
    t0 = time.perf_counter()
    trial2 = create_trial(args.out)
    fired = None
    try:
        invoke_rule(exploding_rule(trial2), start_step=steps[0], end_step=steps[-1] + 1, raise_eval_cond=True)
    except RuleEvaluationConditionMet as err:
        fired = err.step
    rule_s = time.perf_counter() - t0
    return {
        "tensor_steps": len(steps) * len(names),
        "values_read": n,
        "write_s": write_s,
        "create_trial_s": create_s,
        "read_values_s": read_s,
        "trial_and_rule_s": rule_s,
        "rule_fired_at": fired,
    }


def train(args: argparse.Namespace) -> None:
    """The trainer of `latency`: an MLP under the smdebug hook; writes the NaN step's wall time."""
    import smdebug.pytorch as smd
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook(
        out_dir=args.out,
        save_config=smd.SaveConfig(save_interval=args.save_interval),
        include_collections=["weights", "biases", "gradients", "losses"],
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(args.steps):
        x, y = torch.randn(64, 32), torch.randint(0, 10, (64,))
        if step == args.nan_at:
            with torch.no_grad():
                model[0].weight[0, 0] = float("nan")
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        if step == args.nan_at:
            with open(args.out + ".nan_time", "w") as f:
                f.write(repr(time.time()))
        time.sleep(args.step_seconds)
    hook.close()


def latency(args: argparse.Namespace) -> dict[str, object]:
    from smdebug.exceptions import RuleEvaluationConditionMet
    from smdebug.rules.rule_invoker import invoke_rule
    from smdebug.trials import create_trial

    shutil.rmtree(args.out, ignore_errors=True)
    stamp = args.out + ".nan_time"
    if os.path.exists(stamp):
        os.unlink(stamp)
    cmd = [sys.executable, __file__, "train", "--out", args.out, "--nan-at", str(args.nan_at),
           "--steps", str(args.steps), "--step-seconds", str(args.step_seconds),
           "--save-interval", str(args.save_interval)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        trial = create_trial(args.out)  # waits for the collections file
        fired = None
        try:
            invoke_rule(exploding_rule(trial), start_step=0, end_step=args.steps, raise_eval_cond=True)
        except RuleEvaluationConditionMet as err:
            fired = err.step
        detected = time.time()
    finally:
        proc.kill()
        proc.wait()
    nan_time = None
    if os.path.exists(stamp):
        with open(stamp) as f:
            nan_time = float(f.read())
    return {
        "fired_at_step": fired,
        "latency_s": None if nan_time is None or fired is None else detected - nan_time,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("throughput")
    t.add_argument("--stats", required=True)
    t.add_argument("--names", required=True)
    t.add_argument("--out", required=True)
    for name in ("latency", "train"):
        p = sub.add_parser(name)
        p.add_argument("--out", required=True)
        p.add_argument("--nan-at", type=int, default=100)
        p.add_argument("--steps", type=int, default=400)
        p.add_argument("--step-seconds", type=float, default=0.02)
        p.add_argument("--save-interval", type=int, default=10)
    args = ap.parse_args()
    _quiet()
    if args.cmd == "train":
        train(args)
        return
    result = throughput(args) if args.cmd == "throughput" else latency(args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
