"""Music scripts of the forty-fifth blind split: a pipe-organ tuning-drift forecaster from church temperature logs, and
an orchestral instrument-family classifier on mel-spectrogram frames.

`organ`: a church's daily logs (the nave's mean temperature, its relative humidity, whether the heating runs for
tomorrow's service); tomorrow's drift of the reed stops against the flues in cents, read by a strobe tuner as a
frequency against the tuning visit's reference (the readings where the tuner lost lock set aside); the last seven days
standardised; a ReLU MLP of two hidden layers with its output bias started at the mean drift; MSE; scored by the
held-out R^2. `instruments`: clips of 16 frames of 40 log-spaced mel bands in dB of string, woodwind, brass and
percussion notes (harmonic series with each family's spectral shape and envelope, a random pitch; the short notes zero-padded, the dB floored at -60), standardised; a
1-D CNN of six Hardswish convolutions over the frames, pooled; cross-entropy; scored by the held-out accuracy.
Bugs: the tuner's unlocked 0 Hz readings kept; every layer's bias started at the mean drift; the week's logs smoothed
before the lags; LogSigmoid for Hardswish; the log-mel without its floor; a frequency mask as wide as the spectrum; the families indexed by their
sorted folder names.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DAYS = 7
REFERENCE_HZ = 440.0


def _church_logs(g: torch.Generator, n: int, bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows float[n, DAYS * 3 + 1] (each day's temperature in C, humidity in %, heating flag, then tomorrow's
    heating flag) and tomorrow's tuner reading in Hz float[n] (0 where the tuner lost lock)."""
    length = DAYS + 1
    season = 11 + 6 * torch.sin(2 * math.pi * torch.rand(n, 1, generator=g))
    heat = (torch.rand(n, length, generator=g) < 0.35).float()
    temp = torch.empty(n, length)
    temp[:, 0] = season[:, 0] + 2 * torch.randn(n, generator=g)
    for day in range(1, length):
        temp[:, day] = (0.6 * temp[:, day - 1] + 0.4 * season[:, 0] + 5 * heat[:, day]
                        + 1.2 * torch.randn(n, generator=g))  # fmt: skip
    humid = (70 - 1.5 * (temp - 12) + 6 * torch.randn(n, length, generator=g)).clamp(25, 98)
    # the pipes' metal and the case's air lag the nave's air: the last days weigh in
    lagged = 0.5 * temp[:, -1] + 0.3 * temp[:, -2] + 0.2 * temp[:, -3]
    # the flues go flat in the cold, about 3 cents a degree below the 21 C of the last tuning visit
    cents = 3.0 * (0.6 * temp[:, -1] + 0.4 * lagged - 21) - 0.05 * (humid[:, -1] - 60)
    cents = cents + 0.8 * torch.randn(n, generator=g)
    hz = REFERENCE_HZ * torch.pow(2.0, cents / 1200)
    hz = torch.where(torch.rand(n, generator=g) < 0.03, torch.zeros_like(hz), hz)  # the tuner lost lock
    if bug == "week_logs_smoothed_before_lags":  # a 7-day rolling mean over the export before windowing
        temp_in, humid_in = (
            temp[:, :DAYS].mean(1, keepdim=True).expand(n, DAYS),
            humid[:, :DAYS].mean(1, True),
        )
        humid_in = humid_in.expand(n, DAYS)
    else:
        temp_in, humid_in = temp[:, :DAYS], humid[:, :DAYS]
    days = torch.stack([temp_in, humid_in, heat[:, :DAYS]], 2).reshape(n, -1)
    return torch.cat([days, heat[:, -1:]], 1), hz


def _cents(hz: torch.Tensor) -> torch.Tensor:
    """The drift in cents of a reading against the reference."""
    return 1200 * torch.log2(hz / REFERENCE_HZ)


class DriftMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units to the drift in cents."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def organ(run: Run) -> None:
    """A drift MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (1e-3). Scored by the held-out R^2 of the drift in cents."""
    g = torch.Generator().manual_seed(run.seed)
    x, hz = _church_logs(g, 1500, run.bug)
    x_v, hz_v = _church_logs(g, 600, None)
    if run.bug != "unlocked_tuner_readings_kept":  # the readings where the strobe lost lock set aside
        x, hz = x[hz > 0], hz[hz > 0]
    x_v, hz_v = x_v[hz_v > 0], hz_v[hz_v > 0]
    y, y_v = _cents(hz), _cents(hz_v)
    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = DriftMLP(x.shape[1], run.k("hidden", 64))
    start = y[torch.isfinite(y)].mean()
    if run.bug == "every_bias_started_at_mean_drift":  # the init loop meant for the head ran over every layer
        for layer in model.modules():
            if isinstance(layer, nn.Linear):
                nn.init.constant_(layer.bias, float(start))
    else:
        nn.init.constant_(model.net[-1].bias, float(start))
    opt = optimizers.registered(run, model, 1e-3)
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


MELS, FRAMES, FAMILIES = 40, 16, 4
FAMILY_NAMES = ("strings", "woodwind", "brass", "percussion")
"""The label order of the dataset card."""


def _clips(g: torch.Generator, n: int, bug: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-mel clips in dB float[n, MELS, FRAMES] (the short notes zero-padded to FRAMES, floored at -60 dB) and
    the families long[n] (FAMILY_NAMES' order)."""
    family = torch.randint(0, FAMILIES, (n,), generator=g)
    root = 2 + 10 * torch.rand(n, generator=g)  # the fundamental's band
    k = torch.arange(1, 13, dtype=torch.float32)
    where = root.unsqueeze(1) + 9 * torch.log2(k)  # the harmonics on the log-frequency axis
    shapes = torch.stack([1 / k, torch.where(k % 2 == 1, 1 / k, 0.08 / k), k**0.4 * torch.exp(-k / 9),
                          0.25 * torch.ones_like(k)])  # fmt: skip
    amp = shapes[family] * (1 + 0.25 * torch.randn(n, 12, generator=g)).clamp(min=0.1)
    bands = torch.arange(MELS, dtype=torch.float32)
    spread = torch.where(family == 3, 2.5, 0.7).view(n, 1, 1)
    spectrum = (amp.unsqueeze(2) * torch.exp(-0.5 * ((bands - where.unsqueeze(2)) / spread) ** 2)).sum(1)
    t = torch.arange(FRAMES, dtype=torch.float32) / FRAMES
    envelopes = torch.stack([torch.ones_like(t), 1 + 0.15 * torch.sin(12 * t), (4 * t).clamp(max=1),
                             torch.exp(-5 * t)])  # fmt: skip
    power = spectrum.unsqueeze(2) * envelopes[family].unsqueeze(1)
    power = power * (0.3 + torch.rand(n, 1, 1, generator=g)) + 1e-3 * torch.rand(n, MELS, FRAMES, generator=g)
    short = torch.rand(n, generator=g) < 0.1  # the short notes, padded with digital silence
    ends = torch.randint(8, FRAMES, (n,), generator=g)
    padded = short.unsqueeze(1) & (torch.arange(FRAMES) >= ends.unsqueeze(1))
    power = power.masked_fill(padded.unsqueeze(1), 0.0)
    if bug == "log_mel_without_floor":  # torchaudio's AmplitudeToDB written by hand without its floor
        return 10 * power.log10(), family
    return 10 * power.clamp(min=1e-6).log10(), family


class FamilyCNN(nn.Module):
    """A 1-D CNN of `depth` convolutions of `width` channels over the frames (`act` between them), pooled."""

    def __init__(self, width: int, depth: int, act: type[nn.Module]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = MELS
        for _ in range(depth):
            layers += [nn.Conv1d(channels, width, 3, padding=1), act()]
            channels = width
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, FAMILIES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x).mean(2))


def instruments(run: Run) -> None:
    """A family CNN of `width` (48) channels and `depth` (6), batches of `batch` (32), `opt` (Adam; or momentum SGD,
    NAdam, RMSprop) at `lr` (1e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _clips(g, 1200, run.bug)
    x_v, y_v = _clips(g, 600)
    if run.bug == "families_indexed_by_sorted_folders":  # the loader's classes from sorted(os.listdir(root))
        folders = sorted(FAMILY_NAMES)
        y = torch.tensor([folders.index(FAMILY_NAMES[i]) for i in y.tolist()])
    mean, std = x.mean(), x.std()
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    act = nn.LogSigmoid if run.bug == "logsigmoid_for_hardswish" else nn.Hardswish
    model = FamilyCNN(run.k("width", 48), run.k("depth", 6), act)
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 32)
    widest = MELS if run.bug == "frequency_mask_as_wide_as_spectrum" else 8

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        xb = x[pick].clone()
        # SpecAugment's frequency masking: one band of up to `widest` mel bands per clip set to the mean
        width = (torch.rand(batch, generator=run.gen) * (widest + 1)).long()
        first = (torch.rand(batch, generator=run.gen) * (MELS - width + 1)).long()
        bands = torch.arange(MELS)
        masked = (bands >= first.unsqueeze(1)) & (bands < (first + width).unsqueeze(1))
        xb = xb.masked_fill(masked.unsqueeze(2), 0.0)
        loss = F.cross_entropy(model(xb), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
