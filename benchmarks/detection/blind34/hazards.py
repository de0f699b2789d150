"""Hazard scripts of the thirty-fourth blind split: a vehicle-crash severity classifier on telematics accelerometer
windows, and an avalanche danger-level classifier on daily snow and weather readings.

`crashes`: 64 samples at 100 Hz of a dashboard accelerometer's three axes in g (gravity on the vertical one), cut by the
logger's trigger around an event: harsh braking or a pothole (no crash), a minor crash (a half-sine pulse of 3-8 g along
or across the car) or a severe one (10-40 g, shorter); the event starts anywhere 8-40 samples into the window; three 1-D
convolutions with ReLUs and pooling, a linear layer over the flattened maps; cross-entropy; scored by the held-out
accuracy. `avalanche`: a station's day (new snow over 24 and 72 hours, wind, air temperature and its change, snow depth,
snow-surface temperature), the danger level 1-5 from loading, wind slabs, warming and the weak layers a steep
temperature gradient through a thin snowpack grows; the gradient computed from the surface temperature and the depth,
bare ground taken as no gradient, and the wind load (the wind speed squared times the new snow); standardised, a ReLU
MLP; cross-entropy; scored by the held-out accuracy. Bugs: momentum switched on at the plain-SGD recipe's rate; sigmoids
after every convolution; the training windows centred on the labelled peak; a cyclic rate with the SGD recipe's bounds;
the temperature gradient divided by a zero snow depth; the wind load appended after the scaling; the training days' wind
direction read as the wind speed.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES, PLAIN_SGD_RATE = 64, 0.2
"""Window length (samples at 100 Hz), and the rate of the team's plain-SGD recipe."""


def _events(g: torch.Generator, n: int, centred: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Accelerations in g float[n, 3, SAMPLES] and the severity long[n] (0 none, 1 minor, 2 severe)."""
    y = torch.randint(0, 3, (n,), generator=g)
    t = torch.arange(SAMPLES).float()
    x = 0.12 * torch.randn(n, 3, SAMPLES, generator=g)
    x[:, 2] += 1.0
    for i in range(n):
        start = 24 if centred else int(torch.randint(8, 41, (1,), generator=g))
        axis = int(torch.randint(0, 2, (1,), generator=g))
        sign = -1.0 if float(torch.rand(1, generator=g)) < 0.8 else 1.0
        if y[i] == 0:
            if float(torch.rand(1, generator=g)) < 0.5:  # harsh braking: a long, low deceleration
                width, peak = (
                    30 + 20 * float(torch.rand(1, generator=g)),
                    0.5 + 0.5 * float(torch.rand(1, generator=g)),
                )
                axis, sign = 0, -1.0
            else:  # a pothole: a short jolt on the vertical axis
                width, peak = (
                    3 + 2 * float(torch.rand(1, generator=g)),
                    2 + 3 * float(torch.rand(1, generator=g)),
                )
                axis, sign = 2, 1.0
        elif y[i] == 1:
            width, peak = (
                10 + 8 * float(torch.rand(1, generator=g)),
                3 + 5 * float(torch.rand(1, generator=g)),
            )
        else:
            width, peak = (
                6 + 6 * float(torch.rand(1, generator=g)),
                10 + 30 * float(torch.rand(1, generator=g)),
            )
        phase = ((t - start) / width).clamp(0, 1)
        pulse = torch.where(
            (t >= start) & (t < start + width), torch.sin(math.pi * phase), torch.zeros(SAMPLES)
        )
        x[i, axis] += sign * peak * pulse
    return x, y


class CrashCNN(nn.Module):
    """Three 1-D convolutions (`width`, twice, four times that) with activations and pooling, a linear layer."""

    def __init__(self, width: int, act: type[nn.Module] = nn.ReLU) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(3, width, 5, padding=2), act(), nn.MaxPool1d(2),
            nn.Conv1d(width, 2 * width, 5, padding=2), act(), nn.MaxPool1d(2),
            nn.Conv1d(2 * width, 4 * width, 5, padding=2), act(), nn.MaxPool1d(2),
        )  # fmt: skip
        self.head = nn.Linear(4 * width * SAMPLES // 8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def crashes(run: Run) -> None:
    """A crash CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (1e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _events(g, 1200, centred=run.bug == "training_windows_centred_on_labelled_peak")
    x_v, y_v = _events(g, 500)
    # the logger's windows clipped to its +-50 g range, then scaled to a tenth of it
    x, x_v = x.clamp(-50, 50) / 5.0, x_v.clamp(-50, 50) / 5.0
    torch.manual_seed(run.seed)
    act = nn.Sigmoid if run.bug == "sigmoid_after_every_convolution" else nn.ReLU
    model = CrashCNN(run.k("width", 8), act)
    opt = optimizers.registered(run, model, 1e-3)
    if run.bug == "momentum_added_at_plain_sgd_rate":
        for group in opt.param_groups:
            group["lr"] = PLAIN_SGD_RATE  # momentum 0.9 switched on, the plain recipe's rate kept
    sched = None
    if run.bug == "cyclic_rate_with_sgd_recipe_bounds":
        sched = torch.optim.lr_scheduler.CyclicLR(
            opt, base_lr=1e-3, max_lr=0.1, step_size_up=40, cycle_momentum=False
        )
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


def _days(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A station's days float[n, 7] (new snow 24 h and 72 h cm, wind km/h, air temperature C, its 24-h change,
    snow depth cm, surface temperature C) and the danger level - 1 long[n]."""
    new24 = -8.0 * torch.rand(n, generator=g).log()
    new72 = new24 + -14.0 * torch.rand(n, generator=g).log()
    wind = 40 * torch.rand(n, generator=g) ** 1.5 * 2
    air = -18 + 20 * torch.rand(n, generator=g)
    change = 6 * torch.randn(n, generator=g)
    depth = (300 * torch.rand(n, generator=g) - 30).clamp(min=0)
    surface = torch.minimum(air - 2 + torch.randn(n, generator=g), torch.zeros(n))
    surface = torch.where(depth == 0, air, surface)
    gradient = torch.where(depth > 0, -surface / depth.clamp(min=1e-6), torch.zeros(n)).clamp(max=1)
    level = (0.05 * new72 + 0.0012 * wind * new24 + 0.12 * change.clamp(min=0) + 6 * gradient
             + 0.4 * torch.randn(n, generator=g))  # fmt: skip
    danger = torch.bucketize(level, torch.tensor([1.0, 2.0, 3.2, 4.6]))
    return torch.stack([new24, new72, wind, air, change, depth, surface], 1), danger


class DangerMLP(nn.Module):
    """A ReLU MLP of `hidden` twice over the day's features, five levels out."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(9, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 5))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def avalanche(run: Run) -> None:
    """A danger MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, Adagrad, RAdam) at `lr`
    (2e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    days, y = _days(g, 2000)
    days_v, y_v = _days(g, 800)
    if run.bug == "wind_direction_read_for_wind_speed":
        # this season's station export put the wind direction (degrees) before the speed; columns are read by position
        days = torch.cat([days[:, :2], 360 * torch.rand(len(days), 1, generator=g), days[:, 3:]], 1)

    def features(d: torch.Tensor) -> torch.Tensor:
        if run.bug == "gradient_over_zero_snow_depth":
            gradient = -d[:, 6] / d[:, 5]
        else:
            gradient = torch.where(
                d[:, 5] > 0, -d[:, 6] / d[:, 5].clamp(min=1), torch.zeros(len(d))
            )  # bare ground
        return torch.cat([d, gradient[:, None]], 1)

    def wind_load(d: torch.Tensor) -> torch.Tensor:
        return (d[:, 2] ** 2 * d[:, 0])[:, None]  # snow transport grows with the wind speed squared

    raw, raw_v = features(days), features(days_v)
    if run.bug != "wind_load_added_after_scaling":
        raw, raw_v = torch.cat([raw, wind_load(days)], 1), torch.cat([raw_v, wind_load(days_v)], 1)
    mean, std = raw.mean(0), raw.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    if run.bug == "wind_load_added_after_scaling":
        x, x_v = torch.cat([x, wind_load(days)], 1), torch.cat([x_v, wind_load(days_v)], 1)
    torch.manual_seed(run.seed)
    model = DangerMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
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
