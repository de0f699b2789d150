"""Synthetic data of the eighth blind split, generated from a torch.Generator (no download).

Each function returns tensors shaped like the real task it stands for: small greyscale textures, sensor vectors of
a machine in its normal regime with off-regime readings, trajectories of a two-dimensional nonlinear system, lists
of numbers to sort, students' answers to exercises on a few skills, click logs with categorical fields and raw
counts, and a noisy multi-class table. Nothing here knows which program or bug uses it.
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

Pair = tuple[torch.Tensor, torch.Tensor]


def textures(g: torch.Generator, n: int, size: int = 16) -> torch.Tensor:
    """Images float[n, 1, size, size] in about [-1, 1]: two oriented gratings of random frequency and phase and a
    disc with a sharp edge."""
    r = torch.linspace(0, 1, size)
    yy, xx = torch.meshgrid(r, r, indexing="ij")
    f = 1 + 3 * torch.rand(n, 2, 2, generator=g)
    ph = 2 * math.pi * torch.rand(n, 2, generator=g)
    img = torch.zeros(n, size, size)
    for k in range(2):
        arg = f[:, k, 0, None, None] * xx + f[:, k, 1, None, None] * yy
        img = img + 0.4 * torch.sin(2 * math.pi * arg + ph[:, k, None, None])
    centre = 0.2 + 0.6 * torch.rand(n, 2, generator=g)
    disc = ((xx - centre[:, 0, None, None]) ** 2 + (yy - centre[:, 1, None, None]) ** 2) < 0.04
    img = torch.where(disc, -0.2 * img + 0.5, img)
    return img.clamp(-1, 1)[:, None]


def low_resolution(hr: torch.Tensor) -> torch.Tensor:
    """The image `hr` float[n, 1, H, W] downsampled by 2 (average pooling), as a camera of half the resolution."""
    return F.avg_pool2d(hr, 2)


def machine_readings(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Readings float[n, 12] and anomaly labels long[n] (1: off-regime, about 1 in 4): normal readings lie near a
    curved 3-d surface of the 12-d space; off-regime ones leave it with the same overall spread."""
    rg = torch.Generator().manual_seed(811)
    mix = torch.randn(6, 12, generator=rg) / math.sqrt(6)
    t = torch.rand(n, 3, generator=g) * 2 - 1
    basis = torch.cat([t, torch.sin(2.5 * t)], 1)
    normal = basis @ mix + 0.05 * torch.randn(n, 12, generator=g)
    odd = torch.randn(n, 12, generator=g) * normal.std(0) + normal.mean(0)
    label = (torch.rand(n, generator=g) < 0.25).long()
    return torch.where(label[:, None] == 1, odd, normal), label


def trajectories(g: torch.Generator, n: int, points: int = 10, dt: float = 0.1) -> Pair:
    """Initial states float[n, 2] and their trajectories float[n, points, 2] observed every `dt` time units (the
    first observation `dt` after the start) of a damped nonlinear oscillator, integrated finely."""
    x = torch.rand(n, 2, generator=g) * 4 - 2
    x0, out, fine = x.clone(), [], 20
    for _ in range(points):
        for _ in range(fine):
            v = torch.stack([x[:, 1], -torch.sin(2 * x[:, 0]) - 0.3 * x[:, 1] + 0.1 * x[:, 0] ** 2], 1)
            x = x + dt / fine * v
        out.append(x)
    return x0, torch.stack(out, 1)


def numbers(g: torch.Generator, n: int, length: int = 8) -> torch.Tensor:
    """Lists float[n, length] of numbers in [0, 1) to sort."""
    return torch.rand(n, length, generator=g)


def students(g: torch.Generator, n: int, length: int = 40, skills: int = 10) -> Pair:
    """Exercise skill ids long[n, length] and answers float[n, length] (1: correct) of `n` students: each skill has a
    fixed difficulty, each student a skill level per skill that rises with practice of that skill and of the skill
    before it."""
    rg = torch.Generator().manual_seed(823)
    difficulty = torch.randn(skills, generator=rg) * 0.5
    level = torch.randn(n, skills, generator=g) * 1.5
    q = torch.randint(0, skills, (n, length), generator=g)
    answers = torch.zeros(n, length)
    rows = torch.arange(n)
    for t in range(length):
        p = torch.sigmoid(2 * (level[rows, q[:, t]] - difficulty[q[:, t]]))
        answers[:, t] = (torch.rand(n, generator=g) < p).float()
        level[rows, q[:, t]] += 0.3
        level[rows, (q[:, t] + 1) % skills] += 0.1
    return q, answers


def clicks(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Categorical fields long[n, 4] (vocabularies of 40), raw counts float[n, 5] (impressions, dwell seconds,
    price in cents, ...; heavy-tailed, up to about 1e5) and click labels float[n] from field and count
    interactions."""
    rg = torch.Generator().manual_seed(829)
    tables = [torch.randn(40, generator=rg) for _ in range(4)]
    pair = torch.randn(40, 40, generator=rg)
    w = torch.randn(5, generator=rg) / 2
    cat = torch.randint(0, 40, (n, 4), generator=g)
    scale = torch.tensor([10.0, 60.0, 5000.0, 3.0, 200.0])
    counts = torch.floor(scale * torch.exp(1.2 * torch.randn(n, 5, generator=g)))
    z = torch.log1p(counts) - torch.log1p(scale)
    logit = sum(tables[k][cat[:, k]] for k in range(4)) / 2 + pair[cat[:, 0], cat[:, 1]]
    logit = logit + z @ w + 0.5 * z[:, 0] * z[:, 2] - 0.5
    return cat, counts, (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()


def noisy_classes(
    g: torch.Generator, n: int, noise: float = 0.2
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Features float[n, 20], labels long[n] of five classes from a fixed random teacher network with a share
    `noise` of them replaced at random, and the clean labels long[n] (the oracle's)."""
    rg = torch.Generator().manual_seed(839)
    w1, w2 = torch.randn(20, 32, generator=rg) / math.sqrt(20), torch.randn(32, 5, generator=rg)
    x = torch.randn(n, 20, generator=g)
    clean = (torch.tanh(x @ w1) @ w2).argmax(1)
    flip = torch.rand(n, generator=g) < noise
    return x, torch.where(flip, torch.randint(0, 5, (n,), generator=g), clean), clean
