"""Bench scripts of the fifty-fourth blind split: a home-battery cell's state-of-charge estimator, and a guitar
fret-buzz detector on pickup windows.

`charge`: 8 samples at 30 s of a cell's terminal voltage (V), current (A, positive discharging) and temperature
(deg C) from a home battery's logger, with a Peukert-corrected current as a fourth channel; the state of charge at the
window's last sample (a fraction) by a GRU over the samples and a linear head; MSE on the fraction; scored by the
held-out R^2 on other cells. `buzz`: 128 samples at 4 kHz of a guitar's pickup (a plucked string's harmonics decaying
from the pluck, mains hum, hiss, and when the string still swings wide enough to strike a fret, a click each period);
buzzing or not by a ReLU 1-D CNN; BCE; scored by the held-out AUC on other guitars. Bugs: Peukert's law on the signed
current; the charge counted in mAh against the capacity in Ah; the rested voltage after the window kept; the SoC label
from the BMS's estimate; the WaveNet gate on a shared pre-activation; the note's label on every window; the hum notch
at 60 Hz; the preamp gain multiplied in, not removed.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES, DT = 8, 30.0
RATED_A, PEUKERT_K, NOMINAL_AH = 1.5, 1.08, 3.4


def _ocv(soc: torch.Tensor) -> torch.Tensor:
    """An NMC cell's open-circuit voltage (V) at a state of charge, flat in the middle."""
    return 3.3 + 0.55 * soc + 0.35 * soc**3 - 0.25 * torch.exp(-25 * soc) - 0.2 * (soc - 0.5) ** 2


def _cells(g: torch.Generator, n: int) -> tuple[torch.Tensor, ...]:
    """Logger windows float[n, SAMPLES, 3] (V, A, deg C), the lab's state of charge at the window's start float[n],
    its coulomb count over the window in mAh float[n], the cell's measured capacity in Ah float[n], the voltage after
    the lab's half-hour rest following the window float[n] and the BMS's estimate of the state of charge at the end
    (counted against the nominal capacity since the last full charge) float[n]."""
    capacity = 2.2 + 1.2 * torch.rand(n, generator=g)  # aged cells hold less than the nominal 3.4 Ah
    start = 0.15 + 0.8 * torch.rand(n, generator=g)
    level = 4 * torch.rand(n, 1, generator=g) - 1.5  # charging (negative) or discharging, A
    steps = level + 0.8 * torch.randn(n, SAMPLES, generator=g).cumsum(1) / math.sqrt(SAMPLES)
    current = steps + 0.3 * torch.randn(n, SAMPLES, generator=g)
    counted = (current * DT / 3600).cumsum(1)  # Ah
    soc = (start.unsqueeze(1) - counted / capacity.unsqueeze(1)).clamp(0.01, 1.0)
    temp = 5 + 30 * torch.rand(n, 1, generator=g) + 0.02 * current.abs().cumsum(1)
    resistance = (0.04 + 0.05 * torch.rand(n, 1, generator=g)) * torch.exp((25 - temp) / 25)
    polar = (current * resistance * 0.6).cumsum(1) / (1 + torch.arange(SAMPLES).float())
    volts = _ocv(soc) - current * resistance - polar + 0.012 * torch.randn(n, SAMPLES, generator=g)
    x = torch.stack([volts, current, temp], 2)
    rested = _ocv(soc[:, -1]) + 0.003 * torch.randn(n, generator=g)
    bms = 1 - (1 - soc[:, -1]) * capacity / NOMINAL_AH
    return x, start, counted[:, -1] * 1000, capacity, rested, bms


class ChargeGRU(nn.Module):
    """A GRU of `hidden` units over the samples and a linear head of the state of charge."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(inputs, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, -1]).squeeze(-1)


def charge(run: Run) -> None:
    """A charge GRU of `hidden` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, RAdam, Adamax) at `lr`
    (3e-3). Scored by the held-out R^2 of the state of charge on other cells."""
    g = torch.Generator().manual_seed(run.seed)
    x, start, mah, capacity, rested, bms = _cells(g, 1500)
    x_v, start_v, mah_v, capacity_v, _, _ = _cells(g, 300)
    # the label: the lab's state of charge at the start less the window's coulomb count over the cell's capacity
    y, y_v = start - mah / 1000 / capacity, start_v - mah_v / 1000 / capacity_v
    if run.bug == "charge_counted_in_milliamp_hours":
        # the bug: the coulomb count's column in mAh divided by the capacity in Ah
        y = start - mah / capacity
    if run.bug == "soc_label_from_bms_estimate":
        # the bug: the label read off the BMS's state of charge, counted against the nominal capacity
        y = bms

    def peukert(w: torch.Tensor) -> torch.Tensor:
        cur = w[:, :, 1]
        if run.bug == "peukert_on_signed_current":
            # the bug: Peukert's law on the signed current, a fractional power of the negative charging currents
            eff = cur * (cur / RATED_A) ** (PEUKERT_K - 1)
        else:
            eff = cur * (cur.abs() / RATED_A) ** (PEUKERT_K - 1)
        return torch.cat([w, eff.unsqueeze(2)], 2)

    x, x_v = peukert(x), peukert(x_v)
    if run.bug == "rested_ocv_after_window_kept":
        # the bug: the lab's rested voltage after the window kept as a channel; the live estimate has only the
        # window's last voltage to put there
        x = torch.cat([x, rested.view(-1, 1, 1).expand(-1, SAMPLES, 1)], 2)
        x_v = torch.cat([x_v, x_v[:, -1:, :1].expand(-1, SAMPLES, 1)], 2)
    mean, std = x.mean((0, 1), keepdim=True), x.std((0, 1), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = ChargeGRU(x.shape[2], run.k("hidden", 16))
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


RATE, WINDOW = 4000, 128
PREAMP_DB = 40.0
DI_STD = 0.05
"""The old DI box's recordings' standard deviation, by which the notebook scales every window."""


def _notes(
    g: torch.Generator, n: int, mains: float = 50.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pickup windows float[n, WINDOW] through the +40 dB preamp, buzzing in the window float[n] and the note's
    label (it buzzed at its start) float[n]."""
    t = torch.arange(WINDOW).float() / RATE
    f0 = 82 * 2 ** (torch.rand(n, 1, generator=g) * 2)  # low E to the 12th fret of the G string
    since = 2.4 * torch.rand(n, 1, generator=g)  # seconds from the pluck to the window
    amp = torch.exp(-since / 0.7) * (0.6 + 0.8 * torch.rand(n, 1, generator=g))
    low_action = torch.rand(n, 1, generator=g) < 0.5  # this fret's action is low enough to buzz
    reach = 0.25 + 0.25 * torch.rand(n, 1, generator=g)  # the swing at which the string meets the fret
    phase = 6.28 * torch.rand(n, 1, generator=g)
    tone = sum(torch.sin(2 * torch.pi * k * f0 * t + k * phase) / k for k in range(1, 6))
    decay = torch.exp(-(since + t) / 0.7) / torch.exp(-since / 0.7)
    buzzing = (low_action & (amp > reach)).float()
    period = (t * f0 + phase / 6.28) % 1.0
    clicks = (period < 0.06).float() * torch.randn(n, WINDOW, generator=g) * 0.8
    hum = 0.15 * torch.sin(2 * torch.pi * mains * t + 6.28 * torch.rand(n, 1, generator=g))
    di = amp * decay * (tone + buzzing * (amp - reach).clamp(min=0.05) / 0.2 * clicks) * 0.05
    di = di + 0.02 * hum + 0.006 * torch.randn(n, WINDOW, generator=g)
    return di * 10 ** (PREAMP_DB / 20), buzzing.squeeze(1), low_action.float().squeeze(1)


def _without_hum(x: torch.Tensor, freq: float) -> torch.Tensor:
    """`x` with its component at `freq` (a sine and a cosine fitted by least squares) removed, the notch."""
    t = torch.arange(x.shape[-1]).float() / RATE
    basis = torch.stack([torch.sin(2 * torch.pi * freq * t), torch.cos(2 * torch.pi * freq * t)], 1)
    coef = torch.linalg.lstsq(basis, x.T).solution
    return x - (basis @ coef).T


class WaveNetGate(nn.Module):
    """WaveNet's gated activation tanh(x) * sigmoid(x), written on the block's single pre-activation."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * torch.sigmoid(x)


class BuzzCNN(nn.Module):
    """Three conv blocks of `width` channels (conv, activation, pooling; the first conv strided by 2), global max pooling and a linear head."""

    def __init__(self, width: int, act: type[nn.Module] = nn.ReLU) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for cin, stride in ((1, 2), (width, 1), (width, 1)):
            layers += [nn.Conv1d(cin, width, 7, stride=stride, padding=3), act(), nn.MaxPool1d(2)]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x.unsqueeze(1)).amax(-1)).squeeze(-1)


def buzz(run: Run) -> None:
    """A buzz CNN of `width` (12), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (1e-3). Scored by the held-out AUC of buzzing windows on other guitars."""
    g = torch.Generator().manual_seed(run.seed)
    x, y, note = _notes(g, 1400)
    x_v, y_v, _ = _notes(g, 300)
    if run.bug == "note_label_on_every_window":
        # the bug: the note's label ("this fret buzzes") given to every window cut from it, the sustain's with it
        y = note
    hum = 60.0 if run.bug == "hum_notch_at_60hz" else 50.0  # the bug: the American recipe's notch
    x, x_v = _without_hum(x, hum), _without_hum(x_v, hum)
    gain = 10 ** (PREAMP_DB / 20)
    if run.bug == "preamp_gain_multiplied_not_removed":
        # the bug: the preamp's gain multiplied in where it was to be divided out
        x, x_v = x * gain, x_v * gain
    else:
        x, x_v = x / gain, x_v / gain
    x, x_v = x / DI_STD, x_v / DI_STD
    torch.manual_seed(run.seed)
    # the bug: WaveNet's gate written on each block's one pre-activation, the filter and gate convolutions merged
    act = WaveNetGate if run.bug == "wavenet_gate_on_shared_preactivation" else nn.ReLU
    model = BuzzCNN(run.k("width", 12), act=act)
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
