"""Scripts of the ninth blind split on continual learning and operator learning: elastic weight consolidation over
two tasks, and a Fourier neural operator for a one-dimensional PDE.

`ewc`: an MLP with one five-way head per task (outputs 0-4 and 5-9) learns task A (five classes from a fixed teacher) for the first half of the run, then task B (the
same teacher on permuted features); at the switch it stores the weights and the diagonal Fisher information
(squared gradients of the log-likelihood of its own predictions on task A batches) and adds lambda/2 sum F (w -
w_A)^2 to task B's loss; scored by the mean held-out accuracy on both tasks. `fno`: two Fourier layers (a learned
complex weight on the lowest `modes` frequencies of an rfft over the grid, plus a pointwise 1x1 convolution, GELU)
between a lifting and a projection map the initial state of a viscous, weakly nonlinear diffusion on a periodic
grid of 64 points to its state at a later time; scored by held-out R^2. Bugs: the stored weights not cloned (the
anchor follows the weights), the Fisher computed on task B's data, the kept modes computed as zero, the spectral
weights initialised without the 1/(in x out) scale.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.torch_real.loop import make_optimizer


def _teacher_task(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Features float[n, 20] and labels long[n] of five classes from a fixed random teacher network."""
    rg = torch.Generator().manual_seed(941)
    w1, w2 = torch.randn(20, 32, generator=rg) / math.sqrt(20), torch.randn(32, 5, generator=rg)
    x = torch.randn(n, 20, generator=g)
    return x, (torch.tanh(x @ w1) @ w2).argmax(1)


def ewc(run: Run) -> None:
    """EWC over two tasks: a 20-`width`-`width`-10 MLP (two heads) (`width` 64), Adam (`opt`; or SGD with momentum, Adamax,
    RMSprop) at `lr` (2e-3), batch `batch` (64), lambda `lam` (5000). Scored by the mean accuracy on both tasks."""
    g = torch.Generator().manual_seed(run.seed)
    xa, ya = _teacher_task(g, 5000)
    perm = torch.randperm(20, generator=torch.Generator().manual_seed(947))
    xb, yb = _teacher_task(g, 5000)
    xb = xb[:, perm]
    xav, yav, xa, ya = xa[:1000], ya[:1000], xa[1000:], ya[1000:]
    xbv, ybv, xb, yb = xb[:1000], yb[:1000], xb[1000:], yb[1000:]
    torch.manual_seed(run.seed)
    width = run.k("width", 64)
    model = nn.Sequential(
        nn.Linear(20, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)
    )
    name = run.k("opt", "adam")
    opt = make_optimizer(name, model.parameters(), run.k("lr", 0.02 if name == "momentum" else 2e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch, lam, switch = run.k("batch", 64), run.k("lam", 5000.0), run.steps // 2
    anchor: dict[str, torch.Tensor] = {}
    fisher: dict[str, torch.Tensor] = {}

    def both() -> float:
        return (accuracy(model(xav)[:, :5], yav) + accuracy(model(xbv)[:, 5:], ybv)) / 2

    for step in range(run.steps):
        if step == switch:
            fx = xb if run.bug == "fisher_from_task_b_data" else xa
            fisher = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
            for _ in range(20):
                j = run.indices(len(fx), batch)
                logp = F.log_softmax(model(fx[j])[:, :5], 1)
                pred = logp.argmax(1)
                model.zero_grad()
                F.nll_loss(logp, pred).backward()
                for n, p in model.named_parameters():
                    assert p.grad is not None
                    fisher[n] += p.grad.detach() ** 2 / 20
            model.zero_grad()
            if run.bug == "anchor_weights_not_cloned":
                anchor = {n: p for n, p in model.named_parameters()}
            else:
                anchor = {n: p.detach().clone() for n, p in model.named_parameters()}
            if run.bug is not None:
                run.took_effect(step)
        if step < switch:
            i = run.indices(len(ya), batch)
            loss = F.cross_entropy(model(xa[i])[:, :5], ya[i])
        else:
            i = run.indices(len(yb), batch)
            penalty = sum((fisher[n] * (p - anchor[n]) ** 2).sum() for n, p in model.named_parameters())
            loss = F.cross_entropy(model(xb[i])[:, 5:], yb[i]) + lam / 2 * penalty
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", both):
            break


def _diffusion(g: torch.Generator, n: int, grid: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """Initial states float[n, grid] (random low-frequency Fourier series) and the states float[n, grid] after
    integrating u_t = 0.02 u_xx - 0.5 u u_x on the periodic unit interval up to t 0.3, finely."""
    k = torch.arange(1, 9).float()
    a = torch.randn(n, 8, generator=g) / k
    b = torch.randn(n, 8, generator=g) / k
    x = torch.arange(grid).float() / grid
    u = (a[:, :, None] * torch.sin(2 * math.pi * k[:, None] * x) + b[:, :, None] * torch.cos(2 * math.pi * k[:, None] * x)).sum(1)  # fmt: skip
    u0, dx, dt = u.clone(), 1 / grid, 0.3 / 600
    for _ in range(600):
        ux = (u.roll(-1, 1) - u.roll(1, 1)) / (2 * dx)
        uxx = (u.roll(-1, 1) - 2 * u + u.roll(1, 1)) / dx**2
        u = u + dt * (0.02 * uxx - 0.5 * u * ux)
    return u0, u


class SpectralConv(nn.Module):
    def __init__(self, width: int, modes: int, *, unscaled: bool) -> None:
        super().__init__()
        self.modes = modes
        scale = 1.0 if unscaled else 1 / (width * width)
        self.weight = nn.Parameter(scale * torch.randn(width, width, max(modes, 1), dtype=torch.cfloat))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x_ft = torch.fft.rfft(x)
        out = torch.zeros_like(x_ft)
        m = self.modes
        out[:, :, :m] = torch.einsum("bix,iox->box", x_ft[:, :, :m], self.weight[:, :, :m])
        return torch.fft.irfft(out, n=x.shape[-1])


class FNO(nn.Module):
    def __init__(self, width: int, modes: int, *, unscaled: bool = False) -> None:
        super().__init__()
        self.lift = nn.Conv1d(2, width, 1)
        self.spectral = nn.ModuleList(SpectralConv(width, modes, unscaled=unscaled) for _ in range(2))
        self.pointwise = nn.ModuleList(nn.Conv1d(width, width, 1) for _ in range(2))
        self.project = nn.Sequential(nn.Conv1d(width, 64, 1), nn.GELU(), nn.Conv1d(64, 1, 1))

    def forward(self, u0: torch.Tensor) -> torch.Tensor:
        grid = torch.linspace(0, 1, u0.shape[-1]).expand_as(u0)
        h = self.lift(torch.stack([u0, grid], 1))
        for spectral, pointwise in zip(self.spectral, self.pointwise, strict=True):
            h = F.gelu(spectral(h) + pointwise(h))
        return self.project(h)[:, 0]


def fno(run: Run) -> None:
    """A 1-D Fourier neural operator: width `width` (24), 12 modes, Adam (`opt`; or AdamW, Adamax, RAdam) at `lr`
    (3e-3), batch `batch` (32), MSE. Scored by held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    u0, u = _diffusion(g, 1200)
    u0v, uv, u0, u = u0[:200], u[:200], u0[200:], u[200:]
    torch.manual_seed(run.seed)
    grid = u0.shape[-1]
    modes = grid // 128 if run.bug == "modes_computed_as_zero" else 12
    model = FNO(run.k("width", 24), modes, unscaled=run.bug == "spectral_weights_unscaled")
    opt = make_optimizer(run.k("opt", "adam"), model.parameters(), run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 32)
    for step in range(run.steps):
        i = run.indices(len(u), batch)
        loss = F.mse_loss(model(u0[i]), u[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(model(u0v), uv)):
            break
