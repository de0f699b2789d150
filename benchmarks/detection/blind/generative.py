"""Generative scripts of the blind split: a VAE with KL annealing and a small GAN with two optimizers.

`vae` anneals the KL weight from 0 to 1 over the first 40% of the run, so its loss rises while the
reconstruction improves; `gan` trains a generator and a discriminator on two moons with one optimizer
each. Bugs: the KL term written with the wrong sign, the generator's loss computed on the detached
fake batch the discriminator step used.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind import data
from benchmarks.detection.blind.harness import Run


class VAE(nn.Module):
    def __init__(self, d: int = 20, latent: int = 4) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d, 64), nn.ELU(), nn.Linear(64, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, 64), nn.ELU(), nn.Linear(64, d))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mu, logvar = self.encoder(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar) if self.training else mu
        return self.decoder(z), mu, logvar


def vae(run: Run) -> None:
    """A VAE on 20-D tabular features; KL weight annealed linearly over 40% of the steps. Scored 1 - val MSE."""
    g = torch.Generator().manual_seed(run.seed)
    x, _ = data.blobs(g, 4600)
    x, xv = x[600:], x[:600]
    torch.manual_seed(run.seed)
    model = VAE()
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 2e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    warm = int(0.4 * run.steps)

    def score() -> float:
        out = max(0.0, 1.0 - float(F.mse_loss(model(xv)[0], xv)))
        return out if math.isfinite(out) else 0.0

    for step in range(run.steps):
        xb = x[run.indices(len(x), run.k("batch", 64))]
        recon, mu, logvar = model(xb)
        rec = F.mse_loss(recon, xb, reduction="none").sum(1).mean()
        if run.bug == "kl_sign_flipped":
            kl = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1).mean()
        else:
            kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1).mean()
        beta = min(1.0, step / warm)
        loss = rec + beta * kl
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        run.hook.record_scalar("recon", rec.detach())
        run.hook.record_scalar("kl", kl.detach())
        run.hook.record_scalar("beta", beta)
        if run.validating(step):
            model.eval()
            with torch.no_grad():
                run.hook.record_scalar(
                    "val_recon", F.mse_loss(model(xv)[0], xv, reduction="sum") / len(xv), mode="eval"
                )
            model.train()
        if not run.end_step(step, loss.detach(), model, score):
            break


def moons(g: torch.Generator, n: int) -> torch.Tensor:
    """Two interleaved half circles with a little noise, centred."""
    t = math.pi * torch.rand(n, generator=g)
    upper = torch.rand(n, generator=g) < 0.5
    pts = torch.where(
        upper[:, None], torch.stack([t.cos(), t.sin()], 1), torch.stack([1 - t.cos(), 0.5 - t.sin()], 1)
    )
    return (pts - torch.tensor([0.5, 0.25])) * 1.2 + 0.06 * torch.randn(n, 2, generator=g)


def sample_score(fake: torch.Tensor, real: torch.Tensor) -> float:
    """1 - the energy distance of `fake` to `real` relative to that of a point mass at the origin (0 when worse)."""
    if not torch.isfinite(fake).all():
        return 0.0

    def d(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.cdist(a, b).mean()

    e = 2 * d(fake, real) - d(fake, fake) - d(real, real)
    e0 = 2 * d(torch.zeros(1, 2), real) - d(real, real)
    return max(0.0, 1.0 - float(e / e0))


def gan(run: Run) -> None:
    """A GAN on two moons: MLP generator and discriminator, non-saturating BCE, Adam(0.5, 0.999) for both."""
    g = torch.Generator().manual_seed(run.seed)
    real_val = moons(torch.Generator().manual_seed(run.seed + 5), 500)
    z_val = torch.randn(500, 4, generator=torch.Generator().manual_seed(run.seed + 6))
    torch.manual_seed(run.seed)
    generator = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
    disc = nn.Sequential(
        nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)
    )
    opt_d = torch.optim.Adam(disc.parameters(), lr=run.k("lr_d", 1e-3), betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(generator.parameters(), lr=run.k("lr_g", 1e-3), betas=(0.5, 0.999))
    run.hook.register_module(nn.ModuleDict({"G": generator, "D": disc}))
    run.hook.register_optimizer(opt_d)
    run.hook.register_optimizer(opt_g)
    bs = 128
    ones, zeros = torch.ones(bs, 1), torch.zeros(bs, 1)
    for step in range(run.steps):
        real = moons(g, bs)
        fake = generator(torch.randn(bs, 4, generator=g))
        fake_logits = disc(fake.detach())
        d_loss = F.binary_cross_entropy_with_logits(disc(real), ones) + F.binary_cross_entropy_with_logits(
            fake_logits, zeros
        )
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        if run.bug == "generator_loss_detached":  # reuses the discriminator step's logits of fake.detach()
            g_loss = F.binary_cross_entropy_with_logits(disc(fake.detach()), ones)
        else:
            g_loss = F.binary_cross_entropy_with_logits(disc(fake), ones)
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        run.hook.record_scalar("d_loss", d_loss.detach())
        run.hook.record_scalar("g_loss", g_loss.detach())
        if not run.end_step(
            step, d_loss.detach(), generator, lambda: sample_score(generator(z_val), real_val)
        ):
            break
