"""Estimation scripts of the twenty-second blind split: a volatility forecaster for daily returns and a gaze-direction
regressor on eye images.

`volatility`: 60 daily price series of 500 days from GARCH(1,1) returns with their own persistence, a trading halt now
and then, which the exchange file records as a close of 0 and the loader fills with the last close; log returns in
percent, a log-variance guard clamped to [-6, 6]; each example the last 20 returns and their squares, the target the
next day's return; an MLP encoder and a head for the log variance; the Gaussian negative log-likelihood of the return
(it goes negative on calm series); scored by the held-out R^2 of the log variance against the GARCH's true conditional
variance on 20 series the model never saw. `gaze`: 16x24 grey eye images, an iris disc and a darker pupil moved by the
gaze's yaw and pitch, an upper eyelid that follows the pitch, a glint, subject-to-subject iris size and eye position,
sensor noise; the training images all lit alike and 160 of them, the held-out images under lighting from 0.5 to 1.5
times as bright; random brightness jitter and horizontal flips (the yaw negated) on each batch; a two-block CNN and an
MLP head to the yaw and pitch in radians; mean squared error; scored by the held-out R^2 of the angles. Bugs: the halted
days' close of 0 kept; the log variance clamped to bounds for percent returns while the returns stay in fractions; the
target read inside the window; the pitch negated in the flip; the brightness jitter drawn once when the images are
loaded; a cyclic schedule's peak rate copied from an SGD recipe.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DAYS, LAGS = 500, 20
"""Days per series and returns per example."""


def _prices(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Closing prices float[n, DAYS + 1] as the exchange file has them (a halted day: 0) and the true conditional
    variance of each day's log return in percent^2, float[n, DAYS]."""
    alpha = 0.04 + 0.1 * torch.rand(n, generator=g)
    beta = (0.97 - alpha) * (0.85 + 0.15 * torch.rand(n, generator=g))
    level = torch.exp(torch.empty(n).uniform_(-0.5, 1.0, generator=g))
    omega = level * (1 - alpha - beta)
    var = level.clone()
    r_prev = torch.zeros(n)
    returns, variances = [], []
    for _ in range(DAYS):
        var = omega + alpha * r_prev**2 + beta * var
        r_prev = var.sqrt() * torch.randn(n, generator=g)
        returns.append(r_prev)
        variances.append(var)
    r = torch.stack(returns, 1)
    prices = 100 * torch.exp(torch.cat([torch.zeros(n, 1), r.cumsum(1) / 100], 1))
    halted = torch.rand(n, DAYS + 1, generator=g) < 0.005
    halted[:, 0] = False
    return torch.where(halted, torch.zeros(1), prices), torch.stack(variances, 1)


def _log_returns(prices: torch.Tensor, bug: str | None) -> torch.Tensor:
    """Daily log returns in percent, a halted day's 0 replaced by the last close first (unless the bug keeps it)."""
    if bug != "halted_days_priced_zero":
        filled = prices.clone()
        for d in range(1, filled.shape[1]):
            filled[:, d] = torch.where(filled[:, d] > 0, filled[:, d], filled[:, d - 1])
        prices = filled
    return 100 * torch.log(prices[:, 1:] / prices[:, :-1])


class VolatilityNet(nn.Module):
    """An MLP encoder of `hidden` over the lagged returns and their squares, a head for the log variance."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(2 * LAGS, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.head = nn.Linear(hidden, 1)

    def forward(self, lags: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(torch.cat([lags, lags**2 / 4], 1))).squeeze(-1)


def volatility(run: Run) -> None:
    """A volatility forecaster (an encoder of `hidden` (64)), batches of `batch` (64), `opt` (Adam; or momentum SGD,
    Adamax, RMSprop) at `lr` (1e-3). Scored by the held-out R^2 of the log variance."""
    g = torch.Generator().manual_seed(run.seed)
    prices, _ = _prices(g, 60)
    prices_v, var_v = _prices(g, 20)
    r = _log_returns(prices, run.bug)
    r_v = _log_returns(prices_v, None)
    days = torch.arange(LAGS, DAYS)
    lags_v = torch.stack([r_v[:, d - LAGS : d] for d in days[::5]], 1).reshape(-1, LAGS)
    true_v = var_v[:, days[::5]].reshape(-1).log()
    if run.bug == "log_variance_clamped_for_percent_returns":
        # the loader's fractions, while the clamp below was written for percent returns
        r, lags_v, true_v = r / 100, lags_v / 100, true_v - 2 * math.log(100)
    torch.manual_seed(run.seed)
    model = VolatilityNet(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(lags_v), true_v)

    for step in range(run.steps):
        series = torch.randint(0, len(r), (batch,), generator=run.gen)
        day = torch.randint(LAGS, DAYS, (batch,), generator=run.gen)
        lags = torch.stack([r[i, d - LAGS : d] for i, d in zip(series, day, strict=True)])
        ahead = day - 1 if run.bug == "target_return_inside_window" else day
        target = r[series, ahead]
        log_var = model(lags)
        # guard the log variance against runaway values (bounds for percent returns: 0.05% to 20% a day)
        log_var = log_var.clamp(-6.0, 6.0)
        loss = 0.5 * (log_var + target**2 * torch.exp(-log_var)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


HEIGHT, WIDTH = 16, 24
"""Eye image size."""


def _eyes(g: torch.Generator, n: int, lit_alike: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Eye images float[n, 1, HEIGHT, WIDTH] in [0, 1] and gaze angles float[n, 2] (yaw, pitch) in radians."""
    yaw = torch.empty(n).uniform_(-0.5, 0.5, generator=g)
    pitch = torch.empty(n).uniform_(-0.3, 0.3, generator=g)
    cx = WIDTH / 2 - 0.5 + 12 * yaw + 0.8 * torch.randn(n, generator=g)
    cy = HEIGHT / 2 - 0.5 - 10 * pitch + 0.6 * torch.randn(n, generator=g)
    iris = 3.0 + 1.2 * torch.rand(n, generator=g)
    rows = torch.arange(HEIGHT, dtype=torch.float).view(1, -1, 1)
    cols = torch.arange(WIDTH, dtype=torch.float).view(1, 1, -1)
    d = ((rows - cy.view(-1, 1, 1)) ** 2 + (cols - cx.view(-1, 1, 1)) ** 2).sqrt()
    img = 0.85 - 0.45 * torch.sigmoid(3 * (iris.view(-1, 1, 1) - d)) - 0.3 * torch.sigmoid(3 * (1.4 - d))
    lid = 3.5 - 6 * pitch + torch.randn(n, generator=g)
    img = torch.where(rows < lid.view(-1, 1, 1), torch.full((1,), 0.6), img)
    glint = ((rows - cy.view(-1, 1, 1) + 1) ** 2 + (cols - cx.view(-1, 1, 1) - 1) ** 2) < 0.8
    img = torch.where(glint, torch.ones(1), img)
    gain = torch.ones(n, 1, 1) if lit_alike else torch.empty(n, 1, 1).uniform_(0.5, 1.5, generator=g)
    img = (gain * img + 0.04 * torch.randn(n, HEIGHT, WIDTH, generator=g)).clamp(0, 1)
    return img.unsqueeze(1), torch.stack([yaw, pitch], 1)


class GazeCNN(nn.Module):
    """Two convolution blocks of `width` and 2 `width` channels with max pooling, an MLP head to yaw and pitch."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )  # fmt: skip
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * width * 4 * 6, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def gaze(run: Run) -> None:
    """A gaze CNN of `width` (12), batches of `batch` (32), `opt` (Adam; or AdamW, NAdam) at `lr` (2e-3), or a
    triangular cyclic rate between `lr` / 10 and `lr` (`cyclic`). Scored by the held-out R^2 of the angles."""
    g = torch.Generator().manual_seed(run.seed)
    x, angles = _eyes(g, 160, lit_alike=True)
    x_v, angles_v = _eyes(g, 600, lit_alike=False)
    if run.bug == "brightness_jitter_drawn_once_at_load":
        # the dataset applies its transform when it loads the images
        x = (x * torch.empty(len(x), 1, 1, 1).uniform_(0.5, 1.5, generator=g)).clamp(0, 1)
    torch.manual_seed(run.seed)
    model = GazeCNN(run.k("width", 12))
    lr = run.k("lr", 2e-3)
    opt = optimizers.registered(run, model, lr)
    sched = None
    if run.k("cyclic", False):
        peak = 0.1 if run.bug == "cyclic_max_rate_from_sgd_recipe" else lr
        sched = torch.optim.lr_scheduler.CyclicLR(opt, peak / 10, peak, step_size_up=25, cycle_momentum=False)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v), angles_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        images, target = x[pick], angles[pick].clone()
        if run.bug != "brightness_jitter_drawn_once_at_load":
            images = (images * torch.empty(batch, 1, 1, 1).uniform_(0.5, 1.5, generator=run.gen)).clamp(0, 1)
        flip = torch.rand(batch, generator=run.gen) < 0.5
        images = torch.where(flip.view(-1, 1, 1, 1), images.flip(-1), images)
        axis = 1 if run.bug == "pitch_negated_in_horizontal_flip" else 0
        target[:, axis] = torch.where(flip, -target[:, axis], target[:, axis])
        loss = F.mse_loss(model(images), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
