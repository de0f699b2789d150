"""Monitoring scripts of the sixtieth blind split: a volcano observatory's unrest classifier, and a railway signalling
control centre's next-timing-point delay forecaster.

`unrest`: a volcano's last 10 days (the log of the daily RSAM, the log count of located earthquakes above the
catalogue's completeness magnitude, the day's b-value by Aki's estimator, the network's mean radial tilt change in
microradians, the log SO2 flux of the scanning DOAS), standardised; the alert level the observatory set on the last
day (quiet, unrest, heightened, eruption likely) by a GRU; cross-entropy, the rate decayed linearly to zero over the
run; scored by the held-out accuracy on another volcano. `delays`: a train's last 6 timing points (its delay there,
the section's scheduled and actual running time, the dwell, the headway to the train ahead, and the aspect its driver
saw at the last signal before the point, embedded); the delay it gains by the third timing point on by a small transformer encoder
with ReZero residuals; MSE on the standardised delay; scored by the held-out R^2 on another line. Bugs: the b-value
taken over days with no earthquake above the completeness magnitude; the tiltmeters' east axis averaged in place of
each station's radial axis; the linear decay's length typed for a shorter run; the aspect read from the interlocking
log at the berth step, when the signal has already gone back to red; ReZero's gate made a plain tensor; the day's
performance report's delay at the destination kept as an input.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DAYS, MAX_EVENTS, LEVELS = 10, 24, ("quiet", "unrest", "heightened", "eruption likely")
STATIONS = (0.0, 90.0, 180.0, 270.0)
"""The tiltmeters' azimuths from the vent in degrees (north, east, south and west flanks)."""
CATALOGUE_B = 1.0
"""The catalogue's long-term b-value, used for a day with too few earthquakes to estimate one."""


def _volcano(g: torch.Generator, n: int, *, offset: float = 0.0) -> dict[str, torch.Tensor]:
    """Windows of `n` volcano-days: the RSAM float[n, DAYS], the located earthquakes' magnitudes above the completeness
    magnitude float[n, DAYS, MAX_EVENTS] with their count long[n, DAYS], each tiltmeter's radial and tangential tilt
    change float[n, DAYS, 4] in microradians, the SO2 flux in t/d float[n, DAYS] and the alert level long[n]. The
    unrest's pressure rises towards the window's end for the higher levels; `offset` shifts another volcano's
    background."""
    level = torch.randint(0, len(LEVELS), (n,), generator=g)
    t = torch.arange(DAYS).float() / (DAYS - 1)
    lv = level.float().unsqueeze(1)
    start = 0.4 * lv + 0.5 * torch.randn(n, 1, generator=g)
    rise = (0.5 * lv * (0.5 + torch.rand(n, 1, generator=g))) * t
    walk = 0.12 * torch.randn(n, DAYS, generator=g).cumsum(1)
    pressure = start + rise + walk
    rsam = torch.exp(3 + offset + 0.45 * pressure + 0.45 * torch.randn(n, DAYS, generator=g))
    count = torch.poisson(torch.exp(0.2 + 0.45 * pressure).clamp(max=MAX_EVENTS / 1.5), generator=g)
    count = count.clamp(max=MAX_EVENTS).long()
    b = (1.15 - 0.12 * pressure).clamp(0.55, 1.6)
    # magnitudes above the completeness magnitude: exponential with the rate b ln 10 (Gutenberg-Richter)
    u = torch.rand(n, DAYS, MAX_EVENTS, generator=g).clamp(min=1e-6)
    mags = -torch.log(u) / (b * math.log(10)).unsqueeze(-1)
    # the edifice inflates as magma rises: strongly ahead of an eruption, slightly deflating when quiet
    rate = 0.35 * (lv - 1) * (0.6 + 0.8 * torch.rand(n, 1, generator=g))
    inflation = rate + 0.15 * torch.randn(n, DAYS, generator=g)
    radial = inflation.unsqueeze(-1) + 0.2 * torch.randn(n, DAYS, len(STATIONS), generator=g)
    tangential = 0.2 * torch.randn(n, DAYS, len(STATIONS), generator=g)
    so2 = torch.exp(5.5 - offset + 0.5 * pressure + 0.55 * torch.randn(n, DAYS, generator=g))
    return {"rsam": rsam, "mags": mags, "count": count, "radial": radial, "tangential": tangential, "so2": so2,
            "level": level}  # fmt: skip


def _b_value(v: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """Each day's b-value by Aki's maximum-likelihood estimator, log10(e) / mean(M - Mc): float[n, DAYS]."""
    present = torch.arange(MAX_EVENTS) < v["count"].unsqueeze(-1)
    total = (v["mags"] * present).sum(-1)
    count = v["count"].float()
    if bug == "b_value_over_quiet_days":
        # the bug: the estimator taken over every day, 0 / 0 on the days with no earthquake above the completeness
        return math.log10(math.e) / (total / count)
    enough = count >= 3
    aki = math.log10(math.e) / (total / count.clamp(min=1)).clamp(min=1e-3)
    return torch.where(enough, aki, torch.full_like(aki, CATALOGUE_B))


def _tilt(v: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The network's mean tilt change towards the vent: float[n, DAYS]."""
    if bug == "east_axis_for_every_tiltmeter":
        # the bug: the east axis of every tiltmeter averaged, radial only for the east flank's, reversed on the west's
        az = torch.tensor(STATIONS) * math.pi / 180
        east = v["radial"] * torch.sin(az) + v["tangential"] * torch.cos(az)
        return east.mean(-1)
    return v["radial"].mean(-1)


def _unrest_days(v: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The daily series: float[n, DAYS, 5]."""
    return torch.stack([torch.log(v["rsam"]), torch.log1p(v["count"].float()), _b_value(v, bug), _tilt(v, bug),
                        torch.log(v["so2"])], -1)  # fmt: skip


class UnrestGRU(nn.Module):
    """A GRU over the days and a linear head on its last state."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(5, hidden, batch_first=True)
        self.head = nn.Linear(hidden, len(LEVELS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, -1])


def unrest(run: Run) -> None:
    """An unrest GRU of `hidden` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, Adamax) at `lr`
    (3e-3), the rate decayed linearly to zero over the run. Scored by the held-out accuracy on another volcano."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _volcano(g, 800), _volcano(g, 200, offset=0.3)
    x, x_v = _unrest_days(tr, run.bug), _unrest_days(va, None)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = tr["level"], va["level"]
    torch.manual_seed(run.seed)
    model = UnrestGRU(run.k("hidden", 16))
    opt = optimizers.registered(run, model, 3e-3)
    # the bug: the decay's length typed as 120 steps, the length of an older, shorter configuration
    decay_steps = 120 if run.bug == "linear_decay_length_of_older_config" else run.steps
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 - s / decay_steps)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


POINTS, AHEAD = 6, 3
ASPECTS = ("green", "double yellow", "single yellow", "red")
SLOWDOWN = torch.tensor([0.0, 12.0, 35.0, 75.0])
"""The seconds a driver loses on a section after each aspect at its last signal."""


def _trains(g: torch.Generator, n: int, *, busy: float = 1.0) -> dict[str, torch.Tensor]:
    """Train runs over POINTS + AHEAD timing points: the delay at each point in s float[n, POINTS + AHEAD], the
    sections' scheduled and actual running times and the dwells in s, the headway to the train ahead in minutes and
    the aspect the driver saw at the last signal before each point (long); the delay at the destination, further on,
    from the day's performance report float[n]. `busy` scales how closely the trains run."""
    span = POINTS + AHEAD
    scheduled = 90 + 120 * torch.rand(n, span, generator=g)
    headway = torch.zeros(n, span)
    h = 2 + 6 * torch.rand(n, generator=g) / busy
    trend = 0.8 * torch.randn(n, generator=g)
    delay = torch.zeros(n, span)
    d = 90 * torch.rand(n, generator=g) - 20
    aspect = torch.zeros(n, span, dtype=torch.long)
    actual = torch.zeros(n, span)
    dwell = torch.zeros(n, span)
    for i in range(span):
        # the train ahead: the headway closes or opens with its own delays; closer headways show restrictive aspects
        h = (h + trend + 0.35 * torch.randn(n, generator=g)).clamp(0.8, 12)
        level = 3 - h - 0.4 * torch.randn(n, generator=g)
        a = level.clamp(0, 3).round().long()
        recovery = 0.06 * scheduled[:, i] * (d > 0).float()  # the timetable's recovery margin
        run_time = scheduled[:, i] - recovery + SLOWDOWN[a] + 8 * torch.randn(n, generator=g)
        stop = 30 + 10 * torch.rand(n, generator=g) + 0.05 * d.clamp(min=0)  # busier platforms when late
        d = d + (run_time - scheduled[:, i]) + (stop - 35)
        headway[:, i], aspect[:, i], actual[:, i], dwell[:, i], delay[:, i] = h, a, run_time, stop, d
    destination = delay[:, -1] + 2 * (delay[:, -1] - delay[:, -2]) + 25 * torch.randn(n, generator=g)
    return {"scheduled": scheduled, "actual": actual, "dwell": dwell, "headway": headway, "aspect": aspect,
            "delay": delay, "destination": destination}  # fmt: skip


def _timing_points(t: dict[str, torch.Tensor], bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The last POINTS timing points' numbers float[n, POINTS, 5] (delay, scheduled and actual running time, dwell,
    headway) and aspects long[n, POINTS]."""
    cols = [t[k][:, :POINTS] for k in ("delay", "scheduled", "actual", "dwell", "headway")]
    aspect = t["aspect"][:, :POINTS]
    if bug == "aspect_logged_at_berth_step":
        # the bug: the aspect read from the interlocking's log at the berth step, when the train has passed the
        # signal and it has gone back to red behind it
        aspect = torch.full_like(aspect, ASPECTS.index("red"))
    return torch.stack(cols, -1), aspect


class DelayEncoder(nn.Module):
    """Each timing point projected to `width` beside its aspect's embedding and a learned position, one encoder layer
    with ReZero residuals (each block's output scaled by a gate that starts at 0), a mean over the points, a linear
    head."""

    def __init__(self, columns: int, width: int, *, plain_gate: bool = False) -> None:
        super().__init__()
        self.proj = nn.Linear(columns, width)
        self.aspect = nn.Embedding(len(ASPECTS), width)
        self.pos = nn.Parameter(0.1 * torch.randn(POINTS, width))
        self.attn = nn.MultiheadAttention(width, 2, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        # the bug: the gate made a plain tensor, not a parameter, so it stays at 0 and the blocks never join in
        self.gate = torch.zeros(1) if plain_gate else nn.Parameter(torch.zeros(1))
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor, aspect: torch.Tensor) -> torch.Tensor:
        h = self.proj(x) + self.aspect(aspect) + self.pos
        h = h + self.gate * self.attn(h, h, h, need_weights=False)[0]
        h = h + self.gate * self.ff(h)
        return self.head(h.mean(1)).squeeze(-1)


def delays(run: Run) -> None:
    """A delay encoder of `width` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (2e-3). Scored by the held-out R^2 of the delay gained by the third point on, in seconds, on
    another line."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _trains(g, 800), _trains(g, 200, busy=1.2)
    x, a = _timing_points(tr, run.bug)
    x_v, a_v = _timing_points(va, None)
    if run.bug == "destination_delay_from_performance_report":
        # the bug: the day's performance report's delay at the destination joined as a column; live there is none yet
        x = torch.cat([x, tr["destination"].view(-1, 1, 1).expand(-1, POINTS, 1)], -1)
        x_v = torch.cat([x_v, torch.zeros(len(x_v), POINTS, 1)], -1)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    # the delay the train gains (or makes up) by the third timing point on
    y, y_v = tr["delay"][:, -1] - tr["delay"][:, POINTS - 1], va["delay"][:, -1] - va["delay"][:, POINTS - 1]
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = DelayEncoder(x.shape[-1], run.k("width", 16), plain_gate=run.bug == "rezero_gate_as_plain_tensor")
    opt = optimizers.registered(run, model, 2e-3)
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
