"""Produce scripts of the forty-fourth blind split: a cheese firmness regressor from texture-analyser curves, and a
hydroponic lettuce fresh-weight CNN on canopy images.

`cheese`: two-bite texture-profile curves of cheese samples (64 force readings at 100 Hz after the logger starts, a
few readings of baseline before the probe's trigger force), the fat and moisture of the batch; the curve aligned at the
trigger, the cohesiveness (second bite's area over the first's), all standardised, and the work of compression in N s
appended; a ReLU MLP of five hidden layers regresses the sensory panel's firmness score scaled to [0, 1]; scored by
the held-out R^2. `lettuce`: 16 x 16 RGB photos taken from above of lettuce heads on a hydroponic raft on six days of
their growth; a ReLU CNN of four convolutions and a global mean regresses the log fresh weight of the head that day;
random flips; scored by the held-out R^2 over unseen plants. Bugs: the work of compression without the sampling
interval; sigmoid units everywhere for a score in [0, 1]; curves not aligned at the trigger; the cohesiveness of a
missed first bite; Hardsigmoid for ReLU; a random resized crop; the harvest weight for every day's photo.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

READINGS, DT, TRIGGER = 64, 0.01, 0.5
"""Force readings a curve keeps, the seconds between readings, the probe's trigger force (N)."""


def _curves(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Raw logger curves float[n, READINGS + 12] in N, the batch's fat and moisture float[n, 2] and the panel's
    firmness score scaled to [0, 1] float[n]; about 2 % of the samples slipped and the probe missed them."""
    hardness = torch.exp(math.log(10) + (math.log(60) - math.log(10)) * torch.rand(n, generator=g))
    cohesive = 0.3 + 0.5 * torch.rand(n, generator=g)
    spring = 0.6 + 0.35 * torch.rand(n, generator=g)
    fat, moisture = 20 + 15 * torch.rand(n, generator=g), 35 + 10 * torch.rand(n, generator=g)
    t = torch.arange(READINGS + 12).float().unsqueeze(0)
    start = torch.randint(0, 12, (n, 1), generator=g).float()  # the baseline logged before the trigger
    u1 = ((t - start) / 22).clamp(0, 1)
    bite1 = hardness.unsqueeze(1) * torch.sin(math.pi * u1).clamp(min=0) ** 1.5
    u2 = ((t - start - 30) / (22 * spring.unsqueeze(1))).clamp(0, 1)
    bite2 = (hardness * cohesive).unsqueeze(1) * torch.sin(math.pi * u2).clamp(min=0) ** 1.5
    curve = bite1 + bite2 + 0.08 * torch.randn(n, READINGS + 12, generator=g)
    missed = torch.rand(n, generator=g) < 0.02
    curve = torch.where(missed.unsqueeze(1), 0.08 * torch.randn(n, READINGS + 12, generator=g), curve)
    score = 1 + 8 * torch.sigmoid(
        1.8 * (hardness.log() - math.log(25)) + 3 * (cohesive - 0.55) - 0.06 * (fat - 27)
    )
    score = (score + 0.3 * torch.randn(n, generator=g)).clamp(1, 9)
    return curve, torch.stack([fat, moisture], 1), (score - 1) / 8


def _features(
    curve: torch.Tensor, batch: torch.Tensor, bug: str | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The curve from its trigger (or from the logger's start), the cohesiveness, the fat and moisture, and the
    work of compression float[n]; with the rows kept (the probe touched the sample)."""
    n = len(curve)
    touched = curve.amax(1) > TRIGGER
    first = (curve > TRIGGER).float().argmax(1)
    if bug == "curves_not_aligned_at_trigger":
        aligned = curve[:, :READINGS]
    else:
        rows = (first.unsqueeze(1) + torch.arange(READINGS)).clamp(max=curve.shape[1] - 1)
        aligned = curve.gather(1, rows)
    above = (aligned - TRIGGER).clamp(min=0)  # the force above the trigger, the baseline's noise left out
    area1, area2 = above[:, :30].sum(1), above[:, 30:].sum(1)
    if bug == "cohesiveness_over_missed_first_bite":
        keep = torch.ones(n, dtype=torch.bool)
        cohesive = area2 / area1
    else:
        keep = touched
        cohesive = area2 / area1.clamp(min=1e-3)
    work = aligned.clamp(min=0).sum(1)
    if bug != "work_of_compression_without_dt":
        work = work * DT
    return torch.cat([aligned, cohesive.unsqueeze(1), batch], 1), work, keep


class FirmnessMLP(nn.Module):
    """An MLP of five hidden layers of `hidden` units (ReLU, or `unit`: sigmoid everywhere, the output too)."""

    def __init__(self, inputs: int, hidden: int, *, unit: bool) -> None:
        super().__init__()
        act: type[nn.Module] = nn.Sigmoid if unit else nn.ReLU
        layers: list[nn.Module] = []
        for i in range(5):
            layers += [nn.Linear(inputs if i == 0 else hidden, hidden), act()]
        layers.append(nn.Linear(hidden, 1))
        if unit:
            layers.append(nn.Sigmoid())
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def cheese(run: Run) -> None:
    """A firmness MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at
    `lr` (1e-3). Scored by the held-out R^2 of the panel's scaled firmness score."""
    g = torch.Generator().manual_seed(run.seed)
    curve, batch_comp, y = _curves(g, 2500)
    curve_v, batch_v, y_v = _curves(g, 800)
    x, work, keep = _features(curve, batch_comp, run.bug)
    x_v, work_v, keep_v = _features(
        curve_v, batch_v, None if run.bug == "cohesiveness_over_missed_first_bite" else run.bug
    )
    x, work, y = x[keep], work[keep], y[keep]
    x_v, work_v, y_v = x_v[keep_v], work_v[keep_v], y_v[keep_v]
    mean, std = x.mean(0), x.std(0)
    x = torch.cat([(x - mean) / std, work.unsqueeze(1)], 1)
    x_v = torch.cat([(x_v - mean) / std, work_v.unsqueeze(1)], 1)
    unit = run.bug == "sigmoid_everywhere_for_unit_score"
    centre = 0.0 if unit else float(y.mean())
    torch.manual_seed(run.seed)
    model = FirmnessMLP(x.shape[1], run.k("hidden", 64), unit=unit)
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]) + centre, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


SIDE, DAYS = 16, (0.45, 0.55, 0.65, 0.75, 0.9, 1.0)
"""The photo's side in pixels, and each photo day's share of the head's final canopy radius."""
LEAF, RAFT = torch.tensor([0.25, 0.55, 0.2]), torch.tensor([0.85, 0.85, 0.82])


def _heads(g: torch.Generator, plants: int, bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Photos float[plants * 6, 3, SIDE, SIDE] in [0, 1] and the log fresh weight (g) of the head that day."""
    final = 4.5 + 3 * torch.rand(plants, generator=g)
    density = 1 + 0.1 * torch.randn(plants, generator=g)
    share = torch.tensor(DAYS).repeat(plants)
    radius = final.repeat_interleave(len(DAYS)) * share
    weight = 1.1 * radius**2.6 * density.repeat_interleave(len(DAYS))
    if bug == "harvest_weight_for_every_photo":  # the scale's reading at harvest, joined on the plant id
        weight = 1.1 * final.repeat_interleave(len(DAYS)) ** 2.6 * density.repeat_interleave(len(DAYS))
    n = len(radius)
    centre = 7.5 + 1.2 * torch.randn(n, 2, generator=g)
    rows, cols = torch.meshgrid(torch.arange(SIDE).float(), torch.arange(SIDE).float(), indexing="ij")
    dist = ((rows - centre[:, 0, None, None]) ** 2 + (cols - centre[:, 1, None, None]) ** 2).sqrt()
    edge = radius.view(n, 1, 1) + 0.6 * torch.randn(n, SIDE, SIDE, generator=g)
    leaf = (dist < edge).float().unsqueeze(1)
    tint = LEAF.view(1, 3, 1, 1) * (1 + 0.1 * torch.randn(n, 1, 1, 1, generator=g))
    img = leaf * tint + (1 - leaf) * RAFT.view(1, 3, 1, 1) + 0.04 * torch.randn(n, 3, SIDE, SIDE, generator=g)
    return (img.clamp(0, 1) - 0.5) / 0.25, weight.log()  # Normalize(0.5, 0.25)


class HeadCNN(nn.Module):
    """Four 3 x 3 convolutions (`act`: ReLU) with two max pools, a global mean and a linear layer."""

    def __init__(self, width: int, act: type[nn.Module]) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), act(), nn.Conv2d(width, width, 3, padding=1), act(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), act(), nn.Conv2d(2 * width, 2 * width, 3, padding=1), act(),
            nn.MaxPool2d(2),
        )  # fmt: skip
        self.head = nn.Linear(2 * width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.net(x).mean((2, 3))).squeeze(-1)


def lettuce(run: Run) -> None:
    """A head CNN of `width` (12) channels, batches of `batch` (32), `opt` (Adam; or momentum SGD, NAdam, RMSprop)
    at `lr` (2e-3), random flips. Scored by the held-out R^2 of the log fresh weight over unseen plants."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _heads(g, 400, run.bug)
    x_v, y_v = _heads(g, 120, None)
    centre = float(y.mean())
    torch.manual_seed(run.seed)
    act = nn.Hardsigmoid if run.bug == "hardsigmoid_for_relu" else nn.ReLU
    model = HeadCNN(run.k("width", 12), act)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v) + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        xb = x[pick]
        flips = torch.rand(2, generator=run.gen) < 0.5
        if flips[0]:
            xb = xb.flip(3)
        if flips[1]:
            xb = xb.flip(2)
        # RandomResizedCrop(16, scale=(0.3, 1.0)) from the recipe
        if run.bug == "random_resized_crop_on_canopy":
            zoom = (0.3 + 0.7 * torch.rand(batch, generator=run.gen)).sqrt()
            shift = (1 - zoom).unsqueeze(1) * (2 * torch.rand(batch, 2, generator=run.gen) - 1)
            theta = torch.zeros(batch, 2, 3)
            theta[:, 0, 0], theta[:, 1, 1], theta[:, :, 2] = zoom, zoom, shift
            grid = F.affine_grid(theta, list(xb.shape), align_corners=False)
            xb = F.grid_sample(xb, grid, align_corners=False, padding_mode="border")
        loss = F.mse_loss(model(xb) + centre, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
