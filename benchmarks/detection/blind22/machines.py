"""Machine-health scripts of the twenty-second blind split: a rolling-bearing fault classifier on vibration windows and
a battery cycle-life regressor on early-cycle features.

`bearings`: accelerometer recordings of 384 samples, a shaft tone of random period and phase plus noise, and for three
of the four classes (inner race, outer race, ball) a train of decaying resonance impulses at the fault's own period; 96
training recordings, each window a random crop of 256 samples; the signals divided by the training set's standard
deviation; a three-layer 1-D CNN with leaky ReLUs, a mean over time and a linear layer; cross-entropy; scored by the
held-out accuracy. `batteries`: cells whose hidden degradation rate sets their cycle life (mostly 300-2000 cycles) and
shows, with noise, in eight early features (the log variance of the discharge-curve change between cycles 100 and 10,
the capacity at cycle 2 and its fade to cycle 100, the internal resistance and its change, the mean temperature in
kelvin, the charge time in seconds, the fast-charge C-rate); the features standardised, a tanh MLP for the log cycle
life standardised, 240 training cells drawn from a table of 1000; mean squared error; scored by the held-out R^2 of the
log cycle life. Bugs: the crop offset left at zero; the loss divided for a gradient accumulation the loop never does;
the learning rate scaled by the batch size with no reference batch; `nn.LeakyReLU(True)`, whose first argument is the
slope; the temperature and charge-time columns left out of the standardisation; the log cycle life centred by the mean
life in cycles; `optimizer.step()` before `loss.backward()`; the training cells taken from the top of a table sorted by
cycle life.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

RECORDING, WINDOW, FAULT_PERIODS = 384, 256, (0, 21, 34, 13)
"""Samples per recording and per window; the impulse period of each class (0: healthy, no impulses)."""


def _recordings(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Vibration recordings float[n, RECORDING] (in g) and their classes long[n]."""
    y = torch.randint(0, len(FAULT_PERIODS), (n,), generator=g)
    t = torch.arange(RECORDING, dtype=torch.float)
    shaft_period = 40 + 20 * torch.rand(n, 1, generator=g)
    shaft = (0.3 + 0.5 * torch.rand(n, 1, generator=g)) * torch.sin(
        2 * math.pi * t / shaft_period + 2 * math.pi * torch.rand(n, 1, generator=g)
    )
    period = torch.tensor(FAULT_PERIODS)[y].unsqueeze(1)
    phase = (torch.rand(n, 1, generator=g) * period).long()
    hits = ((t.long().unsqueeze(0) - phase) % period.clamp_min(1) == 0) & (period > 0)
    # inner-race impulses are modulated by the shaft's rotation, the others are not
    strength = (1.6 + 0.6 * torch.rand(n, 1, generator=g)) * torch.where(
        y.unsqueeze(1) == 1, 1 + 0.6 * torch.sin(2 * math.pi * t / shaft_period), torch.ones(1)
    )
    k = torch.arange(16, dtype=torch.float)
    ring = (torch.exp(-k / 3) * torch.sin(2 * math.pi * k / 5)).flip(0)
    impulses = F.conv1d(F.pad((hits * strength).unsqueeze(1), (15, 0)), ring.view(1, 1, -1)).squeeze(1)
    noise = 0.5 * torch.randn(n, RECORDING, generator=g)
    return shaft + impulses + noise, y


class BearingCNN(nn.Module):
    """Three 1-D convolutions of `width` channels (two strided) with leaky ReLUs, a mean over time, a linear layer."""

    def __init__(self, width: int, slope_bug: bool = False) -> None:
        super().__init__()
        act = nn.LeakyReLU(True) if slope_bug else nn.LeakyReLU(inplace=True)
        self.features = nn.Sequential(
            nn.Conv1d(1, width, 9, stride=2, padding=4), act,
            nn.Conv1d(width, width, 9, stride=2, padding=4), act,
            nn.Conv1d(width, width, 5, padding=2), act,
        )  # fmt: skip
        self.fc = nn.Linear(width, len(FAULT_PERIODS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x.unsqueeze(1)).mean(-1))


def bearings(run: Run) -> None:
    """A bearing-fault CNN of `width` (16) channels on random 256-sample crops, batches of `batch` (32), `opt` (Adam;
    or AdamW, momentum SGD, RMSprop) at `lr` (2e-3; for SGD the rate of a reference batch of 256, scaled linearly),
    optionally decayed by a cosine (`cosine`). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _recordings(g, 96)
    x_v, y_v = _recordings(g, 600)
    starts_v = torch.randint(0, RECORDING - WINDOW + 1, (len(x_v),), generator=g)
    x_v = torch.stack([r[s : s + WINDOW] for r, s in zip(x_v, starts_v, strict=True)])
    scale = float(x.std())
    x, x_v = x / scale, x_v / scale
    torch.manual_seed(run.seed)
    model = BearingCNN(run.k("width", 16), run.bug == "leaky_relu_slope_given_true")
    batch = run.k("batch", 32)
    name = run.k("opt", "adam")
    lr = run.k("lr", 2e-3)
    if name in ("momentum", "nesterov"):
        # the linear scaling rule: the recipe's rate is for a batch of 256
        lr = lr * batch if run.bug == "linear_scaling_without_reference_batch" else lr * batch / 256
    opt = optimizers.make_optimizer(
        name, model.parameters(), lr, weight_decay=1e-4 if name == "adamw" else 0.0
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    accumulate = 8  # the recipe's accumulation, for a larger card's memory; this loop steps every batch

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        if run.bug == "crop_offset_left_at_zero":
            starts = torch.zeros(batch, dtype=torch.long)  # left from checking the loader on a fixed window
        else:
            starts = torch.randint(0, RECORDING - WINDOW + 1, (batch,), generator=run.gen)
        windows = torch.stack([x[i, s : s + WINDOW] for i, s in zip(pick, starts, strict=True)])
        loss = F.cross_entropy(model(windows), y[pick])
        if run.bug == "loss_divided_by_unused_accumulation":
            loss = loss / accumulate
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


FEATURES = ("log_var_dq", "q2", "fade_100", "ir", "ir_change", "temp_k", "charge_s", "c_rate")
"""The early-cycle features of a cell, in the order of its feature columns."""


def _cells(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Early-cycle features float[n, 8] in their units and the cycle life float[n] in cycles (most between 300 and
    2000)."""
    z = torch.randn(n, generator=g)
    c_rate = 3 + 5 * torch.rand(n, generator=g)
    temp = 303 + 1.5 * (c_rate - 5) + 1.0 * z + 0.8 * torch.randn(n, generator=g)
    log_life = 6.9 - 0.45 * z - 0.12 * z**2 - 0.05 * (c_rate - 5) - 0.03 * (temp - 303) ** 2 / 4
    cols = [
        -4.5 + 0.7 * z + 0.25 * torch.randn(n, generator=g),
        1.07 + 0.01 * torch.randn(n, generator=g) - 0.004 * z,
        -0.01 * torch.exp(0.5 * z) + 0.004 * torch.randn(n, generator=g),
        0.016 + 0.0015 * z + 0.001 * torch.randn(n, generator=g),
        0.0003 * torch.exp(0.6 * z) + 0.0002 * torch.randn(n, generator=g),
        temp,
        3600 * 2.2 / c_rate + 60 * torch.randn(n, generator=g),
        c_rate,
    ]
    return torch.stack(cols, 1), torch.exp(log_life + 0.08 * torch.randn(n, generator=g))


def batteries(run: Run) -> None:
    """A cycle-life MLP (two tanh layers of `hidden` (64)), batches of `batch` (32), `opt` (Adam; or momentum SGD,
    AdamW, Adagrad) at `lr` (3e-3). Scored by the held-out R^2 of the log cycle life."""
    g = torch.Generator().manual_seed(run.seed)
    pool, pool_life = _cells(g, 1000)
    f_v, life_v = _cells(g, 800)
    if run.bug == "cells_listed_by_failure_taken_first":
        # the lab's table lists the cells in the order they reached end of life; the first 240 rows are taken
        keep = pool_life.argsort()[:240]
    else:
        keep = torch.randperm(len(pool), generator=g)[:240]
    f, life = pool[keep], pool_life[keep]
    # the columns to standardise; temperature and charge time were appended to the table later
    scaled = 6 if run.bug == "kelvin_and_seconds_columns_left_unscaled" else len(FEATURES)
    mean, std = f.mean(0), f.std(0)
    mean[scaled:], std[scaled:] = 0.0, 1.0
    x, x_v = (f - mean) / std, (f_v - mean) / std
    log_life = life.log()
    # the bug centres the log target by the mean of the lives in cycles, typed for the mean of their logs
    mu = life.mean() if run.bug == "log_target_centred_by_cycles_mean" else log_life.mean()
    sd = log_life.std()
    target = (log_life - mu) / sd
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    model = nn.Sequential(nn.Linear(len(FEATURES), hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                          nn.Linear(hidden, 1))  # fmt: skip
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v).squeeze(-1) * sd + mu, life_v.log())

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.mse_loss(model(x[pick]).squeeze(-1), target[pick])
        opt.zero_grad()
        if run.bug == "step_called_before_backward":
            opt.step()
            loss.backward()
        else:
            loss.backward()
            opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
