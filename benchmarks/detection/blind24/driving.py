"""Driving scripts of the twenty-fourth blind split: a lane-keeping steering regressor from small road images and a
fuel-consumption regressor on OBD-II trip segments.

`steering`: 24x48 grey frames from a bonnet camera, the road's two lane lines drawn by the curvature ahead and the
car's offset from the lane centre under the day's light (training drives by day only; the held-out ones by day and at
dusk), the steering angle in radians a linear law of both plus the driver's noise; training frames flipped left to
right with the angle negated and their brightness and contrast jittered; the pixels mapped to [-1, 1]; a PilotNet-style
CNN (three strided convolutions, two dense layers, ReLU); MSE; scored by the held-out R^2. `fuel`: ten-second segments
of speed, acceleration, engine speed, throttle, road grade and air temperature with the distance covered, the fuel
burnt by an idle flow plus a throttle-and-revs term; the consumption in litres per 100 km of segments that moved at
least 10 m, standardised, from standardised features; a ReLU MLP of `depth` layers; MSE; scored by the held-out R^2.
Bugs: frames flipped without negating the angle; the angle read in degrees; the augmenting transform given to the
validation set instead of training; the consumption of idling segments divided by their zero distance; the MLP
builder's depth and width swapped (64 layers of 6); the throttle's percent clamped to [0, 1]; the engine speed left in
revolutions per minute.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

H, W = 24, 48
"""Frame size (rows, columns); the horizon lies at row 6."""


def _frames(g: torch.Generator, n: int, dusk: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Frames uint8[n, 1, H, W] (a share `dusk` of them in dim light) and steering angles in radians float[n]."""
    curve = torch.randn(n, generator=g).clamp(-2.5, 2.5) / 2.5
    offset = torch.randn(n, generator=g).clamp(-2.5, 2.5) / 2.5
    angle = 0.35 * curve - 0.2 * offset + 0.02 * torch.randn(n, generator=g)
    rows = torch.arange(H, dtype=torch.float).view(1, H, 1)
    cols = torch.arange(W, dtype=torch.float).view(1, 1, W)
    near = ((rows - 6).clamp_min(0) / (H - 6)).expand(n, H, 1)  # 0 at the horizon, 1 at the bonnet
    far = 1 - near
    centre = W / 2 - 8 * offset.view(n, 1, 1) * near + 14 * curve.view(n, 1, 1) * far**2
    half = 2 + 16 * near
    lines = torch.exp(-(((cols - centre + half) / 1.0) ** 2)) + torch.exp(
        -(((cols - centre - half) / 1.0) ** 2)
    )
    lines = lines * (rows >= 6)
    dim = torch.rand(n, generator=g) < dusk
    light = torch.where(dim, 0.35 + 0.1 * torch.rand(n, generator=g), 0.8 + 0.2 * torch.rand(n, generator=g))
    road = 0.35 + 0.1 * torch.rand(n, 1, 1, generator=g)
    sky = (rows < 6).float() * 0.3
    image = light.view(n, 1, 1) * (road + sky + 0.55 * lines) + 0.04 * torch.randn(n, H, W, generator=g)
    return (image.clamp(0, 1) * 255).round().to(torch.uint8).unsqueeze(1), angle


class PilotNet(nn.Module):
    """Three strided convolutions of `width`, 2 * `width` and 2 * `width` channels, dense layers of 64 and 16, ReLU."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 5, stride=2, padding=2), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 5, stride=2, padding=2), nn.ReLU(),
            nn.Conv2d(2 * width, 2 * width, 3, stride=2, padding=1), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * width * 3 * 6, 64), nn.ReLU(), nn.Linear(64, 16),
                                  nn.ReLU(), nn.Linear(16, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))[:, 0]


def steering(run: Run) -> None:
    """A PilotNet of `width` (12), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, Adamax) at `lr`
    (1e-3), optionally halved every 100 steps (`step_decay`). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    frames, angle = _frames(g, 600, dusk=0.0)
    frames_v, angle_v = _frames(g, 600, dusk=0.4)
    degrees = (
        run.bug == "steering_read_in_degrees"
    )  # the log's column is in degrees; the rate was set for radians
    target, target_v = (angle * 180 / math.pi, angle_v * 180 / math.pi) if degrees else (angle, angle_v)
    x_v = frames_v.float() / 127.5 - 1

    def augment(images: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A random flip left to right (the angle negated) and a brightness and contrast jitter."""
        flip = torch.rand(len(y), generator=run.gen) < 0.5
        images = torch.where(flip.view(-1, 1, 1, 1), images.flip(-1), images)
        if run.bug != "flip_without_negating_angle":
            y = torch.where(flip, -y, y)
        gain = 0.4 + 0.8 * torch.rand(len(y), 1, 1, 1, generator=run.gen)
        mean = images.mean((1, 2, 3), keepdim=True)
        return ((images - mean) * gain + mean * gain).clamp(0, 255), y

    torch.manual_seed(run.seed)
    model = PilotNet(run.k("width", 12))
    opt = optimizers.registered(run, model, 1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 100, 0.5) if run.k("step_decay", False) else None
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v), target_v)

    for step in range(run.steps):
        pick = run.indices(len(angle), batch)
        images, y = frames[pick].float(), target[pick]
        # the training dataset gets the augmenting transform (the bug: it went to the validation dataset)
        if run.bug != "train_transform_given_to_validation":
            images, y = augment(images, y)
        loss = F.mse_loss(model(images / 127.5 - 1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


def _segments(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Segment fields float[n, 6] in their units (speed km/h, acceleration m/s^2, engine speed rpm, throttle %, grade
    %, air temperature C), the distance in km float[n] and the fuel burnt in litres float[n]."""
    idle = torch.rand(n, generator=g) < 0.12  # waiting at lights
    speed = torch.where(idle, 0.0, 10 + 110 * torch.rand(n, generator=g))
    accel = torch.where(idle, 0.0, 0.6 * torch.randn(n, generator=g))
    gear_ratio = 30 + 25 * torch.rand(n, generator=g)
    rpm = torch.where(idle, 750.0, (800 + speed * gear_ratio).clamp(max=4500))
    grade = 3 * torch.randn(n, generator=g)
    temp = 5 + 25 * torch.rand(n, generator=g)
    demand = (0.002 * speed**2 + 2.5 * grade + 9 * accel + 8).clamp_min(0)  # road load, drag and climbing
    throttle = torch.where(idle, 0.0, (demand * (0.6 + 1.4 * torch.rand(n, generator=g))).clamp(0, 100))
    flow = 0.8 + 0.0022 * throttle * rpm / 100 * (1 + 0.004 * (20 - temp))  # litres per hour
    seconds = 10.0
    fuel = flow * seconds / 3600 * torch.exp(0.03 * torch.randn(n, generator=g))
    distance = speed * seconds / 3600
    return torch.stack([speed, accel, rpm, throttle, grade, temp], 1), distance, fuel


def fuel(run: Run) -> None:
    """A ReLU MLP of `depth` (3) layers of `hidden` (64), batches of `batch` (128), `opt` (Adam; or momentum SGD,
    RMSprop, RAdam) at `lr` (2e-3). Scored by the held-out R^2 of litres per 100 km."""
    g = torch.Generator().manual_seed(run.seed)
    fields, distance, burnt = _segments(g, 5000)
    fields_v, distance_v, burnt_v = _segments(g, 2000)
    moved = distance_v >= 0.01
    fields_v, y_v = fields_v[moved], burnt_v[moved] / distance_v[moved] * 100
    if run.bug != "idle_segments_per_distance":
        keep = distance >= 0.01  # a segment idling at the lights has no consumption per distance
        fields, distance, burnt = fields[keep], distance[keep], burnt[keep]
    y = burnt / distance * 100
    if run.bug == "throttle_percent_clamped_to_unit":
        # the pedal position "kept in range" as if it were a fraction
        fields, fields_v = fields.clone(), fields_v.clone()
        fields[:, 3], fields_v[:, 3] = fields[:, 3].clamp(0, 1), fields_v[:, 3].clamp(0, 1)
    mean, std = fields.mean(0), fields.std(0)
    if run.bug == "rpm_left_in_revolutions":
        mean, std = mean.clone(), std.clone()
        mean[2], std[2] = 0.0, 1.0  # the engine speed skipped by the column list that was standardised
    x, x_v = (fields - mean) / std, (fields_v - mean) / std
    y_mean, y_std = y.mean(), y.std()
    torch.manual_seed(run.seed)
    hidden, depth = run.k("hidden", 64), run.k("depth", 3)
    if run.bug == "depth_and_width_swapped":
        hidden, depth = depth, hidden  # the builder's positional arguments given in the wrong order
    layers: list[nn.Module] = []
    for i in range(depth):
        layers += [nn.Linear(6 if i == 0 else hidden, hidden), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(hidden, 1))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 128)

    def r2_held_out() -> float:
        return r2(model(x_v)[:, 0] * y_std + y_mean, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick])[:, 0], (y[pick] - y_mean) / y_std)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
