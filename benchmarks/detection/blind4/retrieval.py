"""Retrieval and ranking scripts of the fourth blind split: a CLIP-style dual encoder with a learned temperature,
neural collaborative filtering (NeuMF), a listwise / pairwise learning-to-rank model, an ArcFace metric-learning
head.

`clip`: two MLP encoders onto the unit sphere, a symmetric InfoNCE over the batch with a learned logit scale
(clamped at 100), AdamW with a linear warm-up and linear decay; scored by image-to-caption recall@1. `ncf`: GMF and
MLP towers over user and item embeddings, BCE against sampled negatives, a short warm-up; scored by leave-one-out
hits@10 among 50 items. `ranker`: a per-document MLP scorer trained with ListNet or RankNet; scored by NDCG@5.
`arcface`: an MLP embedding, normalised class weights, an additive angular margin and a scale; scored by held-out
accuracy. Bugs: the temperature dividing the logits, the two views shuffled apart, a warm-up counted in samples, a ReLU after the score, the
scale applied twice, the embeddings left unnormalised.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind4 import data


class DualEncoder(nn.Module):
    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.image = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, d))
        self.text = nn.Sequential(nn.Linear(24, 64), nn.GELU(), nn.Linear(64, d))
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, img: torch.Tensor, txt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return F.normalize(self.image(img), dim=-1), F.normalize(self.text(txt), dim=-1)


def clip(run: Run) -> None:
    """A CLIP-style dual encoder of paired views: symmetric cross-entropy over the batch's similarity matrix times
    a learned logit scale (clamped at 100), AdamW (lr 2e-3, weight decay 0.1) with 30 warm-up steps and a linear
    decay, batch `batch` (64). Scored by image-to-caption recall@1 among 200 held-out pairs."""
    g = torch.Generator().manual_seed(run.seed)
    img, txt = data.paired_views(g, 4200)
    iv, tv, img, txt = img[:200], txt[:200], img[200:], txt[200:]
    torch.manual_seed(run.seed)
    model = DualEncoder()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.1)
    warmup = 30
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (run.steps - s) / (run.steps - warmup))
    )
    batch = run.k("batch", 64)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def recall_at_1() -> float:
        a, b = model(iv, tv)
        return accuracy(a @ b.T, torch.arange(len(iv)))

    for step in range(run.steps):
        i = run.indices(len(img), batch)
        # the bug: images and captions drawn by two separately shuffled loaders, so the pairs no longer match
        j = run.indices(len(txt), batch) if run.bug == "views_shuffled_separately" else i
        a, b = model(img[i], txt[j])
        scale = model.logit_scale.clamp(max=math.log(100)).exp()
        # the bug: "divide by the temperature" with the learned parameter being the inverse temperature
        sim = a @ b.T / scale if run.bug == "temperature_divides_logits" else scale * a @ b.T
        labels = torch.arange(len(i))
        loss = (F.cross_entropy(sim, labels) + F.cross_entropy(sim.T, labels)) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_recall1", recall_at_1):
            break


class NeuMF(nn.Module):
    def __init__(self, users: int = 300, items: int = 200, d: int = 16) -> None:
        super().__init__()
        self.gmf_u, self.gmf_i = nn.Embedding(users, d), nn.Embedding(items, d)
        self.mlp_u, self.mlp_i = nn.Embedding(users, d), nn.Embedding(items, d)
        for e in (self.gmf_u, self.gmf_i, self.mlp_u, self.mlp_i):
            nn.init.normal_(e.weight, std=0.1)
        self.mlp = nn.Sequential(nn.Linear(2 * d, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU())
        self.head = nn.Linear(d + 16, 1)

    def forward(self, u: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        gmf = self.gmf_u(u) * self.gmf_i(i)
        mlp = self.mlp(torch.cat([self.mlp_u(u), self.mlp_i(i)], -1))
        return self.head(torch.cat([gmf, mlp], -1)).squeeze(-1)


def ncf(run: Run) -> None:
    """Neural collaborative filtering (NeuMF) on implicit feedback: BCE with logits against 4 uniform negatives
    per positive, Adam (lr `lr`, 2e-3) with a 20-step linear warm-up, batch `batch` (256) positives. Scored by
    hits@10 of each user's held-out latest item among it and 49 fixed random items."""
    g = torch.Generator().manual_seed(run.seed)
    pairs = data.interactions(g).reshape(300, 20, 2)
    test, pairs = pairs[:, -1], pairs[:, :-1].reshape(-1, 2)
    candidates = torch.cat([test[:, 1:], torch.randint(0, 200, (300, 49), generator=g)], 1)
    torch.manual_seed(run.seed)
    model = NeuMF()
    batch = run.k("batch", 256)
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 2e-3))
    # the bug: the config gives the warm-up in samples (20 batches' worth) and the lambda reads it as steps
    warmup = 20 * batch if run.bug == "warmup_counted_in_samples" else 20
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def hits_at_10() -> float:
        users = torch.arange(300)[:, None].expand_as(candidates)
        s = model(users, candidates)
        rank = (s > s[:, :1]).sum(1)
        return float((rank < 10).float().mean())

    for step in range(run.steps):
        pos = pairs[run.indices(len(pairs), batch)]
        neg_items = torch.randint(0, 200, (batch * 4,), generator=run.gen)
        u = torch.cat([pos[:, 0], pos[:, 0].repeat(4)])
        i = torch.cat([pos[:, 1], neg_items])
        target = torch.cat([torch.ones(batch), torch.zeros(batch * 4)])
        loss = F.binary_cross_entropy_with_logits(model(u, i), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_hits10", hits_at_10):
            break


def ndcg_at_5(scores: torch.Tensor, rel: torch.Tensor) -> float:
    """Mean NDCG@5 over queries (gain 2^rel - 1); queries without relevant documents count as 0."""
    disc = 1 / torch.log2(torch.arange(2, 7).float())
    got = (2 ** rel.gather(1, scores.argsort(1, descending=True)[:, :5]) - 1) @ disc
    ideal = (2 ** rel.sort(1, descending=True).values[:, :5] - 1) @ disc
    return float(torch.where(ideal > 0, got / ideal.clamp(min=1e-9), torch.zeros_like(got)).mean())


def ranker(run: Run) -> None:
    """A learning-to-rank MLP scoring each document of a query: ListNet (cross-entropy between the softmax of the
    relevance grades and of the scores) or RankNet (BCE on score differences of the pairs with different grades);
    Adam (lr 2e-3), batch 32 queries. Scored by NDCG@5 on 300 held-out queries."""
    g = torch.Generator().manual_seed(run.seed)
    x, rel = data.queries(g, 2300)
    xv, rv, x, rel = x[:300], rel[:300], x[300:], rel[300:]
    torch.manual_seed(run.seed)
    layers: list[nn.Module] = [nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1)]
    if run.bug == "relu_after_score":
        layers.append(nn.ReLU())  # the bug: "relevance scores are non-negative"
    model = nn.Sequential(*layers)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    listwise = run.k("loss", "listnet") == "listnet"
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        q = run.indices(len(x), 32)
        s, r = model(x[q]).squeeze(-1), rel[q]
        if listwise:
            loss = -(torch.softmax(r, 1) * torch.log_softmax(s, 1)).sum(1).mean()
        else:
            diff = s[:, :, None] - s[:, None, :]
            better = (r[:, :, None] > r[:, None, :]).float()
            pairs = better + better.transpose(1, 2)
            loss = (
                F.binary_cross_entropy_with_logits(diff, better, reduction="none") * pairs
            ).sum() / pairs.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_ndcg5", lambda: ndcg_at_5(model(xv).squeeze(-1), rv)):
            break


class ArcFace(nn.Module):
    def __init__(self, classes: int = 24, d: int = 64, *, normalise: bool = True) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, d))
        self.weight = nn.Parameter(torch.randn(classes, d) * 0.01)
        self.normalise = normalise

    def cosine(self, x: torch.Tensor) -> torch.Tensor:
        e = self.body(x)
        # the bug leaves the embeddings unnormalised ("the weights are normalised, that is enough")
        return F.linear(F.normalize(e, dim=-1) if self.normalise else e, F.normalize(self.weight, dim=-1))


def arcface(run: Run) -> None:
    """An ArcFace head on an MLP embedding of identities: cos(theta + m) for the true class (m 0.3), every logit
    times s (16), cross-entropy; SGD with Nesterov momentum (lr 0.1) or AdamW (lr 2e-3), batch 128. Scored by
    held-out accuracy of the cosine logits."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.identities(g, 4400)
    xv, yv, x, y = x[:400], y[:400], x[400:], y[400:]
    torch.manual_seed(run.seed)
    model = ArcFace(normalise=run.bug != "embeddings_not_normalised")
    if run.k("opt", "nesterov") == "adamw":
        opt: torch.optim.Optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    s, m = 16.0, 0.3
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(x), 128)
        cos = model.cosine(x[i]).clamp(-1 + 1e-6, 1 - 1e-6)
        target = F.one_hot(y[i], cos.shape[1]).bool()
        logits = torch.where(target, torch.cos(torch.acos(cos) + m), cos) * s
        if run.bug == "scale_applied_twice":
            logits = logits * s  # the bug: the loss wrapper scales again what the head already scaled
        loss = F.cross_entropy(logits, y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", lambda: accuracy(model.cosine(xv), yv)):
            break
