"""Relational scripts of the third blind split: TransE knowledge-graph embeddings, a GRU4Rec-style session
recommender, a PointNet / Deep Sets classifier of point clouds.

`transe`: entity and relation embeddings, ||h + r - t|| with a margin ranking loss against corrupted tails,
entities renormalised to the unit sphere each step, SGD; scored by filtered-free hits@10 of held-out triples.
`gru4rec`: item embeddings through a GRU, the output layer tied to the input embeddings, a sampled softmax over
the batch's targets plus uniform negatives (logQ-free); scored by recall@1 of the next item. `pointnet`: a shared per-point MLP with BatchNorm, a masked max-pool
over the real points of each cloud, a classifier; scored by accuracy. Bugs: the margin loss's target sign
reversed, padding_idx on a real item, the output embeddings untied by a copy, the first cloud's mask applied to every cloud, BatchNorm fed batches of two.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3 import data
from benchmarks.detection.blind3.harness import close_step


class TransE(nn.Module):
    def __init__(self, entities: int, relations: int, d: int = 32) -> None:
        super().__init__()
        self.ent = nn.Embedding(entities, d)
        self.rel = nn.Embedding(relations, d)
        bound = 6 / d**0.5
        nn.init.uniform_(self.ent.weight, -bound, bound)
        nn.init.uniform_(self.rel.weight, -bound, bound)
        with torch.no_grad():
            self.rel.weight.div_(self.rel.weight.norm(dim=1, keepdim=True))

    def forward(self, h: torch.Tensor, r: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        # a distance: lower is more plausible
        return (self.ent(h) + self.rel(r) - self.ent(t)).norm(p=1, dim=-1)


def transe(run: Run) -> None:
    """TransE on a knowledge graph (120 entities, 6 relations): L1 distance, MarginRankingLoss (margin 1) of each
    triple against a corrupted tail, entities renormalised every step, SGD (lr 1.0), batch 128. Scored by hits@10
    of held-out triples' tails."""
    g = torch.Generator().manual_seed(run.seed)
    triples = data.knowledge_graph(g)
    triples = triples[torch.randperm(len(triples), generator=g)]
    val, train = triples[:100], triples[100:]
    torch.manual_seed(run.seed)
    model = TransE(120, 6)
    opt = torch.optim.SGD(model.parameters(), lr=run.k("lr", 1.0))
    margin = nn.MarginRankingLoss(margin=1.0)
    # the distance of the true triple must be the smaller one: target -1 (x1 < x2); +1 is the bug
    target = 1.0 if run.bug == "margin_target_sign_reversed" else -1.0
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def hits_at_10() -> float:
        h, r, t = val.T
        d = (model.ent(h)[:, None] + model.rel(r)[:, None] - model.ent.weight[None]).norm(p=1, dim=-1)
        rank = (d < d.gather(1, t[:, None])).sum(1)
        return float((rank < 10).float().mean())

    for step in range(run.steps):
        h, r, t = train[run.indices(len(train), 128)].T
        fake = torch.randint(0, 120, t.shape, generator=run.gen)
        with torch.no_grad():
            model.ent.weight.div_(model.ent.weight.norm(dim=1, keepdim=True))
        pos, neg = model(h, r, t), model(h, r, fake)
        loss = margin(pos, neg, torch.full_like(pos, target))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_hits10", hits_at_10):
            break


class GRU4Rec(nn.Module):
    def __init__(
        self, items: int = 200, d: int = 48, *, padding_idx: int | None = None, untie: bool = False
    ) -> None:
        super().__init__()
        self.emb = nn.Embedding(items, d, padding_idx=padding_idx)
        self.gru = nn.GRU(d, d, batch_first=True)
        self.out_bias = nn.Parameter(torch.zeros(items))
        # tied output embeddings; the bug copies them into a new parameter, which trains apart from the input ones
        self.out_weight = nn.Parameter(self.emb.weight.detach().clone()) if untie else self.emb.weight

    def forward(self, seq: torch.Tensor) -> torch.Tensor:
        h, _ = self.gru(self.emb(seq))
        return h  # [B, L, d]

    def scores(self, h: torch.Tensor, items: torch.Tensor | None = None) -> torch.Tensor:
        w = self.out_weight if items is None else self.out_weight[items]
        b = self.out_bias if items is None else self.out_bias[items]
        return h @ w.T + b


def gru4rec(run: Run) -> None:
    """A GRU4Rec-style next-item recommender (200 items, Zipf popularity): GRU over item embeddings tied to the
    output layer, a sampled softmax over the batch's targets and 64 uniform negatives, Adam (lr 3e-3), batch 64.
    Scored by recall@1 of the next item after 9 held-out session items."""
    g = torch.Generator().manual_seed(run.seed)
    sess = data.sessions(g, 4000)
    val, sess = sess[:500], sess[500:]
    torch.manual_seed(run.seed)
    # the bug: padding_idx=0 copied from a tutorial whose ids start at 1; here item 0 is the most popular item
    model = GRU4Rec(padding_idx=0 if run.bug == "padding_idx_on_real_item" else None,
                    untie=run.bug == "tied_weights_broken_by_copy")  # fmt: skip
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def recall_at_1() -> float:
        s = model.scores(model(val[:, :-1])[:, -1])
        return float((s.argmax(1) == val[:, -1]).float().mean())

    for step in range(run.steps):
        b = sess[run.indices(len(sess), 64)]
        h = model(b[:, :-1]).reshape(-1, model.emb.embedding_dim)
        target = b[:, 1:].reshape(-1)
        cand = torch.cat([target.unique(), torch.randint(0, 200, (64,), generator=run.gen)]).unique()
        logits = model.scores(h, cand)
        loss = F.cross_entropy(logits, torch.searchsorted(cand, target))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_recall1", recall_at_1):
            break


class PointNet(nn.Module):
    def __init__(self, k: int = 4) -> None:
        super().__init__()
        self.point = nn.Sequential(nn.Conv1d(3, 32, 1), nn.BatchNorm1d(32), nn.ReLU(), nn.Conv1d(32, 64, 1),
                                   nn.BatchNorm1d(64), nn.ReLU())  # fmt: skip
        self.head = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, k))

    def forward(self, pts: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        f = self.point(pts.transpose(1, 2))  # [B, 64, N]
        f = f.masked_fill(~mask[:, None, :], float("-inf"))
        return self.head(f.max(2).values)


def pointnet(run: Run) -> None:
    """A PointNet / Deep Sets classifier of point clouds with 16-32 points (zero padded): a shared per-point MLP with
    BatchNorm, a max-pool over the real points, Adam (lr 2e-3), batch 32. Scored by held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    pts, lengths, y = data.point_clouds(g, 2400)
    mask = torch.arange(pts.shape[1])[None, :] < lengths[:, None]
    pv, mv, yv, pts, mask, y = pts[:400], mask[:400], y[:400], pts[400:], mask[400:], y[400:]
    torch.manual_seed(run.seed)
    model = PointNet()
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 2e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = 2 if run.bug == "batchnorm_batches_of_two" else run.k("batch", 32)  # the bug: "to fit in memory"
    for step in range(run.steps):
        i = run.indices(len(y), batch)
        # the bug: the padding mask built from the batch's first cloud and broadcast over the whole batch
        m = mask[i][:1].expand(len(i), -1) if run.bug == "first_cloud_mask_broadcast" else mask[i]
        loss = F.cross_entropy(model(pts[i], m), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", lambda: accuracy(model(pv, mv), yv)):
            break
