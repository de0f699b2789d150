"""Commerce scripts of the twenty-first blind split: a retail price-elasticity model and a question-duplicate
detector for a shop's help forum.

`prices`: daily unit sales of 40 products in 8 stores; each product has a base demand, a store effect, a weekly
season and an elasticity between -3 and -0.5; the shelf price moves around the list price with promotions; some
products are sold in packs of 2, 4 or 6, whose price is recorded per pack; units sold are Poisson, often 0 for the
slow products; the model regresses log(1 + units) on the embedded product and store, the day of week and the log
unit price, with a per-product elasticity term (minus a softplus) times the log price; MSE; scored by the held-out R^2
of the predicted log demand on days with new prices against the true expected log(1 + units). `questions`: pairs of
forum questions of 6-14 words drawn from 60 topics; a duplicate restates the same topic with synonyms and reordered
filler words; the word vectors come from a pretrained table (synonyms close together, covering words the 800
training pairs never use), frozen; a GRU encoder shared by both questions, its final states combined as |a - b| and a
* b into an MLP; BCE with logits, gradients clipped at norm 1; scored by the held-out AUC. Bugs: log(units) without
the one; the rate scaled by the batch size without dividing by the base batch of 256; the pack price taken as the
unit price; the mean loss divided again by the number of training rows; the labels shuffled by their own permutation; the pretrained table fine-tuned on the 800 pairs; the
clipping left out of the GRU's momentum-SGD recipe.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind21.travel import registered

PRODUCTS, STORES = 40, 8


def _catalogue(
    g: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per product: log base demand, elasticity, list unit price, pack size; per store: a log effect."""
    base = 0.2 + 2.3 * torch.rand(PRODUCTS, generator=g)
    elasticity = -0.5 - 2.5 * torch.rand(PRODUCTS, generator=g)
    price = torch.exp(torch.log(torch.tensor(1.0)) + 1.5 * torch.rand(PRODUCTS, generator=g))
    pack = torch.tensor([1, 1, 1, 2, 4, 6])[torch.randint(0, 6, (PRODUCTS,), generator=g)].float()
    return base, elasticity, price, pack, 0.4 * torch.randn(STORES, generator=g)


def _days(
    g: torch.Generator, n: int, cat: tuple[torch.Tensor, ...], promo_depth: float
) -> tuple[torch.Tensor, ...]:
    """Rows of product, store, day long[n, 3], the recorded price (per pack) float[n], units float[n] and the true
    log(1 + expected units) float[n]."""
    base, elasticity, price, pack, store_effect = cat
    product = torch.randint(0, PRODUCTS, (n,), generator=g)
    store = torch.randint(0, STORES, (n,), generator=g)
    day = torch.randint(0, 7, (n,), generator=g)
    factor = torch.where(torch.rand(n, generator=g) < 0.3, 1 - promo_depth * torch.rand(n, generator=g),
                         1 + 0.1 * torch.randn(n, generator=g))  # fmt: skip
    unit_price = price[product] * factor
    log_rate = (base[product] + store_effect[store] + 0.3 * torch.cos(2 * torch.pi * day / 7)
                + elasticity[product] * torch.log(factor))  # fmt: skip
    units = torch.poisson(torch.exp(log_rate), generator=g)
    truth = torch.log1p(torch.exp(log_rate))
    return torch.stack([product, store, day], 1), unit_price * pack[product], units, truth


class DemandModel(nn.Module):
    """log(1 + units) = an MLP of the embedded product, store and weekday + a per-product elasticity (negative, by
    minus a softplus) times the log unit price relative to the product's mean."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.product, self.store, self.day = (
            nn.Embedding(PRODUCTS, 8),
            nn.Embedding(STORES, 4),
            nn.Embedding(7, 3),
        )
        self.mlp = nn.Sequential(nn.Linear(15, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.slope = nn.Embedding(PRODUCTS, 1)

    def forward(self, ids: torch.Tensor, log_price: torch.Tensor) -> torch.Tensor:
        emb = torch.cat([self.product(ids[:, 0]), self.store(ids[:, 1]), self.day(ids[:, 2])], -1)
        return self.mlp(emb)[:, 0] - F.softplus(self.slope(ids[:, 0]))[:, 0] * log_price


def prices(run: Run) -> None:
    """A demand model of `hidden` (32), batches of `batch` (512), `opt` (momentum SGD; or Adam, RMSprop, AdamW) at
    `lr` (0.05 at a base batch of 256, scaled by batch / 256). Scored by the held-out R^2 of the log demand."""
    g = torch.Generator().manual_seed(run.seed)
    cat = _catalogue(g)
    ids, paid, units, _ = _days(g, 6000, cat, 0.3)
    ids_v, paid_v, _, truth_v = _days(g, 2000, cat, 0.5)  # deeper promotions than seen in training
    pack = cat[3]

    def unit_price(i: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        return p if run.bug == "pack_price_taken_as_unit_price" else p / pack[i[:, 0]]

    log_p = torch.log(unit_price(ids, paid))
    mean_log = torch.zeros(PRODUCTS).index_add_(0, ids[:, 0], log_p) / torch.bincount(
        ids[:, 0], minlength=PRODUCTS
    )
    x, x_v = log_p - mean_log[ids[:, 0]], torch.log(unit_price(ids_v, paid_v)) - mean_log[ids_v[:, 0]]
    y = torch.log(units) if run.bug == "log_units_without_one" else torch.log1p(units)
    torch.manual_seed(run.seed)
    model = DemandModel(run.k("hidden", 32))
    batch = run.k("batch", 512)
    base_lr = run.k("lr", 0.05)
    # the linear scaling rule: the rate grows with the batch over the recipe's base batch of 256
    lr = base_lr * batch if run.bug == "lr_scaled_by_batch_not_ratio" else base_lr * batch / 256
    opt = registered(run, model, base_lr, lr, "momentum")

    def r2_held_out() -> float:
        return r2(model(ids_v, x_v), truth_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(ids[pick], x[pick]), y[pick])
        if run.bug == "mean_loss_divided_by_row_count":
            loss = loss / len(y)  # the per-row normalisation of the summed loss this loop started from
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


TOPICS, SYNONYMS, FILLER = 60, 3, 40
VOCAB = 1 + TOPICS * 2 * SYNONYMS + FILLER
"""Padding, then for each topic two content words with three synonyms each, then filler words."""


def _pretrained(g: torch.Generator, dim: int) -> torch.Tensor:
    """A pretrained word-vector table: a word's vector is its concept's plus a little noise; filler words are small."""
    concepts = torch.randn(TOPICS * 2, dim, generator=g)
    table = torch.zeros(VOCAB, dim)
    table[1 : 1 + TOPICS * 2 * SYNONYMS] = concepts.repeat_interleave(SYNONYMS, 0) + 0.3 * torch.randn(
        TOPICS * 2 * SYNONYMS, dim, generator=g
    )
    table[1 + TOPICS * 2 * SYNONYMS :] = 0.3 * torch.randn(FILLER, dim, generator=g)
    return table


def _question(g: torch.Generator, topic: int, seen_synonyms: int) -> list[int]:
    """A question on `topic`: both content words (each as one of the first `seen_synonyms` synonyms) among fillers."""
    words = [
        1 + (topic * 2 + k) * SYNONYMS + int(torch.randint(0, seen_synonyms, (1,), generator=g))
        for k in (0, 1)
    ]
    fill = torch.randint(0, FILLER, (int(torch.randint(4, 13, (1,), generator=g)),), generator=g)
    words += [1 + TOPICS * 2 * SYNONYMS + int(f) for f in fill]
    order = torch.randperm(len(words), generator=g)
    return [words[i] for i in order]


def _pairs(g: torch.Generator, n: int, seen_synonyms: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Padded question pairs long[n, 2, 14] and duplicate labels float[n] (about 40 in 100 duplicates; a non-duplicate
    is a question on a near topic sharing one content concept)."""
    x = torch.zeros(n, 2, 14, dtype=torch.long)
    y = (torch.rand(n, generator=g) < 0.4).float()
    for i in range(n):
        topic = int(torch.randint(0, TOPICS, (1,), generator=g))
        a = _question(g, topic, seen_synonyms)
        if y[i] > 0:
            b = _question(g, topic, seen_synonyms)
        else:
            other = (topic + int(torch.randint(1, TOPICS, (1,), generator=g))) % TOPICS
            b = _question(g, other, seen_synonyms)
            b[b.index(next(w for w in b if w <= TOPICS * 2 * SYNONYMS))] = a[
                a.index(next(w for w in a if w <= TOPICS * 2 * SYNONYMS))
            ]  # one content word shared
        x[i, 0, : len(a)], x[i, 1, : len(b)] = torch.tensor(a), torch.tensor(b)
    return x, y


class PairGRU(nn.Module):
    """Word vectors (frozen unless `tune`), a GRU of `hidden` shared by both questions, an MLP on |a - b| and a * b."""

    def __init__(self, table: torch.Tensor, hidden: int, tune: bool) -> None:
        super().__init__()
        self.words = nn.Embedding.from_pretrained(table, freeze=not tune, padding_idx=0)
        self.gru = nn.GRU(table.shape[1], hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def encode(self, q: torch.Tensor) -> torch.Tensor:
        lengths = (q > 0).sum(1)
        out, _ = self.gru(self.words(q))
        return out[torch.arange(len(q)), lengths - 1]

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        a, b = self.encode(pairs[:, 0]), self.encode(pairs[:, 1])
        return self.head(torch.cat([(a - b).abs(), a * b], -1))[:, 0]


def questions(run: Run) -> None:
    """A pair GRU of `hidden` (48), batches of `batch` (32), `opt` (momentum SGD; or Adam, RMSprop, NAdam) at `lr`
    (0.1), gradients clipped at norm 1. Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    table = _pretrained(g, 24)
    x, y = _pairs(g, 800, 2)  # the training pairs use two synonyms of each word
    x_v, y_v = _pairs(g, 800, SYNONYMS)  # the forum's new questions use all three
    if run.bug == "labels_shuffled_by_own_permutation":
        y = y[torch.randperm(len(y), generator=g)]  # the label column shuffled apart from the pairs
    torch.manual_seed(run.seed)
    model = PairGRU(table, run.k("hidden", 48), run.bug == "pretrained_vectors_fine_tuned")
    opt = registered(run, model, 0.1, default_opt="momentum")
    batch = run.k("batch", 32)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        if run.bug != "gru_clipping_left_out":
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
