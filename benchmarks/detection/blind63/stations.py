"""Station scripts of the sixty-third blind split: an automated lighthouse's next-dawn battery charge, and a glacier
weather station's daily melt.

`lantern`: the last 8 days of an unmanned light's controller log (the battery's state of charge at dawn, the solar
panel's amp-hours of the day, the lantern's lit hours, the fog signal's hours, the hours of darkness from the almanac,
the battery room's temperature and the lantern's night share, its lit hours over the hours of darkness); the charge
two dawns ahead by a GRU over the days; MSE on the standardised charge; scored by the held-out R^2 on another
district's lights. `ablation`: a glacier station's day of three-hourly records (air temperature, incoming and reflected
shortwave, incoming longwave, wind speed, humidity); the day's melt in mm water equivalent, as the sonic ranger's
lowering of the surface shows it, by a small self-attention encoder over the records; MSE on the standardised melt;
scored by the held-out R^2 on another glacier's station, on the days the model fills in. Bugs: the night share taken over the midnight sun's zero
hours of darkness; the fog hours robust-scaled by an interquartile range of 0; the days to the next service visit,
called out by low charge, kept as an input; the charge read at dusk for the target; the ranger's distances left
without the speed of sound's temperature correction; the ranger's own lowering kept as an input to a model meant
to fill its gaps; the melt regressed in metres water equivalent under momentum
SGD.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DAYS, AHEAD = 8, 2
"""Days in the log, and the dawns ahead the charge is forecast for (the keepers' boat needs two days' notice)."""


def _daylight(lat: torch.Tensor, doy: torch.Tensor) -> torch.Tensor:
    """Hours of daylight at latitude `lat` (degrees) on day of year `doy` (24 under the midnight sun)."""
    decl = torch.deg2rad(23.44 * torch.sin(2 * math.pi * (doy - 80) / 365))
    cos_h = -torch.tan(torch.deg2rad(lat)) * torch.tan(decl)
    return 24 * torch.arccos(cos_h.clamp(-1, 1)) / math.pi


def _lights(
    g: torch.Generator, n: int, *, arctic: float = 0.25, callouts: bool = True
) -> dict[str, torch.Tensor]:
    """Windows of DAYS + AHEAD days of unmanned lights: the state of charge in % at dawn float[n, DAYS + AHEAD + 1] and
    at dusk float[n, DAYS + AHEAD] as the controller estimates it, and float[n, DAYS + AHEAD] each: the panel's Ah,
    the lit hours, the fog hours, the hours of darkness, the battery room's temperature and the days to the next
    service visit (callouts when the charge runs low, or a fixed round of visits). A share `arctic` of the lights
    stands north of the Arctic circle."""
    north = torch.rand(n, 1, generator=g) < arctic
    lat = torch.where(north, 67 + 4 * torch.rand(n, 1, generator=g), 54 + 11 * torch.rand(n, 1, generator=g))
    doy = 365 * torch.rand(n, 1, generator=g) + torch.arange(DAYS + AHEAD).float()
    day = _daylight(lat, doy)
    dark = 24 - day
    capacity = 150 + 150 * torch.rand(n, 1, generator=g)  # Ah at 24 V
    lamp = 1.5 + 1.5 * torch.rand(n, 1, generator=g)  # the lantern's A at 24 V
    panel = (lamp + 0.4) * (
        2.4 + 1.2 * torch.rand(n, 1, generator=g)
    )  # Ah per sunny hour, sized to the lantern
    foggy = (torch.rand(n, DAYS + AHEAD, generator=g) < 0.2).float()
    fog = foggy * (1 + 9 * torch.rand(n, DAYS + AHEAD, generator=g))  # hours of fog signal
    cloud = torch.rand(n, DAYS + AHEAD, generator=g)
    snow = (torch.rand(n, DAYS + AHEAD, generator=g) < 0.04).float()
    sun = day * (1 - 0.6 * cloud) * (1 - snow) * (0.5 + 0.5 * torch.sin(torch.deg2rad(90 - lat + 20)))
    charge = (panel * sun * (1 + 0.08 * torch.randn(n, DAYS + AHEAD, generator=g))).clamp(min=0)
    temp = 8 + 6 * torch.randn(n, 1, generator=g) + 2 * torch.randn(n, DAYS + AHEAD, generator=g)
    lit = dark + 0.5 * fog * (day > 0).float()  # the lantern also burns in the day's fog
    usable = capacity * (1 + 0.006 * (temp - 20)).clamp(max=1.05)
    dawn = torch.zeros(n, DAYS + AHEAD + 1)
    dusk = torch.zeros(n, DAYS + AHEAD)
    dawn[:, 0] = 55 + 40 * torch.rand(n, generator=g)
    for d in range(DAYS + AHEAD):
        # the controller's 0.4 A all day, the lantern through the day's fog, the fog signal's 1.6 A through its hours
        day_load = 0.4 * day[:, d] + (lamp[:, 0] + 1.6) * 0.5 * fog[:, d] * (day[:, d] > 0).float()
        dusk[:, d] = (dawn[:, d] + 100 * (0.92 * charge[:, d] - day_load) / usable[:, d]).clamp(0, 100)
        night = (lamp[:, 0] + 0.4) * dark[:, d] + 1.6 * 0.5 * fog[:, d]
        dawn[:, d + 1] = (dusk[:, d] - 100 * night / usable[:, d]).clamp(0, 100)
    if callouts:
        low = dawn[:, 1:] < 35
        first = torch.where(low.any(1), low.float().argmax(1), torch.full((n,), DAYS + 6)).float()
        visit = (first.unsqueeze(1) + 1 - torch.arange(DAYS + AHEAD).float()).clamp(min=0)
    else:
        visit = ((torch.rand(n, 1, generator=g) * 60).floor() - torch.arange(DAYS + AHEAD).float()) % 60
    noisy = lambda x, s: x + s * torch.randn(x.shape, generator=g)
    # the controller's charge estimate from the bank's voltage, a few points either way
    return {"dawn": noisy(dawn, 6.0), "dusk": noisy(dusk, 6.0),
            "charge": charge, "lit": lit, "fog": fog, "dark": dark, "temp": temp, "visit": visit}  # fmt: skip


def _log(s: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The days' inputs float[n, DAYS, 7 or 8]: the dawn charge, the panel's Ah, lit hours, fog hours, hours of
    darkness, temperature and the night share (and the days to the next visit with the bug)."""
    w = slice(1, DAYS + 1)
    lit, dark = s["lit"][:, w], s["dark"][:, w]
    if bug == "night_share_over_midnight_sun":
        # the bug: the lantern's night share as lit hours over hours of darkness, with no guard for the midnight sun
        share = lit / dark
    else:
        share = torch.where(dark > 0.5, lit / dark.clamp(min=0.5), torch.zeros_like(lit))
    cols = [s["dawn"][:, w], s["charge"][:, w], lit, s["fog"][:, w], dark, s["temp"][:, w], share]
    if bug == "days_to_next_visit_from_callouts":
        cols.append(s["visit"][:, w])
    return torch.stack(cols, -1)


class LanternGRU(nn.Module):
    """A GRU of `hidden` units over the days and a linear head on its last state."""

    def __init__(self, columns: int, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(columns, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, -1]).squeeze(-1)


def lantern(run: Run) -> None:
    """A lantern GRU of `hidden` (12), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at
    `lr` (3e-3). Scored by the held-out R^2 of the charge two dawns ahead on another district's lights."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _lights(g, 700), _lights(g, 200, arctic=0.0, callouts=False)
    x, x_v = _log(tr, run.bug), _log(va, None if run.bug != "days_to_next_visit_from_callouts" else run.bug)
    if run.bug == "fog_hours_scaled_by_zero_iqr":
        # the bug: every column robust-scaled by its median and interquartile range, the fog hours' IQR being 0
        flat = x.reshape(-1, x.shape[-1])
        centre = flat.median(0).values
        spread = flat.quantile(0.75, 0) - flat.quantile(0.25, 0)
    else:
        centre, spread = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - centre) / spread, (x_v - centre) / spread
    y, y_v = tr["dawn"][:, DAYS + AHEAD], va["dawn"][:, DAYS + AHEAD]
    if run.bug == "charge_read_at_dusk_for_target":
        # the bug: the target read from the log's last charge reading before that dawn, the dusk one, before the
        # night's discharge
        y = tr["dusk"][:, DAYS + AHEAD - 1]
    mean, std = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = LanternGRU(x.shape[-1], run.k("hidden", 12))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v) * std + mean, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), (y[pick] - mean) / std)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


RECORDS, ICE, SNOW = 8, 0.9, 0.4
"""Three-hourly records in a day, the density of ice and of the old snow over it relative to water."""


def _station(g: torch.Generator, n: int, *, warm: float = 0.0) -> dict[str, torch.Tensor]:
    """Days at a glacier station: the records float[n, RECORDS] (air temperature in C, incoming and reflected
    shortwave and incoming longwave in W/m^2, wind in m/s, humidity in %), the ranger's distance to the surface in m
    at the day's start and end as the sensor reports it (timed at the speed of sound at 0 C) and corrected, and the
    day's melt in mm w.e."""
    hour = torch.arange(RECORDS).float() * 3 + 1.5
    doy = 150 + 90 * torch.rand(n, 1, generator=g)
    mean_t = 1.5 + warm + 3.5 * torch.randn(n, 1, generator=g)
    swing = 2 + 3 * torch.rand(n, 1, generator=g)
    trend = 5 * torch.randn(n, 1, generator=g)  # a front coming in or clearing over the day
    temp = mean_t + trend * (hour - 12) / 24 + swing * torch.cos(2 * math.pi * (hour - 15) / 24)
    temp = temp + 0.6 * torch.randn(n, RECORDS, generator=g)
    cloud = torch.rand(n, 1, generator=g)
    sun_up = torch.cos(2 * math.pi * (hour - 13) / 24).clamp(min=0) * torch.cos(
        2 * math.pi * (doy - 172) / 365
    )
    sw_in = 950 * sun_up * (1 - 0.7 * cloud) * (1 + 0.1 * torch.randn(n, RECORDS, generator=g)).clamp(min=0)
    snow = torch.rand(n, 1, generator=g) < 0.35  # old snow still lying over the ice
    albedo = torch.where(
        snow, 0.65 + 0.15 * torch.rand(n, 1, generator=g), 0.3 + 0.15 * torch.rand(n, 1, generator=g)
    )
    sw_out = sw_in * albedo
    lw_in = 250 + 70 * cloud + 4 * temp + 10 * torch.randn(n, RECORDS, generator=g)
    wind = 2 + 4 * torch.rand(n, 1, generator=g) + torch.randn(n, RECORDS, generator=g).abs()
    humidity = (60 + 25 * cloud + 5 * torch.randn(n, RECORDS, generator=g)).clamp(20, 100)
    # the surface energy balance at a melting surface: net shortwave, longwave against 315 W/m^2, the sensible heat
    flux = sw_in - sw_out + lw_in - 315 + 6 * wind * temp.clamp(min=-2) + 0.8 * (humidity - 70)
    melt = (flux.clamp(min=0) * 10800 / 334000).sum(1)  # mm w.e. a day
    melt = melt * (1 + 0.1 * torch.randn(n, generator=g))
    lowering = melt / 1000 / torch.where(snow.squeeze(1), SNOW, ICE)  # m of surface
    start = 1.5 + 1.5 * torch.rand(n, generator=g)
    end = start + lowering
    c = lambda t: torch.sqrt(1 + t / 273.15)  # the speed of sound relative to its speed at 0 C
    raw_start, raw_end = start / c(temp[:, 0]), end / c(temp[:, -1])
    noise = 0.004 * torch.randn(n, 2, generator=g)
    return {"temp": temp, "sw_in": sw_in, "sw_out": sw_out, "lw_in": lw_in, "wind": wind, "humidity": humidity,
            "raw": torch.stack([raw_start, raw_end], 1) + noise, "snow": snow.squeeze(1).float(),
            "melt": melt}  # fmt: skip


def _melt_from_ranger(s: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The day's melt in mm w.e. from the ranger's distances, by the surface's density (snow or ice)."""
    start, end = s["raw"][:, 0], s["raw"][:, 1]
    if bug != "ranger_distance_without_sound_speed_correction":
        start = start * torch.sqrt(1 + s["temp"][:, 0] / 273.15)
        end = end * torch.sqrt(1 + s["temp"][:, -1] / 273.15)
    density = torch.where(s["snow"] > 0, SNOW, ICE)
    return (end - start) * density * 1000


def _records(s: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.stack([s["temp"], s["sw_in"], s["sw_out"], s["lw_in"], s["wind"], s["humidity"]], -1)


class MeltAttention(nn.Module):
    """Each record projected to `width` plus a learned position, one self-attention block with a GELU feed-forward,
    a mean over the day's records and a linear head."""

    def __init__(self, columns: int, width: int) -> None:
        super().__init__()
        self.inp = nn.Linear(columns, width)
        self.position = nn.Parameter(0.1 * torch.randn(RECORDS, width))
        self.attention = nn.MultiheadAttention(width, 2, batch_first=True)
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x) + self.position
        a, _ = self.attention(h, h, h, need_weights=False)
        h = self.norm1(h + a)
        h = self.norm2(h + self.ff(h))
        return self.head(h.mean(1)).squeeze(-1)


def ablation(run: Run) -> None:
    """A melt attention encoder of `width` (12), batches of `batch` (32), `opt` (Adam; or momentum SGD, NAdam, Adamax)
    at `lr` (3e-3). Scored by the held-out R^2 of the day's melt on another glacier's station."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _station(g, 800), _station(g, 200, warm=1.0)
    x, x_v = _records(tr), _records(va)
    if run.bug == "ranger_lowering_kept_for_gap_filling":
        # the bug: the ranger's lowering of the day kept as a column; the days to fill are the ranger's gaps, where
        # the held-out station's column holds the training mean
        lowering = (tr["raw"][:, 1] - tr["raw"][:, 0]).view(-1, 1, 1).expand(-1, RECORDS, 1)
        x = torch.cat([x, lowering], -1)
        x_v = torch.cat([x_v, torch.full_like(x_v[..., :1], float(lowering.mean()))], -1)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = _melt_from_ranger(tr, run.bug), _melt_from_ranger(va, None)
    centre, scale = y.mean(), y.std()
    if run.bug == "melt_target_in_metres_water_equivalent":
        # the bug: the melt regressed in m w.e. as the mass-balance database holds it, "small numbers, no scaling"
        centre, scale = torch.tensor(0.0), torch.tensor(1000.0)
    torch.manual_seed(run.seed)
    model = MeltAttention(x.shape[-1], run.k("width", 12))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
