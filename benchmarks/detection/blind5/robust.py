"""Tabular and meta-learning scripts of the fifth blind split: co-teaching under label noise, a two-task network
with learned uncertainty weights, a conditional neural process, a wide-and-deep click-through model on hashed
features.

`coteaching`: two MLPs each pick the small-loss share of a noisy batch for the other one (the share kept falls
from 1 to 1 - the noise rate over the first steps); scored by the first network's accuracy on clean held-out
labels. `multitask`: a shared trunk, a regression and a classification head, each loss weighted by a learned
log-variance s as exp(-s) L + s; scored by the mean of the held-out R^2 and accuracy. `neural_process`: a context
encoder averaged over context points and a decoder giving a mean and a variance at target points (Gaussian NLL);
scored by R^2 of the predicted mean on held-out functions. `ctr`: hashed categorical ids into a wide linear part
and a deep part over embeddings, numeric fields standardised with the training set's statistics; scored by held-out
AUC. Bugs: the large-loss samples exchanged, exp(s) where exp(-s) is meant, the variance head without its softplus,
the hash taken modulo 1, the numeric fields standardised per batch at inference.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind5 import data


def mlp(inp: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(inp, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, out)
    )


def coteaching(run: Run) -> None:
    """Co-teaching: two MLPs on labels with `noise` (0.4) flipped; each keeps its small-loss share of the batch
    (1 - noise after a 60-step ramp) and the other network trains on it; Adam (lr `lr`, 1e-3), batch `batch`
    (128). Scored by the first network's accuracy on 500 held-out clean labels."""
    g = torch.Generator().manual_seed(run.seed)
    noise = run.k("noise", 0.4)
    x, clean, noisy = data.noisy_labels(g, 3500, noise=noise)
    xv, yv, x, y = x[:500], clean[:500], x[500:], noisy[500:]
    torch.manual_seed(run.seed)
    net1, net2 = mlp(20, 64, 6), mlp(20, 64, 6)
    model = nn.ModuleList([net1, net2])
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 1e-3))
    batch = run.k("batch", 128)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(y), batch)
        out1, out2 = net1(x[i]), net2(x[i])
        l1 = F.cross_entropy(out1, y[i], reduction="none")
        l2 = F.cross_entropy(out2, y[i], reduction="none")
        keep = int(batch * (1 - noise * min(1.0, step / 60)))
        descending = run.bug == "large_loss_samples_exchanged"
        pick1 = l1.detach().argsort(descending=descending)[:keep]
        pick2 = l2.detach().argsort(descending=descending)[:keep]
        loss = l1[pick2].mean() + l2[pick1].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", lambda: accuracy(net1(xv), yv)):
            break


class TwoTask(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.reg = nn.Linear(64, 1)
        self.cls = nn.Linear(64, 3)
        self.log_vars = nn.Parameter(torch.zeros(2))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(x)
        return self.reg(h)[:, 0], self.cls(h)


def multitask(run: Run) -> None:
    """Two tasks on one trunk (a noisy regression target of scale 20, a 3-class label) weighted by learned
    log-variances (Kendall et al.): exp(-s) L + s per task; Adam (lr `lr`, 2e-3) with gradient clipping by global
    norm `clip` (none), batch 64. Scored by the mean of held-out R^2 and accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, reg, cls = data.two_tasks(g, 2500)
    xv, rv, cv, x, reg, cls = x[:500], reg[:500], cls[:500], x[500:], reg[500:], cls[500:]
    torch.manual_seed(run.seed)
    model = TwoTask()
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 2e-3))
    clip = run.k("clip", None)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def score() -> float:
        pr, pc = model(xv)
        return (r2(pr, rv) + accuracy(pc, cv)) / 2

    for step in range(run.steps):
        i = run.indices(len(x), 64)
        pr, pc = model(x[i])
        losses = torch.stack([F.mse_loss(pr, reg[i]), F.cross_entropy(pc, cls[i])])
        s = model.log_vars
        precision = torch.exp(s) if run.bug == "uncertainty_weight_exp_plus" else torch.exp(-s)
        loss = (precision * losses + s).sum()
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if not close_step(run, step, loss, model, "val_mean_score", score):
            break


class NeuralProcess(nn.Module):
    def __init__(self, d: int = 64, *, softplus: bool = True) -> None:
        super().__init__()
        self.enc = mlp(2, d, d)
        self.dec = mlp(d + 1, d, 2)
        self.softplus = softplus

    def forward(
        self, xc: torch.Tensor, yc: torch.Tensor, xt: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        r = self.enc(torch.cat([xc, yc], -1)).mean(1, keepdim=True).expand(-1, xt.shape[1], -1)
        out = self.dec(torch.cat([r, xt], -1))
        mean, raw = out[..., :1], out[..., 1:]
        var = 0.01 + F.softplus(raw) if self.softplus else raw  # the bug: "the head predicts the variance"
        return mean, var


def neural_process(run: Run) -> None:
    """A conditional neural process on 1-D functions: 10 context points, 30 targets, Gaussian NLL with a predicted
    variance; Adam (lr `lr`, 1e-3), 16 functions a step. Scored by R^2 of the mean on 200 held-out functions."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.functions(g, 2200)
    xv, yv, x, y = x[:200], y[:200], x[200:], y[200:]
    torch.manual_seed(run.seed)
    model = NeuralProcess(softplus=run.bug != "variance_without_softplus")
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 1e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(x), 16)
        mean, var = model(x[i, :10], y[i, :10], x[i, 10:])
        loss = (0.5 * torch.log(var) + (y[i, 10:] - mean) ** 2 / (2 * var)).mean()
        if run.bug and not torch.isfinite(loss):
            run.took_effect(step)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2",
                          lambda: r2(model(xv[:, :10], yv[:, :10], xv[:, 10:])[0], yv[:, 10:])):  # fmt: skip
            break


class WideDeep(nn.Module):
    def __init__(self, buckets: int, d: int = 8) -> None:
        super().__init__()
        self.wide = nn.Embedding(buckets, 1)
        self.deep_emb = nn.Embedding(buckets, d)
        self.deep = nn.Sequential(
            nn.Linear(5 * d + 3, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1)
        )
        self.bias = nn.Parameter(torch.zeros(1))
        nn.init.zeros_(self.wide.weight)

    def forward(self, ids: torch.Tensor, num: torch.Tensor) -> torch.Tensor:
        wide = self.wide(ids).sum((1, 2))
        deep = self.deep(torch.cat([self.deep_emb(ids).flatten(1), num], 1))[:, 0]
        return wide + deep + self.bias


def ctr(run: Run) -> None:
    """A wide-and-deep click-through model: each (field, value) hashed into `buckets` (1000) shared buckets, a wide
    linear part and a deep MLP over 8-d embeddings and the standardised numeric fields; BCE with logits; Adagrad
    (lr `lr`, 0.05) or Adam, batch `batch` (256). Scored by AUC on 2000 held-out impressions."""
    g = torch.Generator().manual_seed(run.seed)
    cat, num, click = data.clicks(g, 12000)
    cv, nv, yv, cat, num, click = cat[:2000], num[:2000], click[:2000], cat[2000:], num[2000:], click[2000:]
    # the bug: the bucket count read from a config entry written as a modulus divisor of 1
    buckets = 1 if run.bug == "hash_modulo_one" else run.k("buckets", 1000)

    def hashed(c: torch.Tensor) -> torch.Tensor:
        return (c * 7919 + torch.arange(c.shape[1]) * 1_000_003) % buckets

    mu, sd = num.mean(0), num.std(0)
    torch.manual_seed(run.seed)
    model = WideDeep(run.k("buckets", 1000))
    if run.k("opt", "adagrad") == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(model.parameters(), lr=run.k("lr", 1e-3))
    else:
        opt = torch.optim.Adagrad(model.parameters(), lr=run.k("lr", 0.05))
    batch = run.k("batch", 256)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def predict() -> torch.Tensor:
        if run.bug == "standardised_per_batch_at_inference":  # served 40 impressions at a time
            return torch.cat(
                [model(hashed(c), (n - n.mean(0)) / n.std(0)) for c, n in zip(cv.split(40), nv.split(40))]
            )
        return model(hashed(cv), (nv - mu) / sd)

    for step in range(run.steps):
        i = run.indices(len(click), batch)
        loss = F.binary_cross_entropy_with_logits(model(hashed(cat[i]), (num[i] - mu) / sd), click[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", lambda: auc(predict(), yv)):
            break
