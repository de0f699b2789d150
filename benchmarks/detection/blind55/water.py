"""Water scripts of the fifty-fifth blind split: a fish-farm dissolved-oxygen forecaster for a sea cage's aerators,
and a crevasse detector on ground-penetrating radar ahead of an ice-sheet traverse.

`oxygen`: a cage's last 12 hourly readings (dissolved oxygen in mg/l, water temperature, feed given in kg, aerator on,
sunlight); the next 6 hours' oxygen by an LSTM over the hours and a linear head; MSE on the standardised oxygen;
scored by the held-out R^2 on other farms' cages. `crevasse`: a radargram patch (12 traces of 24 samples, 16-bit
counts) from a sled-towed antenna, background-removed and gained with depth; a crevasse beneath (a snow bridge's
diffraction hyperbolas, the void's shadow on the firn layers) or not, by a 2-D CNN; BCE; scored by the held-out AUC on
another traverse route. Bugs: the forecast horizon passed to nn.LSTM as its number of layers; the target sliced from
the input window's last hours; the gain in dB applied as a power of ten; the crevasse flags matched to the patches
without the antenna's offset; the hand-probe column kept as an input.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

HOURS, HORIZON = 12, 6


def _cages(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows float[n, HOURS, 5] (oxygen mg/l, water temperature C, feed kg, aerator on, sunlight) and the next
    HORIZON hours' oxygen float[n, HORIZON]."""
    total = HOURS + HORIZON
    start = torch.randint(0, 24, (n, 1), generator=g)
    hour = (start + torch.arange(total)) % 24
    temp = 12 + 14 * torch.rand(n, 1, generator=g) + 0.3 * torch.randn(n, total, generator=g)
    sun = (torch.sin((hour.float() - 6) / 12 * torch.pi)).clamp(min=0) * (
        0.4 + 0.6 * torch.rand(n, 1, generator=g)
    )
    biomass = 0.6 + 1.6 * torch.rand(n, 1, generator=g)  # stocking relative to the farm's norm
    fed = ((hour == 8) | (hour == 15)).float() * biomass * (20 + 10 * torch.rand(n, total, generator=g))
    flush = 0.15 + 0.25 * torch.rand(n, 1, generator=g)  # how fast the current renews the cage's water
    sat = 14.6 - 0.39 * temp + 0.007 * temp**2  # saturation in mg/l
    do = sat[:, :1] * (0.75 + 0.2 * torch.rand(n, 1, generator=g))
    rows, aer_on = [], torch.zeros(n, 1)
    digesting = torch.zeros(n, 1)
    for t in range(total):
        aer_on = (do < 5.0).float()
        digesting = 0.7 * digesting + fed[:, t : t + 1] / 20
        uptake = biomass * (0.12 + 0.015 * temp[:, t : t + 1]) * (1 + 0.6 * digesting)
        do = (do + flush * (sat[:, t : t + 1] - do) + 0.5 * sun[:, t : t + 1] - uptake + 0.5 * aer_on
              + 0.15 * torch.randn(n, 1, generator=g)).clamp(min=0.5)  # fmt: skip
        rows.append(torch.cat([do, temp[:, t : t + 1], fed[:, t : t + 1], aer_on, sun[:, t : t + 1]], 1))
    seq = torch.stack(rows, 1)
    return seq[:, :HOURS], seq[:, HOURS:, 0]


class OxygenLSTM(nn.Module):
    """An LSTM of `hidden` units over the hours and a linear head of the next HORIZON hours' oxygen."""

    def __init__(self, inputs: int, hidden: int, horizon: int, layers_typo: bool = False) -> None:
        super().__init__()
        # the bug: the horizon passed on as nn.LSTM's third positional argument, its num_layers
        self.lstm = (
            nn.LSTM(inputs, hidden, horizon, batch_first=True)
            if layers_typo
            else nn.LSTM(inputs, hidden, batch_first=True)
        )
        self.head = nn.Linear(hidden, horizon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def oxygen(run: Run) -> None:
    """An oxygen LSTM of `hidden` (24), batches of `batch` (64), `opt` (Adam; or RMSprop, Adamax, momentum SGD) at
    `lr` (3e-3), gradients clipped to norm 1. Scored by the held-out R^2 of the next hours' oxygen on other farms."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _cages(g, 1600)
    x_v, y_v = _cages(g, 300)
    if run.bug == "target_sliced_from_input_window":
        # the bug: the target sliced as window[:, -HORIZON:] from the input window, not from the hours after it
        y = x[:, -HORIZON:, 0].clone()
    # a scaler as sklearn's: a constant column is left unscaled
    mean, std = x.mean((0, 1)), x.std((0, 1))
    std = torch.where(std > 0, std, torch.ones_like(std))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = OxygenLSTM(
        5, run.k("hidden", 24), HORIZON, layers_typo=run.bug == "horizon_passed_as_lstm_num_layers"
    )
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


TRACES, SAMPLES = 12, 24


def _route(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A traverse route's patches in order along the track: radargrams float[n, TRACES, SAMPLES] in counts, the
    crevasse flag beneath each patch's antenna float[n], the flag at the GPS receiver, three patches behind, and
    whether the patch was hand-probed afterwards float[n]."""
    # the shear margin's crevasse fields: runs of crevassed patches, denser over a stretch of the route
    margin = torch.rand(1, generator=g) * 0.6
    pos = torch.arange(n).float() / n
    p_start = 0.02 + 0.25 * ((pos - margin - 0.2).abs() < 0.2).float()
    flags = torch.zeros(n)
    i = 0
    while i < n:
        if torch.rand(1, generator=g) < p_start[i]:
            run_len = int(torch.randint(2, 6, (1,), generator=g))
            flags[i : i + run_len] = 1
            i += run_len + 3
        else:
            i += 1
    t = torch.arange(SAMPLES).float()
    tr = torch.arange(TRACES).float()
    # firn layers: near-horizontal reflectors with a gentle undulation
    depths = 4 + 20 * torch.rand(n, 6, generator=g)
    tilt = 0.15 * torch.randn(n, 6, generator=g)
    amp = 200 + 300 * torch.rand(n, 6, generator=g)
    layer_t = depths.unsqueeze(-1) + tilt.unsqueeze(-1) * (tr - TRACES / 2)  # [n, 6, TRACES]
    wavelet = lambda d: torch.exp(-(d**2) / 2) * torch.cos(1.8 * d)
    img = (amp.view(n, 6, 1, 1) * wavelet(t.view(1, 1, 1, SAMPLES) - layer_t.unsqueeze(-1))).sum(1)
    # the snow bridge's void: diffraction hyperbolas from its edges and a bright roof, fainter under thicker bridges
    apex_x = 3 + 6 * torch.rand(n, generator=g)
    apex_t = 5 + 10 * torch.rand(n, generator=g)
    strength = flags * (300 + 700 * torch.rand(n, generator=g))
    hyper_t = torch.sqrt(apex_t.view(n, 1) ** 2 + (2 * (tr - apex_x.view(n, 1))) ** 2)
    img = img + strength.view(n, 1, 1) * wavelet(t.view(1, 1, SAMPLES) - hyper_t.unsqueeze(-1))
    # beneath the void the firn's layers go dark
    shadow = (t.view(1, 1, SAMPLES) > apex_t.view(n, 1, 1) + 2) & (
        (tr - apex_x.view(n, 1)).abs() < 3
    ).unsqueeze(-1)
    img = torch.where(shadow & (flags.view(n, 1, 1) > 0), 0.3 * img, img)
    # attenuation with depth, then receiver noise and the direct wave at the top
    img = img * torch.exp(-t / 20) + 120 * torch.randn(n, TRACES, SAMPLES, generator=g)
    img = img + 4000 * wavelet(t - 2).view(1, 1, SAMPLES)
    gps = torch.cat([torch.zeros(3), flags[:-3]])
    # the traverse's hand probe, pushed where the operator saw a suspect on the screen: most crevasses, a few others
    probed = torch.where(
        flags > 0, torch.rand(n, generator=g) < 0.95, torch.rand(n, generator=g) < 0.03
    ).float()
    return img, flags, gps, probed


class CrevasseCNN(nn.Module):
    """Three conv blocks of `width` channels with ReLU and pooling, global max pooling, and a linear head over the
    pooled channels and `extra` scalar inputs."""

    def __init__(self, width: int, extra: int = 0) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(width + extra, 1)

    def forward(self, x: torch.Tensor, extra: torch.Tensor | None = None) -> torch.Tensor:
        h = self.net(x.unsqueeze(1)).amax((-2, -1))
        return self.head(h if extra is None else torch.cat([h, extra], 1)).squeeze(-1)


def crevasse(run: Run) -> None:
    """A crevasse CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, Adagrad) at
    `lr` (2e-3). Scored by the held-out AUC of a crevasse beneath on another route."""
    g = torch.Generator().manual_seed(run.seed)
    img, y, gps, probed = _route(g, 1600)
    img_v, y_v, _, _ = _route(g, 300)
    # background removal: the mean trace of each patch (the direct wave and the flat firn layers) taken out, and the
    # counts scaled by the raw survey's spread before the depth gain
    img, img_v = img - img.mean(1, keepdim=True), img_v - img_v.mean(1, keepdim=True)
    spread = img.std()
    # the survey's gain: 0 dB at the surface rising to 12 dB at the bottom sample
    gain_db = 12 * torch.arange(SAMPLES).float() / (SAMPLES - 1)
    if run.bug == "gain_db_applied_as_power_of_ten":
        # the bug: the gain in dB applied as 10 ** dB where 10 ** (dB / 20) turns it into an amplitude factor
        gain = 10**gain_db
    else:
        gain = 10 ** (gain_db / 20)
    x, x_v = img / spread * gain, img_v / spread * gain
    if run.bug == "gps_antenna_offset_ignored":
        # the bug: the crevasse flags matched to the patches by the GPS fix, the antenna 3 patches ahead of it
        y = gps
    extra = extra_v = None
    if run.bug == "probe_column_kept":
        # the bug: the survey table's hand-probe column left among the inputs; on a new route nothing is probed yet
        extra, extra_v = probed.unsqueeze(1), torch.zeros(len(y_v), 1)
    torch.manual_seed(run.seed)
    model = CrevasseCNN(run.k("width", 8), 0 if extra is None else 1)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def auc_held_out() -> float:
        return auc(model(x_v, extra_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(
            model(x[pick], None if extra is None else extra[pick]), y[pick]
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
