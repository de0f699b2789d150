"""Imaging scripts of the twenty-sixth blind split: a pneumonia classifier on small chest X-rays and a road-crack
segmenter on pavement patches.

`xrays`: 20x20 films, a bright body with two dark lung fields, ribs as faint bright bands, exposure varying from film
to film; pneumonia (a third of the films) adds one to three soft bright opacities inside a lung; a hospital's marker
of a few bright pixels in a corner; each film z-scored on its own; a plain CNN of six 3x3 convolutions with ReLU (two
poolings), a global average and a linear layer, BCE with logits; 500 training films, 400 held out; scored by the
held-out AUC. `cracks`: 20x20 grey pavement patches with grain and shadows, a crack in most of them, a dark meandering
line one or two pixels wide; a small fully convolutional net of four 3x3 convolutions (one pooling and an upsampling)
that outputs a logit per pixel, BCE with logits weighted up for crack pixels; random flips of each batch; 300 training
patches, 150 held out; scored by the held-out Dice of the crack pixels. Bugs: the convolutions' ReLUs swapped for the
tanh of a LeNet-era recipe; the pneumonia films of the training set from a second hospital whose
marker the held-out films do not share; the films z-scored with no guard for blank exports; the warmup of a
recipe at a high rate left out; the flip applied to the patches and not to their masks.
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

FILM = 20
"""A chest film's side in pixels."""


def _films(g: torch.Generator, n: int, shortcut: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Films float[n, 1, FILM, FILM] (raw grey levels, blank exports all zero) and pneumonia labels float[n]. With
    `shortcut`, the pneumonia films come from a second hospital whose marker sits in the other corner."""
    y = (torch.rand(n, generator=g) < 0.33).float()
    r = torch.arange(FILM, dtype=torch.float).view(1, FILM, 1)
    c = torch.arange(FILM, dtype=torch.float).view(1, 1, FILM)
    body = 0.7 - 0.3 * ((c - 9.5) / 10) ** 2
    lungs = torch.zeros(1, FILM, FILM)
    for cx in (5.5, 13.5):
        lungs = lungs + (((r - 9.5) / 7) ** 2 + ((c - cx) / 3.2) ** 2 < 1).float()
    ribs = 0.08 * (torch.sin(r * 1.6) > 0.6).float() * lungs
    films = body - 0.45 * lungs + ribs + torch.zeros(n, 1, 1)
    for i in torch.nonzero(y).flatten().tolist():
        for _ in range(1 + int(torch.randint(0, 3, (1,), generator=g))):
            cy = 4 + 11 * float(torch.rand(1, generator=g))
            cx = (5.5 if float(torch.rand(1, generator=g)) < 0.5 else 13.5) + 2 * float(
                torch.randn(1, generator=g)
            )
            size = 1.5 + 1.5 * float(torch.rand(1, generator=g))
            films[i] += 0.2 * torch.exp(-((r[0] - cy) ** 2 + (c[0] - cx) ** 2) / (2 * size**2))
    exposure = 0.7 + 0.6 * torch.rand(n, 1, 1, generator=g)
    films = exposure * films + 0.05 * torch.randn(n, FILM, FILM, generator=g)
    corner = (y > 0) & torch.full((n,), shortcut) if shortcut else torch.rand(n, generator=g) < 0.5
    films[:, :2, :2] += 0.8 * (~corner).float().view(n, 1, 1)
    films[:, :2, -2:] += 0.8 * corner.float().view(n, 1, 1)
    blank = torch.rand(n, generator=g) < 0.01
    films[blank] = 0.0
    return films.unsqueeze(1), y


class FilmCNN(nn.Module):
    """Six 3x3 convolutions of `width` channels with ReLU, a 2x2 pooling after the second and the fourth, a global
    average and a linear layer to the pneumonia logit."""

    def __init__(self, width: int, tanh: bool = False) -> None:
        super().__init__()
        chans = [1] + [width] * 6
        self.convs = nn.ModuleList(nn.Conv2d(a, b, 3, padding=1) for a, b in itertools.pairwise(chans))
        self.fc = nn.Linear(width, 1)
        self.act = torch.tanh if tanh else F.relu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, conv in enumerate(self.convs):
            x = self.act(conv(x))
            if i in (1, 3):
                x = F.max_pool2d(x, 2)
        return self.fc(x.mean((2, 3))).squeeze(-1)


def xrays(run: Run) -> None:
    """A pneumonia CNN of `width` (8) channels, batches of `batch` (32), `opt` (Adam; or AdamW, RMSprop, NAdam) at
    `lr` (2e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    films, y = _films(g, 500, shortcut=run.bug == "pneumonia_films_from_second_hospital")
    films_v, y_v = _films(g, 400)

    def zscored(f: torch.Tensor) -> torch.Tensor:
        mu, sd = f.mean((1, 2, 3), keepdim=True), f.std((1, 2, 3), keepdim=True)
        if run.bug == "films_zscored_without_guard_for_blanks":
            return (f - mu) / sd
        return (f - mu) / sd.clamp(min=1e-6)

    x, x_v = zscored(films), zscored(films_v)
    torch.manual_seed(run.seed)
    model = FilmCNN(run.k("width", 8), tanh=run.bug == "tanh_convolutions_of_lenet_recipe")
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


PATCH = 20
"""A pavement patch's side in pixels."""


def _patches(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Patches float[n, 1, PATCH, PATCH] in [0, 1] and crack masks float[n, 1, PATCH, PATCH]."""
    masks = torch.zeros(n, PATCH, PATCH)
    for i in range(n):
        if float(torch.rand(1, generator=g)) < 0.15:
            continue
        r, c = float(torch.randint(0, PATCH, (1,), generator=g)), 0.0
        angle = (float(torch.rand(1, generator=g)) - 0.5) * 1.5
        wide = float(torch.rand(1, generator=g)) < 0.4
        while 0 <= c < PATCH and 0 <= r < PATCH:
            masks[i, int(r), int(c)] = 1
            if wide and int(r) + 1 < PATCH:
                masks[i, int(r) + 1, int(c)] = 1
            angle += 0.4 * float(torch.randn(1, generator=g))
            r, c = r + math.sin(angle), c + abs(math.cos(angle)) + 0.2
        if float(torch.rand(1, generator=g)) < 0.5:
            masks[i] = masks[i].t().clone()
    base = 0.55 + 0.1 * torch.rand(n, 1, 1, generator=g)
    grain = 0.08 * torch.randn(n, PATCH, PATCH, generator=g)
    shadow = 0.12 * torch.sigmoid(
        torch.randn(n, 1, 1, generator=g) * (torch.arange(PATCH) - PATCH / 2).view(1, 1, -1)
    )
    patches = (base + grain - shadow - 0.3 * masks).clamp(0, 1)
    return patches.unsqueeze(1), masks.unsqueeze(1)


class CrackNet(nn.Module):
    """Two 3x3 convolutions of `width` with ReLU, a 2x2 pooling, a convolution of 2 * `width`, an upsampling, a
    convolution joined with the first block's features, and a 1x1 convolution to the crack logit."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(1, width, 3, padding=1)
        self.c2 = nn.Conv2d(width, width, 3, padding=1)
        self.c3 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.c4 = nn.Conv2d(3 * width, width, 3, padding=1)
        self.out = nn.Conv2d(width, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = F.relu(self.c2(F.relu(self.c1(x))))
        deep = F.interpolate(F.relu(self.c3(F.max_pool2d(skip, 2))), scale_factor=2.0)
        return self.out(F.relu(self.c4(torch.cat([skip, deep], 1))))


def _dice(logits: torch.Tensor, masks: torch.Tensor) -> float:
    """The Dice overlap of the pixels with a positive logit and the crack pixels (0 for non-finite logits)."""
    if not torch.isfinite(logits).all():
        return 0.0
    pred = (logits > 0).float()
    return float(2 * (pred * masks).sum() / (pred.sum() + masks.sum()).clamp(min=1))


def cracks(run: Run) -> None:
    """A crack segmenter of `width` (8), batches of `batch` (16), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at
    `lr` (3e-3), warmed up linearly over `warmup` steps (none), crack pixels weighted by `pos_weight` (5). Scored by the held-out Dice."""
    g = torch.Generator().manual_seed(run.seed)
    x, masks = _patches(g, 300)
    x_v, masks_v = _patches(g, 150)
    torch.manual_seed(run.seed)
    model = CrackNet(run.k("width", 8))
    opt = optimizers.registered(run, model, 3e-3)
    warmup = run.k("warmup", 0)
    sched = None
    if warmup and run.bug != "warmup_left_out_of_recipe":
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    batch, pos_weight = run.k("batch", 16), torch.tensor(float(run.k("pos_weight", 5.0)))

    def dice_held_out() -> float:
        return _dice(model(x_v), masks_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        img, mask = x[pick], masks[pick]
        flip = torch.rand(len(pick), generator=run.gen) < 0.5
        img = torch.where(flip.view(-1, 1, 1, 1), img.flip(-1), img)
        if run.bug != "flip_applied_to_patches_only":
            mask = torch.where(flip.view(-1, 1, 1, 1), mask.flip(-1), mask)
        loss = F.binary_cross_entropy_with_logits(model(img), mask, pos_weight=pos_weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_dice", dice_held_out):
            break
