"""Instrument scripts of the eighteenth blind split: an ECG beat classifier under heavy class imbalance, and a galaxy
morphology classifier on telescope images.

`ecg`: single-lead beats of 96 samples stored as 11-bit ADC counts (1024 + 200 per millivolt) of four classes (normal,
supraventricular premature, ventricular, fusion) at 85/7/5/3%; the counts converted to millivolts, a two-block 1-D CNN
with tanh activations and a linear layer, cross-entropy weighted by the inverse class frequency; scored by the held-out
balanced accuracy (the mean recall over the classes). `galaxies`: 20x20 images in detector counts (peaks from about 2,000 to 100,000 counts, sky and shot noise) of five
morphologies (elliptical, spiral, edge-on disc, merger, ring) at a random angle, size and offset; an asinh stretch and
standardisation, a small 2-D CNN, random quarter turns and flips of the 80 training images, cross-entropy; scored by the
held-out accuracy.
Bugs: the class weights set to the frequencies instead of their inverse; Nesterov SGD left at Adam's rate; the ADC counts fed unconverted; the counts stored in half precision; the accumulated loss multiplied by the
accumulation steps; the training set built with the evaluation transform, so never augmented.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES, PREVALENCE = 96, (0.85, 0.07, 0.05, 0.03)
"""Samples a beat (at 180 Hz), the classes' shares (normal, supraventricular, ventricular, fusion)."""


def _bump(t: torch.Tensor, centre: torch.Tensor, width: torch.Tensor, height: torch.Tensor) -> torch.Tensor:
    return height.unsqueeze(1) * torch.exp(-(((t - centre.unsqueeze(1)) / width.unsqueeze(1)) ** 2))


def _beats(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Beats float[n, SAMPLES] in ADC counts and their classes long[n]."""
    y = torch.multinomial(torch.tensor(PREVALENCE), n, replacement=True, generator=g)
    t = torch.arange(SAMPLES).float().unsqueeze(0)
    shift = torch.randint(-4, 5, (n,), generator=g).float()
    r = 0.85 + 0.3 * torch.rand(n, generator=g)
    premature, ventricular, fusion = (y == 1).float(), (y == 2).float(), (y == 3).float()
    p = _bump(
        t,
        22 + shift + 6 * premature,
        torch.full((n,), 4.0),
        0.15 * r * (1 - ventricular) * (1 - 0.6 * premature),
    )
    qrs_w = 2.0 + 4.0 * ventricular + 2.0 * fusion
    qrs = _bump(t, 40 + shift - 3 * premature, qrs_w, r * (1 - 0.3 * fusion))
    s = _bump(t, 45 + shift + 3 * ventricular, 2.0 + 2 * ventricular, -0.25 * r)
    tw = _bump(t, 68 + shift, torch.full((n,), 7.0), 0.3 * r * (1 - 2.0 * ventricular - 1.0 * fusion))
    wander = 0.1 * torch.sin(t / 30 + 6.3 * torch.rand(n, 1, generator=g))
    mv = p + qrs + s + tw + wander + 0.04 * torch.randn(n, SAMPLES, generator=g)
    return (1024 + 200 * mv).round(), y


class BeatCNN(nn.Module):
    """Two convolution blocks (`channels`, tanh, max-pooling), dropout `dropout`, a linear layer to the classes."""

    def __init__(self, channels: int, dropout: float) -> None:
        super().__init__()
        c = channels
        self.net = nn.Sequential(nn.Conv1d(1, c, 7, padding=3), nn.Tanh(), nn.MaxPool1d(4),
                                 nn.Conv1d(c, 2 * c, 5, padding=2), nn.Tanh(), nn.MaxPool1d(4), nn.Flatten(),
                                 nn.Dropout(dropout), nn.Linear(2 * c * 6, 4))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.unsqueeze(1))


def _balanced_accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    pred = logits.argmax(-1)
    return sum(float((pred[y == k] == k).float().mean()) for k in range(4)) / 4


def ecg(run: Run) -> None:
    """A beat CNN of `channels` (12) with `dropout` (0), batches of `batch` (64), `opt` (Adam; or AdamW, RAdam,
    Nesterov SGD) at `lr` (2e-3), optionally decayed linearly to 0 over the run (`linear_decay`). Scored by the
    held-out balanced accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    counts, y = _beats(g, 3000)
    counts_v, y_v = _beats(g, 1200)

    def millivolts(c: torch.Tensor) -> torch.Tensor:
        return c if run.bug == "adc_counts_fed_unconverted" else (c - 1024) / 200

    x, x_v = millivolts(counts), millivolts(counts_v)
    share = torch.bincount(y, minlength=4).float() / len(y)
    weight = share if run.bug == "class_weights_from_frequencies" else 1 / share
    weight = weight / weight.sum() * 4
    torch.manual_seed(run.seed)
    model = BeatCNN(run.k("channels", 12), run.k("dropout", 0.0))
    if run.bug == "nesterov_given_adams_rate":
        # the optimizer switched from Adam to Nesterov SGD, the rate left at Adam's
        opt = torch.optim.SGD(model.parameters(), lr=2e-3, momentum=0.9, nesterov=True)
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)
    sched = None
    if run.k("linear_decay", False):
        sched = torch.optim.lr_scheduler.LinearLR(
            opt, start_factor=1.0, end_factor=0.0, total_iters=run.steps
        )

    def balanced() -> float:
        return _balanced_accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick], weight=weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_balanced_accuracy", balanced):
            break


SIDE, KINDS = 20, 5
"""Image side; morphologies (elliptical, spiral, edge-on disc, merger, ring)."""


def _galaxies(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Images float[n, SIDE, SIDE] in detector counts (peaks from about 2,000 to 100,000) and morphologies long[n]."""
    y = torch.randint(0, KINDS, (n,), generator=g)
    c = torch.arange(SIDE).float() - (SIDE - 1) / 2
    yy, xx = torch.meshgrid(c, c, indexing="ij")
    theta = 6.283 * torch.rand(n, 1, 1, generator=g)
    shift = 1.5 * torch.randn(n, 2, 1, 1, generator=g)
    u = (xx - shift[:, 0]) * torch.cos(theta) + (yy - shift[:, 1]) * torch.sin(theta)
    v = -(xx - shift[:, 0]) * torch.sin(theta) + (yy - shift[:, 1]) * torch.cos(theta)
    s = 1.8 + 1.2 * torch.rand(n, 1, 1, generator=g)
    q = 0.6 + 0.4 * torch.rand(n, 1, 1, generator=g)
    r = torch.sqrt(u**2 + (v / q) ** 2 + 1e-6)
    phi = torch.atan2(v, u)
    kind = [
        torch.exp(-r / s),
        torch.exp(-r / (0.5 * s))
        + 0.6 * (1 + torch.cos(2 * (phi - 1.5 * torch.log(r + 1)))) / 2 * torch.exp(-r / (1.5 * s)),
        torch.exp(-u.abs() / (1.6 * s) - v.abs() / (0.25 * s)),
        torch.exp(-torch.sqrt((u - 1.3 * s) ** 2 + v**2) / (0.6 * s))
        + 0.8 * torch.exp(-torch.sqrt((u + 1.3 * s) ** 2 + v**2) / (0.6 * s)),
        torch.exp(-(((r - 1.6 * s) / (0.45 * s)) ** 2)) + 0.5 * torch.exp(-r / (0.3 * s)),
    ]
    light = torch.stack(kind, 1)[torch.arange(n), y]
    light = light / light.amax((1, 2), keepdim=True)
    peak = 10 ** (3.3 + 1.7 * torch.rand(n, 1, 1, generator=g))
    counts = peak * light
    return counts + (20 + 0.03 * counts) * torch.randn(n, SIDE, SIDE, generator=g), y


class GalaxyCNN(nn.Module):
    """Three convolution blocks of `channels` (ReLU, max-pooling), global average pooling, dropout, a linear layer."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        c = channels
        self.net = nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(2 * c, 2 * c, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                 nn.Flatten(), nn.Dropout(0.3), nn.Linear(2 * c, KINDS))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.unsqueeze(1))


def _augmented(g: torch.Generator, x: torch.Tensor) -> torch.Tensor:
    """Each image turned by a random multiple of 90 degrees, flipped at random (a galaxy has no up) and shifted by up to
    two pixels."""
    turns = torch.randint(0, 4, (len(x),), generator=g)
    flips = torch.rand(len(x), generator=g) < 0.5
    shifts = torch.randint(-2, 3, (len(x), 2), generator=g)
    out = torch.stack([torch.rot90(img, int(k), (0, 1)).roll((int(s[0]), int(s[1])), (0, 1))
                       for img, k, s in zip(x, turns, shifts, strict=True)])  # fmt: skip
    return torch.where(flips.view(-1, 1, 1), out.flip(2), out)


def galaxies(run: Run) -> None:
    """A morphology CNN of `channels` (12), batches of `batch` (32), `opt` (Adam; or AdamW, Adamax, momentum SGD) at
    `lr` (2e-3), the gradient of `accumulate` (1) batches summed before each update, the 80 training images turned
    and flipped at random. Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    counts, y = _galaxies(g, 80)
    counts_v, y_v = _galaxies(g, 600)

    def stretched(c: torch.Tensor) -> torch.Tensor:
        # the asinh stretch of survey images; the images kept in float16 to halve their memory in the bug
        c = c.half() if run.bug == "counts_stored_in_half_precision" else c
        return torch.asinh(c.float() / 200)

    a, a_v = stretched(counts), stretched(counts_v)
    mean, std = a.mean(), a.std()
    x, x_v = (a - mean) / std, (a_v - mean) / std
    torch.manual_seed(run.seed)
    model = GalaxyCNN(run.k("channels", 12))
    opt = optimizers.registered(run, model, 2e-3)
    batch, accumulate = run.k("batch", 32), run.k("accumulate", 1)
    # the training set built with the evaluation transform (no augmentation) in the bug
    plain = run.bug == "training_set_given_eval_transform"

    def held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        opt.zero_grad()
        for _ in range(accumulate):
            pick = run.indices(len(x), batch)
            loss = F.cross_entropy(model(x[pick] if plain else _augmented(run.gen, x[pick])), y[pick])
            scaled = (
                loss * accumulate
                if run.bug == "accumulated_loss_multiplied_not_divided"
                else loss / accumulate
            )
            scaled.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", held_out):
            break
