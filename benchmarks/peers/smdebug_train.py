"""Times smdebug's PyTorch hook on the probe's MLP; run by `benchmarks/hook_overhead.py` in `.venv-smdebug`.

Same model, data and loop as `shared/research/smdebug_probe.py` (32->256->256->10, batch 64,
SGD, torch on one thread): per repetition one model without a hook and one with smdebug's hook
(weights, biases, gradients and losses every `--save-interval` steps) train in lockstep,
`--block` steps each in turn. Prints one JSON object: loop seconds of each, and the bytes and
files smdebug wrote per repetition.
"""

import argparse
import json
import logging
import os
import shutil
import tempfile
import time

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")


def build(torch, nn):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    return model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05)


def loop(torch, model, loss_fn, opt, steps):
    t0 = time.perf_counter()
    for _ in range(steps):
        x = torch.randn(64, 32)
        y = torch.randint(0, 10, (64,))
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--save-interval", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--block", type=int, default=50)
    a = ap.parse_args()
    import smdebug.pytorch as smd
    import torch
    from torch import nn

    logging.getLogger("smdebug").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    loop(torch, *build(torch, nn), 200)  # first-call costs of torch
    result = {"no_hook_s": [], "hook_s": [], "bytes": [], "files": []}
    for _ in range(a.reps):
        out = tempfile.mkdtemp(prefix="smdebug-bench-")
        shutil.rmtree(out)
        plain = build(torch, nn)
        hooked = build(torch, nn)
        hook = smd.Hook(
            out_dir=out,
            save_config=smd.SaveConfig(save_interval=a.save_interval),
            include_collections=["weights", "biases", "gradients", "losses"],
        )
        hook.register_module(hooked[0])
        hook.register_loss(hooked[1])
        hook.set_mode(smd.modes.TRAIN)
        # lockstep, `block` steps each in alternating order, as benchmarks/hook_overhead.py does
        seconds = [0.0, 0.0]
        for i, start in enumerate(range(0, a.steps, a.block)):
            n = min(a.block, a.steps - start)
            for j in (0, 1) if i % 2 == 0 else (1, 0):
                seconds[j] += loop(torch, *(plain, hooked)[j], n)
        hook.close()
        result["no_hook_s"].append(seconds[0])
        result["hook_s"].append(seconds[1])
        size = files = 0
        for root, _, names in os.walk(out):
            for n in names:
                size += os.path.getsize(os.path.join(root, n))
                files += 1
        result["bytes"].append(size)
        result["files"].append(files)
        shutil.rmtree(out, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
