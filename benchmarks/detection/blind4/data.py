"""Synthetic data of the fourth blind split, generated from a torch.Generator (no download).

Each function returns tensors shaped like the real task it stands for: a character stream made of words, padded
sentences with entity tags, seasonal series cut into windows, paired views of one latent (two "modalities"),
user-item interactions, queries with graded documents, identities seen under noise, small graphs of three
structural families, padded sets carrying a signal element, sine-wave tasks, a 2-D image, noisy 1-D signals,
8x8 glyphs and 12x12 bar images. Nothing here knows which program or bug uses it.
"""

from __future__ import annotations

import math

import torch

Pair = tuple[torch.Tensor, torch.Tensor]


def char_stream(g: torch.Generator, n: int, *, letters: int = 15, words: int = 30) -> torch.Tensor:
    """A token stream int64[n]: words of 3-7 letters (ids 1..letters) from a fixed lexicon, drawn with Zipf-like
    frequencies and separated by the space token 0."""
    rg = torch.Generator().manual_seed(101)
    lexicon = [torch.randint(1, letters + 1, (int(torch.randint(3, 8, (1,), generator=rg)),), generator=rg)
               for _ in range(words)]  # fmt: skip
    freq = 1.0 / torch.arange(1, words + 1).float() ** 0.8
    out: list[torch.Tensor] = []
    total = 0
    while total < n:
        w = lexicon[int(torch.multinomial(freq, 1, generator=g))]
        out += [w, torch.zeros(1, dtype=torch.long)]
        total += len(w) + 1
    return torch.cat(out)[:n]


def tagged_sentences(
    g: torch.Generator, n: int, *, vocab: int = 60, max_len: int = 20
) -> tuple[torch.Tensor, ...]:
    """Sentences int64[n, max_len] (token 0 pads), their tags int64[n, max_len] (0: outside, or padding; 1-4: an
    entity type that depends on the token and the next one) and lengths int64[n] in [6, max_len]."""
    lengths = torch.randint(6, max_len + 1, (n,), generator=g)
    tok = torch.randint(1, vocab, (n, max_len), generator=g)
    mask = torch.arange(max_len)[None, :] < lengths[:, None]
    tok = tok * mask
    nxt = torch.cat([tok[:, 1:], torch.zeros(n, 1, dtype=torch.long)], 1)
    entity = tok >= 2 * vocab // 3
    tags = torch.where(entity, 1 + (tok + nxt) % 4, torch.zeros_like(tok)) * mask
    return tok, tags, lengths


def seasonal_windows(g: torch.Generator, n: int, *, back: int = 36, horizon: int = 12) -> Pair:
    """Windows of seasonal series: input float[n, back] and the next values float[n, horizon] (two seasonal
    periods, a trend, a level per series, noise)."""
    t = torch.arange(back + horizon).float()
    level = 10 + 5 * torch.randn(n, 1, generator=g)
    p1 = 2 * math.pi * torch.rand(n, 1, generator=g)
    amp = 1 + torch.rand(n, 2, generator=g)
    trend = 0.05 * torch.randn(n, 1, generator=g)
    x = (level + trend * t + amp[:, :1] * torch.sin(2 * math.pi * t / 12 + p1)
         + amp[:, 1:] * torch.sin(2 * math.pi * t / 5 + 2 * p1) + 0.3 * torch.randn(n, back + horizon, generator=g))  # fmt: skip
    return x[:, :back], x[:, back:]


def paired_views(g: torch.Generator, n: int, *, latent: int = 8) -> Pair:
    """Two views of the same items: an "image" float[n, 32] and a "caption" float[n, 24], each a fixed nonlinear
    map of a shared latent plus its own noise."""
    rg = torch.Generator().manual_seed(107)
    a, b = torch.randn(latent, 32, generator=rg), torch.randn(latent, 24, generator=rg)
    z = torch.randn(n, latent, generator=g)
    img = torch.tanh(z @ a / 2) + 0.2 * torch.randn(n, 32, generator=g)
    txt = torch.sin(z @ b / 2) + 0.2 * torch.randn(n, 24, generator=g)
    return img, txt


def interactions(
    g: torch.Generator, *, users: int = 300, items: int = 200, per_user: int = 20
) -> torch.Tensor:
    """Implicit feedback: (user, item) pairs int64[users * per_user, 2], each user's items drawn by taste (a
    5-factor model) and popularity; the last pair of each user is its most recent one."""
    u = torch.randn(users, 5, generator=g)
    v = torch.randn(items, 5, generator=g)
    pop = torch.linspace(1.0, 0.0, items)
    logits = u @ v.T + 2 * pop
    chosen = torch.multinomial(torch.softmax(logits, 1), per_user, replacement=False, generator=g)
    return torch.stack([torch.arange(users).repeat_interleave(per_user), chosen.reshape(-1)], 1)


def queries(g: torch.Generator, n: int, *, docs: int = 16, dim: int = 12) -> Pair:
    """Queries of `docs` documents: features float[n, docs, dim] and graded relevance float[n, docs] in 0..4 from a
    fixed nonlinear rule plus noise."""
    rg = torch.Generator().manual_seed(109)
    w1, w2 = torch.randn(dim, generator=rg), torch.randn(dim, generator=rg)
    x = torch.randn(n, docs, dim, generator=g)
    s = x @ w1 + 0.5 * (x @ w2) ** 2 / dim**0.5 + 0.5 * torch.randn(n, docs, generator=g)
    cuts = torch.quantile(s.flatten(), torch.tensor([0.5, 0.75, 0.9, 0.97]))
    return x, torch.bucketize(s, cuts).float()


def identities(g: torch.Generator, n: int, *, classes: int = 24, dim: int = 32) -> Pair:
    """Samples float[n, dim] of `classes` identities (a fixed nonlinear view of each identity's centre, a nuisance
    factor shared by all, noise) and the identity int64[n]."""
    rg = torch.Generator().manual_seed(113)
    centres = torch.randn(classes, 16, generator=rg)
    mix = torch.randn(16 + 4, dim, generator=rg) / 4
    y = torch.randint(0, classes, (n,), generator=g)
    nuisance = 2 * torch.randn(n, 4, generator=g)
    h = torch.cat([centres[y] + 0.6 * torch.randn(n, 16, generator=g), nuisance], 1)
    return torch.tanh(h @ mix) + 0.05 * torch.randn(n, dim, generator=g), y


def graphs(g: torch.Generator, n: int, *, max_nodes: int = 16) -> tuple[torch.Tensor, ...]:
    """Small undirected graphs of three families with similar edge density (Erdos-Renyi, two communities, a hub
    and spokes with a few chords): dense adjacency float[n, max_nodes, max_nodes] (zero padded), a node mask
    bool[n, max_nodes] and the family int64[n]."""
    adj = torch.zeros(n, max_nodes, max_nodes)
    sizes = torch.randint(8, max_nodes + 1, (n,), generator=g)
    y = torch.randint(0, 3, (n,), generator=g)
    for i in range(n):
        k, c = int(sizes[i]), int(y[i])
        u = torch.rand(k, k, generator=g)
        if c == 0:
            p = torch.full((k, k), 0.3)
        elif c == 1:
            side = torch.arange(k) < k // 2
            p = torch.where(side[:, None] == side[None, :], 0.55, 0.04)
        else:
            p = torch.full((k, k), 0.08)
            p[0, :] = p[:, 0] = 0.9
        a = torch.triu((u < p).float(), 1)
        adj[i, :k, :k] = a + a.T
    return adj, torch.arange(max_nodes)[None, :] < sizes[:, None], y


def signal_sets(
    g: torch.Generator, n: int, *, max_len: int = 16, dim: int = 16, classes: int = 4
) -> tuple[torch.Tensor, ...]:
    """Padded sets float[n, max_len, dim] of distractors with one or two elements near the class's prototype, the
    mask bool[n, max_len] of real elements (6..max_len) and the class int64[n]."""
    rg = torch.Generator().manual_seed(127)
    protos = 2 * torch.randn(classes, dim, generator=rg)
    y = torch.randint(0, classes, (n,), generator=g)
    lengths = torch.randint(6, max_len + 1, (n,), generator=g)
    x = torch.randn(n, max_len, dim, generator=g)
    pos = (torch.rand(n, generator=g) * lengths).long()
    x[torch.arange(n), pos] = protos[y] + 0.5 * torch.randn(n, dim, generator=g)
    mask = torch.arange(max_len)[None, :] < lengths[:, None]
    return x * mask[..., None], mask, y


def sine_tasks(g: torch.Generator, tasks: int, points: int) -> tuple[torch.Tensor, ...]:
    """Regression tasks y = a sin(f x + p) on x in [-3, 3]: a task descriptor float[tasks, 3] (noisy a, f, p),
    inputs float[tasks, points, 1] and targets float[tasks, points, 1]."""
    a = 0.5 + 1.5 * torch.rand(tasks, 1, generator=g)
    f = 0.5 + torch.rand(tasks, 1, generator=g)
    p = math.pi * torch.rand(tasks, 1, generator=g)
    x = 6 * torch.rand(tasks, points, 1, generator=g) - 3
    y = a[:, :, None] * torch.sin(f[:, :, None] * x + p[:, :, None])
    return torch.cat([a, f, p], 1) + 0.05 * torch.randn(tasks, 3, generator=g), x, y


def image(g: torch.Generator, *, size: int = 32) -> Pair:
    """A 2-D grey image: pixel coordinates float[size * size, 2] in [-1, 1] and values float[size * size, 1]
    (Gaussian blobs and a plane wave)."""
    lin = torch.linspace(-1, 1, size)
    yy, xx = torch.meshgrid(lin, lin, indexing="ij")
    coords = torch.stack([xx, yy], -1).reshape(-1, 2)
    v = 0.3 * torch.sin(4 * coords[:, 0] + 3 * coords[:, 1] + 2 * math.pi * float(torch.rand(1, generator=g)))
    for _ in range(5):
        c = 2 * torch.rand(2, generator=g) - 1
        w = 0.1 + 0.3 * torch.rand(1, generator=g)
        v = v + (2 * torch.rand(1, generator=g) - 1) * torch.exp(-((coords - c) ** 2).sum(1) / w**2)
    return coords, v[:, None]


def noisy_signals(g: torch.Generator, n: int, *, length: int = 64, noise: float = 0.4) -> Pair:
    """Signed 1-D signals: noisy float[n, 1, length] and clean float[n, 1, length] (steps plus a sine, zero mean)."""
    t = torch.arange(length).float()
    steps = torch.cumsum(
        (torch.rand(n, length, generator=g) < 0.05).float() * torch.randn(n, length, generator=g), 1
    )
    clean = steps + torch.sin(2 * math.pi * t / (8 + 16 * torch.rand(n, 1, generator=g)))
    clean = clean - clean.mean(1, keepdim=True)
    return (clean + noise * torch.randn(n, length, generator=g))[:, None], clean[:, None]


def glyphs(g: torch.Generator, n: int) -> torch.Tensor:
    """8x8 glyphs float[n, 64] in [0, 1]: one of 10 fixed binary patterns, shifted by up to a pixel, blurred."""
    rg = torch.Generator().manual_seed(131)
    protos = (torch.rand(10, 8, 8, generator=rg) < 0.4).float()
    idx = torch.randint(0, 10, (n,), generator=g)
    shift = torch.randint(-1, 2, (n, 2), generator=g)
    out = torch.stack([torch.roll(protos[i], (int(s[0]), int(s[1])), (0, 1)) for i, s in zip(idx, shift)])
    out = 0.7 * out + 0.15 * (torch.roll(out, 1, 1) + torch.roll(out, 1, 2))
    return (out + 0.05 * torch.rand(n, 8, 8, generator=g)).clamp(0, 1).reshape(n, 64)


def bar_images(g: torch.Generator, n: int, *, size: int = 12) -> Pair:
    """Images float[n, 1, size, size] of a bar in one of 4 orientations (the class int64[n]) at a random offset,
    with a random contrast and noise."""
    y = torch.randint(0, 4, (n,), generator=g)
    r = torch.arange(size).float() - (size - 1) / 2
    yy, xx = torch.meshgrid(r, r, indexing="ij")
    ang = y.float() * math.pi / 4
    off = 3 * (torch.rand(n, generator=g) - 0.5)
    d = (xx[None] * torch.sin(ang)[:, None, None] - yy[None] * torch.cos(ang)[:, None, None]) - off[
        :, None, None
    ]
    img = (0.5 + torch.rand(n, 1, 1, generator=g)) * torch.exp(-(d**2) / 2)
    return (img + 0.4 * torch.randn(n, size, size, generator=g))[:, None], y
