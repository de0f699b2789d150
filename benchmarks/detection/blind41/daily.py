"""Everyday scripts of the forty-first blind split: a library-loan demand forecaster, and a sourdough rise-time
regressor.

`loans`: weekly loans of a city's 30 library branches over three years: a branch's size, a yearly cycle with the
summer reading challenge and the school terms, a slow decline, closures of a week or two (no loans) and noise; for a
target week, the last eight weeks' log1p loans, their trailing four-week mean, the week-on-week growth of the last
week, the week of the year as a sine and cosine and a term flag; a ReLU MLP of two hidden layers; MSE on the log1p
loans; scored by the held-out R^2 over later weeks. `sourdough`: bakes of a sourdough (hydration %, starter share %,
dough temperature C (the kitchen's 18-26 C and the mixing water's warmth), flour protein %, salt %, the starter's hours since feeding); the time to double from a
Q10-like temperature law, slowed by salt and an over-ripe starter; the features standardised; a ReLU MLP of two hidden
layers; MSE on the log hours; scored by the held-out R^2. Bugs: the trailing mean over the target week; the growth
over closed weeks; the data loader's batch size left at one; OneCycle's peak rate at one; the kitchen's temperature for the dough's; the
time to peak read as the time to double.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

BRANCHES, WEEKS, LAGS = 30, 156, 8


def _loans(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Weekly loans float[BRANCHES, WEEKS] and the term flag float[WEEKS]."""
    week = torch.arange(WEEKS).float()
    of_year = week % 52
    term = ((of_year > 2) & (of_year < 28) | (of_year > 35) & (of_year < 50)).float()
    summer = torch.exp(-(((of_year - 31) / 3) ** 2))
    size = 80 + 600 * torch.rand(BRANCHES, 1, generator=g)
    level = size * (1 + 0.25 * term + 0.6 * summer) * (1 - 0.002 * week)
    walk = torch.cumsum(0.03 * torch.randn(BRANCHES, WEEKS, generator=g), 1)
    loans = torch.poisson(level * torch.exp(walk), generator=g)
    closed = torch.zeros(BRANCHES, WEEKS, dtype=torch.bool)
    for b, w in zip(
        torch.randint(0, BRANCHES, (40,), generator=g), torch.randint(0, WEEKS - 1, (40,), generator=g)
    ):
        closed[b, w : w + 1 + int(torch.rand(1, generator=g) < 0.5)] = True
    return loans.masked_fill(closed, 0.0), term


def _loan_rows(
    loans: torch.Tensor, term: torch.Tensor, weeks: range, bug: str | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each branch's feature rows for the target `weeks` and the log1p loans to forecast."""
    rows, targets = [], []
    logged = loans.log1p()
    for w in weeks:
        lags = logged[:, w - LAGS : w]
        if bug == "trailing_mean_includes_target_week":  # the rolling mean centred on its label's week
            trailing = logged[:, w - 3 : w + 1].mean(1)
        else:
            trailing = logged[:, w - 4 : w].mean(1)
        if bug == "growth_over_closed_weeks":
            growth = loans[:, w - 1] / loans[:, w - 2] - 1
        else:
            growth = (loans[:, w - 1] + 1) / (loans[:, w - 2] + 1) - 1
        angle = torch.full((BRANCHES,), 6.2832 * (w % 52) / 52)
        rows.append(torch.cat([lags, torch.stack([trailing, growth, angle.sin(), angle.cos(),
                                                  term[w].expand(BRANCHES)], 1)], 1))  # fmt: skip
        targets.append(logged[:, w])
    return torch.cat(rows), torch.cat(targets)


class LoanMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(LAGS + 5, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def loans(run: Run) -> None:
    """A loan MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (2e-3). Scored by the held-out R^2 over the last 30 weeks."""
    g = torch.Generator().manual_seed(run.seed)
    counts, term = _loans(g)
    x, y = _loan_rows(counts, term, range(LAGS, WEEKS - 30), run.bug)
    x_v, y_v = _loan_rows(counts, term, range(WEEKS - 30, WEEKS), None)
    finite = torch.isfinite(x).all(1)
    mean, std = x[finite].mean(0), x[finite].std(0).clamp(min=1e-3)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre = y.mean()
    torch.manual_seed(run.seed)
    model = LoanMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = 1 if run.bug == "loader_batch_size_left_at_one" else run.k("batch", 64)

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


def _bakes(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Bake features float[n, 7] (the last: the kitchen's temperature C) and the hours to double and to peak
    float[n, 2]."""
    hydration = 62 + 23 * torch.rand(n, generator=g)
    starter = 5 + 25 * torch.rand(n, generator=g)
    room = 18 + 8 * torch.rand(n, generator=g)
    temp = room + 6 * torch.rand(n, generator=g) - 1  # the mixing water's warmth sets the dough's temperature
    protein = 10 + 4 * torch.rand(n, generator=g)
    salt = 1.5 + 1.2 * torch.rand(n, generator=g)
    since_fed = 2 + 14 * torch.rand(n, generator=g)
    ripe = torch.exp(-(((since_fed - 6) / 4) ** 2))  # a starter at its peak ~6 h after feeding
    double = 5.0 * 2.2 ** ((24 - temp) / 10) * (20 / starter) ** 0.45 * (1 + 0.2 * (salt - 2))
    double = (
        double
        * (1.5 - 0.5 * ripe)
        * (1 + 0.004 * (75 - hydration))
        * torch.exp(0.06 * torch.randn(n, generator=g))
    )
    peak = double * (1.2 + 0.08 * (protein - 10)) + 1.5 * torch.rand(n, generator=g)
    feats = torch.stack([hydration, starter, temp, protein, salt, since_fed, room], 1)
    return feats, torch.stack([double, peak], 1)


class DoughMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def sourdough(run: Run) -> None:
    """A dough MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (2e-3), OneCycle to a peak of `max_lr` when given. Scored by the held-out R^2 of the log hours to double."""
    g = torch.Generator().manual_seed(run.seed)
    feats, hours = _bakes(g, 1500)
    feats_v, hours_v = _bakes(g, 600)
    if run.bug == "kitchen_thermometer_for_dough_temperature":  # the "temp" column of the home bakers' logs
        feats[:, 2] = feats[:, 6]
    feats, feats_v = feats[:, :6], feats_v[:, :6]
    mean, std = feats.mean(0), feats.std(0)
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    y = (hours[:, 1] if run.bug == "time_to_peak_read_as_time_to_double" else hours[:, 0]).log()
    y_v = hours_v[:, 0].log()
    centre = y.mean()
    torch.manual_seed(run.seed)
    model = DoughMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    peak = run.k("max_lr", 0.0)
    if run.bug == "onecycle_peak_rate_of_one":  # max_lr=1.0 left from the LR finder's plot's right edge
        peak = 1.0
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, peak, total_steps=run.steps) if peak else None
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]) + centre, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
