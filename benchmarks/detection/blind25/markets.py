"""Market scripts of the twenty-fifth blind split: a limit-order-book mid-price direction classifier and a
parking-occupancy forecaster.

`orderbook`: snapshots of a book of ten levels a side around a mid price near 100 dollars (prices in cents, one cent a
tick, a level's price the best price plus its gap in ticks), each level's resting size heavy-tailed and the deeper levels
of a thin book often empty; the next mid change (down, flat, up) drawn from the imbalance of the top levels and the last
mid changes; the level prices as ticks from the mid, the logged sizes, the per-level imbalance (b - a) / (b + a) (0 where
both sides are empty) and the last five mid changes, standardised by the training snapshots, an MLP of two ReLU layers,
cross-entropy; scored by the held-out accuracy. `parking`: 30 lots of 40-400 spaces (office, shopping and nightlife
lots with their own daily and weekly profiles and a slow AR(1) drift), eight weeks hourly, two lots closed for works in
a week of the second to seventh (capacity and cars reported as 0); windows of the last 24 hours' occupancy, the hour on a
circle, the weekday one-hot and the lot's embedding, an MLP predicting the next
hour's occupancy through a sigmoid, mean squared error; the second to seventh weeks' windows train, the eighth week's score, by the
held-out R^2. Bugs: the level prices fed in cents; the imbalance of an empty level taken as 0/0; the lag window taken one
snapshot late, so its last change is the one to predict; the gradient clipped before `backward`; the occupancy of a lot
closed for works divided by its zero capacity; each window min-max
scaled on its own; a linear warmup written upside down.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

LEVELS, LAGS = 10, 5
"""Book levels a side and past mid changes kept."""


def _book(
    g: torch.Generator, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mid prices in cents float[n], bid and ask prices in cents and sizes float[n, LEVELS] each (as bid price, bid
    size, ask price, ask size), the last LAGS + 1 mid changes in ticks float[n, LAGS + 1] (the last one is the change
    to come) and the direction of the change to come long[n] (0 down, 1 flat, 2 up)."""
    mid = 10000 + torch.cumsum(torch.randn(n, generator=g) * 3, 0).round() + 0.5
    gaps = 1 + torch.poisson(torch.full((n, 2, LEVELS), 0.3), generator=g)
    depth = torch.cumsum(gaps, -1) - 0.5
    thin = torch.rand(n, 1, 1, generator=g) < 0.35
    empty = thin & (torch.rand(n, 2, LEVELS, generator=g) < torch.linspace(0.0, 0.8, LEVELS))
    sizes = torch.exp(4 + 1.2 * torch.randn(n, 2, LEVELS, generator=g)).round() * ~empty
    # a both-sided thin book is empty at the same deep levels on both sides
    both = thin[:, :, 0] & (torch.rand(n, 1, generator=g) < 0.5)
    deep = torch.arange(LEVELS) >= 7
    sizes = sizes * ~(both.unsqueeze(-1) & deep)
    imb = (sizes[:, 0, :3] - sizes[:, 1, :3]) / (sizes[:, 0, :3] + sizes[:, 1, :3]).clamp_min(1)
    past = torch.randn(n, LAGS, generator=g).round()
    signal = 1.6 * imb[:, 0] + 0.8 * imb[:, 1] + 0.4 * imb[:, 2] + 0.25 * past[:, -1] + 0.15 * past[:, -2]
    nxt = (signal + 0.6 * torch.randn(n, generator=g)).clamp(-3, 3)
    direction = torch.bucketize(nxt, torch.tensor([-0.45, 0.45]))
    changes = torch.cat([past, nxt.round().unsqueeze(1)], 1)
    bid, ask = mid.unsqueeze(1) - depth[:, 0], mid.unsqueeze(1) + depth[:, 1]
    return mid, torch.stack([bid, sizes[:, 0], ask, sizes[:, 1]], 1), changes, direction, empty, thin


def orderbook(run: Run) -> None:
    """An order-book MLP of `hidden` (128), batches of `batch` (128), `opt` (Adam; or momentum SGD, AdamW under a
    cosine, RMSprop, Nesterov SGD clipped at norm `clip`) at `lr` (1e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    mid, book, changes, y, _, _ = _book(g, 5000)
    mid_v, book_v, changes_v, y_v, _, _ = _book(g, 2000)

    def features(m: torch.Tensor, b: torch.Tensor, ch: torch.Tensor, live: bool) -> torch.Tensor:
        if run.bug == "prices_fed_in_cents":
            prices = torch.cat([b[:, 0], b[:, 2]], 1)  # the quotes as the feed gives them
        else:
            prices = torch.cat([m.unsqueeze(1) - b[:, 0], b[:, 2] - m.unsqueeze(1)], 1)
        sizes = torch.log1p(torch.cat([b[:, 1], b[:, 3]], 1))
        total = b[:, 1] + b[:, 3]
        if run.bug == "imbalance_of_empty_levels":
            imb = (b[:, 1] - b[:, 3]) / total
        else:
            imb = torch.where(total > 0, (b[:, 1] - b[:, 3]) / total.clamp_min(1), 0.0)
        # the last LAGS mid changes before the snapshot; the bug's window ends one snapshot late in the training set
        lags = ch[:, 1:] if run.bug == "lag_window_ends_at_label" and not live else ch[:, :-1]
        return torch.cat([prices, sizes, imb, lags], 1)

    raw, raw_v = features(mid, book, changes, False), features(mid_v, book_v, changes_v, True)
    if run.bug == "prices_fed_in_cents":
        mean, std = torch.zeros(raw.shape[1]), torch.ones(raw.shape[1])
        mean[2 * LEVELS :], std[2 * LEVELS :] = raw[:, 2 * LEVELS :].mean(0), raw[:, 2 * LEVELS :].std(0)
    else:
        mean, std = raw.mean(0), raw.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 128)
    model = nn.Sequential(nn.Linear(x.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 3))  # fmt: skip
    opt = optimizers.registered(run, model, 1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch, clip = run.k("batch", 128), run.k("clip", None)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        if clip is not None and run.bug == "clip_called_before_backward":
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        loss.backward()
        if clip is not None and run.bug != "clip_called_before_backward":
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


LOTS, WEEKS, WINDOW = 30, 8, 24
"""Car parks, weeks of hourly counts, hours of history per window."""


def _occupancy(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Cars parked and spaces reported float[LOTS, WEEKS * 168] (two lots closed for works in a week: both 0)."""
    hours = torch.arange(WEEKS * 168)
    hod, dow = (hours % 24).float(), (hours // 24) % 7
    weekend = (dow >= 5).float()
    kind = torch.randint(0, 3, (LOTS,), generator=g).unsqueeze(1)
    office = torch.exp(-(((hod - 12.5) / 3.5) ** 2)) * (1 - weekend) * 0.85 + 0.05
    shops = torch.exp(-(((hod - 15) / 3.5) ** 2)) * (0.55 + 0.35 * weekend) + 0.05
    night = torch.exp(-((((hod + 6) % 24 - 4) / 3.0) ** 2)) * (0.5 + 0.4 * (dow >= 4).float()) + 0.05
    profile = torch.where(kind == 0, office, torch.where(kind == 1, shops, night))
    drift = torch.zeros(LOTS, WEEKS * 168)
    noise = 0.04 * torch.randn(LOTS, WEEKS * 168, generator=g)
    for t in range(1, WEEKS * 168):
        drift[:, t] = 0.97 * drift[:, t - 1] + noise[:, t]
    scale = 0.7 + 0.3 * torch.rand(LOTS, 1, generator=g)
    frac = (profile * scale + drift).clamp(0, 1)
    capacity = torch.randint(40, 401, (LOTS, 1), generator=g).float().expand(-1, WEEKS * 168).clone()
    cars = (frac * capacity).round()
    for lot in torch.randperm(LOTS, generator=g)[:2].tolist():
        week = int(torch.randint(1, WEEKS - 1, (1,), generator=g))
        capacity[lot, week * 168 : (week + 1) * 168] = 0
        cars[lot, week * 168 : (week + 1) * 168] = 0
    return cars, capacity


def parking(run: Run) -> None:
    """A parking MLP of `hidden` (64), batches of `batch` (128), `opt` (Adam; or AdamW, momentum SGD with a linear
    warmup over `warmup` steps, RAdam halved every 100 steps) at `lr` (2e-3). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    cars, capacity = _occupancy(g)
    if run.bug == "occupancy_over_zero_capacity":
        occ = cars / capacity
        open_ = torch.ones_like(occ, dtype=torch.bool)
    else:
        occ = torch.where(capacity > 0, cars / capacity.clamp_min(1), 0.0)
        open_ = capacity > 0
    hours = torch.arange(WEEKS * 168)
    hod = hours % 24

    def windows(first: int, last: int, live: bool) -> tuple[torch.Tensor, ...]:
        """Windows whose predicted hour lies in [first, last): lags, calendar, lot ids, targets."""
        t = torch.arange(max(first, WINDOW), last)
        lot = torch.arange(LOTS).repeat_interleave(len(t))
        t = t.repeat(LOTS)
        idx = t.unsqueeze(1) - WINDOW + torch.arange(WINDOW)
        lags = occ[lot.unsqueeze(1), idx]
        keep = open_[lot.unsqueeze(1), idx].all(1) & open_[lot, t]
        if run.bug == "window_minmax_scaled_per_sample":
            lo, hi = lags.min(1, keepdim=True).values, lags.max(1, keepdim=True).values
            lags = (lags - lo) / (hi - lo).clamp_min(1e-3)
        angle = 2 * math.pi * hod[t].float() / 24
        cal = torch.cat([torch.stack([angle.sin(), angle.cos()], 1), F.one_hot((t // 24) % 7, 7).float()], 1)
        return lags[keep], cal[keep], lot[keep], occ[lot, t][keep]

    lags, cal, lots, y = windows(168, 7 * 168, False)
    lags_v, cal_v, lots_v, y_v = windows(7 * 168, 8 * 168, True)
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)

    class Forecaster(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lot = nn.Embedding(LOTS, 8)
            self.mlp = nn.Sequential(nn.Linear(WINDOW + 9 + 8, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                     nn.ReLU(), nn.Linear(hidden, 1))  # fmt: skip

        def forward(self, lag: torch.Tensor, c: torch.Tensor, lot: torch.Tensor) -> torch.Tensor:
            return torch.sigmoid(self.mlp(torch.cat([lag, c, self.lot(lot)], 1))[:, 0])

    model = Forecaster()
    opt = optimizers.registered(run, model, 2e-3)
    warmup = run.k("warmup", None)
    if warmup is not None:
        if run.bug == "warmup_written_upside_down":
            factor = lambda s: max(1.0, warmup / (s + 1))
        else:
            factor = lambda s: min(1.0, (s + 1) / warmup)
        sched: torch.optim.lr_scheduler.LRScheduler | None = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    elif run.k("step_decay", False):
        sched = torch.optim.lr_scheduler.StepLR(opt, 100, 0.5)
    else:
        sched = None
    batch = run.k("batch", 128)

    def r2_held_out() -> float:
        return r2(model(lags_v, cal_v, lots_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(lags[pick], cal[pick], lots[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
