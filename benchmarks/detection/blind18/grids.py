"""Grid scripts of the eighteenth blind split: a traffic-flow forecaster over a road graph (a spatio-temporal graph
network), and a ConvLSTM precipitation nowcaster.

`traffic`: 16 loop detectors on a ring road with chords; speeds in km/h follow two daily rush hours and a congestion
that spreads along the roads, one detector is broken and reports a constant speed; each detector's speeds are
standardised by the training period's mean and spread, the last 6 readings of every detector go through a linear
layer, two graph convolutions over the symmetrically normalised adjacency with self-loops, and a linear layer to the
next reading; mean squared error; scored by the R^2 of the next reading of the working detectors in a later period.
`nowcaster`: 16x16 radar frames of rain rates (mm/h, exact zeros outside the rain cells) of two cells moving with one
wind; the last 4 frames in log(rate + 0.1) go through a ConvLSTM cell and a 1x1 convolution to the next frame in the
same log space; mean squared error; scored by the R^2 of the held-out next frames.
Bugs: a broken detector's zero spread divided by; a warm-up written upside down; the optimizer built over a model that
was then rebuilt; the target read one reading late; the log of the rain rates taken without the offset; the radar's reflectivity fed
unconverted; the output squashed by a sigmoid.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SENSORS, HISTORY, STUCK, DAY = 16, 6, 3, 96
"""Detectors, readings a window, the broken detector, readings a day (every 15 minutes)."""


def _road_graph() -> torch.Tensor:
    """The ring road's adjacency float[SENSORS, SENSORS]: each detector to its two neighbours, every fourth to the
    one five along."""
    adj = torch.zeros(SENSORS, SENSORS)
    for i in range(SENSORS):
        adj[i, (i + 1) % SENSORS] = adj[(i + 1) % SENSORS, i] = 1
        if i % 4 == 0:
            adj[i, (i + 5) % SENSORS] = adj[(i + 5) % SENSORS, i] = 1
    return adj


def _normalised(adj: torch.Tensor) -> torch.Tensor:
    """D^-1/2 (A + I) D^-1/2."""
    a = adj + torch.eye(len(adj))
    d = a.sum(1).rsqrt()
    return d.unsqueeze(1) * a * d.unsqueeze(0)


def _speeds(g: torch.Generator, length: int, adj: torch.Tensor) -> torch.Tensor:
    """Speeds float[length, SENSORS] in km/h: rush hours, congestion spreading along the roads, a broken detector."""
    t = torch.arange(length).float() % DAY
    rush = torch.exp(-(((t - 32) / 5) ** 2)) + 0.8 * torch.exp(-(((t - 70) / 6) ** 2))
    weight = 0.8 + 0.4 * torch.rand(SENSORS, generator=g)
    spread = adj / adj.sum(1, keepdim=True)
    jam = torch.zeros(SENSORS)
    out = []
    for i in range(length):
        shock = (torch.rand(SENSORS, generator=g) < 0.03).float() * 2 * torch.rand(SENSORS, generator=g)
        jam = 0.55 * jam + 0.35 * spread @ jam + shock + 0.3 * rush[i] * weight
        out.append(100 - 25 * rush[i] * weight - 30 * torch.tanh(jam) + 2 * torch.randn(SENSORS, generator=g))
    speeds = torch.stack(out)
    speeds[:, STUCK] = 55.0  # a detector that stopped updating
    return speeds


class GraphForecaster(nn.Module):
    """Per-detector history to `width` features, two residual graph convolutions, a linear layer to the next speed."""

    def __init__(self, width: int, a_hat: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("a_hat", a_hat)
        self.inp = nn.Linear(HISTORY, width)
        self.g1, self.g2 = nn.Linear(width, width), nn.Linear(width, width)
        self.out = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: [batch, SENSORS, HISTORY]
        h = F.relu(self.inp(x))
        h = h + F.relu(self.g1(self.a_hat @ h))
        h = h + F.relu(self.g2(self.a_hat @ h))
        return self.out(h).squeeze(-1)


def traffic(run: Run) -> None:
    """A forecaster of `width` (32), batches of `batch` (64), `opt` (Adam; or AdamW, RMSprop, momentum SGD) at `lr`
    (3e-3) after a linear warm-up of `warmup` steps (none by default). Scored by the held-out R^2 of the working
    detectors' next speeds."""
    g = torch.Generator().manual_seed(run.seed)
    adj = _road_graph()
    speeds = _speeds(g, 30 * DAY, adj)
    train, held = speeds[: 24 * DAY], speeds[24 * DAY :]
    mean, std = train.mean(0), train.std(0)
    if run.bug != "stuck_sensor_std_unguarded":
        std = torch.where(std > 0, std, torch.ones_like(std))
    z_train, z_held = (train - mean) / std, (held - mean) / std
    late = 1 if run.bug == "target_one_reading_late" else 0

    def windows(z: torch.Tensor, starts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        idx = starts.unsqueeze(1) + torch.arange(HISTORY)
        return z[idx].transpose(1, 2), z[starts + HISTORY + late]

    x_v, y_v = windows(z_held, torch.arange(len(held) - HISTORY - 1))
    working = torch.arange(SENSORS) != STUCK
    torch.manual_seed(run.seed)
    width = run.k("width", 32)
    model = GraphForecaster(width, _normalised(adj))
    opt = optimizers.registered(run, model, 3e-3)
    if run.bug == "optimizer_bound_to_discarded_model":
        # the model rebuilt after the optimizer (a config re-read), the optimizer still holds the first one's tensors
        model = GraphForecaster(width, _normalised(adj))
    sched = None
    warmup = run.k("warmup", 0)
    if warmup:
        if run.bug == "warmup_fraction_upside_down":
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(1.0, warmup / (s + 1)))
        else:
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    batch = run.k("batch", 64)

    def next_speeds() -> float:
        return r2(model(x_v)[:, working], y_v[:, working])

    for step in range(run.steps):
        x, y = windows(z_train, run.indices(len(train) - HISTORY - 1, batch))
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", next_speeds):
            break


FRAME, INPUTS = 16, 4
"""Radar frame side; frames a model sees before the one it predicts."""


def _storms(g: torch.Generator, n: int) -> torch.Tensor:
    """Rain rates float[n, INPUTS + 1, FRAME, FRAME] in mm/h: two cells drifting with one wind, zero outside them."""
    pos = 3 + 10 * torch.rand(n, 2, 2, generator=g)  # [n, cell, (row, col)]
    wind = 2.4 * torch.rand(n, 1, 2, generator=g) - 1.2
    amp = 4 + 16 * torch.rand(n, 2, generator=g)
    size = 1.5 + 1.5 * torch.rand(n, 2, generator=g)
    grid = torch.stack(torch.meshgrid(torch.arange(FRAME), torch.arange(FRAME), indexing="ij"), -1).float()
    frames = []
    for t in range(INPUTS + 1):
        c = pos + wind * t
        d2 = ((grid.view(1, 1, FRAME, FRAME, 2) - c.view(n, 2, 1, 1, 2)) ** 2).sum(-1)
        field = (amp.view(n, 2, 1, 1) * torch.exp(-d2 / (2 * size.view(n, 2, 1, 1) ** 2))).sum(1)
        frames.append(F.relu(field - 1.0))
    return torch.stack(frames, 1)


class ConvLSTMNowcaster(nn.Module):
    """A ConvLSTM cell of `hidden` channels (3x3 gates) over the input frames, a 1x1 convolution to the next frame."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.gates = nn.Conv2d(1 + hidden, 4 * hidden, 3, padding=1)
        self.out = nn.Conv2d(hidden, 1, 1)

    def forward(self, frames: torch.Tensor, squash: bool = False) -> torch.Tensor:  # frames: [n, t, H, W]
        n = len(frames)
        h = frames.new_zeros(n, self.hidden, FRAME, FRAME)
        c = torch.zeros_like(h)
        for t in range(frames.shape[1]):
            i, f, o, u = self.gates(torch.cat([frames[:, t : t + 1], h], 1)).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(u)
            h = torch.sigmoid(o) * torch.tanh(c)
        y = self.out(h).squeeze(1)
        return torch.sigmoid(y) if squash else y


def nowcaster(run: Run) -> None:
    """A ConvLSTM of `hidden` (12) channels, batches of `batch` (8), `opt` (Adam; or AdamW, Adamax, RMSprop) at `lr`
    (3e-3), optionally clipped by global norm (`clip`). Scored by the R^2 of the held-out next frames in log rate."""
    g = torch.Generator().manual_seed(run.seed)
    storms, storms_v = _storms(g, 2000), _storms(g, 120)

    def log_rate(rate: torch.Tensor) -> torch.Tensor:
        return (torch.log(rate + 0.1) + 1.0) / 2.0

    def inputs_of(rate: torch.Tensor) -> torch.Tensor:
        if run.bug == "log_rain_rate_without_offset":
            return (torch.log(rate) + 1.0) / 2.0
        if run.bug == "reflectivity_fed_unconverted":
            return 200 * rate**1.6  # the radar's linear reflectivity Z as stored, not turned into a rain rate
        return log_rate(rate)

    x_v, y_v = inputs_of(storms_v[:, :INPUTS]), log_rate(storms_v[:, INPUTS])
    torch.manual_seed(run.seed)
    model = ConvLSTMNowcaster(run.k("hidden", 12))
    opt = optimizers.registered(run, model, 3e-3)
    batch, clip = run.k("batch", 8), run.k("clip", None)
    squash = run.bug == "output_squashed_by_sigmoid"

    def next_frames() -> float:
        return r2(model(x_v, squash), y_v)

    for step in range(run.steps):
        pick = run.indices(len(storms), batch)
        x, y = inputs_of(storms[pick, :INPUTS]), log_rate(storms[pick, INPUTS])
        loss = F.mse_loss(model(x, squash), y)
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", next_frames):
            break
