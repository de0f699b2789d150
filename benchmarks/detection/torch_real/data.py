"""Synthetic data sets of the realistic PyTorch suite, generated from a seed (no download).

Each function returns torch tensors for a train pool and a validation set. The tasks are small but
shaped like the real ones: tabular classes, nonlinear rings a linear model cannot separate, noisy
images, token sequences, user-item interactions with Zipf-distributed item popularity (rare items
that a run never samples), a noisy binary task whose Bayes-optimal loss is high, regression,
points on a low-dimensional manifold (autoencoders), a 2-D mixture of 8 Gaussians (GANs) and a
contextual bandit (policy gradients).
"""

from __future__ import annotations

import math

import torch

Pair = tuple[torch.Tensor, torch.Tensor]


def _split(x: torch.Tensor, y: torch.Tensor, n_val: int) -> tuple[Pair, Pair]:
    return (x[n_val:], y[n_val:]), (x[:n_val], y[:n_val])


def mixture(g: torch.Generator, *, n: int = 6000, dim: int = 32, k: int = 10, noise: float = 1.6,
            n_val: int = 512) -> tuple[Pair, Pair]:  # fmt: skip
    """A k-class Gaussian mixture in `dim` dimensions, standardised (a tabular classification task)."""
    centers = torch.randn(k, dim, generator=g)
    y = torch.randint(0, k, (n,), generator=g)
    x = centers[y] + noise * torch.randn(n, dim, generator=g)
    x = (x - x.mean(0)) / x.std(0)
    return _split(x, y, n_val)


def rings(
    g: torch.Generator, *, n: int = 6000, dim: int = 16, k: int = 3, n_val: int = 512
) -> tuple[Pair, Pair]:
    """k concentric rings in a random 2-D plane of `dim` dimensions plus noise: no linear model beats chance."""
    y = torch.randint(0, k, (n,), generator=g)
    angle = 2 * math.pi * torch.rand(n, generator=g)
    radius = 1.0 + y.float() + 0.25 * torch.randn(n, generator=g)
    plane = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], 1)
    basis = torch.linalg.qr(torch.randn(dim, dim, generator=g))[0][:2]
    x = plane @ basis + 0.1 * torch.randn(n, dim, generator=g)
    x = (x - x.mean(0)) / x.std(0)
    return _split(x, y, n_val)


def _shift(x: torch.Tensor, shifts: torch.Tensor) -> None:
    """Roll each image [C, H, W] of `x` in place by its row of `shifts` (pixels down, right)."""
    for s in range(-2, 3):
        for axis in (0, 1):
            rows = shifts[:, axis] == s
            x[rows] = torch.roll(x[rows], s, dims=2 + axis)


def images(
    g: torch.Generator, *, n: int = 4000, size: int = 12, k: int = 10, n_val: int = 256
) -> tuple[Pair, Pair]:
    """size x size RGB images: one of k random patterns, shifted by up to 2 pixels, under noise."""
    patterns = torch.randn(k, 3, size, size, generator=g)
    y = torch.randint(0, k, (n,), generator=g)
    x = patterns[y] * 0.6
    _shift(x, torch.randint(-2, 3, (n, 2), generator=g))
    x = x + torch.randn(n, 3, size, size, generator=g)
    return _split(x, y, n_val)


def pixel_images(
    g: torch.Generator, *, n: int = 4000, size: int = 12, k: int = 10, n_val: int = 256
) -> tuple[Pair, Pair]:
    """size x size RGB images as uint8 pixels, as decoded from image files: a bright object (one of k blurred
    random shapes, shifted by up to 2 pixels) on a mostly dark background, under noise."""
    shapes = 3 * torch.nn.functional.avg_pool2d(torch.randn(k, 3, size, size, generator=g), 3, 1, 1)
    y = torch.randint(0, k, (n,), generator=g)
    x = shapes[y]
    _shift(x, torch.randint(-2, 3, (n, 2), generator=g))
    x = x + 0.8 * torch.randn(n, 3, size, size, generator=g)
    pixels = (255 * torch.sigmoid(2.5 * (x - 1.5))).round().to(torch.uint8)
    return _split(pixels, y, n_val)


def counting(g: torch.Generator, n: int, *, vocab: int = 32, seq: int = 16, noise: float = 0.1) -> Pair:
    """Language-model batches: counting sequences mod `vocab` from a random start, `noise` of tokens random."""
    seqs = (torch.randint(0, vocab, (n, 1), generator=g) + torch.arange(seq + 1)) % vocab
    flip = torch.rand(n, seq + 1, generator=g) < noise
    seqs = torch.where(flip, torch.randint(0, vocab, (n, seq + 1), generator=g), seqs)
    return seqs[:, :-1], seqs[:, 1:]


def token_classes(g: torch.Generator, *, n: int = 4000, vocab: int = 20, seq: int = 12, k: int = 4,
                  n_val: int = 256) -> tuple[Pair, Pair]:  # fmt: skip
    """Sequence classification: each token votes for one of k classes; the label is the majority vote."""
    votes = torch.arange(vocab) % k
    x = torch.randint(0, vocab, (n, seq), generator=g)
    counts = torch.nn.functional.one_hot(votes[x], k).sum(1).float()
    y = (counts + 0.1 * torch.rand(n, k, generator=g)).argmax(1)  # ties broken at random
    return _split(x, y, n_val)


def interactions(g: torch.Generator, *, users: int = 150, items: int = 300, rank: int = 4, n: int = 30000,
                 n_val: int = 2000) -> tuple[Pair, Pair]:  # fmt: skip
    """Implicit feedback: (user, item) pairs with a 0/1 label from low-rank affinities; items are drawn from a
    Zipf law (exponent 1.1), so most interactions hit a few popular items and many items are rare or never seen.
    Returns x = int64[n, 2] (user, item) and y = float[n]."""
    u_f = torch.randn(users, rank, generator=g) / math.sqrt(rank)
    i_f = torch.randn(items, rank, generator=g) / math.sqrt(rank)
    popularity = 1.0 / torch.arange(1, items + 1).float() ** 1.1
    item = torch.multinomial(popularity / popularity.sum(), n, replacement=True, generator=g)
    item = torch.randperm(items, generator=g)[item]  # popular items are not the first ids
    user = torch.randint(0, users, (n,), generator=g)
    item_bias = torch.randn(items, generator=g)
    logit = 4.0 * (u_f[user] * i_f[item]).sum(1) + item_bias[item]
    y = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    return _split(torch.stack([user, item], 1), y, n_val)


def noisy_binary(g: torch.Generator, *, n: int = 6000, dim: int = 16, signal: float = 1.2,
                 n_val: int = 1000) -> tuple[Pair, Pair]:  # fmt: skip
    """A binary task with a high Bayes floor: labels drawn from sigmoid(signal * w.x); the best achievable
    loss is about 0.49 and the best accuracy about 0.75."""
    x = torch.randn(n, dim, generator=g)
    w = torch.randn(dim, generator=g)
    w = w / w.norm()
    y = (torch.rand(n, generator=g) < torch.sigmoid(signal * 2.0 * (x @ w))).float()
    return _split(x, y, n_val)


def regression(g: torch.Generator, *, n: int = 6000, dim: int = 8, n_val: int = 512) -> tuple[Pair, Pair]:
    """y = a smooth nonlinear function of x plus noise, standardised."""
    x = torch.randn(n, dim, generator=g)
    a = torch.randn(dim, generator=g)
    b = torch.randn(dim, generator=g)
    y = torch.sin(x @ a) + 0.5 * (x @ b) + 0.3 * x[:, 0] * x[:, 1] + 0.2 * torch.randn(n, generator=g)
    y = (y - y.mean()) / y.std()
    return _split(x, y, n_val)


def manifold(
    g: torch.Generator, *, n: int = 6000, dim: int = 32, latent: int = 4, n_val: int = 512
) -> tuple[Pair, Pair]:
    """Points on a 4-dimensional curved manifold in 32 dimensions plus a little noise (autoencoders)."""
    z = torch.randn(n, latent, generator=g)
    a = torch.randn(latent, dim, generator=g)
    x = torch.tanh(z @ a) + 0.05 * torch.randn(n, dim, generator=g)
    x = (x - x.mean(0)) / x.std(0)
    return _split(x, x, n_val)


def ring_of_gaussians(g: torch.Generator, n: int, *, modes: int = 8, std: float = 0.05) -> torch.Tensor:
    """GAN data: `n` points from 8 Gaussians on the unit circle."""
    k = torch.randint(0, modes, (n,), generator=g).float()
    centers = torch.stack([torch.cos(2 * math.pi * k / modes), torch.sin(2 * math.pi * k / modes)], 1)
    return centers + std * torch.randn(n, 2, generator=g)


def gan_score(samples: torch.Tensor) -> float:
    """1 - the energy distance between GAN samples and the 8 Gaussians, relative to that of a point mass at the
    origin (an untrained generator): 1 is a perfect match, 0 no better than the untrained one."""
    if not torch.isfinite(samples).all():
        return 0.0
    real = ring_of_gaussians(torch.Generator().manual_seed(3), 512)

    def mean_dist(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.cdist(a, b).mean()

    energy = 2 * mean_dist(samples, real) - mean_dist(samples, samples) - mean_dist(real, real)
    origin = 2 * mean_dist(torch.zeros(1, 2), real) - mean_dist(real, real)
    return max(0.0, 1.0 - float(energy / origin))


class Bandit:
    """A contextual bandit: contexts in R^8, 4 arms; reward 1 (plus noise) for the arm a fixed linear map ranks
    first, 0.3 for the second, 0 otherwise."""

    def __init__(self, g: torch.Generator, *, dim: int = 8, arms: int = 4) -> None:
        self.w = torch.randn(dim, arms, generator=g)
        self.dim, self.arms = dim, arms

    def contexts(self, g: torch.Generator, n: int) -> torch.Tensor:
        return torch.randn(n, self.dim, generator=g)

    def rewards(self, ctx: torch.Tensor) -> torch.Tensor:
        """float[n, arms]: the expected reward of each arm."""
        rank = (ctx @ self.w).argsort(1, descending=True).argsort(1)
        return torch.where(rank == 0, 1.0, torch.where(rank == 1, 0.3, 0.0))
