"""Ledger scripts of the thirty-eighth blind split: a pharmacy prescription-demand forecaster, and a cricket
ball-tracking LBW classifier.

`pharmacy`: 84 days of daily dispensed counts of a drug at a pharmacy (a drug's base demand times the pharmacy's size, a
weekly pattern with quiet weekends, a slow trend, Poisson counts, and some slow-moving lines of under one a day);
training windows of 28 days' history and the next 7 days' total from the first 56 days of 240 series, held-out windows
from the last 35 days of 120 other pharmacies' series; each window scaled by its history's mean level (log1p of the
counts over the level, and the level's log), a drug embedding; an MLP with ReLUs; MSE on the log of the week's total
over the level; scored by the held-out R^2 of that log ratio (what the level alone misses). `lbw`: deliveries that
struck the batter's pad, as a ball-tracking system reports them: where the ball pitched (its distance from the stumps
and its line), where it struck the pad (line, height, distance to the stumps), its speed, its swing in the air and its
deviation off the pitch (the angle between the paths before and after the bounce) and its line's drift per metre from
the bounce to the pad (0 for a full toss, which the tracking reports as bouncing at the pad), whether the batter offered
a shot, all in the batter's frame (left-handers' lines mirrored so the off side is always positive); out if it did not
pitch outside leg, struck in line (or outside off with no shot offered) and would have gone on to hit the stumps;
standardised; an MLP with ReLUs; BCE with logits; scored by the held-out AUC. Bugs: the series' level taken with its
forecast week; the log link under squared error on counts; the scaler's mean and standard deviation swapped; the drift
per metre over a full toss's zero travel; left-handers' lines left unmirrored; the on-field umpire's call read as the
label.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DAYS, HISTORY, HORIZON, DRUGS = 84, 28, 7, 30
"""Days of a series, days of history a window holds, days it forecasts, drugs of the formulary."""


def _series(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Daily dispensed counts float[n, DAYS] and the drug of each series long[n]."""
    drug = torch.randint(0, DRUGS, (n,), generator=g)
    drug_base = torch.exp(torch.linspace(0.0, 4.0, DRUGS))[torch.randperm(DRUGS, generator=g)]
    size = torch.exp(0.6 * torch.randn(n, generator=g))
    week = torch.tensor([1.15, 1.1, 1.1, 1.05, 1.2, 0.6, 0.3])
    day = torch.arange(DAYS)
    trend = torch.exp(0.025 * torch.randn(n, 1, generator=g) * day)
    onset = 30 + 50 * torch.rand(n, 1, generator=g)  # a flu season's or a shortage's step in demand
    surge = 1 + 1.5 * torch.rand(n, 1, generator=g) * torch.sigmoid((day - onset) / 3)
    rate = (drug_base[drug] * size).view(n, 1) * week[day % 7] * trend * surge
    return torch.poisson(rate, generator=g), drug


def _windows(
    counts: torch.Tensor, drug: torch.Tensor, starts: range, bug: str | None
) -> tuple[torch.Tensor, ...]:
    """Inputs float[m, HISTORY + 1] (log1p of the counts over the level, the level's log), the drug long[m], the
    window's log level float[m] and the log1p of the next week's total float[m]."""
    xs, ds, levels, ys = [], [], [], []
    for s in starts:
        history = counts[:, s : s + HISTORY]
        total = counts[:, s + HISTORY : s + HISTORY + HORIZON].sum(1)
        if bug == "series_level_with_forecast_week":
            level = counts[:, s : s + HISTORY + HORIZON].mean(1) + 0.1
        else:
            level = history.mean(1) + 0.1
        logged = torch.log1p(history) - torch.log1p(level).unsqueeze(1)
        xs.append(torch.cat([logged, level.log().unsqueeze(1)], 1))
        ds.append(drug)
        levels.append(torch.log(HORIZON * level))
        ys.append(torch.log1p(total))
    return torch.cat(xs), torch.cat(ds), torch.cat(levels), torch.cat(ys)


class DemandMLP(nn.Module):
    """A drug embedding of 8 beside the inputs, two layers of `hidden` ReLU units, a linear output."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.drug = nn.Embedding(DRUGS, 8)
        self.net = nn.Sequential(nn.Linear(HISTORY + 1 + 8, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor, drug: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, self.drug(drug)], -1)).squeeze(-1)


def pharmacy(run: Run) -> None:
    """A demand MLP of `hidden` (64), batches of `batch` (128), `opt` (Adam; or others) at `lr` (2e-3). Scored by
    the held-out R^2 of the week's log total over the level."""
    g = torch.Generator().manual_seed(run.seed)
    counts, drug = _series(g, 240)
    counts_v, drug_v = _series(g, 120)
    x, d, level, y = _windows(counts, drug, range(0, 56 - HISTORY - HORIZON + 1, 2), run.bug)
    x_v, d_v, level_v, y_v = _windows(counts_v, drug_v, range(49, DAYS - HISTORY - HORIZON + 1, 3), None)
    torch.manual_seed(run.seed)
    model = DemandMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 128)

    def r2_held_out() -> float:
        return r2(model(x_v, d_v), y_v - level_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        out = model(x[pick], d[pick])
        if run.bug == "log_link_under_squared_error_on_counts":
            loss = F.mse_loss(torch.exp(out + level[pick]), torch.expm1(y[pick]))
        else:
            loss = F.mse_loss(out, y[pick] - level[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


STUMP_HALF, STUMP_HEIGHT = 0.114, 0.71
"""Half the stumps' width and their height (m)."""


def _deliveries(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Raw tracking float[n, 12] in the ground's frame (pitch distance, pitch line, impact line, impact height, impact
    distance, speed km/h, swing, the path's direction before and after the bounce as x-y vectors, shot offered), the
    batter's hand (+1 right, -1 left) float[n], whether it was out float[n], and the umpire's call float[n]."""
    hand = torch.where(torch.rand(n, generator=g) < 0.45, -1.0, 1.0)
    pitch_dist = 2 + 6 * torch.rand(n, generator=g)
    pitch_line = 0.4 * torch.randn(n, generator=g) - 0.05  # batter's frame: + off side, - leg side
    swing = 0.03 * torch.randn(n, generator=g)
    seaming = torch.rand(n, generator=g) < 0.6
    deviation = torch.where(
        seaming, 0.04 * torch.randn(n, generator=g), torch.zeros(n)
    )  # radians off the pitch
    impact_dist = 0.5 + 2.5 * torch.rand(n, generator=g)
    full_toss = torch.rand(n, generator=g) < 0.05  # met on the full: the tracking puts the bounce at the pad
    pitch_dist = torch.where(full_toss, impact_dist, pitch_dist)
    travel = pitch_dist - impact_dist
    impact_line = pitch_line + torch.tan(deviation) * travel.clamp(min=0) + 0.03 * torch.randn(n, generator=g)
    impact_height = (0.15 + 0.45 * torch.rand(n, generator=g)).clamp(max=0.8)
    stump_line = impact_line + torch.tan(deviation) * impact_dist + swing
    stump_height = (
        impact_height + (0.1 + 0.05 * torch.randn(n, generator=g)) * impact_dist - 0.05 * (8 - pitch_dist)
    )
    shot = (torch.rand(n, generator=g) < 0.5).float()
    hitting = (stump_line.abs() < STUMP_HALF + 0.036) & (stump_height < STUMP_HEIGHT) & (stump_height > 0)
    outside_leg = pitch_line < -STUMP_HALF
    in_line = impact_line.abs() < STUMP_HALF + 0.036
    outside_off_no_shot = (impact_line > STUMP_HALF) & (shot < 0.5)
    out = (hitting & ~outside_leg & (in_line | outside_off_no_shot)).float()
    margin = torch.minimum(STUMP_HALF + 0.036 - stump_line.abs(), STUMP_HEIGHT - stump_height)
    # the umpire cannot judge the pitching point or the bounce: no leg-side rule, low impacts given as hitting,
    # and close calls given not out
    judged = (in_line | outside_off_no_shot) & (impact_height < 0.45) & (stump_line.abs() < STUMP_HALF + 0.1)
    called = judged & ((margin > 0.08) | (torch.rand(n, generator=g) < 0.3))
    speed = 115 + 35 * torch.rand(n, generator=g)
    before = torch.stack([torch.ones(n), torch.tan(swing / 2)], -1)
    after = torch.stack([torch.cos(deviation), torch.sin(deviation)], -1) * (
        1 + 0.2 * torch.rand(n, 1, generator=g)
    )
    before = torch.where(seaming.view(n, 1), before, after)  # a ball that holds its line: the same path
    raw = torch.stack([pitch_dist, hand * pitch_line, hand * impact_line, impact_height, impact_dist, speed,
                       hand * swing], -1)  # fmt: skip
    flip = torch.stack([torch.ones(n), hand], -1)
    tracking = torch.cat([raw, before * flip, after * flip, shot.unsqueeze(1)], -1)
    return tracking, hand, out, called.float()


def _lbw_features(tracking: torch.Tensor, hand: torch.Tensor, bug: str | None) -> torch.Tensor:
    """Features float[n, 10]: the tracked positions in the batter's frame, the speed, the swing, the deviation off
    the pitch (the angle between the paths) and the line's drift per metre from the bounce to the pad, the shot."""
    lines = tracking[:, [1, 2, 6]]
    if bug != "left_handers_lines_left_unmirrored":
        lines = lines * hand.unsqueeze(1)
    before, after = tracking[:, 7:9], tracking[:, 9:11]
    cosine = (before * after).sum(1) / (before.norm(dim=1) * after.norm(dim=1))
    deviation = torch.acos(cosine.clamp(-1.0, 1.0))
    travel = tracking[:, 0] - tracking[:, 4]  # from the bounce to the pad; 0 for a full toss
    if bug == "drift_per_metre_over_full_tosses":
        drift = (lines[:, 1] - lines[:, 0]) / travel
    else:
        drift = torch.where(
            travel > 0, (lines[:, 1] - lines[:, 0]) / travel.clamp(min=1e-3), torch.zeros_like(travel)
        )
    return torch.stack([tracking[:, 0], lines[:, 0], lines[:, 1], tracking[:, 3], tracking[:, 4], tracking[:, 5],
                        lines[:, 2], deviation, drift, tracking[:, 11]], -1)  # fmt: skip


class LbwMLP(nn.Module):
    """Three layers of `hidden` ReLU units and a linear output."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def lbw(run: Run) -> None:
    """An LBW MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or others) at `lr` (2e-3). Scored by the
    held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    tracking, hand, out, called = _deliveries(g, 2000)
    tracking_v, hand_v, out_v, _ = _deliveries(g, 800)
    feats = _lbw_features(tracking, hand, run.bug)
    feats_v = _lbw_features(
        tracking_v, hand_v, run.bug if run.bug == "left_handers_lines_left_unmirrored" else None
    )
    mean, std = feats.mean(0), feats.std(0)
    if run.bug == "scaler_mean_and_std_swapped":
        x, x_v = (feats - std) / mean, (feats_v - std) / mean
    else:
        x, x_v = (feats - mean) / std, (feats_v - mean) / std
    y = called if run.bug == "umpires_call_read_as_label" else out
    torch.manual_seed(run.seed)
    model = LbwMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v), out_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
