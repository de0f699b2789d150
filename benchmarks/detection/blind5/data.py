"""Synthetic data of the fifth blind split, generated from a torch.Generator (no download).

Each function returns tensors shaped like the real task it stands for: samples whose class lives in a few
directions hidden under larger nuisance factors (with a way to draw new "augmented" views), small patch images,
noisy-label classification, a two-task regression/classification table, 1-D functions for meta-learning,
categorical click logs with numeric fields, token streams with a long-range repeat, short texts with key phrases,
spectrogram-like utterances and sets of points. Nothing here knows which program or bug uses it.
"""

from __future__ import annotations

import math

import torch

Pair = tuple[torch.Tensor, torch.Tensor]


class Views:
    """Items of `classes` classes: a class signal in 8 latent directions and 24 nuisance directions of larger
    variance, mixed by a fixed rotation into 32 features. `view(i)` redraws the nuisance (an augmentation that keeps
    the class) from the generator it is given."""

    def __init__(self, g: torch.Generator, n: int, *, classes: int = 10) -> None:
        rg = torch.Generator().manual_seed(211)
        self.mix = torch.linalg.qr(torch.randn(32, 32, generator=rg))[0]
        protos = 1.5 * torch.randn(classes, 8, generator=rg)
        self.y = torch.randint(0, classes, (n,), generator=g)
        self.signal = protos[self.y] + 0.4 * torch.randn(n, 8, generator=g)

    def view(self, i: torch.Tensor, g: torch.Generator) -> torch.Tensor:
        nuisance = 2.0 * torch.randn(len(i), 24, generator=g)
        return torch.cat([self.signal[i], nuisance], 1) @ self.mix


def patch_images(g: torch.Generator, n: int) -> torch.Tensor:
    """Smooth 12x12 images cut into 16 patches of 3x3: float[n, 16, 9] (sums of oriented gratings and a blob)."""
    r = torch.linspace(-1, 1, 12)
    yy, xx = torch.meshgrid(r, r, indexing="ij")
    f = 0.5 + torch.rand(n, 2, 1, 1, generator=g)
    ph = 2 * math.pi * torch.rand(n, 2, 1, 1, generator=g)
    c = 2 * torch.rand(n, 2, 1, 1, generator=g) - 1
    img = (torch.sin(f[:, 0] * 2 * xx + ph[:, 0]) + torch.cos(f[:, 1] * 2 * yy + ph[:, 1])
           + 2 * torch.exp(-((xx - c[:, 0]) ** 2 + (yy - c[:, 1]) ** 2) / 0.4))  # fmt: skip
    patches = img.reshape(n, 4, 3, 4, 3).permute(0, 1, 3, 2, 4).reshape(n, 16, 9)
    return patches + 0.05 * torch.randn(n, 16, 9, generator=g)


def noisy_labels(
    g: torch.Generator, n: int, *, classes: int = 6, noise: float = 0.4
) -> tuple[torch.Tensor, ...]:
    """Features float[n, 20] of `classes` nonlinear classes, the clean labels and labels with a share `noise`
    flipped to another class at random."""
    rg = torch.Generator().manual_seed(223)
    w = torch.randn(20, classes, generator=rg)
    x = torch.randn(n, 20, generator=g)
    y = (torch.tanh(x) @ w + 0.3 * x[:, :classes] ** 2).argmax(1)
    flip = torch.rand(n, generator=g) < noise
    other = (y + torch.randint(1, classes, (n,), generator=g)) % classes
    return x, y, torch.where(flip, other, y)


def two_tasks(g: torch.Generator, n: int) -> tuple[torch.Tensor, ...]:
    """A table float[n, 16] with a regression target float[n] of large scale and noise and a 3-class label."""
    rg = torch.Generator().manual_seed(227)
    a, b = torch.randn(16, generator=rg), torch.randn(16, 3, generator=rg)
    x = torch.randn(n, 16, generator=g)
    reg = 20 * torch.sin(x @ a / 2) + 5 * torch.randn(n, generator=g)
    cls = (torch.relu(x) @ b).argmax(1)
    return x, reg, cls


def functions(g: torch.Generator, n: int, points: int = 40) -> Pair:
    """1-D functions for a neural process: inputs float[n, points, 1] in [-2, 2] and outputs float[n, points, 1]
    (a random quadratic plus a sine, with noise)."""
    x = 4 * torch.rand(n, points, 1, generator=g) - 2
    c = torch.randn(n, 4, 1, 1, generator=g)
    y = c[:, 0] + c[:, 1] * x + 0.5 * c[:, 2] * x**2 + torch.sin(3 * x + c[:, 3])
    return x, y + 0.1 * torch.randn(n, points, 1, generator=g)


def clicks(g: torch.Generator, n: int, *, fields: int = 5, values: int = 40) -> tuple[torch.Tensor, ...]:
    """Click logs: categorical ids int64[n, fields] in [0, values), numeric features float[n, 3] on raw scales
    (counts, prices), and a click label float[n] from field effects, one field pair's interaction and the numbers."""
    rg = torch.Generator().manual_seed(229)
    eff = torch.randn(fields, values, generator=rg)
    inter = torch.randn(values, values, generator=rg)
    cat = torch.randint(0, values, (n, fields), generator=g)
    num = torch.stack([torch.poisson(5 * torch.ones(n), generator=g), 100 + 30 * torch.randn(n, generator=g),
                       torch.rand(n, generator=g)], 1)  # fmt: skip
    logit = (eff.gather(1, cat.T).sum(0) + 1.5 * inter[cat[:, 0], cat[:, 1]] + 0.3 * (num[:, 0] - 5)
             - 0.03 * (num[:, 1] - 100) - 1.0)  # fmt: skip
    return cat, num, (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()


def repeat_stream(
    g: torch.Generator, rows: int, length: int, *, vocab: int = 16, lag: int = 12
) -> torch.Tensor:
    """Token streams int64[rows, length]: random tokens where every token after the first `lag` repeats the one
    `lag` positions back with probability 0.9 (else a random token)."""
    x = torch.randint(0, vocab, (rows, length), generator=g)
    keep = torch.rand(rows, length, generator=g) < 0.9
    for t in range(lag, length):
        x[:, t] = torch.where(keep[:, t], x[:, t - lag], x[:, t])
    return x


def key_phrase_texts(g: torch.Generator, n: int, *, vocab: int = 200, length: int = 24) -> Pair:
    """Texts int64[n, length] of filler tokens with one of 4 classes' key bigrams planted once or twice (and a
    decoy: the bigram's tokens apart), and the class int64[n]."""
    rg = torch.Generator().manual_seed(233)
    keys = torch.randint(4, vocab, (4, 2), generator=rg)
    y = torch.randint(0, 4, (n,), generator=g)
    x = torch.randint(4, vocab, (n, length), generator=g)
    for k in range(2):
        pos = torch.randint(0, length - 1, (n,), generator=g)
        x[torch.arange(n), pos] = keys[y, 0]
        x[torch.arange(n), pos + 1] = keys[y, 1]
        if k == 0:
            decoy = (y + 1) % 4
            d = torch.randint(0, length, (n,), generator=g)
            x[torch.arange(n), d] = keys[decoy, 1]
    return x, y


def spectrograms(g: torch.Generator, n: int, *, frames: int = 24, bins: int = 16, words: int = 8) -> Pair:
    """Utterances float[n, frames, bins] of `words` keywords: each a fixed sequence of 4 formant patterns, stretched
    to a random speed and shifted in time, on log-noise; the keyword int64[n]."""
    rg = torch.Generator().manual_seed(239)
    units = torch.rand(words, 4, bins, generator=rg) ** 3
    y = torch.randint(0, words, (n,), generator=g)
    speed = 0.8 + 0.4 * torch.rand(n, 1, generator=g)
    start = torch.randint(0, 6, (n, 1), generator=g).float()
    t = torch.arange(frames).float()[None]
    seg = ((t - start) / (4 * speed)).floor().long()
    inside = (seg >= 0) & (seg < 4)
    spec = units[y[:, None], seg.clamp(0, 3)] * inside[..., None]
    return spec + 0.3 * torch.rand(n, frames, bins, generator=g), y


def point_sets(g: torch.Generator, n: int, *, points: int = 24, classes: int = 5) -> Pair:
    """Sets float[n, points, 4] of 2-D points with a feature pair, drawn from one of `classes` shapes (circle,
    line, cross, two clusters, square), rotated and scaled at random; the shape int64[n]."""
    y = torch.randint(0, classes, (n,), generator=g)
    u = torch.rand(n, points, generator=g)
    side = torch.rand(n, points, generator=g) < 0.5
    ang = 2 * math.pi * u
    shapes = [torch.stack([torch.cos(ang), torch.sin(ang)], -1),
              torch.stack([2 * u - 1, 0 * u], -1),
              torch.where(side[..., None], torch.stack([2 * u - 1, 0 * u], -1), torch.stack([0 * u, 2 * u - 1], -1)),
              torch.where(side[..., None], torch.full((n, points, 2), 0.7), torch.full((n, points, 2), -0.7))
              + 0.15 * torch.randn(n, points, 2, generator=g),
              torch.stack([torch.where(side, 2 * u - 1, torch.sign(u - 0.5)),
                           torch.where(side, torch.sign(u - 0.5), 2 * u - 1)], -1)]  # fmt: skip
    pts = torch.stack(shapes, 1)[torch.arange(n), y]
    rot = 2 * math.pi * torch.rand(n, generator=g)
    r = torch.stack([torch.stack([torch.cos(rot), -torch.sin(rot)], -1),
                     torch.stack([torch.sin(rot), torch.cos(rot)], -1)], -2)  # fmt: skip
    pts = (pts @ r) * (0.5 + torch.rand(n, 1, 1, generator=g)) + 0.05 * torch.randn(n, points, 2, generator=g)
    return torch.cat([pts, pts**2], -1), y
