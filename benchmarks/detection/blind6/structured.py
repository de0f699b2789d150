"""Structured-model scripts of the sixth blind split: a top-k mixture of experts with a load-balancing loss, a graph
network for link prediction with negative sampling, a small transformer over tokens with layer-wise learning-rate
decay, and a segmentation network trained with cross-entropy plus Dice.

`moe`: a router picks the top `k` of four MLP experts per input (gates renormalised over the chosen ones) and a
load-balancing term (experts x sum of dispatch share x mean router probability) is added to the MSE; scored by R^2
on held-out inputs. `link_gnn`: a two-layer GCN over the training edges of a community graph, a dot-product
decoder, BCE on sampled training edges against random node pairs; scored by AUC of held-out edges against
held-out non-edges. `tokens`: a two-layer transformer encoder with learned positions and mean pooling classifies
token sequences by counts and order, under AdamW with its rate decayed by depth from the head down (or a plateau
scheduler on the validation loss); scored by held-out accuracy. `segmentation`: a small dilated CNN labels each
pixel as background, disc or square; masks drawn at twice the resolution are brought to the image size by
nearest-neighbour resizing; scored by the mean IoU of the disc and the square on held-out images. Bugs: the
balancing term's sign flipped, the sampled non-edges labelled 1, the held-out edges left in the message-passing
graph, the layer-wise decay inverted (the head slowest), a plateau scheduler in mode 'max' fed the training loss,
the positions never added, the one-hot masks reshaped instead of permuted, the masks resized bilinearly.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind6 import data


class TopKMoE(nn.Module):
    def __init__(self, k: int, experts: int = 4) -> None:
        super().__init__()
        self.k = k
        self.router = nn.Linear(8, experts)
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)) for _ in range(experts)]
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        probs = F.softmax(self.router(x), 1)
        top, idx = probs.topk(self.k, 1)
        gates = top / top.sum(1, keepdim=True)
        outs = torch.cat([e(x) for e in self.experts], 1)
        y = (outs.gather(1, idx) * gates).sum(1)
        share = F.one_hot(idx[:, 0], len(self.experts)).float().mean(0)
        balance = len(self.experts) * (share * probs.mean(0)).sum()
        return y, balance


def moe(run: Run) -> None:
    """A top-`k` (2) mixture of four experts on a region-dependent regression, MSE + `coef` (0.01) x the balancing
    term; Adam (lr `lr`, 2e-3) or AdamW (`opt`), batch `batch` (128). Scored by R^2 on 1000 held-out inputs."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.regions(g, 7000)
    xv, yv, x, y = x[:1000], y[:1000], x[1000:], y[1000:]
    torch.manual_seed(run.seed)
    model = TopKMoE(run.k("k", 2))
    lr = run.k("lr", 2e-3)
    if run.k("opt", "adam") == "adamw":
        opt: torch.optim.Optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.05)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr)
    coef, batch = run.k("coef", 0.01), run.k("batch", 128)
    sign = -1.0 if run.bug == "balance_loss_sign_flipped" else 1.0
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(y), batch)
        pred, balance = model(x[i])
        loss = F.mse_loss(pred, y[i]) + sign * coef * balance
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(model(xv)[0], yv)):
            break


class GCN(nn.Module):
    def __init__(self, adj: torch.Tensor, hidden: int) -> None:
        super().__init__()
        a = adj + adj.T + torch.eye(len(adj))
        d = a.sum(1).rsqrt()
        self.register_buffer("a_hat", d[:, None] * a * d[None, :])
        self.l1, self.l2 = nn.Linear(16, hidden), nn.Linear(hidden, hidden)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a_hat @ self.l2(self.act(self.a_hat @ self.l1(x)))


def link_gnn(run: Run) -> None:
    """Link prediction on a 200-node community graph: a sixth of the edges held out; a two-layer GCN (hidden
    `hidden`, 32) over the rest, dot-product scores, BCE with logits on 128 training edges and 128 random node
    pairs a step; Adam (lr `lr`, 0.01) or Adagrad (`opt`, lr 0.05). Scored by AUC of the held-out edges against as
    many non-edges."""
    g = torch.Generator().manual_seed(run.seed)
    feats, edges, non = data.community_graph(g)
    n_val = len(edges) // 6
    val_pos, train_pos, val_neg = edges[:n_val], edges[n_val:], non[:n_val]
    graph = edges if run.bug == "validation_edges_in_message_graph" else train_pos
    adj = torch.zeros(len(feats), len(feats))
    adj[graph[:, 0], graph[:, 1]] = 1.0
    torch.manual_seed(run.seed)
    model = GCN(adj, run.k("hidden", 32))
    if run.k("opt", "adam") == "adagrad":
        opt: torch.optim.Optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 0.01))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def pair_scores(z: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
        return (z[pairs[:, 0]] * z[pairs[:, 1]]).sum(1)

    def score() -> float:
        z = model(feats)
        return auc(torch.cat([pair_scores(z, val_pos), pair_scores(z, val_neg)]),
                   torch.cat([torch.ones(n_val), torch.zeros(n_val)]))  # fmt: skip

    for step in range(run.steps):
        z = model(feats)
        pos = train_pos[run.indices(len(train_pos), 128)]
        neg = torch.randint(0, len(feats), (128, 2), generator=run.gen)
        logits = torch.cat([pair_scores(z, pos), pair_scores(z, neg)])
        if run.bug == "negatives_labelled_positive":
            labels = torch.ones(256)
        else:
            labels = torch.cat([torch.ones(128), torch.zeros(128)])
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", score):
            break


class TokenTransformer(nn.Module):
    def __init__(self, *, positions: bool = True) -> None:
        super().__init__()
        self.emb = nn.Embedding(16, 32)
        self.pos = nn.Parameter(0.02 * torch.randn(12, 32))
        self.positions = positions
        self.layers = nn.ModuleList(
            [nn.TransformerEncoderLayer(32, 2, 64, dropout=0.0, batch_first=True) for _ in range(2)]
        )
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.emb(x)
        if self.positions:
            h = h + self.pos
        for layer in self.layers:
            h = layer(h)
        return self.head(self.norm(h).mean(1))


def tokens(run: Run) -> None:
    """A two-layer transformer encoder (d 32, 2 heads) on 12-token sequences, AdamW (lr `lr`, 2e-3, weight decay
    0.05) with the rate multiplied by `decay` (0.8) per level below the head (layers, then embeddings), batch 64;
    with `plateau`, ReduceLROnPlateau (factor 0.5, patience 2) stepped with the validation loss every 25 steps.
    Scored by accuracy on 500 held-out sequences."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.token_sequences(g, 6500)
    xv, yv, x, y = x[:500], y[:500], x[500:], y[500:]
    torch.manual_seed(run.seed)
    model = TokenTransformer(positions=run.bug != "positional_embedding_never_added")
    lr, decay = run.k("lr", 2e-3), run.k("decay", 0.8)
    levels = [[model.head, model.norm], [model.layers[1]], [model.layers[0]], [model.emb]]
    if run.bug == "layerwise_decay_inverted":
        levels = levels[::-1]
    groups = [{"params": [p for m in ms for p in m.parameters()], "lr": lr * decay**depth}
              for depth, ms in enumerate(levels)]  # fmt: skip
    groups[-1 if run.bug != "layerwise_decay_inverted" else 0]["params"].append(model.pos)
    opt = torch.optim.AdamW(groups, lr=lr, weight_decay=0.05)
    plateau = None
    if run.k("plateau", False):
        mode = "max" if run.bug == "plateau_max_on_training_loss" else "min"
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode=mode, factor=0.5, patience=2)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    recent: list[float] = []
    for step in range(run.steps):
        i = run.indices(len(y), 64)
        loss = F.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        recent = (recent + [loss.item()])[-25:]
        if plateau is not None and run.validating(step):
            if run.bug == "plateau_max_on_training_loss":
                plateau.step(sum(recent) / len(recent))
                if opt.param_groups[0]["lr"] < lr:
                    run.took_effect(step)
            else:
                with torch.no_grad():
                    model.eval()
                    plateau.step(float(F.cross_entropy(model(xv), yv)))
                    model.train()
        if not close_step(run, step, loss, model, "val_accuracy", lambda: accuracy(model(xv), yv)):
            break


def dice_loss(probs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """1 - the mean over classes of the soft Dice over the batch (smoothed by 1)."""
    inter = (probs * target).sum((0, 2, 3))
    return 1 - ((2 * inter + 1) / (probs.sum((0, 2, 3)) + target.sum((0, 2, 3)) + 1)).mean()


def segmentation(run: Run) -> None:
    """A dilated CNN (1-16-16-16-3, dilations 1, 2, 4) labelling 12x12 images, cross-entropy + Dice on softmax
    probabilities and one-hot masks; Adam (lr 3e-3), AdamW with batch 16 (`opt` adamw) or Nesterov SGD (`opt` sgd,
    lr 0.05) under polynomial decay; batch `batch` (32). Scored by the mean IoU of the disc and the square on 300
    held-out images."""
    g = torch.Generator().manual_seed(run.seed)
    img, big = data.shapes(g, 2300)
    mode = "bilinear" if run.bug == "mask_downsampled_bilinear" else "nearest"
    kw = {"align_corners": False} if mode == "bilinear" else {}
    mask = F.interpolate(big[:, None].float(), size=img.shape[-1], mode=mode, **kw)[:, 0].long()
    mask_v = F.interpolate(big[:300, None].float(), size=img.shape[-1], mode="nearest")[:, 0].long()
    xv, x, mask = img[:300], img[300:], mask[300:]
    torch.manual_seed(run.seed)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=2, dilation=2), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=4, dilation=4), nn.ReLU(),
        nn.Conv2d(16, 3, 1),
    )  # fmt: skip
    kind = run.k("opt", "adam")
    sched = None
    if kind == "sgd":
        opt: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
        sched = torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=run.steps, power=0.9)
    elif kind == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    batch = run.k("batch", 32)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def score() -> float:
        pred = model(xv).argmax(1)
        ious = []
        for c in (1, 2):
            p, t = pred == c, mask_v == c
            ious.append(float((p & t).sum()) / max(1.0, float((p | t).sum())))
        return sum(ious) / 2

    for step in range(run.steps):
        i = run.indices(len(x), batch)
        logits, m = model(x[i]), mask[i]
        if run.bug == "one_hot_reshaped_not_permuted":
            onehot = F.one_hot(m, 3).float().reshape(len(m), 3, *m.shape[1:])
        else:
            onehot = F.one_hot(m, 3).permute(0, 3, 1, 2).float()
        loss = F.cross_entropy(logits, m) + dice_loss(logits.softmax(1), onehot)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_mean_iou", score):
            break
