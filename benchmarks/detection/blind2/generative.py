"""Generative and density scripts of the second blind split: a denoising diffusion model on 2-D points, a
RealNVP normalising flow, and an autoencoder used as an anomaly detector.

`diffusion`: DDPM with 50 noise levels, an MLP noise predictor with a sinusoidal time embedding, Adam;
scored by ancestral samples (share near a mode times share of modes covered). `flow`: affine coupling
layers with learnable scales, negative log-likelihood (it goes negative); scored by held-out
log-likelihood. `autoencoder`: reconstruction on sensor readings in raw units, standardised with stored
statistics; scored by the AUC of the reconstruction error on a set with faults. Bugs: the log-determinant
with the wrong sign, the stored mean used in the wrong unit (millivolts for volts).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc
from benchmarks.detection.blind2 import data

LEVELS = 50


class NoisePredictor(nn.Module):
    def __init__(self, width: int = 96) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 + 16, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU(),
                                 nn.Linear(width, width), nn.SiLU(), nn.Linear(width, 2))  # fmt: skip

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        freqs = torch.exp(torch.linspace(0, math.log(100), 8))
        angle = t[:, None].float() / LEVELS * freqs[None] * 2
        return self.net(torch.cat([x, angle.sin(), angle.cos()], 1))


def diffusion(run: Run) -> None:
    """DDPM on a ring of 6 Gaussians: linear betas, noise-prediction MSE, Adam, batch 256; the sampler is the
    ancestral one. `run.steps` optimizer steps."""
    g = torch.Generator().manual_seed(run.seed)
    points, centres = data.ring_of_gaussians(g, 20000, modes=6, std=0.2)
    torch.manual_seed(run.seed)
    model = NoisePredictor()
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 1e-2))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    betas = torch.linspace(1e-3, 0.25, LEVELS)
    alphas = 1 - betas
    alpha_bar = torch.cumprod(alphas, 0)

    def sample(n: int, gen: torch.Generator) -> torch.Tensor:
        x = torch.randn(n, 2, generator=gen)
        for t in reversed(range(LEVELS)):
            eps = model(x, torch.full((n,), t))
            x = (x - betas[t] / (1 - alpha_bar[t]).sqrt() * eps) / alphas[t].sqrt()
            if t > 0:
                x = x + betas[t].sqrt() * torch.randn(n, 2, generator=gen)
        return x

    def score() -> float:
        s = sample(200, torch.Generator().manual_seed(1))
        if not torch.isfinite(s).all():
            return 0.0
        d = torch.cdist(s, centres)
        closeness = torch.exp(-0.5 * (d.min(1).values / 0.3) ** 2).mean()
        covered = (
            (torch.bincount(d.argmin(1)[d.min(1).values < 0.6], minlength=len(centres)) >= 4).float().mean()
        )
        return float(closeness * covered)

    for step in range(run.steps):
        x0 = points[run.indices(len(points), 256)]
        t = torch.randint(0, LEVELS, (256,), generator=run.gen)
        eps = torch.randn(256, 2, generator=run.gen)
        ab = alpha_bar[t][:, None]
        xt = ab.sqrt() * x0 + (1 - ab).sqrt() * eps
        loss = F.mse_loss(model(xt, t), eps)
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if not run.end_step(step, loss.detach(), model, score):
            break


class Coupling(nn.Module):
    """An affine coupling layer: one coordinate scales and shifts the other; the scale is tanh-bounded times a
    learnable factor, as RealNVP implementations write it."""

    def __init__(self, flip: bool, width: int = 64) -> None:
        super().__init__()
        self.flip = flip
        self.net = nn.Sequential(nn.Linear(1, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                                 nn.Linear(width, 2))  # fmt: skip
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        keep, move = (x[:, 1:], x[:, :1]) if self.flip else (x[:, :1], x[:, 1:])
        s, t = self.net(keep).chunk(2, 1)
        s = self.scale * torch.tanh(s)
        moved = move * s.exp() + t
        out = torch.cat([moved, keep], 1) if self.flip else torch.cat([keep, moved], 1)
        return out, s.squeeze(1)


class Flow(nn.Module):
    def __init__(self, layers: int = 6) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Coupling(i % 2 == 1) for i in range(layers))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logdet = torch.zeros(len(x))
        for layer in self.layers:
            x, s = layer(x)
            logdet = logdet + s
        return x, logdet


def _base_logp(z: torch.Tensor) -> torch.Tensor:
    return -0.5 * (z**2).sum(1) - math.log(2 * math.pi)


def flow(run: Run) -> None:
    """RealNVP on two moons: 6 couplings, NLL in nats per point (negative once the flow fits), Adam with a little
    weight decay, batch 256. Scored by the held-out log-likelihood: 0 at a standard normal's, 1 at +1.6 nats."""
    g = torch.Generator().manual_seed(run.seed)
    x, xv = data.moons(g, 10000), data.moons(g, 1000)
    torch.manual_seed(run.seed)
    model = Flow()
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 2e-3), weight_decay=1e-5)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def log_likelihood(batch: torch.Tensor, *, flipped: bool = False) -> torch.Tensor:
        z, logdet = model(batch)
        if flipped:
            return _base_logp(z) - logdet  # change of variables written the wrong way round
        return _base_logp(z) + logdet

    reference = float(_base_logp(xv).mean())
    flipped = run.bug == "flow_logdet_sign_flipped"

    def score() -> float:  # the oracle's: the true log-likelihood, whatever the script computes
        ll = float(log_likelihood(xv).mean())
        return min(1.0, max(0.0, (ll - reference) / 1.6)) if math.isfinite(ll) else 0.0

    for step in range(run.steps):
        loss = -log_likelihood(x[run.indices(len(x), 256)], flipped=flipped).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("nll", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_nll", -log_likelihood(xv, flipped=flipped).mean(), mode="eval")
        if not run.end_step(step, loss.detach(), model, score):
            break


def autoencoder(run: Run) -> None:
    """An anomaly detector: an MLP autoencoder (bottleneck 4) trained on normal sensor readings, standardised
    with the plant's stored statistics (kept in millivolts; the readings come in volts); Adam, batch 64, MSE.
    Scored by the AUC of the reconstruction error on a validation set with 15% faults."""
    g = torch.Generator().manual_seed(run.seed)
    x, _ = data.manifold_with_anomalies(g, 6000, anomalies=0.01)
    xv, bad = data.manifold_with_anomalies(g, 600, anomalies=0.15)
    volts_offset = 2.5 + torch.rand(x.shape[1], generator=g) * 5
    volts_scale = 0.05 + 0.1 * torch.rand(x.shape[1], generator=g)
    raw, raw_v = x * volts_scale + volts_offset, xv * volts_scale + volts_offset
    stored_mean_mv, stored_std_mv = raw.mean(0) * 1000, raw.std(0) * 1000
    if run.bug == "stats_unit_mismatch":
        mean = stored_mean_mv  # millivolts subtracted from volts
    else:
        mean = stored_mean_mv / 1000
    std = stored_std_mv / 1000
    x, xv = (raw - mean) / std, (raw_v - mean) / std
    torch.manual_seed(run.seed)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4), nn.Linear(4, 64), nn.ReLU(),
                          nn.Linear(64, 16))  # fmt: skip
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 2e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def score() -> float:
        err = ((model(xv) - xv) ** 2).mean(1)
        return auc(err, bad)

    for step in range(run.steps):
        batch = x[run.indices(len(x), 64)]
        loss = F.mse_loss(model(batch), batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_auc", score(), mode="eval")
        if not run.end_step(step, loss.detach(), model, score):
            break
