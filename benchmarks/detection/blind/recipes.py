"""One classifier script in the many forms people give it: training recipes around a plain MLP.

`classifier` trains an MLP on a tabular k-class problem; its knobs are the recipes of the briefs
(gradient accumulation, one-cycle or warm restarts, label smoothing, heavy dropout with small batches,
early stopping, a curriculum, weight decay, magnitude pruning with masks, bf16 autocast, fp16 autocast
with a hand-written dynamic loss scaler). `focal_detector` is an imbalanced binary detector trained
with a focal loss. The bugs each change what the brief's mistake changes (see `suite.py`).
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind import data
from benchmarks.detection.blind.harness import Run, accuracy, auc, in_eval

EPOCH_STEPS = 50
"""Batches per epoch of the classifier's loader."""


def _mlp(d_in: int, width: int, depth: int, k: int, dropout: float) -> nn.Sequential:
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(d_in, width), nn.ReLU()]
        if dropout:
            layers.append(nn.Dropout(dropout))
        d_in = width
    return nn.Sequential(*layers, nn.Linear(d_in, k))


def _optimizer(name: str, params: object, lr: float, wd: float) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=wd)  # type: ignore[arg-type]
    if name == "nesterov":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, nesterov=True, weight_decay=wd)  # type: ignore[arg-type]
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=wd)  # type: ignore[arg-type]
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, weight_decay=wd)  # type: ignore[arg-type]
    return torch.optim.Adam(params, lr=lr, weight_decay=wd)  # type: ignore[arg-type]


class LossScaler:
    """A hand-written dynamic loss scale for fp16 training: multiply the loss, unscale the gradients, skip the
    step and halve the scale on inf/NaN, double it after `growth_interval` clean steps."""

    def __init__(
        self, *, init_scale: float = 2.0**17, growth_interval: int = 25, sticky: bool = False
    ) -> None:
        self.scale = init_scale
        self.growth_interval = growth_interval
        self.good_steps = 0
        self.overflow = False
        self.sticky = sticky  # the bug: `overflow` is only ever cleared in __init__

    def step(self, opt: torch.optim.Optimizer, params: list[nn.Parameter]) -> bool:
        """Unscale, check, and step `opt` unless a gradient overflowed; return whether it stepped."""
        if not self.sticky:
            self.overflow = False
        for p in params:
            if p.grad is None:
                continue
            p.grad.div_(self.scale)
            if not torch.isfinite(p.grad).all():
                self.overflow = True
        if self.overflow:
            self.scale /= 2
            self.good_steps = 0
            return False
        opt.step()
        self.good_steps += 1
        if self.good_steps % self.growth_interval == 0:
            self.scale *= 2
        return True


def classifier(run: Run) -> None:
    """An MLP classifier on a 5-class tabular problem with the recipe the knobs name."""
    g = torch.Generator().manual_seed(run.seed)
    n_train = run.k("n_train", 4000)
    x, y = data.blobs(g, n_train + 600, spread=run.k("spread", 1.3))
    (x, y), (xv, yv) = (x[600:], y[600:]), (x[:600], y[:600])
    torch.manual_seed(run.seed)
    model = _mlp(x.shape[1], run.k("width", 64), run.k("depth", 2), 5, run.k("dropout", 0.0))
    lr = run.k("lr", 1e-3)
    opt = _optimizer(run.k("opt", "adam"), model.parameters(), lr, run.k("wd", 0.0))
    sched: torch.optim.lr_scheduler.LRScheduler | None = None
    if run.k("sched", None) == "onecycle":
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=run.steps)
    elif run.k("sched", None) == "warm_restarts":
        sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=60, T_mult=2, eta_min=lr / 50)
    hook = run.hook
    hook.register_module(model)
    hook.register_optimizer(opt)
    batch, accum, smoothing = run.k("batch", 64), run.k("accum", 1), run.k("smoothing", 0.0)
    amp = run.k("amp", None)
    scaler = LossScaler(sticky=run.bug == "scaler_never_recovers") if amp == "fp16" else None
    params = list(model.parameters())
    pool = torch.arange(len(x))
    if run.k("curriculum", False):  # easiest rows first: nearest their class centroid
        cent = torch.stack([x[y == c].mean(0) for c in range(5)])
        pool = (x - cent[y]).norm(dim=1).argsort()
    prune_at = (run.steps // 3, 2 * run.steps // 3) if run.k("prune", False) else ()
    masks: dict[nn.Parameter, torch.Tensor] = {}
    best, best_state, bad, patience = math.inf, None, 0, run.k("patience", 0)

    def score() -> float:
        return accuracy(model(xv), yv)

    model.train()
    for step in range(run.steps):
        if run.k("curriculum", False):
            frac = 0.3 if step < run.steps // 4 else 0.6 if step < run.steps // 2 else 1.0
            avail = pool[: int(frac * len(pool))]
        else:
            avail = pool
        if run.bug != "zero_grad_per_epoch" or step % EPOCH_STEPS == 0:
            opt.zero_grad()  # the bug: only at the start of each epoch
        total = 0.0
        for _ in range(accum):
            i = avail[run.indices(len(avail), batch)]
            with torch.autocast(
                "cpu", dtype=torch.bfloat16 if amp == "bf16" else torch.float16, enabled=amp is not None
            ):
                logits = model(x[i])
            loss = F.cross_entropy(logits.float(), y[i], label_smoothing=smoothing) / accum
            (loss * scaler.scale if scaler is not None else loss).backward()
            total += float(loss.detach())
        hook.record_scalar("loss", total)
        if scaler is not None:
            stepped = scaler.step(opt, params)
            if not stepped and scaler.sticky:
                run.took_effect(step)
            hook.record_scalar("loss_scale", scaler.scale)
        else:
            opt.step()
        if sched is not None:
            sched.step()
        for p, m in masks.items():
            p.data.mul_(m)
        if step in prune_at:  # global magnitude pruning of the Linear kernels: 50%, then 75%
            kernels = [m.weight for m in model.modules() if isinstance(m, nn.Linear)]
            flat = torch.cat([w.detach().abs().flatten() for w in kernels])
            cut = flat.kthvalue(int((0.5 if step == prune_at[0] else 0.75) * len(flat))).values
            masks = {w: (w.detach().abs() > cut).float() for w in kernels}
            for w, m in masks.items():
                w.data.mul_(m)
            hook.record_scalar("sparsity", float((flat <= cut).float().mean()), mode="eval")
        if run.validating(step):
            model.eval()
            with torch.no_grad():
                val_logits = model(xv)
                vloss = float(F.cross_entropy(val_logits, yv))
            hook.record_scalar("val_loss", vloss, mode="eval")
            hook.record_scalar("val_acc", accuracy(val_logits, yv), mode="eval")
            if run.bug == "eval_mode_left_on":  # model.train() forgotten after validation
                run.took_effect(step + 1)
            else:
                model.train()
            if patience:
                improved = vloss > best if run.bug == "early_stop_flipped" else vloss < best - 1e-4
                if improved:
                    best, best_state, bad = vloss, copy.deepcopy(model.state_dict()), 0
                else:
                    bad += 1
                if bad >= patience:
                    if run.bug == "early_stop_flipped":
                        run.took_effect(step)
                    if best_state is not None:
                        model.load_state_dict(best_state)
                    run.oracle(run.steps - 1, lambda: in_eval(model, score))
                    break
        if not run.end_step(step, total, model, score):
            break


def focal_detector(run: Run) -> None:
    """A fraud-style detector: 8% positives, one heavy-tailed amount column, a sigmoid focal loss (alpha 0.25,
    gamma 2) written out by hand, batches of 32. Scored by validation AUC."""
    g = torch.Generator().manual_seed(run.seed)
    x, cls = data.blobs(g, 5600, dim=12, k=12)
    y = (cls == 0).float()
    amount = torch.exp(1.2 * torch.randn(len(y), generator=g) + 0.8 * y)
    x = torch.cat([x, ((amount - amount.mean()) / amount.std()).unsqueeze(1)], 1)
    (x, y), (xv, yv) = (x[600:], y[600:]), (x[:600], y[:600])
    torch.manual_seed(run.seed)
    model = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    alpha, gamma = 0.25, 2.0

    def focal(logit: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        p = torch.sigmoid(logit)
        ce = F.binary_cross_entropy_with_logits(logit, t, reduction="none")
        p_t = p * t + (1 - p) * (1 - t)
        if run.bug == "focal_batch_class_weight":  # positives weighted log(1 + n_neg / n_pos) of the batch
            a_t = torch.log1p((1 - t).sum() / t.sum()) * t + (1 - t)
        else:
            a_t = alpha * t + (1 - alpha) * (1 - t)
        return (a_t * (1 - p_t) ** gamma * ce).mean()

    def score() -> float:
        return auc(model(xv).squeeze(1), yv)

    for step in range(run.steps):
        i = run.indices(len(x), run.k("batch", 32))
        opt.zero_grad()
        loss = focal(model(x[i]).squeeze(1), y[i])
        loss.backward()
        if not math.isfinite(float(loss.detach())):
            run.took_effect(step)
        run.hook.record_scalar("loss", loss.detach())
        opt.step()
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_loss", focal(model(xv).squeeze(1), yv), mode="eval")
        if not run.end_step(step, loss.detach(), model, score):
            break
