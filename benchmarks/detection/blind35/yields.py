"""Yield and rate scripts of the thirty-fifth blind split: a dairy cow's next-day milk-yield forecaster, and a
semiconductor plasma etch-rate regressor on process recipes.

`milk`: four weeks of a cow's daily records from the parlour and the in-line analyser (the day's yield in kg as the
morning and evening milkings, the days in milk since calving, the feed intake, the temperature-humidity index of the
barn, and the fat and protein percentages); the yield follows a Wood lactation curve scaled by the cow's own level,
lowered on hot days and raised by the feed; the analyser is offline on some days and logs a protein of 0; the features
the day's total yield, the days in milk, the feed, the THI, standardised, and the log of the fat-to-protein ratio
(taken from the last day the analyser read); a GRU cell unrolled over the days and a linear layer on its last state;
MSE on the next day's standardised total; scored by the held-out R^2. `etch`: recipes on a plasma etcher (source and
bias RF power, chamber pressure, CF4, O2 and Ar flows, the chuck temperature), the etch rate in nm/min growing with
the fluorine the O2 frees, the ion energy and falling with the pressure; argon-only recipes run with no CF4; the
features standardised with the O2 share of the reactive gas; a ReLU MLP; MSE on the standardised rate; scored by the
held-out R^2. Bugs: the log of a fat-to-protein ratio over the analyser's zero protein; the morning milking taken for
the daily total; the days in milk not reset at calving; the target multiplied by its spread instead of divided; the
O2-to-CF4 ratio over argon-only recipes; a plateau scheduler given the R^2 in mode 'min'; the learning-rate finder's
last rate left in the optimizer; the hidden biases filled with -1 as a highway layer's gate bias.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DAYS = 28
"""Days of records a forecast looks back over."""


def _herd(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Records float[n, DAYS + 1, 7] (morning kg, evening kg, days in milk, feed kg, THI, fat %, protein %), day 0
    the oldest and the last day the one to forecast; the analyser's protein is 0 on the days it was offline, and
    `restarted` bool[n] marks windows with a calving inside them."""
    level = 0.8 + 0.4 * torch.rand(n, 1, generator=g)
    start = torch.randint(-20, 280, (n, 1), generator=g)
    dim = (start + torch.arange(DAYS + 1)).float()
    calved = dim < 1
    dim = torch.where(calved, dim + 305, dim)  # the previous lactation's last days before calving
    dim = torch.where(dim > 305, dim - 305, dim).clamp(min=1)
    dry = (start + torch.arange(DAYS + 1) < 0) & (start + torch.arange(DAYS + 1) > -60)
    wood = 3.0 * dim**0.22 * torch.exp(-0.0035 * dim)
    thi = 60 + 8 * torch.sin(torch.arange(DAYS + 1).float() / 5 + 6 * torch.rand(n, 1, generator=g))
    thi = thi + 3 * torch.randn(n, DAYS + 1, generator=g)
    feed = 18 + 4 * level + 1.5 * torch.randn(n, DAYS + 1, generator=g)
    heat = (thi - 68).clamp(min=0)
    daily = (
        level * wood * 4.2 * (1 - 0.02 * heat)
        + 0.25 * (feed - 21)
        + 0.8 * torch.randn(n, DAYS + 1, generator=g)
    )
    daily = torch.where(dry, torch.zeros_like(daily), daily.clamp(min=2))
    share = 0.55 + 0.05 * torch.randn(n, DAYS + 1, generator=g)
    fat = (
        3.9 + 0.3 * torch.randn(n, 1, generator=g) + 0.002 * dim + 0.1 * torch.randn(n, DAYS + 1, generator=g)
    )
    protein = (
        3.3
        + 0.2 * torch.randn(n, 1, generator=g)
        + 0.001 * dim
        + 0.05 * torch.randn(n, DAYS + 1, generator=g)
    )
    offline = torch.rand(n, DAYS + 1, generator=g) < 0.06
    protein = torch.where(offline, torch.zeros_like(protein), protein)
    records = torch.stack([daily * share, daily * (1 - share), dim, feed, thi, fat, protein], -1)
    return records, (start < 0).squeeze(1)


def _carry_last_reading(values: torch.Tensor) -> torch.Tensor:
    """The analyser's readings with each offline day's 0 replaced by the last day it read (the window's mean before
    the first reading)."""
    out = values.clone()
    fill = values[:, 0].where(values[:, 0] > 0, values.sum(1) / (values > 0).sum(1).clamp(min=1))
    for day in range(values.shape[1]):
        fill = torch.where(values[:, day] > 0, values[:, day], fill)
        out[:, day] = fill
    return out


def _milk_inputs(records: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The GRU's unscaled fields float[n, DAYS, 5] over the window's days (the last day's record is the target)."""
    days = records[:, :DAYS]
    total = days[..., 0] + days[..., 1]
    dim = days[..., 2]
    if bug == "days_in_milk_not_reset_at_calving":
        dim = records[:, :1, 2] + torch.arange(DAYS).float()  # counted on from the window's first day
    if bug == "fat_protein_log_with_offline_analyser":
        ratio = days[..., 5] / days[..., 6]
    else:
        ratio = days[..., 5] / _carry_last_reading(days[..., 6])
    return torch.stack([total, dim, days[..., 3], days[..., 4], ratio.log()], -1)


class YieldGRU(nn.Module):
    """A GRU cell of `hidden` unrolled over the days, a linear layer on its last state."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.cell = nn.GRUCell(5, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.new_zeros(x.shape[0], self.cell.hidden_size)
        for day in range(x.shape[1]):
            h = self.cell(x[:, day], h)
        return self.out(h).squeeze(-1)


def milk(run: Run) -> None:
    """A yield GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (3e-3). Scored by the held-out R^2 of the next day's total."""
    g = torch.Generator().manual_seed(run.seed)
    records, _ = _herd(g, 1200)
    records_v, _ = _herd(g, 500)
    raw, raw_v = _milk_inputs(records, run.bug), _milk_inputs(records_v, None)
    mean, std = raw.flatten(0, 1).mean(0), raw.flatten(0, 1).std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    total = records[:, DAYS, 0] + records[:, DAYS, 1]
    total_v = records_v[:, DAYS, 0] + records_v[:, DAYS, 1]
    if run.bug == "morning_milking_as_daily_target":
        total = records[:, DAYS, 0]  # the parlour export's first yield column: the morning milking
    y_mean, y_std = total.mean(), total.std()
    y, y_v = (total - y_mean) / y_std, (total_v - y_mean) / y_std
    if run.bug == "target_multiplied_by_std_not_divided":
        y = (total - y_mean) * y_std  # the scaler's inverse transform applied where its transform was meant
        y_v = (total_v - y_mean) * y_std
    torch.manual_seed(run.seed)
    model = YieldGRU(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


def _recipes(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Recipes float[n, 7] (source W, bias W, pressure mTorr, CF4, O2, Ar sccm, chuck C) and the etch rate nm/min."""
    source = 300 + 1200 * torch.rand(n, generator=g)
    bias = 50 + 450 * torch.rand(n, generator=g)
    pressure = 5 + 75 * torch.rand(n, generator=g)
    argon_only = torch.rand(n, generator=g) < 0.12
    cf4 = torch.where(argon_only, torch.zeros(n), 20 + 80 * torch.rand(n, generator=g))
    o2 = torch.where(argon_only, torch.zeros(n), 30 * torch.rand(n, generator=g))
    ar = 20 + 100 * torch.rand(n, generator=g)
    chuck = 20 + 40 * torch.rand(n, generator=g)
    share = o2 / (cf4 + o2).clamp(min=1e-6)
    fluorine = cf4 * (1 + 2.5 * share * torch.exp(-4 * share)) * source / 1000
    ions = (bias / 200).sqrt() * source / 900
    chemical = 2.2 * fluorine / (1 + pressure / 40) * torch.exp((chuck - 40) / 60)
    physical = 35 * ions * (ar / 60 + 0.4)
    rate = chemical * (0.6 + 0.6 * ions) + physical + 8 * torch.randn(n, generator=g)
    return torch.stack([source, bias, pressure, cf4, o2, ar, chuck], 1), rate


def _etch_features(recipes: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The recipe with the oxygen's part of the reactive gas, float[n, 8]."""
    cf4, o2 = recipes[:, 3], recipes[:, 4]
    if bug == "o2_to_cf4_ratio_over_argon_recipes":
        mix = o2 / cf4
    else:
        mix = o2 / (cf4 + o2).clamp(min=1e-6)
    return torch.cat([recipes, mix[:, None]], 1)


class EtchMLP(nn.Module):
    """A ReLU MLP of `hidden` three times over the recipe's features, one rate out."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


FINDER_LAST_RATE = 1.0
"""The rate a learning-rate range test ends on, its sweep's top."""


def etch(run: Run) -> None:
    """An etch MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, Adagrad, NAdam) at `lr`
    (2e-3), the rate halved by a plateau scheduler on the held-out R^2 checked every 5 steps. Scored by the held-out
    R^2 of the rate."""
    g = torch.Generator().manual_seed(run.seed)
    recipes, rate = _recipes(g, 1500)
    recipes_v, rate_v = _recipes(g, 600)
    raw, raw_v = _etch_features(recipes, run.bug), _etch_features(recipes_v, None)
    mean, std = raw.mean(0), raw.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    y_mean, y_std = rate.mean(), rate.std()
    y, y_v = (rate - y_mean) / y_std, (rate_v - y_mean) / y_std
    torch.manual_seed(run.seed)
    model = EtchMLP(run.k("hidden", 64))
    if run.bug == "hidden_biases_filled_like_highway_gates":
        for layer in model.net[:-1]:
            if isinstance(layer, nn.Linear):
                layer.bias.data.fill_(-1.0)  # the transform-gate bias of the highway layers this MLP replaced
    opt = optimizers.registered(run, model, 2e-3)
    if run.bug == "lr_finder_rate_left_in_optimizer":
        for group in opt.param_groups:
            group["lr"] = FINDER_LAST_RATE  # the range test's sweep ran on this optimizer and was not undone
    mode = "min" if run.bug == "plateau_scheduler_mode_min_on_r2" else "max"
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode=mode, factor=0.5, patience=2)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 4:
            with torch.no_grad():
                plateau.step(r2_held_out())
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
