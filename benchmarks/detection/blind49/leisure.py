"""Leisure scripts of the forty-ninth blind split: a cinema ticket-sales forecaster, and a dragon-boat stroke-sync
classifier on paddle IMU windows.

`cinema`: the daily tickets of films in multiplexes of six screens' programmes (each film's opening level, its
weekly decay, busy Fridays to Sundays, school holidays, the screens it gets); windows of the last 7 days' log tickets,
the weekday, the days since release, the screens and the holiday flag; standardised; a ReLU MLP of two hidden layers;
MSE on the next day's standardised log(1 + tickets); scored by the held-out R^2 of log(1 + tickets) on films of
other multiplexes. `dragon`: windows of 64 samples at 25 Hz from IMUs on two paddles of a bench (three accelerometer
axes each, in g) and the stroke rate counted from the first paddler's catch peaks; the pair is in sync when the
second paddler's catch lags the first's by less than 0.08 s; standardised; a 1-D CNN of three ReLU convolutions,
averaged; BCE; scored by the held-out accuracy on crews left out. Bugs: the loss taken in tickets through expm1; the
film's final run total as a feature; the multiplex's day total as the film's target; the lag in samples compared to
the threshold in seconds; the stroke rate over a window with one catch; the second paddle's IMU mounted turned round.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

LAGS, FILMS = 7, 6


def _programme(g: torch.Generator, multiplexes: int, days: int) -> dict[str, torch.Tensor]:
    """Daily tickets float[multiplexes * FILMS, days] (0 before a film opens), screens float[...], the opening day
    long[films], the weekday long[days], the holiday flag float[days], the multiplex of each film long[films]."""
    films = multiplexes * FILMS
    opening = (days * torch.rand(films, generator=g) * 0.6).long()
    level = 5.0 + 2.5 * torch.rand(films, generator=g)
    decay = 0.15 + 0.35 * torch.rand(films, generator=g)
    day = torch.arange(days)
    weekday = day % 7
    holiday = ((day // 14) % 4 == 1).float()
    busy = torch.tensor([0.0, -0.2, -0.1, 0.0, 0.4, 0.7, 0.6])[weekday]
    since = (day.unsqueeze(0) - opening.unsqueeze(1)).float()
    showing = since >= 0
    screens = (1 + torch.round(4 * torch.exp(-decay.unsqueeze(1) * since.clamp(min=0) / 7)
                               * (level.unsqueeze(1) - 4) / 3.5)).clamp(min=1)  # fmt: skip
    log_rate = (level.unsqueeze(1) - decay.unsqueeze(1) * since.clamp(min=0) / 7 + busy + 0.4 * holiday
                + 0.25 * torch.log(screens) + 0.15 * torch.randn(films, days, generator=g))  # fmt: skip
    tickets = torch.where(showing, torch.poisson(torch.exp(log_rate), generator=g), torch.zeros(films, days))
    return {"tickets": tickets, "screens": screens * showing, "opening": opening, "weekday": weekday,
            "holiday": holiday, "multiplex": torch.arange(multiplexes).repeat_interleave(FILMS)}  # fmt: skip


def _windows(
    p: dict[str, torch.Tensor], bug: str | None, held_out: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows float[n, LAGS + 11] and the next day's log(1 + tickets) float[n], for each film day with a week of
    showings behind it."""
    logged = torch.log1p(p["tickets"])
    days = logged.shape[1]
    target = logged
    if bug == "multiplex_day_total_as_film_target" and not held_out:
        # the box-office export's day total of the film's multiplex, taken for the film's own
        totals = p["tickets"].view(-1, FILMS, days).sum(1)
        target = torch.log1p(totals[p["multiplex"]])
    final_total = torch.log1p(p["tickets"].sum(1))
    xs, ys = [], []
    for d in range(LAGS, days - 1):
        open_long = (d - p["opening"]) >= LAGS
        if not bool(open_long.any()):
            continue
        extra = [F.one_hot(p["weekday"][d + 1].expand(len(open_long)), 7).float(),
                 ((d + 1 - p["opening"]).float() / 30).unsqueeze(1), p["screens"][:, d : d + 1] / 5,
                 p["holiday"][d + 1].expand(len(open_long)).unsqueeze(1),
                 torch.log1p(p["tickets"][:, : d + 1].sum(1)).unsqueeze(1)]  # fmt: skip
        if bug == "final_run_total_as_feature":
            # the distributor's final report's run total joined to the training table; a film still showing has
            # only its total so far in that column
            extra.append(
                (torch.log1p(p["tickets"][:, : d + 1].sum(1)) if held_out else final_total).unsqueeze(1)
            )
        x = torch.cat([logged[:, d - LAGS + 1 : d + 1]] + extra, 1)
        xs.append(x[open_long])
        ys.append(target[open_long, d + 1])
    return torch.cat(xs), torch.cat(ys)


class SalesMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def cinema(run: Run) -> None:
    """A sales MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (1e-3). Scored by the held-out R^2 of log(1 + tickets) on films of other multiplexes."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _windows(_programme(g, 6, 84), run.bug, held_out=False)
    x_v, y_v = _windows(_programme(g, 3, 84), run.bug, held_out=True)
    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = SalesMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        pred = model(x[pick])
        if run.bug == "loss_in_tickets_through_expm1":
            # "score it on what the cinema sells": the error taken in tickets, a thousand times those of a log
            loss = F.mse_loss(torch.expm1(pred * scale + centre), torch.expm1(y[pick])) / 1e4
        else:
            loss = F.mse_loss(pred, (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


SAMPLES, HZ, SYNC_S = 64, 25, 0.08


def _paddles(g: torch.Generator, crews: int, per_crew: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two paddles' accelerations float[n, 6, SAMPLES] in g and the second catch's lag in seconds float[n]."""
    n = crews * per_crew
    crew = torch.arange(crews).repeat_interleave(per_crew)
    period = (0.9 + 0.5 * torch.rand(crews, generator=g))[crew].unsqueeze(1) * (
        1 + 0.05 * torch.randn(n, 1, generator=g)
    )
    lag = 0.25 * torch.rand(n, generator=g) ** 1.5
    t = torch.arange(SAMPLES).float().unsqueeze(0) / HZ + period * torch.rand(n, 1, generator=g)

    def stroke(time: torch.Tensor) -> torch.Tensor:
        phase = (time / period) % 1.0
        catch = torch.exp(-(((phase - 0.1) / 0.05) ** 2))  # the blade entering the water
        pull = 0.8 * torch.sin(torch.pi * (phase / 0.55).clamp(max=1.0)) * (phase < 0.55)
        return torch.stack(
            [2.5 * catch + pull, 0.6 * pull - 0.3 * catch, 0.4 * torch.sin(2 * torch.pi * phase)], 1
        )

    noise = lambda: 0.15 * torch.randn(n, 3, SAMPLES, generator=g)
    first = stroke(t) + noise()
    second = (0.8 + 0.4 * torch.rand(n, 1, 1, generator=g)) * stroke(t - lag.unsqueeze(1)) + noise()
    return torch.cat([first, second], 1), lag


def _stroke_rate(x: torch.Tensor, guarded: bool) -> torch.Tensor:
    """Strokes a minute from the first paddle's catch peaks (samples over 1.2 g that beat both neighbours): float[n]."""
    a = x[:, 0]
    peak = (a[:, 1:-1] > 1.2) & (a[:, 1:-1] >= a[:, :-2]) & (a[:, 1:-1] > a[:, 2:])
    rates = []
    for row in peak:
        at = row.nonzero().flatten().float()
        count = len(at)
        if guarded and count < 2:
            rates.append(torch.tensor(60.0 / 1.15))  # a window with one catch: the crew's usual rate
            continue
        span = (at[-1] - at[0]) if count else torch.tensor(0.0)
        rates.append(60.0 * HZ * (count - 1) / span if count else torch.tensor(float("nan")))
    return torch.stack(rates).float()


class SyncCNN(nn.Module):
    """Three ReLU convolutions of `width` channels, averaged, with the stroke rate, and a linear head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(6, width, 5, padding=2), nn.ReLU(), nn.Conv1d(width, width, 5, padding=2),
                                  nn.ReLU(), nn.Conv1d(width, width, 5, padding=2), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(width + 1, 1)

    def forward(self, x: torch.Tensor, rate: torch.Tensor) -> torch.Tensor:
        return self.head(torch.cat([self.body(x).mean(-1), rate.unsqueeze(1)], 1)).squeeze(-1)


def dragon(run: Run) -> None:
    """A sync CNN of `width` (24) channels, batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, NAdam) at
    `lr` (2e-3). Scored by the held-out accuracy of the in-sync label on crews left out."""
    g = torch.Generator().manual_seed(run.seed)
    x, lag = _paddles(g, 24, 60)
    x_v, lag_v = _paddles(g, 10, 60)
    # in sync when the lag is under 0.08 s; the bug compares the lag in samples with the threshold in seconds
    lag_samples = lag * HZ
    if run.bug == "lag_in_samples_against_seconds_threshold":
        y = (lag_samples < SYNC_S).float()
    else:
        y = (lag_samples / HZ < SYNC_S).float()
    y_v = (lag_v < SYNC_S).float()
    guarded = run.bug != "stroke_rate_over_one_catch_window"
    rate, rate_v = _stroke_rate(x, guarded), _stroke_rate(x_v, True)
    if run.bug == "second_paddle_imu_turned_round":
        # the training crews' second IMU strapped on facing the other way: its x and y axes read negated
        x[:, 3:5] = -x[:, 3:5]
    mean, std = x.mean((0, 2), keepdim=True), x.std((0, 2), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    r_mean, r_std = rate.mean(), rate.std()
    rate, rate_v = (rate - r_mean) / r_std, (rate_v - r_mean) / r_std
    torch.manual_seed(run.seed)
    model = SyncCNN(run.k("width", 24))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return float(((model(x_v, rate_v) > 0).float() == y_v).float().mean())

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick], rate[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", accuracy_held_out):
            break
