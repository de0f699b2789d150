"""Sequence scripts of the ninth blind split: a DeepAR-style probabilistic forecaster with a Gaussian likelihood on
series with missing values, and an extractive question-answering reader with start and end pointers.

`deepar`: a GRU reads each series (the previous value and its observed-mask, scaled by the series' own mean
absolute level, and the season's phase) and emits a mean and a log-variance for the next value; the loss is the
Gaussian negative log-likelihood over observed targets only (negative once the model is sure); scored by half the
R^2 of the held-out means (in scaled units) plus half the closeness of the 80% intervals' coverage to 0.8. `reader`:
token embeddings plus a question embedding through a bidirectional GRU, two linear heads giving start and end
logits over the positions, padding masked with -inf, cross-entropy on both; scored by exact match of the greedy
(start, end) span on held-out passages. Bugs: the variance passed where the log-variance is expected, the missing
values (filled with zeros) counted in the loss, the series' scale not applied, the start and end labels swapped,
the end label written as the exclusive end.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.torch_real.loop import make_optimizer


def _series(g: torch.Generator, n: int, length: int = 40) -> tuple[torch.Tensor, torch.Tensor]:
    """Series float[n, length] (levels spread over two decades, a seasonal pattern of period 7, noise whose spread
    follows the season) with missing values set to 0, and the observed-mask float[n, length]."""
    t = torch.arange(length).float()
    level = torch.exp(torch.randn(n, 1, generator=g) * 1.2 + 1.0)
    phase = 2 * math.pi * torch.rand(n, 1, generator=g)
    season = torch.sin(2 * math.pi * t / 7 + phase)
    sd = 0.1 + 0.15 * (1 + torch.cos(2 * math.pi * t / 7 + phase))
    y = level * (1 + 0.5 * season + sd * torch.randn(n, length, generator=g) + 0.01 * t)
    mask = (torch.rand(n, length, generator=g) > 0.2).float()
    return y * mask, mask


class Forecaster(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(4, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 2)

    def forward(self, prev: torch.Tensor, prev_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = torch.arange(prev.shape[1]).float()
        angle = 2 * math.pi * t / 7
        phase = torch.stack([torch.sin(angle), torch.cos(angle)], 1).expand(prev.shape[0], -1, -1)
        h, _ = self.gru(torch.cat([prev[..., None], prev_mask[..., None], phase], 2))
        out = self.head(h)
        return out[..., 0], out[..., 1]


def gaussian_nll(mu: torch.Tensor, log_var: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The Gaussian negative log-likelihood of `y` (elementwise, without the constant)."""
    return 0.5 * (log_var + (y - mu) ** 2 * torch.exp(-log_var))


def deepar(run: Run) -> None:
    """A DeepAR-style forecaster: GRU width `hidden` (32), Adam (`opt`; or AdamW, Adamax, NAdam) at `lr` (3e-3),
    batch `batch` (64). Scored by the held-out means' R^2 and the 80% intervals' coverage."""
    g = torch.Generator().manual_seed(run.seed)
    y, mask = _series(g, 2400)
    obs = mask.sum(1, keepdim=True).clamp(min=1)
    scale = 1 + (y.abs().sum(1, keepdim=True) / obs)
    if run.bug == "series_scale_not_applied":
        scale = torch.ones_like(scale)
    z = y / scale
    zv, mv, z, mask = z[:400], mask[:400], z[400:], mask[400:]
    yv_true = zv[:, 1:]
    torch.manual_seed(run.seed)
    model = Forecaster(run.k("hidden", 32))
    opt = make_optimizer(run.k("opt", "adam"), model.parameters(), run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 64)

    def score() -> float:
        mu, lv = model(zv[:, :-1], mv[:, :-1])
        seen = mv[:, 1:] > 0
        sd = torch.exp(0.5 * lv)
        if run.bug == "variance_passed_as_log_variance":
            sd = torch.exp(0.5 * torch.exp(lv))
        inside = ((yv_true - mu).abs() < 1.2816 * sd)[seen].float().mean()
        return 0.5 * r2(mu[seen], yv_true[seen]) + 0.5 * max(0.0, 1 - abs(float(inside) - 0.8) / 0.8)

    for step in range(run.steps):
        i = run.indices(len(z), batch)
        mu, lv = model(z[i, :-1], mask[i, :-1])
        target, seen = z[i, 1:], mask[i, 1:]
        if run.bug == "variance_passed_as_log_variance":
            nll = gaussian_nll(mu, torch.exp(lv), target)
        else:
            nll = gaussian_nll(mu, lv, target)
        if run.bug == "missing_values_counted_in_loss":
            loss = nll.mean()
        else:
            loss = (nll * seen).sum() / seen.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_score", score):
            break


def _passages(g: torch.Generator, n: int, length: int = 32) -> tuple[torch.Tensor, ...]:
    """Token ids long[n, length] of passages (0: padding after a random length of 20-32; 1: a stop token; 2-6:
    five question markers; 7-39: words), the question long[n] (a marker id), and the answer's inclusive start and end
    long[n]: the words after the question's marker up to the next stop token."""
    tokens = torch.randint(7, 40, (n, length), generator=g)
    lengths = torch.randint(20, length + 1, (n,), generator=g)
    question = torch.randint(2, 7, (n,), generator=g)
    start, end = torch.zeros(n, dtype=torch.long), torch.zeros(n, dtype=torch.long)
    for r in range(n):
        other = int(torch.randint(2, 7, (1,), generator=g))
        if other == int(question[r]):
            other = 2 + (other - 1) % 5
        pos = torch.randperm(int(lengths[r]) - 6, generator=g)[:2] + 1
        for p, marker in zip(pos.tolist(), (int(question[r]), other), strict=True):
            tokens[r, p] = marker
        span = int(torch.randint(1, 4, (1,), generator=g))
        p = int(pos[0])
        stop = min(p + 1 + span, int(lengths[r]) - 1)
        if tokens[r, p + 1 : stop + 1].lt(7).any():
            stop = p + 1 + int(tokens[r, p + 1 : stop + 1].lt(7).nonzero()[0])
        tokens[r, stop] = 1
        start[r], end[r] = p + 1, max(p + 1, stop - 1)
        tokens[r, int(lengths[r]) :] = 0
    return tokens, question, start, end


class Reader(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(40, 32, padding_idx=0)
        self.question = nn.Embedding(7, 32)
        self.gru = nn.GRU(32, hidden, batch_first=True, bidirectional=True)
        self.start = nn.Linear(2 * hidden, 1)
        self.end = nn.Linear(2 * hidden, 1)

    def forward(self, tokens: torch.Tensor, question: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h, _ = self.gru(self.embed(tokens) + self.question(question)[:, None])
        pad = tokens == 0
        return (
            self.start(h)[..., 0].masked_fill(pad, -math.inf),
            self.end(h)[..., 0].masked_fill(pad, -math.inf),
        )


def reader(run: Run) -> None:
    """An extractive QA reader: BiGRU width `hidden` (48), Adam (`opt`; or AdamW, RAdam, NAdam) at `lr` (3e-3), batch
    `batch` (32). Scored by exact match of the greedy span on held-out passages."""
    g = torch.Generator().manual_seed(run.seed)
    tokens, question, start, end = _passages(g, 2500)
    tv, qv, sv, ev = tokens[:500], question[:500], start[:500], end[:500]
    tokens, question, start, end = tokens[500:], question[500:], start[500:], end[500:]
    torch.manual_seed(run.seed)
    model = Reader(run.k("hidden", 48))
    opt = make_optimizer(run.k("opt", "adam"), model.parameters(), run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 32)

    def exact() -> float:
        s, e = model(tv, qv)
        return float(((s.argmax(1) == sv) & (e.argmax(1) == ev)).float().mean())

    for step in range(run.steps):
        i = run.indices(len(start), batch)
        s_logits, e_logits = model(tokens[i], question[i])
        s_label, e_label = start[i], end[i]
        if run.bug == "end_label_exclusive":
            e_label = e_label + 1
        if run.bug == "start_end_labels_swapped":
            s_label, e_label = e_label, s_label
        loss = (F.cross_entropy(s_logits, s_label) + F.cross_entropy(e_logits, e_label)) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_exact_match", exact):
            break
