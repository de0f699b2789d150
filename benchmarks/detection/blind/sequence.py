"""Sequence scripts of the blind split: a speech-like 1-D conv + GRU keyword classifier, a small transformer
language model with tied embeddings, and an IRNN (ReLU RNN, identity recurrent init) language model.

Bugs: a GRU built without `batch_first` fed [batch, time, feature] tensors, the keyword model's learning
rate 100 times too high, the IRNN trained without its gradient clipping.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind import data
from benchmarks.detection.blind.harness import Run, accuracy


class KeywordNet(nn.Module):
    def __init__(self, *, batch_first: bool = True, k: int = 5) -> None:
        super().__init__()
        self.frontend = nn.Sequential(
            nn.Conv1d(1, 16, 5, stride=2), nn.ReLU(), nn.Conv1d(16, 32, 5, stride=2), nn.ReLU()
        )
        self.gru = nn.GRU(32, 48, batch_first=batch_first)
        self.fc = nn.Linear(48, k)

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        feats = self.frontend(wave.transpose(1, 2)).transpose(1, 2)  # [batch, frames, channels]
        out, _ = self.gru(feats)
        return self.fc(out[:, -1])


def keyword_spotting(run: Run) -> None:
    """Classify 5 keyword-like chirps with conv features and a GRU; Adam, an epoch-wise exponential decay,
    gradient clipping at 5."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.waveforms(g, 3400)
    x, y, xv, yv = x[400:], y[400:], x[:400], y[:400]
    torch.manual_seed(run.seed)
    model = KeywordNet(batch_first=run.bug != "gru_not_batch_first")
    lr = run.k("lr", 3e-3) * (100 if run.bug == "lr_x100" else 1)  # the bug: 0.3 typed for 3e-3
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.8)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    bs = run.k("batch", 32)
    epoch = len(x) // bs

    def score() -> float:
        return accuracy(model(xv), yv)

    for step in range(run.steps):
        i = run.indices(len(x), bs)
        loss = F.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        if (step + 1) % epoch == 0:
            sched.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            model.eval()
            with torch.no_grad():
                run.hook.record_scalar("val_loss", F.cross_entropy(model(xv), yv), mode="eval")
            model.train()
        if not run.end_step(step, loss.detach(), model, score):
            break


class TinyGPT(nn.Module):
    def __init__(self, vocab: int = 40, d: int = 48, seq: int = 24) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.1, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.tok.weight  # tied input and output embeddings
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        h = self.blocks(self.tok(idx) + self.pos[:t], mask=self.mask[:t, :t], is_causal=True)
        return self.lm_head(self.norm(h))


def language_model(run: Run) -> None:
    """A 2-layer causal transformer LM with tied embeddings on Markov-chain text; AdamW, linear warmup then
    linear decay, clipping at 1. Scored by next-token accuracy (the chain caps it near 0.6)."""
    g = torch.Generator().manual_seed(run.seed)
    val = data.markov_text(torch.Generator().manual_seed(run.seed + 1), 256)
    torch.manual_seed(run.seed)
    model = TinyGPT()
    lr = run.k("lr", 1e-3)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warm = 30
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.05, (run.steps - s) / (run.steps - warm)))
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def score() -> float:
        return accuracy(model(val[:, :-1]), val[:, 1:])

    corpus = data.markov_text(g, 4000)
    for step in range(run.steps):
        seqs = corpus[run.indices(len(corpus), 32)]
        logits = model(seqs[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), seqs[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            model.eval()
            with torch.no_grad():
                vl = model(val[:, :-1])
                vloss = F.cross_entropy(vl.reshape(-1, vl.shape[-1]), val[:, 1:].reshape(-1))
            run.hook.record_scalar("val_loss", vloss, mode="eval")
            run.hook.record_scalar("val_ppl", math.exp(min(float(vloss), 50.0)), mode="eval")
            model.train()
        if not run.end_step(step, loss.detach(), model, score):
            break


class IRNNLanguageModel(nn.Module):
    """A ReLU RNN with identity-initialised recurrent weights (an IRNN) over token embeddings."""

    def __init__(self, vocab: int = 40) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, 32)
        self.rnn = nn.RNN(32, 64, nonlinearity="relu", batch_first=True)
        self.out = nn.Linear(64, vocab)
        nn.init.eye_(self.rnn.weight_hh_l0)
        nn.init.zeros_(self.rnn.bias_hh_l0)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        h, _ = self.rnn(self.emb(idx))
        return self.out(h)


def irnn_lm(run: Run) -> None:
    """An IRNN language model on 48-token Markov-chain text; SGD with momentum, gradient norm clipped at 1.
    Scored by next-token accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    val = data.markov_text(torch.Generator().manual_seed(run.seed + 1), 256, seq=48)
    torch.manual_seed(run.seed)
    model = IRNNLanguageModel()
    opt = torch.optim.SGD(model.parameters(), lr=run.k("lr", 0.05), momentum=0.9)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def score() -> float:
        return accuracy(model(val[:, :-1]), val[:, 1:])

    corpus = data.markov_text(g, 3000, seq=48)
    for step in range(run.steps):
        seqs = corpus[run.indices(len(corpus), 32)]
        logits = model(seqs[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), seqs[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        if run.bug != "rnn_clipping_removed":
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                vl = model(val[:, :-1])
                run.hook.record_scalar(
                    "val_loss",
                    F.cross_entropy(vl.reshape(-1, vl.shape[-1]), val[:, 1:].reshape(-1)),
                    mode="eval",
                )
        if not run.end_step(step, loss.detach(), model, score):
            break
