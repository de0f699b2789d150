"""Synthetic data of the second blind split, generated from a torch.Generator (no download).

Each function returns tensors shaped like the real task it stands for: 2-D point clouds, a toy translation
corpus, seasonal time series with a level, spoken-digit-like frame sequences with their transcripts,
texture images, images with one object and its box, query/document pairs, click logs with multi-hot
fields, a citation-like graph, manifold data with anomalies, short texts with padding. Nothing here knows
which program or bug uses it.
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

Pair = tuple[torch.Tensor, torch.Tensor]


def ring_of_gaussians(
    g: torch.Generator, n: int, *, modes: int = 8, radius: float = 2.0, std: float = 0.15
) -> Pair:
    """Points float[n, 2] from `modes` Gaussians on a circle, and the mode centres float[modes, 2]."""
    angle = 2 * math.pi * torch.arange(modes).float() / modes
    centres = radius * torch.stack([angle.cos(), angle.sin()], 1)
    pick = torch.randint(0, modes, (n,), generator=g)
    return centres[pick] + std * torch.randn(n, 2, generator=g), centres


def moons(g: torch.Generator, n: int, *, noise: float = 0.08) -> torch.Tensor:
    """Two interleaved half circles float[n, 2], standardised."""
    t = math.pi * torch.rand(n, generator=g)
    upper = torch.rand(n, generator=g) < 0.5
    x = torch.where(upper, t.cos(), 1 - t.cos())
    y = torch.where(upper, t.sin(), 0.5 - t.sin())
    pts = torch.stack([x, y], 1) + noise * torch.randn(n, 2, generator=g)
    return (pts - torch.tensor([0.5, 0.25])) / torch.tensor([0.85, 0.5])


def translation(g: torch.Generator, n: int, *, vocab: int = 12, length: int = 7) -> Pair:
    """A toy translation corpus: source int64[n, length] over tokens 3..vocab+2 and its target int64[n, length]:
    each word mapped through a fixed dictionary, written in reverse order (0: pad, 1: BOS, 2: EOS are reserved)."""
    words = torch.randint(3, vocab + 3, (n, length), generator=g)
    dictionary = torch.arange(vocab + 3)
    dictionary[3:] = 3 + torch.randperm(vocab, generator=torch.Generator().manual_seed(5))
    return words, dictionary[words].flip(1)


def seasonal_series(
    g: torch.Generator, n: int, *, window: int = 48, horizon: int = 12, level: float = 0.0, stuck: float = 0.0
) -> Pair:
    """Windows float[n, window] of daily-and-weekly-like seasonal series with a trend and AR(1) noise, each at its
    own level (`level` plus up to 20%) and amplitude, and the next `horizon` values float[n, horizon]; a share
    `stuck` of the meters is stuck and repeats one reading."""
    total = window + horizon
    t = torch.arange(total).float()
    phase = 2 * math.pi * torch.rand(n, 2, generator=g)
    amp = 0.5 + torch.rand(n, 2, generator=g)
    trend = 0.02 * torch.randn(n, 1, generator=g)
    season = amp[:, :1] * torch.sin(2 * math.pi * t / 12 + phase[:, :1]) + amp[:, 1:] * torch.sin(
        2 * math.pi * t / 30 + phase[:, 1:]
    )
    eps = 0.15 * torch.randn(n, total, generator=g)
    noise = torch.zeros(n, total)
    for i in range(1, total):
        noise[:, i] = 0.6 * noise[:, i - 1] + eps[:, i]
    base = level * (1 + 0.2 * torch.rand(n, 1, generator=g))
    series = base + season + trend * t + noise
    frozen = torch.rand(n, 1, generator=g) < stuck
    series = torch.where(frozen, series[:, :1].expand(n, total), series)
    return series[:, :window], series[:, window:]


def utterances(
    g: torch.Generator, n: int, *, tokens: int = 6, frames: int = 34, dim: int = 12
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Spoken-word-like frame sequences float[n, frames, dim]: 2-4 tokens (ids 0..tokens-1), each a token
    signature held for 3-6 frames with drift, between short silences, under noise; the transcripts int64[n, 4]
    (padded with -1) and their lengths int64[n]."""
    sig = torch.randn(tokens, dim, generator=torch.Generator().manual_seed(17)) * 1.2
    feats = 0.4 * torch.randn(n, frames, dim, generator=g)
    lengths = torch.randint(2, 5, (n,), generator=g)
    tok = torch.randint(0, tokens, (n, 4), generator=g)
    for j in range(1, 4):  # no token repeated back to back
        tok[:, j] = torch.where(tok[:, j] == tok[:, j - 1], (tok[:, j] + 1) % tokens, tok[:, j])
    dur = torch.randint(3, 7, (n, 4), generator=g)
    gap = torch.randint(1, 3, (n, 4), generator=g)
    start = torch.randint(0, 3, (n, 1), generator=g) + torch.cumsum(dur + gap, 1) - (dur + gap)
    t = torch.arange(frames)[None]
    for j in range(4):
        rel = t - start[:, j : j + 1]
        inside = (rel >= 0) & (rel < dur[:, j : j + 1]) & (lengths[:, None] > j)
        ramp = 0.7 + 0.3 * rel / (dur[:, j : j + 1] - 1)
        feats += (inside * ramp)[..., None] * sig[tok[:, j]][:, None, :]
    labels = torch.where(torch.arange(4)[None] < lengths[:, None], tok, -1)
    return feats, labels, lengths


def textures(g: torch.Generator, n: int, *, k: int = 4, size: int = 16, noise: float = 0.8) -> Pair:
    """Grey images float[n, 1, size, size] of k oriented or checked textures at a random phase and contrast,
    under noise; labels int64[n]."""
    yy, xx = torch.meshgrid(torch.arange(size).float(), torch.arange(size).float(), indexing="ij")
    y = torch.randint(0, k, (n,), generator=g)
    phase = 2 * math.pi * torch.rand(n, 1, 1, generator=g)
    freq = 2 * math.pi / 5
    stripes = torch.stack(
        [
            torch.sin(freq * xx + phase),
            torch.sin(freq * yy + phase),
            torch.sin(freq * (xx + yy) / math.sqrt(2) + phase),
            torch.sin(freq * xx + phase) * torch.sin(freq * yy + phase) * 1.6,
        ],
        1,
    )[:, :k]
    img = stripes[torch.arange(n), y] * (0.6 + 0.8 * torch.rand(n, 1, 1, generator=g))
    return (img + noise * torch.randn(n, size, size, generator=g)).unsqueeze(1), y


def objects(g: torch.Generator, n: int, *, size: int = 20) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Images float[n, 1, size, size] with one object (0: square, 1: disc, 2: cross) on clutter; its box
    float[n, 4] (centre x, centre y, width, height, as fractions of the image) and class int64[n]."""
    yy, xx = torch.meshgrid(torch.arange(size).float(), torch.arange(size).float(), indexing="ij")
    cls = torch.randint(0, 3, (n,), generator=g)
    half = 2 + 3 * torch.rand(n, generator=g)
    cx = half + 1 + (size - 2 * half - 2) * torch.rand(n, generator=g)
    cy = half + 1 + (size - 2 * half - 2) * torch.rand(n, generator=g)
    dx = (xx[None] - cx[:, None, None]).abs()
    dy = (yy[None] - cy[:, None, None]).abs()
    h = half[:, None, None]
    square = (dx <= h) & (dy <= h)
    disc = dx**2 + dy**2 <= h**2
    cross = ((dx <= h) & (dy <= h / 3)) | ((dy <= h) & (dx <= h / 3))
    shape = torch.stack([square, disc, cross], 1)[torch.arange(n), cls].float()
    clutter = 0.3 * torch.randn(n, size, size, generator=g)
    img = shape + clutter
    box = torch.stack([cx, cy, 2 * half, 2 * half], 1) / size
    return img.unsqueeze(1), box, cls


def query_documents(
    g: torch.Generator, n: int, *, latent: int = 10, q_dim: int = 24, d_dim: int = 32
) -> Pair:
    """Matching (query float[n, q_dim], document float[n, d_dim]) pairs: two different nonlinear views of one
    latent topic vector, with view noise."""
    cg = torch.Generator().manual_seed(23)
    a, b = torch.randn(latent, q_dim, generator=cg), torch.randn(latent, d_dim, generator=cg)
    z = torch.randn(n, latent, generator=g)
    q = torch.tanh(z @ a / math.sqrt(latent)) + 0.3 * torch.randn(n, q_dim, generator=g)
    d = torch.tanh(z @ b / math.sqrt(latent)) * 2 + 0.5 * torch.randn(n, d_dim, generator=g)
    return q, d


def click_logs(
    g: torch.Generator, n: int, *, vocab: tuple[int, int] = (300, 80), bag: int = 4
) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]:
    """Ad click logs: 4 dense columns in raw units (price, age of the ad in hours, past clicks, position) float[n, 4],
    two multi-hot id fields (1-`bag` ids per row) as EmbeddingBag input, one (ids int64[m], offsets int64[n]) per
    field, and a 0/1 click float[n] (about a quarter positive)."""
    cg = torch.Generator().manual_seed(29)
    dense = torch.stack([
        torch.rand(n, generator=g) * 200,
        torch.rand(n, generator=g) * 72,
        torch.poisson(torch.full((n,), 3.0), generator=g),
        torch.randint(1, 11, (n,), generator=g).float(),
    ], 1)  # fmt: skip
    logit = dense @ torch.tensor([-0.006, -0.01, 0.15, -0.12]) + 0.4
    fields = []
    for field, v in enumerate(vocab):
        quality = torch.randn(v, generator=cg) * (1.2 if field == 0 else 0.8)
        sizes = torch.randint(1, bag + 1, (n,), generator=g)
        ids = torch.randint(0, v, (int(sizes.sum()),), generator=g)
        sums = torch.zeros(n).index_add_(0, torch.repeat_interleave(torch.arange(n), sizes), quality[ids])
        logit = logit + sums / sizes
        fields.append((ids, torch.cumsum(sizes, 0) - sizes))
    clicks = (torch.rand(n, generator=g) < torch.sigmoid(logit - 1.2)).float()
    return dense, fields, clicks


def citation_graph(
    g: torch.Generator, *, nodes: int = 240, k: int = 5, dim: int = 24
) -> tuple[torch.Tensor, ...]:
    """A citation-like graph: nodes with bag-of-words-like features (sparse, topic-dependent), a few hubs,
    edges mostly within a topic; adjacency with self loops bool[nodes, nodes], features, topics and
    train/val masks (20% / 40%)."""
    y = torch.randint(0, k, (nodes,), generator=g)
    activity = 0.5 + torch.rand(nodes, generator=g) ** 3 * 3
    same = (y[:, None] == y[None, :]).float()
    p = (0.01 + 0.05 * same) * activity[:, None] * activity[None, :] / 2
    upper = torch.triu(torch.rand(nodes, nodes, generator=g) < p, diagonal=1)
    adj = upper | upper.T | torch.eye(nodes, dtype=torch.bool)
    topic_words = torch.rand(k, dim, generator=g) < 0.25
    rate = torch.where(topic_words[y], 0.35, 0.08)
    feats = (torch.rand(nodes, dim, generator=g) < rate).float()
    feats = feats / feats.sum(1, keepdim=True).clamp(min=1)
    order = torch.randperm(nodes, generator=g)
    train = torch.zeros(nodes, dtype=torch.bool)
    val = torch.zeros(nodes, dtype=torch.bool)
    train[order[: nodes // 5]] = True
    val[order[nodes // 5 : 3 * nodes // 5]] = True
    return adj, feats, y, train, val


def manifold_with_anomalies(g: torch.Generator, n: int, *, dim: int = 16, anomalies: float = 0.0) -> Pair:
    """Sensor readings float[n, dim] that lie near a 3-D curved manifold (normal operation), a share `anomalies`
    of them off it (faults: a unit whose channels are swapped around, each reading in its usual range); returns
    (x, is_anomaly float[n])."""
    cg = torch.Generator().manual_seed(31)
    a = torch.randn(3, dim, generator=cg)
    b = torch.randn(3, dim, generator=cg)
    z = torch.randn(n, 3, generator=g)
    x = torch.tanh(z @ a) + 0.5 * torch.sin(z @ b) + 0.05 * torch.randn(n, dim, generator=g)
    bad = torch.rand(n, generator=g) < anomalies
    crosswired = x[:, torch.randperm(dim, generator=cg)]  # a faulty unit: its channels swapped around
    x = torch.where(bad[:, None], crosswired, x)
    return x, bad.float()


def reviews(
    g: torch.Generator, n: int, *, vocab: int = 60, max_len: int = 16, label_noise: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Short reviews int64[n, max_len] (0 pads the end; lengths 5..max_len) over a vocabulary whose words 1..10 lean
    positive and 11..20 negative, the rest neutral filler; the label (1: positive) follows the balance of the two,
    a word "not" (id 21) flipping the next one; `label_noise` of the labels flipped. Returns (tokens, lengths, y)."""
    lengths = torch.randint(5, max_len + 1, (n,), generator=g)
    tokens = torch.randint(22, vocab, (n, max_len), generator=g)
    sentiment = torch.randint(1, 21, (n, max_len), generator=g)
    use = torch.rand(n, max_len, generator=g) < 0.3
    tokens = torch.where(use, sentiment, tokens)
    neg = torch.rand(n, max_len, generator=g) < 0.08
    tokens = torch.where(neg, torch.full_like(tokens, 21), tokens)
    pos = torch.arange(max_len)[None] < lengths[:, None]
    tokens = torch.where(pos, tokens, torch.zeros_like(tokens))
    polarity = torch.where((tokens >= 1) & (tokens <= 10), 1.0, 0.0) - torch.where(
        (tokens >= 11) & (tokens <= 20), 1.0, 0.0
    )
    flipped = F.pad(tokens[:, :-1] == 21, (1, 0))
    score = torch.where(flipped, -polarity, polarity).sum(1) + 0.3 * torch.randn(n, generator=g)
    y = (score > 0).long()
    if label_noise:
        y = torch.where(torch.rand(n, generator=g) < label_noise, 1 - y, y)
    return tokens, lengths, y


def markov_corpus(
    g: torch.Generator, n: int, *, vocab: int = 60, length: int = 16, seed_chain: int = 41
) -> torch.Tensor:
    """Unlabelled text int64[n, length] (ids 1..vocab-1; 0 is padding) from a fixed Markov chain with a few likely
    successors per word: the pretraining corpus of a masked language model."""
    cg = torch.Generator().manual_seed(seed_chain)
    nxt = torch.randint(1, vocab, (vocab, 4), generator=cg)
    probs = torch.tensor([0.5, 0.25, 0.15, 0.1])
    out = torch.empty(n, length, dtype=torch.long)
    out[:, 0] = torch.randint(1, vocab, (n,), generator=g)
    for t in range(1, length):
        out[:, t] = nxt[out[:, t - 1], torch.multinomial(probs, n, replacement=True, generator=g)]
    return out


def two_task_rows(
    g: torch.Generator, n: int, *, dim: int = 20
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Customer rows float[n, dim] with two targets that share structure: a spend amount (regression, float[n])
    and churn (binary, float[n])."""
    cg = torch.Generator().manual_seed(37)
    w = torch.randn(dim, 4, generator=cg) / math.sqrt(dim)
    x = torch.randn(n, dim, generator=g)
    h = torch.tanh(x @ w * 2)
    spend = h @ torch.tensor([1.0, -0.8, 0.5, 0.3]) + 0.2 * torch.randn(n, generator=g)
    churn_logit = h @ torch.tensor([-1.5, 0.2, 1.2, -1.0]) * 2
    churn = (torch.rand(n, generator=g) < torch.sigmoid(churn_logit)).float()
    return x, spend, churn


def counts(g: torch.Generator, n: int, *, dim: int = 12) -> Pair:
    """Event counts: features float[n, dim] and a Poisson count float[n] whose log-rate is a smooth function of them
    (rates from about 0.1 to 30)."""
    cg = torch.Generator().manual_seed(43)
    w = torch.randn(dim, generator=cg) / math.sqrt(dim)
    x = torch.randn(n, dim, generator=g)
    log_rate = 1.0 + 0.9 * (x @ w) + 0.5 * torch.sin(2 * x[:, 0]) - 0.3 * x[:, 1] ** 2 / 2
    return x, torch.poisson(log_rate.exp(), generator=g)


def spectrograms(g: torch.Generator, n: int, *, k: int = 5, mels: int = 16, frames: int = 24) -> Pair:
    """Log-mel-like spectrograms float[n, 1, mels, frames] of k sound classes (a harmonic stack, a chirp, a click
    train, a noise band, a low hum) at a random onset and loudness over background noise; labels int64[n]."""
    y = torch.randint(0, k, (n,), generator=g)
    spec = -4 + 0.7 * torch.randn(n, mels, frames, generator=g)
    f = torch.arange(mels).float()[:, None]
    t = torch.arange(frames).float()[None]
    onset = torch.randint(0, frames // 2, (n, 1, 1), generator=g)
    loud = 2 + 2 * torch.rand(n, 1, 1, generator=g)
    rel = t[None] - onset
    on = ((rel >= 0) & (rel < frames // 2)).float()
    patterns = torch.stack([
        ((f % 4) == 1).float() * on,  # a harmonic stack
        ((f - rel * 0.8).abs() < 1.2).float() * on,  # a chirp
        ((rel % 4) == 0).float() * on * (f > 3).float(),  # a click train
        ((f > 8) & (f < 13)).float() * on * 0.8,  # a noise band
        (f < 3).float() * on,  # a low hum
    ], 1)  # fmt: skip
    spec = spec + loud * patterns[torch.arange(n), y]
    return spec.unsqueeze(1), y
