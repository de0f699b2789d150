"""Perception scripts of the fourteenth blind split: a capsule network with routing by agreement, and a CREPE-style
pitch estimator on raw waveform frames.

`capsules`: 12x12 grey images, each one of 5 random 6x6 binary glyphs at a random offset with noise 0.3; a conv layer,
a convolutional layer of primary capsules (8 types of 4-d vectors on a 4x4 grid, squashed), a transformation matrix
from each primary capsule to each of 5 class capsules of `dim` dimensions, routing by agreement (`routing` rounds of
softmax couplings over the class capsules), the class capsules' lengths scored by the margin loss (m+ 0.9, m- 0.1,
absent classes weighted 0.5); scored by held-out accuracy. `pitch`: frames of 256 samples at 4 kHz, a harmonic tone
(f0 log-uniform over three octaves from 110 Hz, 1-6 harmonics of random decaying amplitudes below the Nyquist
frequency, random gain) plus noise, each frame normalised to zero mean and unit variance; speed perturbation (0.9 to
1.1) as augmentation, moving the pitch with it; a strided 1-D CNN gives 36 pitch bins a semitone apart, trained by BCE
against targets blurred by a Gaussian of one bin; scored by the held-out raw pitch accuracy (the decoded pitch within
50 cents). Bugs: the squash taken over the capsules instead of each capsule's vector, the couplings' softmax over the
input capsules, the margins m+ and m- swapped, the routing logits carried over from batch to batch; the pitch labelled
by the strongest harmonic, the labels computed for an 8 kHz sample rate, the speed perturbation leaving the label
unchanged, the label's bin truncated to an integer.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SIDE = 12
"""Image side in pixels."""
CLASSES = 5
"""Glyph classes, one class capsule each."""


def _glyphs(g: torch.Generator, glyphs: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Images float[n, 1, SIDE, SIDE], each a glyph at a random offset with noise, and their classes int64[n]."""
    y = torch.randint(0, CLASSES, (n,), generator=g)
    images = 0.3 * torch.randn(n, 1, SIDE, SIDE, generator=g)
    offsets = torch.randint(0, SIDE - 5, (n, 2), generator=g)
    for i in range(n):
        r, c = int(offsets[i, 0]), int(offsets[i, 1])
        images[i, 0, r : r + 6, c : c + 6] += glyphs[y[i]]
    return images, y


def squash(s: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Vectors shrunk to a length below 1 along `dim`: |s|^2 / (1 + |s|^2) * s / |s|."""
    sq = (s**2).sum(dim, keepdim=True)
    return sq / (1 + sq) * s / torch.sqrt(sq + 1e-8)


class CapsNet(nn.Module):
    """Conv features, 128 primary capsules of 4 dimensions (8 types on a 4x4 grid), and CLASSES class capsules of
    `dim` by routing."""

    def __init__(self, dim: int, routing: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 3, padding=1)
        self.primary = nn.Conv2d(16, 8 * 4, 3, stride=3)
        self.w = nn.Parameter(0.5 * torch.randn(8 * 16, CLASSES, dim, 4))
        self.routing = routing
        self.carried: torch.Tensor | None = None

    def forward(self, images: torch.Tensor, bug: str | None = None) -> torch.Tensor:
        """The class capsules' lengths float[n, CLASSES]."""
        n = len(images)
        u = self.primary(F.relu(self.conv(images))).view(n, 8, 4, 16).permute(0, 1, 3, 2).reshape(n, 128, 4)
        u = squash(u, dim=1 if bug == "squash_over_capsules" else -1)
        u_hat = torch.einsum("nid,iced->nice", u, self.w)
        logits = torch.zeros(n, 128, CLASSES)
        if bug == "routing_logits_carried_over" and self.carried is not None:
            logits = logits + self.carried
        frozen = u_hat.detach()
        for r in range(self.routing):
            c = F.softmax(logits, dim=1 if bug == "coupling_softmax_over_inputs" else 2)
            if r < self.routing - 1:
                v = squash((c.unsqueeze(3) * frozen).sum(1))
                logits = logits + (frozen * v.unsqueeze(1)).sum(3)
            else:
                v = squash((c.unsqueeze(3) * u_hat).sum(1))
        if bug == "routing_logits_carried_over" and self.training:
            self.carried = logits.detach().mean(0)
        return v.norm(dim=2)


def capsules(run: Run) -> None:
    """A capsule network with class capsules of `dim` (8) and `routing` (3) rounds, batches of `batch` (64), `opt`
    (Adam; or AdamW, RMSprop, NAdam) at `lr` (3e-3). Scored by held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    glyphs = (torch.rand(CLASSES, 6, 6, generator=g) < 0.5).float()
    x, y = _glyphs(g, glyphs, 2000)
    x_v, y_v = _glyphs(g, glyphs, 300)
    torch.manual_seed(run.seed)
    model = CapsNet(run.k("dim", 8), run.k("routing", 3))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)
    present, absent = (0.1, 0.9) if run.bug == "margins_swapped" else (0.9, 0.1)

    def accuracy() -> float:
        return float((model(x_v, bug=run.bug).argmax(1) == y_v).float().mean())

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        lengths = model(x[pick], bug=run.bug)
        target = F.one_hot(y[pick], CLASSES).float()
        margin = target * F.relu(present - lengths) ** 2 + 0.5 * (1 - target) * F.relu(lengths - absent) ** 2
        loss = margin.sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy):
            break


RATE = 4000
"""Sample rate of the frames in Hz."""
FRAME = 256
"""Samples per frame."""
BINS = 36
"""Pitch bins, a semitone apart from LOWEST."""
LOWEST = 110.0
"""Centre of the lowest pitch bin in Hz."""


def _tones(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """The parameters of n tones: f0 float[n] (Hz), harmonic amplitudes float[n, 6], phases float[n, 6], gain
    float[n]."""
    f0 = LOWEST * 2 ** (3 * torch.rand(n, generator=g) - 1 / 24)
    amps = (
        torch.rand(n, 6, generator=g)
        * (0.7 ** torch.arange(6).float())
        * (torch.rand(n, 6, generator=g) < 0.8)
    )
    amps[:, 0] = amps[:, 0].clamp(min=0.2)
    return {"f0": f0, "amps": amps, "phases": 2 * math.pi * torch.rand(n, 6, generator=g),
            "gain": 0.1 + 2 * torch.rand(n, generator=g)}  # fmt: skip


def _synth(tones: dict[str, torch.Tensor], f0: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Frames float[n, 1, FRAME] of the tones at pitch `f0`, noise added, each normalised."""
    t = torch.arange(FRAME).float() / RATE
    harmonics = f0.view(-1, 1) * torch.arange(1, 7).float()
    amps = tones["amps"] * (harmonics < RATE / 2)
    phase = 2 * math.pi * harmonics.unsqueeze(2) * t + tones["phases"].unsqueeze(2)
    wave = (amps.unsqueeze(2) * torch.sin(phase)).sum(1) * tones["gain"].view(-1, 1)
    wave = wave + 0.05 * torch.randn(wave.shape, generator=g)
    wave = (wave - wave.mean(1, keepdim=True)) / (wave.std(1, keepdim=True) + 1e-5)
    return wave.unsqueeze(1)


def _semitones(f0: torch.Tensor) -> torch.Tensor:
    """Pitch float[n] in semitones above LOWEST."""
    return 12 * torch.log2(f0 / LOWEST)


def decode(logits: torch.Tensor) -> torch.Tensor:
    """Pitch float[n] in semitones: the activation-weighted mean of the bins around the strongest one."""
    bins = torch.arange(BINS).float()
    top = logits.argmax(1, keepdim=True)
    near = ((bins.view(1, -1) - top).abs() <= 2).float() * torch.sigmoid(logits)
    return (near * bins).sum(1) / near.sum(1).clamp(min=1e-9)


class PitchNet(nn.Module):
    """Three strided 1-D convolutions of `channels`, max-pooled over time, and a linear layer to BINS."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, channels, 32, stride=2), nn.ReLU(), nn.BatchNorm1d(channels),
            nn.Conv1d(channels, channels, 16, stride=2), nn.ReLU(), nn.BatchNorm1d(channels),
            nn.Conv1d(channels, channels, 8, stride=2), nn.ReLU(), nn.AdaptiveMaxPool1d(4),
            nn.Flatten(), nn.Linear(4 * channels, BINS),
        )  # fmt: skip

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return self.net(frames)


def pitch(run: Run) -> None:
    """A pitch estimator of `channels` (32), batches of `batch` (64), `opt` (Adam; or AdamW, Adamax, Nesterov SGD) at
    `lr` (1e-3), a cosine decay when `cosine`. Scored by the held-out raw pitch accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    tones = _tones(g, 4000)
    tones_v = _tones(g, 500)
    frames_v, truth_v = _synth(tones_v, tones_v["f0"], g), _semitones(tones_v["f0"])
    label_f0 = tones["f0"]
    if run.bug == "labelled_by_strongest_harmonic":
        audible = tones["amps"] * (label_f0.view(-1, 1) * torch.arange(1, 7) < RATE / 2)
        label_f0 = label_f0 * (audible.argmax(1) + 1)
    if run.bug == "labels_for_8khz":
        label_f0 = label_f0 * 2
    torch.manual_seed(run.seed)
    model = PitchNet(run.k("channels", 32))
    opt = optimizers.registered(run, model, 1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch = run.k("batch", 64)
    bins = torch.arange(BINS).float()

    def raw_pitch_accuracy() -> float:
        return float(((decode(model(frames_v)) - truth_v).abs() < 0.5).float().mean())

    for step in range(run.steps):
        pick = run.indices(len(label_f0), batch)
        speed = 0.9 + 0.2 * torch.rand(batch, generator=run.gen)
        part = {key: value[pick] for key, value in tones.items()}
        frames = _synth(part, part["f0"] * speed, run.gen)
        heard = label_f0[pick] if run.bug == "speed_perturbed_label_unchanged" else label_f0[pick] * speed
        centre = _semitones(heard)
        if run.bug == "pitch_bin_truncated":
            centre = centre.floor()
        target = torch.exp(-0.5 * (bins.view(1, -1) - centre.view(-1, 1)) ** 2)
        loss = F.binary_cross_entropy_with_logits(model(frames), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_raw_pitch_accuracy", raw_pitch_accuracy):
            break
