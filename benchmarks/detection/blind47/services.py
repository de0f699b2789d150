"""Service scripts of the forty-seventh blind split: a ferry passenger-count forecaster, and a basketball shot-make
probability model from tracking features.

`ferry`: a year of daily sailings on island routes (each route's own level, a weekly pattern with busy weekends, the
summer season, the wind, sailings cancelled in a gale); windows of the last 14 days' counts and load factors, the
day's weekday, season and wind forecast, and the bookings taken two days ahead; standardised; a ReLU MLP of two hidden
layers giving the log rate over the route's recent level; Poisson NLL; scored by the held-out R^2 of the log count on
routes left out. `shots`: shots from a season's player tracking (distance and angle to the basket, the closest
defender's distance, the shot clock, dribbles before the shot, catch-and-shoot, the shooter's previous-season
percentage), a make by a logistic law of them and the shooter's own touch; standardised; a ReLU MLP of two hidden
layers; BCE; scored by the held-out AUC on players left out. Bugs: yesterday's load factor over a cancelled sailing's
zero seats; the bookings as of departure for those taken ahead; the route's level left out of the rate; the return
sailing's counts for the outbound's; the learning rate read at the range test's lowest loss; the shooter's
percentage in the game counting this shot; fouled misses recorded as makes; second-half distances to the wrong basket.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

LAGS = 14
WEEK = torch.tensor([0.85, 0.8, 0.8, 0.9, 1.15, 1.45, 1.3])
"""Each weekday's share of an outbound route's average day (Monday first)."""
SEATS = 1.8
"""Seats offered per passenger of a route's average day (0 on a cancelled day)."""


def _routes(g: torch.Generator, routes: int, days: int) -> dict[str, torch.Tensor]:
    """Each route's daily outbound and return counts, bookings taken two days ahead, seats offered, weekday and wind
    (float[routes, days] each)."""
    level = 150 * torch.exp(1.8 * torch.rand(routes, 1, generator=g))
    t = torch.arange(days).float().unsqueeze(0)
    weekday = (t + torch.randint(0, 7, (routes, 1), generator=g)) % 7
    season = 1 + 0.45 * torch.sin(2 * math.pi * (t + 80 * torch.rand(routes, 1, generator=g)) / 365)
    wind = (9 + 5 * torch.randn(routes, days, generator=g)).clamp(min=0)
    sailing = (wind < 21).float()
    seats = SEATS * level * sailing
    rate = level * season * torch.exp(-0.025 * wind)
    out = torch.poisson(rate * WEEK[weekday.long()], generator=g) * sailing
    # the weekend trippers come home a day later
    back = torch.poisson(rate * WEEK[((weekday - 1) % 7).long()], generator=g) * sailing
    booked = torch.binomial(out, torch.full_like(out, 0.45), generator=g)
    return {"out": out, "back": back, "booked": booked, "seats": seats, "weekday": weekday, "wind": wind}


def _windows(r: dict[str, torch.Tensor], bug: str | None, held_out: bool) -> tuple[torch.Tensor, torch.Tensor,
                                                                                   torch.Tensor]:  # fmt: skip
    """Features float[n, 2 * LAGS + 11], the route's recent log level float[n] and the day's count float[n]."""
    out = r["out"]
    routes, days = out.shape
    xs, levels, ys = [], [], []
    target = r["back"] if bug == "return_sailing_counts_as_target" and not held_out else out
    for day in range(LAGS, days):
        past = out[:, day - LAGS : day]
        level = torch.log1p(past.mean(1))
        seats = r["seats"][:, day - LAGS : day]
        if bug == "cancelled_sailings_load_factor" and not held_out:
            load = past / seats  # a cancelled day: 0 passengers over 0 seats
        else:
            load = torch.where(seats > 0, past / seats.clamp(min=1), torch.zeros_like(past))
        if bug == "bookings_snapshot_taken_at_departure" and not held_out:
            booked = out[:, day]  # the snapshot taken as the ship sailed: everyone aboard had booked
        else:
            booked = r["booked"][:, day]
        weekday = F.one_hot(r["weekday"][:, day].long(), 7).float()
        angle = 2 * math.pi * day / 365
        season = torch.tensor([math.sin(angle), math.cos(angle)]).expand(routes, 2)
        x = torch.cat([torch.log1p(past) - level.unsqueeze(1), load, weekday, season,
                       r["wind"][:, day : day + 1], (torch.log1p(booked) - level).unsqueeze(1)], 1)  # fmt: skip
        xs.append(x)
        levels.append(level)
        ys.append(target[:, day])
    return torch.cat(xs), torch.cat(levels), torch.cat(ys)


class FerryMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units giving a log rate."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def ferry(run: Run) -> None:
    """A count MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (1e-3). Scored by the held-out R^2 of log(1 + count) on routes left out."""
    g = torch.Generator().manual_seed(run.seed)
    x, level, y = _windows(_routes(g, 12, 120), run.bug, held_out=False)
    x_v, level_v, y_v = _windows(_routes(g, 8, 60), None, held_out=True)
    finite = torch.isfinite(x).all(1)
    mean, std = x[finite].mean(0), x[finite].std(0).clamp(min=1e-6)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = FerryMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)
    # the rate is the route's recent level times the net's factor (the bug: the net alone, from zero)
    offset, offset_v = level, level_v
    if run.bug == "route_level_offset_left_out":
        offset, offset_v = torch.zeros_like(level), torch.zeros_like(level_v)

    def r2_held_out() -> float:
        return r2(torch.log1p(torch.exp(model(x_v) + offset_v)), torch.log1p(y_v))

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.poisson_nll_loss(model(x[pick]) + offset[pick], y[pick], log_input=True)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


def _shots(
    g: torch.Generator, players: int, per_player: int, bug: str | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Shot features float[n, 8] (distance in ft, angle in rad, closest defender in ft, shot clock in s, dribbles,
    catch-and-shoot, previous-season percentage, the shooter's percentage in the game so far) and makes float[n]."""
    n = players * per_player
    player = torch.arange(players).repeat_interleave(per_player)
    touch = 0.5 * torch.randn(players, generator=g)
    previous = torch.sigmoid(-0.1 + touch + 0.3 * torch.randn(players, generator=g))[player]
    dist = 2 + 26 * torch.rand(n, generator=g) ** 0.8
    second_half = torch.rand(n, generator=g) < 0.5
    angle = (torch.rand(n, generator=g) - 0.5) * math.pi
    defender = (2 + 3 * torch.rand(n, generator=g) + 0.1 * dist).clamp(max=12)
    clock = 24 * torch.rand(n, generator=g)
    dribbles = torch.poisson(torch.full((n,), 2.0), generator=g)
    catch = (dribbles == 0).float()
    logit = (1.4 - 0.11 * dist + 0.25 * (defender - 5).clamp(-3, 3) - 0.2 * (clock < 3).float()
             + 0.35 * catch - 0.08 * dribbles + 1.5 * touch[player] - 0.15 * angle.abs())  # fmt: skip
    made = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    defender_seen = defender.clone()
    untracked = torch.rand(n, generator=g) < 0.08
    defender_seen[untracked] = float("nan")
    # the shooter's makes so far in the game (about 15 shots a game)
    order = torch.arange(n) % 15
    so_far = torch.zeros(n)
    for k in range(n):
        start = k - int(order[k])
        end = k + 1 if bug == "game_fg_pct_counts_this_shot" else k
        so_far[k] = made[start:end].mean() if end > start else previous[k]
    if bug == "fouled_misses_recorded_as_makes":
        # a miss on which the shooter was fouled shows points on the play-by-play
        fouled = (torch.rand(n, generator=g) < 0.35 * (defender < 4).float()) & (made == 0)
        made = torch.where(fouled, torch.ones_like(made), made)
    shown = dist.clone()
    if bug == "second_half_distance_to_wrong_basket":  # the teams change ends; x not mirrored after half time
        shown = torch.where(
            second_half, (94 - 5.25 - dist * torch.cos(angle)).hypot(dist * torch.sin(angle)), dist
        )
    x = torch.stack([shown, angle, defender_seen, clock, dribbles, catch, previous, so_far], 1)
    return x, made


def shots(run: Run) -> None:
    """A make MLP of `hidden` (64), batches of `batch` (128), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at `lr`
    (1e-3). Scored by the held-out AUC of the make on players left out."""
    g = torch.Generator().manual_seed(run.seed)
    x, made = _shots(g, 120, 30, run.bug)
    x_v, made_v = _shots(g, 60, 30, None)
    mean, std = torch.nanmean(x, 0), torch.tensor([float(c[~c.isnan()].std()) for c in x.T]).clamp(min=1e-6)
    # a defender the tracking lost: the mean distance
    x[:, 2] = torch.where(x[:, 2].isnan(), mean[2], x[:, 2])
    x_v[:, 2] = torch.where(x_v[:, 2].isnan(), mean[2], x_v[:, 2])
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = ShotMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    if run.bug == "lr_from_range_test_loss_minimum":  # the range test's lowest loss, not its steepest fall
        for group in opt.param_groups:
            group["lr"] = 2.0
    batch = run.k("batch", 128)

    def auc_held_out() -> float:
        return auc(model(x_v), made_v)

    for step in range(run.steps):
        pick = run.indices(len(made), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), made[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


class ShotMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units giving the make's logit."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)
