"""Plant scripts of the thirty-ninth blind split: a kiln temperature-profile forecaster, and a bridge strain-gauge
anomaly detector.

`kiln`: windows of 24 readings (one a minute) of a gas-fired ceramic kiln's four thermocouples (crown, floor, burner,
exit, in the logger's column order) and the firing program's setpoint; a firing program ramps at 1-5 C a minute to a
hold, each zone follows the setpoint through its own lag and offset, the burner zone overshoots; the target is the
crown's rise over the next 6 minutes; the readings standardised; a GRU over the minutes and a linear layer on its last
state, given the program's setpoint 6 minutes ahead; MSE on the standardised rise; scored by the held-out R^2.
`strain`: windows of 48 samples of eight strain gauges along a bridge girder (microstrain): each gauge's dead-load
offset, a slow thermal drift, a truck's crossing reaching the gauges one after the other by the axle's speed, noise;
in about 35 % of the windows one gauge reads a truck at 20-50 % of its neighbours' strain (a debonded or cracked
gauge); lightning spikes of tens of thousands of microstrain in a few windows, which the logger's QA flags and drops; each
gauge's window mean removed, divided by a nominal 100 microstrain; three 1-D convolutions with ReLUs, a global max
pool and a linear layer; BCE with logits; scored by the held-out AUC. Bugs: the windows from a single firing; the loss
in degrees; the thermocouple columns sorted alphabetically; the lightning spikes left in; the faults injected on one
gauge only; the single-gauge prototype's input kept.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

MINUTES, AHEAD = 24, 6
"""Readings a kiln window holds, and the minutes ahead the crown is forecast."""
ZONES = ("crown", "floor", "burner", "exit")
"""The thermocouples in the logger's column order."""


def _firings(
    g: torch.Generator, n: int, single_firing: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Readings float[n, MINUTES, 5] (the four zones in C, then the setpoint), the setpoint AHEAD minutes after the
    window float[n], and every zone's rise over the next AHEAD minutes float[n, 4]; `single_firing`: every window
    cut from one logged firing (one program, one kiln load)."""
    m = 1 if single_firing else n
    ramp = (1 + 4 * torch.rand(m, 1, generator=g)).expand(n, 1)
    hold = (900 + 350 * torch.rand(m, 1, generator=g)).expand(n, 1)
    load = (0.7 + 0.6 * torch.rand(m, 1, generator=g)).expand(n, 1)  # a heavy load lags more
    heat_up = (hold - 20) / ramp
    soak = 60.0
    at = (heat_up + soak + 150) * torch.rand(
        n, 1, generator=g
    )  # where the window falls in the firing, minutes
    t = at - 40 + torch.arange(MINUTES + AHEAD + 40).float()
    cooling = t > heat_up + soak
    setpoint = torch.where(cooling, torch.full_like(t, 20.0), (20 + ramp * t).clamp(20, None).minimum(hold))
    taus = torch.tensor([6.0, 14.0, 3.0, 9.0]) * load.unsqueeze(-1)
    cool_taus = torch.tensor([40.0, 160.0, 25.0, 70.0]) * load.unsqueeze(
        -1
    )  # the floor's mass holds its heat
    offsets = torch.tensor([0.0, -25.0, 15.0, -40.0])
    zones = torch.zeros(n, t.shape[1], 4)
    temp = (setpoint[:, :1] + offsets - taus[:, 0] * ramp).clamp(min=20)
    for i in range(t.shape[1]):
        tau = torch.where(cooling[:, i : i + 1], cool_taus[:, 0], taus[:, 0])
        temp = temp + (setpoint[:, i : i + 1] + offsets - temp) / tau + 0.3 * torch.randn(n, 4, generator=g)
        zones[:, i] = temp
    zones[:, :, 2] += 6 * torch.sin(t / 3.0)  # the burner cycles
    zones = zones + 1.0 * torch.randn(zones.shape, generator=g)  # the thermocouples' noise
    window = slice(40, 40 + MINUTES)
    now, later = 40 + MINUTES - 1, 40 + MINUTES - 1 + AHEAD
    readings = torch.cat([zones[:, window], setpoint[:, window].unsqueeze(-1)], -1)
    return readings, setpoint[:, later], zones[:, later] - zones[:, now]


class KilnGRU(nn.Module):
    """A GRU over the minutes, a linear layer on its last state and the setpoint ahead."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.rnn = nn.GRU(5, hidden, batch_first=True)
        self.head = nn.Linear(hidden + 1, 1)

    def forward(self, x: torch.Tensor, ahead: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(torch.cat([out[:, -1], ahead.unsqueeze(-1)], -1)).squeeze(-1)


def kiln(run: Run) -> None:
    """A kiln GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (3e-3), optionally decayed by a cosine (`cosine`). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    readings, ahead, rise = _firings(g, 1000, single_firing=run.bug == "windows_from_a_single_firing")
    readings_v, ahead_v, rise_v = _firings(g, 500, single_firing=False)
    mean, std = readings.mean((0, 1)), readings.std((0, 1))
    x, x_v = (readings - mean) / std, (readings_v - mean) / std
    a, a_v = (ahead - mean[4]) / std[4], (ahead_v - mean[4]) / std[4]
    if run.bug == "thermocouple_columns_sorted_alphabetically":
        column = sorted(ZONES).index("crown")  # the export's columns are in the logger's order, not sorted
    else:
        column = ZONES.index("crown")
    target, target_v = rise[:, column], rise_v[:, ZONES.index("crown")]
    t_mean, t_std = target.mean(), target.std()
    y, y_v = (target - t_mean) / t_std, (target_v - t_mean) / t_std
    torch.manual_seed(run.seed)
    model = KilnGRU(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v, a_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        pred = model(x[pick], a[pick])
        if run.bug == "forecast_loss_in_degrees":  # the forecast turned back into C before the loss
            loss = F.mse_loss(pred * t_std + t_mean, target[pick])
        else:
            loss = F.mse_loss(pred, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


SAMPLES, GAUGES = 48, 8
"""Samples of a strain window, and the gauges along the girder."""
NOMINAL = 100.0
"""A truck's typical strain at a gauge, in microstrain: the scale the windows are divided by."""


def _windows(g: torch.Generator, n: int, one_gauge: bool, spikes: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Strain float[n, GAUGES, SAMPLES] in microstrain and the fault label float[n]; `one_gauge`: the faults
    injected on gauge 3 only (a lab's test rig); `spikes`: lightning spikes left in the windows."""
    label = (torch.rand(n, generator=g) < 0.35).float()
    t = torch.arange(SAMPLES).float()
    offset = 300 + 500 * torch.rand(n, GAUGES, 1, generator=g)
    drift = 5 * torch.randn(n, GAUGES, 1, generator=g) * t / SAMPLES
    weight = 0.4 + 1.2 * torch.rand(n, 1, 1, generator=g)
    enter = torch.randint(0, 20, (n, 1, 1), generator=g).float()
    speed = 1 + 2 * torch.rand(n, 1, 1, generator=g)  # samples between gauges
    at = enter + speed * torch.arange(GAUGES).float().view(1, GAUGES, 1)
    gain = torch.ones(n, GAUGES, 1)
    bad = torch.full((n,), 3) if one_gauge else torch.randint(0, GAUGES, (n,), generator=g)
    faulty = (0.2 + 0.3 * torch.rand(n, generator=g)) * label + (1 - label)
    gain[torch.arange(n), bad, 0] = faulty
    truck = NOMINAL * weight * gain * torch.exp(-(((t - at) / 3.0) ** 2))
    strain = offset + drift + truck + 4 * torch.randn(n, GAUGES, SAMPLES, generator=g)
    struck = torch.rand(n, generator=g) < 0.04
    where = torch.randint(0, SAMPLES, (n,), generator=g)
    size = 20000 + 12000 * torch.rand(n, generator=g)  # the logger's input saturates
    strain[struck, :, where[struck]] += size[struck].unsqueeze(-1)
    if not spikes:  # the logger's QA drops the windows with a reading past the gauges' range
        keep = ~struck
        return strain[keep], label[keep]
    return strain, label


class StrainCNN(nn.Module):
    """Three 5-wide convolutions over time (`width` channels) with ReLUs, a global max pool, a linear layer."""

    def __init__(self, gauges: int, width: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(gauges, width, 5, padding=2), nn.ReLU(), nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
            nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).amax(-1)).squeeze(-1)


def strain(run: Run) -> None:
    """A strain CNN of `width` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (2e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    raw, y = _windows(g, 1200, one_gauge=run.bug == "faults_injected_on_one_gauge_only",
                      spikes=run.bug == "lightning_spikes_left_in")  # fmt: skip
    raw_v, y_v = _windows(g, 600, one_gauge=False, spikes=False)
    x = (raw - raw.mean(-1, keepdim=True)) / NOMINAL
    x_v = (raw_v - raw_v.mean(-1, keepdim=True)) / NOMINAL
    torch.manual_seed(run.seed)
    if (
        run.bug == "single_gauge_prototype_input_kept"
    ):  # the prototype read one gauge: Conv1d(1, ...) and x[:, :1]
        model, channels = StrainCNN(1, run.k("width", 32)), slice(0, 1)
    else:
        model, channels = StrainCNN(GAUGES, run.k("width", 32)), slice(0, GAUGES)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v[:, channels]), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick][:, channels]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
