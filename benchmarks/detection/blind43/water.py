"""Water scripts of the forty-third blind split: an offshore mooring-line tension forecaster, and a rooftop
rainwater-tank level forecaster.

`mooring`: 10-minute records of a floating platform's mooring line: the wave buoy's significant wave height (from the
spectrum's zeroth moment less the buoy's noise floor), the peak period, the wind speed and the line's peak tension in
kN; storms come and go as a log-AR(1) sea state; an LSTM reads the last 16 records and forecasts the next record's
peak tension (its log, centred); scored by the held-out R^2. `tanks`: daily logs of rainwater tanks (5000 L) under
roofs of 60-250 m2: the level as a fraction of the tank, the rain in mm, the days since it last rained, the roof area
and the household's size; a ReLU MLP of two hidden layers forecasts tomorrow's level; scored by the held-out R^2 over
households the model never saw. Bugs: Hs from a moment below the noise floor; the tension target in newtons; the
training record from the calm summer deployment; the days since rain forward-filled with a leading gap; AdamW's
weight decay typed 1e4; the sensor's distance taken for the level; a Keras activity penalty of weight one.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

WINDOW, FLOOR = 16, 0.01


def _records(g: torch.Generator, n: int, bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """`n` windows float[n, WINDOW, 4] (Hs m, peak period s, wind m/s, tension kN) and the next record's peak
    tension kN float[n]."""
    steps = WINDOW + 1
    log_hs = torch.empty(n, steps)
    log_hs[:, 0] = 0.55 + 0.35 * torch.randn(n, generator=g)
    for t in range(1, steps):
        log_hs[:, t] = 0.88 * log_hs[:, t - 1] + 0.12 * 0.55 + 0.16 * torch.randn(n, generator=g)
    hs = log_hs.exp()
    period = 4.5 + 2.2 * hs.sqrt() + 0.4 * torch.randn(n, steps, generator=g)
    wind = (4.0 * hs + 2.0 * torch.randn(n, steps, generator=g)).clamp(min=0.0)
    tension = 650 + 170 * hs**1.5 * (10 / period).sqrt() + 9 * wind + 25 * torch.randn(n, steps, generator=g)
    # the buoy reports the spectrum's zeroth moment with its own noise floor on top
    m0 = (hs / 4) ** 2 + FLOOR + 0.015 * torch.randn(n, steps, generator=g)
    if bug == "hs_from_moment_below_noise_floor":
        hs_read = 4 * (m0 - FLOOR).sqrt()
    else:
        hs_read = 4 * (m0 - FLOOR).clamp(min=0.0).sqrt()
    x = torch.stack([hs_read, period, wind, tension], 2)[:, :WINDOW]
    return x, tension[:, WINDOW]


class TensionLSTM(nn.Module):
    """An LSTM over the records and a linear layer on its last output."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.head(out[:, -1]).squeeze(-1)


def mooring(run: Run) -> None:
    """A tension LSTM of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at
    `lr` (3e-3). Scored by the held-out R^2 of the log peak tension."""
    g = torch.Generator().manual_seed(run.seed)
    x, tension = _records(g, 3000, run.bug)
    x_v, tension_v = _records(g, 800, None)
    if run.bug == "training_record_from_summer_deployment":  # the first deployment's months, calm seas only
        calm = x[:, :, 0].amax(1) < 2.0
        x, tension = x[calm], tension[calm]
    finite = torch.isfinite(x).all(2).all(1)
    mean, std = x[finite].mean((0, 1)), x[finite].std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y = tension.log()
    centre = y.mean()
    if run.bug == "tension_target_in_newtons":  # the load cell's newtons kept, centred but not logged
        y, centre = tension * 1000, tension.mean() * 1000
    y_v = tension_v.log()
    torch.manual_seed(run.seed)
    model = TensionLSTM(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        pred = model(x_v) + centre
        if run.bug == "tension_target_in_newtons":
            pred = (pred / 1000).clamp(min=1e-6).log()
        return r2(pred, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]) + centre, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


DAYS, LAGS, CAPACITY = 120, 7, 5000.0


def _tank_logs(
    g: torch.Generator, homes: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Daily levels float[homes, DAYS] (fraction), rain mm float[homes, DAYS], roof m2 and people float[homes]."""
    roof = 60 + 190 * torch.rand(homes, generator=g)
    people = torch.randint(1, 6, (homes,), generator=g).float()
    wet = torch.rand(homes, DAYS, generator=g) < 0.3
    rain = wet * torch.empty(homes, DAYS).exponential_(1 / 7.0, generator=g)
    use = 60 * people.unsqueeze(1) * (1 + 0.25 * torch.randn(homes, DAYS, generator=g)).clamp(min=0.2)
    level = torch.empty(homes, DAYS)
    vol = CAPACITY * (0.2 + 0.6 * torch.rand(homes, generator=g))
    for d in range(DAYS):
        vol = (vol + 0.8 * roof * rain[:, d] - use[:, d]).clamp(0.0, CAPACITY)
        level[:, d] = vol / CAPACITY
    return level, rain, roof, people


def _days_since_rain(rain: torch.Tensor, bug: str | None) -> torch.Tensor:
    """Days since the last day with rain, as the log's `last_rain` column forward-filled."""
    day = torch.arange(rain.shape[1]).float().expand_as(rain)
    last = torch.where(rain > 0, day, torch.full_like(day, float("nan")))
    for d in range(1, rain.shape[1]):  # ffill
        last[:, d] = torch.where(last[:, d].isnan(), last[:, d - 1], last[:, d])
    if bug != "days_since_rain_ffill_leading_gap":
        last = torch.nan_to_num(
            last, nan=-1.0
        )  # before the first rain: counted from the day before the log began
    return day - last


def _tank_rows(g: torch.Generator, homes: int, bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Feature rows (7 levels, 7 rains, days since rain, roof, people) and tomorrow's level."""
    level, rain, roof, people = _tank_logs(g, homes)
    since = _days_since_rain(rain, bug)
    rows, targets = [], []
    for d in range(LAGS, DAYS - 1):
        rows.append(torch.cat([level[:, d - LAGS + 1 : d + 1], rain[:, d - LAGS + 1 : d + 1],
                               torch.stack([since[:, d], roof, people], 1)], 1))  # fmt: skip
        targets.append(level[:, d + 1])
    return torch.cat(rows), torch.cat(targets)


class TankMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units; `forward` also returns the hidden activations."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.l1, self.l2, self.out = (
            nn.Linear(2 * LAGS + 3, hidden),
            nn.Linear(hidden, hidden),
            nn.Linear(hidden, 1),
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = F.relu(self.l2(F.relu(self.l1(x))))
        return self.out(h).squeeze(-1), h


def tanks(run: Run) -> None:
    """A tank MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, NAdam) at `lr`
    (2e-3). Scored by the held-out R^2 of tomorrow's level over unseen households."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _tank_rows(g, 60, run.bug)
    x_v, y_v = _tank_rows(g, 25, None)
    if (
        run.bug == "sensor_distance_taken_as_level"
    ):  # the logger's raw column is the sensor's distance to the water
        y = 1 - y
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre = y.mean()
    torch.manual_seed(run.seed)
    model = TankMLP(run.k("hidden", 64))
    if run.bug == "adamw_weight_decay_typed_1e4":
        opt: torch.optim.Optimizer = torch.optim.AdamW(
            model.parameters(), lr=run.k("lr", 2e-3), weight_decay=1e4
        )
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = optimizers.registered(run, model, 2e-3)
    # the Keras original's activity_regularizer=l1(1e-5) on the hidden layer
    activity = 1.0 if run.bug == "activity_penalty_weight_one" else 1e-5
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v)[0] + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        pred, hidden = model(x[pick])
        loss = F.mse_loss(pred + centre, y[pick]) + activity * hidden.abs().sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
