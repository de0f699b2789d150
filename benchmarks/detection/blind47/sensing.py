"""Sensing scripts of the forty-seventh blind split: a violin bow-stroke classifier on bow-sensor IMU windows, and a
tea-leaf grade CNN on conveyor-camera patches.

`violin`: windows of 64 samples at 100 Hz from an IMU on the bow's frog (three accelerometer axes in m/s^2, three
gyroscope axes in deg/s) of five strokes, detache, legato, martele, spiccato and tremolo, each with its bow-speed
profile, bounce and rotation, played by players of their own tempo and tilt; the accelerometer over 4 g, the gyroscope
over its 500 deg/s full scale; a 1-D CNN of four tanh convolutions, pooled; cross-entropy; scored by the held-out
accuracy on players left out. `tea`: 3x16x16 patches of made tea on a grey belt (whole leaf, broken, fannings and
dust: particles of a grade's length and count, dark brown with golden tips), a hue channel computed by hand; a CNN of
three ReLU convolutions; cross-entropy; scored by the held-out accuracy. Bugs: the driver's millidegrees per second
read as degrees; 400 Hz recordings windowed as 100 Hz; each single-stroke take standardised over itself; a plain CNN at a
BatchNorm recipe's rate; the hue divided by a grey pixel's zero chroma; the ImageNet statistics on 0-255 pixels.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES, STROKES = 64, 5


def _bowing(g: torch.Generator, players: int, per_player: int, rate_hz: int = 100) -> tuple[torch.Tensor,
                                                                                            torch.Tensor]:  # fmt: skip
    """IMU windows float[n, 6, SAMPLES] (m/s^2 and deg/s, sampled at `rate_hz`) and the strokes long[n]."""
    n = players * per_player
    player = torch.arange(players).repeat_interleave(per_player)
    tempo = (0.8 + 0.4 * torch.rand(players, generator=g))[player].unsqueeze(1)
    tilt = (0.3 * torch.randn(players, generator=g))[player].unsqueeze(1)
    stroke = torch.randint(0, STROKES, (n,), generator=g)
    t = torch.arange(SAMPLES).float().unsqueeze(0) / rate_hz * tempo + torch.rand(n, 1, generator=g)
    s = stroke.unsqueeze(1)
    # the bow's speed along the string in m/s over the window, by stroke
    period = torch.tensor([0.5, 1.6, 0.6, 0.25, 0.08])[s]
    phase = (t % period) / period
    direction = torch.where((t // period) % 2 == 0, 1.0, -1.0)
    profile = torch.where(
        s == 2, torch.exp(-8 * phase), torch.sin(math.pi * phase) ** torch.where(s == 1, 0.3, 1.0)
    )
    peak = torch.tensor([0.6, 0.35, 0.9, 0.5, 0.3])[s]
    speed = peak * direction * profile
    accel = torch.diff(speed, dim=1, prepend=speed[:, :1]) * rate_hz
    bounce = torch.where(s == 3, 25 * (torch.sin(math.pi * phase) ** 8), torch.zeros_like(speed))
    noise = lambda: torch.randn(n, SAMPLES, generator=g)
    acc = torch.stack([accel + 0.5 * noise(), bounce + 9.81 * torch.sin(tilt) + 0.5 * noise(),
                       9.81 * torch.cos(tilt) + 0.3 * bounce + 0.5 * noise()], 1)  # fmt: skip
    gyro = torch.stack([120 * speed + 8 * noise(), 40 * accel / rate_hz * 10 + 8 * noise(),
                        60 * torch.sin(tilt) * speed + 8 * noise()], 1)  # fmt: skip
    return torch.cat([acc, gyro], 1), stroke


def _scaled(x: torch.Tensor, gyro_unit: float) -> torch.Tensor:
    """The accelerometer over 4 g and the gyroscope, read in `gyro_unit` deg/s per count, over 500 deg/s."""
    return torch.cat([x[:, :3] / (4 * 9.81), x[:, 3:] * gyro_unit / 500], 1)


def _per_take(x: torch.Tensor, take: torch.Tensor) -> torch.Tensor:
    """`x` standardised channel by channel over the windows of each take (`take` long[n])."""
    out = torch.empty_like(x)
    for t in take.unique():
        rows = take == t
        mean, std = x[rows].mean((0, 2), keepdim=True), x[rows].std((0, 2), keepdim=True).clamp(min=1e-6)
        out[rows] = (x[rows] - mean) / std
    return out


def violin(run: Run) -> None:
    """A stroke CNN of `width` (32) channels, batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, NAdam)
    at `lr` (2e-3). Scored by the held-out accuracy on players left out."""
    g = torch.Generator().manual_seed(run.seed)
    if run.bug == "recordings_at_400hz_windowed_as_100hz":  # the new bow sensor logs at 400 Hz
        x, stroke = _bowing(g, 24, 40, rate_hz=400)
    else:
        x, stroke = _bowing(g, 24, 40)
    x_v, stroke_v = _bowing(g, 12, 40)
    # the IMU driver reports the gyroscope in millidegrees per second
    unit = 1.0 if run.bug == "gyro_driver_mdps_taken_as_dps" else 1e-3
    x, x_v = _scaled(x * torch.tensor([1, 1, 1, 1e3, 1e3, 1e3]).view(1, 6, 1), unit), _scaled(x_v, 1.0)
    if run.bug == "normalised_per_single_stroke_take":
        # each training take is one stroke exercise, standardised over itself; a piece to recognise mixes strokes
        x, x_v = (
            _per_take(x, stroke * 100 + torch.arange(len(x)) // 40),
            _per_take(x_v, torch.arange(len(x_v)) // 40),
        )
    torch.manual_seed(run.seed)
    model = BowCNN(run.k("width", 32))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), stroke_v)

    for step in range(run.steps):
        pick = run.indices(len(stroke), batch)
        loss = F.cross_entropy(model(x[pick]), stroke[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


class BowCNN(nn.Module):
    """Four tanh convolutions of `width` channels (two of stride 2), a mean pool and a linear layer."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(6, width, 5, padding=2), nn.Tanh(), nn.Conv1d(width, width, 5, stride=2, padding=2), nn.Tanh(),
            nn.Conv1d(width, width, 5, padding=2), nn.Tanh(), nn.Conv1d(width, width, 5, stride=2, padding=2),
            nn.Tanh())  # fmt: skip
        self.head = nn.Linear(width, STROKES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.net(x).mean(-1))


GRADES = ("whole_leaf", "broken", "fannings", "dust")
BELT = 0.55
"""The belt's grey level, the same on all three channels."""


def _patches(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Patches float[n, 3, 16, 16] in [0, 1] and the grades long[n]."""
    grade = torch.randint(0, len(GRADES), (n,), generator=g)
    img = torch.full((n, 3, 16, 16), BELT)
    length = torch.tensor([7, 4, 2, 1])[grade]
    count = torch.tensor([4, 8, 18, 40])[grade]
    tips = torch.tensor([0.35, 0.2, 0.08, 0.02])[grade]
    for i in range(n):
        for _ in range(int(count[i])):
            r, c = torch.randint(0, 16, (2,), generator=g).tolist()
            golden = bool(torch.rand(1, generator=g) < tips[i])
            colour = torch.tensor([0.75, 0.55, 0.2]) if golden else torch.tensor([0.25, 0.15, 0.08])
            colour = colour * (0.8 + 0.4 * torch.rand(1, generator=g))
            ln = int(length[i])
            if bool(torch.rand(1, generator=g) < 0.5):
                img[i, :, r, c : c + ln] = colour.unsqueeze(1)
            else:
                img[i, :, r : r + ln, c] = colour.unsqueeze(1)
    img = img * (0.85 + 0.3 * torch.rand(n, 1, 1, 1, generator=g))
    return img.clamp(0, 1), grade


def _hue(img: torch.Tensor, guarded: bool) -> torch.Tensor:
    """The hue in turns float[n, 1, 16, 16] of RGB patches, by the hexcone formula."""
    r, gr, b = img[:, 0], img[:, 1], img[:, 2]
    high, low = img.max(1).values, img.min(1).values
    chroma = high - low
    if guarded:  # a grey pixel has no hue: call it 0
        chroma = torch.where(chroma > 0, chroma, torch.ones_like(chroma))
    hue = torch.where(high == r, ((gr - b) / chroma) % 6, torch.where(high == gr, (b - r) / chroma + 2,
                                                                      (r - gr) / chroma + 4))  # fmt: skip
    return (hue / 6).unsqueeze(1)


MEAN, STD = torch.tensor([0.485, 0.456, 0.406]), torch.tensor([0.229, 0.224, 0.225])
"""The ImageNet statistics the backbone recipe normalises by."""


def tea(run: Run) -> None:
    """A grade CNN of `width` (16) channels, batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop)
    at `lr` (1e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    img, grade = _patches(g, 1200)
    img_v, grade_v = _patches(g, 500)
    # the loader gives 0-255 bytes; the twin scales to [0, 1] before the ImageNet statistics
    raw = (img * 255).round()
    img = raw if run.bug == "imagenet_stats_on_0_255_pixels" else raw / 255
    hue = _hue(img, guarded=run.bug != "hand_written_hue_on_grey_pixels")
    x = torch.cat([(img - MEAN.view(1, 3, 1, 1)) / STD.view(1, 3, 1, 1), hue], 1)
    x_v = torch.cat([(img_v - MEAN.view(1, 3, 1, 1)) / STD.view(1, 3, 1, 1), _hue(img_v, True)], 1)
    torch.manual_seed(run.seed)
    model = GradeCNN(run.k("width", 16))
    opt = optimizers.registered(run, model, 1e-3)
    # the bug: the ResNet recipe's 0.4 kept, its BatchNorm layers left out
    if run.bug == "batchnorm_recipe_rate_on_plain_cnn":
        for group in opt.param_groups:
            group["lr"] = 0.4
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), grade_v)

    for step in range(run.steps):
        pick = run.indices(len(grade), batch)
        loss = F.cross_entropy(model(x[pick]), grade[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


class GradeCNN(nn.Module):
    """Three ReLU convolutions of `width` channels with max pools, a global mean pool and a linear layer."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(4, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, width, 3, padding=1), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(width, len(GRADES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.net(x).mean((-2, -1)))
