"""Sequence scripts of the tenth blind split: SASRec-style sequential recommendation with causal self-attention,
and a neural temporal point process with a softplus intensity.

`sasrec`: users walk a catalogue of 60 items in strides of their own (1-4 items a click, with a few random
clicks); each user's last 12 clicks train a next-item predictor: item and position embeddings, one or two
pre-norm transformer layers under a causal mask, and scores by the dot product with the item embeddings (tied),
cross-entropy at every position; scored by the hit rate at 5 of held-out users' next click after each prefix of
their sessions (from the third click on). `tpp`: event
sequences from a self-exciting (Hawkes) process with an exponential kernel; a GRU reads the gaps between events
and the intensity after each event is softplus(a + b * elapsed time) from its state; the negative log-likelihood
per event is the log-intensities at the events minus the integral of the intensity (by the trapezoid rule on 8
points per gap); scored by the held-out log-likelihood's gain over a constant-rate process, as a share of the
true process's gain. Bugs: the causal mask left out, the targets not shifted (each position trained to predict
its own item), the intensity written without its softplus (negative values under the log), the integral term
left out of the likelihood, the log of the previous gap taken without its epsilon (the first event's previous gap
is the padding zero).
"""

from __future__ import annotations

import math
import random

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.torch_real.loop import make_optimizer

ITEMS, CLICKS = 60, 12


def _walks(g: torch.Generator, n: int) -> torch.Tensor:
    """Click sequences long[n, CLICKS + 1] of item ids 1..ITEMS (0 is padding, unused here): the first CLICKS are
    the input, each next one the target."""
    start = torch.randint(0, ITEMS, (n, 1), generator=g)
    stride = torch.randint(1, 5, (n, 1), generator=g)
    seq = (start + stride * torch.arange(CLICKS + 1)) % ITEMS
    noise = torch.rand(n, CLICKS + 1, generator=g) < 0.1
    seq = torch.where(noise, torch.randint(0, ITEMS, (n, CLICKS + 1), generator=g), seq)
    return seq + 1


class SASRec(nn.Module):
    """Item and learned position embeddings, `layers` pre-norm transformer layers, tied output scores."""

    def __init__(self, dim: int, layers: int) -> None:
        super().__init__()
        self.items = nn.Embedding(ITEMS + 1, dim, padding_idx=0)
        self.positions = nn.Embedding(CLICKS, dim)
        layer = nn.TransformerEncoderLayer(dim, 2, 2 * dim, dropout=0.1, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        nn.init.normal_(self.items.weight, std=0.1)
        nn.init.normal_(self.positions.weight, std=0.1)

    def forward(self, seq: torch.Tensor, causal: bool = True) -> torch.Tensor:
        h = self.items(seq) + self.positions(torch.arange(seq.shape[1]))
        mask = nn.Transformer.generate_square_subsequent_mask(seq.shape[1]) if causal else None
        h = self.norm(self.encoder(h, mask=mask, is_causal=causal))
        return h @ self.items.weight.T


def sasrec(run: Run) -> None:
    """SASRec-style next-item prediction: dimension `dim` (32), `layers` (2) layers, Adam (`opt`; or AdamW, NAdam,
    Adamax) at `lr` (2e-3), batch `batch` (64). Scored by HR@5 of held-out users' next click after each prefix."""
    g = torch.Generator().manual_seed(run.seed)
    seqs = _walks(g, 3400)
    val, seqs = seqs[:400], seqs[400:]
    torch.manual_seed(run.seed)
    model = SASRec(run.k("dim", 32), run.k("layers", 2))
    name = run.k("opt", "adam")
    opt = make_optimizer(
        name, model.parameters(), run.k("lr", 2e-3), weight_decay=0.01 if name == "adamw" else 0.0
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    causal = run.bug != "causal_mask_missing"
    batch = run.k("batch", 64)

    def hit_rate() -> float:
        # served from each prefix of the session (from the third click on): a prefix never holds later clicks
        scores = model(val[:, :-1], causal=True)[:, 2:]
        scores[..., 0] = -math.inf
        return float((scores.topk(5, -1).indices == val[:, 3:, None]).any(-1).float().mean())

    for step in range(run.steps):
        s = seqs[run.indices(len(seqs), batch)]
        inputs = s[:, :-1]
        targets = inputs if run.bug == "targets_not_shifted" else s[:, 1:]
        logits = model(inputs, causal=causal)
        loss = F.cross_entropy(logits.reshape(-1, ITEMS + 1), targets.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_hr5", hit_rate):
            break


MU, ALPHA, BETA, EVENTS = 0.5, 0.6, 2.0, 24
"""The Hawkes process: base rate, branching ratio, kernel decay; events per sequence."""


def _hawkes(seed: int, n: int) -> torch.Tensor:
    """Gaps float[n, EVENTS] between the events of `n` sequences (the first from time 0), by Ogata's thinning."""
    rnd = random.Random(seed)
    gaps = []
    for _ in range(n):
        t, last, excite, row = 0.0, 0.0, 0.0, []  # excite: the kernel's sum at time t
        while len(row) < EVENTS:
            bound = MU + excite
            wait = rnd.expovariate(bound)
            t += wait
            excite *= math.exp(-BETA * wait)
            if rnd.random() * bound <= MU + excite:
                row.append(t - last)
                last = t
                excite += ALPHA * BETA
        gaps.append(row)
    return torch.tensor(gaps)


def _true_loglik(gaps: torch.Tensor) -> float:
    """The Hawkes process's own log-likelihood per event of `gaps`."""
    total, excite = torch.zeros(len(gaps)), torch.zeros(len(gaps))
    for i in range(gaps.shape[1]):
        g = gaps[:, i]
        decayed = excite * torch.exp(-BETA * g)
        total += torch.log(MU + decayed) - MU * g - excite * (1 - torch.exp(-BETA * g)) / BETA
        excite = decayed + ALPHA * BETA
    return float(total.mean()) / gaps.shape[1]


class IntensityGRU(nn.Module):
    """A GRU over (gap, log gap) pairs; after each event the intensity softplus(a + b * elapsed) from its state."""

    def __init__(self, hidden: int, softplus: bool = True, eps: float = 1e-3) -> None:
        super().__init__()
        self.eps = eps
        self.gru = nn.GRU(2, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 2)
        self.softplus = softplus

    def intensity(self, gaps: torch.Tensor, elapsed: torch.Tensor) -> torch.Tensor:
        """The intensity float[n, events, points] at `elapsed` float[n, events, points] after each event's
        predecessor (the first event's: time 0), given the gaps float[n, events]."""
        prev = F.pad(gaps[:, :-1], (1, 0))
        h, _ = self.gru(torch.stack([prev, torch.log(prev + self.eps)], -1))
        a, b = self.head(h).unbind(-1)
        raw = a[..., None] + b[..., None] * elapsed
        return F.softplus(raw) if self.softplus else raw

    def log_likelihood(self, gaps: torch.Tensor, *, integral: bool = True) -> torch.Tensor:
        """Log-likelihood per event float[n, events]: the log-intensity at each event minus the intensity's
        integral over its gap (trapezoid rule, 8 points)."""
        points = gaps[..., None] * torch.linspace(0, 1, 8)
        lam = self.intensity(gaps, points)
        area = ((lam[..., 1:] + lam[..., :-1]) / 2).sum(-1) * gaps / 7
        return torch.log(lam[..., -1]) - (area if integral else 0.0)


def tpp(run: Run) -> None:
    """A neural temporal point process: a GRU of `hidden` (32) units, Adam (`opt`; or RAdam, AdamW, Adamax) at `lr`
    (3e-3), batch `batch` (32) sequences of 24 events. Scored by the held-out log-likelihood's gain over a
    constant rate as a share of the true process's gain (clipped to [0, 1])."""
    gaps = _hawkes(run.seed, 1400)
    val, gaps = gaps[:400], gaps[400:]
    rate = gaps.numel() / float(gaps.sum())
    poisson = math.log(rate) - rate * float(val.mean())
    best = _true_loglik(val)
    torch.manual_seed(run.seed)
    eps = 0.0 if run.bug == "log_gap_without_epsilon" else 1e-3
    model = IntensityGRU(run.k("hidden", 32), softplus=run.bug != "intensity_without_softplus", eps=eps)
    name = run.k("opt", "adam")
    opt = make_optimizer(
        name, model.parameters(), run.k("lr", 3e-3), weight_decay=1e-3 if name == "adamw" else 0.0
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 32)

    def gain() -> float:
        ll = float(model.log_likelihood(val).mean())
        return min(1.0, max(0.0, (ll - poisson) / (best - poisson))) if math.isfinite(ll) else 0.0

    for step in range(run.steps):
        ll = model.log_likelihood(
            gaps[run.indices(len(gaps), batch)], integral=run.bug != "integral_term_dropped"
        )
        loss = -ll.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_gain", gain):
            break
