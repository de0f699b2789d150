"""Generative scripts of the sixth blind split: a diffusion-style denoiser trained on noise prediction, and a
PixelCNN-style autoregressive model with masked convolutions.

`denoiser`: an MLP given a noised signal and its timestep predicts the noise that was added under a cosine (or
linear) schedule of 100 steps; scored as its sampler uses it: the clean signal recovered from the predicted noise at
timesteps 20 and 50 of the schedule (R^2 on held-out signals). `pixelcnn`: masked convolutions (type A first, then
type B) predict each pixel of binary block images from the pixels above and to the left; scored by the accuracy of
the predicted pixel at four positions with that pixel and every later one hidden from the input. Bugs: the
denoiser trained against the clean signal while its sampler reads noise, the cumulative product of the alphas taken
twice, the timestep scaled in training but not at sampling, the first masked convolution of type B.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind6 import data

T = 100


def alphas(kind: str) -> torch.Tensor:
    """Per-step alphas (1 - beta) of a cosine or linear schedule of `T` steps."""
    if kind == "cosine":
        s = 0.008
        f = torch.cos((torch.arange(T + 1) / T + s) / (1 + s) * math.pi / 2) ** 2
        abar = f / f[0]
        return (abar[1:] / abar[:-1]).clamp(min=0.001)
    return 1 - torch.linspace(1e-4, 0.04, T)


class Denoiser(nn.Module):
    def __init__(self, d: int = 16, hidden: int = 128) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d + 16, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, d)
        )

    def forward(self, x: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        k = torch.arange(1, 9).float()
        emb = torch.cat([torch.sin(math.pi * k * tau[:, None]), torch.cos(math.pi * k * tau[:, None])], 1)
        return self.net(torch.cat([x, emb], 1))


def denoiser(run: Run) -> None:
    """Noise prediction on 16-sample signals: x_t = sqrt(abar_t) x0 + sqrt(1 - abar_t) eps, the MSE between the
    predicted and the true eps, the timestep fed as t / T; AdamW (lr `lr`, 2e-3), batch `batch` (128), schedule
    `schedule` (cosine). Scored by R^2 of x0 recovered from the predicted noise at t = 20 and 50 (300 signals)."""
    g = torch.Generator().manual_seed(run.seed)
    x0 = data.signals(g, 4300)
    xv, x0 = x0[:300], x0[300:]
    a = alphas(run.k("schedule", "cosine"))
    abar = torch.cumprod(a, 0)
    if run.bug == "alphas_cumprod_taken_twice":
        abar = torch.cumprod(abar, 0)  # the helper already returned cumulative products
    sampler_abar = torch.cumprod(a, 0)
    eps_v = torch.randn(xv.shape, generator=g)
    torch.manual_seed(run.seed)
    model = Denoiser()
    opt = torch.optim.AdamW(model.parameters(), lr=run.k("lr", 2e-3), weight_decay=0.01)
    batch = run.k("batch", 128)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def score() -> float:
        out = []
        for t in (20, 50):
            ab = sampler_abar[t]
            xt = ab.sqrt() * xv + (1 - ab).sqrt() * eps_v
            tau = torch.full((len(xv),), float(t) if run.bug == "timestep_unscaled_at_sampling" else t / T)
            out.append(r2((xt - (1 - ab).sqrt() * model(xt, tau)) / ab.sqrt(), xv))
        return sum(out) / len(out)

    for step in range(run.steps):
        i = run.indices(len(x0), batch)
        t = torch.randint(0, T, (batch,), generator=run.gen)
        eps = torch.randn(batch, x0.shape[1], generator=run.gen)
        ab = abar[t][:, None]
        xt = ab.sqrt() * x0[i] + (1 - ab).sqrt() * eps
        pred = model(xt, t.float() / T)
        target = x0[i] if run.bug == "target_is_clean_signal" else eps
        loss = F.mse_loss(pred, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", score):
            break


class MaskedConv(nn.Conv2d):
    """A convolution that sees only the pixels above and to the left of its centre (type A) or also the centre
    (type B)."""

    def __init__(self, cin: int, cout: int, k: int, kind: str) -> None:
        super().__init__(cin, cout, k, padding=k // 2)
        mask = torch.ones_like(self.weight)
        mask[:, :, k // 2, k // 2 + (kind == "B") :] = 0
        mask[:, :, k // 2 + 1 :] = 0
        self.register_buffer("mask", mask)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, self.weight * self.mask, self.bias, padding=self.padding)


def pixelcnn(run: Run) -> None:
    """A PixelCNN-style model on 8x8 binary images: a 5x5 type-A masked convolution, two 3x3 type-B ones (width
    `width`, 32), a 1x1 output; BCE with logits per pixel; Adam or centred RMSprop (`opt`, lr `lr`, 1e-3), batch
    `batch` (64). Scored by the accuracy at four pixels, each predicted with itself and every later pixel hidden
    (set to 0.5) on 300 held-out images."""
    g = torch.Generator().manual_seed(run.seed)
    imgs = data.block_images(g, 3300)
    xv, x = imgs[:300], imgs[300:]
    torch.manual_seed(run.seed)
    width = run.k("width", 32)
    first = "B" if run.bug == "first_mask_type_b" else "A"
    model = nn.Sequential(
        MaskedConv(1, width, 5, first), nn.ReLU(),
        MaskedConv(width, width, 3, "B"), nn.ReLU(),
        MaskedConv(width, width, 3, "B"), nn.ReLU(),
        nn.Conv2d(width, 1, 1),
    )  # fmt: skip
    if run.k("opt", "adam") == "rmsprop":
        opt: torch.optim.Optimizer = torch.optim.RMSprop(
            model.parameters(), lr=run.k("lr", 1e-3), centered=True
        )
    else:
        opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 1e-3))
    batch = run.k("batch", 64)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    positions = (21, 34, 45, 60)

    def score() -> float:
        hits = 0.0
        for p in positions:
            seen = xv.flatten(1).clone()
            seen[:, p:] = 0.5
            logits = model(seen.view_as(xv)).flatten(1)[:, p]
            hits += float(((logits > 0).float() == xv.flatten(1)[:, p]).float().mean())
        return hits / len(positions)

    for step in range(run.steps):
        xb = x[run.indices(len(x), batch)]
        loss = F.binary_cross_entropy_with_logits(model(xb), xb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_pixel_accuracy", score):
            break
