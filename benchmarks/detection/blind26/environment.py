"""Environment scripts of the twenty-sixth blind split: a streamflow forecaster (an LSTM over a catchment's daily
rainfall and temperature) and a bike-sharing demand forecaster (an MLP with a Poisson loss on hourly rentals).

`streamflow`: 2400 days of a catchment's rain (wet days one in three, exponential depths) and seasonal temperature;
the river's flow made by a soil store filled by rain, drained by evaporation that grows with temperature and emptied
by a fast and a slow linear reservoir, with gauge noise; windows of the last 90 days of standardised rain and
temperature, the flow of the next day as the target (the log of one plus the flow, standardised); the first 1600 days
train, the last 700 are held out; an LSTM of 24 and a linear layer, MSE; scored by the held-out Nash-Sutcliffe
efficiency (R^2). `bikes`: hourly rentals over 90 days, drawn Poisson from a rate that follows the hour (a commuter
peak on working days, a midday one at weekends), the temperature, the humidity, the weather (clear, mist, rain) and a
random effect per day; hour and weekday one-hot, the weather one-hot, the temperature and humidity standardised; an
MLP of two hidden layers that outputs the log rate, `PoissonNLLLoss`; the first 70 days train, the last 20 are held
out; scored by the held-out R^2 of the log of one plus the count. Bugs: the gauge's gaps left NaN in the rain record;
the flood weights left in cubic metres a second; a plain RNN in place of the LSTM; the calibration period one year
long; the Poisson loss told its input is the rate, not its log; the record's running index kept as a feature; a
plateau scheduler in mode 'max' on the loss; the log target of an MSE version kept for the Poisson loss.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DAYS, WINDOW, TRAIN_DAYS = 2400, 90, 1600
"""Days of record, days of rain and temperature a forecast sees, days of the calibration period."""
AREA_FACTOR = 40.0
"""Cubic metres a second per millimetre a day of runoff from the catchment."""


def _catchment(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Daily rain (mm, with the gauge's gaps as NaN), temperature (deg C) and flow (m3/s), each float[DAYS]."""
    wet = torch.rand(DAYS, generator=g) < 0.33
    rain = torch.where(wet, -8.0 * torch.log(torch.rand(DAYS, generator=g)), torch.zeros(DAYS))
    day = torch.arange(DAYS, dtype=torch.float)
    temp = 11.0 + 9.0 * torch.sin(2 * math.pi * (day - 100) / 365) + 2.5 * torch.randn(DAYS, generator=g)
    soil, fast, slow, flow = 40.0, 0.0, 30.0, torch.zeros(DAYS)
    for t in range(DAYS):
        soil += float(rain[t])
        soil -= min(soil, 0.12 * max(float(temp[t]), 0.0))
        excess = max(soil - 80.0, 0.0) + 0.05 * soil
        soil -= excess
        fast += 0.6 * excess
        slow += 0.4 * excess
        q = 0.35 * fast + 0.03 * slow
        fast *= 0.65
        slow *= 0.97
        flow[t] = AREA_FACTOR * q
    flow = flow * torch.exp(0.05 * torch.randn(DAYS, generator=g))
    gaps = torch.rand(DAYS, generator=g) < 0.02
    return torch.where(gaps, torch.full_like(rain, float("nan")), rain), temp, flow


def _windows(series: torch.Tensor, days: torch.Tensor) -> torch.Tensor:
    """float[len(days), WINDOW, channels]: the WINDOW days up to and including each day of `days`."""
    offsets = torch.arange(-WINDOW + 1, 1)
    return series[days.unsqueeze(1) + offsets]


class FlowLSTM(nn.Module):
    """An LSTM (or a plain tanh RNN) over the window, a linear layer on its last state."""

    def __init__(self, hidden: int, plain: bool = False) -> None:
        super().__init__()
        self.rnn = (nn.RNN if plain else nn.LSTM)(2, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.rnn(x)
        return self.out(h[:, -1]).squeeze(-1)


def streamflow(run: Run) -> None:
    """A streamflow LSTM of `hidden` (24), batches of `batch` (64), `opt` (Adam; or RMSprop, momentum SGD, AdamW) at
    `lr` (3e-3), optionally clipped at norm `clip`, warmed up linearly over `warmup` steps,
    each day's error weighted by its flow over the mean flow (`flood_weights`). Scored by the held-out Nash-Sutcliffe efficiency."""
    g = torch.Generator().manual_seed(run.seed)
    rain, temp, flow = _catchment(g)
    if run.bug != "gauge_gaps_left_nan":
        rain = torch.nan_to_num(rain, nan=0.0)  # a gap in the gauge's record read as a dry day
    end_train = 365 if run.bug == "calibration_period_one_year" else TRAIN_DAYS
    train_days = torch.arange(WINDOW, end_train - 1)
    val_days = torch.arange(TRAIN_DAYS + 300, DAYS - 1)
    r_mu, r_sd = rain[:end_train].mean(), rain[:end_train].std()
    t_mu, t_sd = temp[:end_train].mean(), temp[:end_train].std()
    inputs = torch.stack([(rain - r_mu) / r_sd, (temp - t_mu) / t_sd], -1)
    logq = torch.log1p(flow)
    q_mu, q_sd = logq[:end_train].mean(), logq[:end_train].std()
    target = (logq - q_mu) / q_sd
    x, y = _windows(inputs, train_days), target[train_days + 1]
    x_v, y_v = _windows(inputs, val_days), ((logq - q_mu) / q_sd)[val_days + 1]
    torch.manual_seed(run.seed)
    model = FlowLSTM(run.k("hidden", 24), plain=run.bug == "vanilla_rnn_in_place_of_lstm")
    opt = optimizers.registered(run, model, 3e-3)
    batch, clip = run.k("batch", 64), run.k("clip", None)

    warmup = run.k("warmup", 0)
    sched = None
    if warmup:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    weights = torch.ones(len(y))
    if run.k("flood_weights", False):  # each day's error weighted by its flow, so that floods count more
        q = flow[train_days + 1]
        weights = q if run.bug == "flood_weights_left_in_cubic_metres" else q / q.mean()

    def nse_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = (weights[pick] * (model(x[pick]) - y[pick]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_nse", nse_held_out):
            break


HOURS, BIKE_DAYS, BIKE_TRAIN_DAYS = 24, 90, 70
"""Hours a day, days of record, days that train."""


def _rentals(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per hour of record: hour long[n], weekday long[n], weather long[n] (0 clear, 1 mist, 2 rain), the
    temperature and humidity float[n, 2] (deg C, %), and the rentals float[n]; n = BIKE_DAYS * HOURS."""
    day = torch.arange(BIKE_DAYS).repeat_interleave(HOURS)
    hour = torch.arange(HOURS).repeat(BIKE_DAYS)
    weekday = (day + 2) % 7
    daily_temp = 15 + 8 * torch.sin(torch.arange(BIKE_DAYS) / 15.0) + 3 * torch.randn(BIKE_DAYS, generator=g)
    temp = daily_temp[day] + 4 * torch.sin(2 * math.pi * (hour - 9) / 24) + torch.randn(len(day), generator=g)
    humidity = (60 + 15 * torch.randn(BIKE_DAYS, generator=g))[day] + 5 * torch.randn(len(day), generator=g)
    weather = torch.bucketize(
        torch.rand(len(day), generator=g) + 0.3 * (humidity > 70), torch.tensor([0.6, 0.85])
    )
    working = weekday < 5
    commute = torch.exp(-((hour - 8.0) ** 2) / 2) + 1.2 * torch.exp(-((hour - 17.5) ** 2) / 3)
    leisure = torch.exp(-((hour - 14.0) ** 2) / 12)
    night = torch.where((hour < 6) | (hour > 22), -1.5, 0.0)
    log_rate = (
        2.0
        + torch.where(working, 2.2 * commute + 0.4 * leisure, 1.8 * leisure)
        + night
        + 0.05 * (temp - 15)
        - 0.003 * (temp - 22).clamp(min=0) ** 2
        - 0.01 * (humidity - 60)
        - torch.tensor([0.0, 0.3, 1.2])[weather]
        + 0.2 * torch.randn(BIKE_DAYS, generator=g)[day]
    )
    count = torch.poisson(torch.exp(log_rate), generator=g)
    return hour, weekday, weather, torch.stack([temp, humidity], -1), count


def bikes(run: Run) -> None:
    """A bike-demand MLP of `hidden` (64) per layer, batches of `batch` (128), `opt` (Adam; or AdamW, momentum SGD,
    Adagrad) at `lr` (3e-3), optionally with the rate cut on a plateau of the held-back loss (`plateau`). Scored by the
    held-out R^2 of the log of one plus the count."""
    g = torch.Generator().manual_seed(run.seed)
    hour, weekday, weather, weather_num, count = _rentals(g)
    n_train = BIKE_TRAIN_DAYS * HOURS
    num = (weather_num - weather_num[:n_train].mean(0)) / weather_num[:n_train].std(0)
    columns = [F.one_hot(hour, HOURS), F.one_hot(weekday, 7), F.one_hot(weather, 3), num]
    if run.bug == "instant_column_kept_as_feature":
        instant = torch.arange(
            len(count), dtype=torch.float
        )  # the export's record index, left among the columns
        columns.append(instant.unsqueeze(1))
    features = torch.cat([c.float() for c in columns], 1)
    x, y, x_v, y_v = features[:n_train], count[:n_train], features[n_train:], count[n_train:]
    if run.bug == "log_target_kept_for_poisson_loss":
        y = torch.log1p(y)  # the MSE version's transformed target
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    model = nn.Sequential(nn.Linear(features.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 1))  # fmt: skip
    opt = optimizers.registered(run, model, 3e-3)
    poisson = nn.PoissonNLLLoss(log_input=run.bug != "poisson_loss_told_rate_not_log")
    plateau = None
    if run.k("plateau", False):
        mode = "max" if run.bug == "plateau_mode_max_on_loss" else "min"
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode=mode, factor=0.5, patience=2)
    batch = run.k("batch", 128)

    def r2_log_counts() -> float:
        out = model(x_v).squeeze(-1)
        rate = out if run.bug == "poisson_loss_told_rate_not_log" else torch.exp(out)
        return r2(torch.log1p(rate.clamp(min=0)), torch.log1p(y_v))

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = poisson(model(x[pick]).squeeze(-1), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if plateau is not None and step % 10 == 9:
            with torch.no_grad():
                plateau.step(float(poisson(model(x[-240:]).squeeze(-1), y[-240:])))
        if not close_step(run, step, loss, model, "val_r2_log", r2_log_counts):
            break
