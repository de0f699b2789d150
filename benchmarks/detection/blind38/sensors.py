"""Sensor scripts of the thirty-eighth blind split: a wind-turbine blade-icing detector on SCADA windows, and a ship-hull
fouling speed-loss regressor on noon reports.

`icing`: windows of 36 ten-minute SCADA records of a turbine in a cold-climate park: the wind speed, the active power
(kW), the rotor speed, the blade pitch, the nacelle and the ambient temperature and the relative humidity; in about 30 %
of the windows ice builds on the blades (below about +1 C in humid air), the power falls short of the power curve more
and more through the window and the pitch works harder, and in about half of those the controller stops the turbine
for ice; the hygrometer's heater fails in some windows and the sensor then reads 0 %; the dew point by the Magnus
formula from the ambient temperature and the humidity (the humidity floored at 1 %) joins the channels; a 1-D CNN of
three convolutions with ReLUs, a global average pool and a linear layer; BCE with logits; scored by the held-out AUC.
`hull`: a fleet's noon reports: the speed through water (kn), the shaft power, the mean draft and the trim, the wind
and the significant wave height, the sea temperature, the days since the last hull cleaning and since the last port
call; the speed loss (per cent of the clean hull's speed at that power and draft) grows with the days since the hull
was cleaned, faster in warm water, plus the weather's added resistance; reports with less than 5 kn through the water
(at anchor or drifting) are filtered out as the performance-monitoring guides say; an MLP with ReLUs; MSE on the speed
loss over ten; scored by the held-out R^2. Bugs: the dew point of a failed hygrometer's zero reading; the export's Unix
timestamp left among the channels; the operator's stop log read as the icing label; the anchored reports left in; the
cleaning counter reset at every port call; the day counters appended after the scaler.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

RECORDS = 36
"""Ten-minute SCADA records of a window (six hours)."""
MAGNUS_B, MAGNUS_C = 17.62, 243.12
"""The Magnus formula's constants over water (C)."""


def _power_curve(wind: torch.Tensor) -> torch.Tensor:
    """A 2 MW turbine's power (kW) at `wind` m/s: cut-in at 3, rated at 12, cut-out at 25."""
    return 2000 * ((wind - 3) / 9).clamp(0, 1) ** 3 * (wind < 25).float()


def _scada(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Records float[n, RECORDS, 7] (wind m/s, power kW, rotor rpm, pitch deg, nacelle C, ambient C, humidity %),
    the icing label float[n] and whether the controller stopped the turbine for ice, float[n]."""
    t = torch.arange(RECORDS).float()
    ambient = (-12 + 16 * torch.rand(n, 1, generator=g)) + 0.5 * torch.randn(n, RECORDS, generator=g).cumsum(
        1
    ) / 4
    humidity = (55 + 45 * torch.rand(n, 1, generator=g) + 3 * torch.randn(n, RECORDS, generator=g)).clamp(
        20, 100
    )
    p_ice = torch.sigmoid(2.0 * (1.0 - ambient.mean(1)) / 3) * torch.sigmoid((humidity.mean(1) - 85) / 4)
    ice = (torch.rand(n, generator=g) < 1.3 * p_ice).float()
    onset = torch.randint(0, 20, (n, 1), generator=g).float()
    severity = (0.1 + 0.4 * torch.rand(n, 1, generator=g)) * ice.view(n, 1)
    build = severity * ((t - onset) / 16).clamp(0, 1)
    wind = (4 + 10 * torch.rand(n, 1, generator=g) + 1.2 * torch.randn(n, RECORDS, generator=g)).clamp(min=0)
    power = _power_curve(wind) * (1 - build) * (1 + 0.04 * torch.randn(n, RECORDS, generator=g))
    stopped = ice * (torch.rand(n, generator=g) < 0.5).float()
    stop_at = onset + 10 + torch.randint(0, 10, (n, 1), generator=g).float()
    halted = stopped.view(n, 1) * (t >= stop_at).float()
    power = power * (1 - halted)
    rotor = (9 + 8 * (wind / 12).clamp(0, 1) * (1 - 0.5 * build)) * (1 - halted)
    pitch = (
        2 * (wind - 12).clamp(min=0) + 12 * build + 0.5 * torch.randn(n, RECORDS, generator=g)
    ) + 80 * halted
    nacelle = ambient + 8 + 0.02 * power / 20 + 0.3 * torch.randn(n, RECORDS, generator=g)
    failed = torch.rand(n, 1, generator=g) < 0.1  # the hygrometer's heater failed: the sensor reads 0 %
    humidity = torch.where(failed & (t >= torch.randint(0, RECORDS, (n, 1), generator=g)), 0.0, humidity)
    return torch.stack([wind, power, rotor, pitch, nacelle, ambient, humidity], -1), ice, stopped


def _channels(records: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The records with the dew point (Magnus, C) as an eighth channel."""
    ambient, humidity = records[..., 5], records[..., 6]
    rh = humidity if bug == "dew_point_of_zero_humidity" else humidity.clamp(min=1.0)
    gamma = torch.log(rh / 100) + MAGNUS_B * ambient / (MAGNUS_C + ambient)
    dew = MAGNUS_C * gamma / (MAGNUS_B - gamma)
    return torch.cat([records, dew.unsqueeze(-1)], -1)


class IcingCNN(nn.Module):
    """Three 5-wide convolutions of `width` channels over the records with ReLUs, average pool, a linear layer."""

    def __init__(self, channels: int, width: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(channels, width, 5, padding=2), nn.ReLU(),
            nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
            nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x.transpose(1, 2)).mean(-1)).squeeze(-1)


def icing(run: Run) -> None:
    """An icing CNN of `width` (24), batches of `batch` (64), `opt` (Adam; or others) at `lr` (2e-3). Scored by the
    held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    records, ice, stopped = _scada(g, 1200)
    records_v, ice_v, _ = _scada(g, 600)
    feats, feats_v = _channels(records, run.bug), _channels(records_v, None)
    mean, std = feats.mean((0, 1)), feats.std((0, 1))
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    if (
        run.bug == "unix_timestamp_left_in_channels"
    ):  # the export's first column, the record's time in Unix seconds
        start = 1.70e9 + 3.0e7 * torch.rand(len(x), 1, generator=g)
        stamp = (start + 600 * torch.arange(RECORDS).float()).unsqueeze(-1)
        x = torch.cat([x, stamp], -1)
        stamp_v = (1.73e9 + 600 * torch.arange(RECORDS).float()).expand(len(x_v), RECORDS).unsqueeze(-1)
        x_v = torch.cat([x_v, stamp_v], -1)
    y = stopped if run.bug == "stop_log_read_as_icing_label" else ice
    torch.manual_seed(run.seed)
    model = IcingCNN(x.shape[-1], run.k("width", 24))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v), ice_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


def _noon_reports(g: torch.Generator, n: int, bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Features float[m, 9] (speed kn, power MW, draft m, trim m, wind m/s, wave m, sea C, days since cleaning, days
    since the port call) and the speed loss in per cent float[m], reports under 5 kn filtered out unless `bug` keeps
    the anchored ones."""
    draft = 8 + 6 * torch.rand(n, generator=g)
    trim = 1.5 * torch.randn(n, generator=g)
    power = 3 + 12 * torch.rand(n, generator=g)
    sea = 5 + 25 * torch.rand(n, generator=g)
    cleaned = 700 * torch.rand(n, generator=g)
    port = cleaned * torch.rand(n, generator=g).clamp(max=1.0) * torch.rand(n, generator=g)
    wind = 12 * torch.rand(n, generator=g)
    wave = (0.2 + 0.25 * wind + 0.5 * torch.rand(n, generator=g)).clamp(min=0)
    clean_speed = 9.5 * (power / 10) ** (1 / 3) * (11 / draft) ** (2 / 9) * (1 - 0.01 * trim.abs())
    fouling = 0.012 * cleaned * (0.5 + sea / 25) / (1 + cleaned / 900)
    weather = 0.8 * wave**1.5 + 0.02 * wind**2
    loss_pct = fouling + weather + 0.6 * torch.randn(n, generator=g)
    speed = clean_speed * (1 - loss_pct / 100)
    anchored = torch.rand(n, generator=g) < 0.06  # at anchor or drifting with the engine idle
    speed = torch.where(anchored, 0.05 + 0.8 * torch.rand(n, generator=g), speed)
    power = torch.where(anchored, 0.3 * torch.rand(n, generator=g), power)
    loss_pct = 100 * (clean_speed - speed) / speed  # the charter party's formula: over the logged speed
    keep = speed >= 5 if bug != "anchored_reports_in_speed_loss" else torch.ones(n, dtype=torch.bool)
    since = port if bug == "cleaning_counter_reset_at_port_calls" else cleaned
    feats = torch.stack([speed, power, draft, trim, wind, wave, sea, since, port], -1)
    return feats[keep], loss_pct[keep]


class HullMLP(nn.Module):
    """An MLP of `hidden` ReLU units in two layers."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(9, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def hull(run: Run) -> None:
    """A speed-loss MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or others) at `lr` (2e-3). Scored by
    the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    feats, loss_pct = _noon_reports(g, 1500, run.bug)
    counter = (
        run.bug if run.bug == "cleaning_counter_reset_at_port_calls" else None
    )  # the fleet's own counter
    feats_v, loss_v = _noon_reports(g, 700, counter)
    mean, std = feats.mean(0), feats.std(0)
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    if (
        run.bug == "day_counters_appended_after_scaling"
    ):  # the two counters joined from the voyage system later
        x, x_v = torch.cat([x[:, :7], feats[:, 7:]], 1), torch.cat([x_v[:, :7], feats_v[:, 7:]], 1)
    y, y_v = loss_pct / 10, loss_v / 10
    torch.manual_seed(run.seed)
    model = HullMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
