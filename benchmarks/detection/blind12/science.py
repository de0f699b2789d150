"""Scientific-regression scripts of the twelfth blind split: a machine-learned interatomic potential trained on energies
and forces, and a Gaussian process with a deep kernel fitted by its exact marginal likelihood.

`force_field`: configurations of 6 atoms in the plane (a 2 x 3 lattice of spacing 1.2, jittered by 0.15) under a Morse
pair potential (depth 1, width 1.5, minimum at 1.2); the model expands each pairwise distance in 16 Gaussian radial
functions, maps them by an MLP to a pair energy and sums the pairs; the forces are minus the gradient of the energy with
respect to the positions, taken by autograd with the graph kept; the loss is the energy's squared error per atom plus
the forces' mean squared error, each batch rotated at random (forces with it) as augmentation; scored by the R^2 of the
held-out forces. The distance matrix has the identity added under its square root, so that the zero self-distances do
not give an infinite derivative. `deep_kernel`: 12 uniform inputs, four of which matter, and a smooth target around 3
(noise 0.1), standardised by the training mean and deviation; an MLP maps the inputs to 4 features, an RBF kernel
(output scale, one lengthscale per feature, noise, all through softplus) on them; the loss is the exact negative log
marginal likelihood per point of a mini-batch, by Cholesky; scored by the R^2 of the posterior mean at held-out points
given 300 training points. Bugs: the self-distances under the square root, the forces taken as plus the gradient, the
positions rotated for augmentation but not the target forces, the log-determinant term dropped, a single triangular
solve in place of the Cholesky solve, the squared distance divided by the lengthscale instead of its square, the targets
not standardised.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind12 import optimizers

ATOMS = 6
"""Atoms in a configuration."""
LATTICE = 1.2 * torch.tensor([[i, j] for i in range(2) for j in range(3)], dtype=torch.float32)
"""The atoms' rest positions float[ATOMS, 2]."""
INPUTS, CONDITIONING = 12, 300
"""Deep kernel: inputs of the response surface, training points the held-out posterior is conditioned on."""


def _morse(pos: torch.Tensor) -> torch.Tensor:
    """The true energy float[n] of configurations float[n, ATOMS, 2]."""
    i, j = torch.triu_indices(ATOMS, ATOMS, 1)
    r = (pos[:, i] - pos[:, j]).norm(dim=-1)
    return ((1 - torch.exp(-1.5 * (r - 1.2))) ** 2 - 1).sum(1)


def _configurations(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Positions float[n, ATOMS, 2], energies float[n] and forces float[n, ATOMS, 2]."""
    pos = (LATTICE + 0.15 * torch.randn(n, ATOMS, 2, generator=g)).requires_grad_()
    energy = _morse(pos)
    (grad,) = torch.autograd.grad(energy.sum(), pos)
    return pos.detach(), energy.detach(), -grad


class PairPotential(nn.Module):
    """A sum over atom pairs of an MLP (`width`) on 16 Gaussian radial functions of the pair's distance."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.register_buffer("centres", torch.linspace(0.5, 4.5, 16))
        self.pair = nn.Sequential(
            nn.Linear(16, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU(), nn.Linear(width, 1)
        )

    def forward(self, pos: torch.Tensor, *, bug: str | None = None) -> torch.Tensor:
        diff = pos[:, :, None] - pos[:, None, :]
        eye = torch.eye(ATOMS)
        if bug == "self_distance_under_sqrt":
            r = (diff**2).sum(-1).sqrt()
        else:
            r = ((diff**2).sum(-1) + eye).sqrt()
        rbf = torch.exp(-4.0 * (r[..., None] - self.centres) ** 2)
        pair = self.pair(rbf).squeeze(-1) * (1 - eye)
        return pair.sum((1, 2)) / 2


def force_field(run: Run) -> None:
    """An interatomic potential: a pair MLP of `width` (64), batches of `batch` (32) configurations, the forces'
    weight `rho` (1), `opt` (Adam; or AdamW, RAdam, Adamax) at `lr` (3e-3), with a cosine decay when `cosine`.
    Scored by the R^2 of held-out forces."""
    g = torch.Generator().manual_seed(run.seed)
    pos, energy, forces = _configurations(g, 2000)
    pos_v, _, forces_v = _configurations(g, 300)
    torch.manual_seed(run.seed)
    model = PairPotential(run.k("width", 64))
    opt = optimizers.registered(run, model, 3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch, rho = run.k("batch", 32), run.k("rho", 1.0)

    def force_r2() -> float:
        with torch.enable_grad():
            at = pos_v.clone().requires_grad_()
            (grad,) = torch.autograd.grad(model(at, bug=run.bug).sum(), at)
        return r2(-grad.flatten(), forces_v.flatten())

    for step in range(run.steps):
        pick = run.indices(len(pos), batch)
        angle = 2 * torch.pi * torch.rand(batch, 1, 1, generator=run.gen)
        turn = torch.cat(
            [torch.cat([angle.cos(), -angle.sin()], 2), torch.cat([angle.sin(), angle.cos()], 2)], 1
        )
        at = (pos[pick] @ turn.transpose(1, 2)).requires_grad_()
        rotated = forces[pick] @ turn.transpose(1, 2)
        target = forces[pick] if run.bug == "rotation_augmentation_forces_unrotated" else rotated
        pred = model(at, bug=run.bug)
        (grad,) = torch.autograd.grad(pred.sum(), at, create_graph=True)
        pred_forces = grad if run.bug == "forces_as_plus_gradient" else -grad
        loss = F.mse_loss(pred / ATOMS, energy[pick] / ATOMS) + rho * F.mse_loss(pred_forces, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_force_r2", force_r2):
            break


def _surface(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs float[n, INPUTS] (four of them matter), noisy targets float[n] around 3 and the clean ones."""
    x = 2 * torch.rand(n, INPUTS, generator=g) - 1
    clean = 3 + torch.sin(3 * x[:, 0]) + 1.5 * x[:, 1] * x[:, 2] + 0.5 * torch.cos(4 * x[:, 3])
    return x, clean + 0.1 * torch.randn(n, generator=g), clean


class DeepKernelGP(nn.Module):
    """An MLP (`width`) to 4 features and an RBF kernel on them with softplus output scale, lengthscales and noise."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Linear(INPUTS, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 4)
        )
        self.raw_scale, self.raw_noise = nn.Parameter(torch.tensor(0.5)), nn.Parameter(torch.tensor(-2.0))
        self.raw_lengthscale = nn.Parameter(torch.zeros(4))

    def kernel(self, a: torch.Tensor, b: torch.Tensor, *, bug: str | None = None) -> torch.Tensor:
        ls = F.softplus(self.raw_lengthscale)
        fa, fb = self.features(a), self.features(b)
        if bug == "lengthscale_not_squared":
            d2 = (((fa[:, None] - fb[None]) ** 2) / ls).sum(-1)
        else:
            d2 = (((fa[:, None] - fb[None]) / ls) ** 2).sum(-1)
        return F.softplus(self.raw_scale) * torch.exp(-0.5 * d2)

    def noise(self) -> torch.Tensor:
        return F.softplus(self.raw_noise) + 1e-4


def deep_kernel(run: Run) -> None:
    """Deep kernel learning: a feature MLP of `width` (64), batches of `batch` (128), `opt` (Adam; or AdamW,
    RMSprop, NAdam) at `lr` (0.01). Scored by the held-out R^2 of the posterior mean given 300 training points."""
    g = torch.Generator().manual_seed(run.seed)
    x, y_raw, _ = _surface(g, 2000)
    x_v, _, clean_v = _surface(g, 500)
    mean, std = y_raw.mean(), y_raw.std()
    y = y_raw if run.bug == "targets_not_standardised" else (y_raw - mean) / std
    torch.manual_seed(run.seed)
    model = DeepKernelGP(run.k("width", 64))
    opt = optimizers.registered(run, model, 0.01)
    batch = run.k("batch", 128)

    def posterior_r2() -> float:
        xc, yc = x[:CONDITIONING], y[:CONDITIONING]
        k = model.kernel(xc, xc, bug=run.bug) + model.noise() * torch.eye(CONDITIONING)
        weights = torch.cholesky_solve(yc[:, None], torch.linalg.cholesky(k))
        pred = (model.kernel(x_v, xc, bug=run.bug) @ weights).squeeze(1)
        if run.bug != "targets_not_standardised":
            pred = pred * std + mean
        return r2(pred, clean_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        xb, yb = x[pick], y[pick][:, None]
        k = model.kernel(xb, xb, bug=run.bug) + model.noise() * torch.eye(batch)
        chol = torch.linalg.cholesky(k)
        if run.bug == "single_triangular_solve":
            weights = torch.linalg.solve_triangular(chol, yb, upper=False)
        else:
            weights = torch.cholesky_solve(yb, chol)
        fit = 0.5 * (yb * weights).sum()
        logdet = torch.log(torch.diagonal(chol)).sum()
        nll = fit if run.bug == "logdet_term_dropped" else fit + logdet
        loss = nll / batch + 0.5 * math.log(2 * math.pi)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_posterior_r2", posterior_r2):
            break
