"""Site scripts of the forty-second blind split: a pallet-rack impact detector on accelerometer bursts (a 1-D CNN),
and a vineyard frost-night classifier from weather-station readings.

`rack`: bursts of 128 samples (1 kHz) of a triaxial accelerometer on a rack upright, in g: background (a forklift
passing, a slow sway), a pallet set down (a damped vertical thud under a g) and an impact (a sharp horizontal spike
of 2-10 g ringing at the upright's natural frequency); the sensor's full scale of 16 g; the axes standardised; two
1-D convolutions with ReLUs, a global mean and a linear layer; cross-entropy over the three events; scored by the
held-out accuracy. `frost`: a station's readings at sunset (air temperature, relative humidity, the dew point, cloud
in oktas, the wind at 2 m and 10 m as the anemometers report it, zero below their stall speed, the wind-shear
exponent, the soil temperature, the day's maximum, the day of the year); the night's canopy minimum from
radiative cooling on clear calm dry nights, held up near the dew point, with the inversion between the screen and
the canopy; frost when the canopy falls below -0.5 C; standardised; a ReLU MLP of two hidden layers; cross-entropy;
scored by the held-out accuracy. Bugs: a plain RNN over the raw samples; the depot camera's forklift flag in the
inputs; the accelerometer's range left at 2 g; the shear exponent over calm nights; a deep sigmoid network; the
frost nights oversampled; the label from the screen's minimum.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES, EVENTS = 128, 3
"""Samples per burst (1 kHz); background, pallet set down, impact."""


def _bursts(g: torch.Generator, n: int, full_scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Accelerations float[n, 3, SAMPLES] in g (x, y across and along the beam, z vertical) clipped at
    `full_scale`, the event long[n] and the depot camera's forklift-nearby flag float[n]."""
    event = torch.randint(0, EVENTS, (n,), generator=g)
    t = torch.arange(SAMPLES).float().view(1, -1)
    at = torch.randint(10, 70, (n, 1), generator=g).float()
    after = F.relu(t - at)
    on = (t >= at).float()
    sway = (0.1 + 0.3 * torch.rand(n, 1, generator=g)) * torch.sin(
        2 * math.pi * (0.004 + 0.01 * torch.rand(n, 1, generator=g)) * t
    )
    thud = (
        (0.4 + 1.6 * torch.rand(n, 1, generator=g))
        * on
        * torch.exp(-after / 25)
        * torch.sin(2 * math.pi * after / 40)
    )
    ring = (1 + 5 * torch.rand(n, 1, generator=g)) * on * torch.exp(-after / 8)
    ring = ring * torch.cos(2 * math.pi * (0.04 + 0.04 * torch.rand(n, 1, generator=g)) * after)
    share = torch.rand(n, 1, generator=g)
    zero = torch.zeros(n, SAMPLES)
    x = sway + torch.stack([zero, 0.3 * thud, share * ring], 1)[torch.arange(n), event]
    y = torch.stack([zero, 0.3 * thud, (1 - share) * ring], 1)[torch.arange(n), event]
    z = torch.stack([zero, thud, 0.5 * ring], 1)[torch.arange(n), event]
    acc = torch.stack([x, y, z], 1) + 0.15 * torch.randn(n, 3, SAMPLES, generator=g)
    flag = torch.where(
        event > 0, torch.rand(n, generator=g) < 0.97, torch.rand(n, generator=g) < 0.03
    ).float()
    return acc.clamp(-full_scale, full_scale), event, flag


class RackCNN(nn.Module):
    """Two 1-D convolutions of `width` channels with ReLUs, a global mean and a linear layer (or, `plain_rnn`, a tanh
    RNN over the samples and a linear layer on its last state)."""

    def __init__(self, inputs: int, width: int, plain_rnn: bool) -> None:
        super().__init__()
        self.rnn = nn.RNN(inputs, width, batch_first=True) if plain_rnn else None
        self.conv = nn.Sequential(nn.Conv1d(inputs, width, 9, padding=4), nn.ReLU(), nn.MaxPool1d(2),
                                  nn.Conv1d(width, width, 5, padding=2), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(width, EVENTS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.rnn is not None:
            out, _ = self.rnn(x.transpose(1, 2))
            return self.head(out[:, -1])
        return self.head(self.conv(x).mean(-1))


def rack(run: Run) -> None:
    """A rack CNN of `width` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (2e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    full_scale = (
        2.0 if run.bug == "accelerometer_range_left_at_2g" else 16.0
    )  # the MEMS part's power-on default
    acc, y, flag = _bursts(g, 1200, full_scale)
    acc_v, y_v, _ = _bursts(g, 600, 16.0)
    mean, std = acc.mean((0, 2), keepdim=True), acc.std((0, 2), keepdim=True)
    x, x_v = (acc - mean) / std, (acc_v - mean) / std
    camera = run.bug == "forklift_camera_flag_in_inputs"
    if camera:  # the depot's recordings carry the overhead camera's flag; the racks on site have no camera
        x = torch.cat([x, flag.view(-1, 1, 1).expand(-1, 1, SAMPLES)], 1)
        x_v = torch.cat([x_v, torch.zeros(len(y_v), 1, SAMPLES)], 1)
    torch.manual_seed(run.seed)
    model = RackCNN(4 if camera else 3, run.k("width", 16), plain_rnn=run.bug == "plain_rnn_over_raw_samples")
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


STALL = 0.3
"""The anemometers' stall speed, m/s: they report zero below it."""


def _nights(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sunset readings float[n, 8] (air C, RH %, cloud oktas, wind at 2 m and 10 m as reported, soil C, the day's
    maximum C, day of the year), the canopy's frost long[n] and the screen's (air at 1.5 m below 0 C) long[n]."""
    doy = 70 + 70 * torch.rand(n, generator=g)
    air = 2 + 12 * torch.rand(n, generator=g) + 0.04 * (doy - 100)
    rh = 30 + 65 * torch.rand(n, generator=g)
    okta = torch.randint(0, 9, (n,), generator=g).float()
    wind10 = 4 * torch.rand(n, generator=g) ** 2
    wind2 = wind10 * (0.45 + 0.3 * torch.rand(n, generator=g))
    soil = air + 2 + 2 * torch.randn(n, generator=g)
    tmax = air + 4 + 6 * torch.rand(n, generator=g)
    a, b = 17.27, 237.7
    gamma = a * air / (b + air) + torch.log(rh / 100)
    dew = b * gamma / (a - gamma)
    clear = 1 - okta / 8
    cooling = 2 + 9 * clear * torch.exp(-wind10 / 1.5) * (1.3 - rh / 100) + 0.1 * (tmax - air)
    screen = torch.maximum(air - cooling, dew - 2) - 0.2 * (soil - air) + 0.5 * torch.randn(n, generator=g)
    canopy = screen - 3.5 * clear * torch.exp(-wind2 / 1.2)
    reported = torch.stack([wind2, wind10], 1)
    reported = torch.where(reported < STALL, torch.zeros_like(reported), reported)
    feats = torch.stack([air, rh, okta, reported[:, 0], reported[:, 1], soil, tmax, doy], 1)
    return feats, (canopy < -0.5).long(), (screen < 0).long()


def _frost_inputs(readings: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The readings with the dew point and the wind-shear exponent between 2 m and 10 m."""
    air, rh = readings[:, 0], readings[:, 1]
    a, b = 17.27, 237.7
    gamma = a * air / (b + air) + torch.log(rh / 100)
    dew = b * gamma / (a - gamma)
    wind2, wind10 = readings[:, 3], readings[:, 4]
    if bug == "shear_exponent_over_calm_nights":
        shear = torch.log(wind10 / wind2) / math.log(10 / 2)
    else:
        shear = torch.log(wind10.clamp(min=STALL) / wind2.clamp(min=STALL)) / math.log(10 / 2)
    return torch.cat([readings, dew.unsqueeze(1), shear.unsqueeze(1)], 1)


class FrostMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units (or, `deep`, eight sigmoid layers), two logits."""

    def __init__(self, hidden: int, deep: bool) -> None:
        super().__init__()
        if deep:  # the station vendor's old model: a deep stack of logistic units
            layers: list[nn.Module] = []
            for i in range(8):
                layers += [nn.Linear(10 if i == 0 else hidden, hidden), nn.Sigmoid()]
            self.net = nn.Sequential(*layers, nn.Linear(hidden, 2))
        else:
            self.net = nn.Sequential(nn.Linear(10, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                     nn.Linear(hidden, 2))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def frost(run: Run) -> None:
    """A frost MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at `lr`
    (2e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    readings, frosty, screen = _nights(g, 1500)
    readings_v, frosty_v, _ = _nights(g, 600)
    y = screen if run.bug == "frost_label_from_screen_minimum" else frosty
    if run.bug == "frost_nights_oversampled":  # one season's frost nights copied up to the mild nights' count
        frost_rows, mild_rows = (y == 1).nonzero().squeeze(1)[:12], (y == 0).nonzero().squeeze(1)[:480]
        rows = torch.cat([frost_rows.repeat(40), mild_rows])
        readings, y = readings[rows], y[rows]
    feats, feats_v = _frost_inputs(readings, run.bug), _frost_inputs(readings_v, None)
    keep = torch.isfinite(feats).all(1)
    mean, std = feats[keep].mean(0), feats[keep].std(0)
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    torch.manual_seed(run.seed)
    model = FrostMLP(run.k("hidden", 64), deep=run.bug == "sigmoid_stack_from_vendor_model")
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), frosty_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
