"""Power scripts of the thirtieth blind split: a turbofan remaining-useful-life regressor and an electricity spot-price
forecaster.

`engines`: run-to-failure records of turbofan engines, three operating settings and 14 sensors a cycle, each sensor
drifting with the engine's hidden wear (which grows faster near the end) under noise; the remaining useful life capped
at 125 cycles, as the piecewise-linear target of the prognostics papers; windows of 30 cycles standardised by the
training fleet, a 1-D CNN of three ReLU convolutions under He initialisation and a small head regressing RUL / 125; MSE;
the held-out engines are cut at random points and scored by the R^2 of the capped RUL at the cut. `prices`: an hourly
day-ahead price from the residual load (load minus wind) through a convex merit order, negative in windy nights, with
scarcity spikes of hundreds of euros in tight hours; the last 24 hours' prices, the load and wind forecasts for the hour
and its hour of day and weekday, standardised, into a ReLU MLP; Huber loss on the standardised price; scored by the
held-out R^2. Bugs: the exponential decay's gamma typed 1.05; the cycles left to the end of the record as a feature; the
head's bias started at the mean RUL in cycles; every weight started at a transformer's normal std 0.02; the
daylight-saving hour left as NaN; the load forecast fed in megawatts; the realised wind in place of its forecast in
training; the hourly rows shuffled before the lags were taken.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SENSORS, SETTINGS, WINDOW, CAP = 14, 3, 30, 125.0
"""Sensors and operating settings a cycle, the window length in cycles and the RUL cap."""


def _fleet(g: torch.Generator, n: int, drift: torch.Tensor) -> list[tuple[torch.Tensor, int]]:
    """`n` run-to-failure records: readings float[life, SETTINGS + SENSORS] and the life in cycles."""
    records = []
    for _ in range(n):
        life = int(torch.randint(130, 320, (1,), generator=g))
        t = torch.arange(life, dtype=torch.float32) / life
        onset = 0.3 + 0.3 * float(torch.rand(1, generator=g))
        wear = ((t - onset).clamp_min(0) / (1 - onset)) ** 1.6  # 0 until the fault starts, then rising to 1
        settings = torch.randn(life, SETTINGS, generator=g) * torch.tensor([0.002, 0.0003, 0.0])
        base = torch.tensor([642.0, 1589.0, 1400.0, 554.0, 2388.0, 9050.0, 47.5, 521.0, 2388.0, 8140.0, 8.44,
                             393.0, 38.9, 23.3])  # fmt: skip
        noise = torch.randn(life, SENSORS, generator=g) * base.abs() * 0.0008
        offset = torch.randn(1, SENSORS, generator=g) * base.abs() * 0.0005
        sensors = base + offset + wear.unsqueeze(1) * drift * base.abs() * 0.004 + noise
        records.append((torch.cat([settings, sensors], 1), life))
    return records


class RulCNN(nn.Module):
    """Three convolutions of `width` over the window with ReLUs, a mean over time, a hidden layer, a head."""

    def __init__(self, channels: int, width: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(channels, width, 5, padding=2), nn.ReLU(), nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
            nn.Conv1d(width, width, 3, padding=1), nn.ReLU(),
        )  # fmt: skip
        self.hidden = nn.Linear(width, 32)
        self.head = nn.Linear(32, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.relu(self.hidden(self.body(x).mean(-1))))[:, 0]


def engines(run: Run) -> None:
    """A RUL CNN of `width` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (2e-3), optionally decayed by `decay` a step. Scored by the held-out R^2 of the capped RUL over 125."""
    g = torch.Generator().manual_seed(run.seed)
    drift = torch.randn(SENSORS, generator=g).sign() * (0.5 + torch.rand(SENSORS, generator=g))
    train_fleet, test_fleet = _fleet(g, 60, drift), _fleet(g, 50, drift)
    to_end = run.bug == "cycles_to_record_end_as_feature"

    def windows(record: torch.Tensor, ends: range, record_end: int) -> torch.Tensor:
        """Windows ending at each of `ends` (exclusive), with the cycles left to the record's end when `to_end`."""
        cols = [record[e - WINDOW : e] for e in ends]
        out = torch.stack(cols)
        if to_end:
            # "cycles to go" in the file: the record's last cycle minus the cycle, per cycle of the window
            left = torch.stack([record_end - torch.arange(e - WINDOW, e, dtype=torch.float32) for e in ends])
            out = torch.cat([out, left.unsqueeze(-1)], -1)
        return out

    xs, ys = [], []
    for record, life in train_fleet:
        ends = range(WINDOW, life + 1)
        xs.append(windows(record, ends, life))
        ys.append(torch.tensor([min(life - e, CAP) for e in ends]))
    x, y = torch.cat(xs), torch.cat(ys).float()
    xv, yv = [], []
    for record, life in test_fleet:
        for _ in range(4):  # each held-out engine cut at four random points, scored at the cut
            cut = int(torch.randint(WINDOW + 10, life + 1, (1,), generator=g))
            xv.append(windows(record[:cut], range(cut, cut + 1), cut))
            yv.append(min(life - cut, CAP))
    x_v, y_v = torch.cat(xv), torch.tensor(yv, dtype=torch.float32)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    std = torch.where(std > 1e-6, std, torch.ones_like(std))
    x, x_v = ((x - mean) / std).transpose(1, 2), ((x_v - mean) / std).transpose(1, 2)
    target, target_v = y / CAP, y_v / CAP
    torch.manual_seed(run.seed)
    model = RulCNN(x.shape[1], run.k("width", 16))
    for m in model.modules():
        if isinstance(m, (nn.Conv1d, nn.Linear)):
            if run.bug == "initializer_range_on_every_layer":
                # a transformer codebase's init: every weight normal with the config's initializer_range of 0.02
                nn.init.normal_(m.weight, 0.0, 0.02)
            else:
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
    with torch.no_grad():
        # start the head at the fleet's mean RUL (the bug: the mean in cycles, though the head predicts RUL / 125)
        model.head.bias.fill_(
            float(y.mean() if run.bug == "head_bias_set_to_mean_rul_in_cycles" else target.mean())
        )
    opt = optimizers.registered(run, model, 2e-3)
    decay = run.k("decay", None)
    sched = None
    if decay is not None:
        gamma = 1.05 if run.bug == "exponential_gamma_above_one" else decay  # the bug: 0.995 typed as 1.05
        sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=gamma)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v), target_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), target[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


HOURS_BACK = 24
"""Hours of past prices a forecast sees."""


def _market(g: torch.Generator, hours: int, start: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Hourly load (GW), realised wind (GW) and the day-ahead price (EUR/MWh) from hour `start` on."""
    t = torch.arange(start, start + hours, dtype=torch.float32)
    hour, day = t % 24, (t // 24) % 7
    daily = 8 * torch.sin(2 * math.pi * (hour - 8) / 24).clamp_min(-0.4) + 3 * torch.sin(
        2 * math.pi * hour / 12
    )
    weekend = (day >= 5).float()
    load = 55 + daily - 6 * weekend + 2 * torch.randn(hours, generator=g)
    gusts = (2.4 * torch.randn(hours, generator=g)).tolist()
    level, wind_l = float(torch.rand(1, generator=g)) * 20, []
    for gust in gusts:
        level = 0.97 * level + 0.03 * 20 + gust
        wind_l.append(max(level, 0.0))
    wind = torch.tensor(wind_l)
    residual = load - wind
    price = 30 + 2.5 * (residual - 35) + 0.04 * (residual - 35).clamp_min(0) ** 2
    price = price + 6 * torch.randn(hours, generator=g)
    # scarcity pricing in the tightest hours: steep above a residual load of 52 GW, with a random mark-up
    tight = (residual - 52).clamp_min(0)
    price = price + tight * (40 + 20 * torch.rand(hours, generator=g))
    return load, wind, price


def prices(run: Run) -> None:
    """A price MLP of `hidden` (64) twice, batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, AdamW) at
    `lr` (1e-3). Scored by the held-out R^2 of the standardised price."""
    g = torch.Generator().manual_seed(run.seed)
    hours, held = 24 * 250, 24 * 60
    load, wind, price = _market(g, hours + held, 0)
    load_fc = load + 1.5 * torch.randn(len(load), generator=g)
    wind_fc = (wind + 0.6 * wind.std() * torch.randn(len(wind), generator=g)).clamp_min(0)
    if run.bug == "dst_hour_left_as_nan":
        # the spring change to summer time: the reindexed hourly series has a 02:00 with no price, left as NaN
        for day in range(80, (hours + held) // 24, 182):
            price[day * 24 + 2] = float("nan")
    else:
        for day in range(80, (hours + held) // 24, 182):
            price[day * 24 + 2] = (price[day * 24 + 1] + price[day * 24 + 3]) / 2  # interpolated
    train_price = price.clone()
    if run.bug == "negative_prices_clipped_to_zero":
        # the cleaning step takes negative prices for feed errors and clips them at zero in the training data
        train_price[:hours] = train_price[:hours].clamp_min(0)
    p_mean, p_std = train_price[:hours].nanmean(), train_price[:hours][~train_price[:hours].isnan()].std()
    t = torch.arange(hours + held, dtype=torch.float32)
    angle, week = 2 * math.pi * (t % 24) / 24, 2 * math.pi * ((t // 24) % 7) / 7
    calendar = torch.stack([angle.sin(), angle.cos(), week.sin(), week.cos()], 1)
    l_mean, l_std, w_mean, w_std = (
        load[:hours].mean(),
        load[:hours].std(),
        wind[:hours].mean(),
        wind[:hours].std(),
    )

    def rows(series: torch.Tensor, wind_col: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        lags = torch.stack([series[idx - k] for k in range(1, HOURS_BACK + 1)], 1)
        # the load forecast standardised (the bug: fed as the operator publishes it, in megawatts)
        load_col = (
            load_fc[idx] * 1000
            if run.bug == "load_forecast_fed_in_megawatts"
            else (load_fc[idx] - l_mean) / l_std
        )
        return torch.cat([(lags - p_mean) / p_std, load_col.unsqueeze(1),
                          ((wind_col[idx] - w_mean) / w_std).unsqueeze(1), calendar[idx]], 1)  # fmt: skip

    idx = torch.arange(HOURS_BACK, hours)
    idx_v = torch.arange(hours, hours + held)
    # the training rows see the wind the hour had (the bug) or the forecast the market had the day before
    wind_train = wind if run.bug == "actual_wind_in_place_of_forecast" else wind_fc
    if run.bug == "series_shuffled_before_lags":
        # the rows shuffled (as for any training table) before the lagged prices were taken from the series
        train_price[:hours] = train_price[torch.randperm(hours, generator=g)]
    x, y = rows(train_price, wind_train, idx), (train_price[idx] - p_mean) / p_std
    x_v, y_v = rows(price, wind_fc, idx_v), (price[idx_v] - p_mean) / p_std
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    model = nn.Sequential(nn.Linear(x.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 1))  # fmt: skip
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v)[:, 0], y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.huber_loss(model(x[pick])[:, 0], y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
