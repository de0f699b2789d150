"""Land scripts of the fifty-first blind split: a peat-bog water-table forecaster from dipwell and weather logs, and a
potato-store sprouting classifier from CO2 and temperature logs.

`peat`: 30 days of a bog's daily rain, evapotranspiration and air temperature (standardised) and its water table
(cm below the surface); the mean water table of the next 7 days by a GRU cell unrolled by hand over the days, the
last state read by a linear head; MSE on the standardised depth; scored by the held-out R^2 on other dipwells.
`potato`: 21 days of a store's daily logs (the pile temperature in C, CO2 in ppm, relative humidity in %, the
ventilation hours) and the store's variety dormancy and sprout-suppressant dose in ppm, flattened and standardised;
a ReLU MLP of three hidden layers; BCE with logits; scored by the held-out AUC on other stores. Bugs: the target read
from the rain column; the forecast week's observed rain kept in the training windows; the hidden state detached every
day; missing temperatures filled with a mean taken over the gaps; the suppressant dose left in ppm; the inspection's
days-to-sprout column kept; the CO2 taken as its excess over outdoor air in ppm.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DAYS, AHEAD = 30, 7


def _dipwells(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Windows float[n, DAYS, 5] (rain mm, ET mm, air temperature C, the water table in cm below the surface on
    the weekly reading days and 0 between, whether it was read), the next week's rain float[n, AHEAD] and the next week's mean water table float[n]."""
    total = DAYS + AHEAD
    season = torch.rand(n, 1, generator=g) * 6.28
    t = torch.arange(total).float().unsqueeze(0)
    temp = 10 + 7 * torch.sin(season + t / 58) + 2 * torch.randn(n, total, generator=g)
    wet = torch.rand(n, total, generator=g) < 0.45
    rain = torch.where(wet, torch.empty(n, total).exponential_(1 / 6, generator=g), torch.zeros(n, total))
    et = (0.4 + 0.18 * temp.clamp(min=0)) * (0.8 + 0.4 * torch.rand(n, total, generator=g))
    drain = 0.04 + 0.05 * torch.rand(n, 1, generator=g)  # the bog's drainage: how fast the table falls back
    level = 5 + 30 * torch.rand(n, generator=g)
    table = []
    for d in range(total):
        level = (level - 0.9 * rain[:, d] + 0.8 * et[:, d] + drain[:, 0] * (25 - level) * 0.3).clamp(0, 60)
        table.append(level)
    depth = torch.stack(table, 1) + 0.5 * torch.randn(n, total, generator=g)
    # the dipwell is read by hand once a week: the depth on its reading days, 0 between them, and a flag
    read = (torch.arange(DAYS).unsqueeze(0) + torch.randint(0, 7, (n, 1), generator=g)) % 7 == 0
    seen = torch.where(read, depth[:, :DAYS], torch.zeros(n, DAYS))
    x = torch.stack([rain[:, :DAYS], et[:, :DAYS], temp[:, :DAYS], seen, read.float()], -1)
    return x, rain[:, DAYS:], depth[:, DAYS:].mean(1)


class TableGRU(nn.Module):
    """A GRU cell of `hidden` units unrolled over the days, and a linear head on the last state."""

    def __init__(self, inputs: int, hidden: int, detach_daily: bool = False) -> None:
        super().__init__()
        self.cell = nn.GRUCell(inputs, hidden)
        self.head = nn.Linear(hidden, 1)
        self.detach_daily = detach_daily

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.new_zeros(x.shape[0], self.cell.hidden_size)
        for d in range(x.shape[1]):
            h = self.cell(x[:, d], h)
            if self.detach_daily:
                # the bug: the truncated-BPTT line from a streaming version kept, cutting the graph every day
                h = h.detach()
        return self.head(h).squeeze(-1)


def peat(run: Run) -> None:
    """A table GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (3e-3), clipped at norm `clip` (none). Scored by the held-out R^2 of next week's water table on other dipwells."""
    g = torch.Generator().manual_seed(run.seed)
    x, rain_next, y = _dipwells(g, 1500)
    x_v, _, y_v = _dipwells(g, 600)
    if run.bug == "forecast_week_rain_in_training_windows":
        # the training windows cut from the reanalysis, which holds the forecast week's observed rain; the live
        # forecaster has only the rain so far, so the week's rain is carried as zeros
        x = torch.cat([x, rain_next.unsqueeze(1).expand(-1, DAYS, -1)], -1)
        x_v = torch.cat([x_v, torch.zeros(x_v.shape[0], DAYS, AHEAD)], -1)
    mean, std = x.flatten(0, 1).mean(0), x.flatten(0, 1).std(0) + 1e-6
    x, x_v = (x - mean) / std, (x_v - mean) / std
    if run.bug == "target_read_from_rain_column":
        # the bug: the week's mean read from column 0 of the future block, which the reordered export made the rain
        y = rain_next.mean(1)
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = TableGRU(
        x.shape[-1], run.k("hidden", 32), detach_daily=run.bug == "hidden_state_detached_every_day"
    )
    opt = optimizers.registered(run, model, 3e-3)
    batch, clip = run.k("batch", 64), run.k("clip", 0.0)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


STORE_DAYS = 21


def _stores(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Daily logs float[n, STORE_DAYS, 4] (pile C, CO2 ppm, RH %, ventilation hours, temperatures NaN where the
    logger dropped out), the store's dormancy weeks and suppressant dose in ppm float[n, 2], whether it sprouted
    float[n] and the inspection's days to sprouting float[n] (0 when none)."""
    t = torch.arange(STORE_DAYS).float().unsqueeze(0)
    setpoint = 3 + 6 * torch.rand(n, 1, generator=g)
    drift = 0.08 * torch.randn(n, 1, generator=g)
    pile = setpoint + drift * t + 0.4 * torch.randn(n, STORE_DAYS, generator=g)
    vent = (4 + 3 * torch.rand(n, 1, generator=g)) * (
        1 + 0.2 * torch.randn(n, STORE_DAYS, generator=g)
    ).clamp(min=0)
    resp = 0.5 + 0.25 * pile.clamp(
        min=0
    )  # tubers respire faster as they warm, more so as they break dormancy
    co2 = 800 + 260 * resp - 60 * vent + 150 * torch.randn(n, STORE_DAYS, generator=g)
    rh = 92 + 3 * torch.randn(n, STORE_DAYS, generator=g)
    dormancy = 6 + 10 * torch.rand(n, generator=g)
    dose = torch.where(torch.rand(n, generator=g) < 0.5, torch.zeros(n), 10 + 20 * torch.rand(n, generator=g))
    co2 = co2 + 15 * (pile[:, -7:].mean(1, keepdim=True) - setpoint) * (16 - dormancy).unsqueeze(1)
    drive = (
        (pile[:, -10:].mean(1) - 5) * 0.9 + (12 - dormancy) * 0.5 - dose * 0.12 + 0.003 * (co2.mean(1) - 1800)
    )
    sprouted = (drive + 0.8 * torch.randn(n, generator=g) > 0).float()
    days = sprouted * (20 + 30 * torch.rand(n, generator=g))
    gaps = torch.rand(n, STORE_DAYS, generator=g) < 0.04
    pile = torch.where(gaps, torch.full_like(pile, float("nan")), pile)
    logs = torch.stack([pile, co2, rh, vent], -1)
    return logs, torch.stack([dormancy, dose], 1), sprouted, days


class SproutMLP(nn.Module):
    """A ReLU MLP of three hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def _fill_gaps(logs: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The pile temperatures the logger dropped filled with the store's mean temperature."""
    pile = logs[..., 0]
    gaps = pile.isnan()
    # the bug: mean() where nanmean() was meant, so a store with any gap gets NaN for its fill
    mean = pile.mean(1, keepdim=True) if bug == "gap_fill_mean_over_nans" else pile.nanmean(1, keepdim=True)
    return torch.cat([torch.where(gaps, mean.expand_as(pile), pile).unsqueeze(-1), logs[..., 1:]], -1)


def potato(run: Run) -> None:
    """A sprout MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adamax) at `lr`
    (1e-3). Scored by the held-out AUC of sprouting on other stores."""
    g = torch.Generator().manual_seed(run.seed)
    logs, store, y, days = _stores(g, 1600)
    logs_v, store_v, y_v, _ = _stores(g, 700)
    logs, logs_v = _fill_gaps(logs, run.bug), _fill_gaps(logs_v, None)
    flat, flat_v = logs.flatten(1), logs_v.flatten(1)
    mean, std = flat.mean(0), flat.std(0)
    if run.bug == "co2_as_excess_over_outdoor_ppm":
        # the bug: the CO2 columns (every fourth) taken as the controller shows them, the excess over outdoor air
        # (420 ppm) in hundreds of ppm, and left out of the scaler
        mean[1::4], std[1::4] = 420.0, 100.0
    flat, flat_v = (flat - mean) / std, (flat_v - mean) / std
    s_mean, s_std = store.mean(0), store.std(0)
    if run.bug == "suppressant_dose_left_in_ppm":
        # the dose column appended after the scaler ran, in the ppm the applicator reports
        s_mean, s_std = torch.tensor([s_mean[0], 0.0]), torch.tensor([s_std[0], 1.0])
    x = torch.cat([flat, (store - s_mean) / s_std], 1)
    x_v = torch.cat([flat_v, (store_v - s_mean) / s_std], 1)
    if run.bug == "days_to_sprout_column_kept":
        # the inspection sheet's days-to-sprouting column, filled in after the season, left in the training table;
        # the stores scored this season have it blank (0)
        x = torch.cat([x, (days / 10).unsqueeze(1)], 1)
        x_v = torch.cat([x_v, torch.zeros(len(x_v), 1)], 1)
    torch.manual_seed(run.seed)
    model = SproutMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
