"""Scripts of the twentieth blind split on what people write: an ordinal regression of review star ratings by
cumulative logits and a signature verification network.

`reviews`: reviews of 8-40 word ids from a vocabulary of 500, the first 120 of which carry a sentiment (positive or
negative, of random strength) and the rest none; the review's stars (1-5) are its mean sentiment plus noise cut at four
points; a mean bag of embeddings and an MLP give one score f, and the stars follow cumulative logits with ordered
thresholds (the first free, the gaps through softplus): P(stars <= k) = sigmoid(theta_k - f); the negative log
likelihood of the observed star; scored by the held-out accuracy of the most likely star.
`signatures`: each writer has a smooth pen trajectory of 32 points (a sum of random sinusoids); a genuine signature is
the writer's own redrawn with small jitter, scaling and offset, a skilled forgery a version of it with its shape
coefficients perturbed; each signature is centred and scaled to unit size; a Siamese MLP embeds the reference and the
query and a linear layer on |e1 - e2| and e1 * e2 gives the logit that the query is genuine; binary cross-entropy;
scored by the held-out AUC on writers never trained on. Bugs: the 1-5 stars clamped into 0-4; the thresholds started
at zero and used unordered; a sum bag over long reviews under momentum SGD; forgeries coded 1 as in the dataset's
file; the pairs read in the file's order, unshuffled; an exponential decay's per-epoch gamma applied per step.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

VOCAB, SENTIMENT_WORDS, MAX_WORDS, STARS = 500, 120, 40, 5
"""Vocabulary (0 pads), words carrying sentiment (ids 1-120), longest review and star levels."""


def _reviews(
    g: torch.Generator, valence: torch.Tensor, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Words long[n, MAX_WORDS] (0-padded), lengths long[n] and stars long[n] in 1-5 as the file stores them."""
    lengths = torch.randint(8, MAX_WORDS + 1, (n,), generator=g)
    mood = torch.randn(n, 1, generator=g)
    # a review leans on sentiment words of its own mood's sign
    p_pos = torch.sigmoid(2 * mood)
    sentiment = torch.where(torch.rand(n, MAX_WORDS, generator=g) < p_pos,
                            torch.randint(1, 61, (n, MAX_WORDS), generator=g),
                            torch.randint(61, SENTIMENT_WORDS + 1, (n, MAX_WORDS), generator=g))  # fmt: skip
    filler = torch.randint(SENTIMENT_WORDS + 1, VOCAB, (n, MAX_WORDS), generator=g)
    words = torch.where(torch.rand(n, MAX_WORDS, generator=g) < 0.35, sentiment, filler)
    pad = torch.arange(MAX_WORDS).view(1, -1) >= lengths.view(-1, 1)
    words = words.masked_fill(pad, 0)
    score = (valence[words] * (~pad)).sum(1) / lengths + 0.05 * torch.randn(n, generator=g)
    stars = 1 + torch.bucketize(score, torch.tensor([-0.25, -0.08, 0.08, 0.25]))
    return words, lengths, stars


class StarModel(nn.Module):
    """A bag of embeddings of `dim` (mean, or `bag_mode`), an MLP to one score, and four ordered thresholds."""

    def __init__(self, dim: int, bag_mode: str = "mean", ordered: bool = True) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(VOCAB, dim, mode=bag_mode, padding_idx=0)
        self.mlp = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, 1))
        self.ordered = ordered
        if ordered:
            self.first = nn.Parameter(torch.tensor(-1.5))
            self.gaps = nn.Parameter(torch.full((STARS - 2,), 0.5413))  # softplus: gaps of 1
        else:
            self.thresholds = nn.Parameter(torch.zeros(STARS - 1))

    def cut_points(self) -> torch.Tensor:
        if not self.ordered:
            return self.thresholds
        return torch.cat([self.first.view(1), self.first + F.softplus(self.gaps).cumsum(0)])

    def forward(self, words: torch.Tensor) -> torch.Tensor:
        """Log probabilities of the five stars float[n, STARS]."""
        f = self.mlp(self.bag(words)).squeeze(-1)
        cum = torch.sigmoid(self.cut_points().view(1, -1) - f.view(-1, 1))
        cum = torch.cat([torch.zeros(len(f), 1), cum, torch.ones(len(f), 1)], 1)
        return torch.log(cum[:, 1:] - cum[:, :-1])


def reviews(run: Run) -> None:
    """A star-rating model (a bag of `dim` (32)), batches of `batch` (64), `opt` (Adam; or Adagrad, momentum SGD,
    AdamW) at `lr` (3e-3). Scored by the held-out accuracy of the most likely star."""
    g = torch.Generator().manual_seed(run.seed)
    valence = torch.zeros(VOCAB)
    valence[1:61] = 0.3 + 0.9 * torch.rand(60, generator=g)
    valence[61 : SENTIMENT_WORDS + 1] = -0.3 - 0.9 * torch.rand(60, generator=g)
    words, _, stars = _reviews(g, valence, 2500)
    words_v, _, stars_v = _reviews(g, valence, 1000)
    if run.bug == "stars_clamped_from_one_based":
        # the stars used as class ids as read, clamped into range to silence the index error
        y = stars.clamp(max=STARS - 1)
    else:
        y = stars - 1
    torch.manual_seed(run.seed)
    model = StarModel(run.k("dim", 32), "sum" if run.bug == "bag_summed_over_long_reviews" else "mean",
                      ordered=run.bug != "thresholds_initialised_at_zero")  # fmt: skip
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        logp = model(words_v)
        if not torch.isfinite(logp).all():
            return 0.0
        return accuracy(logp, stars_v - 1)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.nll_loss(model(words[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


POINTS, TERMS = 32, 4
"""Points per resampled trajectory and sinusoid terms per coordinate."""


def _writers(g: torch.Generator, n: int) -> torch.Tensor:
    """Shape coefficients float[n, 2, TERMS, 2] (per coordinate and term: amplitude and phase)."""
    amp = torch.randn(n, 2, TERMS, generator=g) / (1 + torch.arange(TERMS).float())
    phase = torch.rand(n, 2, TERMS, generator=g) * 6.283
    return torch.stack([amp, phase], -1)


def _draw(g: torch.Generator, coef: torch.Tensor) -> torch.Tensor:
    """Trajectories float[n, POINTS, 2] drawn from coefficients with jitter, scale and offset, then centred and scaled
    to unit size."""
    n = len(coef)
    t = torch.linspace(0, 1, POINTS).view(1, 1, 1, POINTS)
    k = (1 + torch.arange(TERMS).float()).view(1, 1, TERMS, 1)
    warp = t + 0.03 * torch.randn(n, 1, 1, 1, generator=g) * torch.sin(3.14 * t)
    path = (coef[..., 0:1] * torch.sin(6.283 * k * warp + coef[..., 1:2])).sum(2)
    path = path * (0.8 + 0.4 * torch.rand(n, 1, 1, generator=g)) + torch.randn(n, 2, 1, generator=g)
    path = path + 0.03 * torch.randn(n, 2, POINTS, generator=g)
    path = path - path.mean(-1, keepdim=True)
    path = path / path.abs().amax((1, 2), keepdim=True)
    return path.transpose(1, 2)


def _pairs(
    g: torch.Generator, writers: torch.Tensor, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """References, queries float[n, POINTS, 2] and labels float[n] (1: genuine, 0: skilled forgery), in the order of
    the dataset's file: writer by writer, each writer's genuine pairs before the forgeries."""
    who = torch.randint(0, len(writers), (n,), generator=g)
    genuine = (torch.rand(n, generator=g) < 0.5).float()
    order = torch.argsort(who * 2 + (1 - genuine), stable=True)
    who, genuine = who[order], genuine[order]
    coef = writers[who]
    forged = coef.clone()
    forged[..., 0] = coef[..., 0] + 0.25 * torch.randn(coef[..., 0].shape, generator=g)
    forged[..., 1] = coef[..., 1] + 0.5 * torch.randn(coef[..., 1].shape, generator=g)
    query_coef = torch.where(genuine.view(n, 1, 1, 1) > 0, coef, forged)
    return _draw(g, coef), _draw(g, query_coef), genuine


class Verifier(nn.Module):
    """A shared MLP embedding of `dim` per signature, a linear layer on |e1 - e2| and e1 * e2."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.embed = nn.Sequential(nn.Flatten(), nn.Linear(2 * POINTS, 128), nn.ReLU(), nn.Linear(128, dim))
        self.head = nn.Linear(2 * dim, 1)

    def forward(self, ref: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        a, b = self.embed(ref), self.embed(query)
        return self.head(torch.cat([(a - b).abs(), a * b], 1)).squeeze(-1)


def signatures(run: Run) -> None:
    """A signature verifier (embeddings of `dim` (32)), batches of `batch` (64), `opt` (Adam; or AdamW, RMSprop) at
    `lr` (1e-3), optionally decayed exponentially by 0.995 a step (`exp_decay`). Scored by the held-out AUC on
    unseen writers."""
    g = torch.Generator().manual_seed(run.seed)
    ref, query, label = _pairs(g, _writers(g, 300), 4000)
    ref_v, query_v, label_v = _pairs(g, _writers(g, 100), 1500)
    if run.bug == "forgery_coded_as_one":
        # the dataset's file marks forgeries with 1; the loss reads 1 as genuine
        label = 1 - label
    torch.manual_seed(run.seed)
    model = Verifier(run.k("dim", 32))
    opt = optimizers.registered(run, model, 1e-3)
    sched = None
    if run.k("exp_decay", False):
        gamma = 0.9 if run.bug == "exponential_gamma_tuned_per_epoch" else 0.995
        sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(ref_v, query_v), label_v)

    for step in range(run.steps):
        if run.bug == "pairs_read_in_file_order":
            # the loader built without shuffle=True reads the file in its order
            first = step * batch % len(label)
            pick = torch.arange(first, first + batch) % len(label)
        else:
            pick = run.indices(len(label), batch)
        loss = F.binary_cross_entropy_with_logits(model(ref[pick], query[pick]), label[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
