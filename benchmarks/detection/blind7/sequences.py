"""Sequence scripts of the seventh blind split: a diagonal linear-recurrence (state-space) model with a learned
decay per state, and a small causal transformer language model with rotary position embeddings.

`ssm`: 4-channel input sequences of 48 steps drive 16 states h_t = a * h_{t-1} + B u_t, the decays a =
exp(-exp(log_rate)) kept in (0, 1); an MLP reads the last state and regresses a long-memory target (MSE); scored by
R^2 on held-out sequences. `rotary_lm`: a two-layer pre-norm transformer (d 64, 4 heads, rotary embeddings on the
queries and keys, causal mask) on token streams of a second-order Markov source, next-token cross-entropy; AdamW
with linear warm-up then cosine decay and gradient-norm clipping at 1; scored by the accuracy of the next token
after held-out prefixes (the prefix alone is fed). Bugs: the decay written exp(+exp(log_rate)), the state detached
at every step, the causal mask inverted, the attention logits multiplied by sqrt(d) instead of divided, the attention
softmax taken over the queries instead of the keys.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind7 import data
from benchmarks.detection.torch_real.loop import make_optimizer


class DiagonalSSM(nn.Module):
    def __init__(self, bug: str | None, states: int = 16) -> None:
        super().__init__()
        self.log_rate = nn.Parameter(torch.log(-torch.log(torch.linspace(0.2, 0.8, states))))
        self.b = nn.Linear(4, states, bias=False)
        self.readout = nn.Sequential(nn.Linear(states, 64), nn.Tanh(), nn.Linear(64, 1))
        self.bug = bug

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        if self.bug == "decay_exponent_sign_flipped":
            a = torch.exp(torch.exp(self.log_rate))
        else:
            a = torch.exp(-torch.exp(self.log_rate))
        drive = self.b(u)
        h = torch.zeros(len(u), drive.shape[-1])
        for t in range(u.shape[1]):
            if self.bug == "state_detached_every_step":
                h = h.detach()
            h = a * h + drive[:, t]
        return self.readout(h)[:, 0]


def ssm(run: Run) -> None:
    """A diagonal linear recurrence (16 states) on 48-step sequences: Adam (lr `lr`, 3e-3), AdamW or Adamax
    (`opt`), batch `batch` (64). Scored by R^2 on 800 held-out sequences."""
    g = torch.Generator().manual_seed(run.seed)
    u, y = data.memory_sequences(g, 4800)
    uv, yv, u, y = u[:800], y[:800], u[800:], y[800:]
    torch.manual_seed(run.seed)
    model = DiagonalSSM(run.bug)
    name = run.k("opt", "adam")
    opt = make_optimizer(
        name, model.parameters(), run.k("lr", 3e-3), weight_decay=0.01 if name == "adamw" else 0.0
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 64)
    for step in range(run.steps):
        i = run.indices(len(y), batch)
        loss = F.mse_loss(model(u[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(model(uv), yv)):
            break


def rotate(x: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of x float[batch, heads, length, dim] by position (half-split pairs)."""
    length, dim = x.shape[-2], x.shape[-1]
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
    ang = torch.arange(length).float()[:, None] * inv[None, :]
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., : dim // 2], x[..., dim // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


class Block(nn.Module):
    def __init__(self, bug: str | None, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads, self.bug = heads, bug
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        b, length, d = h.shape
        q, k, v = self.qkv(self.n1(h)).view(b, length, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k = rotate(q), rotate(k)
        scores = q @ k.transpose(-1, -2)
        if self.bug == "attention_scaled_by_sqrt_d":
            scores = scores * math.sqrt(d // self.heads)
        else:
            scores = scores / math.sqrt(d // self.heads)
        if self.bug == "causal_mask_inverted":
            blocked = torch.tril(torch.ones(length, length, dtype=torch.bool), diagonal=-1)
        else:
            blocked = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
        dim = -2 if self.bug == "attention_softmax_over_queries" else -1
        att = scores.masked_fill(blocked, float("-inf")).softmax(dim)
        h = h + self.proj((att @ v).transpose(1, 2).reshape(b, length, d))
        return h + self.mlp(self.n2(h))


class RotaryLM(nn.Module):
    def __init__(self, bug: str | None) -> None:
        super().__init__()
        self.emb = nn.Embedding(16, 64)
        self.blocks = nn.ModuleList([Block(bug) for _ in range(2)])
        self.norm, self.head = nn.LayerNorm(64), nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.emb(x)
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))


def rotary_lm(run: Run) -> None:
    """A rotary-embedding causal LM on 24-token Markov streams: AdamW (lr `lr`, 3e-3, weight decay 0.1 off the
    norms and biases) with `warmup` (30) steps of linear warm-up then cosine decay, clipping at 1; batch `batch`
    (32). Scored by next-token accuracy after 600 held-out prefixes of 6, 12 or 20 tokens."""
    g = torch.Generator().manual_seed(run.seed)
    x = data.markov_tokens(g, 4600)
    xv, x = x[:600], x[600:]
    cut = torch.tensor([6, 12, 20])[torch.randint(0, 3, (600,), generator=g)]
    torch.manual_seed(run.seed)
    model = RotaryLM(run.bug)
    decay = [p for p in model.parameters() if p.dim() > 1]
    rest = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=run.k("lr", 3e-3))  # fmt: skip
    warmup = run.k("warmup", 30)

    def factor(s: int) -> float:
        if s < warmup:
            return (s + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (s - warmup) / max(1, run.steps - warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def score() -> float:
        hits = 0.0
        for c in (6, 12, 20):
            rows = cut == c
            hits += accuracy(model(xv[rows, :c])[:, -1], xv[rows, c]) * int(rows.sum())
        return hits / len(xv)

    batch = run.k("batch", 32)
    for step in range(run.steps):
        xb = x[run.indices(len(x), batch)]
        logits = model(xb[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 16), xb[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_next_token_acc", score):
            break
