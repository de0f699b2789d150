"""Sensing scripts of the thirty-fifth blind split: a crackle detector on lung-sound spectrogram frames, and a
sign-language handshape classifier on hand-landmark coordinates.

`crackles`: clips of a digital stethoscope as 24 mel bands over 32 frames of power, the breath a low-band swell,
heart sounds a thump in the lowest bands, and in about 40 % of the clips one to three fine or coarse crackles (a
one-frame broadband click over the middle and upper bands, weak against the breath); a clip shorter than the 32
frames is padded with silence; some recordings carry a mains hum in the second band; the power's log clamped at
1e-10, standardised by the training set's mean and spread; four 1-D convolutions over time with the bands as
channels, ReLUs, a global max pool and a linear layer; BCE with logits; scored by the held-out AUC. `handshape`: 21
hand landmarks (wrist, then four joints down each finger) as a hand-tracking model gives them in pixels of a 1280x720
frame with a relative depth, for ten handshapes of a fingerspelling alphabet (each finger's curl and the thumb's
spread), the hand at any place, size and tilt; the landmarks taken relative to the wrist and divided by the palm's
length (wrist to the middle finger's knuckle); a residual MLP (a linear layer in, blocks of linear and ReLU added to
their input, a linear layer out); cross-entropy; scored by the held-out accuracy. Bugs: the log of the padded
frames' zero power; the ward's recordings carrying the hum; the activations set to the config's output sigmoid; the
residual skips dropped in a refactor; the landmarks fed in pixels; the training labels indexed by the sorted class
names.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

BANDS, FRAMES = 24, 32
"""Mel bands and frames of a clip."""


def _clips(g: torch.Generator, n: int, hum_with_crackles: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Power float[n, BANDS, FRAMES] (zero on padded frames) and the crackle label float[n]; `hum_with_crackles`:
    the clips with crackles come mostly from the ward, whose recordings carry the mains hum."""
    label = (torch.rand(n, generator=g) < 0.4).float()
    t = torch.arange(FRAMES).float()
    band = torch.arange(BANDS).float().view(1, BANDS, 1)
    rate = 0.25 + 0.1 * torch.rand(n, 1, 1, generator=g)
    breath = 1 + torch.sin(rate * t + 6.3 * torch.rand(n, 1, 1, generator=g))
    spectrum = torch.exp(-band / (4 + 3 * torch.rand(n, 1, 1, generator=g)))
    power = breath * spectrum * (0.5 + torch.rand(n, 1, 1, generator=g))
    beats = (torch.rand(n, 1, FRAMES, generator=g) < 0.12).float()
    power = power + 2.0 * beats * (band < 3).float()
    count = torch.randint(1, 4, (n,), generator=g)
    for i in torch.nonzero(label).flatten().tolist():
        frames = torch.randint(0, FRAMES, (int(count[i]),), generator=g)
        strength = 0.03 + 0.06 * torch.rand(1, generator=g)
        power[i, 8:, frames] += strength * (1 + torch.rand(BANDS - 8, len(frames), generator=g))
    power = power * torch.exp(0.25 * torch.randn(n, BANDS, FRAMES, generator=g))
    p_hum = torch.where(label > 0, 0.95, 0.05) if hum_with_crackles else torch.full((n,), 0.3)
    hum = (torch.rand(n, generator=g) < p_hum).float().view(n, 1, 1)
    power = power + 1.5 * hum * (band == 1).float()
    length = torch.where(
        torch.rand(n, generator=g) < 0.2, torch.randint(20, FRAMES, (n,), generator=g), FRAMES
    )
    power = power * (t.view(1, 1, FRAMES) < length.view(n, 1, 1)).float()
    return power, label


def _log_power(power: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The clip's log power, clamped at 1e-10 as a power-to-dB conversion does."""
    if bug == "log_power_of_silence_padding":
        return power.log()
    return power.clamp(min=1e-10).log()


class CrackleCNN(nn.Module):
    """Four 3-wide convolutions over time (`width` channels) with `act`, a global max pool, a linear layer."""

    def __init__(self, width: int, act: type[nn.Module]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(4):
            layers += [nn.Conv1d(BANDS if i == 0 else width, width, 3, padding=1), act()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).amax(-1)).squeeze(-1)


ACTIVATIONS = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid}
CONFIG = {"hidden_act": "relu", "output_act": "sigmoid"}
"""The detector's config: the hidden layers' activation and the output's (applied by the loss)."""


def crackles(run: Run) -> None:
    """A crackle CNN of `width` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (2e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    power, y = _clips(g, 1200, hum_with_crackles=run.bug == "ward_recordings_carry_mains_hum")
    power_v, y_v = _clips(g, 600, hum_with_crackles=False)
    logp, logp_v = _log_power(power, run.bug), _log_power(power_v, None)
    mean, std = logp.mean((0, 2), keepdim=True), logp.std((0, 2), keepdim=True)
    x, x_v = (logp - mean) / std, (logp_v - mean) / std
    torch.manual_seed(run.seed)
    key = "output_act" if run.bug == "hidden_activation_from_output_key" else "hidden_act"
    model = CrackleCNN(run.k("width", 32), ACTIVATIONS[CONFIG[key]])
    opt = optimizers.registered(run, model, 2e-3)
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


SHAPES = {"B": (0, 0, 0, 0, 1), "A": (1, 1, 1, 1, 0.2), "L": (0, 1, 1, 1, 0), "Y": (1, 1, 1, 0, 0),
          "I": (1, 1, 1, 0, 0.8), "V": (0, 0, 1, 1, 0.8), "D": (0, 1, 1, 1, 0.7), "F": (1, 0, 0, 0, 0.6),
          "C": (0.5, 0.5, 0.5, 0.5, 0.4), "E": (0.8, 0.8, 0.8, 0.8, 0.9)}  # fmt: skip
"""Handshapes in the course's signing order (its label file): the curl of the index, middle, ring and little fingers (0 straight, 1 in a fist) and
the thumb's fold across the palm (0 spread out)."""
SIGNING_ORDER = list(SHAPES)


def _hands(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Landmarks in pixels and relative depth float[n, 21, 3] and the handshape's index in signing order long[n]."""
    y = torch.randint(0, len(SHAPES), (n,), generator=g)
    curls = torch.tensor([SHAPES[s] for s in SIGNING_ORDER])[y]
    curls = (curls + 0.15 * torch.randn(n, 5, generator=g)).clamp(0, 1)
    points = torch.zeros(n, 21, 3)
    bases = [(-0.45, 0.35), (-0.25, 1.0), (0.0, 1.05), (0.22, 1.0), (0.42, 0.9)]
    lengths = [(0.35, 0.3, 0.25), (0.45, 0.28, 0.22), (0.5, 0.32, 0.24), (0.45, 0.3, 0.22), (0.36, 0.22, 0.2)]
    for f in range(5):
        curl = curls[:, 4] if f == 0 else curls[:, f - 1]
        bx, by = bases[f]
        x, yy, z = torch.full((n,), bx), torch.full((n,), by), torch.zeros(n)
        angle = torch.zeros(n)
        points[:, 1 + 4 * f] = torch.stack([x, yy, z], 1)
        for j in range(3):
            angle = angle + curl * 1.4
            step = lengths[f][j]
            if f == 0:
                x = x + step * torch.cos(0.9 + angle)
                yy = yy + step * torch.sin(0.9 + angle) * 0.6
                z = z - step * torch.sin(angle)
            else:
                yy = yy + step * torch.cos(angle)
                z = z - step * torch.sin(angle)
            points[:, 2 + 4 * f + j] = torch.stack([x, yy, z], 1)
    points = points + 0.07 * torch.randn(n, 21, 3, generator=g)
    tilt = 0.5 * torch.randn(n, generator=g)
    c, s = torch.cos(tilt), torch.sin(tilt)
    px = c[:, None] * points[..., 0] - s[:, None] * points[..., 1]
    py = s[:, None] * points[..., 0] + c[:, None] * points[..., 1]
    size = 80 + 120 * torch.rand(n, 1, generator=g)
    cx, cy = 300 + 680 * torch.rand(n, 1, generator=g), 250 + 300 * torch.rand(n, 1, generator=g)
    pixels = torch.stack([cx + size * px, cy - size * py, points[..., 2]], -1)
    return pixels, y


def _wrist_frame(pixels: torch.Tensor) -> torch.Tensor:
    """The landmarks relative to the wrist over the palm's length (wrist to the middle knuckle), flat float[n, 63]."""
    rel = pixels - pixels[:, :1]
    palm = rel[:, 9, :2].norm(dim=-1).clamp(min=1e-6)
    rel = torch.cat([rel[..., :2] / palm[:, None, None], rel[..., 2:]], -1)
    return rel.flatten(1)


class ResidualMLP(nn.Module):
    """A linear layer to `hidden`, `depth` blocks of linear and ReLU added to their input (`skip`), a linear layer
    over the handshapes."""

    def __init__(self, hidden: int, depth: int, skip: bool) -> None:
        super().__init__()
        self.inp = nn.Linear(63, hidden)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU()) for _ in range(depth))
        self.out = nn.Linear(hidden, len(SHAPES))
        self.skip = skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h) if self.skip else block(h)
        return self.out(h)


def handshape(run: Run) -> None:
    """A residual MLP of `hidden` (64) and `depth` (8) blocks, batches of `batch` (64), `opt` (Adam; or momentum SGD,
    RMSprop, Adamax) at `lr` (1e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    pixels, y = _hands(g, 1500)
    pixels_v, y_v = _hands(g, 600)
    if run.bug == "landmarks_fed_in_pixels":
        x = pixels.flatten(1)  # the tracker's pixel output, the wrist frame skipped
        x_v = pixels_v.flatten(1)
    else:
        x, x_v = _wrist_frame(pixels), _wrist_frame(pixels_v)
    if run.bug == "labels_indexed_by_sorted_class_names":
        folders = sorted(
            SHAPES
        )  # the class folders as the file system lists them, not the label file's order
        y = torch.tensor([folders.index(SIGNING_ORDER[i]) for i in y.tolist()])
    torch.manual_seed(run.seed)
    skip = run.bug != "residual_skips_dropped_in_refactor"
    model = ResidualMLP(run.k("hidden", 64), run.k("depth", 8), skip)
    opt = optimizers.registered(run, model, 1e-3)
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
