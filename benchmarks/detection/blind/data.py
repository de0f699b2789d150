"""Synthetic data of the blind split, generated from a torch.Generator (no download).

Each function returns tensors shaped like the real task they stand for: tabular rows with raw units and
categorical ids, heteroscedastic and heavy-tailed regression, implicit feedback, keyword-like waveforms,
text from a sparse Markov chain, uint8 images of class patterns, images with a shape to segment, a
community graph, the adding problem. Nothing here knows which program or bug uses it.
"""

from __future__ import annotations

import math

import torch

Pair = tuple[torch.Tensor, torch.Tensor]


def blobs(g: torch.Generator, n: int, *, dim: int = 20, k: int = 5, spread: float = 1.3) -> Pair:
    """A k-class problem: Gaussian clusters (two per class) pushed through a fixed random nonlinearity."""
    centers = torch.randn(2 * k, dim, generator=g) * 1.5
    sub = torch.randint(0, 2 * k, (n,), generator=g)
    z = centers[sub] + spread * torch.randn(n, dim, generator=g)
    mix = torch.randn(dim, dim, generator=g) / math.sqrt(dim)
    x = z + 0.5 * torch.tanh(z @ mix)
    return (x - x.mean(0)) / x.std(0), sub % k


def tabular(g: torch.Generator, n: int, *, k: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rows of 10 numeric columns in raw units (ages, amounts, counts: means from 1 to 5000) and 2 categorical
    columns (8 and 12 levels); the label depends on both. Returns (numeric float[n, 10], cats int64[n, 2], y)."""
    scale = torch.tensor([40.0, 5000.0, 3.0, 120.0, 1.0, 800.0, 15.0, 60.0, 2.0, 300.0])
    z = torch.randn(n, 10, generator=g)
    num = scale * (1.0 + 0.3 * z)
    cats = torch.stack([torch.randint(0, 8, (n,), generator=g), torch.randint(0, 12, (n,), generator=g)], 1)
    w = torch.randn(10, k, generator=g)
    c0, c1 = torch.randn(8, k, generator=g), torch.randn(12, k, generator=g)
    logits = (
        1.5 * torch.tanh(z @ w)
        + z[:, :3].pow(2) @ torch.randn(3, k, generator=g) * 0.5
        + c0[cats[:, 0]]
        + c1[cats[:, 1]]
    )
    y = (logits + 0.5 * torch.randn(n, k, generator=g)).argmax(1)
    return num, cats, y


def regression(
    g: torch.Generator, n: int, *, dim: int = 6, noise: str = "hetero"
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x, y, f): y = f(x) plus noise, f a smooth function: heteroscedastic Gaussian noise (`hetero`, its std
    grows with |x0|) or Student-t noise with 1.5 degrees of freedom (`heavy`, occasional huge outliers)."""
    x = torch.randn(n, dim, generator=g)
    a = torch.randn(dim, generator=g)
    f = torch.sin(1.5 * x @ a / math.sqrt(dim)) + 0.4 * x[:, 1] - 0.3 * x[:, 2] * x[:, 3]
    if noise == "hetero":
        eps = (0.1 + 0.6 * x[:, 0].abs()) * torch.randn(n, generator=g)
    else:
        normal = torch.randn(n, generator=g)
        chi2 = torch.distributions.Chi2(torch.tensor(1.5)).sample((n,))
        eps = 0.2 * normal / (chi2 / 1.5).sqrt()
    return x, f + eps, f


def feedback(g: torch.Generator, n: int, *, users: int = 200, items: int = 120, rank: int = 5) -> Pair:
    """Implicit feedback: (user, item) pairs and a 0/1 click drawn from a low-rank affinity plus item bias."""
    u = torch.randn(users, rank, generator=g)
    v = torch.randn(items, rank, generator=g)
    bias = 0.5 * torch.randn(items, generator=g)
    user = torch.randint(0, users, (n,), generator=g)
    item = torch.randint(0, items, (n,), generator=g)
    p = torch.sigmoid((u[user] * v[item]).sum(1) * 0.8 + bias[item])
    return torch.stack([user, item], 1), (torch.rand(n, generator=g) < p).float()


def waveforms(g: torch.Generator, n: int, *, length: int = 80, k: int = 5) -> Pair:
    """Keyword-like clips float[n, length, 1]: class c is a burst at a class frequency whose pitch rises or
    falls, placed anywhere in the clip, under noise."""
    y = torch.randint(0, k, (n,), generator=g)
    t = torch.arange(length).float()
    start = torch.randint(0, length // 2, (n, 1), generator=g).float()
    freq = (0.15 + 0.12 * (y % 3).float()).unsqueeze(1)
    sweep = torch.where(y >= 3, -0.002, 0.002).unsqueeze(1).float()
    rel = (t - start).clamp(min=0)
    env = ((t >= start) & (t < start + length // 2)).float()
    wave = env * torch.sin(freq * rel + sweep * rel**2)
    return (wave + 0.5 * torch.randn(n, length, generator=g)).unsqueeze(-1), y


def markov_text(
    g: torch.Generator, n: int, *, vocab: int = 40, seq: int = 24, seed_chain: int = 7
) -> torch.Tensor:
    """int64[n, seq + 1] token sequences from a fixed sparse Markov chain (each token has three likely successors)."""
    cg = torch.Generator().manual_seed(seed_chain)
    nxt = torch.randint(0, vocab, (vocab, 3), generator=cg)
    probs = torch.tensor([0.6, 0.25, 0.15])
    out = torch.empty(n, seq + 1, dtype=torch.long)
    out[:, 0] = torch.randint(0, vocab, (n,), generator=g)
    for t in range(seq):
        pick = torch.multinomial(probs, n, replacement=True, generator=g)
        out[:, t + 1] = nxt[out[:, t], pick]
    return out


def pattern_images(
    g: torch.Generator, n: int, *, size: int = 12, k: int = 6, seed_patterns: int = 11
) -> Pair:
    """uint8[n, 3, size, size] photos of k class patterns at varying brightness and position, with sensor noise."""
    pg = torch.Generator().manual_seed(seed_patterns)
    patterns = torch.rand(k, 3, size, size, generator=pg)
    patterns = torch.nn.functional.avg_pool2d(patterns, 3, stride=1, padding=1)
    patterns = (patterns - patterns.mean()) / patterns.std()
    y = torch.randint(0, k, (n,), generator=g)
    x = patterns[y]
    shift = torch.randint(-1, 2, (2,), generator=g)
    x = torch.roll(x, (int(shift[0]), int(shift[1])), dims=(2, 3))
    brightness = 90 + 80 * torch.rand(n, 1, 1, 1, generator=g)
    img = brightness + 45 * x + 25 * torch.randn(n, 3, size, size, generator=g)
    return img.clamp(0, 255).to(torch.uint8), y


def shapes(g: torch.Generator, n: int, *, size: int = 16) -> Pair:
    """uint8[n, 1, size, size] images with one bright disc or square on a textured background, and its mask."""
    yy, xx = torch.meshgrid(torch.arange(size).float(), torch.arange(size).float(), indexing="ij")
    cy, cx = (torch.rand(n, 2, generator=g) * (size - 6) + 3).unbind(1)
    r = 2 + 3 * torch.rand(n, generator=g)
    disc = ((yy - cy[:, None, None]) ** 2 + (xx - cx[:, None, None]) ** 2) < r[:, None, None] ** 2
    square = ((yy - cy[:, None, None]).abs() < r[:, None, None]) & (
        (xx - cx[:, None, None]).abs() < r[:, None, None]
    )
    is_disc = torch.rand(n, generator=g) < 0.5
    mask = torch.where(is_disc[:, None, None], disc, square).float()
    background = 60 + 30 * torch.sin(xx / 2 + torch.rand(n, 1, 1, generator=g) * 6)
    img = background + 90 * mask + 20 * torch.randn(n, size, size, generator=g)
    return img.clamp(0, 255).to(torch.uint8).unsqueeze(1), mask.unsqueeze(1)


def community_graph(
    g: torch.Generator, *, nodes: int = 400, k: int = 4, dim: int = 16
) -> tuple[torch.Tensor, ...]:
    """A stochastic block model: dense adjacency float[nodes, nodes] (no self loops), weakly informative node
    features, community labels, and train/val node masks (30% / 30%)."""
    y = torch.randint(0, k, (nodes,), generator=g)
    same = y[:, None] == y[None, :]
    p = torch.where(same, 0.08, 0.008)
    upper = torch.triu(torch.rand(nodes, nodes, generator=g) < p, diagonal=1)
    adj = (upper | upper.T).float()
    centers = torch.randn(k, dim, generator=g) * 0.6
    feats = centers[y] + torch.randn(nodes, dim, generator=g)
    order = torch.randperm(nodes, generator=g)
    train = torch.zeros(nodes, dtype=torch.bool)
    val = torch.zeros(nodes, dtype=torch.bool)
    train[order[: int(0.3 * nodes)]] = True
    val[order[int(0.3 * nodes) : int(0.6 * nodes)]] = True
    return adj, feats, y, train, val
