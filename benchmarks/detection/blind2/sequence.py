"""Sequence scripts of the second blind split: a GRU encoder-decoder translator, two forecasters, a CTC
recogniser, a fine-tuned masked-LM encoder and a bag-of-embeddings text classifier with early stopping.

`translator`: seq2seq GRUs with teacher forcing, Adam and clipping; scored by greedy-decoding token accuracy.
`lstm_forecaster`: an LSTM reading a window and predicting the next 12 values, MAE, SGD with Nesterov momentum
and clipping. `tcn_forecaster`: dilated causal convolutions with reversible instance normalisation on load
series at a high level, MAE, AdamW with a cosine schedule. `ctc`: a bidirectional GRU over frames with the CTC
loss (blank 0), scored by exact transcripts. `finetune_mlm`: a small transformer encoder pretrained as a
masked LM (before the hook sees it), fine-tuned for sentiment with layer-wise learning-rate decay, warmup
and linear decay. `text_early_stopping`: EmbeddingBag + MLP on a small noisy review set, early stopping on
the validation loss with the best weights restored. Bugs: the decoder fed the target itself, clipping at
1e-6, a hand-written variance that goes negative, transcripts not shifted past the blank, the padding mask
inverted, a validation set drawn from the training rows.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, in_eval, r2
from benchmarks.detection.blind2 import data

PAD, BOS, EOS = 0, 1, 2


class Translator(nn.Module):
    def __init__(self, vocab: int = 15, emb: int = 32, hidden: int = 96) -> None:
        super().__init__()
        self.src_emb, self.tgt_emb = nn.Embedding(vocab, emb), nn.Embedding(vocab, emb)
        self.encoder = nn.GRU(emb, hidden, batch_first=True)
        self.decoder = nn.GRU(emb, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        _, h = self.encoder(self.src_emb(src))
        dec, _ = self.decoder(self.tgt_emb(tgt_in), h)
        return self.out(dec)

    def greedy(self, src: torch.Tensor, length: int) -> torch.Tensor:
        _, h = self.encoder(self.src_emb(src))
        tok = torch.full((len(src), 1), BOS, dtype=torch.long)
        out = []
        for _ in range(length):
            dec, h = self.decoder(self.tgt_emb(tok), h)
            tok = self.out(dec).argmax(-1)
            out.append(tok)
        return torch.cat(out, 1)


def translator(run: Run) -> None:
    """A GRU encoder-decoder trained with teacher forcing on a toy dictionary-and-reorder translation task; Adam,
    gradient clipping at 1, batch 64. Scored by greedy-decoding token accuracy on held-out sentences."""
    g = torch.Generator().manual_seed(run.seed)
    src, tgt = data.translation(g, 6000, length=run.k("length", 6))
    srcv, tgtv = src[:300], tgt[:300]
    src, tgt = src[300:], tgt[300:]
    torch.manual_seed(run.seed)
    model = Translator()
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    bos = torch.full((64, 1), BOS, dtype=torch.long)
    eos = torch.full((64, 1), EOS, dtype=torch.long)

    def score() -> float:
        return float((model.greedy(srcv, tgtv.shape[1]) == tgtv).float().mean())

    for step in range(run.steps):
        i = run.indices(len(src), 64)
        tgt_out = torch.cat([tgt[i], eos], 1)
        if run.bug == "decoder_input_is_target":
            tgt_in = tgt_out  # the shift right forgotten: each position reads the token it must predict
        else:
            tgt_in = torch.cat([bos, tgt[i]], 1)
        logits = model(src[i], tgt_in)
        loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten())
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_token_acc", score(), mode="eval")
        if not run.end_step(step, loss.detach(), model, score):
            break


class LSTMForecaster(nn.Module):
    def __init__(self, hidden: int = 48, horizon: int = 12) -> None:
        super().__init__()
        self.lstm = nn.LSTM(1, hidden, batch_first=True)
        self.head = nn.Linear(hidden, horizon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x.unsqueeze(-1))
        return self.head(out[:, -1])


def lstm_forecaster(run: Run) -> None:
    """A one-layer LSTM forecasting 12 steps ahead from 48, MAE loss, SGD with Nesterov momentum and gradient
    clipping at 1 (the RNN recipe), batch 32. Scored by R^2 of the forecasts."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.seasonal_series(g, 5000)
    xv, yv = x[:400], y[:400]
    x, y = x[400:], y[400:]
    torch.manual_seed(run.seed)
    model = LSTMForecaster()
    opt = torch.optim.SGD(model.parameters(), lr=run.k("lr", 0.1), momentum=0.9, nesterov=True)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    max_norm = 1e-6 if run.bug == "clip_norm_typo" else 1.0  # the typo: 1e-6 for 1e0
    for step in range(run.steps):
        i = run.indices(len(x), 32)
        loss = F.l1_loss(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        opt.step()
        run.hook.record_scalar("mae", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_mae", F.l1_loss(model(xv), yv), mode="eval")
        if not run.end_step(step, loss.detach(), model, lambda: r2(model(xv).flatten(), yv.flatten())):
            break


class TCN(nn.Module):
    """Dilated causal 1-D convolutions with residuals; reversible instance normalisation around them (each window
    standardised by its own mean and spread, the forecast mapped back)."""

    def __init__(self, channels: int = 32, horizon: int = 12, *, naive_variance: bool = False) -> None:
        super().__init__()
        self.naive_variance = naive_variance
        self.inp = nn.Conv1d(1, channels, 1)
        self.convs = nn.ModuleList(nn.Conv1d(channels, channels, 3, dilation=d) for d in (1, 2, 4, 8))
        self.act = nn.GELU()
        self.head = nn.Linear(channels, horizon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(1, keepdim=True)
        if self.naive_variance:  # E[x^2] - E[x]^2, and the epsilon outside the root
            var = (x**2).mean(1, keepdim=True) - mean**2
            std = var.sqrt() + 1e-5
        else:
            std = (x.var(1, unbiased=False, keepdim=True) + 1e-5).sqrt()
        h = self.inp(((x - mean) / std).unsqueeze(1))
        for conv in self.convs:
            h = h + self.act(conv(F.pad(h, (2 * conv.dilation[0], 0))))
        return self.head(h[:, :, -1]) * std + mean


def tcn_forecaster(run: Run) -> None:
    """A temporal conv net forecasting building loads (levels near 500 kW, some meters stuck), MAE in kW, AdamW
    with a cosine schedule, batch 64. Scored by R^2 of the forecast's deviation from the window's mean."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.seasonal_series(g, 6000, level=500.0, stuck=0.01)
    xv, yv = x[:400], y[:400]
    x, y = x[400:], y[400:]
    torch.manual_seed(run.seed)
    model = TCN(naive_variance=run.bug == "naive_variance")
    opt = torch.optim.AdamW(model.parameters(), lr=run.k("lr", 3e-3), weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=run.steps)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    level = xv.mean(1, keepdim=True)
    for step in range(run.steps):
        i = run.indices(len(x), 64)
        loss = F.l1_loss(model(x[i]), y[i])
        if run.bug == "naive_variance" and not torch.isfinite(loss):
            run.took_effect(step)  # a stuck meter's window: its variance came out negative
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        run.hook.record_scalar("mae_kw", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_mae_kw", F.l1_loss(model(xv), yv), mode="eval")
        if not run.end_step(
            step, loss.detach(), model, lambda: r2((model(xv) - level).flatten(), (yv - level).flatten())
        ):
            break


class Recogniser(nn.Module):
    def __init__(self, dim: int = 12, hidden: int = 48, classes: int = 7) -> None:
        super().__init__()
        self.conv = nn.Conv1d(dim, hidden, 3, stride=2, padding=1)  # 2x subsampling of the frames
        self.act = nn.ReLU()
        self.rnn = nn.GRU(hidden, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, classes)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        h = self.act(self.conv(frames.transpose(1, 2))).transpose(1, 2)
        out, _ = self.rnn(h)
        return self.out(out).log_softmax(-1)


def ctc(run: Run) -> None:
    """A strided conv + bidirectional GRU recogniser of spoken-digit-like frame sequences with the CTC loss (blank 0, the
    6 tokens as 1..6), Adam, batch 32. Scored by the share of validation transcripts decoded exactly (greedy)."""
    g = torch.Generator().manual_seed(run.seed)
    feats, labels, lengths = data.utterances(g, 3000)
    fv, lv, nv = feats[:200], labels[:200], lengths[:200]
    feats, labels, lengths = feats[200:], labels[200:], lengths[200:]
    shift = 0 if run.bug == "ctc_labels_not_shifted" else 1  # the bug: token 0 is written as the blank
    torch.manual_seed(run.seed)
    model = Recogniser()
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    frames = torch.full((32,), (feats.shape[1] + 1) // 2, dtype=torch.long)

    def score() -> float:
        best = model(fv).argmax(-1)
        right = 0
        for row in range(len(best)):
            seq = torch.unique_consecutive(best[row])
            decoded = [int(t) - shift for t in seq if int(t) != 0]
            right += decoded == lv[row, : int(nv[row])].tolist()
        return right / len(best)

    for step in range(run.steps):
        i = run.indices(len(feats), 32)
        targets = torch.cat([labels[j, : int(lengths[j])] + shift for j in i.tolist()])
        logp = model(feats[i]).transpose(0, 1)
        loss = F.ctc_loss(logp, targets, frames, lengths[i], blank=0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("ctc_loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_exact", score(), mode="eval")
        if not run.end_step(step, loss.detach(), model, score):
            break


class Encoder(nn.Module):
    """A small BERT-like encoder: token and position embeddings, two post-norm transformer layers, an MLM head
    and a classification head over the mean of the unpadded positions."""

    def __init__(self, vocab: int = 61, d: int = 48, length: int = 20) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(length, d)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d, 4, 96, dropout=0.1, batch_first=True) for _ in range(2)
        )
        self.mlm = nn.Linear(d, vocab)
        self.cls = nn.Sequential(nn.Linear(d, d), nn.Tanh(), nn.Linear(d, 2))

    def encode(self, tokens: torch.Tensor, ignore: torch.Tensor) -> torch.Tensor:
        h = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1]))
        for layer in self.layers:
            h = layer(h, src_key_padding_mask=ignore)
        return h

    def classify(self, tokens: torch.Tensor, ignore: torch.Tensor) -> torch.Tensor:
        keep = (tokens != 0).float().unsqueeze(-1)
        h = self.encode(tokens, ignore)
        return self.cls((h * keep).sum(1) / keep.sum(1))


MASK_ID = 60


def _pretrain(model: Encoder, seed: int) -> None:
    """The "pretrained checkpoint": 60 masked-LM steps on unlabelled text, before the fine-tuning script starts."""
    g = torch.Generator().manual_seed(100 + seed)
    corpus = data.markov_corpus(g, 4000)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    no_pad = torch.zeros(64, 20, dtype=torch.bool)
    for _ in range(60):
        text = F.pad(corpus[torch.randint(0, len(corpus), (64,), generator=g)], (0, 4))
        masked = (torch.rand(text.shape, generator=g) < 0.15) & (text != 0)
        logits = model.mlm(model.encode(torch.where(masked, MASK_ID, text), no_pad))
        loss = F.cross_entropy(logits[masked], text[masked])
        opt.zero_grad()
        loss.backward()
        opt.step()


def finetune_mlm(run: Run) -> None:
    """Sentiment fine-tuning of a pretrained small encoder: AdamW with layer-wise learning-rate decay (0.7 per
    layer down from the head), 20 warmup steps then linear decay, reviews padded to 20 tokens, batch 32. Scored
    by validation accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    tokens, _, y = data.reviews(g, 4000)
    tokens = F.pad(tokens, (0, 4))  # padding="max_length"
    tv, yv = tokens[:400], y[:400]
    tokens, y = tokens[400:], y[400:]
    torch.manual_seed(run.seed)
    model = Encoder()
    _pretrain(model, run.seed)
    base, decay = run.k("lr", 1e-3), 0.7
    groups = [
        {"params": list(model.cls.parameters()), "lr": base},
        {"params": list(model.layers[1].parameters()), "lr": base * decay},
        {"params": list(model.layers[0].parameters()), "lr": base * decay**2},
        {"params": [*model.tok.parameters(), *model.pos.parameters()], "lr": base * decay**3},
    ]
    opt = torch.optim.AdamW(groups, weight_decay=0.01)
    warmup = 20
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (run.steps - s) / (run.steps - warmup))
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def ignore_of(t: torch.Tensor) -> torch.Tensor:
        if run.bug == "padding_mask_inverted":
            return t != 0  # True marks the positions to ignore: these are the real tokens
        return t == 0

    for step in range(run.steps):
        i = run.indices(len(tokens), 32)
        loss = F.cross_entropy(model.classify(tokens[i], ignore_of(tokens[i])), y[i])
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar(
                    "val_acc", accuracy(model.classify(tv, ignore_of(tv)), yv), mode="eval"
                )
        if not run.end_step(
            step, loss.detach(), model, lambda: accuracy(model.classify(tv, ignore_of(tv)), yv)
        ):
            break


class BagClassifier(nn.Module):
    def __init__(self, vocab: int = 60, d: int = 64) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, d, mode="mean", padding_idx=0)
        self.mlp = nn.Sequential(
            nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 2)
        )

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.bag(tokens))


def text_early_stopping(run: Run) -> None:
    """A bag-of-embeddings review classifier on a small, noisily labelled set (600 reviews, 15% of the labels
    wrong): Adam, batch 32, early stopping on the validation loss (patience 3 checks) restoring the best weights.
    Scored by accuracy on clean held-out reviews."""
    g = torch.Generator().manual_seed(run.seed)
    tokens, _, y = data.reviews(g, 900, label_noise=0.15)
    clean_t, _, clean_y = data.reviews(g, 1000)
    tokens, y, tv, yv = tokens[:600], y[:600], tokens[600:], y[600:]
    if (
        run.bug == "validation_overlaps_train"
    ):  # the validation split drawn from the rows already used to train
        pick = torch.randint(0, len(tokens), (300,), generator=g)
        tv, yv = tokens[pick], y[pick]
    torch.manual_seed(run.seed)
    model = BagClassifier()
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    best, best_state, bad = float("inf"), copy.deepcopy(model.state_dict()), 0
    for step in range(run.steps):
        i = run.indices(len(tokens), 32)
        loss = F.cross_entropy(model(tokens[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        stop = False
        if run.validating(step):
            model.eval()
            with torch.no_grad():
                val = float(F.cross_entropy(model(tv), yv))
            model.train()
            run.hook.record_scalar("val_loss", val, mode="eval")
            if val < best:
                best, best_state, bad = val, copy.deepcopy(model.state_dict()), 0
            else:
                bad += 1
                stop = bad >= 3
        if not run.end_step(step, loss.detach(), model, lambda: accuracy(model(clean_t), clean_y)):
            break
        if stop:
            model.load_state_dict(best_state)
            run.oracle(run.steps - 1, lambda: in_eval(model, lambda: accuracy(model(clean_t), clean_y)))
            break
