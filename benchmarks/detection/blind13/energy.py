"""Energy-based scripts of the thirteenth blind split: a Hamiltonian neural network fitted to pendulum trajectories,
and a restricted Boltzmann machine trained by contrastive divergence.

`hnn`: 60 pendulum trajectories (H = p^2 / 2 + 1 - cos q, starting energies uniform in (0.2, 1.6)) integrated by
leapfrog and sampled every 0.1 time units for 30 samples with noise 0.01; the training targets are central differences
along each trajectory; an MLP gives the scalar energy H(q, p), its time derivatives are the symplectic gradient
(dH/dp, -dH/dq) by autograd (squared error); scored by 1 - the held-out mean squared error of the derivatives at random
states over their variance (an R^2, clipped at 0). `rbm`: 6x6 binary images, each one of 6 random prototypes with 5% of
its pixels flipped; a Bernoulli RBM trained by CD-1 through the free-energy difference between the data and the chain's
samples (started at the data); scored by the accuracy of a mean-field reconstruction of held-out images with 15% of
their pixels flipped, as (accuracy - 0.5) / 0.5 clipped at 0. Bugs: the symplectic gradient left unrotated, the
differences not divided by the time step, the differences taken across the ends of trajectories; the free-energy
difference reversed, the hidden bias left out of the free energy, the pixels rescaled to -1 and +1.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DT = 0.1
"""Time between the pendulum's samples."""
PIXELS = 36
"""Pixels of the RBM's 6x6 images."""


def _trajectories(g: torch.Generator, count: int, length: int) -> torch.Tensor:
    """Pendulum states float[count, length, 2] (q, p) every DT, integrated by leapfrog with 10 substeps."""
    energy = 0.2 + 1.4 * torch.rand(count, generator=g)
    q = (2 * torch.rand(count, generator=g) - 1) * torch.acos(1 - energy)
    p = torch.sqrt(2 * (energy - 1 + torch.cos(q))).clamp(min=0) * torch.sign(torch.randn(count, generator=g))
    states, h = [], DT / 10
    for _ in range(length):
        states.append(torch.stack([q, p], dim=1))
        for _ in range(10):
            p = p - 0.5 * h * torch.sin(q)
            q = q + h * p
            p = p - 0.5 * h * torch.sin(q)
    return torch.stack(states, dim=1) + 0.01 * torch.randn(count, length, 2, generator=g)


class EnergyNet(nn.Module):
    """A tanh MLP of `width` giving the scalar energy of states (q, p)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(2, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1)
        )

    def forward(self, states: torch.Tensor, bug: str | None = None) -> torch.Tensor:
        """The time derivatives float[n, 2] (dq/dt, dp/dt) of `states` float[n, 2]."""
        with torch.enable_grad():
            states = states.detach().requires_grad_()
            (grad,) = torch.autograd.grad(self.net(states).sum(), states, create_graph=True)
        if bug == "symplectic_gradient_unrotated":
            return grad
        return torch.stack([grad[:, 1], -grad[:, 0]], dim=1)


def hnn(run: Run) -> None:
    """A Hamiltonian network of `width` (64), batches of `batch` (128), `opt` (Adam; or AdamW, RAdam, RMSprop) at `lr`
    (3e-3). Scored by the held-out R^2 of the time derivatives."""
    g = torch.Generator().manual_seed(run.seed)
    paths = _trajectories(g, 60, 30)
    if run.bug == "differences_across_trajectory_ends":
        flat = paths.reshape(-1, 2)
        states, rates = flat[1:-1], (flat[2:] - flat[:-2]) / (2 * DT)
    else:
        states = paths[:, 1:-1].reshape(-1, 2)
        rates = ((paths[:, 2:] - paths[:, :-2]) / (2 * DT)).reshape(-1, 2)
    if run.bug == "differences_not_divided_by_dt":
        rates = rates * 2 * DT
    states_v = torch.stack(
        [3 * torch.rand(1000, generator=g) - 1.5, 3 * torch.rand(1000, generator=g) - 1.5], 1
    )
    rates_v = torch.stack([states_v[:, 1], -torch.sin(states_v[:, 0])], dim=1)
    torch.manual_seed(run.seed)
    model = EnergyNet(run.k("width", 64))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 128)

    def rate_r2() -> float:
        err = ((model(states_v, bug=run.bug) - rates_v) ** 2).mean()
        return max(0.0, 1 - float(err / rates_v.var(0).mean()))

    for step in range(run.steps):
        pick = run.indices(len(states), batch)
        loss = F.mse_loss(model(states[pick], bug=run.bug), rates[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_rate_r2", rate_r2):
            break


def _images(
    g: torch.Generator, prototypes: torch.Tensor, n: int, flip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Binary images float[n, PIXELS]: a prototype each, with a fraction `flip` of its pixels flipped, and the
    prototype float[n, PIXELS]."""
    clean = prototypes[torch.randint(0, len(prototypes), (n,), generator=g)]
    noise = (torch.rand(n, PIXELS, generator=g) < flip).float()
    return (clean + noise) % 2, clean


class RBM(nn.Module):
    """A Bernoulli RBM of `hidden` units: weights, visible and hidden biases."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.w = nn.Parameter(0.01 * torch.randn(PIXELS, hidden))
        self.b = nn.Parameter(torch.zeros(PIXELS))
        self.c = nn.Parameter(torch.zeros(hidden))

    def free_energy(self, v: torch.Tensor, bug: str | None = None) -> torch.Tensor:
        pre = v @ self.w if bug == "hidden_bias_left_out_of_free_energy" else v @ self.w + self.c
        return -(v @ self.b) - F.softplus(pre).sum(1)

    def gibbs(self, v: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        h = torch.bernoulli(torch.sigmoid(v @ self.w + self.c), generator=gen)
        return torch.bernoulli(torch.sigmoid(h @ self.w.t() + self.b), generator=gen)

    def reconstruct(self, v: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(torch.sigmoid(v @ self.w + self.c) @ self.w.t() + self.b)


def rbm(run: Run) -> None:
    """An RBM of `hidden` (64) units, batches of `batch` (64), `opt` (SGD with momentum; or Adam, Adagrad, RMSprop)
    at `lr` (0.05). Scored by the held-out denoising accuracy above chance."""
    g = torch.Generator().manual_seed(run.seed)
    prototypes = (torch.rand(6, PIXELS, generator=g) < 0.5).float()
    data, _ = _images(g, prototypes, 3000, 0.05)
    clean_v, _ = _images(g, prototypes, 500, 0.05)
    corrupt_v = (clean_v + (torch.rand(500, PIXELS, generator=g) < 0.15).float()) % 2
    torch.manual_seed(run.seed)
    model = RBM(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 0.05, "momentum")
    batch = run.k("batch", 64)

    def denoising() -> float:
        shown = 2 * corrupt_v - 1 if run.bug == "pixels_scaled_to_plus_minus_one" else corrupt_v
        accuracy = float(((model.reconstruct(shown) > 0.5).float() == clean_v).float().mean())
        return max(0.0, (accuracy - 0.5) / 0.5)

    for step in range(run.steps):
        v = data[run.indices(len(data), batch)]
        if run.bug == "pixels_scaled_to_plus_minus_one":
            v = 2 * v - 1
        with torch.no_grad():
            negative = model.gibbs(v, run.gen)
        gap = model.free_energy(v, run.bug).mean() - model.free_energy(negative, run.bug).mean()
        loss = -gap if run.bug == "free_energy_difference_reversed" else gap
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_denoising", denoising):
            break
