"""Wildlife and air scripts of the forty-first blind split: a seabird dive classifier on biologger depth traces, and a
wildfire-smoke PM2.5 regressor from satellite aerosol optical depth.

`seabird`: 32-second depth traces of a time-depth recorder on a diving seabird, sampled at 1 Hz (the logger's 4 Hz
record averaged by fours) with their timestamps: resting or flying at the surface, a shallow V-shaped travel dive, a
deep U-shaped foraging dive with a flat bottom phase; the depth and the vertical speed (the depth's change over the
time between records) as two channels, standardised; a GRU of `hidden` units and a linear layer on its last state;
cross-entropy over the three kinds; scored by the held-out accuracy. `smoke`: days at air-quality monitors in a fire
season: the satellite's aerosol optical depth at 470 and 660 nm (stored as int16 with a scale factor of 0.001, a few
retrievals slightly negative), the boundary-layer height, relative humidity, wind speed and the distance to the nearest
active fire; the daily PM2.5 from the AOD over the mixing height, swollen by humidity, and a fine-mode share from the
Angstrom exponent; the features (with the Angstrom exponent) standardised; a ReLU MLP of two hidden layers; MSE on the
log PM2.5; scored by the held-out R^2 of the log. Bugs: a plain RNN over the full-rate trace; dive labels from the
wet-dry sensor; the vertical speed over duplicate timestamps; the AOD's scale factor not applied; the Angstrom exponent
from a negative AOD; the days with a matched overpass only; the PM2.5 merged from the next day.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SECONDS, RATE, KINDS = 32, 4, 3
"""Seconds a trace, the logger's records a second; surface, travel dive, foraging dive."""


def _traces(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The 4 Hz depth in m float[n, SECONDS * RATE], its timestamps in s, the dive kind long[n] and the wet-dry
    sensor's reading float[n] (1: wet for most of the trace)."""
    kind = torch.randint(0, KINDS, (n,), generator=g)
    t = torch.arange(SECONDS * RATE).float().unsqueeze(0) / RATE
    start = 2 + 6 * torch.rand(n, 1, generator=g)
    length = 14 + 10 * torch.rand(n, 1, generator=g)
    phase = ((t - start) / length).clamp(0, 1)
    v_dive = (2 + 3 * torch.rand(n, 1, generator=g)) * torch.sin(3.1416 * phase)
    u_dive = (8 + 12 * torch.rand(n, 1, generator=g)) * (torch.sin(3.1416 * phase) * 2.5).clamp(max=1)
    bob = 0.15 * torch.sin(t * (0.5 + torch.rand(n, 1, generator=g))) + 0.1
    depth = torch.stack([bob, v_dive, u_dive], 1)[torch.arange(n), kind] + 0.08 * torch.randn(
        n, t.shape[1], generator=g
    )
    resting = (kind == 0) & (torch.rand(n, generator=g) < 0.6)  # sitting on the water: wet, no dive
    wet = ((kind > 0) | resting).float()
    return depth, t.expand(n, -1).clone(), kind, wet


def _dive_channels(depth: torch.Tensor, t: torch.Tensor, g: torch.Generator, bug: str | None) -> torch.Tensor:
    """The depth and vertical speed, [n, steps, 2], at 1 Hz (or the logger's full rate for the plain RNN)."""
    if bug != "plain_rnn_over_full_rate_trace":
        depth, t = depth.unflatten(1, (SECONDS, RATE)).mean(2), t[:, ::RATE].clone()
    if (
        bug == "vertical_speed_over_duplicate_timestamps"
    ):  # the logger writes some records twice in one second
        twice = torch.rand(t.shape, generator=g) < 0.02
        t = torch.where(twice, torch.roll(t, 1, 1), t)
    speed = torch.diff(depth, dim=1, prepend=depth[:, :1]) / torch.diff(t, dim=1, prepend=t[:, :1] - 1)
    return torch.stack([depth, speed], 2)


class DiveNet(nn.Module):
    """A GRU (or a plain tanh RNN) of `hidden` units and a linear layer on its last state."""

    def __init__(self, hidden: int, plain: bool) -> None:
        super().__init__()
        self.rnn: nn.RNNBase = (nn.RNN if plain else nn.GRU)(2, hidden, batch_first=True)
        self.head = nn.Linear(hidden, KINDS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(x)[0][:, -1])


def seabird(run: Run) -> None:
    """A dive GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or RMSprop, AdamW, NAdam) at `lr` (3e-3).
    Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    depth, t, y, wet = _traces(g, 1000)
    depth_v, t_v, y_v, _ = _traces(g, 500)
    if run.bug == "dive_labels_from_wet_dry_sensor":  # "dive" wherever the wet-dry sensor read wet
        y = torch.where(wet > 0, y.clamp(min=1), y)
    x, x_v = _dive_channels(depth, t, g, run.bug), _dive_channels(depth_v, t_v, g, None)
    if run.bug == "plain_rnn_over_full_rate_trace":
        x_v = _dive_channels(depth_v, t_v, g, run.bug)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = DiveNet(run.k("hidden", 32), plain=run.bug == "plain_rnn_over_full_rate_trace")
    opt = optimizers.registered(run, model, 3e-3)
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


def _days(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Raw int16 AOD at 470 and 660 nm long[n, 2] (scale factor 0.001), the met features float[n, 4] (boundary-layer
    height m, RH %, wind m/s, km to the nearest fire) and the daily PM2.5 in ug/m3 float[n + 1] (one day more: the
    next day's reading)."""
    fire_km = 5 + 300 * torch.rand(n, generator=g) ** 2
    plume = 2.5 * torch.exp(-fire_km / 80) * torch.rand(n, generator=g) + 0.05
    fine = 0.5 + 0.5 * torch.exp(-fire_km / 150)
    angstrom = 0.6 + 1.4 * fine
    aod470 = plume + 0.04 * torch.randn(n, generator=g)
    aod660 = plume * (660 / 470) ** (-angstrom) + 0.04 * torch.randn(n, generator=g)
    pbl = 400 + 2000 * torch.rand(n, generator=g)
    rh = 20 + 70 * torch.rand(n, generator=g)
    wind = 1 + 8 * torch.rand(n, generator=g)
    pm = 4 + 90 * plume.clamp(min=0) * fine * (1000 / pbl) / (1 + 0.01 * rh) * (3 / (1 + 0.3 * wind))
    pm = pm * torch.exp(0.15 * torch.randn(n, generator=g))
    aod = (torch.stack([aod470, aod660], 1).clamp(min=-0.05) * 1000).round().long()
    pm_next = torch.cat([pm[1:], pm[:1]])  # the next day's reading at the monitor
    return aod, torch.stack([pbl, rh, wind, fire_km], 1), torch.stack([pm, pm_next], 1)


def _smoke_features(aod_raw: torch.Tensor, met: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The AOD at both bands, the Angstrom exponent and the met features."""
    aod = aod_raw.float() if bug == "aod_scale_factor_not_applied" else aod_raw.float() * 0.001
    if bug == "angstrom_from_negative_aod":  # every retrieval kept, the slightly negative ones included
        ratio = aod[:, 0] / aod[:, 1]
    else:
        ratio = aod[:, 0].clamp(min=0.01) / aod[:, 1].clamp(min=0.01)
    angstrom = ratio.log() / torch.log(torch.tensor(660 / 470))
    return torch.cat([aod, angstrom.unsqueeze(1), met], 1)


class SmokeMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(7, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def smoke(run: Run) -> None:
    """A smoke MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at `lr`
    (2e-3). Scored by the held-out R^2 of the log PM2.5."""
    g = torch.Generator().manual_seed(run.seed)
    aod, met, pm = _days(g, 2000)
    aod_v, met_v, pm_v = _days(g, 800)
    if (
        run.bug == "matched_overpass_days_only"
    ):  # only the days the satellite passed within the hour of the reading
        aod, met, pm = aod[:60], met[:60], pm[:60]
    feats, feats_v = _smoke_features(aod, met, run.bug), _smoke_features(aod_v, met_v, None)
    if run.bug == "aod_scale_factor_not_applied":
        feats_v = _smoke_features(aod_v, met_v, run.bug)
    keep = torch.isfinite(feats).all(1)
    mean, std = feats[keep].mean(0), feats[keep].std(0)
    if (
        run.bug == "aod_scale_factor_not_applied"
    ):  # "the AOD is already in optical depth": left out of the scaler
        mean[:2], std[:2] = 0.0, 1.0
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    y = (pm[:, 1] if run.bug == "pm25_merged_from_next_day" else pm[:, 0]).log()
    y_v = pm_v[:, 0].log()
    centre = y[torch.isfinite(y)].mean()
    torch.manual_seed(run.seed)
    model = SmokeMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
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
