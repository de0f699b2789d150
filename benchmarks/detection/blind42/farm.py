"""Farm scripts of the forty-second blind split: a shrimp-pond dissolved-ammonia forecaster (a GRU) and a
mushroom-farm growing-room CO2 regressor.

`shrimp`: the last 24 hourly readings of a pond's sonde (the ammonium electrode's mV, turned into total ammonia
nitrogen (TAN) mg/L by the slope of its two-point calibration; water temperature, pH, dissolved oxygen mg/L), the
feeder's log (kg per hour) and the aerators' relay, with the window's mean oxygen over the hours the aerators ran
and the lab's TAN sampled at 08:00 each day; the ammonia builds up from the shrimps' excretion and the feed and is
nitrified faster in warm, oxygenated water; the crop's week sets the biomass; a power cut leaves the aerators off
all day; standardised per feature; a GRU and a linear layer on its last state; MSE on the log TAN six hours after
the window; scored by the held-out R^2. `mushroom`: growing-room readings (the crop's day since casing, bags in the room,
air temperature, relative humidity, the fresh-air fan's and the recirculation fan's duty, the share of the hour the
door stood open, the outside CO2); the room's CO2 from the crop's respiration (peaking at the first flush) over the
air changes; standardised; a ReLU MLP of two hidden layers; MSE on the log CO2; scored by the held-out R^2; one
program under a plateau schedule. Bugs: the electrode's slope from a failed calibration; the lab's ammonia joined
by calendar day; the free ammonia read as the total; the readings scaled by their variance; a plateau schedule
started at a rate it was to bring down; the CO2 read in the exhaust duct.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

HOURS, AHEAD = 24, 6
"""Hours of readings in a window; hours from its end to the forecast."""
E0, NERNST = 120.0, 59.16
"""The ammonium electrode's standard potential (mV) and its ideal slope at 25 C (mV per decade)."""


def _ponds(
    g: torch.Generator, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Hourly readings float[n, HOURS + AHEAD, 6] (the sonde's ammonium electrode in mV, drifting; temperature, pH,
    DO, feed kg, aerators on) of `n` pond windows from crop weeks 1 to 16, the true TAN float[n, HOURS + AHEAD]
    (what the lab measures), the free-ammonia fraction float[n, HOURS + AHEAD], the hour of the day
    long[n, HOURS + AHEAD] and the electrode's slope in mV per decade from the sonde's last two-point calibration
    float[n] (0 where the second standard was never read). A twentieth of the windows fall on a power cut (aerators
    off all day)."""
    week = 1 + 15 * torch.rand(n, 1, generator=g)
    biomass = 0.3 + 0.15 * week
    start = torch.randint(0, 24, (n, 1), generator=g)
    clock = (start + torch.arange(HOURS + AHEAD)) % 24
    day = torch.sin(2 * math.pi * (clock - 9) / 24)
    temp = (
        27 + 3 * torch.rand(n, 1, generator=g) + 1.2 * day + 0.1 * torch.randn(n, HOURS + AHEAD, generator=g)
    )
    ph = (
        7.6
        + 0.4 * torch.rand(n, 1, generator=g)
        + 0.25 * day
        + 0.03 * torch.randn(n, HOURS + AHEAD, generator=g)
    )
    feeding = (clock == 7) | (clock == 11) | (clock == 15) | (clock == 19)
    feed = feeding * biomass * (1.6 + 0.8 * torch.rand(n, HOURS + AHEAD, generator=g))
    cut = torch.rand(n, 1, generator=g) < 0.05
    aer = ((clock < 6) | (clock >= 20) | (torch.rand(n, HOURS + AHEAD, generator=g) < 0.3)) & ~cut
    do = (
        5.5 + 1.8 * day + 1.6 * aer - 0.8 * biomass + 0.2 * torch.randn(n, HOURS + AHEAD, generator=g)
    ).clamp(0.3)
    tan = torch.empty(n, HOURS + AHEAD)
    level = 0.15 + 0.3 * biomass.squeeze(1) * torch.rand(n, generator=g)
    for h in range(HOURS + AHEAD):
        tan[:, h] = level
        rate = 0.06 * 1.07 ** (temp[:, h] - 28) * do[:, h] / (do[:, h] + 2)
        lag = feed[:, h - 2] if h >= 2 else 0.0
        level = (level + 0.012 * biomass.squeeze(1) + 0.03 * lag - rate * level).clamp(0.01)
        level = level * torch.exp(0.02 * torch.randn(n, generator=g))
    pka = 0.09018 + 2729.92 / (temp + 273.15)
    free = 1 / (1 + 10 ** (pka - ph))
    electrode = tan * torch.exp(
        0.3 * torch.randn(n, 1, generator=g) + 0.1 * torch.randn(n, HOURS + AHEAD, generator=g)
    )
    slope = 56 + 3 * torch.rand(n, generator=g)
    mv = E0 + slope.unsqueeze(1) * electrode.log10()
    slope = torch.where(torch.rand(n, generator=g) < 0.04, torch.zeros_like(slope), slope)
    return torch.stack([mv, temp, ph, do, feed, aer.float()], 2), tan, free, clock, slope


def _shrimp_inputs(
    readings: torch.Tensor, tan: torch.Tensor, clock: torch.Tensor, slope: torch.Tensor, bug: str | None
) -> torch.Tensor:
    """The window's 24 hours of readings, the electrode's mV turned into TAN by its calibration, with its mean
    oxygen over the aerator hours and the pond's latest lab TAN (sampled at 08:00 each day) as the seventh and
    eighth features."""
    if bug != "electrode_slope_from_failed_calibration":
        slope = torch.where(
            slope > 0, slope, torch.full_like(slope, NERNST)
        )  # a failed calibration: ideal slope
    hours = readings[:, :HOURS].clone()
    hours[:, :, 0] = 10 ** ((hours[:, :, 0] - E0) / slope.unsqueeze(1))
    on = hours[:, :, 5]
    # the lab sample joined by calendar day: the forecast day's, even when that morning is still ahead
    upto = HOURS + AHEAD if bug == "lab_tan_joined_by_calendar_day" else HOURS
    at = torch.arange(upto).expand(len(readings), -1)
    sampled = torch.where(clock[:, :upto] == 8, at, torch.full_like(at, -1)).max(1).values
    lab = tan[torch.arange(len(tan)), sampled.clamp(min=0)] * (sampled >= 0)
    mean_do = (hours[:, :, 3] * on).sum(1) / on.sum(1).clamp(min=1)
    extra = torch.stack([mean_do, lab], 1).unsqueeze(1).expand(-1, HOURS, 2)
    return torch.cat([hours, extra], 2)


class AmmoniaGRU(nn.Module):
    """A GRU of `hidden` units over the hourly readings, a linear layer on its last state."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(8, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, -1]).squeeze(-1)


def shrimp(run: Run) -> None:
    """An ammonia GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or RMSprop, AdamW, NAdam) at `lr`
    (3e-3). Scored by the held-out R^2 of the log TAN six hours ahead."""
    g = torch.Generator().manual_seed(run.seed)
    readings, tan, free, clock, slope = _ponds(g, 1500)
    readings_v, tan_v, _, clock_v, slope_v = _ponds(g, 600)
    feats, feats_v = (
        _shrimp_inputs(readings, tan, clock, slope, run.bug),
        _shrimp_inputs(readings_v, tan_v, clock_v, slope_v, None),
    )
    flat = feats.reshape(-1, 8)
    flat = flat[torch.isfinite(flat).all(1)]
    mean, std = flat.mean(0), flat.std(0)
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    target = tan[:, -1]
    if run.bug == "free_ammonia_read_as_total":  # the lab sheet's "NH3" column: the un-ionised share
        target = target * free[:, -1]
    y, y_v = target.log(), tan_v[:, -1].log()
    centre = y.mean()
    torch.manual_seed(run.seed)
    model = AmmoniaGRU(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
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


def _rooms(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Room readings float[n, 8] (day since casing, bags, air C, RH as a fraction, fresh-air fan duty, recirculation
    duty, the share of the hour the door stood open, outside CO2 ppm), the room's CO2 ppm float[n] and the exhaust
    duct's float[n]."""
    day = 1 + 20 * torch.rand(n, generator=g)
    bags = 150 + 300 * torch.rand(n, generator=g)
    air = 16 + 6 * torch.rand(n, generator=g)
    rh = 0.85 + 0.1 * torch.rand(n, generator=g)
    fan = 0.1 + 0.9 * torch.rand(n, generator=g)
    recirc = 0.3 + 0.7 * torch.rand(n, generator=g)
    door = 0.08 * torch.rand(n, generator=g) ** 2
    outside = 400 + 50 * torch.rand(n, generator=g)
    respiration = (1 + 2 * torch.exp(-(((day - 12) / 4) ** 2))) * 1.08 ** (air - 18)
    changes = 0.4 + 5 * fan + 30 * door + 0.3 * recirc
    room = outside + 900 * bags / 300 * respiration / changes * torch.exp(0.06 * torch.randn(n, generator=g))
    duct = outside + (room - outside) * fan / (fan + 0.4)
    return torch.stack([day, bags, air, rh, fan, recirc, door, outside], 1), room, duct


class RoomMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def mushroom(run: Run) -> None:
    """A room MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (2e-3), with the rate halved when the training loss stops falling when `plateau` is set. Scored by the held-out
    R^2 of the log CO2."""
    g = torch.Generator().manual_seed(run.seed)
    feats, room, duct = _rooms(g, 1500)
    feats_v, room_v, _ = _rooms(g, 600)
    mean = feats.mean(0)
    if run.bug == "scaled_by_variance_not_std":
        spread = feats.var(0)
    else:
        spread = feats.std(0)
    x, x_v = (feats - mean) / spread, (feats_v - mean) / spread
    y = (duct if run.bug == "co2_read_in_exhaust_duct" else room).log()
    y_v = room_v.log()
    centre = y.mean()
    torch.manual_seed(run.seed)
    model = RoomMLP(run.k("hidden", 64))
    lr = (
        0.1 if run.bug == "plateau_started_at_high_rate" else run.k("lr", 2e-3)
    )  # "the scheduler brings it down"
    opt = optimizers.registered(run, model, lr)
    if run.bug == "plateau_started_at_high_rate":
        for group in opt.param_groups:
            group["lr"] = lr
    sched = (
        torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=2)
        if run.k("plateau", 0)
        else None
    )
    batch = run.k("batch", 64)
    recent: list[float] = []

    def r2_held_out() -> float:
        return r2(model(x_v) + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]) + centre, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        recent.append(loss.item())
        if sched is not None and len(recent) == 25:
            sched.step(sum(recent) / 25)
            recent.clear()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
