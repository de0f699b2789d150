"""Self-supervised scripts of the fifth blind split: DINO-style self-distillation with an EMA teacher and a centred
teacher output, Barlow Twins, a masked autoencoder on image patches.

`dino` and `barlow` learn from two augmented views of unlabelled items (`data.Views`: the augmentation redraws
nuisance directions) and are scored by nearest-centroid accuracy of their backbone features on held-out labelled
items (centroids from 500 labelled training items). `mae` hides 75% of each image's patches and reconstructs them;
scored by R^2 of the hidden patches of held-out images. Bugs: the centre never updated, the teacher's temperature
above the student's, dropout left on in the teacher, the Barlow Twins standardisation over the feature axis,
both Barlow Twins branches fed the same augmented view, the
reconstruction loss on the visible patches.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind5 import data


def backbone(drop: float = 0.1) -> nn.Sequential:
    return nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Dropout(drop), nn.Linear(64, 32))


def centroid_accuracy(f: nn.Module, probe: tuple[torch.Tensor, ...], val: tuple[torch.Tensor, ...]) -> float:
    """Nearest-centroid accuracy of normalised features: class centroids from the `probe` items, tested on `val`
    (each a pair of fixed views and their classes)."""
    ft, fv = F.normalize(f(probe[0]), dim=1), F.normalize(f(val[0]), dim=1)
    cent = torch.stack([ft[probe[1] == c].mean(0) for c in range(int(probe[1].max()) + 1)])
    return float(((fv @ F.normalize(cent, dim=1).T).argmax(1) == val[1]).float().mean())


def labelled(
    views: data.Views, g: torch.Generator
) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
    """The probe items (500, for centroids) and held-out items (500), one fixed view each, with their classes."""
    val, probe = torch.arange(500), torch.arange(500, 1000)
    return (views.view(probe, g), views.y[probe]), (views.view(val, g), views.y[val])


def dino(run: Run) -> None:
    """DINO-style self-distillation: student and EMA teacher (momentum `momentum`, 0.99) of an MLP backbone and a
    64-prototype head; the teacher's output centred (centre EMA 0.9) and sharpened (temperature 0.04 against the
    student's 0.1); AdamW (lr `lr`, 1e-3, weight decay 0.04), batch `batch` (64). Scored by nearest-centroid
    accuracy of the teacher's backbone."""
    g = torch.Generator().manual_seed(run.seed)
    views = data.Views(g, 3000)
    probe, val = labelled(views, g)
    pool = torch.arange(500, 3000)
    torch.manual_seed(run.seed)
    student = nn.Sequential(backbone(), nn.GELU(), nn.Linear(32, 64))
    teacher = copy.deepcopy(student)
    for p in teacher.parameters():
        p.requires_grad_(False)
    if run.bug != "teacher_dropout_left_on":
        teacher.eval()
    t_temp = 0.2 if run.bug == "teacher_temperature_above_student" else 0.04
    s_temp, momentum = 0.1, run.k("momentum", 0.99)
    centre = torch.zeros(64)
    opt = torch.optim.AdamW(student.parameters(), lr=run.k("lr", 1e-3), weight_decay=0.04)
    batch = run.k("batch", 64)
    run.hook.register_module(student)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = pool[run.indices(len(pool), batch)]
        v1, v2 = views.view(i, run.gen), views.view(i, run.gen)
        with torch.no_grad():
            t_out = torch.cat([teacher(v1), teacher(v2)])
            t_prob = F.softmax((t_out - centre) / t_temp, 1)
        s_logp = F.log_softmax(torch.cat([student(v2), student(v1)]) / s_temp, 1)
        loss = -(t_prob * s_logp).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pt, ps in zip(teacher.parameters(), student.parameters()):
                pt.mul_(momentum).add_(ps, alpha=1 - momentum)
            if run.bug != "centre_never_updated":
                centre = 0.9 * centre + 0.1 * t_out.mean(0)
        if not close_step(run, step, loss, student, "val_centroid_accuracy",
                          lambda: centroid_accuracy(teacher[0], probe, val)):  # fmt: skip
            break


def barlow(run: Run) -> None:
    """Barlow Twins: an MLP backbone and a 64-wide projector; each view's projections standardised over the batch,
    the cross-correlation matrix pushed to the identity (off-diagonal weight `lambd`, 5e-3); LARS-free Adam (lr
    `lr`, 2e-3), batch `batch` (128). Scored by nearest-centroid accuracy of the backbone."""
    g = torch.Generator().manual_seed(run.seed)
    views = data.Views(g, 3000)
    probe, val = labelled(views, g)
    pool = torch.arange(500, 3000)
    torch.manual_seed(run.seed)
    net = backbone(0.0)
    model = nn.Sequential(net, nn.Linear(32, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 64))
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 2e-3))
    batch, lambd = run.k("batch", 128), run.k("lambd", 5e-3)
    axis = 1 if run.bug == "standardised_over_features" else 0
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = pool[run.indices(len(pool), batch)]
        v1 = views.view(i, run.gen)
        v2 = v1.clone() if run.bug == "same_view_for_both_branches" else views.view(i, run.gen)
        z1, z2 = model(v1), model(v2)
        z1 = (z1 - z1.mean(axis, keepdim=True)) / (z1.std(axis, keepdim=True) + 1e-5)
        z2 = (z2 - z2.mean(axis, keepdim=True)) / (z2.std(axis, keepdim=True) + 1e-5)
        c = z1.T @ z2 / batch
        on = (torch.diagonal(c) - 1).pow(2).sum()
        off = (c - torch.diag(torch.diagonal(c))).pow(2).sum()
        loss = on + lambd * off
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_centroid_accuracy",
                          lambda: centroid_accuracy(net, probe, val)):  # fmt: skip
            break


class MAE(nn.Module):
    def __init__(self, d: int = 48) -> None:
        super().__init__()
        self.embed = nn.Linear(9, d)
        self.pos = nn.Parameter(0.02 * torch.randn(1, 16, d))
        self.mask_token = nn.Parameter(torch.zeros(1, 1, d))
        layer = nn.TransformerEncoderLayer(d, 4, 96, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.decode = nn.Linear(d, 9)

    def forward(self, patches: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        e = torch.where(hidden[..., None], self.mask_token, self.embed(patches)) + self.pos
        return self.decode(self.encoder(e))


def mae(run: Run) -> None:
    """A masked autoencoder on 12x12 images cut into 16 patches: 75% of the patches (mask ratio `ratio`) replaced by
    a learned mask token, a 1-layer transformer, a linear decoder; MSE on the hidden patches; AdamW (lr `lr`, 2e-3,
    betas 0.9/0.95) with `warmup` (20) warm-up steps. Scored by R^2 of the hidden patches of 300 held-out images."""
    g = torch.Generator().manual_seed(run.seed)
    x = data.patch_images(g, 2300)
    xv, x = x[:300], x[300:]
    ratio = run.k("ratio", 0.75)
    hv = torch.rand(300, 16, generator=g).argsort(1) < int(16 * ratio)
    torch.manual_seed(run.seed)
    model = MAE()
    opt = torch.optim.AdamW(model.parameters(), lr=run.k("lr", 2e-3), betas=(0.9, 0.95), weight_decay=0.05)
    warmup = run.k("warmup", 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(x), 64)
        hidden = torch.rand(64, 16, generator=run.gen).argsort(1) < int(16 * ratio)
        err = (model(x[i], hidden) - x[i]).pow(2).mean(-1)
        scored = ~hidden if run.bug == "loss_on_visible_patches" else hidden
        loss = (err * scored).sum() / scored.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_r2_hidden",
                          lambda: r2(model(xv, hv)[hv], xv[hv])):  # fmt: skip
            break
