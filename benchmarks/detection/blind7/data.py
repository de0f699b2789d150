"""Synthetic data of the seventh blind split, generated from a torch.Generator (no download).

Each function returns tensors shaped like the real task it stands for: patient covariates with right-censored
survival times, vectors built from a few atoms of a hidden dictionary, points on a low-dimensional manifold seen in
16 dimensions, a greyscale picture sampled on a pixel grid, multichannel sequences with a long-memory target,
token streams from a fixed second-order Markov source, user-item interactions of users with cluster tastes, and
contexts of a contextual bandit with its mean rewards, and a small noisy regression. Nothing here knows which program or bug uses it.
"""

from __future__ import annotations

import math

import torch

Pair = tuple[torch.Tensor, torch.Tensor]


def survival(g: torch.Generator, n: int) -> tuple[torch.Tensor, ...]:
    """Covariates float[n, 10], observed times float[n] (the event or censoring time, whichever comes first), event
    indicators float[n] (1: the event was seen) and the uncensored event times float[n] (the oracle's)."""
    rg = torch.Generator().manual_seed(401)
    w = torch.randn(10, generator=rg) / 2
    x = torch.randn(n, 10, generator=g)
    risk = x @ w + 0.7 * torch.sin(x[:, 0] * x[:, 1])
    event_time = -torch.log(torch.rand(n, generator=g)) / torch.exp(risk)
    censor_time = -torch.log(torch.rand(n, generator=g)) / 0.4
    observed = torch.minimum(event_time, censor_time)
    return x, observed, (event_time <= censor_time).float(), event_time


def dictionary_mixtures(g: torch.Generator, n: int) -> torch.Tensor:
    """Vectors float[n, 24]: each a sum of about three of 64 fixed unit atoms with magnitudes in [0.5, 1.5], plus
    a little noise."""
    rg = torch.Generator().manual_seed(409)
    atoms = torch.randn(64, 24, generator=rg)
    atoms = atoms / atoms.norm(dim=1, keepdim=True)
    active = (torch.rand(n, 64, generator=g) < 3 / 64).float()
    codes = active * (0.5 + torch.rand(n, 64, generator=g))
    return codes @ atoms + 0.05 * torch.randn(n, 24, generator=g)


def manifold(g: torch.Generator, n: int) -> torch.Tensor:
    """Points float[n, 16] on a curved 3-D manifold (a fixed random map of three angles), plus noise."""
    rg = torch.Generator().manual_seed(419)
    freq = torch.randn(3, 16, generator=rg)
    mix = torch.randn(16, 16, generator=rg) / 4
    t = 2 * math.pi * torch.rand(n, 3, generator=g)
    x = torch.sin(t @ freq) + 0.5 * torch.cos(t @ freq) @ mix
    return x + 0.05 * torch.randn(n, 16, generator=g)


def picture(size: int = 32) -> Pair:
    """Pixel coordinates float[size^2, 2] in [0, 1] and a greyscale picture float[size^2] in about [-1, 1]: a few
    oriented gratings, a disc with a sharp edge and a smooth blob (the same picture for every seed)."""
    r = torch.linspace(0, 1, size)
    yy, xx = torch.meshgrid(r, r, indexing="ij")
    img = 0.4 * torch.sin(2 * math.pi * (3 * xx + 2 * yy)) + 0.3 * torch.cos(2 * math.pi * 7 * xx * yy)
    img = img + 0.6 * (((xx - 0.35) ** 2 + (yy - 0.6) ** 2) < 0.04).float()
    img = img - 0.5 * torch.exp(-((xx - 0.75) ** 2 + (yy - 0.25) ** 2) / 0.01)
    return torch.stack([yy.flatten(), xx.flatten()], 1), img.flatten()


def memory_sequences(g: torch.Generator, n: int, length: int = 48) -> Pair:
    """Inputs float[n, length, 4] and a target float[n]: a slow and a fast leaky integral of two fixed projections
    of the inputs, read at the last step through a nonlinearity."""
    rg = torch.Generator().manual_seed(421)
    w = torch.randn(2, 4, generator=rg) / 2
    u = torch.randn(n, length, 4, generator=g)
    p = u @ w.T
    k = torch.arange(length - 1, -1, -1).float()
    slow = (p[:, :, 0] * 0.95**k).sum(1) / 3
    fast = (p[:, :, 1] * 0.6**k).sum(1)
    return u, torch.tanh(slow) + 0.5 * fast - 0.3 * slow * fast


def markov_tokens(g: torch.Generator, n: int, length: int = 24, vocab: int = 16) -> torch.Tensor:
    """Token ids long[n, length] from a fixed second-order source: the next token is a fixed function of the two
    before it with probability 0.8, uniform otherwise."""
    rg = torch.Generator().manual_seed(431)
    rule = torch.randint(0, vocab, (vocab, vocab), generator=rg)
    x = torch.randint(0, vocab, (n, length), generator=g)
    for t in range(2, length):
        keep = torch.rand(n, generator=g) < 0.8
        x[keep, t] = rule[x[keep, t - 2], x[keep, t - 1]]
    return x


def interactions(g: torch.Generator, users: int = 300, items: int = 400) -> torch.Tensor:
    """Implicit feedback bool[users, items]: each user and item belongs to one of 10 taste clusters; a user has
    interacted with an item of its own cluster with probability 0.25, of another with 0.01."""
    uc = torch.randint(0, 10, (users,), generator=g)
    ic = torch.randint(0, 10, (items,), generator=g)
    p = torch.where(uc[:, None] == ic[None, :], torch.tensor(0.25), torch.tensor(0.01))
    return torch.rand(users, items, generator=g) < p


def bandit_contexts(g: torch.Generator, n: int, arms: int = 5) -> Pair:
    """Contexts float[n, 8] and the mean reward of each arm float[n, arms] (a fixed nonlinear function of the
    context; rewards are drawn around it by the script)."""
    rg = torch.Generator().manual_seed(433)
    w1, w2 = torch.randn(8, 16, generator=rg), torch.randn(16, arms, generator=rg) / 2
    x = torch.randn(n, 8, generator=g)
    return x, torch.tanh(torch.tanh(x @ w1) @ w2)


def small_regression(g: torch.Generator, n: int) -> Pair:
    """Inputs float[n, 8] and a noisy smooth target float[n] (noise sd 0.3): a ridge, a bowl and an interaction."""
    rg = torch.Generator().manual_seed(439)
    w = torch.randn(3, 8, generator=rg) / 2
    x = torch.randn(n, 8, generator=g)
    y = torch.sin(2 * x @ w[0]) + 0.3 * (x @ w[1]) ** 2 + x[:, 0] * x[:, 1] * 0.5 - 0.3 * x @ w[2]
    return x, y + 0.3 * torch.randn(n, generator=g)
