"""Scripts of the eleventh blind split for data with gaps and many columns: a GRU-D classifier of irregularly
sampled series with missing values, and a TabNet-like classifier whose feature selection is a sparsemax attention.

`grud`: a series is 16 observation times with exponential gaps; its three channels start at a random level (std 3) and
drift up (one class) or down (the other) under a sine and noise, each value missing (NaN) with probability 0.5; the script fills the NaNs with 0, builds the
observation mask and the time since each channel's last observation, and runs a GRU-D cell: the input decays from
the last observed value towards the channel's training mean by exp(-relu(W delta)), the hidden state decays by its
own rate, and the GRU reads the imputed values with the mask; scored by held-out accuracy. `tabnet`: 16 standard
normal features of which a few decide the class (a teacher's rule on 4 of them, the rest noise); three decision steps,
each an attentive transformer (a linear layer, the prior scales, and a sparsemax over the features) that masks the
input of a GLU feature transformer whose ReLU half adds to the decision, with prior = prior x (1.5 - mask) after
each step; cross-entropy on the summed decisions; scored by held-out accuracy. Bugs: the decay applied to the mask
instead of the values, the observation mask inverted (built as "is missing"), the NaNs never filled, the time gaps
taken in milliseconds (x 1000) while the series' times are in seconds, the GRU cell called without its hidden
state (so it starts from zeros at every observation), the sparsemax
taken over the batch dimension, a hand-written sparsemax sorting ascending.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.torch_real.loop import make_optimizer

STEPS, CHANNELS = 16, 3
"""Observations per series and channels per observation."""


def _optimizer(run: Run, model: nn.Module, default_lr: float) -> torch.optim.Optimizer:
    name, lr = run.k("opt", "adam"), run.k("lr", default_lr)
    if name == "asgd":
        opt: torch.optim.Optimizer = torch.optim.ASGD(model.parameters(), lr=lr, t0=100)
    else:
        opt = make_optimizer(name, model.parameters(), lr, weight_decay=1e-3 if name == "adamw" else 0.0)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    return opt


def _series(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Values float[n, STEPS, CHANNELS] with NaN where missing, observation times float[n, STEPS], classes long[n]."""
    y = torch.randint(0, 2, (n,), generator=g)
    times = torch.cumsum(torch.empty(n, STEPS).exponential_(1.0, generator=g), 1)
    slope = (2 * y.float() - 1)[:, None, None] * 0.1 * (0.5 + torch.rand(n, 1, CHANNELS, generator=g))
    phase = 6.3 * torch.rand(n, 1, CHANNELS, generator=g)
    level = 3 * torch.randn(n, 1, CHANNELS, generator=g)
    values = level + slope * times[:, :, None] + 0.5 * torch.sin(times[:, :, None] + phase)
    values = values + 0.3 * torch.randn(n, STEPS, CHANNELS, generator=g)
    values = values + torch.tensor([0.5, -1.0, 2.0])
    missing = torch.rand(n, STEPS, CHANNELS, generator=g) < 0.5
    return values.masked_fill(missing, float("nan")), times, y


class GRUD(nn.Module):
    """A GRU-D cell of `hidden` units over (imputed values, mask) with input and hidden decays, and a linear head."""

    def __init__(self, hidden: int, means: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("means", means)
        self.decay_x = nn.Parameter(torch.full((CHANNELS,), 0.5))
        self.decay_h = nn.Linear(CHANNELS, hidden)
        self.cell = nn.GRUCell(2 * CHANNELS, hidden)
        self.head = nn.Linear(hidden, 2)
        self.hidden = hidden
        self.bug: str | None = None

    def forward(self, values: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        n = len(values)
        mask = (
            values.isnan().float() if self.bug == "observation_mask_inverted" else (~values.isnan()).float()
        )
        x = values if self.bug == "nan_values_not_filled" else torch.nan_to_num(values, nan=0.0)
        h = torch.zeros(n, self.hidden)
        last = self.means.expand(n, CHANNELS)
        since = torch.zeros(n, CHANNELS)
        for t in range(STEPS):
            gap = times[:, t : t + 1] - times[:, t - 1 : t] if t else torch.zeros(n, 1)
            if self.bug == "time_gaps_in_milliseconds":
                gap = 1000 * gap  # the gaps taken in milliseconds, the times being seconds
            since = since + gap
            gamma_x = torch.exp(-F.relu(self.decay_x * since))
            gamma_h = torch.exp(-F.relu(self.decay_h(since)))
            m = mask[:, t]
            guess = gamma_x * last + (1 - gamma_x) * self.means
            if self.bug == "decay_applied_to_mask":
                x_hat, m_in = m * x[:, t] + (1 - m) * last, gamma_x * m
            else:
                x_hat, m_in = m * x[:, t] + (1 - m) * guess, m
            if self.bug == "hidden_state_not_carried":
                h = self.cell(torch.cat([x_hat, m_in], 1))
            else:
                h = self.cell(torch.cat([x_hat, m_in], 1), gamma_h * h)
            last = m * x[:, t] + (1 - m) * last
            since = since * (1 - m)
        return self.head(h)


def grud(run: Run) -> None:
    """GRU-D: `hidden` (16) units, batch `batch` (32), `opt` (Adam; or AdamW, RMSprop, ASGD) at `lr`
    (5e-3). Scored by held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    values, times, y = _series(g, 1700)
    vv, tv, yv, values, times, y = values[:200], times[:200], y[:200], values[200:], times[200:], y[200:]
    torch.manual_seed(run.seed)
    model = GRUD(run.k("hidden", 16), values.nanmean((0, 1)))
    model.bug = run.bug
    opt = _optimizer(run, model, 5e-3)
    batch = run.k("batch", 32)
    for step in range(run.steps):
        i = run.indices(len(y), batch)
        loss = F.cross_entropy(model(values[i], times[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", lambda: accuracy(model(vv, tv), yv)):
            break


def sparsemax(z: torch.Tensor, dim: int = -1, *, ascending: bool = False) -> torch.Tensor:
    """Sparsemax of `z` along `dim` (Martins and Astudillo, 2016): the Euclidean projection onto the simplex."""
    z = z.transpose(dim, -1)
    s = z.sort(-1, descending=not ascending).values
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    cumulative = s.cumsum(-1)
    support = (1 + k * s > cumulative).float()
    size = support.sum(-1, keepdim=True).clamp(min=1)
    tau = ((s * support).sum(-1, keepdim=True) - 1) / size
    return (z - tau).clamp(min=0).transpose(dim, -1)


class TabNetLike(nn.Module):
    """Three decision steps of sparsemax feature masks and GLU feature transformers (`width` decision units)."""

    def __init__(self, features: int, width: int, classes: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(features)
        self.attend = nn.ModuleList(nn.Linear(width, features) for _ in range(3))
        self.transform = nn.ModuleList(nn.Linear(features, 4 * width) for _ in range(3))
        self.first = nn.Linear(features, width)
        self.head = nn.Linear(width, classes)
        self.width = width
        self.bug: str | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.bn(x)
        prior = torch.ones_like(x)
        a = self.first(x)
        out = torch.zeros(len(x), self.width)
        for attend, transform in zip(self.attend, self.transform):
            scores = prior * attend(a)
            if self.bug == "sparsemax_over_batch":
                mask = sparsemax(scores, dim=0)
            else:
                mask = sparsemax(scores, dim=-1, ascending=self.bug == "sparsemax_sorted_ascending")
            h = F.glu(transform(mask * x), dim=-1)
            decision, a = h.split(self.width, dim=-1)
            out = out + F.relu(decision)
            prior = prior * (1.5 - mask)
        return self.head(out)


def tabnet(run: Run) -> None:
    """TabNet-like classification: `width` (16) decision units, batch `batch` (128), `opt` (Adam; or NAdam, Adamax,
    AdamW) at `lr` (1e-2). Scored by held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    noise = torch.randn(5000, 16, generator=g)
    x = noise * (1 + 3 * torch.rand(16, generator=g)) + 2 * torch.randn(16, generator=g)
    z = (x - x.mean(0)) / x.std(0)
    rule = torch.stack([z[:, 0] * z[:, 3] > 0, z[:, 5] + 0.5 * z[:, 9] > 0.3], 1).long()
    y = rule[:, 0] * 2 + rule[:, 1]
    xv, yv, x, y = x[:500], y[:500], x[500:], y[500:]
    torch.manual_seed(run.seed)
    model = TabNetLike(16, run.k("width", 16), 4)
    model.bug = run.bug
    opt = _optimizer(run, model, 1e-2)
    batch = run.k("batch", 128)
    for step in range(run.steps):
        i = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", lambda: accuracy(model(xv), yv)):
            break
