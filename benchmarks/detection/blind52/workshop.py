"""Workshop scripts of the fifty-second blind split: a bakery proofing-time regressor from dough-probe and proofer
humidity logs, and a parquet-plank defect CNN on line-scan images.

`proof`: 12 readings of a dough's core probe (C) and of the proofer's relative humidity (%) during the proof, the
dough's fresh-yeast and levain shares (baker's %), hydration, salt and flour protein; the minutes from shaping to
oven-ready by a law of yeast activity at the dough's temperature; a ReLU MLP of three hidden layers, MSE on the
standardised minutes; scored by the held-out R^2 on other doughs. `plank`: 24x24 grey line-scan crops of oak planks,
clean, with a knot or with a crack, as the scanner stores them (16-bit, the grain in the upper byte); a ReLU CNN of
three convolutions, cross-entropy; scored by the held-out accuracy on other planks. Bugs: the yeast rate from the log
of a share that is 0 for sourdough; the oven-loading clock kept as a column; the proof timed from the mixer's clock;
the probe logs averaged over the doughs instead of over the readings; the activation table's "softmax" between the
convolutions; the 16-bit scans divided by 255.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

READINGS = 12


def _doughs(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Probe and humidity logs float[n, 2, READINGS], the recipe float[n, 5] (fresh yeast %, levain %, hydration %,
    salt %, protein %), the proof in minutes float[n] and the bulk fermentation before it in minutes float[n]."""
    sour = torch.rand(n, generator=g) < 0.35
    yeast = torch.where(sour, torch.zeros(n), 0.5 + 2.5 * torch.rand(n, generator=g))
    levain = torch.where(sour, 10 + 20 * torch.rand(n, generator=g), torch.zeros(n))
    hydration = 60 + 20 * torch.rand(n, generator=g)
    salt = 1.6 + 0.8 * torch.rand(n, generator=g)
    protein = 10 + 4 * torch.rand(n, generator=g)
    start = 20 + 8 * torch.rand(n, 1, generator=g)
    room = 24 + 8 * torch.rand(n, 1, generator=g)
    t = torch.linspace(0, 1, READINGS).unsqueeze(0)
    probe = start + (room - start) * (1 - torch.exp(-3 * t)) + 0.2 * torch.randn(n, READINGS, generator=g)
    rh = 70 + 15 * torch.rand(n, 1, generator=g) + 2 * torch.randn(n, READINGS, generator=g)
    activity = (yeast + 0.06 * levain) * torch.exp(0.07 * (probe.mean(1) - 26)) * (1.3 - 0.15 * salt)
    minutes = 25 + 140 / (0.6 + activity) + 0.4 * (hydration - 70) - 0.05 * (rh.mean(1) - 77)
    minutes = minutes + 3 * torch.randn(n, generator=g)
    bulk = (
        60
        + 120 * torch.rand(n, generator=g)
        + torch.where(sour, 120 * torch.rand(n, generator=g), torch.zeros(n))
    )
    return (
        torch.stack([probe, rh], 1),
        torch.stack([yeast, levain, hydration, salt, protein], 1),
        minutes,
        bulk,
    )


def _dough_features(logs: torch.Tensor, recipe: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The logs' mean, last reading and slope, and the recipe, with the yeast share as the log of its rate."""
    if bug == "probe_and_humidity_averaged_together":
        # the bug: the mean over dim 1, the two channels (probe and humidity), where dim 2 (the readings) was meant
        level = logs.mean(1)
    else:
        level = logs.mean(2)
    slope = logs[..., -1] - logs[..., 0]
    if bug == "yeast_rate_by_log_of_fresh_yeast_share":
        # the bug: the fresh yeast's rate as log(share), 0 % (minus infinity) for every sourdough
        rate = torch.log(recipe[:, :1])
    else:
        rate = torch.log1p(recipe[:, :1])
    return torch.cat([level, logs[..., -1], slope, rate, recipe[:, 1:]], 1)


class ProofMLP(nn.Module):
    """A ReLU MLP of three hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def proof(run: Run) -> None:
    """A proof MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at `lr`
    (1e-3). Scored by the held-out R^2 of the proof minutes on other doughs."""
    g = torch.Generator().manual_seed(run.seed)
    logs, recipe, y, bulk = _doughs(g, 1500)
    logs_v, recipe_v, y_v, _ = _doughs(g, 600)
    mixed = run.bug if run.bug == "probe_and_humidity_averaged_together" else None
    x, x_v = _dough_features(logs, recipe, run.bug), _dough_features(logs_v, recipe_v, mixed)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    if run.bug == "oven_loading_clock_kept":
        # the bug: the bake sheet's oven-loading time (shaping at a noted clock time plus the proof) kept as a
        # column; the planning sheet for new doughs holds only the slot planned, the same for all
        shaped = 8 * 60 + 10 * torch.rand(len(y), generator=g)
        loading = shaped + y
        x = torch.cat([x, ((loading - loading.mean()) / loading.std()).unsqueeze(1)], 1)
        x_v = torch.cat([x_v, torch.zeros(len(x_v), 1)], 1)
    target = y + bulk if run.bug == "proof_timed_from_mixer_clock" else y
    # the bug above: the minutes counted from the mixer's clock, the bulk fermentation included
    centre, scale = target.mean(), target.std()
    torch.manual_seed(run.seed)
    model = ProofMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), (target[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


SIDE = 24


def _planks(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Scans int32[n, 1, SIDE, SIDE] in 16-bit counts (0-65535) and the class long[n] (clean, knot, crack)."""
    y = torch.randint(0, 3, (n,), generator=g)
    rows = torch.arange(SIDE).float().view(1, SIDE, 1)
    cols = torch.arange(SIDE).float().view(1, 1, SIDE)
    phase = 6.28 * torch.rand(n, 1, 1, generator=g)
    grain = 0.55 + 0.08 * torch.sin(
        rows * (0.6 + 0.3 * torch.rand(n, 1, 1, generator=g)) + phase + 0.05 * cols
    )
    r0 = 5 + 14 * torch.rand(n, 1, 1, generator=g)
    c0 = 5 + 14 * torch.rand(n, 1, 1, generator=g)
    radius = 2 + 2 * torch.rand(n, 1, 1, generator=g)
    knot = torch.exp(-((rows - r0) ** 2 + (cols - c0) ** 2) / radius**2)
    slant = torch.randn(n, 1, 1, generator=g) * 0.3
    crack = torch.exp(-((rows - r0 - slant * (cols - c0)) ** 2) / 0.5) * ((cols - c0).abs() < 7).float()
    img = grain - 0.25 * knot * (y == 1).float().view(n, 1, 1) - 0.3 * crack * (y == 2).float().view(n, 1, 1)
    img = (img + 0.05 * torch.randn(n, SIDE, SIDE, generator=g)).clamp(0, 1)
    return (img * 65535).round().to(torch.int32).unsqueeze(1), y


class PlankCNN(nn.Module):
    """Three 3x3 convolutions of `width` channels with `act` between them, pooled twice, averaged, a linear head."""

    def __init__(self, width: int, act: str = "relu") -> None:
        super().__init__()
        acts = {"relu": lambda: nn.ReLU(), "softmax": lambda: nn.Softmax(dim=1)}
        self.net = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), acts[act](), nn.MaxPool2d(2),
            nn.Conv2d(width, width, 3, padding=1), acts[act](), nn.MaxPool2d(2),
            nn.Conv2d(width, width, 3, padding=1), acts[act](),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 3),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def plank(run: Run) -> None:
    """A plank CNN of `width` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (2e-3). Scored by the held-out accuracy on other planks."""
    g = torch.Generator().manual_seed(run.seed)
    scans, y = _planks(g, 1200)
    scans_v, y_v = _planks(g, 500)
    # the bug: the 16-bit scans divided by 255 as if they were 8-bit, values up to 257
    full = 255.0 if run.bug == "sixteen_bit_scans_divided_by_255" else 65535.0
    x, x_v = scans.float() / full, scans_v.float() / full
    mean, std = 0.5, 0.1
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    # the bug: the config's activation "softmax", meant for the output, looked up for the hidden layers too
    act = "softmax" if run.bug == "activation_table_softmax_between_convs" else "relu"
    model = PlankCNN(run.k("width", 16), act)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def acc_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", acc_held_out):
            break
