"""Synthetic data of the third blind split, generated from a torch.Generator (no download).

Each function returns tensors shaped like the real task it stands for: mu-law audio-like waveforms, a damped
oscillator observed at a few times, a multi-valued inverse problem, tabular rows with numeric and categorical
columns, multi-label rows with rare labels, ordinal ratings, a knowledge graph of triples, item sessions, point clouds of variable size, motif-bearing token sequences. Nothing here knows which program or bug
uses it.
"""

from __future__ import annotations

import math

import torch

Pair = tuple[torch.Tensor, torch.Tensor]


def waveforms(g: torch.Generator, n: int, *, length: int = 64, levels: int = 16) -> torch.Tensor:
    """Audio-like clips int64[n, length]: two decaying partials and AR noise, mu-law quantised to `levels` codes."""
    t = torch.arange(length).float()
    f = 0.02 + 0.1 * torch.rand(n, 2, generator=g)
    ph = 2 * math.pi * torch.rand(n, 2, generator=g)
    amp = torch.tensor([0.6, 0.3]) * (0.5 + torch.rand(n, 2, generator=g))
    x = (amp[:, :, None] * torch.sin(2 * math.pi * f[:, :, None] * t + ph[:, :, None])).sum(1)
    x = x * torch.exp(-t / (40 + 80 * torch.rand(n, 1, generator=g))) + 0.03 * torch.randn(
        n, length, generator=g
    )
    x = x.clamp(-1, 1)
    mu = levels - 1
    y = torch.sign(x) * torch.log1p(mu * x.abs()) / math.log1p(mu)
    return ((y + 1) / 2 * mu).round().long().clamp(0, mu)


def oscillator(g: torch.Generator, *, n_obs: int = 12, noise: float = 0.02) -> tuple[torch.Tensor, ...]:
    """A damped oscillator u'' + 2 zeta w u' + w^2 u = 0 (u(0) = 1, u'(0) = -zeta w) on t in [0, 1]: a few noisy
    observations (t float[n_obs, 1] over the first 40%, u float[n_obs, 1]), collocation points float[256, 1], the
    dense truth (t, u) on a grid of 200, and the constants (zeta, w)."""
    zeta, w = 0.15, 2 * math.pi * (1.5 + 0.5 * float(torch.rand(1, generator=g)))

    def u(t: torch.Tensor) -> torch.Tensor:
        wd = w * math.sqrt(1 - zeta**2)
        return torch.exp(-zeta * w * t) * torch.cos(wd * t)

    t_obs = 0.4 * torch.rand(n_obs, 1, generator=g)
    t_grid = torch.linspace(0, 1, 200)[:, None]
    colloc = torch.rand(256, 1, generator=g)
    obs = u(t_obs) + noise * torch.randn(n_obs, 1, generator=g)
    return t_obs, obs, colloc, t_grid, u(t_grid), torch.tensor([zeta, w])


def inverse_sine(g: torch.Generator, n: int) -> Pair:
    """The textbook multi-valued inverse problem: x float[n, 1] = y + 0.3 sin(2 pi y) + noise, y float[n, 1]."""
    y = torch.rand(n, 1, generator=g)
    return y + 0.3 * torch.sin(2 * math.pi * y) + 0.05 * torch.randn(n, 1, generator=g), y


def tabular(
    g: torch.Generator, n: int, *, numeric: int = 6, cards: tuple[int, ...] = (7, 12, 4)
) -> tuple[torch.Tensor, ...]:
    """Rows with numeric columns float[n, numeric] (mixed scales), categorical columns int64[n, len(cards)] and a
    3-class label int64[n] from a fixed nonlinear rule with 10% label noise."""
    rg = torch.Generator().manual_seed(83)
    num = torch.randn(n, numeric, generator=g) * torch.tensor([1.0, 10.0, 0.1, 3.0, 1.0, 50.0])[:numeric]
    cat = torch.stack([torch.randint(0, c, (n,), generator=g) for c in cards], 1)
    effects = [torch.randn(c, generator=rg) for c in cards]
    z = (
        num[:, 0] * num[:, 3] / 3
        + torch.tanh(num[:, 1] / 10)
        - num[:, 2] * 5
        + sum(e[cat[:, i]] for i, e in enumerate(effects))
    )
    y = torch.bucketize(z, torch.quantile(z, torch.tensor([1 / 3, 2 / 3])))
    flip = torch.rand(n, generator=g) < 0.1
    return num, cat, torch.where(flip, torch.randint(0, 3, (n,), generator=g), y)


def multilabel(g: torch.Generator, n: int, *, dim: int = 24, labels: int = 6) -> Pair:
    """Rows float[n, dim] and multi-hot labels float[n, labels], label k present in about 30% / 2^k of the rows."""
    rg = torch.Generator().manual_seed(91)
    w = torch.randn(dim, labels, generator=rg)
    x = torch.randn(n, dim, generator=g)
    logit = x @ w / math.sqrt(dim) * 3 + 0.5 * torch.randn(n, labels, generator=g)
    rate = 0.3 / 2 ** torch.arange(labels).float()
    cut = torch.stack([torch.quantile(logit[:, k], 1 - float(rate[k])) for k in range(labels)])
    return x, (logit > cut).float()


def ratings(g: torch.Generator, n: int, *, dim: int = 10, levels: int = 5) -> Pair:
    """Rows float[n, dim] and ordinal ratings int64[n] in 0..levels-1 (a latent score cut at fixed thresholds)."""
    rg = torch.Generator().manual_seed(97)
    w = torch.randn(dim, generator=rg)
    x = torch.randn(n, dim, generator=g)
    z = x @ w / math.sqrt(dim) + 0.3 * torch.sin(2 * x[:, 0]) + 0.4 * torch.randn(n, generator=g)
    return x, torch.bucketize(z, torch.linspace(-1.2, 1.2, levels - 1))


def knowledge_graph(
    g: torch.Generator, *, entities: int = 120, relations: int = 6, n: int = 2400
) -> torch.Tensor:
    """Triples int64[n, 3] (head, relation, tail): entities on a hidden 2-D lattice, each relation a fixed move."""
    side = math.ceil(math.sqrt(entities))
    pos = torch.stack([torch.arange(entities) // side, torch.arange(entities) % side], 1)
    moves = torch.tensor([[0, 1], [1, 0], [0, -1], [-1, 0], [1, 1], [2, 0]])[:relations]
    h = torch.randint(0, entities, (n * 2,), generator=g)
    r = torch.randint(0, relations, (n * 2,), generator=g)
    tp = pos[h] + moves[r]
    ok = (tp >= 0).all(1) & (tp[:, 0] * side + tp[:, 1] < entities) & (tp[:, 1] < side)
    t = tp[:, 0] * side + tp[:, 1]
    triples = torch.stack([h, r, t], 1)[ok]
    return torch.unique(triples, dim=0)[:n]


def sessions(g: torch.Generator, n: int, *, items: int = 200, length: int = 10) -> torch.Tensor:
    """Item sessions int64[n, length] over ids 0..items-1 from a fixed Markov chain whose start items follow a Zipf
    law (item 0 the most popular, and a likely successor of every item)."""
    cg = torch.Generator().manual_seed(101)
    nxt = torch.randint(0, items, (items, 3), generator=cg)
    nxt[:, 0] = (torch.arange(items) + 1) % items
    nxt[:, 2] = 0
    probs = torch.tensor([0.45, 0.35, 0.2])
    zipf = 1 / (torch.arange(items).float() + 1)
    out = torch.empty(n, length, dtype=torch.long)
    out[:, 0] = torch.multinomial(zipf, n, replacement=True, generator=g)
    for t in range(1, length):
        out[:, t] = nxt[out[:, t - 1], torch.multinomial(probs, n, replacement=True, generator=g)]
    return out


def point_clouds(g: torch.Generator, n: int, *, points: int = 32, k: int = 4) -> tuple[torch.Tensor, ...]:
    """Point clouds float[n, points, 3] of k shapes (sphere, cube surface, ring, two blobs) at a random rotation
    about z, scale and offset, each with 16..points real points (the rest zero padding); lengths int64[n], labels."""
    y = torch.randint(0, k, (n,), generator=g)
    u = torch.randn(n, points, 3, generator=g)
    sphere = u / u.norm(dim=-1, keepdim=True)
    cube = torch.rand(n, points, 3, generator=g) * 2 - 1
    face = torch.randint(0, 3, (n, points), generator=g)
    cube.scatter_(2, face[..., None], torch.sign(cube.gather(2, face[..., None])))
    a = 2 * math.pi * torch.rand(n, points, generator=g)
    ring = torch.stack([a.cos(), a.sin(), 0.05 * torch.randn(n, points, generator=g)], -1)
    side = torch.where(torch.rand(n, points, 1, generator=g) < 0.5, -1.0, 1.0)
    blobs = 0.3 * torch.randn(n, points, 3, generator=g) + side * torch.tensor([0.8, 0.0, 0.0])
    shapes = torch.stack([sphere, cube, ring, blobs], 1)[torch.arange(n), y]
    th = 2 * math.pi * torch.rand(n, generator=g)
    rot = torch.zeros(n, 3, 3)
    rot[:, 0, 0], rot[:, 0, 1], rot[:, 1, 0], rot[:, 1, 1], rot[:, 2, 2] = (
        th.cos(),
        -th.sin(),
        th.sin(),
        th.cos(),
        1,
    )
    pts = shapes @ rot * (0.7 + 0.6 * torch.rand(n, 1, 1, generator=g)) + 0.3 * torch.randn(
        n, 1, 3, generator=g
    )
    pts = pts + 0.04 * torch.randn(n, points, 3, generator=g)
    lengths = torch.randint(16, points + 1, (n,), generator=g)
    pts = pts * (torch.arange(points)[None, :] < lengths[:, None])[..., None]
    return pts, lengths, y


def motif_sequences(g: torch.Generator, n: int, *, vocab: int = 40, length: int = 24, k: int = 4) -> Pair:
    """Token sequences int64[n, length] over 1..vocab-1 and a class int64[n]: class c plants its 3-token motif
    (fixed, possibly interrupted by one token) at a random place; class 0's motif is absent from the others."""
    mg = torch.Generator().manual_seed(107)
    motifs = torch.randint(1, vocab, (k, 3), generator=mg)
    x = torch.randint(1, vocab, (n, length), generator=g)
    y = torch.randint(0, k, (n,), generator=g)
    start = torch.randint(0, length - 4, (n,), generator=g)
    gap = (torch.rand(n, generator=g) < 0.3).long()
    rows = torch.arange(n)
    x[rows, start] = motifs[y, 0]
    x[rows, start + 1] = motifs[y, 1]
    x[rows, start + 2 + gap] = motifs[y, 2]
    return x, y
