"""Produce and craft scripts of the forty-third blind split: a cocoa-bean fermentation-grade classifier on cut-test
colour histograms, and a tonewood stiffness regressor from tap-tone spectra.

`cocoa`: cut-test photos of 32 x 32 pixels of halved beans: slaty (grey), purple, partly brown and well-fermented
brown, from the box-days of fermentation with grading noise, each lit and coloured a little differently; each photo
becomes a 16-bin histogram per colour channel of the pixels its segmentation mask keeps, as shares of the mask (the
few photos too blurred for a mask set aside); a ReLU MLP of two hidden layers; cross-entropy; scored by the held-out
accuracy. `tonewood`: spruce and maple plates tapped on a bench: the density, the length and the thickness, and the
tap's magnitude spectrum in 64 log-spaced bands from 30 Hz to 1.2 kHz holding the first three bending modes (from the
Euler-Bernoulli law) over the microphone's floor, the bands under the noise gate held at the gate, logged; the
features standardised; a tanh MLP of four hidden layers; MSE on the log Young's modulus; scored by the held-out R^2.
Bugs: the histogram counts fed unnormalised; the histogram over an empty bean mask; the tray's white background in
the histograms; the noise gate zeroing bands before the log; the spectrum of the tap's transient; Tanhshrink in place
of Tanh; every tap of 75 boards kept as a row.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

PIXELS, BINS, GRADES = 32 * 32, 16, 4
COLOURS = torch.tensor([[0.42, 0.42, 0.43], [0.45, 0.27, 0.40], [0.50, 0.33, 0.28], [0.52, 0.36, 0.20]])
"""The cut surface's mean RGB of each grade: slaty, purple, partly brown, brown."""


def _photos(g: torch.Generator, n: int, tray: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-photo counts float[n, 3 * BINS] of the pixels the segmentation mask keeps, the mask's pixel count
    float[n] (0 where a blurred photo left it empty) and the grades long[n]."""
    days = 7 * torch.rand(n, generator=g)
    grade = ((days + 0.9 * torch.randn(n, generator=g)) / 1.75).floor().clamp(0, GRADES - 1).long()
    tint = COLOURS[grade] + 0.05 * torch.randn(n, 3, generator=g)
    light = 1 + 0.12 * torch.randn(n, 1, generator=g)
    pixels = (tint.unsqueeze(1) * light.unsqueeze(1) + 0.06 * torch.randn(n, PIXELS, 3, generator=g)).clamp(
        0, 1
    )
    if tray:  # the photo's white tray around the bean, a different share of each photo
        share = 0.3 + 0.4 * torch.rand(n, 1, 1, generator=g)
        white = torch.rand(n, PIXELS, 1, generator=g) < share
        pixels = torch.where(white, 0.93 + 0.05 * torch.rand(n, PIXELS, 3, generator=g), pixels)
    bins = (pixels * BINS).long().clamp(max=BINS - 1) + BINS * torch.arange(3)
    blurred = torch.rand(n, 1, generator=g) < 0.03  # the segmentation finds no bean on a blurred photo
    kept = (~blurred).float().expand(n, PIXELS * 3)
    counts = torch.zeros(n, 3 * BINS).scatter_add_(1, bins.reshape(n, -1), kept)
    return counts, PIXELS * (~blurred).float().squeeze(1), grade


class GradeMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units over `inputs` features."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, GRADES))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def cocoa(run: Run) -> None:
    """A grade MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, Adamax) at
    `lr` (2e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    counts, area, y = _photos(g, 1500, run.bug == "tray_background_in_histograms")
    counts_v, area_v, y_v = _photos(g, 600, False)
    if run.bug != "histogram_over_empty_bean_mask":  # the photos whose mask came back empty are set aside
        counts, area, y = counts[area > 0], area[area > 0], y[area > 0]
    counts_v, area_v, y_v = counts_v[area_v > 0], area_v[area_v > 0], y_v[area_v > 0]
    if run.bug == "histogram_counts_unnormalised":  # the pixel counts per bin as the histogram returns them
        x, x_v = counts, counts_v
    else:  # each bin's share of the bean's pixels
        x, x_v = counts / area.unsqueeze(1), counts_v / area_v.unsqueeze(1)
    torch.manual_seed(run.seed)
    model = GradeMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


BANDS, TAPS = 64, 20
FREQS = torch.logspace(math.log10(30), math.log10(1200), BANDS)
MODES = torch.tensor([1.0, 2.756, 5.404])
"""The free-free plate's first three bending modes as multiples of the first."""


def _boards(g: torch.Generator, n: int, bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Tap features float[n, BANDS + 3] (the log spectrum, density, length, thickness) and the log Young's modulus
    along the grain (GPa) float[n]: one tap of each of n boards, or TAPS taps of each of n // TAPS boards."""
    boards = n // TAPS if bug == "every_tap_kept_as_row" else n
    density = 380 + 320 * torch.rand(boards, generator=g)
    specific = 18 + 12 * torch.rand(boards, generator=g)  # MJ/kg
    modulus = density * specific * 1e6
    length = 0.45 + 0.15 * torch.rand(boards, generator=g)
    thick = 0.0028 + 0.0022 * torch.rand(boards, generator=g)
    first = 22.37 / (2 * math.pi) * thick / length**2 * (modulus / (12 * density)).sqrt()
    board = torch.stack([density, length, thick, first, modulus], 1).repeat_interleave(n // boards, 0)
    density, length, thick, first, modulus = board.unbind(1)
    peaks = first.unsqueeze(1) * MODES
    ring = torch.tensor([1.0, 0.6, 0.35]) * (1 + 0.2 * torch.randn(n, 3, generator=g)).clamp(min=0.2)
    width = 0.025
    if (
        bug == "spectrum_of_tap_transient"
    ):  # the FFT over the first 50 ms: the click, the modes barely rung up
        ring, width = 0.15 * ring, 0.25
    dist = (FREQS.log().view(1, 1, -1) - peaks.log().unsqueeze(2)) / width
    magnitude = (ring.unsqueeze(2) * torch.exp(-0.5 * dist**2)).sum(1)
    floor = 0.004 * torch.rand(n, BANDS, generator=g)
    if bug == "spectrum_of_tap_transient":
        floor = floor + 0.08
    magnitude = magnitude + floor
    if bug == "noise_gate_zeroes_before_log":  # the gate sets the bands under 0.002 to zero, then the log
        spectrum = torch.where(magnitude > 0.002, magnitude, torch.zeros_like(magnitude)).log()
    else:  # the bands under the gate held at the gate's level
        spectrum = magnitude.clamp(min=0.002).log()
    feats = torch.cat([spectrum, torch.stack([density, length, thick], 1)], 1)
    return feats, (modulus / 1e9).log()


class StiffnessMLP(nn.Module):
    """A tanh MLP of four hidden layers of `hidden` units (`act` the activation's class)."""

    def __init__(self, hidden: int, act: type[nn.Module]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = BANDS + 3
        for _ in range(4):
            layers += [nn.Linear(width, hidden), act()]
            width = hidden
        self.net = nn.Sequential(*layers, nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def tonewood(run: Run) -> None:
    """A stiffness MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RAdam) at
    `lr` (1e-3). Scored by the held-out R^2 of the log modulus."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _boards(g, 1500, run.bug)
    x_v, y_v = _boards(g, 600, None)
    finite = torch.isfinite(x).all(1)
    mean, std = x[finite].mean(0), x[finite].std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre = y.mean()
    torch.manual_seed(run.seed)
    act = nn.Tanhshrink if run.bug == "tanhshrink_for_tanh" else nn.Tanh
    model = StiffnessMLP(run.k("hidden", 64), act)
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]) + centre, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
