"""Trace scripts of the twenty-eighth blind split: a handwriting stroke-direction classifier on pen trajectories and
a coffee roast-degree classifier on near-infrared spectra.

`strokes`: a pen stroke of 24 points sampled from a tablet: 8 points drawn straight in one of eight directions at
its own speed, then a 16-point flourish of random curls; the tablet's y axis points up; a GRU reads the pen's
standardised moves (dx, dy) and its last state gives the direction (the stroke's start); cross-entropy; scored by the
held-out accuracy. `roast`: a spectrometer's 64-channel absorbance spectrum of ground beans: a sloping baseline of
random offset and tilt, three absorption bands whose heights and one band's position follow the roast (light,
medium, dark, French), noise; a saturated detector reads a flat line at its ceiling; each spectrum centred and scaled by
its own standard deviation (standard normal variate) after the flat ones are dropped; a 1-D CNN; cross-entropy;
scored by the held-out accuracy. Bugs: the tablet's y axis taken as the screen's (down) for the training strokes; the
tablet's absolute pen positions in pixels fed in place of the standardised moves; the saturated spectra kept; a second instrument's spectra stored
with the wavelengths descending and left unflipped.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DIRECTIONS, STRAIGHT, FLOURISH = 8, 8, 16


def _strokes(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pen moves float[n, STRAIGHT + FLOURISH, 2] (dx, dy, y up), the starting direction long[n]."""
    direction = torch.randint(0, DIRECTIONS, (n,), generator=g)
    angle = direction.float() * 2 * math.pi / DIRECTIONS + 0.15 * torch.randn(n, generator=g)
    speed = 0.5 + torch.rand(n, generator=g)
    start = torch.stack([angle.cos(), angle.sin()], 1).unsqueeze(1) * speed.view(n, 1, 1)
    start = start + 0.15 * torch.randn(n, STRAIGHT, 2, generator=g)
    turn = torch.cumsum(0.6 * torch.randn(n, FLOURISH, generator=g), 1) + angle.unsqueeze(1)
    curls = torch.stack([turn.cos(), turn.sin()], 2) * speed.view(n, 1, 1)
    return torch.cat([start, curls], 1), direction


def strokes(run: Run) -> None:
    """A GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or RMSprop, momentum SGD, AdamW) at `lr`
    (1e-2), the gradient clipped at norm `clip` when given. Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    moves, y = _strokes(g, 1200)
    moves_v, y_v = _strokes(g, 1000)
    if run.bug == "screen_y_axis_for_tablet":
        moves = moves * torch.tensor(
            [1.0, -1.0]
        )  # the training tablets' exports read with the screen's y axis
    scale = moves.reshape(-1, 2).std(0)
    x, x_v = moves / scale, moves_v / scale
    if run.bug == "tablet_pixels_fed_for_moves":
        # the tablet's absolute pen positions in pixels (100 a unit, from the middle of a 2000-pixel pad) fed in
        # place of the standardised moves
        x, x_v = 1000 + 100 * moves.cumsum(1), 1000 + 100 * moves_v.cumsum(1)
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 32)
    rnn = nn.GRU(2, hidden, batch_first=True)
    model = nn.ModuleDict({"rnn": rnn, "head": nn.Linear(hidden, DIRECTIONS)})
    opt = optimizers.registered(run, model, 1e-2)
    clip = run.k("clip", None)
    batch = run.k("batch", 64)

    def forward(seq: torch.Tensor) -> torch.Tensor:
        _, last = model["rnn"](seq)
        return model["head"](last[0])

    def acc_held_out() -> float:
        return accuracy(forward(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(forward(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", acc_held_out):
            break


CHANNELS, ROASTS, CEILING = 64, 4, 3.0


def _spectra(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Absorbance spectra float[n, CHANNELS] (wavelengths ascending), roast long[n]; a saturated detector reads
    CEILING everywhere."""
    roast = torch.randint(0, ROASTS, (n,), generator=g)
    w = torch.linspace(0, 1, CHANNELS)
    level = roast.float().unsqueeze(1) / (ROASTS - 1)
    bands = (0.4 + 0.5 * level) * torch.exp(-(((w - 0.25) / 0.05) ** 2))
    bands = bands + (0.7 - 0.4 * level) * torch.exp(-(((w - 0.55 - 0.08 * level) / 0.06) ** 2))
    bands = bands + 0.3 * torch.exp(-(((w - 0.8) / 0.04) ** 2)) * (1 + 0.3 * torch.randn(n, 1, generator=g))
    baseline = 0.5 + 0.6 * torch.rand(n, 1, generator=g) + 0.5 * torch.randn(n, 1, generator=g) * w
    spectra = (
        baseline
        + bands * (1 + 0.1 * torch.randn(n, 1, generator=g))
        + 0.03 * torch.randn(n, CHANNELS, generator=g)
    )
    saturated = torch.rand(n, generator=g) < 0.04
    spectra[saturated] = CEILING
    return spectra, roast


def _snv(spectra: torch.Tensor) -> torch.Tensor:
    return (spectra - spectra.mean(1, keepdim=True)) / spectra.std(1, keepdim=True)


def roast(run: Run) -> None:
    """A CNN of `width` (8) and twice that filters, batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop,
    NAdam) at `lr` (2e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    s, y = _spectra(g, 800)
    s_v, y_v = _spectra(g, 1000)
    if run.bug == "second_instrument_wavelengths_descending":
        second = (
            torch.rand(len(s), generator=g) < 0.5
        )  # the second spectrometer writes its channels red to blue
        s = torch.where(second.unsqueeze(1), s.flip(1), s)
    if run.bug != "saturated_spectra_kept":
        keep = (s != CEILING).any(1)
        s, y = s[keep], y[keep]
    keep_v = (s_v != CEILING).any(1)
    s_v, y_v = s_v[keep_v], y_v[keep_v]
    x, x_v = _snv(s).unsqueeze(1), _snv(s_v).unsqueeze(1)
    torch.manual_seed(run.seed)
    w = run.k("width", 8)
    model = nn.Sequential(nn.Conv1d(1, w, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2), nn.Conv1d(w, 2 * w, 5, padding=2),
                          nn.ReLU(), nn.MaxPool1d(2), nn.Flatten(), nn.Linear(2 * w * CHANNELS // 4, ROASTS))  # fmt: skip
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def acc_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", acc_held_out):
            break
