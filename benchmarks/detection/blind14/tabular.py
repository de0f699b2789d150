"""Tabular scripts of the fourteenth blind split: deep evidential regression, and a neural additive model for credit
risk.

`evidential`: 8 normal inputs, a target from a random two-layer teacher (centred, unit scale) plus noise whose scale
grows with the first input (0.1 to 0.6), winsorised at the 5th smallest and largest values; an MLP gives the four
parameters of a normal-inverse-gamma distribution (the mean gamma as it is; nu, beta through softplus; alpha through
softplus + 1); the loss is the NIG negative log-likelihood plus 0.01 x |y - gamma| x (2 nu + alpha); scored by the
held-out R^2 of gamma (clipped at 0). `additive`: a loan book of 6 raw fields in their own units (income, age, debt
ratio, months at the address, open lines, late payments), the income logged, standardised by the training rows'
statistics; the default log-odds is a sum of one nonlinear shape per field; a neural additive model (one small ReLU
MLP per field, their outputs summed with a bias) trained by BCE; scored by the held-out Gini coefficient (2 AUC - 1,
clipped at 0). Bugs: the softplus applied to every head, the mean included; the evidence heads used raw, without
softplus; nu left out of the NIG's Omega = 2 beta (1 + nu); the targets sorted in place while reading off the
winsorising bounds; the feature networks built as one module repeated; the last field left out by an off-by-one slice;
the labels coded as -1 and +1 for the BCE.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers


def _regression(
    g: torch.Generator, teacher: tuple[torch.Tensor, torch.Tensor], n: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs float[n, 8] and noisy targets float[n]."""
    x = torch.randn(n, 8, generator=g)
    mean = torch.tanh(x @ teacher[0]) @ teacher[1]
    scale = 0.1 + 0.5 * torch.sigmoid(2 * x[:, 0])
    return x, mean + scale * torch.randn(n, generator=g)


def nig_nll(y: torch.Tensor, gamma: torch.Tensor, nu: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor,
            omega: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """The normal-inverse-gamma negative log-likelihood float[n] of `y` (Student-t marginal) given Omega."""
    return (0.5 * torch.log(math.pi / nu) - alpha * torch.log(omega)
            + (alpha + 0.5) * torch.log(nu * (y - gamma) ** 2 + omega)
            + torch.lgamma(alpha) - torch.lgamma(alpha + 0.5))  # fmt: skip


def evidential(run: Run) -> None:
    """An evidential regressor of `width` (64), batches of `batch` (128), `opt` (Adam; or AdamW, RMSprop, RAdam) at
    `lr` (1e-3), a linear warm-up over the first `warmup` (0) steps. Scored by the held-out R^2 of the mean."""
    g = torch.Generator().manual_seed(run.seed)
    teacher = (torch.randn(8, 32, generator=g) / 8**0.5, torch.randn(32, generator=g) / 32**0.5)
    x, y = _regression(g, teacher, 4000)
    ordered = y.numpy()
    if run.bug == "targets_sorted_in_place":
        ordered.sort()
    else:
        ordered = np.sort(ordered)
    y = y.clamp(float(ordered[4]), float(ordered[-5]))
    centre, spread = y.mean(), y.std()
    x_v, y_v = _regression(g, teacher, 1000)
    y, y_v = (y - centre) / spread, (y_v - centre) / spread
    torch.manual_seed(run.seed)
    width = run.k("width", 64)
    model = nn.Sequential(
        nn.Linear(8, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 4)
    )
    opt = optimizers.registered(run, model, 1e-3)
    warmup = run.k("warmup", 0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / warmup)) if warmup else None
    batch = run.k("batch", 128)

    def heads(inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = model(inputs)
        if run.bug == "softplus_on_every_head":
            out = F.softplus(out)
            return out[:, 0], out[:, 1], out[:, 2] + 1, out[:, 3]
        if run.bug == "evidence_heads_raw":
            return out[:, 0], out[:, 1], out[:, 2] + 1, out[:, 3]
        return out[:, 0], F.softplus(out[:, 1]), F.softplus(out[:, 2]) + 1, F.softplus(out[:, 3])

    def mean_r2() -> float:
        pred = heads(x_v)[0]
        if not torch.isfinite(pred).all():
            return 0.0
        return max(0.0, 1 - float(((pred - y_v) ** 2).mean() / y_v.var()))

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        target = y[pick]
        gamma, nu, alpha, beta = heads(x[pick])
        omega = 2 * beta if run.bug == "omega_without_nu" else 2 * beta * (1 + nu)
        nll = nig_nll(target, gamma, nu, alpha, beta, omega)
        loss = (nll + 0.01 * (target - gamma).abs() * (2 * nu + alpha)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_mean_r2", mean_r2):
            break


FIELDS = 6
"""Fields of a loan record."""


def _loans(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw loan fields float[n, FIELDS] in their own units and whether each loan defaulted float[n]."""
    income = torch.exp(10.5 + 0.5 * torch.randn(n, generator=g))
    age = 21 + 50 * torch.rand(n, generator=g)
    debt = torch.rand(n, generator=g).pow(1.5)
    months = 120 * torch.rand(n, generator=g)
    lines = torch.poisson(torch.full((n,), 4.0), generator=g)
    late = torch.poisson(torch.full((n,), 0.8), generator=g)
    log_odds = (-1.2 * torch.tanh((torch.log(income) - 10.5) * 2) + 0.8 * ((age - 45) / 15) ** 2 - 0.8
                + 3 * (debt > 0.6).float() - 0.5 * torch.sqrt(months / 30) + 0.25 * (lines - 4)
                + 2.0 * torch.tanh(late))  # fmt: skip
    default = (torch.rand(n, generator=g) < torch.sigmoid(log_odds - 0.5)).float()
    return torch.stack([income, age, debt, months, lines, late], dim=1), default


class FeatureNet(nn.Module):
    """One field's shape: a ReLU MLP from a scalar of `width` units."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                                 nn.Linear(width, 1))  # fmt: skip

    def forward(self, column: torch.Tensor) -> torch.Tensor:
        return self.net(column.unsqueeze(1)).squeeze(1)


class AdditiveModel(nn.Module):
    """A neural additive model: the bias plus one FeatureNet's output per field."""

    def __init__(self, width: int, bug: str | None = None) -> None:
        super().__init__()
        if bug == "feature_nets_one_module_repeated":
            self.shapes = nn.ModuleList([FeatureNet(width)] * FIELDS)
        else:
            self.shapes = nn.ModuleList([FeatureNet(width) for _ in range(FIELDS)])
        self.bias = nn.Parameter(torch.zeros(()))
        self.used = FIELDS - 1 if bug == "last_field_left_out" else FIELDS

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bias + sum(self.shapes[j](x[:, j]) for j in range(self.used))


def additive(run: Run) -> None:
    """A neural additive model with feature networks of `width` (32), batches of `batch` (256), `opt` (Adam; or
    Adagrad, AdamW, NAdam) at `lr` (3e-3). Scored by the held-out Gini coefficient."""
    g = torch.Generator().manual_seed(run.seed)
    raw, default = _loans(g, 6000)
    raw_v, default_v = _loans(g, 2000)
    raw, raw_v = raw.clone(), raw_v.clone()
    raw[:, 0], raw_v[:, 0] = torch.log(raw[:, 0]), torch.log(raw_v[:, 0])
    mean, std = raw.mean(0), raw.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    target = 2 * default - 1 if run.bug == "labels_coded_minus_one_and_one" else default
    torch.manual_seed(run.seed)
    model = AdditiveModel(run.k("width", 32), run.bug)
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 256)

    def gini() -> float:
        return max(0.0, 2 * auc(model(x_v), default_v) - 1)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), target[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_gini", gini):
            break
