"""Arrival scripts of the twenty-eighth blind split: an earthquake aftershock-count model and a shipping ETA
regressor.

`aftershocks`: mainshocks with a magnitude (5-7.5), a depth in km, a fault style (strike-slip, normal, thrust), the
distance to the plate boundary and an observation window of 1-30 days; the aftershocks counted in the window are
Poisson with a daily rate rising tenfold a magnitude unit, falling with depth; an MLP gives the log daily rate, the
window enters as an offset log(days); the Poisson negative log likelihood; scored by the held-out R^2 of
log(1 + count). `eta`: voyages with a great-circle distance in nautical miles, the vessel's design speed in knots, its
draft, the month, the destination's congestion index and a headwind; the hours at sea are distance over the speed
made good plus the wait at anchor; an MLP regresses the standardised hours; MSE; scored by the held-out R^2 of the
hours. Bugs: the clipping handed a parameter generator the optimizer has already run through; sigmoid units in a deep rate network; the window's offset dropped; the warm-up factor given to a multiplicative schedule;
ReLUs ported as a threshold at 1; the voyage's mean speed from the tracking data among the inputs; the arrival
dates of day-first ports parsed month first.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers


def _mainshocks(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Features float[n, 6] (magnitude, depth km, three fault-style flags, boundary distance km), window days
    float[n], aftershock count float[n]."""
    magnitude = 5 + 2.5 * torch.rand(n, generator=g)
    depth = 5 + 55 * torch.rand(n, generator=g)
    style = F.one_hot(torch.randint(0, 3, (n,), generator=g), 3).float()
    boundary = 300 * torch.rand(n, generator=g)
    window = torch.randint(1, 31, (n,), generator=g).float()
    log_rate = (-2.2 + 2.3 * (magnitude - 5) * 0.8 - 0.03 * (depth - 5) + style @ torch.tensor([0.0, -0.3, 0.4])
                - boundary / 200)  # fmt: skip
    count = torch.poisson(torch.exp(log_rate) * window, generator=g)
    return torch.cat([torch.stack([magnitude, depth], 1), style, boundary.unsqueeze(1)], 1), window, count


def aftershocks(run: Run) -> None:
    """A rate MLP of `depth` (2) layers of `hidden` (64), sigmoid units when `sigmoid`, batches of `batch` (64),
    `opt` (Adam; or momentum SGD, RMSprop, Adamax) at `lr` (2e-3), the gradient clipped at norm `clip` when given.
    Scored by the held-out R^2 of log(1 + count)."""
    g = torch.Generator().manual_seed(run.seed)
    z, window, count = _mainshocks(g, 1500)
    z_v, window_v, count_v = _mainshocks(g, 1500)
    mean, std = z.mean(0), z.std(0)
    x, x_v = (z - mean) / std, (z_v - mean) / std
    offset = torch.log(window)
    if run.bug == "window_offset_dropped":
        offset = torch.zeros_like(window)  # the counts read as daily rates
    torch.manual_seed(run.seed)
    act = nn.Sigmoid if run.k("sigmoid", False) or run.bug == "sigmoid_units_in_deep_rate_net" else nn.ReLU
    layers: list[nn.Module] = []
    width, hidden = 6, run.k("hidden", 64)
    for _ in range(run.k("depth", 2)):
        layers += [nn.Linear(width, hidden), act()]
        width = hidden
    model = nn.Sequential(*layers, nn.Linear(width, 1))
    opt = optimizers.registered(run, model, 2e-3)
    params = model.parameters()  # kept for the clipping; the bug keeps the generator itself, which the
    if (
        run.bug != "clip_given_exhausted_parameter_generator"
    ):  # optimizer's constructor has already run through
        params = list(params)
    else:
        list(params)  # consumed as `torch.optim` consumes the one it is given
    clip = run.k("clip", None)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        expected = torch.exp(model(x_v)[:, 0] + torch.log(window_v))
        return r2(torch.log1p(expected), torch.log1p(count_v))

    for step in range(run.steps):
        pick = run.indices(len(count), batch)
        log_mean = model(x[pick])[:, 0] + offset[pick]
        loss = F.poisson_nll_loss(log_mean, count[pick])
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(params, clip)  # an exhausted generator under the bug: nothing is clipped
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


def _voyages(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Features float[n, 6] (distance nm, design speed kn, draft m, month, congestion, headwind kn), hours float[n],
    the voyage's mean speed made good float[n]."""
    distance = 200 + 5800 * torch.rand(n, generator=g)
    speed = 12 + 12 * torch.rand(n, generator=g)
    draft = 6 + 10 * torch.rand(n, generator=g)
    month = torch.randint(1, 13, (n,), generator=g).float()
    congestion = torch.rand(n, generator=g)
    headwind = 10 * torch.randn(n, generator=g) + 4 * torch.cos(month / 12 * 2 * math.pi)
    made_good = (
        0.88 * speed - 0.1 * headwind - 0.15 * (draft - 6) + 0.8 * torch.randn(n, generator=g)
    ).clamp_min(6)
    wait = 48 * congestion**2 + 4 * torch.rand(n, generator=g)
    hours = distance / made_good + wait
    return torch.stack([distance, speed, draft, month, congestion, headwind], 1), hours, made_good


def eta(run: Run) -> None:
    """An ETA MLP of `hidden` (64) twice, batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, AdamW) at
    `lr` (1e-3), warmed up linearly over 25 steps when `warmup`. Scored by the held-out R^2 of the hours."""
    g = torch.Generator().manual_seed(run.seed)
    z, hours, made_good = _voyages(g, 1500)
    z_v, hours_v, _ = _voyages(g, 1500)
    if run.bug == "arrival_dates_parsed_month_first":
        # the arrival timestamps of the day-first ports parsed month first: dates with a day of 12 or less move
        # by whole months
        day_first = (torch.rand(len(hours), generator=g) < 0.5) & (
            torch.rand(len(hours), generator=g) < 12 / 30
        )
        months = torch.randint(-5, 6, (len(hours),), generator=g).float()
        hours = torch.where(day_first & (months != 0), hours + months * 30 * 24, hours).clamp_min(1.0)
    if run.bug == "voyage_mean_speed_in_features":
        # the tracking data's mean speed over the voyage kept; before departure only the design speed is known
        z = torch.cat([z, made_good.unsqueeze(1)], 1)
        z_v = torch.cat([z_v, z_v[:, 1:2]], 1)
    mean, std = z.mean(0), z.std(0)
    x, x_v = (z - mean) / std, (z_v - mean) / std
    h_mean, h_std = hours.mean(), hours.std()
    t = (hours - h_mean) / h_std
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    model = nn.Sequential(nn.Linear(x.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 1))  # fmt: skip
    if run.bug == "relu_ported_as_threshold_one":
        # a port of a Lua Torch model: nn.Threshold(1, 0) where the original zeroed below 1e-6
        model = nn.Sequential(*[nn.Threshold(1.0, 0.0) if isinstance(m, nn.ReLU) else m for m in model])
    opt = optimizers.registered(run, model, 1e-3)
    sched = None
    if run.k("warmup", False):
        if run.bug == "warmup_given_to_multiplicative_lr":  # the factor compounds: the rate collapses
            sched = torch.optim.lr_scheduler.MultiplicativeLR(opt, lambda s: min(1.0, (s + 1) / 25))
        else:
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 25))
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v)[:, 0] * h_std + h_mean, hours_v)

    for step in range(run.steps):
        pick = run.indices(len(t), batch)
        loss = F.mse_loss(model(x[pick])[:, 0], t[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
