"""Structured-input scripts of the fourth blind split: a graph isomorphism network classifying small graphs from
their dense adjacency, a multi-head attention-pooling classifier of padded sets, a hypernetwork that generates a
small regression network's weights from a task descriptor.

`gin`: GIN layers ((1 + eps) h + A h through an MLP) over zero-padded dense adjacencies, a masked sum readout of
every layer; scored by held-out accuracy. `attention_pool`: a per-element MLP, one learned query attending over the
real elements (nn.MultiheadAttention with a key padding mask), a linear classifier; scored by accuracy.
`hypernet`: an MLP maps a sine task's descriptor to the weights of a 1-32-1 tanh network; scored by R^2 on
held-out tasks. Bugs: padded nodes summed into the readout, the optimizer built over a checkpoint copy, the query
kept as a plain tensor, the generated weights detached.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind4 import data


class GIN(nn.Module):
    def __init__(
        self, hidden: int = 32, layers: int = 3, classes: int = 3, *, mask_readout: bool = True
    ) -> None:
        super().__init__()
        self.inp = nn.Linear(1, hidden)
        self.eps = nn.Parameter(torch.zeros(layers))
        self.mlps = nn.ModuleList(
            nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
            for _ in range(layers)
        )
        self.head = nn.Linear(hidden * layers, classes)
        self.mask_readout = mask_readout

    def forward(self, adj: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.inp(mask[..., None].float())
        readouts = []
        for k, mlp in enumerate(self.mlps):
            h = mlp((1 + self.eps[k]) * h + adj @ h)
            # the bug sums the padding nodes' features too (the MLPs' biases make them non-zero)
            readouts.append((h * mask[..., None]).sum(1) if self.mask_readout else h.sum(1))
        return self.head(torch.cat(readouts, -1) / 10)


def gin(run: Run) -> None:
    """A graph isomorphism network (3 layers, sum aggregation over the dense adjacency, learned eps) classifying
    graphs of 8-16 nodes into three structural families; Adam (lr `lr`, 5e-3), batch `batch` (32). Scored by
    accuracy on 300 held-out graphs."""
    g = torch.Generator().manual_seed(run.seed)
    adj, mask, y = data.graphs(g, 1500)
    av, mv, yv, adj, mask, y = adj[:300], mask[:300], y[:300], adj[300:], mask[300:], y[300:]
    torch.manual_seed(run.seed)
    model = GIN(mask_readout=run.bug != "padded_nodes_in_readout")
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 5e-3))
    batch = run.k("batch", 32)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(y), batch)
        loss = F.cross_entropy(model(adj[i], mask[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", lambda: accuracy(model(av, mv), yv)):
            break


class AttentionPool(nn.Module):
    def __init__(
        self, dim: int = 16, d: int = 32, heads: int = 4, classes: int = 4, *, plain_query: bool = False
    ) -> None:
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(dim, d), nn.ReLU(), nn.Linear(d, d))
        # the bug keeps the query as a plain tensor: not a parameter, so it is never trained
        self.query = torch.randn(1, 1, d) if plain_query else nn.Parameter(torch.randn(1, 1, d))
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.head = nn.Linear(d, classes)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        e = self.embed(x)
        pooled, _ = self.attn(self.query.expand(len(x), -1, -1), e, e, key_padding_mask=~mask)
        return self.head(pooled[:, 0])


def attention_pool(run: Run) -> None:
    """A set classifier with multi-head attention pooling (one learned query over the real elements of padded
    sets of 6-16 vectors); Adam (lr 2e-3), batch 64, `heads` heads (4). The script keeps a copy of the best model
    by validation accuracy. Scored by accuracy on 400 held-out sets."""
    g = torch.Generator().manual_seed(run.seed)
    x, mask, y = data.signal_sets(g, 3400)
    xv, mv, yv, x, mask, y = x[:400], mask[:400], y[:400], x[400:], mask[400:], y[400:]
    torch.manual_seed(run.seed)
    model = AttentionPool(heads=run.k("heads", 4), plain_query=run.bug == "query_not_a_parameter")
    best, best_acc = copy.deepcopy(model), 0.0
    # the bug: the optimizer built over the checkpoint copy's parameters, one line after the copy
    params = best.parameters() if run.bug == "optimizer_on_best_copy" else model.parameters()
    opt = torch.optim.Adam(params, lr=2e-3)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def val_accuracy() -> float:
        return accuracy(model(xv, mv), yv)

    for step in range(run.steps):
        i = run.indices(len(y), 64)
        loss = F.cross_entropy(model(x[i], mask[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if run.validating(step):
            model.eval()
            with torch.no_grad():
                acc = val_accuracy()
            model.train()
            if acc > best_acc:
                best_acc = acc
                best.load_state_dict(model.state_dict())
        if not close_step(run, step, loss, model, "val_accuracy", val_accuracy):
            break


class HyperNet(nn.Module):
    """Generates the weights of a 1-32-1 tanh network (all but its output bias, which is learned directly)."""

    def __init__(self, hidden: int = 32, *, detach: bool = False) -> None:
        super().__init__()
        self.hidden = hidden
        self.gen = nn.Sequential(
            nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3 * hidden)
        )
        self.out_bias = nn.Parameter(torch.zeros(1))
        self.detach = detach

    def forward(self, task: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        w = self.gen(task)
        if self.detach:
            w = w.detach()  # the bug: "the generated weights are data for the target network"
        w1, b1, w2 = w.split(self.hidden, -1)
        h = torch.tanh(x * w1[:, None, :] + b1[:, None, :])  # [tasks, points, hidden]
        return (h * w2[:, None, :]).sum(-1, keepdim=True) / self.hidden**0.5 + self.out_bias


def hypernet(run: Run) -> None:
    """A hypernetwork for sine regression tasks: task descriptor -> weights of a small tanh network, MSE over 16
    tasks x 20 points a step; Adam (lr 1e-3) or RMSprop (lr 5e-4). Scored by R^2 on 100 held-out tasks."""
    g = torch.Generator().manual_seed(run.seed)
    task, x, y = data.sine_tasks(g, 1100, 40)
    tv, xv, yv, task, x, y = task[:100], x[:100], y[:100], task[100:], x[100:], y[100:]
    torch.manual_seed(run.seed)
    model = HyperNet(detach=run.bug == "generated_weights_detached")
    if run.k("opt", "adam") == "rmsprop":
        opt: torch.optim.Optimizer = torch.optim.RMSprop(model.parameters(), lr=5e-4)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(task), 16)
        pts = torch.randint(0, x.shape[1], (20,), generator=run.gen)
        loss = F.mse_loss(model(task[i], x[i][:, pts]), y[i][:, pts])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(model(tv, xv), yv)):
            break
