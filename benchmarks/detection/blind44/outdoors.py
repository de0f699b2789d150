"""Outdoor scripts of the forty-fourth blind split: a ski-resort snowmaking water-use regressor, and a fishing-vessel
gear-type GRU on AIS speed and heading tracks.

`snow`: one row per resort and snowmaking night: the forecast wet-bulb temperature, humidity and wind, the hours cold
enough to run the guns, the guns planned and the depth still to make; the night's water use comes from the resort's
cumulative flow meter (read each morning, rolling over at 1,000,000 m3) as the difference of two readings; a ReLU MLP
of two hidden layers regresses the use in thousands of m3; scored by the held-out R^2 over unseen resorts. `gear`:
AIS tracks of 12-48 pings ten minutes apart of trawlers, longliners and purse seiners, each ping the speed over
ground, the course's sine and cosine and the turn since the last ping, zero-padded to 48; a GRU read at each track's
last ping and a linear layer; cross-entropy over the three gears; gradients clipped when `clip`; scored by the held-out
accuracy. Bugs: the meter's rollover left in the daily use; the cumulative reading taken as the night's use; the snow
made that night among the inputs; the GRU read after the padding; the sine of a course in degrees; the clipping line
dropped.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

NIGHTS, ROLLOVER = 100, 1_000_000.0


def _nights(g: torch.Generator, resorts: int, bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows float[resorts * NIGHTS, 6 or 7] (wet bulb C, humidity %, wind m/s, cold hours, guns, depth to make cm,
    and with the leak the snow made cm) and the night's water use in thousands of m3 float[resorts * NIGHTS]."""
    guns_fleet = torch.randint(15, 70, (resorts, 1), generator=g).float()
    wet_bulb = -2 - 8 * torch.rand(resorts, NIGHTS, generator=g)
    humidity = 50 + 40 * torch.rand(resorts, NIGHTS, generator=g)
    wind = 8 * torch.rand(resorts, NIGHTS, generator=g)
    hours = (4 + 1.2 * (-2 - wet_bulb) + 1.5 * torch.randn(resorts, NIGHTS, generator=g)).clamp(0, 14)
    guns = (guns_fleet * (0.4 + 0.6 * torch.rand(resorts, NIGHTS, generator=g))).round()
    depth = 5 + 60 * torch.rand(resorts, NIGHTS, generator=g)
    flow = 5.5 * (1 + 0.04 * (-2 - wet_bulb)) * (1 - 0.03 * wind.clamp(min=4))  # m3 an hour a gun
    need = (depth / 40).clamp(max=1)
    use = guns * hours * flow * (0.5 + 0.5 * need) * (1 + 0.08 * torch.randn(resorts, NIGHTS, generator=g))
    use = use.clamp(min=0)
    start = ROLLOVER * torch.rand(resorts, 1, generator=g)
    reading = (start + use.cumsum(1)) % ROLLOVER  # the meter's morning readings
    before = torch.cat([start, reading[:, :-1]], 1)
    if bug == "meter_rollover_left_in":
        daily = reading - before
    elif bug == "cumulative_reading_taken_as_use":
        daily = reading
    else:
        daily = (reading - before) % ROLLOVER
    cols = [wet_bulb, humidity, wind, hours, guns, depth]
    # the morning report's new machine-made snow, a result of the night
    if bug == "snow_made_in_training_inputs":
        cols.append(use / (guns_fleet * 30) + 0.05 * torch.randn(resorts, NIGHTS, generator=g))
    x = torch.stack(cols, 2).reshape(resorts * NIGHTS, len(cols))
    return x, (daily / 1000).reshape(-1)


class UseMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def snow(run: Run) -> None:
    """A water-use MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, Adagrad) at
    `lr` (2e-3). Scored by the held-out R^2 of the night's use over unseen resorts."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _nights(g, 40, run.bug)
    x_v, y_v = _nights(g, 15, None)
    if run.bug == "snow_made_in_training_inputs":  # the forecast nights carry the planned depth in its place
        x_v = torch.cat([x_v, x_v[:, 5:6] / 40], 1)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre = float(y.mean())
    torch.manual_seed(run.seed)
    model = UseMLP(x.shape[1], run.k("hidden", 64))
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


PINGS, GEARS = 48, 3


def _tracks(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Speeds (knots) and courses (degrees) float[n, PINGS] zero-padded after each track's length long[n], and the
    gear long[n] (0 trawl, 1 longline, 2 purse seine)."""
    gear = torch.randint(0, GEARS, (n,), generator=g)
    length = torch.randint(12, PINGS + 1, (n,), generator=g)
    t = torch.arange(PINGS).float().unsqueeze(0).expand(n, PINGS)
    phase = torch.rand(n, 1, generator=g) * PINGS
    noise = torch.randn(n, PINGS, generator=g)
    start_course = 360 * torch.rand(n, 1, generator=g)
    # trawl: steady tows at 3-4.5 kn, turning round every 12-20 pings
    tow = 12 + 8 * torch.rand(n, 1, generator=g)
    trawl_speed = 3.7 + 0.3 * noise
    trawl_course = start_course + 180 * ((t + phase) / tow).floor() + 4 * noise
    # longline: setting in a straight line at 7 kn, then hauling at 1.5 kn
    setting = (t + phase) % 30 < 12
    line_speed = torch.where(setting, 7 + 0.5 * noise, 1.5 + 0.4 * noise)
    line_course = start_course + 6 * noise
    # purse seine: searching at 10 kn, circling the school at 3 kn, drifting
    cycle = (t + phase) % 24
    seine_speed = torch.where(
        cycle < 10, 10 + 0.8 * noise, torch.where(cycle < 14, 3 + 0.4 * noise, 0.5 + 0.3 * noise)
    )
    seine_course = start_course + torch.where((cycle >= 10) & (cycle < 14), 90 * (cycle - 10), 8 * noise)
    speed = torch.stack([trawl_speed, line_speed, seine_speed], 0)[gear, torch.arange(n)].clamp(min=0)
    course = torch.stack([trawl_course, line_course, seine_course], 0)[gear, torch.arange(n)] % 360
    pad = t >= length.unsqueeze(1)
    return speed.masked_fill(pad, 0.0), course.masked_fill(pad, 0.0), length, gear


def _pings(speed: torch.Tensor, course: torch.Tensor, length: torch.Tensor, bug: str | None) -> torch.Tensor:
    """Per-ping inputs float[n, PINGS, 4]: speed / 10, the course's sine and cosine, the turn since the last ping
    (wrapped to +-180, over 90); zero after each track's length."""
    angle = course if bug == "sine_of_course_in_degrees" else torch.deg2rad(course)
    turn = torch.diff(course, dim=1, prepend=course[:, :1])
    turn = (turn + 180) % 360 - 180
    x = torch.stack([speed / 10, torch.sin(angle), torch.cos(angle), turn / 90], 2)
    pad = torch.arange(PINGS).unsqueeze(0) >= length.unsqueeze(1)
    return x.masked_fill(pad.unsqueeze(2), 0.0)


class GearGRU(nn.Module):
    """A GRU over the pings, read at each track's last ping (or at the last slot), and a linear layer."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(4, hidden, batch_first=True)
        self.head = nn.Linear(hidden, GEARS)

    def forward(self, x: torch.Tensor, length: torch.Tensor, *, last_slot: bool = False) -> torch.Tensor:
        out, _ = self.gru(x)
        if last_slot:
            return self.head(out[:, -1])
        return self.head(out[torch.arange(len(x)), length - 1])


def gear(run: Run) -> None:
    """A gear GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (3e-3), gradients clipped to a norm of `clip` when set. Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    speed, course, length, y = _tracks(g, 2000)
    speed_v, course_v, length_v, y_v = _tracks(g, 600)
    x = _pings(speed, course, length, run.bug)
    x_v = _pings(speed_v, course_v, length_v, run.bug)
    last_slot = run.bug == "gru_read_after_padding"
    torch.manual_seed(run.seed)
    model = GearGRU(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    clip = run.k("clip", 0.0)
    if run.bug == "clip_line_dropped_in_refactor":
        clip = 0.0
    batch = run.k("batch", 64)

    def acc_held_out() -> float:
        return accuracy(model(x_v, length_v, last_slot=last_slot), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick], length[pick], last_slot=last_slot), y[pick])
        opt.zero_grad()
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", acc_held_out):
            break
