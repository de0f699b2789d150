"""Water scripts of the thirty-seventh blind split: a water-main leak detector on pressure transients, and a river-ice
break-up date regressor from a winter's daily records.

`leaks`: windows of 64 samples of two pressure loggers on a water main (metres of gauge head), a static head of 4-60
m, demand noise (quieter at night), and in about 35 % of the windows a burst's small negative pressure wave reaching
the first logger and, later by the pipe's travel time, the second, with a reflection; valve operations make a larger
surge, up or down, on both loggers at once in any window; the head never below water's vapour pressure; the log of the
absolute head (gauge head plus the atmosphere's 10.3 m) minus the window's first-sample baseline, standardised; four
1-D convolutions with ReLUs, a global max pool and a linear layer; BCE with logits; scored by the held-out AUC. `ice`:
120 winter days (December to March) of a river gauge station, every second day archived: the air temperature, the
snow depth and its water equivalent, the discharge; the break-up day (days after March 1) driven by the ice grown over
the freezing degree-days (thinner under early snow), the snowpack and the spring's warmth; the snow's density (its
water equivalent over its depth, 0.25 where there is no snow) with the standardised records; a GRU over the days and a
linear layer on its last state; MSE on the standardised break-up day; scored by the held-out R^2. Bugs: the log of the
gauge head in a downsurge; the training bursts logged at night; the lab's eight-layer tanh network ported in place of
the CNN; the freeze-up day read as the target; the snow density over snow-free days.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES = 64
"""Samples of a pressure window (two loggers)."""
ATMOSPHERE, VAPOUR = 10.3, 0.25
"""The atmosphere's pressure and water's vapour pressure in metres of water (absolute)."""


def _windows(g: torch.Generator, n: int, bursts_at_night: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Gauge head float[n, 2, SAMPLES] in metres and the burst label float[n]; `bursts_at_night`: the windows with a
    burst come from the loggers' night-time recordings, when demand noise is low."""
    label = (torch.rand(n, generator=g) < 0.35).float()
    t = torch.arange(SAMPLES).float()
    static = 4 + 56 * torch.rand(n, 1, 1, generator=g)  # hilltop districts run at a few metres of head
    p_night = torch.where(label > 0, 0.95, 0.1) if bursts_at_night else torch.full((n,), 0.4)
    night = (torch.rand(n, generator=g) < p_night).float().view(n, 1, 1)
    noise_level = 0.1 * night + 0.35 * (1 - night)
    head = static + noise_level * torch.randn(n, 2, SAMPLES, generator=g)
    head = head + 0.3 * torch.sin(0.1 * t + 6.3 * torch.rand(n, 1, 1, generator=g))
    onset = torch.randint(8, 40, (n,), generator=g).float().view(n, 1)
    travel = torch.randint(3, 12, (n,), generator=g).float().view(n, 1)
    depth = (0.6 + 2.0 * torch.rand(n, 1, generator=g)) * label.view(n, 1)
    for logger, delay in ((0, 0.0), (1, 1.0)):
        arrive = onset + delay * travel
        wave = -depth * torch.exp(-(((t - arrive) / 2.0) ** 2))
        wave = wave + 0.4 * depth * torch.exp(-(((t - arrive - 2 * travel) / 2.5) ** 2))
        head[:, logger] += wave * (0.7 if logger else 1.0)
    valve = (torch.rand(n, 1, generator=g) < 0.5).float() * (2 + 8 * torch.rand(n, 1, generator=g))
    sign = torch.where(torch.rand(n, 1, generator=g) < 0.5, -1.0, 1.0)  # a valve closing or opening
    at = torch.randint(5, 55, (n, 1), generator=g).float()
    head = head + (sign * valve * torch.exp(-(((t - at) / 3.0) ** 2))).unsqueeze(1)
    return head.clamp(
        min=VAPOUR - ATMOSPHERE
    ), label  # the water cavitates: no lower than its vapour pressure


def _log_head(head: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The log of the pressure over the window's first sample (a ratio to its baseline, in log units)."""
    if bug == "log_of_gauge_pressure_in_downsurge":
        logp = head.log()  # gauge head, negative where the downsurge pulls the main below the atmosphere
    else:
        logp = (head + ATMOSPHERE).log()
    return logp - logp[..., :1]


class LeakCNN(nn.Module):
    """`depth` 5-wide convolutions over time (`width` channels) with `act`, a global max pool, a linear layer."""

    def __init__(self, width: int, depth: int, act: type[nn.Module]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(depth):
            layers += [nn.Conv1d(2 if i == 0 else width, width, 5, padding=2), act()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).amax(-1)).squeeze(-1)


def leaks(run: Run) -> None:
    """A leak CNN of `width` (16), batches of `batch` (64), `opt` (Adam; or RAdam, RMSprop, AdamW) at `lr`
    (2e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    head, y = _windows(g, 1200, bursts_at_night=run.bug == "burst_windows_logged_at_night")
    head_v, y_v = _windows(g, 600, bursts_at_night=False)
    logp, logp_v = _log_head(head, run.bug), _log_head(head_v, None)
    std = logp.std()
    x, x_v = logp / std, logp_v / std
    torch.manual_seed(run.seed)
    if (
        run.bug == "matlab_port_with_tanh_layers"
    ):  # the lab's MATLAB network: eight convolutions, a tanhLayer each
        model = LeakCNN(run.k("width", 16), 8, nn.Tanh)
    else:
        model = LeakCNN(run.k("width", 16), 4, nn.ReLU)
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


DAYS = 120
"""Winter days from December 1 of a record (the archive keeps every second one)."""


def _winters(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Daily records float[n, DAYS, 4] (air temperature in C, snow depth in cm, snow water equivalent in mm, discharge
    in m^3/s), the break-up day (days after March 1) and the freeze-up day (days after November 1), both float[n]."""
    t = torch.arange(DAYS).float()
    mean_cold = -8 - 10 * torch.rand(n, 1, generator=g)
    warm_rate = 0.12 + 0.1 * torch.rand(n, 1, generator=g)
    season = mean_cold * torch.sin(torch.pi * t / 150 + 0.3) + warm_rate * torch.relu(t - 70) * 1.5
    weather = torch.zeros(n, DAYS)
    state = torch.zeros(n)
    for d in range(DAYS):
        state = 0.8 * state + 2.5 * torch.randn(n, generator=g)
        weather[:, d] = state
    temp = season + weather
    snowfall = (torch.rand(n, DAYS, generator=g) < 0.25).float() * 4 * torch.rand(n, DAYS, generator=g)
    snowfall = snowfall * (temp < 0).float() * (0.5 + torch.rand(n, 1, generator=g))
    melt = torch.relu(temp) * 0.6
    depth = torch.zeros(n, DAYS)
    level = torch.zeros(n)
    for d in range(DAYS):
        level = torch.relu(level + snowfall[:, d] - melt[:, d])
        depth[:, d] = level
    no_snow = torch.rand(n, 1, generator=g) < 0.15  # a dry winter on the plains: no snow cover at all
    depth = depth * (~no_snow).float()
    swe = depth * (2.0 + 1.5 * t / DAYS) * (1 + 0.1 * torch.randn(n, DAYS, generator=g)).clamp(min=0.5)
    discharge = (
        40 + 10 * torch.rand(n, 1, generator=g) + 3 * torch.randn(n, DAYS, generator=g) + 2 * torch.relu(temp)
    )
    fdd = torch.relu(-temp).sum(1)
    thickness = 0.03 * fdd.sqrt() * (1 - 0.015 * depth[:, :30].mean(1)).clamp(min=0.3)
    spring = torch.relu(temp[:, 90:]).sum(1)
    breakup = 10 + 18 * thickness - 0.35 * spring + 0.15 * depth[:, -1] + 2 * torch.randn(n, generator=g)
    freezeup = 20 + 0.4 * mean_cold.squeeze(1) + 3 * torch.randn(n, generator=g)
    records = torch.stack([temp, depth, swe, discharge], -1)
    return records[:, ::2], breakup, freezeup  # the station's archive keeps every second day


def _ice_inputs(records: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The records with the snow's density (water equivalent over depth, in g/cm^3) as a fifth channel."""
    depth, swe = records[..., 1], records[..., 2]
    if bug == "snow_density_over_snow_free_days":
        density = swe / (10 * depth)
    else:
        density = torch.where(depth > 0, swe / (10 * depth).clamp(min=1e-6), torch.full_like(depth, 0.25))
    return torch.cat([records, density.unsqueeze(-1)], -1)


class IceGRU(nn.Module):
    """A recurrent layer (`cell`: GRU, or a plain tanh RNN) over the days, a linear layer on its last state."""

    def __init__(self, hidden: int, cell: type[nn.RNNBase]) -> None:
        super().__init__()
        self.rnn = cell(5, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1]).squeeze(-1)


def ice(run: Run) -> None:
    """An ice GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (3e-3). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    records, breakup, freezeup = _winters(g, 800)
    records_v, breakup_v, _ = _winters(g, 400)
    feats, feats_v = _ice_inputs(records, run.bug), _ice_inputs(records_v, None)
    mean, std = feats.mean((0, 1)), feats.std((0, 1))
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    target = freezeup if run.bug == "freeze_up_day_read_as_breakup" else breakup
    t_mean, t_std = target.mean(), target.std()
    y, y_v = (target - t_mean) / t_std, (breakup_v - t_mean) / t_std
    torch.manual_seed(run.seed)
    cell = nn.RNN if run.bug == "gru_swapped_for_plain_rnn_for_export" else nn.GRU
    model = IceGRU(run.k("hidden", 32), cell)
    opt = optimizers.registered(run, model, 3e-3)
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
