"""Atmosphere and ocean scripts of the twentieth blind split: an air-quality (PM2.5) forecaster with weather covariates
and a sea-surface temperature anomaly regressor.

`air`: hourly PM2.5 at a station from a log-space AR(1) process pushed down by wind and up by humidity, with one
past reading in thirty lost to a sensor dropout (missing); each example is the last 24 hours of PM2.5 (log1p), wind
and humidity, the hour of day and a trailing six-hour mean, and the target is log1p(PM2.5) six hours ahead; an MLP;
mean squared error; scored by the held-out R^2. The gaps are filled forward before the features are built. `sst`: monthly sea-surface temperature on a 12x12 grid with a land
block, the anomaly carried east by one cell and damped each month with fresh noise; the input is the last two months'
anomalies (the field less its latitude climatology, land at 0) and the land mask, the target next month's anomaly; a
three-layer tanh CNN; mean squared error over ocean cells; scored by the held-out R^2 over ocean cells. Bugs: the missing
readings left NaN; the smoothed feature computed by a centred window; a linear warmup never capped; the field fed
in kelvin; an init loop whose small spread reaches every layer; the target stored longitude-first; the land fill value kept.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

HOURS, AHEAD = 24, 6
"""Hours of history per example and the forecast horizon."""


def _station(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """PM2.5 float[n, HOURS + AHEAD] (NaN where the sensor dropped out), wind, humidity and the starting hour."""
    t = HOURS + AHEAD
    start = torch.randint(0, 24, (n,), generator=g)
    wind = torch.zeros(n, t)
    hum = torch.zeros(n, t)
    logpm = torch.zeros(n, t)
    w = torch.rand(n, generator=g) * 3
    h = torch.rand(n, generator=g)
    lp = 3 + torch.randn(n, generator=g) * 0.5
    for i in range(t):
        w = (0.85 * w + 0.45 * torch.rand(n, generator=g) * 3).clamp(0, 8)
        h = (0.9 * h + 0.1 * torch.rand(n, generator=g)).clamp(0, 1)
        hour = (start + i) % 24
        traffic = 0.15 * torch.cos((hour.float() - 8) / 24 * 6.283)
        lp = 0.8 * lp + 0.2 * 3.2 - 0.12 * w + 0.5 * h + traffic + 0.12 * torch.randn(n, generator=g)
        wind[:, i], hum[:, i], logpm[:, i] = w, h, lp
    pm = torch.exp(logpm)
    dropout = torch.rand(n, t, generator=g) < 1 / 30
    dropout[:, -1] = False  # the target hour is a quality-controlled reading
    return torch.where(dropout, torch.full_like(pm, float("nan")), pm), wind, hum, start


def _forward_filled(pm: torch.Tensor) -> torch.Tensor:
    """Missing readings replaced by the last reading before them (by the series' mean level, 20, at its start)."""
    filled = pm.clone()
    filled[:, 0] = torch.nan_to_num(filled[:, 0], nan=20.0)
    for i in range(1, pm.shape[1]):
        filled[:, i] = torch.where(filled[:, i].isnan(), filled[:, i - 1], filled[:, i])
    return filled


def _air_features(
    pm: torch.Tensor, wind: torch.Tensor, hum: torch.Tensor, start: torch.Tensor, centred: bool = False
) -> torch.Tensor:
    """The model's inputs: the 24 past hours of log PM, wind and humidity, the hour (sin, cos) and the six-hour mean
    (trailing; `centred`: a centred window, which reaches three hours past the forecast time)."""
    past = torch.log1p(pm[:, :HOURS])
    if centred:
        smooth = torch.log1p(pm[:, HOURS - 3 : HOURS + 3]).mean(1, keepdim=True)
    else:
        smooth = past[:, -6:].mean(1, keepdim=True)
    hour = (start + HOURS - 1).float() / 24 * 6.283
    clock = torch.stack([hour.sin(), hour.cos()], 1)
    return torch.cat(
        [(past - 3) / 0.7, wind[:, :HOURS] / 3 - 0.5, hum[:, :HOURS] - 0.5, clock, (smooth - 3) / 0.7], 1
    )


def air(run: Run) -> None:
    """A PM2.5 forecaster (an MLP of `hidden` (128)), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop,
    AdamW) at `lr` (1e-3), optionally warmed up linearly over 10 steps (`warmup`) or decayed by a cosine (`cosine`).
    Scored by the held-out R^2 of log1p(PM2.5) six hours ahead."""
    g = torch.Generator().manual_seed(run.seed)
    pm, wind, hum, start = _station(g, 2000)
    pm_v, wind_v, hum_v, start_v = _station(g, 1000)
    if run.bug != "missing_readings_left_nan":
        # the gaps of sensor dropouts filled forward before the features are built
        pm, pm_v = _forward_filled(pm), _forward_filled(pm_v)
    x = _air_features(pm, wind, hum, start, run.bug == "rolling_mean_centred")
    y = torch.log1p(pm[:, -1])
    x_v = _air_features(pm_v, wind_v, hum_v, start_v)
    y_v = torch.log1p(pm_v[:, -1])
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 128)
    model = nn.Sequential(nn.Linear(x.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 1))  # fmt: skip
    opt = optimizers.registered(run, model, 1e-3)
    sched: torch.optim.lr_scheduler.LRScheduler | None = None
    if run.k("warmup", False):
        if run.bug == "warmup_lambda_without_min":
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / 10)
            run.took_effect(10)
        else:
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
    elif run.k("cosine", False):
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v).squeeze(-1), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]).squeeze(-1), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


GRID = 12
"""Cells per side of the ocean grid."""


def _ocean(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """SST in kelvin float[n, 3, GRID, GRID] for three consecutive months, the climatology float[GRID, GRID] and the
    land mask bool[GRID, GRID]."""
    lat = torch.linspace(-30, 30, GRID)
    clim = (273.15 + 28 - 0.2 * lat.abs()).unsqueeze(1).expand(GRID, GRID)
    land = torch.zeros(GRID, GRID, dtype=torch.bool)
    land[3:7, 8:11] = True
    a = F.avg_pool2d(torch.randn(n, 1, GRID + 4, GRID + 4, generator=g), 5, 1).squeeze(1) * 3
    months = [a]
    for _ in range(2):
        noise = F.avg_pool2d(torch.randn(n, 1, GRID + 2, GRID + 2, generator=g), 3, 1).squeeze(1)
        a = 0.8 * torch.roll(a, 1, dims=2) + 0.35 * noise
        months.append(a)
    field = torch.stack(months, 1) + clim
    return torch.where(land, torch.full_like(field, float("nan")), field), clim, land


class AnomalyCNN(nn.Module):
    """Three 3x3 convolutions of `width` channels with tanh between them, to one output channel."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.Tanh(), nn.Conv2d(width, width, 3, padding=1),
                                 nn.Tanh(), nn.Conv2d(width, 1, 3, padding=1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(1)


def _sst_inputs(field: torch.Tensor, clim: torch.Tensor, land: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The last two months (anomalies, land at 0) and the land mask as three channels."""
    mask = land.float().expand(len(field), 1, GRID, GRID)
    past = field[:, :2] if bug == "sst_fed_in_kelvin" else field[:, :2] - clim
    fill = -999.0 if bug == "land_fill_value_kept" else 0.0
    return torch.cat([torch.nan_to_num(past, nan=fill), mask], 1)


def sst(run: Run) -> None:
    """A sea-surface temperature anomaly regressor (a tanh CNN of `width` (16)), batches of `batch` (32), `opt` (Adam;
    or AdamW, NAdam, momentum SGD) at `lr` (2e-3), optionally divided by ten every 100 steps (`step_decay`). Scored by
    the held-out R^2 of next month's anomaly over ocean cells."""
    g = torch.Generator().manual_seed(run.seed)
    field, clim, land = _ocean(g, 600)
    field_v, _, _ = _ocean(g, 400)
    ocean = ~land
    x = _sst_inputs(field, clim, land, run.bug)
    y = torch.nan_to_num(field[:, 2] - clim)
    if run.bug == "fields_stored_lon_lat":
        # the target array saved from a (time, lon, lat) file and read back as (time, lat, lon)
        y = y.transpose(1, 2)
    x_v = _sst_inputs(field_v, clim, land, run.bug)
    y_v = (field_v[:, 2] - clim)[:, ocean]
    torch.manual_seed(run.seed)
    model = AnomalyCNN(run.k("width", 16))
    with torch.no_grad():
        # the output layer started near zero, so the first forecasts are the climatology
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif name.startswith("net.4") or run.bug == "small_init_std_on_every_layer":
                nn.init.normal_(p, std=1e-3)
    opt = optimizers.registered(run, model, 2e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 100, 0.1) if run.k("step_decay", False) else None
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v)[:, ocean], y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick])[:, ocean], y[pick][:, ocean])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
