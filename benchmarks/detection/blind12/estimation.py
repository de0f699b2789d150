"""Estimation scripts of the twelfth blind split: individual treatment effects from observational data with TARNet, and
an insurance pure-premium model with a Tweedie deviance.

`tarnet`: 10 normal covariates, a treatment given with probability sigmoid(x0 + 0.5 x1) (confounded), an outcome x0 +
0.5 x2^2 + sin(2 x3) plus, under treatment, an effect 1 + x1 + 0.5 x4 x5, with noise 0.5; a shared ELU representation
and one outcome head per arm, each row's factual outcome fitted by the head of the arm it received (squared error);
scored by 1 - the held-out mean squared error of the estimated effects over their variance (the precision in estimating
heterogeneous effects, as an R^2, clipped at 0). `tweedie`: policies with 8 normal covariates and an exposure in years
uniform in (0.2, 1); claim counts Poisson with a rate exp(log-linear and interaction terms) x exposure / 2, claim sizes
gamma with mean 2 (shape 2), the amount their sum; an MLP gives the log pure premium, the log exposure is added as an
offset, and the loss is the Tweedie deviance with power 1.5, -y mu^(1-p) / (1-p) + mu^(2-p) / (2-p) (up to terms free of
mu); scored by the R^2 of the held-out log pure premium against the true one. Bugs: the heads picked with the treatment
inverted, both heads fitted to every row's outcome, the rows without claims dropped from training, the exposure added
without its logarithm, the exposure used both as the offset and as a sample weight, the log link left out (the output
used as the mean), the deviance's two powers swapped.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind12 import optimizers

POWER = 1.5
"""The Tweedie power (a compound Poisson-gamma amount)."""


def _observational(
    g: torch.Generator, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Covariates float[n, 10], treatments float[n] (0 or 1), factual outcomes float[n], true effects float[n]."""
    x = torch.randn(n, 10, generator=g)
    t = (torch.rand(n, generator=g) < torch.sigmoid(x[:, 0] + 0.5 * x[:, 1])).float()
    base = x[:, 0] + 0.5 * x[:, 2] ** 2 + torch.sin(2 * x[:, 3])
    effect = 1 + x[:, 1] + 0.5 * x[:, 4] * x[:, 5]
    return x, t, base + t * effect + 0.5 * torch.randn(n, generator=g), effect


class TARNet(nn.Module):
    """A shared ELU representation of `width` and an outcome head per arm (index 0: control, 1: treated)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.shared = nn.Sequential(nn.Linear(10, width), nn.ELU(), nn.Linear(width, width), nn.ELU())
        self.heads = nn.ModuleList(
            [
                nn.Sequential(nn.Linear(width, width // 2), nn.ELU(), nn.Linear(width // 2, 1))
                for _ in range(2)
            ]
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.shared(x)
        return self.heads[0](h).squeeze(1), self.heads[1](h).squeeze(1)


def tarnet(run: Run) -> None:
    """TARNet: a representation of `width` (64), batches of `batch` (128), `opt` (Adam; or AdamW, NAdam, Nesterov
    SGD) at `lr` (2e-3). Scored by the held-out R^2 of the estimated individual effects."""
    g = torch.Generator().manual_seed(run.seed)
    x, t, y, _ = _observational(g, 4000)
    x_v, _, _, effect_v = _observational(g, 1000)
    torch.manual_seed(run.seed)
    model = TARNet(run.k("width", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 128)

    def effect_r2() -> float:
        control, treated = model(x_v)
        return max(0.0, 1 - float(((treated - control - effect_v) ** 2).mean() / effect_v.var()))

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        control, treated = model(x[pick])
        if run.bug == "both_heads_fit_every_row":
            loss = F.mse_loss(control, y[pick]) + F.mse_loss(treated, y[pick])
        else:
            arm = t[pick] == 0 if run.bug == "treatment_inverted_when_picking_head" else t[pick] == 1
            loss = F.mse_loss(torch.where(arm, treated, control), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_effect_r2", effect_r2):
            break


def _policies(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Covariates float[n, 8], exposures float[n], claim amounts float[n], true log pure premiums float[n]."""
    x = torch.randn(n, 8, generator=g)
    exposure = 0.2 + 0.8 * torch.rand(n, generator=g)
    log_premium = 0.6 * x[:, 0] - 0.4 * x[:, 1] + 0.3 * x[:, 2] * x[:, 3] + 0.5 * torch.sin(2 * x[:, 4])
    counts = torch.poisson(torch.exp(log_premium) * exposure / 2, generator=g)
    amounts = torch._standard_gamma(2 * counts.clamp(min=1e-6), generator=g) * (counts > 0)
    return x, exposure, amounts, log_premium


def tweedie(run: Run) -> None:
    """A Tweedie pure-premium MLP of `width` (32), batches of `batch` (256), `opt` (Adam; or Adagrad, RMSprop, AdamW)
    at `lr` (3e-3). Scored by the held-out R^2 of the log pure premium."""
    g = torch.Generator().manual_seed(run.seed)
    x, exposure, amounts, _ = _policies(g, 8000)
    x_v, _, _, log_premium_v = _policies(g, 1000)
    if run.bug == "claim_free_rows_dropped":
        keep = amounts > 0
        x, exposure, amounts = x[keep], exposure[keep], amounts[keep]
    torch.manual_seed(run.seed)
    width = run.k("width", 32)
    model = nn.Sequential(
        nn.Linear(8, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1)
    )
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 256)

    def log_premium_r2() -> float:
        pred = model(x_v).squeeze(1)
        if not torch.isfinite(pred).all():
            return 0.0
        return max(0.0, 1 - float(((pred - log_premium_v) ** 2).mean() / log_premium_v.var()))

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        out, amount = model(x[pick]).squeeze(1), amounts[pick]
        if run.bug == "log_link_left_out":
            mu = out * exposure[pick]
        elif run.bug == "exposure_offset_not_logged":
            mu = torch.exp(out + exposure[pick])
        else:
            mu = torch.exp(out + torch.log(exposure[pick]))
        if run.bug == "deviance_powers_swapped":
            deviance = -amount * mu ** (2 - POWER) / (2 - POWER) + mu ** (1 - POWER) / (1 - POWER)
        else:
            deviance = -amount * mu ** (1 - POWER) / (1 - POWER) + mu ** (2 - POWER) / (2 - POWER)
        if run.bug == "exposure_as_weight_and_offset":
            deviance = deviance * exposure[pick]
        loss = deviance.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_log_premium_r2", log_premium_r2):
            break
