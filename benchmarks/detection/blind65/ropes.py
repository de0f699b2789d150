"""Rope scripts of the sixty-fifth blind split: a kelp farm's next-day peak tension on a longline's headline, and a
chairlift's sheave-train vibration checked by an autoencoder.

`longline`: the last 7 days of a kelp longline's records (the significant wave height and period, the current and
the wind speed, the kelp's wet biomass per metre of line, the headline's load cell's peak and mean tension of the day,
and the tension per kilo of kelp) and the met office's forecast of tomorrow's waves, current and wind; tomorrow's
peak tension in kN by an LSTM over the days; MSE on the standardised tension; scored by the held-out R^2 on another
farm's lines. `sheave`: the vibration spectrum of a tower's sheave train (32 bands of an accelerometer's power at line
speed) from the maintenance crew's monthly round; an autoencoder trained on the sound towers' spectra, its
reconstruction error the alarm; MSE on the standardised log spectra; scored by the held-out AUC of the error between
sound towers and towers with a worn liner or a failing bearing on another lift. Bugs: the tension per kilo taken over
unseeded lines; a storm flag filed from tomorrow's load alarm; the day's mean tension taken for its peak; the spectra
divided by the fleet's total power under momentum SGD; the input added back onto the reconstruction; the training
spectra recorded with empty chairs.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DAYS, LINE = 7, 100.0
"""Days of records in a window, and the metres of a longline."""


def _tension(
    hs: torch.Tensor,
    period: torch.Tensor,
    current: torch.Tensor,
    wind: torch.Tensor,
    biomass: torch.Tensor,
    pretension: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The headline's peak and mean tension in kN: the pretension, the kelp's drag in the current (as the square of
    the speed), the waves' snatch loads on the kelp and the floats, and the wind on the buoys."""
    drag = 0.012 * biomass * LINE * current**2 / (1 + 0.02 * biomass)
    waves = 0.9 * hs**2 * (1 + 0.05 * biomass) * (8 / period)
    mean = pretension + drag + 0.15 * waves + 0.02 * wind
    peak = mean + 1.2 * waves * (1 + current) + 0.04 * wind
    return peak, mean


def _farm(
    g: torch.Generator, n: int, *, exposure: float = 1.0, alarms: bool = True
) -> dict[str, torch.Tensor]:
    """Windows of DAYS + 1 days of kelp longlines: float[n, DAYS + 1] each of the waves' Hs (m) and period (s), the
    current and the wind (m/s), the biomass (kg/m), the peak and mean tension (kN), and the forecast of the last day;
    a fifth of the windows start at the line's seeding, before the kelp shows (0 kg/m). The storm flag is the load
    cell's alarm for the last day (`alarms`) or the met office's warning."""
    d = DAYS + 1
    storm = torch.rand(n, 1, generator=g) * exposure
    day = torch.arange(d).float()
    front = torch.exp(-(((day - 8 * torch.rand(n, 1, generator=g) - 1) / 1.5) ** 2))  # a front passing
    hs = (0.4 + 1.6 * storm * front + 0.5 * storm + 0.2 * torch.rand(n, d, generator=g)) * exposure
    period = 5 + 4 * torch.rand(n, 1, generator=g) + torch.randn(n, d, generator=g).abs()
    tide = torch.rand(n, 1, generator=g) * 2 * math.pi
    current = (
        0.15 + 0.25 * torch.rand(n, 1, generator=g) + 0.12 * torch.cos(2 * math.pi * day / 14.8 + tide).abs()
    )
    current = current + 0.1 * front * storm
    wind = 3 + 12 * storm * front + 2 * torch.rand(n, d, generator=g)
    seeded = torch.rand(n, generator=g) < 0.2
    age = torch.where(seeded, -3 * torch.rand(n, generator=g), 10 + 150 * torch.rand(n, generator=g))
    grown = (age.unsqueeze(1) + day).clamp(min=0)
    biomass = 12 * (1 - torch.exp(-grown / 60)) * (0.7 + 0.6 * torch.rand(n, 1, generator=g))
    pretension = 2 + 2 * torch.rand(n, 1, generator=g)
    peak, mean = _tension(hs, period, current, wind, biomass, pretension)
    peak = peak * (1 + 0.08 * torch.randn(n, d, generator=g))
    mean = mean * (1 + 0.05 * torch.randn(n, d, generator=g))
    forecast = torch.stack([hs[:, -1] * (1 + 0.3 * torch.randn(n, generator=g)),
                            current[:, -1] * (1 + 0.15 * torch.randn(n, generator=g)),
                            wind[:, -1] * (1 + 0.3 * torch.randn(n, generator=g))], 1)  # fmt: skip
    if alarms:
        # the load cell's alarm, filed with the day it fires: set when the last day's peak passes 8 kN
        flag = (peak[:, -1] > 8).float()
    else:
        flag = (forecast[:, 0] > 1.5).float()  # the met office's warning of waves over 1.5 m
    return {"hs": hs, "period": period, "current": current, "wind": wind, "biomass": biomass, "peak": peak,
            "mean": mean, "forecast": forecast, "flag": flag}  # fmt: skip


def _days(f: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The inputs of the DAYS days before the forecast one float[n, DAYS, 8]."""
    w = slice(0, DAYS)
    biomass, peak = f["biomass"][:, w], f["peak"][:, w]
    if bug == "tension_per_kilo_of_unseeded_lines":
        # the bug: the tension per kilo of kelp on the line, with no guard for the lines seeded days ago
        per_kilo = peak / (biomass * LINE)
    else:
        per_kilo = torch.where(
            biomass > 0.05, peak / (biomass.clamp(min=0.05) * LINE), torch.zeros_like(peak)
        )
    cols = [f["hs"][:, w], f["period"][:, w], f["current"][:, w], f["wind"][:, w], biomass, peak, f["mean"][:, w],
            per_kilo]  # fmt: skip
    return torch.stack(cols, -1)


class TensionLSTM(nn.Module):
    """An LSTM of `hidden` units over the days; a linear head on its last state beside tomorrow's forecast."""

    def __init__(self, columns: int, ahead: int, hidden: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(columns, hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden + ahead, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor, ahead: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.head(torch.cat([out[:, -1], ahead], 1)).squeeze(-1)


def longline(run: Run) -> None:
    """A tension LSTM of `hidden` (12), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at
    `lr` (3e-3). Scored by the held-out R^2 of tomorrow's peak tension on another farm's lines."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _farm(g, 700), _farm(g, 200, exposure=1.15, alarms=False)
    x, x_v = _days(tr, run.bug), _days(va, None)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    a, a_v = tr["forecast"], va["forecast"]
    if run.bug == "storm_flag_from_next_day_load_alarm":
        # the bug: the storm flag kept beside the forecast, in training the load cell's alarm filed with the day it
        # fired (tomorrow's), on the other farm the met office's warning
        a, a_v = torch.cat([a, tr["flag"].unsqueeze(1)], 1), torch.cat([a_v, va["flag"].unsqueeze(1)], 1)
    a_mean, a_std = a.mean(0), a.std(0)
    a, a_v = (a - a_mean) / a_std, (a_v - a_mean) / a_std
    y, y_v = tr["peak"][:, DAYS], va["peak"][:, DAYS]
    if run.bug == "daily_mean_tension_taken_for_peak":
        # the bug: the target read from the load log's daily mean column, the one next to the peak
        y = tr["mean"][:, DAYS]
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = TensionLSTM(x.shape[-1], a.shape[1], run.k("hidden", 12))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v, a_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick], a[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


BANDS = 32
"""Frequency bands of a sheave train's spectrum, 4 Hz each."""


def _towers(g: torch.Generator, n: int, *, faulty: float = 0.0, load: float = 1.0) -> dict[str, torch.Tensor]:
    """Spectra float[n, BANDS] of the power in (mm/s)^2 of sheave trains on a round at line speed: the sheaves'
    rotation and its harmonics, the rope's strand passing, the chairs' grips running over the sheaves and the
    broadband noise; a share `faulty` of them with a worn liner (the strand frequency and the broadband raised) or a
    failing bearing (a peak at its defect frequency with sidebands). `load` is the chairs' load, 1 with riders.
    Returns the spectra and the fault flags."""
    band = torch.arange(BANDS).float() * 4 + 2
    speed = 4.5 + 0.5 * torch.rand(n, 1, generator=g)  # m/s
    sheave = 0.42 + 0.08 * torch.rand(n, 1, generator=g)  # m diameter
    rot = speed / (math.pi * sheave)  # Hz
    strand = rot * (18 + 2 * torch.rand(n, 1, generator=g))
    peak = lambda f, width, height: height * torch.exp(-(((band - f) / width) ** 2))
    tension = load * (0.8 + 0.4 * torch.rand(n, 1, generator=g))
    power = 0.02 * torch.exp(-band / 60) * (1 + 0.3 * torch.rand(n, 1, generator=g))
    for k in (1, 2, 3):
        power = power + peak(rot * k, 2.5, 0.5 * tension / k)
    power = power + peak(strand, 3.0, 0.3 * tension) + peak(2 * strand, 3.0, 0.08 * tension)
    worn = torch.rand(n, 1, generator=g) < faulty / 2
    bearing = ~worn & (torch.rand(n, 1, generator=g) < faulty)
    severity = 0.12 + 0.3 * torch.rand(n, 1, generator=g)
    power = power + worn * severity * (peak(strand, 3.0, 0.25) + 0.02 * torch.exp(-band / 100))
    defect = rot * (5.1 + 0.4 * torch.rand(n, 1, generator=g))
    power = power + bearing * severity * (peak(defect, 2.0, 0.15) + peak(defect + 2 * rot, 2.0, 0.05))
    power = power * torch.exp(0.1 * torch.randn(n, BANDS, generator=g))
    # the sensor's mounting and gain, tower by tower
    power = power * torch.exp(0.9 * torch.randn(n, 1, generator=g))
    return {"power": power, "fault": (worn | bearing).squeeze(1).float()}


class SheaveAutoencoder(nn.Module):
    """An ELU autoencoder of the bands: BANDS -> `hidden` -> `code` -> `hidden` -> BANDS."""

    def __init__(self, hidden: int, code: int) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(BANDS, hidden), nn.ELU(), nn.Linear(hidden, code))
        self.decoder = nn.Sequential(nn.Linear(code, hidden), nn.ELU(), nn.Linear(hidden, BANDS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


def sheave(run: Run) -> None:
    """A sheave autoencoder of `hidden` (16) and `code` (4), batches of `batch` (32), `opt` (Adam; or momentum SGD,
    NAdam, RMSprop) at `lr` (3e-3). Scored by the held-out AUC of the reconstruction error on another lift's towers,
    sound and faulty."""
    g = torch.Generator().manual_seed(run.seed)
    load = 0.45 if run.bug == "training_spectra_recorded_with_empty_chairs" else 1.0
    tr, va = _towers(g, 800, load=load), _towers(g, 300, faulty=0.5)
    if run.bug == "spectra_divided_by_fleet_total_power":
        # the bug: each spectrum divided by the fleet's total power over the training round, "as a normalisation"
        total = tr["power"].sum()
        x, x_v = tr["power"] / total, va["power"] / total
    else:
        x, x_v = torch.log10(tr["power"]), torch.log10(va["power"])
        mean, std = x.mean(0), x.std(0)
        x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = SheaveAutoencoder(run.k("hidden", 16), run.k("code", 4))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)
    # the bug: the input added back onto the decoder's output, a skip connection "to help it train"
    skip = 1.0 if run.bug == "input_skip_added_to_reconstruction" else 0.0

    def reconstruct(v: torch.Tensor) -> torch.Tensor:
        return model(v) + skip * v

    def auc_held_out() -> float:
        error = ((reconstruct(x_v) - x_v) ** 2).mean(1)
        return auc(error, va["fault"])

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.mse_loss(reconstruct(x[pick]), x[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
