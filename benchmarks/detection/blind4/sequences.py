"""Sequence scripts of the fourth blind split: a character LSTM language model trained with truncated BPTT, a
bidirectional GRU entity tagger on padded sentences, an N-BEATS-style forecaster.

`lstm_tbptt`: 16 parallel streams cut into chunks, the hidden state carried from chunk to chunk and detached,
gradient-norm clipping; scored by next-token accuracy on a held-out stream. `tagger`: a BiGRU over padded
sentences, the loss over real tokens only; scored by micro-F1 over entity tags. `nbeats`: stacked MLP blocks that
each emit a backcast (subtracted from the block's input) and a partial forecast (summed), inputs standardised with
the training windows' statistics; scored by R^2 of the forecast. Bugs: clipping called before backward, targets
not shifted, the carried state dropped, padding counted in the loss, the backcast added, standardisation with the
validation windows' statistics.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind4 import data


class CharLSTM(nn.Module):
    def __init__(self, vocab: int = 16, d: int = 32, hidden: int = 64) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(
        self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        h, state = self.lstm(self.emb(x), state)
        return self.out(h), state


def lstm_tbptt(run: Run) -> None:
    """A character-level LSTM language model over 16 parallel streams, truncated BPTT (chunks of `bptt` tokens, the
    state carried and detached), clip_grad_norm_; Adam (lr 3e-3, clip 1.0) or SGD (lr 1.0, clip 0.25). Scored by
    next-token accuracy over a held-out stream of 1000 tokens."""
    g = torch.Generator().manual_seed(run.seed)
    streams = data.char_stream(g, 16 * 4000).reshape(16, -1)
    val = data.char_stream(g, 1001)[None]
    torch.manual_seed(run.seed)
    model = CharLSTM()
    sgd = run.k("opt", "adam") == "sgd"
    opt = (
        torch.optim.SGD(model.parameters(), lr=1.0) if sgd else torch.optim.Adam(model.parameters(), lr=3e-3)
    )
    clip = 0.25 if sgd else 1.0
    bptt = run.k("bptt", 20)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def next_token_accuracy() -> float:
        logits, _ = model(val[:, :-1])
        return accuracy(logits[0], val[0, 1:])

    state = None
    pos = 0
    for step in range(run.steps):
        if pos + bptt + 1 > streams.shape[1]:
            pos, state = 0, None
        chunk = streams[:, pos : pos + bptt + 1]
        pos += bptt
        # the bug: the target is the input chunk itself, not the chunk shifted by one
        x, y = chunk[:, :-1], chunk[:, :-1] if run.bug == "target_not_shifted" else chunk[:, 1:]
        if run.bug == "carried_state_dropped":
            state = None  # the bug: "reset the hidden state for each batch", as in a per-sentence model
        elif state is not None:
            state = (state[0].detach(), state[1].detach())
        logits, state = model(x, state)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad()
        if run.bug == "clip_before_backward":
            nn.utils.clip_grad_norm_(model.parameters(), clip)  # the bug: clips the zeroed gradients
            loss.backward()
        else:
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", next_token_accuracy):
            break


class BiGRUTagger(nn.Module):
    def __init__(self, vocab: int = 60, tags: int = 5, d: int = 32) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.gru = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * d, tags)

    def forward(self, tok: torch.Tensor) -> torch.Tensor:
        h, _ = self.gru(self.emb(tok))
        return self.out(h)


def entity_f1(logits: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> float:
    """Micro-F1 over the entity tags (1..) of the real tokens."""
    pred = logits.argmax(-1)
    tp = float(((pred == tags) & (tags > 0) & mask).sum())
    predicted, actual = float(((pred > 0) & mask).sum()), float(((tags > 0) & mask).sum())
    return 0.0 if tp == 0 else 2 * tp / (predicted + actual)


def tagger(run: Run) -> None:
    """A bidirectional GRU entity tagger on padded sentences (token 0 pads, tag 0 is "outside"), the loss averaged
    over the real tokens; Adam (lr 3e-3) or NAdam, batch 32. Scored by entity micro-F1 on 400 held-out
    sentences."""
    g = torch.Generator().manual_seed(run.seed)
    tok, tags, lengths = data.tagged_sentences(g, 2400)
    mask = torch.arange(tok.shape[1])[None, :] < lengths[:, None]
    tv, yv, mv, tok, tags, mask = tok[:400], tags[:400], mask[:400], tok[400:], tags[400:], mask[400:]
    torch.manual_seed(run.seed)
    model = BiGRUTagger()
    nadam = run.k("opt", "adam") == "nadam"
    opt = (torch.optim.NAdam if nadam else torch.optim.Adam)(model.parameters(), lr=run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(tok), 32)
        logits = model(tok[i])
        if run.bug == "padding_counted_in_loss":
            # the bug: padding positions carry tag 0 ("outside") and are averaged into the loss
            loss = F.cross_entropy(logits.reshape(-1, 5), tags[i].reshape(-1))
        else:
            loss = F.cross_entropy(logits[mask[i]], tags[i][mask[i]])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_entity_f1", lambda: entity_f1(model(tv), yv, mv)):
            break


class NBeatsBlock(nn.Module):
    def __init__(self, back: int, horizon: int, width: int = 64) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(back, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU())
        self.backcast = nn.Linear(width, back)
        self.forecast = nn.Linear(width, horizon)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.mlp(x)
        return self.backcast(h), self.forecast(h)


class NBeats(nn.Module):
    def __init__(
        self, back: int = 36, horizon: int = 12, blocks: int = 3, *, add_backcast: bool = False
    ) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(NBeatsBlock(back, horizon) for _ in range(blocks))
        self.add_backcast = add_backcast

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        forecast = torch.zeros(x.shape[0], self.blocks[0].forecast.out_features)
        for block in self.blocks:
            b, f = block(x)
            # each block explains part of its input and passes the rest on; the bug adds the backcast instead
            x = x + b if self.add_backcast else x - b
            forecast = forecast + f
        return forecast


def nbeats(run: Run) -> None:
    """An N-BEATS-style forecaster (3 generic blocks, backcast residuals) of 12 steps from 36, inputs and targets
    standardised with the training windows' mean and standard deviation; MSE with Adam (lr 1e-3), or Huber with
    RAdam, or MSE with Adamax; batch 64. Scored by R^2 of the forecast around each window's level on 500 held-out windows."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.seasonal_windows(g, 3000)
    xv, yv, x, y = x[:500], y[:500], x[500:], y[500:]
    # the bug: the statistics taken from the validation windows ("the data we care about")
    ref = xv if run.bug == "standardised_with_validation_stats" else x
    mu, sd = float(ref.mean()), float(ref.std())
    torch.manual_seed(run.seed)
    model = NBeats(add_backcast=run.bug == "backcast_added")
    opt_name = run.k("opt", "adam")
    opt_cls = {"adam": torch.optim.Adam, "radam": torch.optim.RAdam, "adamax": torch.optim.Adamax}[opt_name]
    opt = opt_cls(model.parameters(), lr=run.k("lr", 1e-3))
    criterion = nn.HuberLoss(delta=0.5) if run.k("loss", "mse") == "huber" else nn.MSELoss()
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def forecast_skill() -> float:
        # R^2 of the movement around each window's own level (the levels alone would make any forecast look good)
        level = xv.mean(1, keepdim=True)
        return r2(model((xv - mu) / sd) * sd + mu - level, yv - level)

    for step in range(run.steps):
        i = run.indices(len(x), 64)
        loss = criterion(model((x[i] - mu) / sd), (y[i] - mu) / sd)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", forecast_skill):
            break
