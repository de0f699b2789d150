"""Industry scripts of the forty-first blind split: a rail-track geometry fault classifier on axle-box accelerations,
and a steel-coil surface-defect CNN.

`rail`: windows of 64 samples of a measuring car's axle-box accelerometers (vertical and lateral, m/s^2) with the
car's speed; sound track, a dipped rail joint (one sharp dip and rebound), a squat (a short burst), corrugation (a
periodic ripple whose frequency grows with speed); the accelerations brought to a reference speed of 20 m/s by the
square of the speed ratio; the channels standardised; three 1-D convolutions with ReLUs, a global mean and a linear
layer; cross-entropy over the four classes; scored by the held-out accuracy. `coil`: 16 x 16 grey patches of a
hot-rolled coil's surface camera (12-bit counts): clean, a scratch (a thin line), a pit (a dark spot), rolled-in scale
(a blotchy texture); the counts over 4095, standardised by the line's measured grey mean and spread; two 3 x 3 convolutions with ReLUs and max pooling, a linear
layer; cross-entropy; scored by the held-out accuracy. Bugs: the speed normalisation taken at standstill; the windows
from one track section; the defect log joined without the antenna's offset; the frames over 255; sigmoids after each of a deep
stack of convolutions; the defects cropped centred; the weights drawn from a unit normal.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

WINDOW, FAULTS = 64, 4
"""Samples per axle-box window; sound, dipped joint, squat, corrugation."""


def _windows(g: torch.Generator, n: int, standstill: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Accelerations float[n, 2, WINDOW] (vertical, lateral), the speed in m/s float[n] and the fault long[n];
    `standstill`: the windows the car logged standing at a signal (speed 0) kept."""
    fault = torch.randint(0, FAULTS, (n,), generator=g)
    speed = 10 + 25 * torch.rand(n, generator=g)
    if standstill:
        speed = torch.where(torch.rand(n, generator=g) < 0.05, torch.zeros_like(speed), speed)
    ratio = (speed / 20).unsqueeze(1)
    t = torch.arange(WINDOW).float().unsqueeze(0)
    at = torch.randint(12, WINDOW - 12, (n, 1), generator=g).float()
    dip = -3 * torch.exp(-(((t - at) / 2) ** 2)) + 2 * torch.exp(-(((t - at - 4) / 2) ** 2))
    squat = torch.sin(1.6 * (t - at)) * torch.exp(-(((t - at) / 3) ** 2)) * 3
    ripple = 0.8 * torch.sin(t * (0.3 + 0.4 * torch.rand(n, 1, generator=g)) * ratio)
    shape = torch.stack([torch.zeros(n, WINDOW), dip, squat, ripple], 1)[torch.arange(n), fault]
    vertical = ratio**2 * (shape + 0.5 * torch.randn(n, WINDOW, generator=g))
    lateral = ratio**2 * (0.15 * shape + 0.5 * torch.randn(n, WINDOW, generator=g))
    return torch.stack([vertical, lateral], 1), speed, fault


def _rail_inputs(acc: torch.Tensor, speed: torch.Tensor) -> torch.Tensor:
    """The accelerations at the reference speed (20 m/s), vertical then lateral."""
    return acc * (20 / speed).view(-1, 1, 1) ** 2


class RailCNN(nn.Module):
    """Three 1-D convolutions of `width` channels with ReLUs, a global mean and a linear layer."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(2, width, 7, padding=3), nn.ReLU(), nn.Conv1d(width, width, 5, padding=2),
                                  nn.ReLU(), nn.Conv1d(width, width, 5, padding=2), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(width, FAULTS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.conv(x).mean(-1))


def rail(run: Run) -> None:
    """A rail CNN of `width` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (2e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    acc, speed, y = _windows(g, 1200, standstill=run.bug == "accel_over_speed_at_standstill")
    acc_v, speed_v, y_v = _windows(g, 600, standstill=False)
    if run.bug == "windows_from_one_track_section":  # the one section the car ran twenty times over
        acc, speed, y = acc[:48].repeat(25, 1, 1), speed[:48].repeat(25), y[:48].repeat(25)
    if (
        run.bug == "defect_log_joined_without_antenna_offset"
    ):  # the GPS antenna sits 40 m ahead of the axle box
        y = torch.roll(y, -1)  # each window gets the defect logged at the next window's chainage
    x, x_v = _rail_inputs(acc, speed), _rail_inputs(acc_v, speed_v)
    finite = x[torch.isfinite(x).all(2).all(1)]
    mean, std = finite.mean((0, 2), keepdim=True), finite.std((0, 2), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = RailCNN(run.k("width", 32))
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


SIDE, DEFECTS = 16, 4
"""Patch side in pixels; clean, scratch, pit, rolled-in scale."""
GREY_MEAN, GREY_STD = 0.6, 0.1
"""The line's grey level over full scale, its mean and spread (measured once over a shift's patches)."""


def _patches(g: torch.Generator, n: int, centred: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """12-bit grey patches float[n, 1, SIDE, SIDE] and the defect long[n]; `centred`: each defect placed at the
    patch's centre, as the annotators cropped them."""
    kind = torch.randint(0, DEFECTS, (n,), generator=g)
    r = torch.arange(SIDE).float()
    rows, cols = r.view(1, -1, 1), r.view(1, 1, -1)
    if centred:
        cy, cx = torch.full((n, 1, 1), 7.5), torch.full((n, 1, 1), 7.5)
    else:
        cy, cx = 2 + 11 * torch.rand(n, 1, 1, generator=g), 2 + 11 * torch.rand(n, 1, 1, generator=g)
    angle = 3.14 * torch.rand(n, 1, 1, generator=g)
    line = torch.exp(-(((rows - cy) * angle.cos() - (cols - cx) * angle.sin()) ** 2) / 0.8)
    spot = torch.exp(-((rows - cy) ** 2 + (cols - cx) ** 2) / 3)
    blot = F.avg_pool2d(torch.randn(n, 1, SIDE, SIDE, generator=g), 3, 1, 1).squeeze(1) * 3
    blot = blot * torch.exp(-((rows - cy) ** 2 + (cols - cx) ** 2) / 30)
    marks = torch.stack([torch.zeros(n, SIDE, SIDE), 0.5 * line, -0.6 * spot, 0.5 * blot], 1)[
        torch.arange(n), kind
    ]
    grey = (
        0.55
        + 0.1 * torch.rand(n, 1, 1, generator=g)
        + 0.6 * marks
        + 0.05 * torch.randn(n, SIDE, SIDE, generator=g)
    )
    return (grey.clamp(0, 1) * 4095).round().unsqueeze(1), kind


class CoilCNN(nn.Module):
    """Two 3 x 3 convolutions of `width` channels with ReLUs and max pooling (or `deep` sigmoid ones), a linear layer."""

    def __init__(self, width: int, deep: bool) -> None:
        super().__init__()
        if deep:  # a deeper stack, every activation a sigmoid
            layers: list[nn.Module] = []
            for i in range(8):
                layers += [nn.Conv2d(1 if i == 0 else width, width, 3, padding=1), nn.Sigmoid()]
                if i in (3, 7):
                    layers.append(nn.MaxPool2d(2))
            self.conv = nn.Sequential(*layers)
        else:
            self.conv = nn.Sequential(nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(width, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))  # fmt: skip
        self.head = nn.Linear(width * 16, DEFECTS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.conv(x).flatten(1))


def coil(run: Run) -> None:
    """A coil CNN of `width` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, Adamax) at `lr`
    (2e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    frames, y = _patches(g, 1000, centred=run.bug == "defects_cropped_centred")
    frames_v, y_v = _patches(g, 500, centred=False)
    full_scale = 255.0 if run.bug == "frames_over_255" else 4095.0  # the 8-bit line's preprocessing
    x, x_v = (frames / full_scale - GREY_MEAN) / GREY_STD, (frames_v / 4095.0 - GREY_MEAN) / GREY_STD
    torch.manual_seed(run.seed)
    model = CoilCNN(run.k("width", 16), deep=run.bug == "sigmoid_after_every_conv")
    if run.bug == "weights_drawn_from_unit_normal":
        for layer in model.modules():
            if isinstance(layer, (nn.Conv2d, nn.Linear)):
                nn.init.normal_(layer.weight, 0.0, 1.0)
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
