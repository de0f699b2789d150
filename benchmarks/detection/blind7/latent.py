"""Representation, field and Bayesian scripts of the seventh blind split: a VQ-VAE with a codebook and commitment
loss, a sparse autoencoder with an L1 penalty on its codes, a coordinate MLP on random Fourier features, and a
Bayes-by-backprop regression network.

`vqvae`: an MLP encoder maps a 16-d point to four 4-d vectors, each replaced by its nearest of 32 codebook
entries, the gradient passed to the encoder by the straight-through estimator; loss: reconstruction MSE + codebook
term + 0.25 x commitment term; scored by R^2 of the reconstruction of held-out points. `sparse_ae`: a ReLU
encoder to 128 codes and a linear decoder, MSE + `l1` x the codes' L1 norm (summed over codes, averaged over the
batch); scored by R^2 of held-out reconstructions. `fourier`: a 2-64 random Fourier feature map (scale `sigma`) of
[0, 1] pixel coordinates and a ReLU MLP regressing a picture's grey level; 3/4 of the pixels train, the rest are
held out; scored by R^2 on the held-out pixels. `bayes_by_backprop`: an MLP whose weights are Gaussians sampled at
every training forward (the reparameterisation trick), trained on the negative ELBO per example (Gaussian NLL + the
KL from an N(0, 1) prior divided by the number of examples); scored by R^2 of the posterior mean on held-out
examples. Bugs: the code chosen by argmax of the distance, the codebook term computed with both sides detached, the
L1 penalty summed over the batch too, the coordinates left in pixel units, the Fourier matrix drawn anew at every
forward pass, the KL multiplied by the number of examples instead of divided, the unconstrained rho used as the
standard deviation (no softplus).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind7 import data
from benchmarks.detection.torch_real.loop import make_optimizer


class VQVAE(nn.Module):
    def __init__(self, *, codes: int = 32, farthest: bool = False, frozen_codes: bool = False) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 16))
        self.dec = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 16))
        self.codebook = nn.Embedding(codes, 4)
        self.codebook.weight.data.uniform_(-1 / codes, 1 / codes)
        self.farthest, self.frozen_codes = farthest, frozen_codes

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        z = self.enc(x).view(-1, 4)
        dist = torch.cdist(z, self.codebook.weight)
        idx = dist.argmax(1) if self.farthest else dist.argmin(1)
        e = self.codebook(idx)
        codebook_loss = F.mse_loss(e.detach() if self.frozen_codes else e, z.detach())
        commitment = F.mse_loss(z, e.detach())
        zq = z + (e - z).detach()
        return self.dec(zq.view(len(x), 16)), codebook_loss, commitment


def vqvae(run: Run) -> None:
    """A VQ-VAE on 16-d manifold points (four 4-d latents, 32 codes): Adam (lr `lr`, 2e-3), AdamW or Adamax
    (`opt`), batch `batch` (128). Scored by R^2 of held-out reconstructions."""
    g = torch.Generator().manual_seed(run.seed)
    x = data.manifold(g, 5000)
    xv, x = x[:1000], x[1000:]
    torch.manual_seed(run.seed)
    model = VQVAE(farthest=run.bug == "nearest_code_by_argmax",
                  frozen_codes=run.bug == "codebook_loss_fully_detached")  # fmt: skip
    name = run.k("opt", "adam")
    opt = make_optimizer(
        name, model.parameters(), run.k("lr", 2e-3), weight_decay=0.01 if name == "adamw" else 0.0
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 128)
    for step in range(run.steps):
        xb = x[run.indices(len(x), batch)]
        recon, codebook_loss, commitment = model(xb)
        loss = F.mse_loss(recon, xb) + codebook_loss + 0.25 * commitment
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(model(xv)[0], xv)):
            break


class SparseAE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc, self.dec = nn.Linear(24, 128), nn.Linear(128, 24)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        codes = F.relu(self.enc(x))
        return self.dec(codes), codes


def sparse_ae(run: Run) -> None:
    """A sparse autoencoder (24 -> 128 ReLU codes -> 24) on dictionary mixtures, MSE + `l1` (3e-3) x the codes'
    L1 norm per example; Adam (lr `lr`, 1e-3), NAdam or Adadelta (`opt`, lr 1.0), batch `batch` (256). Scored by
    R^2 of held-out reconstructions."""
    g = torch.Generator().manual_seed(run.seed)
    x = data.dictionary_mixtures(g, 6000)
    xv, x = x[:1000], x[1000:]
    torch.manual_seed(run.seed)
    model = SparseAE()
    name = run.k("opt", "adam")
    opt = make_optimizer(name, model.parameters(), 1.0 if name == "adadelta" else run.k("lr", 1e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    l1, batch = run.k("l1", 3e-3), run.k("batch", 256)
    for step in range(run.steps):
        xb = x[run.indices(len(x), batch)]
        recon, codes = model(xb)
        if run.bug == "l1_summed_over_batch":
            penalty = codes.abs().sum()
        else:
            penalty = codes.abs().sum(1).mean()
        loss = F.mse_loss(recon, xb) + l1 * penalty
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(model(xv)[0], xv)):
            break


class FourierMLP(nn.Module):
    def __init__(self, sigma: float, *, redraw: bool = False) -> None:
        super().__init__()
        self.register_buffer("b", sigma * torch.randn(2, 64))
        self.sigma, self.redraw = sigma, redraw
        self.net = nn.Sequential(
            nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1)
        )

    def forward(self, coords: torch.Tensor) -> torch.Tensor:
        b = self.sigma * torch.randn(2, 64) if self.redraw else self.b
        proj = 2 * math.pi * coords @ b
        return self.net(torch.cat([torch.sin(proj), torch.cos(proj)], 1))[:, 0]


def fourier(run: Run) -> None:
    """A Fourier-feature coordinate MLP fitting a 32 x 32 picture from 3/4 of its pixels: features of scale
    `sigma` (3), Adam (lr `lr`, 1e-3; `cosine`: cosine-annealed) or RAdam (`opt`), batch `batch` (256). Scored by
    R^2 on the held-out pixels."""
    coords, grey = data.picture()
    if run.bug == "coordinates_in_pixel_units":
        coords = coords * 31
    g = torch.Generator().manual_seed(run.seed)
    perm = torch.randperm(len(grey), generator=g)
    held, train = perm[: len(grey) // 4], perm[len(grey) // 4 :]
    torch.manual_seed(run.seed)
    model = FourierMLP(run.k("sigma", 3.0), redraw=run.bug == "fourier_matrix_redrawn_each_forward")
    opt = make_optimizer(run.k("opt", "adam"), model.parameters(), run.k("lr", 1e-3))
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 256)
    for step in range(run.steps):
        i = train[run.indices(len(train), batch)]
        loss = F.mse_loss(model(coords[i]), grey[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(model(coords[held]), grey[held])):
            break


class BayesLinear(nn.Module):
    def __init__(self, n_in: int, n_out: int, *, sigma_bug: bool) -> None:
        super().__init__()
        self.mu = nn.Parameter(torch.randn(n_out, n_in) / math.sqrt(n_in))
        self.rho = nn.Parameter(torch.full((n_out, n_in), -5.0))
        self.bias = nn.Parameter(torch.zeros(n_out))
        self.sigma_bug = sigma_bug

    def sigma(self) -> torch.Tensor:
        return self.rho if self.sigma_bug else F.softplus(self.rho)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return F.linear(x, self.mu, self.bias)
        w = self.mu + self.sigma() * torch.randn_like(self.mu)
        return F.linear(x, w, self.bias)

    def kl(self) -> torch.Tensor:
        """KL divergence of the weights' Gaussian posterior from the N(0, 1) prior."""
        s = self.sigma()
        return 0.5 * (s**2 + self.mu**2 - 1 - 2 * torch.log(s)).sum()


class BayesMLP(nn.Module):
    def __init__(self, *, sigma_bug: bool) -> None:
        super().__init__()
        self.l1 = BayesLinear(8, 64, sigma_bug=sigma_bug)
        self.l2 = BayesLinear(64, 64, sigma_bug=sigma_bug)
        self.l3 = BayesLinear(64, 1, sigma_bug=sigma_bug)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))[:, 0]

    def kl(self) -> torch.Tensor:
        return self.l1.kl() + self.l2.kl() + self.l3.kl()


def bayes_by_backprop(run: Run) -> None:
    """A Bayes-by-backprop MLP (8 -> 64 -> 64 -> 1, Gaussian weights with sigma = softplus(rho)) on 2000 noisy
    examples: Gaussian NLL (noise sd 0.3) + KL / 2000 per example; Adam (lr `lr`, 3e-3), AdamW or Nesterov SGD
    (`opt`, lr 1e-3), batch `batch` (100). Scored by R^2 of the posterior mean's predictions on 1000 held-out
    examples."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.small_regression(g, 3000)
    xv, yv, x, y = x[:1000], y[:1000], x[1000:], y[1000:]
    torch.manual_seed(run.seed)
    model = BayesMLP(sigma_bug=run.bug == "log_sigma_used_as_sigma")
    name = run.k("opt", "adam")
    lr = 1e-3 if name == "nesterov" else run.k("lr", 3e-3)
    opt = make_optimizer(name, model.parameters(), lr, weight_decay=0.01 if name == "adamw" else 0.0)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch, n = run.k("batch", 100), len(y)
    kl_weight = float(n) if run.bug == "kl_scaled_by_dataset_size" else 1.0 / n
    for step in range(run.steps):
        i = run.indices(n, batch)
        nll = ((model(x[i]) - y[i]) ** 2).mean() / (2 * 0.3**2)
        loss = nll + kl_weight * model.kl()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(model(xv), yv)):
            break
