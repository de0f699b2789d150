"""Representation and transfer scripts of the second blind split: two-tower retrieval, a Siamese embedding
net with a triplet loss, label-smoothed distillation, LoRA adapters, multi-task learning.

`two_tower`: query and document towers, in-batch negatives (symmetric InfoNCE, temperature 0.05), Adam with
warmup then cosine; scored by recall@5 among 300 candidates. `siamese`: a CNN embedding net trained with a
hand-written triplet margin loss under Lion (written out, as its paper gives it); scored by 1-NN accuracy
against a gallery. `distillation`: a wide teacher (trained before the script starts) taught to a narrow
student with temperature 4 and label smoothing, AdamW. `lora`: a regression MLP pretrained on one target,
frozen, with rank-4 adapters and a new head for another target. `multitask`: a shared trunk with a regression
head and a binary head, fixed loss weights or learned uncertainty weights (the loss goes negative). Bugs: the
warmup scheduler never stepped, the triplet distance summed over the batch, the base left trainable with the
adapters' learning rate, the trunk's output detached before the heads, churn labels joined one row off.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc, r2
from benchmarks.detection.blind2 import data


def _tower(d_in: int) -> nn.Module:
    return nn.Sequential(nn.Linear(d_in, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 32))


def two_tower(run: Run) -> None:
    """Dense retrieval: two MLP towers, L2-normalised, in-batch negatives both ways (temperature 0.05); Adam with a
    LambdaLR of 30 warmup steps then cosine, batch 128. Scored by recall@5 over 300 held-out pairs."""
    g = torch.Generator().manual_seed(run.seed)
    q, d = data.query_documents(g, 8000)
    qv, dv = q[:300], d[:300]
    q, d = q[300:], d[300:]
    torch.manual_seed(run.seed)
    model = nn.ModuleDict({"query": _tower(q.shape[1]), "doc": _tower(d.shape[1])})
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 2e-3))
    warmup, steps = 30, run.steps
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: (
            (s + 1) / warmup
            if s < warmup
            else 0.5 * (1 + math.cos(math.pi * (s - warmup) / (steps - warmup)))
        ),
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def embed(qb: torch.Tensor, db: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return F.normalize(model["query"](qb), dim=1), F.normalize(model["doc"](db), dim=1)

    def recall_at_5() -> float:
        eq, ed = embed(qv, dv)
        top = (eq @ ed.T).topk(5, dim=1).indices
        return float((top == torch.arange(len(qv))[:, None]).any(1).float().mean())

    labels = torch.arange(128)
    for step in range(run.steps):
        i = run.indices(len(q), 128)
        eq, ed = embed(q[i], d[i])
        logits = eq @ ed.T / 0.05
        loss = 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if run.bug != "scheduler_never_stepped":
            sched.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_recall5", recall_at_5(), mode="eval")
        if not run.end_step(step, loss.detach(), model, recall_at_5):
            break


class Lion(torch.optim.Optimizer):
    """Lion (sign of an interpolated momentum, decoupled weight decay), written out as in its paper."""

    def __init__(self, params: Iterable[torch.Tensor], lr: float = 1e-4, betas: tuple[float, float] = (0.9, 0.99),
                 weight_decay: float = 0.0) -> None:  # fmt: skip
        super().__init__(params, {"lr": lr, "betas": betas, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                m = state["exp_avg"]
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_((m * b1 + p.grad * (1 - b1)).sign(), alpha=-group["lr"])
                m.mul_(b2).add_(p.grad, alpha=1 - b2)


def siamese(run: Run) -> None:
    """A Siamese CNN embedding shapes wherever and however large they are: random triplets (anchor, another
    image of its class, one of another class), a hand-written triplet margin loss (0.3) on normalised
    embeddings, Lion (lr 3e-4, decay 0.1), batch 64. Scored by 1-NN accuracy against a gallery of 300."""
    g = torch.Generator().manual_seed(run.seed)
    x, _, y = data.objects(g, 4000, size=16)
    gallery, gy, probe, py = x[:300], y[:300], x[300:600], y[300:600]
    x, y = x[600:], y[600:]
    by_class = [torch.nonzero(y == c).squeeze(1) for c in range(3)]
    sizes = torch.tensor([len(rows) for rows in by_class])
    table = torch.stack(
        [F.pad(rows, (0, int(sizes.max()) - len(rows))) for rows in by_class]
    )  # rows of each class
    torch.manual_seed(run.seed)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(32, 16),
    )  # fmt: skip
    opt = Lion(model.parameters(), lr=run.k("lr", 3e-4), weight_decay=0.1)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def embed(batch: torch.Tensor) -> torch.Tensor:
        return F.normalize(model(batch), dim=1)

    def one_nn() -> float:
        near = torch.cdist(embed(probe), embed(gallery)).argmin(1)
        return float((gy[near] == py).float().mean())

    def dist(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if run.bug == "distance_over_batch_dim":
            return (a - b).pow(2).sum(0)  # summed over the batch: one "distance" per embedding coordinate
        return (a - b).pow(2).sum(1)

    for step in range(run.steps):
        anchor = run.indices(len(x), 64)
        cls = y[anchor]
        other = (cls + torch.randint(1, 3, (64,), generator=run.gen)) % 3
        pos = table[cls, (torch.rand(64, generator=run.gen) * sizes[cls]).long()]
        neg = table[other, (torch.rand(64, generator=run.gen) * sizes[other]).long()]
        ea, ep, en = embed(x[anchor]), embed(x[pos]), embed(x[neg])
        loss = F.relu(dist(ea, ep) - dist(ea, en) + 0.3).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("triplet_loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_1nn", one_nn(), mode="eval")
        if not run.end_step(step, loss.detach(), model, one_nn):
            break


def _flat_textures(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = data.textures(g, n, k=4, size=12, noise=1.0)
    return x.flatten(1), y


def distillation(run: Run) -> None:
    """Knowledge distillation on flattened texture images: a wide teacher MLP trained for 300 steps before the
    script starts, a narrow student trained on 0.7 x KL(teacher || student) at temperature 4 (scaled by T^2) +
    0.3 x cross-entropy with label smoothing 0.1; AdamW, batch 64. Scored by the student's validation accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _flat_textures(g, 6000)
    xv, yv = x[:400], y[:400]
    x, y = x[400:], y[400:]
    torch.manual_seed(run.seed)
    teacher = nn.Sequential(nn.Linear(144, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 4))
    t_opt = torch.optim.Adam(teacher.parameters(), lr=1e-3)
    tg = torch.Generator().manual_seed(500 + run.seed)
    for _ in range(300):
        i = torch.randint(0, len(x), (128,), generator=tg)
        t_loss = F.cross_entropy(teacher(x[i]), y[i])
        t_opt.zero_grad()
        t_loss.backward()
        t_opt.step()
    teacher.eval()
    student = nn.Sequential(nn.Linear(144, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.AdamW(student.parameters(), lr=run.k("lr", 3e-3), weight_decay=0.01)
    run.hook.register_module(student)
    run.hook.register_optimizer(opt)
    temp = 4.0
    for step in range(run.steps):
        i = run.indices(len(x), 64)
        with torch.no_grad():
            soft = F.softmax(teacher(x[i]) / temp, -1)
        out = student(x[i])
        kd = F.kl_div(F.log_softmax(out / temp, -1), soft, reduction="batchmean") * temp**2
        loss = 0.7 * kd + 0.3 * F.cross_entropy(out, y[i], label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_acc", accuracy(student(xv), yv), mode="eval")
        if not run.end_step(step, loss.detach(), student, lambda: accuracy(student(xv), yv)):
            break


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update B A (B starts at zero), scaled by alpha / rank."""

    def __init__(self, base: nn.Linear, rank: int = 4, alpha: float = 8.0) -> None:
        super().__init__()
        self.base = base
        self.lora_a = nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        self.scaling = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scaling


def lora(run: Run) -> None:
    """Parameter-efficient transfer: an MLP pretrained (before the script) to predict customers' spend is frozen,
    its hidden layers get rank-4 adapters and a new churn head trains on 600 labelled rows; Adam at 1e-2 for the
    adapters and head, batch 32. Scored by churn AUC on held-out customers."""
    g = torch.Generator().manual_seed(run.seed)
    xp, spend, _ = data.two_task_rows(g, 8000)
    x, _, churn = data.two_task_rows(g, 1400)
    xv, cv = x[600:], churn[600:]
    x, churn = x[:600], churn[:600]
    torch.manual_seed(run.seed)
    l1, l2 = nn.Linear(20, 64), nn.Linear(64, 64)
    pre = nn.Sequential(l1, nn.ReLU(), l2, nn.ReLU(), nn.Linear(64, 1))
    p_opt = torch.optim.Adam(pre.parameters(), lr=2e-3)
    pg = torch.Generator().manual_seed(700 + run.seed)
    for _ in range(400):
        i = torch.randint(0, len(xp), (128,), generator=pg)
        p_loss = F.mse_loss(pre(xp[i]).squeeze(1), spend[i])
        p_opt.zero_grad()
        p_loss.backward()
        p_opt.step()
    if run.bug != "lora_base_left_trainable":  # the bug: the freezing loop was left out
        for p in pre.parameters():
            p.requires_grad_(False)
    model = nn.Sequential(LoRALinear(l1), nn.ReLU(), LoRALinear(l2), nn.ReLU(), nn.Linear(64, 1))
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(trainable, lr=run.k("lr", 1e-2))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(x), 32)
        loss = F.binary_cross_entropy_with_logits(model(x[i]).squeeze(1), churn[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_auc", auc(model(xv).squeeze(1), cv), mode="eval")
        if not run.end_step(step, loss.detach(), model, lambda: auc(model(xv).squeeze(1), cv)):
            break


class TwoHeads(nn.Module):
    def __init__(self, *, detach_trunk: bool = False) -> None:
        super().__init__()
        self.detach_trunk = detach_trunk
        self.trunk = nn.Sequential(nn.Linear(20, 128), nn.GELU(), nn.Linear(128, 64), nn.GELU())
        self.spend = nn.Linear(64, 1)
        self.churn = nn.Linear(64, 1)
        self.log_vars = nn.Parameter(torch.zeros(2))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(x)
        if self.detach_trunk:
            h = h.detach()  # left from a feature-extraction experiment
        return self.spend(h).squeeze(1), self.churn(h).squeeze(1)


def multitask(run: Run) -> None:
    """Multi-task learning of spend (MSE) and churn (BCE) from one trunk: fixed weights 1 and 0.5, or learned
    uncertainty weights (`uncertainty`: exp(-s) L + s per task, which goes negative); Adam, batch 64. Scored by
    the mean of spend R^2 and churn AUC."""
    g = torch.Generator().manual_seed(run.seed)
    x, spend, churn = data.two_task_rows(g, 6000)
    xv, sv, cv = x[:500], spend[:500], churn[:500]
    x, spend, churn = x[500:], spend[500:], churn[500:]
    if (
        run.bug == "labels_off_by_one"
    ):  # the churn table joined one row off (an index reset after a dropped row)
        churn = churn.roll(1)
    torch.manual_seed(run.seed)
    model = TwoHeads(detach_trunk=run.bug == "trunk_detached")
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 1e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    uncertainty = run.k("uncertainty", False)

    def score() -> float:
        ps, pc = model(xv)
        return 0.5 * r2(ps, sv) + 0.5 * auc(pc, cv)

    for step in range(run.steps):
        i = run.indices(len(x), 64)
        ps, pc = model(x[i])
        losses = torch.stack([F.mse_loss(ps, spend[i]), F.binary_cross_entropy_with_logits(pc, churn[i])])
        if uncertainty:
            loss = (torch.exp(-model.log_vars) * losses + model.log_vars).sum()
        else:
            loss = losses[0] + 0.5 * losses[1]
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        run.hook.record_scalar("spend_loss", losses[0].detach())
        run.hook.record_scalar("churn_loss", losses[1].detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_score", score(), mode="eval")
        if not run.end_step(step, loss.detach(), model, score):
            break
