"""Tabular, regression, recommender and graph scripts of the blind split.

`tabular_bn`: raw-unit numeric columns normalised by a BatchNorm, categorical embeddings, SGD with an
epoch StepLR. `gaussian_nll`: a mean and a variance head, the negative log-likelihood written out (it goes
negative). `robust_regression`: Huber loss on Student-t noise. `recommender`: matrix factorisation with
biases, dense embeddings and Adam or sparse embeddings and SparseAdam. `graph`: a two-layer GCN on a
community graph, full batch. Bugs: the epoch scheduler stepped every batch, eval mode left on after
validation (BatchNorm frozen on its early running statistics), the variance head used as a
variance without making it positive, a [B, 1] prediction against a [B] target, Adam with eps=1.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind import data
from benchmarks.detection.blind.harness import Run, accuracy, auc, r2


class TabularNet(nn.Module):
    def __init__(self, k: int = 3) -> None:
        super().__init__()
        self.num_norm = nn.BatchNorm1d(10)
        self.emb_a, self.emb_b = nn.Embedding(8, 4), nn.Embedding(12, 4)
        self.body = nn.Sequential(nn.Linear(18, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 64),
                                  nn.BatchNorm1d(64), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(64, k)

    def forward(self, num: torch.Tensor, cats: torch.Tensor) -> torch.Tensor:
        h = torch.cat([self.num_norm(num), self.emb_a(cats[:, 0]), self.emb_b(cats[:, 1])], 1)
        return self.head(self.body(h))


def tabular_bn(run: Run) -> None:
    """A tabular classifier (3 classes) on raw numeric columns and two categorical ones; SGD with momentum,
    StepLR halving the rate every 2 epochs."""
    g = torch.Generator().manual_seed(run.seed)
    num, cats, y = data.tabular(g, 4500)
    num, cats, y, numv, catsv, yv = num[500:], cats[500:], y[500:], num[:500], cats[:500], y[:500]
    torch.manual_seed(run.seed)
    model = TabularNet()
    opt = torch.optim.SGD(model.parameters(), lr=run.k("lr", 0.05), momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    bs = 128
    epoch = len(y) // bs

    def score() -> float:
        return accuracy(model(numv, catsv), yv)

    for step in range(run.steps):
        i = run.indices(len(y), bs)
        loss = F.cross_entropy(model(num[i], cats[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if run.bug == "epoch_scheduler_per_batch" or (step + 1) % epoch == 0:  # the bug: every batch
            sched.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            model.eval()
            with torch.no_grad():
                run.hook.record_scalar("val_loss", F.cross_entropy(model(numv, catsv), yv), mode="eval")
            if run.bug == "eval_mode_left_on":  # model.train() forgotten after validation
                run.took_effect(step + 1)
            else:
                model.train()
        if not run.end_step(step, loss.detach(), model, score):
            break


def _regression_data(run: Run, noise: str) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(run.seed)
    x, y, f = data.regression(g, 4500, noise=noise)
    return x[500:], y[500:], x[:500], f[:500]


def gaussian_nll(run: Run) -> None:
    """Heteroscedastic regression: the network predicts a mean and a log-variance; loss 0.5 (log var +
    (y - mu)^2 / var), which turns negative as the variance shrinks. Scored by R^2 of the mean on clean targets."""
    x, y, xv, fv = _regression_data(run, "hetero")
    torch.manual_seed(run.seed)
    model = nn.Sequential(nn.Linear(6, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 2))
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 2e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def nll(out: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        mu, raw = out.unbind(1)
        var = raw if run.bug == "variance_head_not_positive" else raw.exp()
        return (0.5 * (torch.log(var) + (t - mu) ** 2 / var)).mean()

    for step in range(run.steps):
        i = run.indices(len(x), 64)
        loss = nll(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_mae", (model(xv)[:, 0] - fv).abs().mean(), mode="eval")
        if not run.end_step(step, loss.detach(), model, lambda: r2(model(xv)[:, 0], fv)):
            break


def robust_regression(run: Run) -> None:
    """Regression under Student-t noise with a Huber loss (delta 1); SGD with momentum and a cosine schedule."""
    x, y, xv, fv = _regression_data(run, "heavy")
    torch.manual_seed(run.seed)
    model = nn.Sequential(nn.Linear(6, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=run.k("lr", 0.02), momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=run.steps)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(x), 64)
        pred = model(x[i])  # [B, 1]
        if run.bug == "prediction_target_broadcast":
            loss = F.huber_loss(pred, y[i])  # [B, 1] against [B]: broadcast to [B, B]
        else:
            loss = F.huber_loss(pred.squeeze(1), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_mae", (model(xv).squeeze(1) - fv).abs().mean(), mode="eval")
        if not run.end_step(step, loss.detach(), model, lambda: r2(model(xv).squeeze(1), fv)):
            break


class MF(nn.Module):
    def __init__(self, users: int = 200, items: int = 120, d: int = 16, sparse: bool = False) -> None:
        super().__init__()
        self.user = nn.Embedding(users, d, sparse=sparse)
        self.item = nn.Embedding(items, d, sparse=sparse)
        self.user_bias = nn.Embedding(users, 1, sparse=sparse)
        self.item_bias = nn.Embedding(items, 1, sparse=sparse)
        for e in (self.user, self.item):
            nn.init.normal_(e.weight, std=0.1)
        for e in (self.user_bias, self.item_bias):
            nn.init.zeros_(e.weight)

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        u, i = pairs[:, 0], pairs[:, 1]
        dot = (self.user(u) * self.item(i)).sum(1)
        return dot + self.user_bias(u).squeeze(1) + self.item_bias(i).squeeze(1)


def recommender(run: Run) -> None:
    """Matrix factorisation with biases on implicit feedback, BCE with logits; dense embeddings with Adam and
    weight decay, or sparse embeddings with SparseAdam (`sparse`). Scored by validation AUC."""
    g = torch.Generator().manual_seed(run.seed)
    pairs, clicks = data.feedback(g, 22000)
    pairs, clicks, pv, cv = pairs[2000:], clicks[2000:], pairs[:2000], clicks[:2000]
    torch.manual_seed(run.seed)
    sparse = run.k("sparse", False)
    model = MF(sparse=sparse)
    if sparse:
        opt: torch.optim.Optimizer = torch.optim.SparseAdam(list(model.parameters()), lr=run.k("lr", 1e-2))
    else:
        opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 1e-2), weight_decay=1e-5)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(pairs), 256)
        loss = F.binary_cross_entropy_with_logits(model(pairs[i]), clicks[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_auc", auc(model(pv), cv), mode="eval", collection="metrics")
        if not run.end_step(step, loss.detach(), model, lambda: auc(model(pv), cv)):
            break


class GCN(nn.Module):
    def __init__(self, d_in: int = 16, hidden: int = 32, k: int = 4) -> None:
        super().__init__()
        self.lin1, self.lin2 = nn.Linear(d_in, hidden), nn.Linear(hidden, k)
        self.drop = nn.Dropout(0.5)

    def forward(self, adj: torch.Tensor, feats: torch.Tensor) -> torch.Tensor:
        h = F.relu(adj @ self.lin1(self.drop(feats)))
        return adj @ self.lin2(self.drop(h))


def graph(run: Run) -> None:
    """Node classification with a two-layer GCN (symmetric-normalised adjacency with self loops), full batch,
    Adam with weight decay; labels on 30% of the nodes."""
    g = torch.Generator().manual_seed(run.seed)
    adj, feats, y, train, val = data.community_graph(g)
    a = adj + torch.eye(len(adj))
    d = a.sum(1).rsqrt()
    a_hat = d[:, None] * a * d[None, :]
    torch.manual_seed(run.seed)
    model = GCN()
    eps = 1.0 if run.bug == "adam_eps_one" else 1e-8
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 1e-2), weight_decay=5e-4, eps=eps)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def score() -> float:
        return accuracy(model(a_hat, feats)[val], y[val])

    for step in range(run.steps):
        out = model(a_hat, feats)
        loss = F.cross_entropy(out[train], y[train])
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        run.hook.record_scalar("train_acc", accuracy(out[train].detach(), y[train]))
        if run.validating(step):
            model.eval()
            with torch.no_grad():
                run.hook.record_scalar(
                    "val_loss", F.cross_entropy(model(a_hat, feats)[val], y[val]), mode="eval"
                )
            model.train()
        if not run.end_step(step, loss.detach(), model, score):
            break
