"""Recommender, graph and count scripts of the second blind split: a DLRM-style click model, a graph attention
network, a Poisson regression through a checkpointed residual MLP.

`dlrm`: dense features through a bottom MLP, two multi-hot fields through EmbeddingBags, pairwise dot-product
interactions, a top MLP; Adagrad with a larger rate for the embeddings than for the MLPs; scored by AUC.
`gat`: two graph attention layers (4 heads, then 1) over a citation-like graph, dropout on features and
attention, Adam with weight decay, full batch; scored by validation accuracy. `poisson`: counts with a
log-rate network whose residual blocks run under activation checkpointing, Poisson NLL, Adamax with an
exponential decay per step; scored by the deviance explained. Bugs: the click model's sigmoid fed to
BCEWithLogitsLoss, zero_grad() between backward() and step(), a decay factor above one, the Poisson loss told
its input is a rate (log_input=False) when it is a log-rate.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind2 import data

Field = tuple[torch.Tensor, torch.Tensor]


class DLRM(nn.Module):
    def __init__(self, vocab: tuple[int, int] = (300, 80), d: int = 16, *, sigmoid_out: bool = False) -> None:
        super().__init__()
        self.sigmoid_out = sigmoid_out
        self.bottom = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, d), nn.ReLU())
        self.bags = nn.ModuleList(nn.EmbeddingBag(v, d, mode="mean") for v in vocab)
        self.top = nn.Sequential(nn.Linear(d + 3, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, dense: torch.Tensor, fields: list[Field]) -> torch.Tensor:
        vecs = [self.bottom(dense)] + [bag(ids, offsets) for bag, (ids, offsets) in zip(self.bags, fields)]
        stack = torch.stack(vecs, 1)
        inter = stack @ stack.transpose(1, 2)
        pairs = inter[:, [0, 0, 1], [1, 2, 2]]
        out = self.top(torch.cat([vecs[0], pairs], 1)).squeeze(1)
        return torch.sigmoid(out) if self.sigmoid_out else out  # the bug: a serving sigmoid left in forward()


def _rows(fields: list[Field], rows: torch.Tensor) -> list[Field]:
    """The bags of `rows`, field by field, re-packed as EmbeddingBag input."""
    out = []
    for ids, offsets in fields:
        ends = torch.cat([offsets[1:], torch.tensor([len(ids)])])
        sizes = ends[rows] - offsets[rows]
        pick = torch.repeat_interleave(offsets[rows] - (torch.cumsum(sizes, 0) - sizes), sizes)
        out.append((ids[pick + torch.arange(int(sizes.sum()))], torch.cumsum(sizes, 0) - sizes))
    return out


def dlrm(run: Run) -> None:
    """A DLRM-style click-through model: log1p-scaled dense features, two EmbeddingBag fields, dot interactions;
    BCE with logits; Adagrad at 0.05 for the embeddings and 0.01 for the MLPs, batch 128. Scored by AUC."""
    g = torch.Generator().manual_seed(run.seed)
    dense, fields, clicks = data.click_logs(g, 12000)
    dense = torch.log1p(dense)
    dense = (dense - dense.mean(0)) / dense.std(0)
    val_rows = torch.arange(1000)
    dv, fv, cv = dense[val_rows], _rows(fields, val_rows), clicks[val_rows]
    torch.manual_seed(run.seed)
    model = DLRM(sigmoid_out=run.bug == "sigmoid_then_bce_with_logits")
    opt = torch.optim.Adagrad([{"params": model.bags.parameters(), "lr": 0.05},
                               {"params": [*model.bottom.parameters(), *model.top.parameters()], "lr": 0.01}])  # fmt: skip
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        rows = 1000 + run.indices(len(clicks) - 1000, 128)
        loss = F.binary_cross_entropy_with_logits(model(dense[rows], _rows(fields, rows)), clicks[rows])
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_auc", auc(model(dv, fv), cv), mode="eval")
        if not run.end_step(step, loss.detach(), model, lambda: auc(model(dv, fv), cv)):
            break


class GATLayer(nn.Module):
    def __init__(self, d_in: int, d_out: int, heads: int, dropout: float, *, concat: bool = True) -> None:
        super().__init__()
        self.heads, self.d_out, self.concat = heads, d_out, concat
        self.lin = nn.Linear(d_in, heads * d_out, bias=False)
        self.att_src = nn.Parameter(torch.randn(heads, d_out) * 0.1)
        self.att_dst = nn.Parameter(torch.randn(heads, d_out) * 0.1)
        self.leaky = nn.LeakyReLU(0.2)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        h = self.lin(x).view(len(x), self.heads, self.d_out)
        e = self.leaky((h * self.att_dst).sum(-1)[:, None, :] + (h * self.att_src).sum(-1)[None, :, :])
        e = e.masked_fill(~adj[:, :, None], float("-inf"))
        att = self.drop(torch.softmax(e, dim=1))
        out = torch.einsum("ijh,jhd->ihd", att, h)
        return out.flatten(1) if self.concat else out.mean(1)


class GAT(nn.Module):
    def __init__(self, d_in: int, k: int, dropout: float) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.l1 = GATLayer(d_in, 8, 4, dropout)
        self.act = nn.ELU()
        self.l2 = GATLayer(32, k, 1, dropout, concat=False)

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        return self.l2(self.drop(self.act(self.l1(self.drop(x), adj))), adj)


def gat(run: Run) -> None:
    """A two-layer graph attention network on a citation-like graph (240 nodes, 20% labelled): dropout on inputs
    and attention, Adam (lr 5e-3, weight decay 5e-4), full batch. Scored by accuracy on the validation nodes."""
    g = torch.Generator().manual_seed(run.seed)
    adj, feats, y, train, val = data.citation_graph(g)
    torch.manual_seed(run.seed)
    model = GAT(feats.shape[1], int(y.max()) + 1, run.k("dropout", 0.3))
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 5e-3), weight_decay=5e-4)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        loss = F.cross_entropy(model(feats, adj)[train], y[train])
        if run.bug == "zero_grad_after_backward":
            loss.backward()
            opt.zero_grad()  # meant to go before backward(): the step sees no gradient
        else:
            opt.zero_grad()
            loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_acc", accuracy(model(feats, adj)[val], y[val]), mode="eval")
        if not run.end_step(step, loss.detach(), model, lambda: accuracy(model(feats, adj)[val], y[val])):
            break


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.SiLU(), nn.Linear(2 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.ff(self.norm(x))


class CountNet(nn.Module):
    """A residual MLP for a log-rate; each block runs under activation checkpointing while training."""

    def __init__(self, d_in: int = 12, width: int = 64, depth: int = 6) -> None:
        super().__init__()
        self.inp = nn.Linear(d_in, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.out = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for block in self.blocks:
            h = checkpoint(block, h, use_reentrant=False) if self.training else block(h)
        return self.out(h).squeeze(1)


def _deviance(log_rate: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    mu = log_rate.exp()
    term = torch.where(y > 0, y * torch.log(y.clamp(min=1) / mu), torch.zeros_like(y))
    return 2 * (term - (y - mu)).sum()


def poisson(run: Run) -> None:
    """Event counts: a checkpointed residual MLP predicting the log-rate, Poisson NLL, Adamax with ExponentialLR
    (0.995 per step), batch 128. Scored by the deviance explained on held-out rows (clipped to [0, 1])."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.counts(g, 8000)
    xv, yv = x[:800], y[:800]
    x, y = x[800:], y[800:]
    torch.manual_seed(run.seed)
    model = CountNet()
    opt = torch.optim.Adamax(model.parameters(), lr=run.k("lr", 2e-3))
    gamma = 1.05 if run.bug == "decay_factor_above_one" else 0.995  # 1.05 typed for 0.995
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=gamma)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    null = _deviance(torch.full_like(yv, float(torch.log(y.mean()))), yv)

    def explained() -> float:
        dev = _deviance(model(xv), yv)
        return max(0.0, min(1.0, float(1 - dev / null))) if torch.isfinite(dev) else 0.0

    for step in range(run.steps):
        i = run.indices(len(x), 128)
        # the bug: log_input=False, as if the network gave the rate itself
        loss = F.poisson_nll_loss(model(x[i]), y[i], log_input=run.bug != "poisson_log_input_false")
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_deviance_explained", explained(), mode="eval")
        if not run.end_step(step, loss.detach(), model, explained):
            break
