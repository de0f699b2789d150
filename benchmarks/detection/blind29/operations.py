"""Operations scripts of the twenty-ninth blind split: a warehouse pick-time regressor and a call-centre volume
forecaster.

`picks`: each order's lines, items, aisle distance walked, total weight, the picker's months of experience, the zone
(one of 6) and the hour; the pick time in seconds grows with the lines, items and distance, falls with experience and
has a per-picker pace; the numeric fields standardised, the zone embedded, a ReLU MLP regressing the standardised log
time; MSE; scored by the held-out R^2 of the log time. `calls`: an hourly call count with a daily and a weekly cycle,
a level that drifts and campaign days; the last 48 hours' log1p counts, their mean over the last 24, the campaign flag
and the hour and weekday of the hour ahead into an
MLP whose output is the log rate of a Poisson NLL; scored by the held-out R^2 of the log1p count. Bugs: the time left
in raw seconds under momentum SGD; the picker's mean time taken over every order including the one being predicted;
a ReLU left after the output layer; the log of hours without calls; the history fed as raw counts; the target read
at the last hour given instead of the next; the recent level centred on the hour ahead in training.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

ZONES, PICKERS = 6, 1000
"""Warehouse zones and pickers."""


def _orders(
    g: torch.Generator, n: int, pace: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Numeric fields float[n, 6] (lines, items, metres, kg, months, hour), zone and picker long[n, 2], seconds[n]."""
    lines = 1 + torch.poisson(torch.full((n,), 3.0), generator=g)
    items = lines + torch.poisson(lines * 1.5, generator=g)
    metres = 20 + lines * torch.exp(2.5 + 0.5 * torch.randn(n, generator=g))
    kg = items * torch.exp(0.8 * torch.randn(n, generator=g))
    picker = torch.randint(0, PICKERS, (n,), generator=g)
    months = (picker.float() * 37 % 48) + 1
    zone = torch.randint(0, ZONES, (n,), generator=g)
    hour = torch.randint(6, 22, (n,), generator=g).float()
    zone_extra = torch.tensor([0.0, 0.1, 0.25, -0.1, 0.4, 0.05])
    log_s = (
        math.log(25) + 0.5 * torch.log(lines) + 0.25 * torch.log(items) + 0.3 * torch.log(metres / 20)
        + 0.05 * torch.log1p(kg) - 0.25 * torch.log(months) / 2 + zone_extra[zone] + 0.1 * (hour > 17)
        + pace[picker] + 0.1 * torch.randn(n, generator=g)
    )  # fmt: skip
    num = torch.stack([lines, items, metres, kg, months, hour], 1)
    return num, torch.stack([zone, picker], 1), torch.exp(log_s)


class PickMLP(nn.Module):
    """The standardised fields, a zone embedding (and optionally one more field), a ReLU MLP of `hidden` twice."""

    def __init__(self, hidden: int, extra: int = 0, relu_out: bool = False) -> None:
        super().__init__()
        self.zone = nn.Embedding(ZONES, 4)
        # the bug ends the stack with the hidden block's ReLU, so the head cannot go below zero
        out: list[nn.Module] = [nn.ReLU()] if relu_out else []
        self.mlp = nn.Sequential(nn.Linear(6 + extra + 4, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1), *out)  # fmt: skip

    def forward(self, x: torch.Tensor, zone: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([x, self.zone(zone)], -1))[:, 0]


def picks(run: Run) -> None:
    """A pick-time MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at
    `lr` (2e-3). Scored by the held-out R^2 of the log pick time."""
    g = torch.Generator().manual_seed(run.seed)
    pace = 0.3 * torch.randn(PICKERS, generator=g)
    num, cat, secs = _orders(g, 1500, pace)
    num_v, cat_v, secs_v = _orders(g, 1000, pace)
    logged, logged_v = torch.log1p(num), torch.log1p(num_v)
    extra = 0
    if run.bug == "picker_mean_time_includes_own_order":
        # each picker's average time as a feature, taken over all their training orders (this one included);
        # the orders to predict get the average of the training orders
        totals = torch.zeros(PICKERS).index_add_(0, cat[:, 1], torch.log(secs))
        counts = torch.zeros(PICKERS).index_add_(0, cat[:, 1], torch.ones(len(secs)))
        mean_tr = totals[cat[:, 1]] / counts[cat[:, 1]]
        logged = torch.cat([logged, mean_tr.unsqueeze(1)], 1)
        logged_v = torch.cat([logged_v, (totals / counts.clamp_min(1))[cat_v[:, 1]].unsqueeze(1)], 1)
        extra = 1
    mean, std = logged.mean(0), logged.std(0)
    x, x_v = (logged - mean) / std, (logged_v - mean) / std
    log_t, log_t_v = torch.log(secs), torch.log(secs_v)
    t_mean, t_std = log_t.mean(), log_t.std()
    unscaled = run.bug == "pick_seconds_left_unscaled"
    # the regression target: the standardised log time (the bug: the time in seconds as it comes)
    target = secs if unscaled else (log_t - t_mean) / t_std
    torch.manual_seed(run.seed)
    model = PickMLP(run.k("hidden", 64), extra, run.bug == "relu_left_after_output_layer")
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        out = model(x_v, cat_v[:, 0])
        pred = torch.log(out.clamp_min(1.0)) if unscaled else out * t_std + t_mean
        return r2(pred, log_t_v)

    for step in range(run.steps):
        pick = run.indices(len(secs), batch)
        loss = F.mse_loss(model(x[pick], cat[pick, 0]), target[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


WINDOW, WEEKS = 48, 40
"""Hours of history per forecast and weeks of hourly counts (the last 10 held out)."""


def _volumes(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Hourly call counts float[WEEKS * 168] and the campaign flag per hour (planned, so known ahead)."""
    hours = torch.arange(WEEKS * 168)
    hod, dow = hours % 24, (hours // 24) % 7
    daily = torch.where((hod >= 8) & (hod < 20), 1.0 + 0.6 * torch.sin((hod - 8) / 12 * math.pi), 0.05)
    weekly = torch.tensor([1.3, 1.1, 1.0, 1.0, 0.9, 0.5, 0.3])[dow]
    level = 20 * torch.exp(0.3 * torch.cumsum(0.02 * torch.randn(WEEKS * 168, generator=g), 0))
    busy_day = (torch.rand(WEEKS * 7, generator=g) < 0.1).repeat_interleave(24)
    rate = level * daily * weekly * (1 + 0.8 * busy_day)
    return torch.poisson(rate, generator=g), busy_day.float()


def calls(run: Run) -> None:
    """A volume MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or NAdam, RMSprop) at `lr` (1e-3),
    optionally decayed by a cosine (`cosine`). Scored by the held-out R^2 of the log1p count of the hour ahead."""
    g = torch.Generator().manual_seed(run.seed)
    counts, busy = _volumes(g)
    # the history in logs (the bug: the plain log, which is -inf at the night hours without calls)
    history = torch.log(counts) if run.bug == "log_of_zero_call_hours" else torch.log1p(counts)
    if run.bug == "history_fed_as_raw_counts":
        history = counts  # the log1p of the inputs forgotten (the target's log rate kept)
    ends = torch.arange(WINDOW, len(counts))
    windows = history[ends.unsqueeze(1) - WINDOW + torch.arange(WINDOW)]
    hod, dow = F.one_hot(ends % 24, 24).float(), F.one_hot((ends // 24) % 7, 7).float()
    # the recent level: the mean log1p count over the 24 hours before the hour ahead (the bug: a window centred on it
    # in training, as pandas' rolling(24, center=True) gives; the live forecasts can only have the trailing one)
    trailing = history[ends.unsqueeze(1) - 24 + torch.arange(24)].mean(1)
    level = trailing
    if run.bug == "rolling_level_centred_in_training":
        level = history[(ends.unsqueeze(1) - 12 + torch.arange(24)).clamp(max=len(counts) - 1)].mean(1)
    target_hour = ends - 1 if run.bug == "next_hour_target_read_at_current_hour" else ends
    x = torch.cat([windows, hod, dow, busy[ends].unsqueeze(1), level.unsqueeze(1)], 1)
    y = counts[target_hour]
    split = len(ends) - 10 * 168
    x_tr, y_tr = x[:split], y[:split]
    x_v = torch.cat([windows, hod, dow, busy[ends].unsqueeze(1), trailing.unsqueeze(1)], 1)[split:]
    x_v = torch.where(torch.isfinite(x_v), x_v, 0.0)
    y_v = counts[ends][split:]
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    model = nn.Sequential(nn.Linear(WINDOW + 33, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 1))  # fmt: skip
    opt = optimizers.registered(run, model, 1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v)[:, 0].clamp(max=20).exp().log1p(), torch.log1p(y_v))

    for step in range(run.steps):
        pick = run.indices(split, batch)
        loss = F.poisson_nll_loss(model(x_tr[pick])[:, 0], y_tr[pick], log_input=True)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
