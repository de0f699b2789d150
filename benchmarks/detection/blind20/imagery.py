"""Imaging scripts of the twentieth blind split: a solar-power nowcaster from small sky images and a bird-call detector
on spectrogram clips.

`solar`: 16x16 grey sky-camera frames (uint8) of a sky whose brightness follows the sun's elevation, the sun a bright
disc placed by its elevation, and soft cloud blobs; the plant's power is its clear-sky output (a function of the
elevation, zero at night) times a clear-sky index that falls with the cloud over the sun; the frame less the clear-sky
background for that elevation goes through a small CNN whose features, with the clear-sky irradiance (per 1000 W/m^2),
feed an MLP that predicts the clear-sky index through a sigmoid; the power predicted is the index times the clear-sky
output; mean squared error on the index; scored by the held-out R^2 of the power. `birds`: power spectrograms of 16
bands x 24 frames, clips of 16-24 frames zero-padded to 24, pink background noise, half the clips with a rising chirp
of 6-10 frames at a random time and pitch and a random loudness; log power with a floor, standardised; a two-layer CNN
with a max over time; binary cross-entropy; scored by the held-out AUC. Bugs: the irradiance fed in W/m^2; the
background subtracted in uint8; the clear-sky index divided out at night; the log taken without a floor; the negative
clips recorded by another recorder; the clip losses summed under Nesterov SGD; the CNN trunk run under `no_grad`.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SKY = 16
"""Pixels per side of a sky frame."""


def _background(elev: torch.Tensor) -> torch.Tensor:
    """The clear sky's frame float[n, SKY, SKY] (0-255) for sun elevations in degrees, sun disc included."""
    n = len(elev)
    yy, xx = torch.meshgrid(torch.arange(SKY).float(), torch.arange(SKY).float(), indexing="ij")
    day = (elev / 70).clamp(0, 1).view(n, 1, 1)
    sun_y = (SKY - 1) * (1 - (elev.clamp(0, 70) / 70)).view(n, 1, 1)
    disc = torch.exp(-((yy - sun_y) ** 2 + (xx - SKY / 2) ** 2) / 4)
    return 20 + 120 * day + 100 * disc * (elev > 0).float().view(n, 1, 1)


def _skies(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Frames uint8[n, SKY, SKY], elevations (degrees), clear-sky irradiance (W/m^2) and power (share of capacity)."""
    elev = torch.rand(n, generator=g) * 80 - 10
    clear = 1000 * torch.sin(torch.deg2rad(elev.clamp(min=0)))
    blobs = torch.rand(n, 1, SKY + 6, SKY + 6, generator=g) < 0.06 * torch.rand(n, 1, 1, 1, generator=g) * 3
    cloud = F.avg_pool2d(blobs.float(), 7, 1).squeeze(1).clamp(0, 0.25) * 4
    base = _background(elev)
    sky = base * (1 - 0.6 * cloud) + 90 * cloud * (elev > 0).float().view(n, 1, 1)
    frames = (sky + 6 * torch.randn(n, SKY, SKY, generator=g)).clamp(0, 255).to(torch.uint8)
    yy = ((SKY - 1) * (1 - elev.clamp(0, 70) / 70)).round().long()
    over_sun = torch.stack([cloud[i, max(0, int(yy[i]) - 2) : int(yy[i]) + 3, SKY // 2 - 2 : SKY // 2 + 3].mean()
                            for i in range(n)])  # fmt: skip
    index = (1 - 0.8 * over_sun).clamp(0.05, 1)
    return frames, elev, clear, clear / 1000 * index


class Nowcaster(nn.Module):
    """Two strided convolutions of `width` channels and ReLU, pooled, then with the irradiance an MLP of 32 tanh
    units to the clear-sky index through a sigmoid."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, width, 3, 2, 1), nn.ReLU(), nn.Conv2d(width, width, 3, 2, 1), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(2), nn.Flatten())  # fmt: skip
        self.head = nn.Sequential(nn.Linear(4 * width + 1, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, frame: torch.Tensor, irradiance: torch.Tensor) -> torch.Tensor:
        h = torch.cat([self.conv(frame.unsqueeze(1)), irradiance.unsqueeze(1)], 1)
        return torch.sigmoid(self.head(h).squeeze(-1))


def _solar_inputs(frames: torch.Tensor, elev: torch.Tensor, clear: torch.Tensor, bug: str | None):
    """The frame less its clear-sky background (per 64 grey levels) and the irradiance the model sees."""
    background = _background(elev).round().to(torch.uint8)
    if bug == "cloud_difference_in_uint8":
        diff = (frames - background).float()
    else:
        diff = frames.float() - background.float()
    irradiance = clear if bug == "irradiance_fed_in_watts" else clear / 1000
    return diff / 64, irradiance


def solar(run: Run) -> None:
    """A solar-power nowcaster (a CNN of `width` (8) and an MLP head), batches of `batch` (64), `opt` (Adam; or
    RMSprop, momentum SGD, AdamW) at `lr` (2e-3). Scored by the held-out R^2 of the power."""
    g = torch.Generator().manual_seed(run.seed)
    frames, elev, clear, power = _skies(g, 1500)
    frames_v, elev_v, clear_v, power_v = _skies(g, 800)
    x, irr = _solar_inputs(frames, elev, clear, run.bug)
    x_v, irr_v = _solar_inputs(frames_v, elev_v, clear_v, run.bug)
    if run.bug == "clear_sky_index_at_night":
        index = power / (clear / 1000)
    else:
        index = power / (clear / 1000).clamp(min=1e-3)
    torch.manual_seed(run.seed)
    model = Nowcaster(run.k("width", 8))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v, irr_v) * clear_v / 1000, power_v)

    for step in range(run.steps):
        pick = run.indices(len(index), batch)
        loss = F.mse_loss(model(x[pick], irr[pick]), index[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


BANDS, FRAMES = 16, 24
"""Frequency bands and time frames of a spectrogram clip."""


def _clips(g: torch.Generator, n: int, quiet_negatives: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Power spectrograms float[n, BANDS, FRAMES] (0 in the padding) and call labels float[n]."""
    y = (torch.rand(n, generator=g) < 0.5).float()
    pink = (1 / (1 + torch.arange(BANDS).float() / 4)).view(1, BANDS, 1)
    spec = pink * torch.distributions.Exponential(1.0).sample((n, BANDS, FRAMES))
    if quiet_negatives:
        # the negative clips come from a second recorder with half the gain
        spec = spec * torch.where(y > 0, 1.0, 0.5).view(n, 1, 1)
    for i in torch.nonzero(y).flatten().tolist():
        length = int(torch.randint(6, 11, (1,), generator=g))
        t0 = int(torch.randint(0, FRAMES - length, (1,), generator=g))
        f0 = int(torch.randint(1, BANDS - 6, (1,), generator=g))
        loud = 0.6 + 1.8 * float(torch.rand(1, generator=g))
        for k in range(length):
            spec[i, f0 + k * 5 // length, t0 + k] += loud * 3
    lengths = torch.randint(16, FRAMES + 1, (n,), generator=g)
    pad = torch.arange(FRAMES).view(1, 1, FRAMES) >= lengths.view(n, 1, 1)
    return spec.masked_fill(pad, 0.0), y


class CallCNN(nn.Module):
    """Two 3x3 convolutions of `width` channels with ReLU (the trunk), a max over time and frequency, a linear layer."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, width, 3, padding=1),
                                   nn.ReLU())  # fmt: skip
        self.fc = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor, frozen_trunk: bool = False) -> torch.Tensor:
        if frozen_trunk:
            with torch.no_grad():
                h = self.trunk(x.unsqueeze(1))
        else:
            h = self.trunk(x.unsqueeze(1))
        return self.fc(h.amax((2, 3))).squeeze(-1)


def birds(run: Run) -> None:
    """A bird-call detector (a CNN of `width` (8)), batches of `batch` (64), `opt` (Adam; or AdamW, Nesterov SGD,
    RMSprop) at `lr` (2e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    spec, y = _clips(g, 1000, quiet_negatives=run.bug == "negatives_from_other_recorder")
    spec_v, y_v = _clips(g, 400)
    if run.bug == "log_spectrogram_without_floor":
        x, x_v = torch.log(spec), torch.log(spec_v)
    else:
        x, x_v = torch.log(spec + 1e-4), torch.log(spec_v + 1e-4)
    x, x_v = (x + 1.5) / 2.5, (x_v + 1.5) / 2.5
    torch.manual_seed(run.seed)
    model = CallCNN(run.k("width", 8))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)
    frozen = run.bug == "trunk_under_no_grad"
    reduction = "sum" if run.bug == "clip_losses_summed_under_nesterov" else "mean"

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick], frozen), y[pick], reduction=reduction)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
