"""Machine scripts of the sixty-first blind split: a ski area's haul-rope inspection classifier on magnetic rope test
traces, and a tidal-stream turbine's next-hour power forecaster.

`rope`: a 12 m stretch of a chairlift's haul rope as the magnetic inspection head records it (the loss of metallic
area in % and the localised-fault coil's voltage at 64 points along the rope); what the stretch holds (sound rope,
broken wires, corrosion, a splice's tucks) by a 1-D CNN over the rope; cross-entropy; scored by the held-out accuracy
on another lift's rope. `tidal`: the last two hours of the turbine's ten-minute records (the current speed at hub height
from the seabed ADCP, the flow's direction as a sine and a cosine, the water level and the turbine's power); the power
an hour ahead by a small transformer encoder; MSE on the standardised power; scored by the held-out R^2 on another
turbine of the array. Bugs: the traces resampled with the older head's encoder wheel; the summed loss divided by the
training set's size; the rope's chainage kept as a channel; the power coefficient taken at slack water; the power
target left in kilowatts under momentum SGD; each record's direction averaged across north as plain degrees.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

LENGTH, METRES = 64, 12.0
FINDINGS = ("sound", "broken wires", "corrosion", "splice")


def _traces(g: torch.Generator, n: int, *, lay: float = 1.6, noise: float = 1.0, stretch: float = 1.0,
            hotspots: bool = False) -> dict[str, torch.Tensor]:  # fmt: skip
    """Stretches of rope: the loss of metallic area in % and the LF coil in mV float[n, 2, LENGTH], the chainage of
    the stretch's start in m float[n], the finding long[n]. `lay` is the strands' lay length in m (the LF's ripple),
    `stretch` the factor the sampling puts on lengths along the rope (1 with the right encoder wheel); with
    `hotspots` the findings sit where this rope's inspections keep finding them (broken wires by the drive terminal,
    corrosion in the wet stretch below the return terminal)."""
    finding = torch.randint(0, len(FINDINGS), (n,), generator=g)
    z = (torch.arange(LENGTH).float() + 0.5) * METRES / LENGTH / stretch  # metres along the rope
    at = 2 + 8 * torch.rand(n, 1, generator=g)  # where the finding sits in the stretch
    lma = 0.15 * torch.randn(n, LENGTH, generator=g).cumsum(1) / math.sqrt(LENGTH)
    phase = 2 * math.pi * torch.rand(n, 1, generator=g)
    lf = (0.6 + 0.4 * torch.rand(n, 1, generator=g)) * torch.sin(2 * math.pi * z / lay + phase)
    # broken wires: a cluster of sharp LF spikes within a lay length, a small step in the metallic area
    wires = torch.zeros(n, LENGTH)
    for k in range(3):
        spot = at + (k - 1) * 0.35 * torch.rand(n, 1, generator=g)
        keep = torch.rand(n, 1, generator=g) < 0.8
        height = (1.2 + 1.8 * torch.rand(n, 1, generator=g)) * torch.where(
            torch.rand(n, 1, generator=g) < 0.5, -1, 1
        )
        wires = wires + keep * height * torch.exp(-0.5 * ((z - spot) / 0.1) ** 2)
    # corrosion: a broad loss of metallic area and a rough LF over it
    width = 1 + 1.5 * torch.rand(n, 1, generator=g)
    depth = 0.6 + 1.2 * torch.rand(n, 1, generator=g)
    patch = torch.exp(-0.5 * ((z - at) / width) ** 4)
    rough = patch * 0.6 * torch.randn(n, LENGTH, generator=g)
    # a splice: the strands' tucks, a row of bumps of metallic area and LF pulses over about 6 m
    tucks = sum(torch.exp(-0.5 * ((z - at - 1.2 * (k - 2.5)) / 0.15) ** 2) for k in range(6))
    pulse = sum(torch.exp(-0.5 * ((z - at - 1.2 * (k - 2.5)) / 0.1) ** 2) * (-1) ** k for k in range(6))
    one = lambda k: (finding == k).float().unsqueeze(1)
    lma = lma + one(1) * 0.15 * torch.sigmoid((z - at) / 0.05) + one(2) * depth * patch + one(3) * 0.5 * tucks
    lf = lf + one(1) * wires + one(2) * rough + one(3) * 0.9 * pulse
    lma = lma + 0.05 * noise * torch.randn(n, LENGTH, generator=g)
    lf = lf + 0.25 * noise * torch.randn(n, LENGTH, generator=g)
    if hotspots:
        centre = torch.tensor([900.0, 60.0, 1700.0, 900.0])[finding]
        spread = torch.tensor([900.0, 60.0, 120.0, 900.0])[finding]
        chainage = (centre + spread * (2 * torch.rand(n, generator=g) - 1)).clamp(min=0)
    else:
        chainage = 1800 * torch.rand(n, generator=g)
    return {"trace": torch.stack([lma, lf], 1), "chainage": chainage, "finding": finding}


class RopeCNN(nn.Module):
    """Two conv layers along the rope with ReLU and pooling, a max over the rope and a linear head."""

    def __init__(self, channels: int, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(channels, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(width, len(FINDINGS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.net(x).amax(-1))


def rope(run: Run) -> None:
    """A rope CNN of `width` (12), batches of `batch` (32), `opt` (Adam; or momentum SGD, RAdam, Adamax) at `lr`
    (2e-3). Scored by the held-out accuracy of the finding on another lift's rope."""
    g = torch.Generator().manual_seed(run.seed)
    # the training stretches: this lift's rope and its inspections' hotspots; held out: another lift's rope
    stretch = 1.5 if run.bug == "traces_resampled_with_older_encoder_wheel" else 1.0
    tr = _traces(g, 1000, stretch=stretch, hotspots=True)
    va = _traces(g, 250, lay=1.8, noise=1.5)
    x, x_v = tr["trace"], va["trace"]
    mean, std = x.mean((0, 2), keepdim=True), x.std((0, 2), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    if run.bug == "chainage_kept_as_channel":
        # the bug: the stretch's chainage in km kept as a third channel, "so the model knows where it is"
        x = torch.cat([x, (tr["chainage"] / 1000).view(-1, 1, 1).expand(-1, 1, LENGTH)], 1)
        x_v = torch.cat([x_v, (va["chainage"] / 1000).view(-1, 1, 1).expand(-1, 1, LENGTH)], 1)
    y, y_v = tr["finding"], va["finding"]
    torch.manual_seed(run.seed)
    model = RopeCNN(x.shape[1], run.k("width", 12))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        if run.bug == "summed_loss_over_training_set_size":
            # the bug: the epoch average's formula, the batch's summed loss over the training set's 1000 stretches
            loss = F.cross_entropy(model(x[pick]), y[pick], reduction="sum") / len(y)
        else:
            loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


RECORDS, AHEAD, RHO, AREA, RATED = 12, 6, 1025.0, 250.0, 1000.0
"""Ten-minute records in a window, records ahead of the forecast, seawater's density in kg/m^3, the rotor's swept area
in m^2 and the rated power in kW."""


def _site(g: torch.Generator, n: int, *, amplitude: float = 2.6) -> dict[str, torch.Tensor]:
    """Windows of a turbine's ten-minute records float[n, RECORDS + AHEAD] each: the ADCP's current speed at hub height
    in m/s (0 below its 0.1 m/s threshold), the direction the flow goes to in degrees (flood to about north, ebb to
    about south) as the mean of its 1 Hz samples and as the samples' plain average, the water level in m and the power
    in kW (a fixed-yaw rotor aligned with the flood)."""
    steps = RECORDS + AHEAD
    t = (torch.rand(n, 1, generator=g) * 29.5 * 24 + torch.arange(steps).float() / 6).unsqueeze(-1)  # hours
    m2, s2 = 2 * math.pi / 12.42, 2 * math.pi / 12.0
    ph = 2 * math.pi * torch.rand(n, 1, 1, generator=g)
    level = 2.2 * torch.cos(m2 * t + ph) + 0.7 * torch.cos(s2 * t + ph)
    amp = amplitude * (0.85 + 0.3 * torch.rand(n, 1, 1, generator=g))
    # the stream leads the level by a quarter period; the flood runs stronger than the ebb
    flow = amp * (0.8 * torch.sin(m2 * t + ph) + 0.25 * torch.sin(s2 * t + ph))
    flow = flow * torch.where(flow > 0, 1.1, 0.9) * (1 + 0.05 * torch.randn(n, steps, 1, generator=g))
    surge = 0.15 * torch.randn(n, 1, 1, generator=g)
    speed = (flow.abs() + surge).clamp(min=0)
    # the flow veers through the tide: flood around 355 degrees, ebb around 170, 1 Hz samples over the ten minutes
    axis = torch.where(flow > 0, -5.0, 170.0) + 12 * torch.sin(m2 * t * 2 + ph)
    samples = axis + 8 * torch.randn(n, steps, 60, generator=g)
    true_dir = torch.rad2deg(
        torch.atan2(torch.deg2rad(samples).sin().mean(-1), torch.deg2rad(samples).cos().mean(-1))
    )
    plain_dir = (samples % 360).mean(-1)
    misalign = torch.deg2rad(torch.where(flow > 0, axis + 0.0, axis - 180.0)).squeeze(-1)
    speed = speed.squeeze(-1)
    cp = 0.42 * torch.cos(misalign).clamp(min=0) ** 3
    power = (0.5 * RHO * AREA * cp * speed**3 / 1000).clamp(max=RATED) * (speed > 0.7)
    power = (power * (1 + 0.04 * torch.randn(n, steps, generator=g))).clamp(min=0)
    speed = torch.where(speed < 0.1, torch.zeros_like(speed), speed)
    return {"speed": speed, "direction": true_dir % 360, "plain_direction": plain_dir, "level": level.squeeze(-1),
            "power": power}  # fmt: skip


def _records(s: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The window's inputs float[n, RECORDS, 6 or 7]: speed, direction's sine and cosine, level, power (and the power
    coefficient the bug adds)."""
    w = slice(0, RECORDS)
    direction = s["plain_direction"] if bug == "direction_averaged_across_north" else s["direction"]
    rad = torch.deg2rad(direction[:, w])
    cols = [s["speed"][:, w], rad.sin(), rad.cos(), s["level"][:, w], s["power"][:, w]]
    if bug == "power_coefficient_at_slack_water":
        # the bug: the power coefficient P / (0.5 rho A v^3), 0 / 0 at slack water where the ADCP reads 0
        v = s["speed"][:, w]
        cols.append(s["power"][:, w] * 1000 / (0.5 * RHO * AREA * v**3))
    return torch.stack(cols, -1)


class TideEncoder(nn.Module):
    """Each record projected to `width` plus a learned position, one transformer encoder layer, the last record's
    state and a linear head."""

    def __init__(self, columns: int, width: int) -> None:
        super().__init__()
        self.inp = nn.Linear(columns, width)
        self.position = nn.Parameter(0.1 * torch.randn(RECORDS, width))
        self.encoder = nn.TransformerEncoderLayer(width, 2, 2 * width, dropout=0.0, batch_first=True)
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.encoder(self.inp(x) + self.position)
        return self.head(h[:, -1]).squeeze(-1)


def tidal(run: Run) -> None:
    """A tide encoder of `width` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, NAdam) at `lr`
    (2e-3). Scored by the held-out R^2 of the power an hour ahead on another turbine of the array."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _site(g, 900), _site(g, 200, amplitude=2.3)
    x, x_v = _records(tr, run.bug), _records(va, None)
    if run.bug == "power_coefficient_at_slack_water":
        v = va["speed"][:, :RECORDS]
        cp = va["power"][:, :RECORDS] * 1000 / (0.5 * RHO * AREA * v.clamp(min=0.7) ** 3)
        x_v = torch.cat([x_v, cp.unsqueeze(-1)], -1)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = tr["power"][:, RECORDS + AHEAD - 1], va["power"][:, RECORDS + AHEAD - 1]
    centre, scale = y.mean(), y.std()
    if run.bug == "power_target_left_in_kilowatts":
        # the bug: the SCADA's power in kW taken as the target as it is, without the inputs' standardisation
        centre, scale = torch.tensor(0.0), torch.tensor(1.0)
    torch.manual_seed(run.seed)
    model = TideEncoder(x.shape[-1], run.k("width", 16))
    opt = optimizers.registered(run, model, 2e-3)
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
