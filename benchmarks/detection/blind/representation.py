"""Representation scripts of the blind split: contrastive pre-training, a linear probe on a frozen
pretrained encoder, gradual unfreezing, and knowledge distillation.

The "pretrained" encoder and the teacher are trained by the script itself on a related task before the
hook sees anything (standing in for a downloaded checkpoint). Bug: layers unfrozen halfway through a
fine-tuning run whose optimizer was built only over the parameters trainable at the start.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind import data
from benchmarks.detection.blind.harness import Run, accuracy


def _split(run: Run, n: int = 4000) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.blobs(g, n + 600)
    return x[600:], y[600:], x[:600], y[:600]


def _pretrain(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, steps: int, seed: int) -> None:
    """Train `model` on (x, y) with Adam, outside the monitored run (the checkpoint it would have loaded)."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        i = torch.randint(0, len(x), (128,), generator=g)
        opt.zero_grad()
        F.cross_entropy(model(x[i]), y[i]).backward()
        opt.step()
    model.eval()


def _encoder(width: int = 64) -> nn.Sequential:
    return nn.Sequential(nn.Linear(20, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU())


def contrastive(run: Run) -> None:
    """SimCLR-style InfoNCE on two noisy, feature-masked views; SGD with momentum and a cosine schedule.
    Scored by nearest-class-centroid accuracy of the embeddings on validation rows."""
    x, y, xv, yv = _split(run)
    g = run.gen
    torch.manual_seed(run.seed)
    encoder = nn.Sequential(_encoder(), nn.Linear(64, 32))
    opt = torch.optim.SGD(encoder.parameters(), lr=run.k("lr", 0.05), momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=run.steps)
    run.hook.register_module(encoder)
    run.hook.register_optimizer(opt)
    tau = run.k("temperature", 0.2)

    def view(xb: torch.Tensor) -> torch.Tensor:
        keep = (torch.rand(xb.shape, generator=g) > 0.2).float()
        return xb * keep + 0.3 * torch.randn(xb.shape, generator=g)

    def score() -> float:
        e, ev = F.normalize(encoder(x[:1000]), dim=1), F.normalize(encoder(xv), dim=1)
        cent = F.normalize(torch.stack([e[y[:1000] == c].mean(0) for c in range(5)]), dim=1)
        return accuracy(ev @ cent.T, yv)

    for step in range(run.steps):
        xb = x[run.indices(len(x), 128)]
        z1, z2 = F.normalize(encoder(view(xb)), dim=1), F.normalize(encoder(view(xb)), dim=1)
        logits = z1 @ z2.T / tau
        labels = torch.arange(len(xb))
        loss = 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        run.hook.record_scalar("loss", loss.detach())
        run.hook.record_scalar("pos_sim", (z1 * z2).sum(1).mean().detach())
        if not run.end_step(step, loss.detach(), encoder, score):
            break


class Probe(nn.Module):
    def __init__(self, encoder: nn.Module, k: int = 5, width: int = 64) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(width, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


def finetune(run: Run) -> None:
    """Fine-tune a pretrained encoder with a new head. `unfreeze_at` None: a linear probe (encoder frozen for
    good, SGD on the head); else the encoder is unfrozen at that step (gradual unfreezing, AdamW)."""
    x, y, xv, yv = _split(run)
    torch.manual_seed(run.seed)
    encoder = _encoder()
    source = nn.Sequential(encoder, nn.Linear(64, 2))
    _pretrain(source, x, (y >= 3).long(), steps=150, seed=run.seed)  # the upstream task: a coarser labelling
    model = Probe(encoder)
    for p in encoder.parameters():
        p.requires_grad_(False)
    unfreeze_at = run.k("unfreeze_at", None)
    if unfreeze_at is None:
        opt: torch.optim.Optimizer = torch.optim.SGD(
            model.head.parameters(), lr=run.k("lr", 0.1), momentum=0.9
        )
    elif run.bug == "unfrozen_layers_not_in_optimizer":
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=run.k("lr", 2e-3))
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=run.k("lr", 2e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def score() -> float:
        return accuracy(model(xv), yv)

    for step in range(run.steps):
        if step == unfreeze_at:
            for p in encoder.parameters():
                p.requires_grad_(True)
            if run.bug == "unfrozen_layers_not_in_optimizer":
                run.took_effect(step)
        model.train()
        if unfreeze_at is None or step < unfreeze_at:
            encoder.eval()  # frozen layers keep their inference behaviour
        i = run.indices(len(x), 64)
        loss = F.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_loss", F.cross_entropy(model(xv), yv), mode="eval")
        if not run.end_step(step, loss.detach(), model, score):
            break


def distillation(run: Run) -> None:
    """Distil a wide teacher (trained first, then frozen) into a narrow student: T^2-scaled KL at temperature
    4 plus cross-entropy on the labels. Scored by the student's validation accuracy."""
    x, y, xv, yv = _split(run, n=3000)
    torch.manual_seed(run.seed)
    teacher = nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 5))
    _pretrain(teacher, x, y, steps=250, seed=run.seed)
    student = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 5))
    opt = torch.optim.Adam(student.parameters(), lr=run.k("lr", 3e-3))
    run.hook.register_module(student)
    run.hook.register_optimizer(opt)
    temp, alpha = 4.0, 0.7
    for step in range(run.steps):
        i = run.indices(len(x), 64)
        with torch.no_grad():
            soft = F.softmax(teacher(x[i]) / temp, dim=1)
        out = student(x[i])
        kd = F.kl_div(F.log_softmax(out / temp, dim=1), soft, reduction="batchmean") * temp**2
        ce = F.cross_entropy(out, y[i])
        loss = alpha * kd + (1 - alpha) * ce
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        run.hook.record_scalar("kd_loss", kd.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_acc", accuracy(student(xv), yv), mode="eval")
        if not run.end_step(step, loss.detach(), student, lambda: accuracy(student(xv), yv)):
            break
