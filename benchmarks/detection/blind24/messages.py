"""Message scripts of the twenty-fourth blind split: an SMS spam filter and a malware detector on API-call traces.

`spam`: text messages of 6-24 words from a vocabulary of 400 (each written lowercase or capitalised), one in seven spam,
spam carrying two to five of 30 cue words (prize, free, claim, ...), often in capitals, ham now and then one of them;
the words lowercased and looked up in a vocabulary built lowercase (unknown words on the padding index); a mean bag of
embeddings and an MLP; BCE with the positive class weighted by the ratio of ham to spam; scored by the held-out AUC.
`malware`: traces of 128 API calls among 60, a malicious sample's unpacked payload running one of three call chains
(allocate, write, create a remote thread; open a key, set a value, ...) among its last 48 calls, the same calls
scattered through benign traces; the last 64 calls embedded and convolved (max over time) beside the trace's TF-IDF
histogram (smoothed IDF from the training traces; five newer calls appear only in the held-out ones); an MLP; BCE;
scored by the held-out AUC. Bugs: the SMS gateway's spam tag left in the training texts; words looked up before
lowercasing; the positive weight given as the count of ham; the IDF of a call never seen in training taken as
log(N / 0); the first 64 calls kept instead of the last; the embedded calls handed to the convolution without moving the
embedding to the channel axis (its in-channels set to the 64 positions to make it run).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

WORDS, CUES, LONGEST = 400, 30, 24
"""Vocabulary (ids 1..WORDS; 0 pads and stands for unknown words), spam cue words (ids 1..CUES), longest message."""
TAG = 2 * WORDS + 1
"""The raw id of the gateway's "[SPAM?]" tag."""


def _messages(g: torch.Generator, n: int, tagged: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw word ids long[n, LONGEST + 1] (a word w written lowercase as w, capitalised as w + WORDS; 0 pads; the
    gateway's tag on tagged spam) and spam labels float[n]."""
    spam = torch.rand(n, generator=g) < 1 / 7
    lengths = torch.randint(6, LONGEST + 1, (n,), generator=g)
    zipf = 1 / torch.arange(1, WORDS - CUES + 1, dtype=torch.float)
    words = CUES + 1 + torch.multinomial(zipf, n * LONGEST, True, generator=g).view(n, LONGEST)
    cues = 1 + torch.randint(0, CUES, (n, LONGEST), generator=g)
    rate = torch.where(spam, 0.1 + 0.15 * torch.rand(n, generator=g), 0.02)
    is_cue = torch.rand(n, LONGEST, generator=g) < rate.unsqueeze(1)
    is_cue[:, 0] |= spam  # every spam text carries a cue word
    text = torch.where(is_cue, cues, words)
    capital = torch.rand(n, LONGEST, generator=g) < torch.where(spam & is_cue.any(1), 0.5, 0.05).unsqueeze(1)
    capital |= is_cue & spam.unsqueeze(1) & (torch.rand(n, LONGEST, generator=g) < 0.4)
    text = text + WORDS * capital
    text = text.masked_fill(torch.arange(LONGEST).unsqueeze(0) >= lengths.unsqueeze(1), 0)
    tag = torch.where(spam & tagged, TAG, 0)
    y = torch.where(torch.rand(n, generator=g) < 0.02, ~spam, spam).float()  # a few mislabelled texts
    return torch.cat([tag.unsqueeze(1), text], 1), y


class SpamBag(nn.Module):
    """A mean bag of `dim` embeddings (padding index 0) and an MLP of `hidden`."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(TAG + 1, dim, mode="mean", padding_idx=0)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.bag(ids))[:, 0]


def spam(run: Run) -> None:
    """A spam bag of `dim` (32) and `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, Adagrad,
    NAdam) at `lr` (3e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    raw, y = _messages(g, 3000, tagged=run.bug == "gateway_tag_left_in_training_text")
    raw_v, y_v = _messages(g, 2000)

    def lookup(text: torch.Tensor) -> torch.Tensor:
        """Word ids in the lowercase vocabulary (0 for unknown words); the tag kept as its own token."""
        if run.bug == "cased_words_looked_up_before_lowercasing":
            ids = torch.where(text <= WORDS, text, 0)
        else:
            ids = torch.where(text > WORDS, text - WORDS, text)
        return torch.where(text == TAG, TAG, ids)

    x, x_v = lookup(raw), lookup(raw_v)
    torch.manual_seed(run.seed)
    model = SpamBag(run.k("dim", 32), run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    n_spam = float(y.sum())
    ratio = len(y) - n_spam if run.bug == "positive_weight_as_ham_count" else (len(y) - n_spam) / n_spam
    pos_weight = torch.tensor(ratio)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick], pos_weight=pos_weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


APIS, TRACE, KEPT, NEWER = 60, 128, 64, 5
"""API calls (the last NEWER only in newer software), calls per trace, calls the model reads."""
CHAINS = torch.tensor([[3, 7, 11, 0], [14, 19, 23, 0], [5, 28, 31, 36]])
"""The malicious call chains (0 ends a chain of three)."""


def _traces(g: torch.Generator, n: int, newer: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Traces long[n, TRACE] of call ids and malware labels float[n]."""
    known = APIS - NEWER
    zipf = 1 / torch.arange(1, APIS + 1, dtype=torch.float) ** 0.7
    zipf[known:] = 0.05 if newer else 0.0
    calls = torch.multinomial(zipf, n * TRACE, True, generator=g).view(n, TRACE)
    bad = torch.rand(n, generator=g) < 0.4
    chain = CHAINS[torch.randint(0, len(CHAINS), (n,), generator=g)]
    start = TRACE - 48 + torch.randint(0, 44, (n,), generator=g)
    for j in range(4):
        put = bad & (chain[:, j] > 0)
        calls[put, start[put] + j] = chain[put, j]
    # benign traces use the same calls, scattered
    loose = (~bad).nonzero()[:, 0]
    spots = torch.randint(0, TRACE, (len(loose), 3), generator=g)
    calls[loose.unsqueeze(1), spots] = CHAINS[torch.randint(0, len(CHAINS), (len(loose),), generator=g)][
        :, :3
    ]
    y = torch.where(torch.rand(n, generator=g) < 0.03, ~bad, bad).float()
    return calls, y


class TraceNet(nn.Module):
    """Call embeddings of `dim`, a convolution of `filters` (kernel 4) max-pooled over time, beside the TF-IDF
    histogram, into an MLP of `hidden`."""

    def __init__(self, dim: int, filters: int, hidden: int, channels_last: bool = False) -> None:
        super().__init__()
        self.channels_last = channels_last
        self.embed = nn.Embedding(APIS, dim)
        # the bug's convolution takes the 64 positions as its channels, as it must to accept [batch, calls, dim]
        self.conv = nn.Conv1d(KEPT if channels_last else dim, filters, 4)
        self.mlp = nn.Sequential(nn.Linear(filters + APIS, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, calls: torch.Tensor, tfidf: torch.Tensor) -> torch.Tensor:
        embedded = self.embed(calls)
        seen = F.relu(self.conv(embedded if self.channels_last else embedded.transpose(1, 2))).amax(-1)
        return self.mlp(torch.cat([seen, tfidf], 1))[:, 0]


def malware(run: Run) -> None:
    """A trace net of `dim` (16), `filters` (32) and `hidden` (64), batches of `batch` (64), `opt` (Adam; or RMSprop,
    AdamW, momentum SGD) at `lr` (2e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    calls, y = _traces(g, 3000, newer=False)
    calls_v, y_v = _traces(g, 1500, newer=True)
    counts = F.one_hot(calls, APIS).sum(1).float()
    counts_v = F.one_hot(calls_v, APIS).sum(1).float()
    df = (counts > 0).float().sum(0)
    if run.bug == "idf_of_unseen_call_unsmoothed":
        idf = torch.log(len(y) / df)
    else:
        idf = torch.log((1 + len(y)) / (1 + df)) + 1  # smoothed: a call no training trace made stays finite
    tfidf, tfidf_v = counts / TRACE * idf, counts_v / TRACE * idf
    if run.bug == "first_calls_kept":
        seq, seq_v = calls[:, :KEPT], calls_v[:, :KEPT]
    else:
        seq, seq_v = calls[:, -KEPT:], calls_v[:, -KEPT:]
    torch.manual_seed(run.seed)
    model = TraceNet(run.k("dim", 16), run.k("filters", 32), run.k("hidden", 64),
                     channels_last=run.bug == "conv_over_embedding_axis")  # fmt: skip
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(seq_v, tfidf_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(seq[pick], tfidf[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
