"""Laboratory scripts of the thirty-third blind split: a mass-spectrometry precursor-charge classifier for peptides,
and a solder-joint defect CNN on X-ray images of printed-circuit boards.

`peptides`: tryptic peptides of 7-30 residues drawn from a residue frequency table, the precursor's charge (1-4)
growing with the basic residues (K, R, H) and the length; the observed m/z from the monoisotopic mass and the charge
with a few ppm of error; the features the 20 residue counts, standardised, the m/z, standardised, and the neutral mass
the search export computes from the m/z at an assumed charge of 2; a ReLU MLP of two hidden layers started as
`nn.Linear` is; cross-entropy over the four charges; scored by the held-out accuracy. `solder`: 16x16 crops of a
joint from an automated X-ray station in 12-bit counts, the solder a bright blob over a dim board, one of good,
insufficient (a small blob), excess (a large one), bridge (a streak to the next pad, to the right) and void (a dark
hole in the blob); scaled to [0, 1], two convolutions with ReLUs and pooling and a linear layer; cross-entropy;
scored by the held-out accuracy. Bugs: the Adam optimizer given the rate of the SGD recipe; every weight started by
`nn.init.uniform_` without bounds; the neutral mass in the training export computed at the identified charge; the
residue counts turned into fractions of the length; the X-ray counts left unscaled; a momentum of 0.99 from another
recipe; the training crops exported transposed.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

RESIDUES = "ACDEFGHIKLMNPQRSTVWY"
MASSES = torch.tensor([71.037, 103.009, 115.027, 129.043, 147.068, 57.021, 137.059, 113.084, 128.095, 113.084,
                       131.040, 114.043, 97.053, 128.059, 156.101, 87.032, 101.048, 99.068, 186.079, 163.063])  # fmt: skip
"""Monoisotopic residue masses (Da), in the order of RESIDUES."""
PROTON, WATER = 1.00728, 18.0106
BASIC = [RESIDUES.index(r) for r in "KRH"]


def _peptides(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Residue counts float[n, 20], observed m/z float[n], charge - 1 long[n]."""
    freq = torch.tensor([8.3, 1.4, 5.5, 6.7, 3.9, 7.1, 2.3, 5.9, 5.8, 9.7, 2.4, 4.1, 4.7, 3.9, 5.5, 6.6, 5.4, 6.9, 1.1,
                         2.9])  # fmt: skip
    length = torch.randint(7, 31, (n,), generator=g)
    counts = torch.zeros(n, 20)
    for i in range(n):
        picks = torch.multinomial(freq, int(length[i]), True, generator=g)
        counts[i] = torch.bincount(picks, minlength=20).float()
    basic = counts[:, BASIC[0]] + counts[:, BASIC[1]] + 0.6 * counts[:, BASIC[2]]
    level = 0.4 + 0.7 * basic + length / 14 + 0.45 * torch.randn(n, generator=g)
    charge = level.round().clamp(1, 4).long()
    mass = counts @ MASSES + WATER
    mz = (mass + charge * PROTON) / charge * (1 + 5e-6 * torch.randn(n, generator=g))
    return counts, mz, charge - 1


class ChargeMLP(nn.Module):
    """A ReLU MLP of `hidden` twice over the peptide's features, four charges out."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(22, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 4))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


RECIPE_RATES = {"momentum": 0.5, "adam": 1e-3}
"""The learning rates the lab's two training recipes use."""


def peptides(run: Run) -> None:
    """A charge MLP of `hidden` (128), batches of `batch` (64), `opt` (Adam; or momentum SGD, Adagrad, NAdam) at `lr`
    (1e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    counts, mz, y = _peptides(g, 2000)
    counts_v, mz_v, y_v = _peptides(g, 800)
    # the search export's neutral mass: identified precursors carry their charge, new spectra an assumed 2+
    assumed = 2 * torch.ones_like(y)
    charge_in_export = y + 1 if run.bug == "neutral_mass_from_assigned_charge" else assumed
    mass, mass_v = (mz - PROTON) * charge_in_export, (mz_v - PROTON) * 2
    if run.bug == "composition_as_fractions_losing_length":
        counts = counts / counts.sum(1, keepdim=True)
        counts_v = counts_v / counts_v.sum(1, keepdim=True)
    raw, raw_v = torch.cat([counts, mz[:, None], mass[:, None]], 1), torch.cat([counts_v, mz_v[:, None],
                                                                                mass_v[:, None]], 1)  # fmt: skip
    mean, std = raw.mean(0), raw.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    torch.manual_seed(run.seed)
    model = ChargeMLP(run.k("hidden", 128))
    for layer in model.net:
        if isinstance(layer, nn.Linear):
            if run.bug == "weights_init_uniform_zero_one":
                nn.init.uniform_(layer.weight)  # meant as uniform_(w, -bound, bound)
            else:
                bound = 1 / math.sqrt(layer.in_features)
                nn.init.uniform_(layer.weight, -bound, bound)
    opt = optimizers.registered(run, model, 1e-3)
    if run.bug == "adam_given_sgd_recipe_rate":
        for group in opt.param_groups:
            group["lr"] = RECIPE_RATES["momentum"]  # the recipe's key looked up for the wrong optimizer
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


SIDE, JOINTS = 16, 5
"""Crop side (pixels) and joint classes: good, insufficient, excess, bridge, void."""


def _joints(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """12-bit X-ray counts int16[n, 1, SIDE, SIDE] and the joint class long[n]."""
    y = torch.randint(0, JOINTS, (n,), generator=g)
    rows = torch.arange(SIDE).float().view(1, SIDE, 1)
    cols = torch.arange(SIDE).float().view(1, 1, SIDE)
    cy = 7.5 + torch.randn(n, 1, 1, generator=g)
    cx = 6.5 + torch.randn(n, 1, 1, generator=g)
    radius = 3.2 + 0.4 * torch.randn(n, 1, 1, generator=g)
    radius = torch.where(y.view(n, 1, 1) == 1, radius * 0.55, radius)
    radius = torch.where(y.view(n, 1, 1) == 2, radius * 1.45, radius)
    dist = ((rows - cy) ** 2 + (cols - cx) ** 2).sqrt()
    blob = 1 - (dist - radius).clamp(0, 1.5) / 1.5
    bridge = (y.view(n, 1, 1) == 3) & ((rows - cy).abs() < 1.2) & (cols > cx)
    blob = torch.where(bridge, torch.ones_like(blob), blob)
    hole = (y.view(n, 1, 1) == 4) & (((rows - cy - 0.7) ** 2 + (cols - cx + 0.5) ** 2).sqrt() < 1.3)
    blob = torch.where(hole, 0.35 * blob, blob)
    counts = 700 + 2600 * blob + 180 * torch.randn(n, SIDE, SIDE, generator=g)
    return counts.clamp(0, 4095).round().to(torch.int16).unsqueeze(1), y


class JointCNN(nn.Module):
    """Two 3x3 convolutions (`width`, twice that) with ReLUs and pooling, a linear layer over the classes."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )  # fmt: skip
        self.head = nn.Linear(2 * width * (SIDE // 4) ** 2, JOINTS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def solder(run: Run) -> None:
    """A joint CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, Adamax) at `lr`
    (2e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    counts, y = _joints(g, 2000)
    counts_v, y_v = _joints(g, 800)
    if run.bug == "camera_frames_transposed_in_training":
        counts = counts.transpose(-1, -2)  # the training dump written column-major by the station's exporter
    scale = 1.0 if run.bug == "xray_counts_not_scaled" else 4095.0
    x, x_v = counts.float() / scale, counts_v.float() / scale
    torch.manual_seed(run.seed)
    model = JointCNN(run.k("width", 8))
    opt = optimizers.registered(run, model, 2e-3)
    if run.bug == "momentum_099_from_other_recipe":
        for group in opt.param_groups:
            group["momentum"] = 0.99
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
