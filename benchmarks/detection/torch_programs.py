"""The PyTorch subset: a few programs of `programs.py` trained with torch and recorded through the real hook.

Same data sets, ground truth and scoring as the numpy programs; the difference is the capture
path: `trainguard.torch.Hook` registered on the module and the optimizer (forward hooks for
activations, the optimizer's step hooks for gradients and updates), so the rules read what a
PyTorch job under TrainGuard writes. Each layer is a block `fcN` holding `lin` and `act`, so
parameter and activation names (`fc1.lin.weight`, `act/fc1.act`) name the layer the ground
truth does. F18 is injected as the real bug: the optimizer's parameter list leaves out fc0.
Torch runs on one thread; models are the numpy programs' small MLPs.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import replace

import numpy as np

from benchmarks.detection import programs
from benchmarks.detection.programs import Program, Truth


def catalogue() -> list[Program]:
    """Faults whose capture differs most between numpy and torch (NaN, activations, optimizer wiring) and healthy twins."""
    by_name = {p.name: p for p in programs.catalogue()}
    picked = ("F1_lr_x100", "F3_vanishing_sigmoid", "F5_dead_relu_bias", "F18_optimizer_misses_layer",
              "H1_relu_momentum", "H2_relu_adam", "H5_sigmoid_shallow", "N1_sparse_relu")  # fmt: skip
    return [replace(by_name[n], name="torch_" + n) for n in picked]


def train(p: Program, seed: int, *, out: str, eval_every: int = 25) -> Truth:
    """Train `p` with torch and `seed`, recording through `trainguard.torch.Hook` into `out`."""
    import torch
    from torch import nn

    import trainguard.torch as tg

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    xtr, ytr, xva, yva, k = programs._dataset(p, rng)  # the same data as the numpy twin
    x_all, y_all = torch.from_numpy(xtr).float(), torch.from_numpy(ytr)
    xv, yv = torch.from_numpy(xva).float(), torch.from_numpy(yva)
    act_cls = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}[p.activation]
    sizes = [xtr.shape[1], *p.hidden, k]
    blocks: OrderedDict[str, nn.Module] = OrderedDict()
    for i in range(len(sizes) - 1):
        lin = nn.Linear(sizes[i], sizes[i + 1])
        last = i == len(sizes) - 2
        with torch.no_grad():
            lin.weight.normal_(0, programs.init_std(p, sizes[i], sizes[i + 1]))
            lin.bias.fill_(programs.init_bias(p, i, len(sizes) - 1))
        parts: OrderedDict[str, nn.Module] = OrderedDict(lin=lin)
        if not last:
            parts["act"] = act_cls()
        blocks[f"fc{i}"] = nn.Sequential(parts)
    model = nn.Sequential(blocks)
    params = [
        q
        for name, q in model.named_parameters()
        if p.freeze_layer is None or not name.startswith(f"fc{p.freeze_layer}.")
    ]
    if p.optimizer == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(params, lr=p.lr)
    else:
        opt = torch.optim.SGD(params, lr=p.lr, momentum=p.momentum if p.optimizer == "momentum" else 0.0)
    loss_fn = nn.CrossEntropyLoss()
    truth = Truth(
        program=p.name, seed=seed, fault=p.fault, category=p.category, should_stop=p.should_stop,
        affected_layer=p.affected_layer, inject_step=p.freeze_from if p.freeze_layer is not None else 0,
        manifest_step=None, steps=p.steps, final_val_acc=0.0, diverged=False,
    )  # fmt: skip
    gen = torch.Generator().manual_seed(seed)
    dead_onset = None
    with tg.Hook(
        out=out, save_interval=p.save_interval, flush_every_steps=1000, flush_interval_seconds=60
    ) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for step in range(p.steps):
            idx = torch.randint(0, len(x_all), (p.batch,), generator=gen)
            opt.zero_grad()
            logits = model(x_all[idx])
            loss = loss_fn(logits, y_all[idx])
            loss.backward()
            value = float(loss.detach())
            truth.losses.append(value)
            if not math.isfinite(value) and truth.manifest_step is None:
                truth.manifest_step, truth.diverged = step, True
            hook.record_scalar("loss", loss)
            hook.record_scalar("accuracy", (logits.argmax(1) == y_all[idx]).float().mean())
            opt.step()
            if p.activation == "relu" and dead_onset is None:
                with torch.no_grad():
                    h = x_all[idx]
                    for name, block in list(model.named_children())[:-1]:
                        h = block(h)
                        if (h > 0).any(dim=0).float().mean() <= 0.5:
                            dead_onset = step
                            break
            if step % eval_every == eval_every - 1 or step == p.steps - 1:
                with torch.no_grad():
                    out_v = model(xv)
                    vloss = float(loss_fn(out_v, yv))
                    vacc = float((out_v.argmax(1) == yv).float().mean())
                hook.record_scalar("val_loss", vloss, mode="eval")
                hook.record_scalar("val_accuracy", vacc, mode="eval", collection="metrics")
                truth.final_val_acc = vacc if math.isfinite(vloss) else 0.0
    if p.fault == "F5" and truth.manifest_step is None:
        truth.manifest_step = dead_onset
    if truth.manifest_step is None and p.fault is not None:
        truth.manifest_step = truth.inject_step
    return truth
