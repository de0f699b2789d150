"""Synthetic data of the sixth blind split, generated from a torch.Generator (no download).

Each function returns tensors shaped like the real task it stands for: smooth 1-D signals for a denoiser, small
binary images with block patterns for an autoregressive model, a classification task labelled by a fixed "teacher"
network, a numeric table with heavy-tailed columns, a small logistic problem, Gaussian clusters bent by a nonlinear
map, a regression whose rule changes by region, a community graph with node features, token sequences whose class
depends on counts and order, and noisy images of a disc and a square with their masks. Nothing here knows which
program or bug uses it.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

Pair = tuple[torch.Tensor, torch.Tensor]


def signals(g: torch.Generator, n: int, d: int = 16) -> torch.Tensor:
    """Smooth signals float[n, d]: two sines of random frequency, phase and amplitude, and an offset."""
    t = torch.linspace(0, 1, d)
    f = 1 + 3 * torch.rand(n, 2, 1, generator=g)
    ph = 2 * math.pi * torch.rand(n, 2, 1, generator=g)
    a = 0.5 + torch.rand(n, 2, 1, generator=g)
    x = (a * torch.sin(2 * math.pi * f * t + ph)).sum(1)
    return x + 0.3 * torch.randn(n, 1, generator=g)


def block_images(g: torch.Generator, n: int, size: int = 8) -> torch.Tensor:
    """Binary images float[n, 1, size, size]: checkerboards of random block sizes and offsets, 3% pixels flipped."""
    r = torch.arange(size)
    h = torch.randint(1, 5, (n, 1, 1), generator=g)
    w = torch.randint(1, 5, (n, 1, 1), generator=g)
    oy = torch.randint(0, 4, (n, 1, 1), generator=g)
    ox = torch.randint(0, 4, (n, 1, 1), generator=g)
    img = (((r.view(1, -1, 1) + oy) // h + (r.view(1, 1, -1) + ox) // w) % 2).float()
    flip = (torch.rand(n, size, size, generator=g) < 0.03).float()
    return (img + flip - 2 * img * flip).unsqueeze(1)


def teacher_task(g: torch.Generator, n: int, classes: int = 8) -> tuple[torch.Tensor, ...]:
    """Inputs float[n, 24], the logits of a fixed trained-looking "teacher" network float[n, classes] and its
    labels (the teacher's argmax)."""
    rg = torch.Generator().manual_seed(307)
    teacher = nn.Sequential(nn.Linear(24, 96), nn.Tanh(), nn.Linear(96, classes))
    with torch.no_grad():
        for p in teacher.parameters():
            p.copy_(torch.randn(p.shape, generator=rg) * (1.5 / math.sqrt(p.shape[-1])))
        x = torch.randn(n, 24, generator=g)
        logits = 3 * teacher(x)
    return x, logits, logits.argmax(1)


def table(g: torch.Generator, n: int) -> Pair:
    """A numeric table float[n, 12] (two heavy-tailed columns, one with a large scale) and a 4-class label."""
    rg = torch.Generator().manual_seed(311)
    w = torch.randn(12, 4, generator=rg)
    z = torch.randn(n, 12, generator=g)
    y = (torch.tanh(z) @ w + 0.5 * z[:, :4] * z[:, 4:8]).argmax(1)
    x = z.clone()
    x[:, 10] = torch.sinh(z[:, 10])  # heavy-tailed
    x[:, 11] = 100 * z[:, 11]  # large units
    return x, y


def logistic(g: torch.Generator, n: int) -> Pair:
    """Quadratic features float[n, 27] of 6 inputs and binary labels float[n] from a noisy quadratic boundary."""
    rg = torch.Generator().manual_seed(313)
    a, q = torch.randn(6, generator=rg), torch.randn(6, 6, generator=rg) / 3
    z = torch.randn(n, 6, generator=g)
    logit = 2 * (z @ a + ((z @ q) * z).sum(1) - 0.3)
    y = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    iu = torch.triu_indices(6, 6)
    return torch.cat([z, (z.unsqueeze(2) * z.unsqueeze(1))[:, iu[0], iu[1]]], 1), y


def bent_clusters(g: torch.Generator, n: int, classes: int = 5) -> Pair:
    """Features float[n, 16] of `classes` Gaussian clusters passed through a fixed nonlinear map, and labels."""
    rg = torch.Generator().manual_seed(317)
    centres = 1.2 * torch.randn(classes, 16, generator=rg)
    m = torch.randn(16, 16, generator=rg) / 4
    y = torch.randint(0, classes, (n,), generator=g)
    z = centres[y] + torch.randn(n, 16, generator=g)
    return z + torch.sin(z @ m) * 1.5, y


def regions(g: torch.Generator, n: int) -> Pair:
    """Inputs float[n, 8] and a target float[n] whose rule depends on the quadrant of the first two inputs."""
    rg = torch.Generator().manual_seed(331)
    w = torch.randn(4, 8, generator=rg)
    x = torch.randn(n, 8, generator=g)
    region = (x[:, 0] > 0).long() * 2 + (x[:, 1] > 0).long()
    rules = torch.stack([x @ w[0], torch.sin(2 * x @ w[1]), (x @ w[2]) ** 2 / 4, torch.abs(x @ w[3])], 1)
    y = rules.gather(1, region[:, None])[:, 0]
    return x, y + 0.1 * torch.randn(n, generator=g)


def community_graph(g: torch.Generator, nodes: int = 200, communities: int = 8) -> tuple[torch.Tensor, ...]:
    """A stochastic block graph: node features float[nodes, 16] (a noisy community code), its undirected edges
    long[E, 2] (i < j) in random order, and random non-edges long[E, 2] for validation."""
    comm = torch.randint(0, communities, (nodes,), generator=g)
    code = torch.randn(communities, 16, generator=g)
    feats = code[comm] + 1.5 * torch.randn(nodes, 16, generator=g)
    same = comm[:, None] == comm[None, :]
    p = torch.where(same, torch.tensor(0.3), torch.tensor(0.005))
    a = torch.rand(nodes, nodes, generator=g) < p
    a = torch.triu(a, 1)
    edges = a.nonzero()
    edges = edges[torch.randperm(len(edges), generator=g)]
    non = torch.triu(~a & ~torch.eye(nodes, dtype=torch.bool), 1).nonzero()
    non = non[torch.randperm(len(non), generator=g)[: len(edges)]]
    return feats, edges, non


def token_sequences(g: torch.Generator, n: int, length: int = 12, vocab: int = 16) -> Pair:
    """Token ids long[n, length] and a 4-class label: whether token 1 occurs more often than token 2, and whether
    the first token 3 comes before the first token 4 (each sequence holds both)."""
    x = torch.randint(5, vocab, (n, length), generator=g)
    for tok in (1, 2):
        k = torch.randint(0, 4, (n,), generator=g)
        for j in range(3):
            pos = torch.randint(0, length, (n,), generator=g)
            put = j < k
            x[put, pos[put]] = tok
    p3 = torch.randint(0, length, (n,), generator=g)
    p4 = (p3 + torch.randint(1, length, (n,), generator=g)) % length
    x[torch.arange(n), p3] = 3
    x[torch.arange(n), p4] = 4
    more = ((x == 1).sum(1) > (x == 2).sum(1)).long()
    first3 = (x == 3).float().argmax(1)
    first4 = (x == 4).float().argmax(1)
    return x, more * 2 + (first3 < first4).long()


def shapes(g: torch.Generator, n: int, size: int = 12) -> Pair:
    """Noisy images float[n, 1, size, size] holding a disc (class 1) and a square (class 2), and their masks long[n,
    2 * size, 2 * size] drawn at twice the resolution (the loader brings them to the image size)."""
    big = 2 * size
    r = torch.arange(big).float()
    yy, xx = r.view(1, -1, 1), r.view(1, 1, -1)
    cy, cx = (4 + (big - 8) * torch.rand(2, n, 1, 1, generator=g)).unbind(0)
    rad = 2.5 + 3 * torch.rand(n, 1, 1, generator=g)
    sy, sx = (2 + (big - 10) * torch.rand(2, n, 1, 1, generator=g)).unbind(0)
    side = 4 + 4 * torch.rand(n, 1, 1, generator=g)
    disc = (yy - cy) ** 2 + (xx - cx) ** 2 <= rad**2
    square = (yy >= sy) & (yy < sy + side) & (xx >= sx) & (xx < sx + side)
    mask = torch.zeros(n, big, big, dtype=torch.long)
    mask[square] = 2
    mask[disc] = 1
    img = disc.float() * 1.0 + square.float() * 0.6 * (1 - disc.float())
    img = F.avg_pool2d(img.unsqueeze(1), 2)
    return img + 0.3 * torch.randn(n, 1, size, size, generator=g), mask
