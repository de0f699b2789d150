"""Preference-learning scripts of the thirteenth blind split: learning to rank with LambdaRank, and a reward model
fitted to pairwise preferences (Bradley-Terry).

`lambdarank`: queries of 20 documents with 12 normal features, relevance grades 0 to 4 by quantiles of a random
two-layer teacher's score plus noise 0.3; an MLP scores the documents, and every pair of a query with different grades
is weighted by the |change in NDCG| that swapping the two would bring at the current ranking (RankNet's logistic loss
times |delta NDCG|, gains 2^grade - 1); scored by the held-out mean NDCG@10. `reward_model`: items with 16 normal
features and a hidden reward from a random two-layer teacher; each training pair's preferred item drawn with the
Bradley-Terry probability sigmoid(r(a) - r(b)) and stored as (chosen, rejected); the loss is -log sigmoid(r(chosen) -
r(rejected)); scored by the held-out correlation of the learned reward with the true one (clipped at 0). Bugs: the
pairs oriented by the current scores instead of the grades, |delta NDCG| taken without its absolute value, the gains
linear in the grade; chosen and rejected swapped when batching, the margin taken in absolute value, the first item of
each comparison taken as the chosen one whatever the label, a ReLU left after the reward head.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DOCS = 20
"""Documents per query."""


def _queries(
    g: torch.Generator, teacher: tuple[torch.Tensor, torch.Tensor], n: int
) -> tuple[torch.Tensor, ...]:
    """Features float[n, DOCS, 12] and relevance grades float[n, DOCS] (0 to 4)."""
    x = torch.randn(n, DOCS, 12, generator=g)
    score = torch.tanh(x @ teacher[0]) @ teacher[1] + 0.3 * torch.randn(n, DOCS, generator=g)
    edges = torch.tensor([-0.6, 0.2, 0.9, 1.5])
    return x, torch.bucketize(score / score.std(), edges).float()


def ndcg(scores: torch.Tensor, grades: torch.Tensor, k: int = 10) -> torch.Tensor:
    """NDCG@k float[n] of each query's ranking by `scores` float[n, DOCS] (gains 2^grade - 1)."""
    discount = 1 / torch.log2(torch.arange(2, DOCS + 2).float())[:k]
    gains = 2**grades - 1
    dcg = (gains.gather(1, scores.argsort(1, descending=True)[:, :k]) * discount).sum(1)
    ideal = (gains.sort(1, descending=True).values[:, :k] * discount).sum(1)
    return dcg / ideal.clamp(min=1e-9)


def lambdarank(run: Run) -> None:
    """A LambdaRank MLP of `width` (64), `batch` (16) queries a step, `opt` (Adam; or AdamW, Adagrad, NAdam) at `lr`
    (2e-3). Scored by the held-out mean NDCG@10."""
    g = torch.Generator().manual_seed(run.seed)
    teacher = (torch.randn(12, 24, generator=g) / 12**0.5, torch.randn(24, generator=g))
    x, grades = _queries(g, teacher, 800)
    x_v, grades_v = _queries(g, teacher, 200)
    torch.manual_seed(run.seed)
    width = run.k("width", 64)
    model = nn.Sequential(
        nn.Linear(12, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1)
    )
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 16)

    def mean_ndcg() -> float:
        return float(ndcg(model(x_v).squeeze(2), grades_v).mean())

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        s, rel = model(x[pick]).squeeze(2), grades[pick]
        with torch.no_grad():
            rank = s.argsort(1, descending=True).argsort(1).float()
            inv_discount = 1 / torch.log2(rank + 2)
            gains = rel if run.bug == "gains_linear_in_grade" else 2**rel - 1
            ideal = (
                gains.sort(1, descending=True).values[:, :10] / torch.log2(torch.arange(2, 12).float())
            ).sum(1)
            delta = (gains.unsqueeze(2) - gains.unsqueeze(1)) * (
                inv_discount.unsqueeze(2) - inv_discount.unsqueeze(1)
            )
            delta = delta / ideal.clamp(min=1e-9).view(-1, 1, 1)
            weight = delta if run.bug == "delta_ndcg_not_absolute" else delta.abs()
            order = s if run.bug == "pairs_oriented_by_scores" else rel
            better = (order.unsqueeze(2) > order.unsqueeze(1)).float()
        margin = s.unsqueeze(2) - s.unsqueeze(1)
        loss = (weight * better * F.softplus(-margin)).sum() / better.sum().clamp(min=1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_ndcg10", mean_ndcg):
            break


def _comparisons(
    g: torch.Generator, reward: nn.Module, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Item pairs float[n, 2, 16] and whether the first item was preferred float[n]."""
    pairs = torch.randn(n, 2, 16, generator=g)
    with torch.no_grad():
        r = reward(pairs).squeeze(2)
    return pairs, (torch.rand(n, generator=g) < torch.sigmoid(r[:, 0] - r[:, 1])).float()


def reward_model(run: Run) -> None:
    """A reward MLP of `width` (128), `batch` (64) comparisons a step, `opt` (AdamW; or Adam, RMSprop, Nesterov
    SGD) at `lr` (1e-3), linear warm-up over the first `warmup` (0) steps. Scored by the held-out correlation of the
    rewards."""
    g = torch.Generator().manual_seed(run.seed)
    teacher = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))
    with torch.no_grad():
        for p in teacher.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.7)
        teacher[2].weight.mul_(1.5)
    pairs, first_won = _comparisons(g, teacher, 6000)
    chosen = torch.where(first_won.view(-1, 1) > 0, pairs[:, 0], pairs[:, 1])
    rejected = torch.where(first_won.view(-1, 1) > 0, pairs[:, 1], pairs[:, 0])
    if run.bug == "first_item_taken_as_chosen":
        chosen, rejected = pairs[:, 0], pairs[:, 1]
    items_v = torch.randn(1000, 16, generator=g)
    with torch.no_grad():
        reward_v = teacher(items_v).squeeze(1)
    torch.manual_seed(run.seed)
    width = run.k("width", 128)
    layers = [nn.Linear(16, width), nn.GELU(), nn.Linear(width, width), nn.GELU(), nn.Linear(width, 1)]
    if run.bug == "relu_after_reward_head":
        layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    opt = optimizers.registered(run, model, 1e-3, "adamw")
    warmup = run.k("warmup", 0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / warmup)) if warmup else None
    batch = run.k("batch", 64)

    def correlation() -> float:
        r = model(items_v).squeeze(1)
        return max(0.0, float(torch.corrcoef(torch.stack([r, reward_v]))[0, 1].nan_to_num(0.0)))

    for step in range(run.steps):
        pick = run.indices(len(chosen), batch)
        good, bad = chosen[pick], rejected[pick]
        if run.bug == "chosen_and_rejected_swapped":
            good, bad = bad, good
        margin = model(good).squeeze(1) - model(bad).squeeze(1)
        if run.bug == "margin_taken_absolute":
            margin = margin.abs()
        loss = -F.logsigmoid(margin).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_reward_correlation", correlation):
            break
