"""Environment scripts of the thirty-first blind split: a wildfire-spread CNN on gridded weather and a river
dissolved-oxygen forecaster.

`wildfire`: 28x28 grids of 375 m cells with today's fire mask, the fuel load, the relative humidity, the wind's east
and north components (uniform over a grid) and the slope; tomorrow a burning cell keeps burning unless its fuel is thin,
and an unburnt cell catches from a burning neighbour with a chance that grows with the fuel, the wind blowing from that
neighbour and the slope and falls with the humidity; a CNN of four unpadded 3x3 convolutions (ReLU) gives tomorrow's
logits on the inner 20x20 cells, the targets cropped to the same centre; BCE; scored by the held-out AUC over the
cells not burning today (where the spread is). `oxygen`: a river station's hourly dissolved oxygen, water temperature,
sunlight and flow over 48 hours; the oxygen swings by day with photosynthesis (a cloudiness and a plant biomass of its
own per window) around a saturation that falls with the temperature, pulled towards it faster at high flow; the
reading 6 hours after the window; standardised, an LSTM of `hidden`, a linear layer on its last state regressing the
standardised oxygen; MSE; scored by the held-out R^2. Bugs: the warm-up's factor left uncapped; convolutions started
from a Gaussian of std 0.001; the target crop taken from the corner; today's mask taken as the target; the logger's
-9999 for missing readings left in; the LSTM built without `batch_first`; a plain RNN where the LSTM was meant.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

GRID, CROP = 28, 4
"""Cells per side, and cells lost at each border by the four unpadded convolutions."""
CHANNELS = 6
"""Fire today, fuel, humidity, wind east, wind north, slope."""


def _fires(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs float[n, CHANNELS, GRID, GRID] and tomorrow's fire mask float[n, 1, GRID, GRID]."""
    smooth = torch.ones(1, 1, 5, 5) / 25
    fuel = F.conv2d(torch.rand(n, 1, GRID + 4, GRID + 4, generator=g), smooth).clamp(0, 1) * 1.6
    humidity = (
        0.2 + 0.6 * torch.rand(n, 1, 1, 1, generator=g) + 0.1 * torch.randn(n, 1, GRID, GRID, generator=g)
    )
    angle = 2 * math.pi * torch.rand(n, generator=g)
    speed = 8 * torch.rand(n, generator=g)
    east, north = speed * torch.cos(angle), speed * torch.sin(angle)
    slope = F.conv2d(torch.randn(n, 1, GRID + 4, GRID + 4, generator=g), smooth) * 3
    # today's fire: one or two blobs
    rows, cols = torch.arange(GRID).view(1, GRID, 1), torch.arange(GRID).view(1, 1, GRID)
    fire = torch.zeros(n, GRID, GRID, dtype=torch.bool)
    for _ in range(2):
        r0, c0 = torch.randint(6, GRID - 6, (2, n, 1, 1), generator=g)
        radius = 1 + 3 * torch.rand(n, 1, 1, generator=g)
        fire |= ((rows - r0) ** 2 + (cols - c0) ** 2).float() < radius**2
    fire = fire.unsqueeze(1).float()
    catch = torch.zeros(n, 1, GRID, GRID)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if dr == dc == 0:
                continue
            # fire in the neighbour at (-dr, -dc) spreads in the direction (dr, dc); rows grow southwards
            from_neighbour = torch.roll(fire, (dr, dc), (2, 3))
            along = (east * dc - north * dr) / math.hypot(dr, dc)
            logit = -2.0 + 2.5 * fuel - 4.0 * humidity + 0.45 * along.view(n, 1, 1, 1) + 0.3 * slope
            catch = torch.maximum(catch, from_neighbour * torch.sigmoid(logit))
    new = torch.rand(n, 1, GRID, GRID, generator=g) < catch
    keeps = fuel > 0.4
    tomorrow = ((fire > 0) & keeps) | ((fire == 0) & new)
    wind = torch.stack([east, north], 1).view(n, 2, 1, 1).expand(n, 2, GRID, GRID) / 4
    x = torch.cat([fire, fuel, (humidity - 0.5) / 0.2, wind, slope], 1)
    return x, tomorrow.float()


class SpreadCNN(nn.Module):
    """Four unpadded 3x3 convolutions of `width` channels (ReLU between), the last giving one logit per cell."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(CHANNELS, width, 3), nn.ReLU(), nn.Conv2d(width, width, 3), nn.ReLU(),
                                 nn.Conv2d(width, width, 3), nn.ReLU(), nn.Conv2d(width, 1, 3))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def _centre(t: torch.Tensor) -> torch.Tensor:
    return t[:, :, CROP:-CROP, CROP:-CROP]


def wildfire(run: Run) -> None:
    """A spread CNN of `width` (16), batches of `batch` (16 grids), `opt` (Adam; or Nesterov and momentum SGD, AdamW)
    at `lr` (2e-3), optionally after a linear warm-up over the first 25 steps (`warmup`). Scored by the held-out AUC
    of tomorrow's fire over the cells not burning today."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _fires(g, 1200)
    x_v, y_v = _fires(g, 300)
    unburnt_v = _centre(x_v[:, :1]) == 0
    torch.manual_seed(run.seed)
    model = SpreadCNN(run.k("width", 16))
    if run.bug == "sgd_rate_and_momentum_swapped_positionally":
        # SGD(params, lr, momentum) called as SGD(params, 0.9, 0.05): a rate of 0.9 with a momentum of 0.05
        opt: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), 0.9, 0.05)
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = optimizers.registered(run, model, 2e-3)
    sched = None
    if run.k("warmup", False):
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 25))
    batch = run.k("batch", 16)
    if run.bug == "target_cropped_from_corner":
        target = y[:, :, : GRID - 2 * CROP, : GRID - 2 * CROP]
    else:
        target = _centre(y)

    def auc_held_out() -> float:
        return auc(model(x_v)[unburnt_v], _centre(y_v)[unburnt_v])

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), target[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


HOURS, AHEAD = 48, 6
"""Hours of history in a window, and the lead of the forecast."""


def _river(g: torch.Generator, n: int) -> torch.Tensor:
    """Series float[n, HOURS + AHEAD, 4] (oxygen mg/L, temperature C, sunlight W/m2, flow m3/s); the first HOURS
    hours are a window, its target the oxygen AHEAD hours after the window's last hour."""
    t = torch.arange(HOURS + AHEAD).float().unsqueeze(0)
    start = torch.randint(0, 24, (n, 1), generator=g).float()
    hour = (t + start) % 24
    season = 8 + 14 * torch.rand(n, 1, generator=g)
    temperature = (
        season + 2.0 * torch.sin(2 * math.pi * (hour - 9) / 24) + 0.2 * torch.randn(n, 1, generator=g)
    )
    cloud = torch.rand(n, 1, generator=g)
    sun = (900 * (1 - 0.7 * cloud) * torch.sin(math.pi * (hour - 6) / 12).clamp(min=0)) * (
        1 + 0.1 * torch.randn(n, HOURS + AHEAD, generator=g)
    ).clamp(min=0)
    flow = torch.exp(1 + 0.6 * torch.randn(n, 1, generator=g)) * (
        1 + 0.05 * torch.randn(n, HOURS + AHEAD, generator=g)
    )
    saturation = 14.6 - 0.39 * temperature + 0.007 * temperature**2
    biomass = 0.3 + 1.2 * torch.rand(n, 1, generator=g)
    reaeration = 0.04 + 0.05 * torch.log1p(flow)
    oxygen = torch.empty(n, HOURS + AHEAD)
    level = saturation[:, 0] - biomass[:, 0] * 0.5
    for k in range(HOURS + AHEAD):
        production = biomass[:, 0] * sun[:, k] / 900 * 0.9
        respiration = biomass[:, 0] * 0.35
        level = level + reaeration[:, k] * (saturation[:, k] - level) + production - respiration
        oxygen[:, k] = level
    oxygen = oxygen + 0.05 * torch.randn(n, HOURS + AHEAD, generator=g)
    return torch.stack([oxygen, temperature, sun, flow], -1)


class OxygenLSTM(nn.Module):
    """An LSTM of `hidden` over the hours, a linear layer on the last state."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.rnn = nn.LSTM(4, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])[:, 0]


def oxygen(run: Run) -> None:
    """An oxygen LSTM of `hidden` (32), batches of `batch` (64), `opt` (Adam; or RMSprop, AdamW, RAdam) at `lr` (3e-3).
    Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    series, series_v = _river(g, 3000), _river(g, 1000)
    # the target AHEAD hours after the window's last hour (the bug counts them from the window's start)
    ahead = AHEAD - 1 if run.bug == "target_indexed_from_window_start" else HOURS + AHEAD - 1
    x, y = series[:, :HOURS].clone(), series[:, ahead, 0].clone()
    x_v, y_v = series_v[:, :HOURS], series_v[:, HOURS + AHEAD - 1, 0]
    # the logger writes -9999 for a reading it missed (about one in a hundred); the export is cleaned before use
    gaps = torch.rand(x.shape[:2], generator=g) < 0.01
    x[..., 0] = x[..., 0].masked_fill(gaps, -9999.0)
    y = y.masked_fill(torch.rand(len(y), generator=g) < 0.01, -9999.0)
    if run.bug != "missing_code_minus_9999_left_in":
        # missed readings carried from the hour before; a missing target drops its window
        for k in range(1, HOURS):
            x[:, k, 0] = torch.where(x[:, k, 0] == -9999.0, x[:, k - 1, 0], x[:, k, 0])
        x[:, 0, 0] = torch.where(x[:, 0, 0] == -9999.0, x[:, 1, 0], x[:, 0, 0])
        keep = y != -9999.0
        x, y = x[keep], y[keep]
    mean, std = x.mean((0, 1)), x.std((0, 1))
    y_mean, y_std = y.mean(), y.std()
    x, x_v = (x - mean) / std, (x_v - mean) / std
    z = (y - y_mean) / y_std
    torch.manual_seed(run.seed)
    model = OxygenLSTM(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * y_std + y_mean, y_v)

    for step in range(run.steps):
        pick = run.indices(len(z), batch)
        loss = F.mse_loss(model(x[pick]), z[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
