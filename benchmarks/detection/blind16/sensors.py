"""Sensor scripts of the sixteenth blind split: a human-activity recogniser on accelerometer windows, and a
seq2point energy disaggregator (non-intrusive load monitoring).

`activity`: 2.56 s windows (64 samples at 25 Hz) of a phone's 3-axis accelerometer in m/s^2 for five activities
(still, walking, running, climbing stairs, cycling), each a gait of its own frequency and shape along the body's axes
plus gravity, seen through the phone's orientation in the pocket (one orientation a subject, 8 training subjects and
new subjects for validation); converted to g, randomly rotated as augmentation; a 1-D CNN with batch normalisation and
a global average, cross-entropy; scored by the held-out subjects' accuracy. `disaggregation`: a house's mains meter
(active power in W, a reactive-power column this meter leaves at 0, the voltage) summing a 1.5 kW heater's long
plateaus, a kettle's short 2.2 kW bursts, a fridge's compressor cycles and a base load; windows of 47 samples
standardised per channel; a convolution and a bidirectional GRU read the window and a linear head gives the heater's
power (in kW) at its midpoint, by mean squared error, the learning rate halved every 100 steps; scored by the R^2
of the heater's power at the midpoints of a held-out house's windows. Bugs: the rotation augmentation left out; an
SGD learning rate given to Adam; `zero_grad` between `backward` and `step`; the mains fed in watts; the constant
column divided by its zero spread; the epoch decay stepped every batch; the sub-meter's trace out of step with the
mains.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

RATE, WINDOW, ACTIVITIES, GRAVITY = 25.0, 64, 5, 9.81
"""Samples a second, samples a window, activities, m/s^2 in a g."""


def _rotations(g: torch.Generator, n: int) -> torch.Tensor:
    """Uniformly random rotation matrices float[n, 3, 3] (QR of Gaussian matrices, signs fixed)."""
    q, r = torch.linalg.qr(torch.randn(n, 3, 3, generator=g))
    q = q * torch.sign(torch.diagonal(r, dim1=1, dim2=2)).unsqueeze(1)
    flip = torch.linalg.det(q) < 0
    q[flip, :, 0] = -q[flip, :, 0]
    return q


def _windows(g: torch.Generator, subjects: int, per_subject: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Accelerometer windows float[n, 3, WINDOW] in m/s^2 (phone axes) and their activity int64[n]."""
    n = subjects * per_subject
    label = torch.randint(0, ACTIVITIES, (n,), generator=g)
    # (frequency range Hz, vertical, forward, lateral amplitude m/s^2, second harmonic's share)
    gait = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0], [1.9, 2.0, 1.0, 0.4, 0.3], [2.8, 6.0, 2.0, 0.8, 0.2],
                         [1.6, 2.5, 0.6, 0.3, 0.8], [1.2, 0.5, 0.3, 1.6, 0.1]])  # fmt: skip
    p = gait[label]
    freq = p[:, 0] * (0.85 + 0.3 * torch.rand(n, generator=g))
    phase = 2 * math.pi * torch.rand(n, 3, generator=g)
    t = torch.arange(WINDOW) / RATE
    wave = torch.sin(2 * math.pi * freq.view(n, 1, 1) * t + phase.unsqueeze(2))
    wave = wave + p[:, 4].view(n, 1, 1) * torch.sin(
        4 * math.pi * freq.view(n, 1, 1) * t + 2 * phase.unsqueeze(2)
    )
    amp = torch.stack([p[:, 2], p[:, 3], p[:, 1]], 1) * (0.8 + 0.4 * torch.rand(n, 1, generator=g))
    body = amp.unsqueeze(2) * wave + 0.3 * torch.randn(n, 3, WINDOW, generator=g)
    body[:, 2] += GRAVITY
    pocket = _rotations(g, subjects).repeat_interleave(per_subject, 0)
    return pocket @ body, label


class ActivityNet(nn.Module):
    """Three 1-D convolutions of `channels` with batch normalisation, a global average, a linear head."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        c = channels
        self.body = nn.Sequential(nn.Conv1d(3, c, 7, padding=3), nn.BatchNorm1d(c), nn.ReLU(),
                                  nn.Conv1d(c, c, 5, stride=2, padding=2), nn.BatchNorm1d(c), nn.ReLU(),
                                  nn.Conv1d(c, 2 * c, 5, stride=2, padding=2), nn.BatchNorm1d(2 * c), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(2 * c, ACTIVITIES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x).mean(2))


def activity(run: Run) -> None:
    """An activity recogniser of `channels` (16), batches of `batch` (64), `opt` (Adam; or AdamW, RMSprop,
    Nesterov SGD) at `lr` (2e-3). Scored by the held-out subjects' accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _windows(g, 8, 40)
    x_v, y_v = _windows(g, 30, 20)
    x, x_v = x / GRAVITY, x_v / GRAVITY
    torch.manual_seed(run.seed)
    model = ActivityNet(run.k("channels", 16))
    opt = optimizers.registered(run, model, 2e-3)
    if run.bug == "adam_given_sgd_learning_rate":
        for group in opt.param_groups:
            group["lr"] = 0.5
    batch = run.k("batch", 64)

    def held_out_accuracy() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        xb = x[pick]
        if run.bug != "rotation_augmentation_left_out":
            xb = _rotations(run.gen, len(pick)) @ xb
        loss = F.cross_entropy(model(xb), y[pick])
        if run.bug == "zero_grad_between_backward_and_step":
            loss.backward()
            opt.zero_grad()
        else:
            opt.zero_grad()
            loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", held_out_accuracy):
            break


SPAN, HALF = 47, 23
"""Samples a disaggregation window, and the midpoint's offset."""


def _house(g: torch.Generator, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A house's meter readings float[3, length] (active W, reactive var (not recorded: 0), voltage V) and the
    heater's sub-metered power float[length] in W."""

    def bursts(rate: float, shortest: int, longest: int) -> torch.Tensor:
        on = torch.zeros(length)
        starts = (torch.rand(length, generator=g) < rate).nonzero().flatten()
        spans = torch.randint(shortest, longest + 1, (len(starts),), generator=g)
        for s, d in zip(starts.tolist(), spans.tolist(), strict=True):
            on[s : s + d] = 1.0
        return on

    heater = bursts(1 / 150, 20, 60) * (1500 + 30 * torch.randn(length, generator=g))
    kettle = bursts(1 / 120, 3, 6) * 2200
    t = torch.arange(length, dtype=torch.float32)
    fridge = 120 * (torch.sin(2 * math.pi * t / 40 + float(torch.rand((), generator=g)) * 6) > 0.2).float()
    base = 150 + 40 * torch.sin(2 * math.pi * t / 700) + 10 * torch.randn(length, generator=g)
    active = heater + kettle + fridge + base
    voltage = 232 - 0.002 * active + 1.5 * torch.randn(length, generator=g)
    return torch.stack([active, torch.zeros(length), voltage]), heater


class Disaggregator(nn.Module):
    """A convolution of 16 over the 3 channels, a bidirectional GRU of `hidden`, a linear head at the midpoint."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(3, 16, 5, padding=2)
        self.gru = nn.GRU(16, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.gru(F.relu(self.conv(x)).transpose(1, 2))
        return self.head(h[:, HALF])[:, 0]


def disaggregation(run: Run) -> None:
    """A seq2point disaggregator with a GRU of `hidden` (24), batches of `batch` (64), `opt` (Adam; or AdamW, RMSprop,
    NAdam) at `lr` (3e-3) halved every 100 steps. Scored by the R^2 of the held-out house's heater power."""
    g = torch.Generator().manual_seed(run.seed)
    meter, heater = _house(g, 12000)
    meter_v, heater_v = _house(g, 4000)
    if run.bug == "submeter_out_of_step_with_mains":
        heater = torch.roll(heater, 40)
    mean, std = meter.mean(1, keepdim=True), meter.std(1, keepdim=True)
    if run.bug != "constant_column_divided_by_zero_std":
        std = torch.where(std > 0, std, torch.ones(()))
    if run.bug != "mains_fed_in_watts":
        meter, meter_v = (meter - mean) / std, (meter_v - mean) / std
    starts_v = torch.randint(0, meter_v.shape[1] - SPAN, (300,), generator=g)
    offsets = torch.arange(SPAN)
    x_v = meter_v[:, starts_v.unsqueeze(1) + offsets].transpose(0, 1)
    y_v = heater_v[starts_v + HALF] / 1000
    torch.manual_seed(run.seed)
    model = Disaggregator(run.k("hidden", 24))
    opt = optimizers.registered(run, model, 3e-3)
    if run.bug == "epoch_decay_stepped_every_batch":
        sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    else:
        sched = torch.optim.lr_scheduler.StepLR(opt, 100, gamma=0.5)
    batch = run.k("batch", 64)

    def heater_r2() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        starts = torch.randint(0, meter.shape[1] - SPAN, (batch,), generator=run.gen)
        xb = meter[:, starts.unsqueeze(1) + offsets].transpose(0, 1)
        loss = F.mse_loss(model(xb), heater[starts + HALF] / 1000)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_heater_r2", heater_r2):
            break
