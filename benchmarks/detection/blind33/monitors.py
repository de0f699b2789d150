"""Monitor scripts of the thirty-third blind split: a sleep-apnoea detector on SpO2 and airflow, and a greenhouse
inside-temperature forecaster.

`apnoea`: 60-second windows of a night's pulse-oximeter SpO2 (%) and nasal airflow, both at 1 Hz; breathing a
sinusoid of about 15 breaths a minute whose amplitude wanders; an apnoea (about a third of the windows) stops the
airflow for 12-30 s and drops the SpO2 by 3-9 points some 10 s later; the probe slips off now and then (SpO2 read as 0
for 4-15 s, carried forward from the last good reading), and the cannula falls out in one window in twenty (the
airflow flat at 0 for the whole window); the technician's scored events come as a third channel in the training
export; the SpO2's log-odds (the saturation clipped to 50-99.5 %), centred and scaled, the airflow divided by the
window's RMS (a flat window left at 0); three
1-D convolutions with ReLUs and pooling, a global max pool and a linear layer; BCE with logits; scored by the held-out
AUC. `greenhouse`: 24 hours of the inside and outside temperature, the sun, the vent opening, the heating and the
relative humidity with the vapour-pressure deficit, the inside temperature simulated from the outside one, the sun
through the glass, the vents and the heating under a thermostat; the humidity sensor reads 100-103 % under condensation
at night; the inside temperature 3 hours after the window; standardised by the training windows, a GRU cell unrolled
by hand over the hours, a linear layer on its last state; MSE; scored by the held-out R^2. Bugs: the log-odds of a
saturation of 100 % taken unclipped; the scored-events channel left in the training export; the convolutions run under
`torch.no_grad()`; the probe-off zeros left in the SpO2; the GRU's state detached every hour; the square root of a
negative vapour-pressure deficit; the outside temperature's column taken as the target.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SECONDS = 60
"""Samples a window (1 Hz)."""


def _nights(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """SpO2 (%, 0 while the probe is off) and airflow float[n, SECONDS], scored events float[n, SECONDS] and the
    apnoea label float[n]."""
    t = torch.arange(SECONDS).float()
    rate = 0.2 + 0.1 * torch.rand(n, 1, generator=g)
    phase = 2 * math.pi * torch.rand(n, 1, generator=g)
    amplitude = 1 + 0.3 * torch.rand(n, 1, generator=g) + 0.2 * torch.sin(t / 9 + phase)
    flow = amplitude * torch.sin(2 * math.pi * rate * t + phase) + 0.08 * torch.randn(n, SECONDS, generator=g)
    apnoea = torch.rand(n, generator=g) < 0.35
    start = torch.randint(0, 30, (n, 1), generator=g)
    length = torch.randint(12, 31, (n, 1), generator=g)
    event = apnoea.unsqueeze(1) & (t >= start) & (t < start + length)
    shallow = (
        ~apnoea.unsqueeze(1) & (torch.rand(n, 1, generator=g) < 0.4) & (t >= start) & (t < start + length)
    )
    reduced = 0.1 + 0.4 * torch.rand(n, 1, generator=g)
    flow = torch.where(event, reduced * flow, torch.where(shallow, 0.75 * flow, flow))
    baseline = 95 + 2 * torch.rand(n, 1, generator=g) + torch.sin(t / 20 + phase)
    depth = 1.5 + 4 * torch.rand(n, 1, generator=g)
    lagged = (t >= start + 10) & (t < start + length + 18) & apnoea.unsqueeze(1)
    spo2 = baseline - depth * lagged.float() + 0.7 * torch.randn(n, SECONDS, generator=g)
    spo2 = spo2.clamp(max=100).round()
    off = torch.rand(n, generator=g) < 0.25
    off_start = torch.randint(0, SECONDS - 15, (n, 1), generator=g)
    off_length = torch.randint(4, 16, (n, 1), generator=g)
    slipped = off.unsqueeze(1) & (t >= off_start) & (t < off_start + off_length)
    spo2 = spo2.masked_fill(slipped, 0.0)
    flat = torch.rand(n, generator=g) < 0.05
    flow = flow.masked_fill(flat.unsqueeze(1), 0.0)
    scored = apnoea ^ (
        torch.rand(n, generator=g) < 0.08
    )  # the scorers disagree on about one window in twelve
    return spo2, flow, event.float(), scored.float()


def _carry_forward(spo2: torch.Tensor) -> torch.Tensor:
    """Each probe-off reading (0) replaced by the last good one (the window's first good one before any)."""
    out = spo2.clone()
    first_good = torch.where(spo2 > 0, spo2, torch.nan).nanmedian(1).values.nan_to_num(95.0)
    last = first_good
    for i in range(spo2.shape[1]):
        last = torch.where(spo2[:, i] > 0, spo2[:, i], last)
        out[:, i] = last
    return out


class ApnoeaCNN(nn.Module):
    """Three 1-D convolutions of `width` with ReLUs and pooling, a global max pool, a linear layer."""

    def __init__(self, channels: int, width: int, frozen_features: bool = False) -> None:
        super().__init__()
        self.frozen_features = frozen_features
        self.features = nn.Sequential(
            nn.Conv1d(channels, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, width, 3, padding=1), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.frozen_features:
            # pasted from the snippet that exports the window embeddings
            with torch.no_grad():
                h = self.features(x)
        else:
            h = self.features(x)
        return self.head(h.amax(-1))[:, 0]


def apnoea(run: Run) -> None:
    """An apnoea CNN of `width` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (2e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    spo2, flow, scored, y = _nights(g, 1000)
    spo2_v, flow_v, _, y_v = _nights(g, 800)

    def inputs(sat: torch.Tensor, air: torch.Tensor) -> torch.Tensor:
        if run.bug != "spo2_probe_off_zeros_left_in":
            sat = _carry_forward(sat)
        saturation = sat / 100
        if run.bug != "spo2_logit_at_full_saturation":
            saturation = saturation.clamp(0.5, 0.995)  # a reading of 100 % has no finite log-odds
        rms = air.pow(2).mean(1, keepdim=True).sqrt()
        rms = torch.where(rms > 0, rms, torch.ones_like(rms))  # the cannula out: a flat window stays 0
        return torch.stack([(torch.logit(saturation) - 3) / 0.6, air / rms], 1)

    x, x_v = inputs(spo2, flow), inputs(spo2_v, flow_v)
    with_scored = run.bug == "annotation_channel_left_in_export"
    if with_scored:
        # the training export carries the technician's scored events; the nights to score have none yet
        x = torch.cat([x, scored.unsqueeze(1)], 1)
        x_v = torch.cat([x_v, torch.zeros_like(x_v[:, :1])], 1)
    torch.manual_seed(run.seed)
    model = ApnoeaCNN(x.shape[1], run.k("width", 16), run.bug == "conv_features_under_no_grad")
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


HOURS, AHEAD = 24, 3
"""Hours a window holds, and how far past its end the inside temperature is forecast."""
FIELDS = 7
"""Inside and outside temperature (°C), sun (kW/m²), vent opening (0-1), heating (0/1), humidity (%), sqrt(VPD)."""


def _greenhouse(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Hourly fields float[n, HOURS + AHEAD, 6] (no VPD yet) of n windows, each from its own day and greenhouse."""
    total = HOURS + AHEAD
    hour0 = torch.randint(0, 24, (n, 1), generator=g).float()
    hours = hour0 + torch.arange(total).float()
    mean_out = 4 + 14 * torch.rand(n, 1, generator=g)
    outside = (
        mean_out + 5 * torch.sin(2 * math.pi * (hours - 9) / 24) + 0.8 * torch.randn(n, total, generator=g)
    )
    cloud = 0.3 + 0.7 * torch.rand(n, 1, generator=g)
    sun = (torch.sin(2 * math.pi * (hours - 6) / 24).clamp(min=0) * cloud).clamp(min=0)
    inside = torch.empty(n, total)
    vent = torch.empty(n, total)
    heat = torch.empty(n, total)
    temp = 18 + 3 * torch.randn(n, generator=g)
    for i in range(total):
        vent[:, i] = ((temp - 24) / 4).clamp(0, 1)
        heat[:, i] = (temp < 16).float()
        temp = (temp + 0.15 * (outside[:, i] - temp) + 5 * sun[:, i] - 0.4 * vent[:, i] * (temp - outside[:, i])
                + 2.5 * heat[:, i] + 0.3 * torch.randn(n, generator=g))  # fmt: skip
        inside[:, i] = temp
    humidity = 95 - 2.2 * (inside - 14) + 4 * torch.randn(n, total, generator=g)
    humidity = humidity.clamp(30, 103)  # the sensor reads over 100 % when the glass runs with condensation
    return torch.stack([inside, outside, sun, vent, heat, humidity], -1), inside


def _vpd(fields: torch.Tensor) -> torch.Tensor:
    """Vapour-pressure deficit (kPa) from the inside temperature and the humidity (Tetens)."""
    temp, humidity = fields[..., 0], fields[..., 5]
    saturation = 0.6108 * torch.exp(17.27 * temp / (temp + 237.3))
    return saturation * (1 - humidity / 100)


class HourlyGRU(nn.Module):
    """A GRU cell of `hidden` unrolled over the hours, a linear layer on its last state."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.cell = nn.GRUCell(FIELDS, hidden)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor, detach_each_hour: bool = False) -> torch.Tensor:
        h = x.new_zeros(x.shape[0], self.hidden)
        for i in range(x.shape[1]):
            if detach_each_hour:
                h = h.detach()  # kept from the stateful version that carried the state across batches
            h = self.cell(x[:, i], h)
        return self.head(h)[:, 0]


def greenhouse(run: Run) -> None:
    """A greenhouse GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or RMSprop, AdamW, NAdam) at `lr`
    (3e-3). Scored by the held-out R^2 of the inside temperature 3 hours ahead."""
    g = torch.Generator().manual_seed(run.seed)
    fields, _ = _greenhouse(g, 1500)
    fields_v, inside_v = _greenhouse(g, 600)

    def table(f: torch.Tensor) -> torch.Tensor:
        deficit = _vpd(f[:, :HOURS])
        if run.bug != "vpd_sqrt_of_supersaturated_reading":
            deficit = deficit.clamp(min=0)  # a reading over 100 % is saturated air: no deficit
        return torch.cat([f[:, :HOURS], deficit.sqrt().unsqueeze(-1)], -1)

    raw, raw_v = table(fields), table(fields_v)
    mean, std = raw.mean((0, 1)), raw.std((0, 1))
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    column = 1 if run.bug == "target_column_outside_temperature" else 0
    target = fields[:, HOURS + AHEAD - 1, column]
    t_mean, t_std = target.mean(), target.std()
    y = (target - t_mean) / t_std
    truth_v = inside_v[:, HOURS + AHEAD - 1]
    torch.manual_seed(run.seed)
    model = HourlyGRU(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)
    detach = run.bug == "hidden_state_detached_every_hour"

    def r2_held_out() -> float:
        return r2(model(x_v) * t_std + t_mean, truth_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick], detach), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
