"""Language scripts of the twelfth blind split: word embeddings by skip-gram with negative sampling, and a
part-of-speech-like tagger with a linear-chain conditional random field on top.

`skipgram`: a corpus of 3000 ten-word sentences over 600 words in 30 topics of 20; a sentence keeps to one topic (half
its words, drawn Zipf-like within the topic; the rest from the whole vocabulary); (centre, context) pairs within a
window of 2; two embedding tables (centres initialised uniformly in +-0.5/dim, contexts at zero, as word2vec does); the
loss is -log sigma(u.v) - sum over 5 negatives, drawn from the unigram distribution to the power 0.75, of log
sigma(-u.n); scored by the fraction of each word's 5 nearest neighbours (cosine of the centre embeddings) that share its
topic. `crf`: sentences of 6-14 tokens (padded to 14) from a hidden Markov model over 5 tags whose transitions favour
the next tag in a cycle, each tag emitting its own 8 words or (half the time) one of 20 ambiguous words; the emissions
come from each token's embedding through an MLP; a linear-chain CRF (start, transition and end scores) gives the
negative log-likelihood, log Z by the forward algorithm over the real tokens minus the gold path's score, per token;
scored by the held-out token accuracy of the Viterbi path. Bugs: the negatives' scores not negated inside log sigma, the
negatives drawn once before the loop and reused, both tables initialised at zero, the positive pair's context looked up
in the centre table, the gold path's transitions read transposed, the forward algorithm's log-sum-exp taken over the
next tag instead of the previous one, the tags shifted by one position.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind12 import optimizers

VOCAB, TOPICS, WINDOW, NEGATIVES = 600, 30, 2, 5
"""Skip-gram: words, topics (of VOCAB // TOPICS words each), context window, negatives per pair."""
TAGS, WORDS, AMBIGUOUS, LONGEST = 5, 60, 20, 14
"""CRF: tags, vocabulary (8 words of each tag's own, then the ambiguous ones; 0 is padding), longest sentence."""


def _corpus(g: torch.Generator, sentences: int, length: int = 10) -> torch.Tensor:
    """Word ids long[sentences, length], each sentence mostly from one topic."""
    per = VOCAB // TOPICS
    zipf = 1.0 / torch.arange(1, per + 1).float()
    topic = torch.randint(0, TOPICS, (sentences, 1), generator=g)
    own = topic * per + torch.multinomial(zipf, sentences * length, replacement=True, generator=g).view(
        -1, length
    )
    stray = torch.randint(0, VOCAB, (sentences, length), generator=g)
    return torch.where(torch.rand(sentences, length, generator=g) < 0.5, own, stray)


def _pairs(corpus: torch.Tensor) -> torch.Tensor:
    """(centre, context) ids long[pairs, 2] within WINDOW of each other."""
    found = []
    for offset in range(-WINDOW, WINDOW + 1):
        if offset == 0:
            continue
        lo, hi = max(0, -offset), corpus.shape[1] - max(0, offset)
        found.append(torch.stack([corpus[:, lo:hi], corpus[:, lo + offset : hi + offset]], -1).reshape(-1, 2))
    return torch.cat(found)


def skipgram(run: Run) -> None:
    """Skip-gram with negative sampling: embeddings of `dim` (48), batches of `batch` (512) pairs, `opt` (Adam; or
    Adagrad, RMSprop, AdamW) at `lr` (0.01). Scored by the topic purity of each word's 5 nearest neighbours."""
    g = torch.Generator().manual_seed(run.seed)
    corpus = _corpus(g, 3000)
    pairs = _pairs(corpus)
    counts = torch.bincount(corpus.flatten(), minlength=VOCAB).float()
    noise = counts**0.75 / (counts**0.75).sum()
    topic_of = torch.arange(VOCAB) // (VOCAB // TOPICS)
    torch.manual_seed(run.seed)
    dim, batch = run.k("dim", 48), run.k("batch", 512)
    model = nn.ModuleDict({"centre": nn.Embedding(VOCAB, dim), "context": nn.Embedding(VOCAB, dim)})
    if run.bug == "both_tables_initialised_at_zero":
        nn.init.zeros_(model["centre"].weight)
    else:
        nn.init.uniform_(model["centre"].weight, -0.5 / dim, 0.5 / dim)
    nn.init.zeros_(model["context"].weight)
    opt = optimizers.registered(run, model, 0.01)
    fixed_negatives = torch.multinomial(noise, batch * NEGATIVES, replacement=True, generator=run.gen)

    def purity() -> float:
        emb = F.normalize(model["centre"].weight, dim=1)
        sim = emb @ emb.T - 2 * torch.eye(VOCAB)
        near = sim.topk(5, dim=1).indices
        return float((topic_of[near] == topic_of[:, None]).float().mean())

    for step in range(run.steps):
        centre, context = pairs[run.indices(len(pairs), batch)].T
        if run.bug == "negatives_drawn_once":
            negatives = fixed_negatives.view(batch, NEGATIVES)
        else:
            negatives = torch.multinomial(noise, batch * NEGATIVES, replacement=True, generator=run.gen)
            negatives = negatives.view(batch, NEGATIVES)
        u = model["centre"](centre)
        table = "centre" if run.bug == "context_looked_up_in_centre_table" else "context"
        positive = (u * model[table](context)).sum(-1)
        negative = torch.bmm(model["context"](negatives), u[:, :, None]).squeeze(-1)
        if run.bug == "negative_scores_not_negated":
            loss = -(F.logsigmoid(positive) + F.logsigmoid(negative).sum(-1)).mean()
        else:
            loss = -(F.logsigmoid(positive) + F.logsigmoid(-negative).sum(-1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_topic_purity", purity):
            break


def _tagged(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Word ids long[n, LONGEST] (0 past the end), tags long[n, LONGEST] (0 past the end), lengths long[n]."""
    move = torch.full((TAGS, TAGS), 0.2 / (TAGS - 2))
    for t in range(TAGS):
        move[t, (t + 1) % TAGS], move[t, t] = 0.6, 0.2
    lengths = torch.randint(6, LONGEST + 1, (n,), generator=g)
    tags = torch.zeros(n, LONGEST, dtype=torch.long)
    tags[:, 0] = torch.randint(0, TAGS, (n,), generator=g)
    for i in range(1, LONGEST):
        tags[:, i] = torch.multinomial(move[tags[:, i - 1]], 1, generator=g).squeeze(1)
    own = 1 + tags * 8 + torch.randint(0, 8, (n, LONGEST), generator=g)
    shared = 1 + TAGS * 8 + torch.randint(0, AMBIGUOUS, (n, LONGEST), generator=g)
    words = torch.where(torch.rand(n, LONGEST, generator=g) < 0.5, shared, own)
    real = torch.arange(LONGEST) < lengths[:, None]
    return words * real, tags * real, lengths


class CRFTagger(nn.Module):
    """Emissions from each token (its embedding of `dim` through an MLP of `width`), and a linear-chain CRF's start,
    transition (from row to column) and end scores."""

    def __init__(self, dim: int, width: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(WORDS + 1, dim, padding_idx=0)
        self.emit = nn.Sequential(nn.Linear(dim, width), nn.Tanh(), nn.Linear(width, TAGS))
        self.start, self.end = nn.Parameter(torch.zeros(TAGS)), nn.Parameter(torch.zeros(TAGS))
        self.trans = nn.Parameter(torch.zeros(TAGS, TAGS))

    def emissions(self, words: torch.Tensor) -> torch.Tensor:
        return self.emit(self.embed(words))

    def viterbi(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The best tag path long[n, LONGEST] of each sentence (past its end: whatever the last tag carries)."""
        emit = self.emissions(words)
        score, back = self.start + emit[:, 0], []
        for i in range(1, LONGEST):
            best, arg = (score[:, :, None] + self.trans).max(1)
            live = (i < lengths)[:, None]
            score = torch.where(live, best + emit[:, i], score)
            back.append(torch.where(live, arg, torch.arange(TAGS).expand_as(arg)))
        last = (score + self.end).argmax(1)
        path = [last]
        for arg in reversed(back):
            last = arg.gather(1, last[:, None]).squeeze(1)
            path.append(last)
        return torch.stack(path[::-1], 1)


def crf(run: Run) -> None:
    """A CRF tagger: embeddings of `dim` (16), an emission MLP of `width` (64), batches of `batch` (64), `opt`
    (Adam; or NAdam, momentum SGD, Adamax) at `lr` (0.01). Scored by the Viterbi path's held-out token accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    words, tags, lengths = _tagged(g, 4000)
    words_v, tags_v, lengths_v = _tagged(g, 400)
    real_v = torch.arange(LONGEST) < lengths_v[:, None]
    torch.manual_seed(run.seed)
    model = CRFTagger(run.k("dim", 16), run.k("width", 64))
    opt = optimizers.registered(run, model, 0.01)
    batch, rows = run.k("batch", 64), torch.arange(run.k("batch", 64))

    def token_accuracy() -> float:
        path = model.viterbi(words_v, lengths_v)
        return float((path == tags_v)[real_v].float().mean())

    for step in range(run.steps):
        pick = run.indices(len(words), batch)
        w, y, n = words[pick], tags[pick], lengths[pick]
        real = torch.arange(LONGEST) < n[:, None]
        emit = model.emissions(w)
        if run.bug == "emissions_scored_against_next_tag":
            y = torch.cat([y[:, 1:], y[:, -1:]], 1)
        gold = model.start[y[:, 0]] + emit[:, 0].gather(1, y[:, :1]).squeeze(1)
        for i in range(1, LONGEST):
            if run.bug == "gold_transitions_transposed":
                move = model.trans[y[:, i], y[:, i - 1]]
            else:
                move = model.trans[y[:, i - 1], y[:, i]]
            gold = gold + (move + emit[rows, i, y[:, i]]) * real[:, i]
        gold = gold + model.end[y[rows, n - 1]]
        alpha = model.start + emit[:, 0]
        for i in range(1, LONGEST):
            over = 2 if run.bug == "forward_logsumexp_over_next_tag" else 1
            nxt = torch.logsumexp(alpha[:, :, None] + model.trans, over) + emit[:, i]
            alpha = torch.where(real[:, i : i + 1], nxt, alpha)
        log_z = torch.logsumexp(alpha + model.end, 1)
        loss = (log_z - gold).sum() / real.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_token_accuracy", token_accuracy):
            break
