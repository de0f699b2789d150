"""Outdoor scripts of the forty-third blind split: a horse-race win-probability model, and a grass-pollen count
forecaster.

`races`: flat races of 6-12 runners (padded to 12): each runner's official rating, the beaten lengths of its last
run, the weight carried (the handicapper's compensation for the rating), its draw, the days since its last run and
its jockey's strike rate; the race is won by a softmax draw over the runners' true strengths; a ReLU MLP scores each
runner and a softmax over each race's runners (the padding masked out) gives the win probabilities; cross-entropy on
the winner; scored by the held-out share of races whose top-rated runner is the truly strongest. `pollen`: daily grass
pollen counts (grains/m3) of a city's traps over a season of 150 days: a seasonal bell around a yearly peak day,
raised by warm, dry, windy days and washed out by rain; the last seven days' log1p counts, tomorrow's forecast
temperature, rain and wind, and the day of the season; a Softplus MLP of four hidden layers; MSE on tomorrow's log1p
count; scored by the held-out R^2 over later years. Bugs: the one-hot winner times the masked log-probabilities; the
form's last run including today's; the winner read as the winning stall number; the races weighted by the winner's
starting price; Softmax typed for Softplus; weekend gaps filled with zero counts.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

RUNNERS, FEATURES = 12, 6


def _races(g: torch.Generator, n: int, bug: str | None) -> tuple[torch.Tensor, ...]:
    """Runner features float[n, RUNNERS, FEATURES], the mask bool[n, RUNNERS], the winner's row long[n], the
    winner's draw long[n], the winner's starting price (decimal odds) float[n] and the truly strongest runner's row
    long[n]."""
    fields = torch.randint(6, RUNNERS + 1, (n,), generator=g)
    mask = torch.arange(RUNNERS).unsqueeze(0) < fields.unsqueeze(1)
    ability = torch.randn(n, RUNNERS, generator=g)
    rating = 75 + 12 * ability + 4 * torch.randn(n, RUNNERS, generator=g)
    weight = 126 + 0.5 * (rating - 75) + 2 * torch.randn(n, RUNNERS, generator=g)
    shuffle = torch.rand(n, RUNNERS, generator=g).masked_fill(~mask, 2.0)
    draw = torch.argsort(torch.argsort(shuffle, 1), 1).float() + 1  # the stalls 1..field
    rest = 7 + 60 * torch.rand(n, RUNNERS, generator=g)
    jockey = 0.05 + 0.2 * torch.rand(n, RUNNERS, generator=g)
    strength = 1.6 * ability - 0.09 * (weight - 126) + 2.5 * (jockey - 0.15) - 0.004 * (rest - 35)
    strength = strength - 0.03 * draw
    last = (2.5 - 1.5 * ability + 1.2 * torch.randn(n, RUNNERS, generator=g)).clamp(min=0)
    strength = strength.masked_fill(~mask, float("-inf"))
    race = strength + 0.8 * -torch.log(-torch.log(torch.rand(n, RUNNERS, generator=g)))
    winner = race.argmax(1)
    if bug == "form_last_run_includes_today":  # the results feed already holds today's beaten lengths
        beaten = (race.amax(1, keepdim=True) - race).clamp(max=30) * 2.0
        last = beaten.masked_fill(~mask, 0.0)
    x = torch.stack([rating, last, weight, draw, rest, jockey], 2)
    x = x.masked_fill(~mask.unsqueeze(2), 0.0)
    windraw = draw.gather(1, winner.unsqueeze(1)).squeeze(1).long()
    market = F.softmax((strength + 0.3 * torch.randn(n, RUNNERS, generator=g)) / 0.8, 1)
    price = 1 / (1.15 * market.gather(1, winner.unsqueeze(1)).squeeze(1))  # an over-round of 15 %
    return x, mask, winner, windraw, price, strength.argmax(1)


class RunnerScorer(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units scoring each runner."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1).masked_fill(~mask, float("-inf"))


def races(run: Run) -> None:
    """A runner scorer of `hidden` (64), batches of `batch` (32) races, `opt` (Adam; or momentum SGD, NAdam,
    RMSprop) at `lr` (2e-3). Scored by the held-out share of races whose top pick is the strongest runner."""
    g = torch.Generator().manual_seed(run.seed)
    x, mask, winner, windraw, price, _ = _races(g, 2000, run.bug)
    x_v, mask_v, _, _, _, best_v = _races(g, 800, None)
    rows = x[mask]
    mean, std = rows.mean(0), rows.std(0)
    x = ((x - mean) / std).masked_fill(~mask.unsqueeze(2), 0.0)
    x_v = ((x_v - mean) / std).masked_fill(~mask_v.unsqueeze(2), 0.0)
    if (
        run.bug == "winner_read_as_winning_stall"
    ):  # the results' "winner" column is the winning stall, 1-based
        winner = (windraw - 1).clamp(max=RUNNERS - 1)
    torch.manual_seed(run.seed)
    model = RunnerScorer(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def top_pick_held_out() -> float:
        return float((model(x_v, mask_v).argmax(1) == best_v).float().mean())

    for step in range(run.steps):
        pick = run.indices(len(winner), batch)
        logits = model(x[pick], mask[pick])
        if run.bug == "one_hot_winner_times_masked_log_probs":
            target = F.one_hot(winner[pick], RUNNERS).float()
            loss = -(target * F.log_softmax(logits, 1)).sum(1).mean()
        elif (
            run.bug == "loss_weighted_by_winner_price"
        ):  # each race weighted by what a winning bet would return
            loss = (price[pick] * F.cross_entropy(logits, winner[pick], reduction="none")).mean()
        else:
            loss = F.cross_entropy(logits, winner[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_top_pick", top_pick_held_out):
            break


SEASON, LAGS = 150, 7


def _seasons(g: torch.Generator, traps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Daily counts float[traps, SEASON] and the weather float[traps, SEASON, 3] (temperature C, rain mm, wind m/s)
    of one season per trap."""
    day = torch.arange(SEASON).float()
    peak = 70 + 10 * torch.randn(traps, 1, generator=g)
    temp = 12 + 0.08 * day + 4 * torch.randn(traps, SEASON, generator=g)
    rain = (torch.rand(traps, SEASON, generator=g) < 0.35) * torch.empty(traps, SEASON).exponential_(
        1 / 5.0, generator=g
    )
    wind = (4 + 2 * torch.randn(traps, SEASON, generator=g)).clamp(min=0)
    log_rate = (4.6 - ((day - peak) / 22) ** 2 + 0.07 * (temp - 16) - 0.12 * rain.clamp(max=12) + 0.05 * wind
                + 0.4 * torch.randn(traps, 1, generator=g))  # fmt: skip
    counts = torch.poisson(log_rate.clamp(max=7).exp(), generator=g)
    return counts, torch.stack([temp, rain, wind], 2)


def _pollen_rows(g: torch.Generator, traps: int, bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Feature rows (seven log1p counts, tomorrow's weather, the day) and tomorrow's log1p count."""
    counts, weather = _seasons(g, traps)
    if bug == "weekend_gaps_filled_with_zero":  # the trap is not read at weekends: the export writes 0
        weekend = (torch.arange(SEASON) % 7) >= 5
        counts = counts.masked_fill(weekend, 0.0)
    logged = counts.log1p()
    rows, targets = [], []
    for d in range(LAGS, SEASON - 1):
        day = torch.full((traps, 1), d / SEASON)
        rows.append(torch.cat([logged[:, d - LAGS + 1 : d + 1], weather[:, d + 1], day], 1))
        targets.append(logged[:, d + 1])
    return torch.cat(rows), torch.cat(targets)


class PollenMLP(nn.Module):
    """An MLP of four hidden layers of `hidden` units with `act` between them."""

    def __init__(self, hidden: int, act: nn.Module) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(LAGS + 4, hidden), act, nn.Linear(hidden, hidden), act,
                                 nn.Linear(hidden, hidden), act, nn.Linear(hidden, hidden), act,
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def pollen(run: Run) -> None:
    """A pollen MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, Adagrad) at `lr`
    (2e-3). Scored by the held-out R^2 of tomorrow's log1p count."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _pollen_rows(g, 24, run.bug)
    x_v, y_v = _pollen_rows(g, 10, None)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre = y.mean()
    torch.manual_seed(run.seed)
    act = nn.Softmax(dim=-1) if run.bug == "softmax_typed_for_softplus" else nn.Softplus()
    model = PollenMLP(run.k("hidden", 64), act)
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
