"""Learning-setup scripts of the tenth blind split: MAML on few-shot sine regression, and federated averaging of
local models over clients whose data are not identically distributed.

`maml`: each task is a sine wave (amplitude 0.5-4, phase 0-pi) on [-5, 5]; a 1-40-40-1 tanh MLP written
functionally is adapted by one (or `inner_steps`) gradient step of rate 0.05 on 10 support points, and the meta
step (Adam by default) follows the adapted network's loss on 10 query points through the inner step (second
order), over 4 tasks a step; scored by the R^2 on held-out tasks after the same adaptation. `fedavg`: a 20-feature
ten-class problem (a teacher network's labels) split over 20 clients that each hold mostly two classes; every
round, 5 clients copy the global model, take 5 local SGD steps on their own data, and the server moves the global
model by the sample-weighted mean of their changes (through a server optimizer: SGD at rate 1, which is plain
federated averaging, server momentum, or Adam); scored by the global model's held-out accuracy. Bugs: the inner
step's parameters detached from the meta-parameters, the query loss computed with the meta-parameters instead of
the adapted ones (which trains a plain multi-task regressor), the server's pseudo-gradient written as new minus old (so the server steps
away from the clients' models), the clients' changes measured from the global model of the previous round
(stale), the local models never reset to the global one.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.torch_real.loop import make_optimizer


def _sine_tasks(g: torch.Generator, n: int, points: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs float[n, points, 1] and outputs float[n, points, 1] of `n` sine tasks."""
    amp = 0.5 + 3.5 * torch.rand(n, 1, 1, generator=g)
    phase = math.pi * torch.rand(n, 1, 1, generator=g)
    x = 10 * torch.rand(n, points, 1, generator=g) - 5
    return x, amp * torch.sin(x + phase)


class SineNet(nn.Module):
    """A 1-`width`-`width`-1 tanh MLP that also runs with given (adapted) parameters."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(1, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1)
        )

    def forward(self, x: torch.Tensor, params: list[torch.Tensor] | None = None) -> torch.Tensor:
        if params is None:
            return self.net(x)
        w1, b1, w2, b2, w3, b3 = params
        return F.linear(torch.tanh(F.linear(torch.tanh(F.linear(x, w1, b1)), w2, b2)), w3, b3)


def maml(run: Run) -> None:
    """MAML: width `width` (40), `inner_steps` (1) inner steps at 0.05, meta optimizer `opt` (Adam; or NAdam,
    Adamax, RAdam) at `lr` (3e-3), 4 tasks a meta step. Scored by the adapted R^2 on held-out tasks."""
    g = torch.Generator().manual_seed(run.seed)
    vx, vy = _sine_tasks(g, 100, 20)
    torch.manual_seed(run.seed)
    model = SineNet(run.k("width", 40))
    name = run.k("opt", "adam")
    opt = make_optimizer(name, model.parameters(), run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    inner_steps, inner_lr = run.k("inner_steps", 1), 0.05

    def adapt(
        params: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor, *, train: bool
    ) -> list[torch.Tensor]:
        for _ in range(inner_steps):
            if run.bug == "inner_parameters_detached" and train:
                params = [p.detach().requires_grad_() for p in params]
            grads = torch.autograd.grad(F.mse_loss(model(x, params), y), params, create_graph=train)
            params = [p - inner_lr * gr for p, gr in zip(params, grads)]
        return params

    def adapted_r2() -> float:
        with torch.enable_grad():
            fits = [
                adapt(list(model.parameters()), vx[t, :10], vy[t, :10], train=False) for t in range(len(vx))
            ]
        pred = torch.stack([model(vx[t, 10:], p) for t, p in enumerate(fits)])
        return r2(pred.detach(), vy[:, 10:])

    for step in range(run.steps):
        x, y = _sine_tasks(run.gen, 4, 20)
        loss = torch.zeros(())
        for t in range(4):
            params = adapt(list(model.parameters()), x[t, :10], y[t, :10], train=True)
            query = (
                model(x[t, 10:]) if run.bug == "query_loss_on_meta_parameters" else model(x[t, 10:], params)
            )
            loss = loss + F.mse_loss(query, y[t, 10:]) / 4
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_adapted_r2", adapted_r2):
            break


def _clients(seed: int) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor, torch.Tensor]:
    """Twenty clients' data (each mostly two of ten classes, 40-400 examples) and a held-out set, labelled by a
    fixed random teacher network."""
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(20, 32, generator=g), torch.randn(32, 10, generator=g)

    def label(x: torch.Tensor) -> torch.Tensor:
        return (torch.tanh(x @ teacher[0]) @ teacher[1]).argmax(1)

    pool = torch.randn(40000, 20, generator=g)
    classes = label(pool)
    clients = []
    for c in range(20):
        size = int(torch.randint(40, 401, (1,), generator=g))
        own = torch.tensor([c % 10, (c * 3 + 1) % 10])
        mostly = torch.isin(classes, own)
        rows = torch.where(mostly)[0][torch.randperm(int(mostly.sum()), generator=g)[: int(0.8 * size)]]
        rest = torch.randperm(len(pool), generator=g)[: size - len(rows)]
        idx = torch.cat([rows, rest])
        clients.append((pool[idx], classes[idx]))
    val = torch.randn(2000, 20, generator=g)
    return clients, val, label(val)


def fedavg(run: Run) -> None:
    """Federated averaging: a 20-`width`-10 MLP (`width` 64), 5 of 20 clients a round, 5 local SGD steps of batch 16
    at `local_lr` (0.05); the server optimizer `opt` (SGD at 1.0: plain averaging; or momentum SGD at `lr`, Adam at
    `lr`) steps on the mean change. Scored by the global model's held-out accuracy."""
    clients, xv, yv = _clients(run.seed)
    torch.manual_seed(run.seed)
    width = run.k("width", 64)

    def mlp() -> nn.Module:
        return nn.Sequential(
            nn.Linear(20, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)
        )

    model = mlp()
    name = run.k("opt", "sgd")
    opt = make_optimizer(name, model.parameters(), run.k("lr", 1.0))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    local_lr = run.k("local_lr", 0.05)
    locals_: dict[int, nn.Module] = {}
    previous = [p.detach().clone() for p in model.parameters()]
    for step in range(run.steps):
        chosen = torch.randperm(20, generator=run.gen)[:5].tolist()
        changes, weights, losses = [], [], []
        start = [p.detach().clone() for p in model.parameters()]
        for c in chosen:
            x, y = clients[c]
            if run.bug == "local_models_never_reset" and c in locals_:
                local = locals_[c]
            else:
                local = mlp()
                local.load_state_dict(model.state_dict())
            locals_[c] = local
            local_opt = torch.optim.SGD(local.parameters(), lr=local_lr)
            for _ in range(5):
                i = torch.randint(0, len(y), (16,), generator=run.gen)
                local_loss = F.cross_entropy(local(x[i]), y[i])
                local_opt.zero_grad()
                local_loss.backward()
                local_opt.step()
                losses.append(float(local_loss.detach()))
            base = previous if run.bug == "updates_taken_from_stale_global" else start
            if run.bug == "pseudo_gradient_sign_reversed":
                changes.append([p.detach() - b for b, p in zip(base, local.parameters())])
            else:
                changes.append([b - p.detach() for b, p in zip(base, local.parameters())])
            weights.append(float(len(y)))
        total = sum(weights)
        opt.zero_grad()
        for k, p in enumerate(model.parameters()):
            p.grad = sum(w / total * ch[k] for w, ch in zip(weights, changes))
        opt.step()
        previous = start
        loss = torch.tensor(sum(losses) / len(losses))
        if not close_step(run, step, loss, model, "val_acc", lambda: accuracy(model(xv), yv)):
            break
