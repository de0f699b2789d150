"""Sequence scripts of the fifth blind split: a Transformer-XL-style language model with segment-level recurrence,
a gated linear unit (GLU) convolutional text classifier under a cyclic learning rate, a Conformer-style keyword
spotter (convolution-augmented attention) trained with a hand-written Adafactor and warm restarts.

`segment_lm`: streams are read 8 tokens a step; each segment attends causally to itself and to a memory of the
previous 16 tokens' hidden states (kept without gradient); scored by next-token accuracy on held-out streams read
the same way. `glu_text`: embeddings, two GLU convolutions, max-pooling over time; scored by accuracy.
`conformer`: a feed-forward / self-attention / depthwise-convolution block over spectrogram frames, mean-pooled;
scored by keyword accuracy. Bugs: the memory never carried to the next segment, the cyclic rate's base and max
swapped, the loss clamped where the gradients were meant to be clipped, the warm restarts' period given in epochs
and stepped per batch.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind5 import data

SEG, MEM = 8, 16


class SegmentLM(nn.Module):
    def __init__(self, vocab: int = 16, d: int = 48, layers: int = 2) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(MEM + SEG, d))
        self.attn = nn.ModuleList(nn.MultiheadAttention(d, 4, batch_first=True) for _ in range(layers))
        self.ff = nn.ModuleList(nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
                                for _ in range(layers))  # fmt: skip
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.out = nn.Linear(d, vocab)
        causal = torch.triu(torch.ones(SEG, MEM + SEG, dtype=torch.bool), MEM + 1)
        self.register_buffer("causal", causal)

    def forward(
        self, tokens: torch.Tensor, mems: list[torch.Tensor]
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        h = self.emb(tokens)
        new = []
        for k, (attn, ff, norm) in enumerate(zip(self.attn, self.ff, self.norms)):
            ctx = torch.cat([mems[k], h], 1)
            new.append(ctx[:, -MEM:].detach())
            q, kv = norm(h) + self.pos[MEM:], norm(ctx) + self.pos
            h = h + attn(q, kv, kv, attn_mask=self.causal, need_weights=False)[0]
            h = h + ff(h)
        return self.out(h), new


def segment_lm(run: Run) -> None:
    """A Transformer-XL-style LM over token streams whose tokens repeat 12 positions back: 8-token segments, a
    16-token memory of each layer's inputs; Adam (lr `lr`, 3e-3) with CosineAnnealingWarmRestarts (T_0 100,
    T_mult 2), `rows` (32) streams. Scored by next-token accuracy on 64 held-out streams of 96 tokens."""
    g = torch.Generator().manual_seed(run.seed)
    rows = run.k("rows", 32)
    stream = data.repeat_stream(g, rows, SEG * run.steps + 1)
    val = data.repeat_stream(g, 64, 97)
    torch.manual_seed(run.seed)
    model = SegmentLM()
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 3e-3))
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=100, T_mult=2)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def zero(n: int) -> list[torch.Tensor]:
        return [torch.zeros(n, MEM, 48) for _ in model.attn]

    def val_accuracy() -> float:
        mems, right = zero(64), 0.0
        for s in range(0, 96, SEG):
            logits, mems = model(val[:, s : s + SEG], mems)
            right += accuracy(logits, val[:, s + 1 : s + SEG + 1]) / 12
        return right

    mems = zero(rows)
    for step in range(run.steps):
        s = step * SEG
        logits, new = model(stream[:, s : s + SEG], mems)
        mems = zero(rows) if run.bug == "memory_never_carried" else new
        loss = F.cross_entropy(logits.reshape(-1, 16), stream[:, s + 1 : s + SEG + 1].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", val_accuracy):
            break


class GLUText(nn.Module):
    def __init__(self, vocab: int = 200, d: int = 32, classes: int = 4) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.conv1 = nn.Conv1d(d, 2 * d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, 2 * d, 3, padding=1)
        self.out = nn.Linear(d, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.emb(x).transpose(1, 2)
        h = F.glu(self.conv1(h), dim=1)
        h = h + F.glu(self.conv2(h), dim=1)
        return self.out(h.amax(2))


def glu_text(run: Run) -> None:
    """A GLU convolutional text classifier (key bigrams among filler and decoys); SGD (momentum 0.9) under CyclicLR
    (base `base_lr` 1e-3, max `max_lr` 0.1, 50 steps up, triangular2), gradient clipping by global norm 1.0, batch
    `batch` (64). Scored by accuracy on 500 held-out texts."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.key_phrase_texts(g, 3500)
    xv, yv, x, y = x[:500], y[:500], x[500:], y[500:]
    torch.manual_seed(run.seed)
    model = GLUText()
    base, peak = run.k("base_lr", 1e-3), run.k("max_lr", 0.1)
    if run.bug == "cyclic_base_and_max_swapped":
        base, peak = peak, base
    opt = torch.optim.SGD(model.parameters(), lr=base, momentum=0.9)
    sched = torch.optim.lr_scheduler.CyclicLR(
        opt, base_lr=base, max_lr=peak, step_size_up=50, mode="triangular2"
    )
    batch = run.k("batch", 64)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[i]), y[i])
        if run.bug == "loss_clamped_instead_of_gradients":
            loss = loss.clamp(max=1.0)  # "clip at 1.0"
        opt.zero_grad()
        loss.backward()
        if run.bug != "loss_clamped_instead_of_gradients":
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", lambda: accuracy(model(xv), yv)):
            break


class Adafactor(torch.optim.Optimizer):
    """Adafactor (Shazeer and Stern 2018) as often hand-written: factored second moments for matrices, update
    clipping at RMS 1, a step size relative to the parameter's RMS (at least 1e-3), no first moment."""

    def __init__(self, params: Iterable[nn.Parameter], lr: float = 1e-2, decay: float = -0.8) -> None:
        super().__init__(params, {"lr": lr, "decay": decay})

    @torch.no_grad()
    def step(self, closure: None = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                st["t"] = t = st.get("t", 0) + 1
                beta = 1 - t ** group["decay"]
                g2 = p.grad.flatten(1) ** 2 + 1e-30 if p.dim() > 1 else p.grad**2 + 1e-30
                if p.dim() > 1:
                    r = (
                        st.setdefault("row", torch.zeros(g2.shape[0]))
                        .mul_(beta)
                        .add_(g2.mean(1), alpha=1 - beta)
                    )
                    c = (
                        st.setdefault("col", torch.zeros(g2.shape[1]))
                        .mul_(beta)
                        .add_(g2.mean(0), alpha=1 - beta)
                    )
                    v = (r[:, None] * c[None, :] / r.mean()).view_as(p)
                else:
                    v = st.setdefault("v", torch.zeros_like(p)).mul_(beta).add_(g2, alpha=1 - beta)
                u = p.grad / v.sqrt()
                u.div_(max(1.0, float(u.pow(2).mean().sqrt())))
                rms = max(1e-3, float(p.pow(2).mean().sqrt()))
                p.add_(u, alpha=-group["lr"] * rms)


class ConformerBlock(nn.Module):
    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.ff1 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
        self.norm = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.conv_norm = nn.LayerNorm(d)
        self.pw = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, 5, padding=2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)
        self.ff2 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
        self.out_norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 0.5 * self.ff1(x)
        h = self.norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        c = F.glu(self.pw(self.conv_norm(x).transpose(1, 2)), dim=1)
        x = x + self.pw2(F.silu(self.bn(self.dw(c)))).transpose(1, 2)
        return self.out_norm(x + 0.5 * self.ff2(x))


def conformer(run: Run) -> None:
    """A Conformer-style keyword spotter on 24x16 spectrograms (a linear subsampling-free input projection, one
    conformer block, mean pooling); a hand-written Adafactor (lr `lr`, 1e-2) or Adam, CosineAnnealingWarmRestarts
    with T_0 one epoch (50 batches of 32) and T_mult 2, stepped per batch. Scored by accuracy on 400 held-out
    utterances."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.spectrograms(g, 2000)
    xv, yv, x, y = x[:400], y[:400], x[400:], y[400:]
    torch.manual_seed(run.seed)
    model = nn.Sequential(nn.Linear(16, 32), ConformerBlock())
    head = nn.Linear(32, 8)
    params = list(model.parameters()) + list(head.parameters())
    if run.k("opt", "adafactor") == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(params, lr=run.k("lr", 2e-3))
    else:
        opt = Adafactor(params, lr=run.k("lr", 1e-2))
    epoch = len(y) // 32
    # the bug: T_0 written as 1 ("one epoch") while the scheduler is stepped every batch
    t0 = 1 if run.bug == "restart_period_in_epochs" else epoch
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=t0, T_mult=2)
    net = nn.ModuleDict({"body": model, "head": head})
    run.hook.register_module(net)
    run.hook.register_optimizer(opt)

    def logits(inp: torch.Tensor) -> torch.Tensor:
        return head(model(inp).mean(1))

    for step in range(run.steps):
        i = run.indices(len(y), 32)
        loss = F.cross_entropy(logits(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, net, "val_accuracy", lambda: accuracy(logits(xv), yv)):
            break
