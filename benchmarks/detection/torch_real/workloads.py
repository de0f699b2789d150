"""The workloads of the realistic PyTorch suite: one function per kind of training job.

Each takes a `loop.Ctx` (seed, knobs, bug, hook) and trains through the hook: classifiers (MLP,
CNN with BatchNorm, ResNet, transformer, GRU/LSTM/IRNN), a language model, recommenders
(matrix factorisation with plain SGD, a neural recommender, an EmbeddingBag two-tower, sparse
embeddings), a GAN with two optimizers, autoencoders and a VAE, REINFORCE and actor-critic on a
contextual bandit, fine-tuning with frozen parts, multi-task learning, regression, a noisy binary
task, distillation and contrastive learning. Knobs choose the optimizer, scheduler and the
variations; a bug changes the one line a published bug report describes (see `suite.py`).
Parameter names are what such scripts call them (`tok`, `user`, `item`, `rnn`, `head`), never
hints for the rules.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.torch_real import data, likelihoods, noisy_objectives
from benchmarks.detection.torch_real.loop import (
    Ctx,
    accuracy,
    class_mean_accuracy,
    fit,
    make_optimizer,
    make_scheduler,
    nt_xent,
    sampler,
)


def _opt(ctx: Ctx, params: object, default: str, lr: float, **kw: object) -> torch.optim.Optimizer:
    return make_optimizer(ctx.k("opt", default), params, ctx.k("lr", lr), weight_decay=ctx.k("wd", 0.0), **kw)  # type: ignore[arg-type]


def _schedule(ctx: Ctx, opt: torch.optim.Optimizer, default: str = "constant", lr: float = 0.0):  # type: ignore[no-untyped-def]
    return make_scheduler(ctx.k("sched", default), opt, ctx.steps, lr=ctx.k("lr", lr), warmup=ctx.k("warmup", 50),
                          per_batch_bug=ctx.bug == "sched_per_batch")  # fmt: skip


ACTS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "none": nn.Identity,
    "leaky_relu": nn.LeakyReLU, "silu": nn.SiLU,
}  # fmt: skip


class MLP(nn.Module):
    """Hidden layers `layers.N` (Linear, optional norm, activation, optional dropout) and a `head`."""

    def __init__(self, d_in: int, hidden: tuple[int, ...], d_out: int, *, act: str = "relu", norm: str | None = None,
                 dropout: float = 0.0, out_act: nn.Module | None = None) -> None:  # fmt: skip
        super().__init__()
        blocks: list[nn.Module] = []
        for width in hidden:
            parts: list[nn.Module] = [nn.Linear(d_in, width)]
            if norm == "batch":
                parts.append(nn.BatchNorm1d(width))
            elif norm == "layer":
                parts.append(nn.LayerNorm(width))
            parts.append(ACTS[act]())
            if dropout:
                parts.append(nn.Dropout(dropout))
            blocks.append(nn.Sequential(*parts))
            d_in = width
        self.layers = nn.Sequential(*blocks)
        self.head = nn.Linear(d_in, d_out)
        self.out_act = out_act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.head(self.layers(x))
        return self.out_act(out) if self.out_act is not None else out


def _init(model: nn.Module, how: str, scale: float = 1.0) -> None:
    """He, Glorot or all-zero init of every Linear kernel (biases 0), times `scale`; "default" keeps PyTorch's."""
    if how == "default":
        return
    for m in model.modules():
        if isinstance(m, nn.Linear):
            if how == "zeros":
                nn.init.zeros_(m.weight)
            elif how == "he":
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            else:
                nn.init.xavier_normal_(m.weight)
            m.weight.data.mul_(scale)
            nn.init.zeros_(m.bias)


# --- classifiers ---------------------------------------------------------------------------------------------------
def mlp_classifier(ctx: Ctx) -> None:
    """A tabular MLP classifier (mixture or rings data); most optimizer/scheduler/precision variants and bugs."""
    g = torch.Generator().manual_seed(ctx.seed)
    k = 3 if ctx.k("data", "mixture") == "rings" else 10
    (x, y), (xv, yv) = data.rings(g) if k == 3 else data.mixture(g, n=ctx.k("n", 6000) + 512)
    if ctx.bug in ("tiny_trainset", "tiny_shuffled"):
        x, y = x[:128], y[:128]
    if ctx.bug in (
        "shuffled_labels",
        "tiny_shuffled",
    ):  # inputs and labels shuffled by two different permutations
        y = y[torch.randperm(len(y), generator=g)]
    if ctx.bug == "x1000":  # raw features in their original units: nothing normalised them
        x, xv = x * 1000 + 500, xv * 1000 + 500
    act = "none" if ctx.bug == "no_activations" else ctx.k("act", "relu")
    out_act: nn.Module | None = None
    if ctx.bug == "softmax_before_ce":
        out_act = nn.Softmax(dim=1)
    elif ctx.bug == "relu_on_logits":
        out_act = nn.ReLU()
    dropout = 0.95 if ctx.bug == "dropout_keep_prob" else ctx.k("dropout", 0.0)
    model = MLP(x.shape[1], ctx.k("hidden", (64, 64)), k, act=act, norm=ctx.k("norm", None), dropout=dropout,
                out_act=out_act)  # fmt: skip
    _init(model, "zeros" if ctx.bug == "zero_init" else ctx.k("init", "default"), ctx.k("init_scale", 1.0))
    opt = _opt(ctx, model.parameters(), "adam", 2e-3)
    smoothing = ctx.k("label_smoothing", 0.0)
    if ctx.bug == "nll_raw_logits":

        def loss_fn(out: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return F.nll_loss(out, t)  # log_softmax left out
    elif ctx.bug == "sum_reduction":

        def loss_fn(out: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return F.cross_entropy(out, t, reduction="sum")
    else:

        def loss_fn(out: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return F.cross_entropy(out.float(), t, label_smoothing=smoothing)

    batch = sampler(ctx, (x, y), ctx.k("batch", 64))
    fit(ctx, model, opt, batch, loss_fn, val=(xv, yv), score=lambda: accuracy(model, xv, yv),
        schedule=_schedule(ctx, opt, lr=2e-3), clip=ctx.k("clip", None), accum=ctx.k("accum", 1),
        amp=ctx.k("amp", None), classify=True)  # fmt: skip


def curriculum(ctx: Ctx) -> None:
    """An MLP trained on the easiest third of the data (nearest its class mean) first, all of it from a third
    of the run on: the loss jumps up at the switch and falls again."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = data.mixture(g, n=6512)
    means = torch.stack([x[y == c].mean(0) for c in range(10)])
    easy = (x - means[y]).norm(dim=1) < (x - means[y]).norm(dim=1).quantile(0.33)
    model = MLP(32, (64, 64), 10)
    opt = _opt(ctx, model.parameters(), "momentum", 0.05)
    easy_batch, full_batch = sampler(ctx, (x[easy], y[easy]), 64), sampler(ctx, (x, y), 64)
    switch = ctx.steps // 3
    count = [0]

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        count[0] += 1
        return easy_batch() if count[0] <= switch else full_batch()

    fit(
        ctx,
        model,
        opt,
        batch,
        F.cross_entropy,
        val=(xv, yv),
        score=lambda: accuracy(model, xv, yv),
        classify=True,
    )


class ConvNet(nn.Module):
    """Two conv-BatchNorm-ReLU-pool stages and a small dense head."""

    def __init__(self, k: int = 10, width: int = 8, norm: bool = True) -> None:
        super().__init__()

        def bn(c: int) -> nn.Module:
            return nn.BatchNorm2d(c) if norm else nn.Identity()

        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), bn(width), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), bn(2 * width), nn.ReLU(), nn.MaxPool2d(2),
        )  # fmt: skip
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(2 * width * 9, 32), nn.ReLU(), nn.Dropout(0.2),
                                        nn.Linear(32, k))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class Block(nn.Module):
    """A basic residual block (two 3x3 conv + BatchNorm around an identity shortcut)."""

    def __init__(self, c: int, zero_init: bool) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        if zero_init:
            nn.init.zeros_(self.bn2.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


class ResNet(nn.Module):
    def __init__(self, k: int = 10, c: int = 8, zero_init: bool = True) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
        self.stage1 = nn.Sequential(Block(c, zero_init), nn.MaxPool2d(2), Block(c, zero_init))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(self.stage1(self.stem(x))).flatten(1))


def convnet(ctx: Ctx) -> None:
    """A CNN with BatchNorm (or a small ResNet, knob `resnet`) on noisy 12x12 images."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = data.images(g)
    torch.manual_seed(ctx.seed)
    model: nn.Module = ResNet(zero_init=ctx.k("zero_init", True)) if ctx.k("resnet", False) else ConvNet()
    opt = _opt(ctx, model.parameters(), "momentum", 0.02)
    fit(ctx, model, opt, sampler(ctx, (x, y), 32), F.cross_entropy, val=(xv, yv),
        score=lambda: accuracy(model, xv, yv), schedule=_schedule(ctx, opt, lr=0.02), amp=ctx.k("amp", None), classify=True)  # fmt: skip


def image_pipeline(ctx: Ctx) -> None:
    """An image classifier fed from uint8 pixels through the usual pipeline: random horizontal flips and, from
    step `aug_from` (after two warm-up epochs by default), a random brightness shift per image in uint8, then
    scaling to [0, 1] and per-channel normalisation with the training set's mean and std. A CNN with BatchNorm,
    without (`norm` False) or a small ResNet (`resnet`). Bugs: `uint8_overflow`, the shifted pixels cast back to
    uint8 without clamping (dark pixels shifted down wrap around to bright ones); `double_normalisation`, the
    data set already yields normalised tensors and the loop scales and normalises them again (the validation
    data too, which goes through the same data set)."""
    g = torch.Generator().manual_seed(ctx.seed)
    (pixels, y), (pv, yv) = data.pixel_images(g)
    scaled = pixels.float() / 255
    mean = scaled.mean((0, 2, 3)).view(1, 3, 1, 1)
    std = scaled.std((0, 2, 3)).view(1, 3, 1, 1)

    def to_input(p: torch.Tensor) -> torch.Tensor:
        x = (p.float() / 255 - mean) / std
        return (x / 255 - mean) / std if ctx.bug == "double_normalisation" else x

    xv = to_input(pv)
    size, jitter, aug_from = ctx.k("batch", 32), ctx.k("jitter", 32), ctx.k("aug_from", 100)
    drawn = [0]

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        i = torch.randint(0, len(pixels), (size,), generator=ctx.gen)
        p, t = pixels[i], y[i]
        flip = torch.rand(size, generator=ctx.gen) < 0.5
        p = torch.where(flip[:, None, None, None], p.flip(3), p)
        if drawn[0] >= aug_from:
            moved = p.short() + torch.randint(-jitter, jitter + 1, (size, 1, 1, 1), generator=ctx.gen)
            p = (moved if ctx.bug == "uint8_overflow" else moved.clamp(0, 255)).to(torch.uint8)
        drawn[0] += 1
        return to_input(p), t

    torch.manual_seed(ctx.seed)
    model: nn.Module = ResNet() if ctx.k("resnet", False) else ConvNet(norm=ctx.k("norm", True))
    opt = _opt(ctx, model.parameters(), "momentum", 0.02)
    fit(ctx, model, opt, batch, F.cross_entropy, val=(xv, yv), score=lambda: accuracy(model, xv, yv),
        schedule=_schedule(ctx, opt, lr=ctx.k("lr", 0.02)), classify=True)  # fmt: skip


class SeqTransformer(nn.Module):
    """Token embedding `tok`, learned positions `pos`, a transformer encoder, and a `head` (per token for a
    language model, over the mean for classification)."""

    def __init__(self, vocab: int, seq: int, k: int, *, width: int = 32, layers: int = 1, causal: bool = False,
                 norm_first: bool = True, tie: bool = False) -> None:  # fmt: skip
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        if tie:  # a table shared with the output layer gets a small init (GPT-2's 0.02), not N(0, 1)
            nn.init.normal_(self.tok.weight, 0, 0.02)
        self.pos = nn.Parameter(0.02 * torch.randn(seq, width))
        layer = nn.TransformerEncoderLayer(width, 4, 2 * width, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=norm_first)  # fmt: skip
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, k)
        if tie:
            self.head.weight = self.tok.weight
        self.causal = causal
        if causal:
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.tok(x) + self.pos[: x.shape[1]]
        h = self.encoder(h, mask=self.mask, is_causal=True) if self.causal else self.encoder(h)
        h = self.norm(h)
        return self.head(h if self.causal else h.mean(1))


def transformer_classifier(ctx: Ctx) -> None:
    """A transformer classifying token sequences: AdamW, warmup + cosine, label smoothing."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = data.token_classes(g)
    torch.manual_seed(ctx.seed)
    model = SeqTransformer(20, 12, 4)
    opt = _opt(ctx, model.parameters(), "adamw", 3e-3)
    sched = _schedule(ctx, opt, "warmup_cosine", 3e-3)
    fit(ctx, model, opt, sampler(ctx, (x, y), 32), lambda o, t: F.cross_entropy(o, t, label_smoothing=0.1),
        val=(xv, yv), score=lambda: accuracy(model, xv, yv), schedule=sched, clip=ctx.k("clip", 1.0),
        amp=ctx.k("amp", None), classify=True)  # fmt: skip


def language_model(ctx: Ctx) -> None:
    """A GPT-style causal language model on noisy counting sequences (a transformer, or an LSTM with `rnn`)."""
    vocab, seq = 32, 16
    torch.manual_seed(ctx.seed)
    model: nn.Module
    if ctx.k("rnn", False):
        model = RecurrentLM(vocab)
    else:
        model = SeqTransformer(
            vocab, seq, vocab, causal=True, tie=ctx.k("tie", False), norm_first=ctx.k("pre_norm", True)
        )
    opt = _opt(ctx, model.parameters(), "adamw", 3e-3)
    sched = _schedule(ctx, opt, "warmup_cosine", 3e-3)
    xv, yv = data.counting(torch.Generator().manual_seed(10_000 + ctx.seed), 128, vocab=vocab, seq=seq)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        return data.counting(ctx.gen, 16, vocab=vocab, seq=seq)

    def loss_fn(out: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(out.reshape(-1, vocab).float(), t.reshape(-1))

    fit(ctx, model, opt, batch, loss_fn, val=(xv, yv), score=lambda: accuracy(model, xv, yv), schedule=sched,
        clip=ctx.k("clip", 1.0), amp=ctx.k("amp", None), classify=True)  # fmt: skip


class RecurrentLM(nn.Module):
    def __init__(self, vocab: int, width: int = 32) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.rnn = nn.LSTM(width, width, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(self.tok(x))[0])


class RecurrentClassifier(nn.Module):
    """Embedding, a GRU / LSTM / IRNN (ReLU RNN with identity-initialised recurrent matrix), a head on the last state."""

    def __init__(self, vocab: int, k: int, kind: str, width: int = 32) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, 16)
        self.kind = kind
        if kind == "irnn":
            self.rnn: nn.Module = nn.RNN(16, width, nonlinearity="relu", batch_first=True)
            nn.init.eye_(self.rnn.weight_hh_l0)
            nn.init.normal_(self.rnn.weight_ih_l0, 0, 0.001**0.5)
            nn.init.zeros_(self.rnn.bias_hh_l0)
            nn.init.zeros_(self.rnn.bias_ih_l0)
        else:
            self.rnn = (nn.GRU if kind == "gru" else nn.LSTM)(16, width, batch_first=True)
        self.head = nn.Linear(width, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(self.tok(x))[0][:, -1])


def recurrent_classifier(ctx: Ctx) -> None:
    """A GRU, LSTM or IRNN classifying token sequences, with gradient clipping."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = data.token_classes(g)
    torch.manual_seed(ctx.seed)
    model = RecurrentClassifier(20, 4, ctx.k("cell", "gru"))
    opt = _opt(ctx, model.parameters(), "adam", 3e-3)
    fit(ctx, model, opt, sampler(ctx, (x, y), 32), F.cross_entropy, val=(xv, yv),
        score=lambda: accuracy(model, xv, yv), schedule=_schedule(ctx, opt, lr=3e-3), clip=ctx.k("clip", 1.0), classify=True)  # fmt: skip


# --- recommenders --------------------------------------------------------------------------------------------------
def _auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    if not torch.isfinite(scores).all():
        return 0.0
    order = scores.argsort()
    ranks = torch.empty_like(scores).index_copy_(
        0, order, torch.arange(1, len(scores) + 1, dtype=scores.dtype)
    )
    pos = labels > 0.5
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / max(n_pos * n_neg, 1))


class MatrixFactorisation(nn.Module):
    """User and item tables (`user`, `item`) and item biases; the score is their dot product plus the bias."""

    def __init__(self, users: int, items: int, dim: int = 16, sparse: bool = False) -> None:
        super().__init__()
        self.user = nn.Embedding(users, dim, sparse=sparse)
        self.item = nn.Embedding(items, dim, sparse=sparse)
        self.item_bias = nn.Embedding(items, 1, sparse=sparse)
        for table in (self.user, self.item):
            nn.init.normal_(table.weight, 0, 0.1)
        nn.init.zeros_(self.item_bias.weight)

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        u, i = pairs[:, 0], pairs[:, 1]
        return (self.user(u) * self.item(i)).sum(1) + self.item_bias(i).squeeze(1)


class NeuralRecommender(nn.Module):
    """Embeddings for users and items concatenated into an MLP (neural collaborative filtering)."""

    def __init__(self, users: int, items: int, dim: int = 16) -> None:
        super().__init__()
        self.user = nn.Embedding(users, dim)
        self.item = nn.Embedding(items, dim)
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([self.user(pairs[:, 0]), self.item(pairs[:, 1])], 1)).squeeze(1)


class TwoTower(nn.Module):
    """Users as an EmbeddingBag over a few "history" items, items as a table; a dot product scores them."""

    def __init__(self, users: int, items: int, dim: int = 16) -> None:
        super().__init__()
        self.history = nn.EmbeddingBag(items, dim, mode="mean")
        self.user = nn.Embedding(users, dim)
        self.item = nn.Embedding(items, dim)
        self.items = items

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        u, i = pairs[:, 0], pairs[:, 1]
        hist = (u.unsqueeze(1) * 7 + torch.arange(3)) % self.items  # a fixed pseudo-history per user
        return ((self.history(hist) + self.user(u)) * self.item(i)).sum(1)


def recommender(ctx: Ctx) -> None:
    """Implicit-feedback recommenders with BCE: matrix factorisation (plain SGD, many rows never sampled),
    a neural recommender, a two-tower model with an EmbeddingBag, sparse embeddings with SparseAdam."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = data.interactions(g)
    torch.manual_seed(ctx.seed)
    kind = ctx.k("model", "mf")
    if kind == "mf":
        model: nn.Module = MatrixFactorisation(150, 300, sparse=ctx.k("sparse", False))
    elif kind == "ncf":
        model = NeuralRecommender(150, 300)
    else:
        model = TwoTower(150, 300)
    opt = _opt(ctx, model.parameters(), "sgd", 1.0)
    fit(ctx, model, opt, sampler(ctx, (x, y), ctx.k("batch", 128)), F.binary_cross_entropy_with_logits,
        val=(xv, yv), score=lambda: _auc(model.eval()(xv), yv))  # fmt: skip


# --- generative and reinforcement learning -------------------------------------------------------------------------
def gan(ctx: Ctx) -> None:
    """A GAN on 8 Gaussians: generator and discriminator MLPs, two optimizers (the discriminator's learning rate
    twice the generator's), losses `d_loss` and `g_loss`; non-saturating BCE or hinge losses."""
    torch.manual_seed(ctx.seed)
    gen_net = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
    disc = nn.Sequential(
        nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)
    )
    lr = ctx.k("lr", 1e-3)
    d_lr = lr * ctx.k("d_ratio", 2.0) * (100 if ctx.bug == "d_lr_x100" else 1)
    d_opt = torch.optim.Adam(disc.parameters(), lr=d_lr, betas=(0.5, 0.999))
    g_opt = torch.optim.Adam(gen_net.parameters(), lr=lr, betas=(0.5, 0.999))
    hook = ctx.hook
    hook.register_module(
        nn.ModuleDict({"discriminator": disc, "generator": gen_net})
    )  # one namespace for both
    hook.register_optimizer(d_opt)
    hook.register_optimizer(g_opt)  # the hook counts steps on the first one and ignores this one
    z_val = torch.randn(512, 8, generator=torch.Generator().manual_seed(ctx.seed + 99))
    hinge = ctx.k("loss", "bce") == "hinge"
    ones, zeros = torch.ones(64, 1), torch.zeros(64, 1)
    for step in range(ctx.steps):
        real = data.ring_of_gaussians(ctx.gen, 64)
        fake = gen_net(torch.randn(64, 8, generator=ctx.gen))
        d_opt.zero_grad()
        if hinge:
            d_loss = F.relu(1 - disc(real)).mean() + F.relu(1 + disc(fake.detach())).mean()
        else:
            d_loss = F.binary_cross_entropy_with_logits(disc(real), ones) + \
                F.binary_cross_entropy_with_logits(disc(fake.detach()), zeros)  # fmt: skip
        d_loss.backward()
        hook.record_scalar("d_loss", d_loss)
        d_opt.step()
        g_opt.zero_grad()
        g_out = disc(fake)
        g_loss = -g_out.mean() if hinge else F.binary_cross_entropy_with_logits(g_out, ones)
        g_loss.backward()
        hook.record_scalar("g_loss", g_loss)
        g_opt.step()
        ctx.oracle(step, lambda: data.gan_score(gen_net(z_val)))
        if not ctx.note_loss(step, float(d_loss.detach())):
            break


class Autoencoder(nn.Module):
    def __init__(self, variational: bool) -> None:
        super().__init__()
        self.variational = variational
        self.encoder = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16 if variational else 8))
        self.decoder = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 32))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.encoder(x)
        if not self.variational:
            return self.decoder(h), torch.zeros(())
        mu, logvar = h.chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp() if self.training else mu
        kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1).mean()
        return self.decoder(z), kl


def autoencoder(ctx: Ctx) -> None:
    """An MLP autoencoder (MSE) or a VAE (MSE + KL) on points of a curved 4-D manifold in 32-D."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, _), (xv, _) = data.manifold(g)
    torch.manual_seed(ctx.seed)
    model = Autoencoder(ctx.k("vae", False))
    opt = _opt(ctx, model.parameters(), "adam", 2e-3)

    def loss_fn(out: tuple[torch.Tensor, torch.Tensor], t: torch.Tensor) -> torch.Tensor:
        recon, kl = out
        return F.mse_loss(recon, t) + 0.01 * kl

    def score() -> float:
        model.eval()
        return max(0.0, 1.0 - float(F.mse_loss(model(xv)[0], xv)))  # data are standardised: 1 - MSE/var

    fit(ctx, model, opt, sampler(ctx, (x, x), 64), loss_fn, val=(xv, xv), score=score,
        schedule=_schedule(ctx, opt, lr=2e-3),
        extra=(lambda out, t: {"kl": out[1]}) if ctx.k("vae", False) else None)  # fmt: skip


def policy_gradient(ctx: Ctx) -> None:
    """REINFORCE with a running-mean baseline (or actor-critic with a value head) on a contextual bandit. The
    loss, -log pi(a) * advantage, is as often negative as positive."""
    g = torch.Generator().manual_seed(ctx.seed)
    bandit = data.Bandit(g)
    torch.manual_seed(ctx.seed)
    critic = ctx.k("critic", False)
    body = nn.Sequential(nn.Linear(8, 64), nn.Tanh())
    policy = nn.Linear(64, 4)
    value = nn.Linear(64, 1)
    model = nn.ModuleDict({"body": body, "policy": policy, **({"value": value} if critic else {})})
    opt = _opt(ctx, model.parameters(), "adam", 3e-3)
    hook = ctx.hook
    hook.register_module(model)
    hook.register_optimizer(opt)
    val_ctx = bandit.contexts(torch.Generator().manual_seed(ctx.seed + 7), 512)
    baseline = 0.0

    def score() -> float:
        greedy = policy(body(val_ctx)).argmax(1)
        return float(bandit.rewards(val_ctx).gather(1, greedy[:, None]).mean())

    for step in range(ctx.steps):
        c = bandit.contexts(ctx.gen, 64)
        h = body(c)
        dist = torch.distributions.Categorical(logits=policy(h))
        a = dist.sample()
        r = bandit.rewards(c).gather(1, a[:, None]).squeeze(1) + 0.1 * torch.randn(64, generator=ctx.gen)
        opt.zero_grad()
        if critic:
            v = value(h).squeeze(1)
            adv = (r - v).detach()
            loss = -(dist.log_prob(a) * adv).mean() + 0.5 * F.mse_loss(v, r) - 0.01 * dist.entropy().mean()
        else:
            loss = -(dist.log_prob(a) * (r - baseline)).mean()
            baseline = 0.9 * baseline + 0.1 * float(r.mean())
        loss.backward()
        hook.record_scalar("loss", loss)
        hook.record_scalar("reward", r.mean())
        opt.step()
        ctx.oracle(step, score)
        if not ctx.note_loss(step, float(loss.detach())):
            break


# --- transfer, multi-task and other objectives ---------------------------------------------------------------------
def _pretrained_backbone(seed: int) -> nn.Sequential:
    """A backbone trained briefly (without the hook) on a related task: the same mixture's first five classes."""
    g = torch.Generator().manual_seed(seed)
    (x, y), _ = data.mixture(g, n=3512)
    torch.manual_seed(seed + 1)
    backbone = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
    head = nn.Linear(64, 10)
    opt = torch.optim.Adam([*backbone.parameters(), *head.parameters()], lr=3e-3)
    keep = y < 5
    x, y = x[keep], y[keep]
    for _ in range(150):
        i = torch.randint(0, len(x), (64,), generator=g)
        opt.zero_grad()
        F.cross_entropy(head(backbone(x[i])), y[i]).backward()
        opt.step()
    return backbone


class FineTuned(nn.Module):
    def __init__(self, backbone: nn.Module, k: int, *, detach: bool, lora: bool) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(64, k)
        self.detach = detach
        self.lora_a = nn.Parameter(0.01 * torch.randn(64, 4)) if lora else None
        self.lora_b = nn.Parameter(torch.zeros(4, 64)) if lora else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.backbone(x)
        if self.lora_a is not None and self.lora_b is not None:
            h = h + h @ self.lora_a @ self.lora_b
        return self.head(h.detach() if self.detach else h)


def finetune(ctx: Ctx) -> None:
    """Fine-tuning a pretrained backbone on the full 10-class task: frozen (requires_grad False), with LoRA
    adapters on a frozen backbone, or all of it with a 10x smaller learning rate for the backbone."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = data.mixture(g, n=6512)
    backbone = _pretrained_backbone(ctx.seed)
    mode = ctx.k("mode", "discriminative")
    if mode in ("frozen", "lora"):
        for p in backbone.parameters():
            p.requires_grad_(False)
    model = FineTuned(backbone, 10, detach=ctx.bug == "detach_backbone", lora=mode == "lora")
    lr = ctx.k("lr", 2e-3)
    if ctx.bug == "stale_head":  # the optimizer was built, then the head was replaced by a fresh one
        opt = torch.optim.Adam(model.head.parameters(), lr=lr)
        model.head = nn.Linear(64, 10)
    elif mode == "discriminative":
        groups = [
            {"params": backbone.parameters(), "lr": lr / 10},
            {"params": model.head.parameters(), "lr": lr},
        ]
        opt = torch.optim.Adam(groups, lr=lr)
    else:
        opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    fit(ctx, model, opt, sampler(ctx, (x, y), 64), F.cross_entropy, val=(xv, yv),
        score=lambda: accuracy(model, xv, yv), classify=True)  # fmt: skip


class MultiTask(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.cls_head = nn.Linear(64, 10)
        self.reg_head = nn.Linear(64, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(x)
        return self.cls_head(h), self.reg_head(h).squeeze(1)


def multitask(ctx: Ctx) -> None:
    """One trunk, a classification head and a regression head (the distance to the class centre); the loss is
    their weighted sum, and each task's loss is recorded too."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = data.mixture(g, n=6512)
    means = torch.stack([x[y == c].mean(0) for c in range(10)])
    target = (x - means[y]).norm(dim=1)
    target = (target - target.mean()) / target.std()
    torch.manual_seed(ctx.seed)
    model = MultiTask()
    opt = _opt(ctx, model.parameters(), "adam", 2e-3)

    def loss_fn(out: tuple[torch.Tensor, torch.Tensor], t: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return F.cross_entropy(out[0], t[0]) + 0.5 * F.mse_loss(out[1], t[1])

    def parts(
        out: tuple[torch.Tensor, torch.Tensor], t: tuple[torch.Tensor, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        return {"loss_cls": F.cross_entropy(out[0], t[0]), "loss_reg": F.mse_loss(out[1], t[1])}

    pairs = sampler(ctx, (x, torch.arange(len(x))), 64)

    def batch() -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        xb, i = pairs()
        return xb, (y[i], target[i])

    vt = (yv, torch.zeros(len(yv)))
    fit(ctx, model, opt, batch, loss_fn, val=(xv, vt), score=lambda: accuracy_of_first(model, xv, yv),
        schedule=_schedule(ctx, opt, lr=2e-3), extra=parts)  # fmt: skip


def accuracy_of_first(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    return float((model(x)[0].argmax(1) == y).float().mean())


def regression(ctx: Ctx) -> None:
    """An MLP regressor (MSE or Huber). Bug `mse_broadcast`: predictions [B, 1] against targets [B] broadcast to
    [B, B], so the model learns only the mean (PyTorch warns once; the warning is easy to miss)."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = data.regression(g)
    torch.manual_seed(ctx.seed)
    model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = _opt(ctx, model.parameters(), "momentum", 0.01)
    base = F.huber_loss if ctx.k("loss", "mse") == "huber" else F.mse_loss
    squeeze = ctx.bug != "mse_broadcast"

    def loss_fn(out: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return base(out.squeeze(1) if squeeze else out, t)

    def score() -> float:
        model.eval()
        return max(0.0, 1.0 - float(F.mse_loss(model(xv).squeeze(1), yv)))

    fit(ctx, model, opt, sampler(ctx, (x, y), 64), loss_fn, val=(xv, yv), score=score,
        schedule=_schedule(ctx, opt, lr=0.01))  # fmt: skip


def binary(ctx: Ctx) -> None:
    """Logistic regression or an MLP on a noisy binary task (Bayes-optimal loss about 0.49), BCE with logits;
    `pos_weight` for an imbalanced variant. Bug `double_sigmoid`: the model ends in a sigmoid and the loss
    applies another one."""
    g = torch.Generator().manual_seed(ctx.seed)
    signal = ctx.k("signal", 1.2)
    (x, y), (xv, yv) = data.noisy_binary(g, signal=signal)
    torch.manual_seed(ctx.seed)
    layers: list[nn.Module] = (
        [nn.Linear(16, 1)] if ctx.k("linear", True) else [nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)]
    )
    if ctx.bug == "double_sigmoid":
        layers.append(nn.Sigmoid())
    model = nn.Sequential(*layers)
    opt = _opt(ctx, model.parameters(), "sgd", 0.1)

    def loss_fn(out: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(out.squeeze(1), t)

    def score() -> float:
        model.eval()
        return float(
            ((model(xv).squeeze(1) > (0.5 if ctx.bug == "double_sigmoid" else 0.0)).float() == yv)
            .float()
            .mean()
        )

    fit(ctx, model, opt, sampler(ctx, (x, y), 64), loss_fn, val=(xv, yv), score=score,
        schedule=_schedule(ctx, opt, lr=0.1))  # fmt: skip


def distillation(ctx: Ctx) -> None:
    """A small student learning from a larger teacher's softened outputs (KL at temperature 2) plus the labels."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = data.mixture(g, n=6512)
    torch.manual_seed(ctx.seed)
    teacher = MLP(32, (128, 128), 10)
    t_opt = torch.optim.Adam(teacher.parameters(), lr=3e-3)
    for _ in range(150):  # the teacher is trained first, without the hook
        i = torch.randint(0, len(x), (128,), generator=g)
        t_opt.zero_grad()
        F.cross_entropy(teacher(x[i]), y[i]).backward()
        t_opt.step()
    teacher.eval()
    student = MLP(32, (32,), 10)
    opt = _opt(ctx, student.parameters(), "adam", 3e-3)

    def loss_fn(out: torch.Tensor, t: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        soft, labels = t
        kd = F.kl_div(F.log_softmax(out / 2, 1), soft, reduction="batchmean") * 4
        return 0.5 * kd + 0.5 * F.cross_entropy(out, labels)

    draw = sampler(ctx, (x, y), 64)

    def batch() -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        xb, yb = draw()
        with torch.no_grad():
            return xb, (F.softmax(teacher(xb) / 2, 1), yb)

    with torch.no_grad():
        val_soft = F.softmax(teacher(xv) / 2, 1)
    fit(ctx, student, opt, batch, loss_fn, val=(xv, (val_soft, yv)), score=lambda: accuracy(student, xv, yv))


def contrastive(ctx: Ctx) -> None:
    """SimCLR-style contrastive learning: two noisy views of each sample, InfoNCE at temperature 0.2; scored by
    nearest-class-mean accuracy of the embeddings."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = data.mixture(g, n=6512)
    torch.manual_seed(ctx.seed)
    encoder = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))
    opt = _opt(ctx, encoder.parameters(), "adam", 2e-3)
    draw = sampler(ctx, (x, y), 64)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        xb, _ = draw()
        n1 = 0.5 * torch.randn(xb.shape, generator=ctx.gen)
        n2 = 0.5 * torch.randn(xb.shape, generator=ctx.gen)
        return torch.cat([xb + n1, xb + n2]), torch.zeros(())

    val_pair = (torch.cat([xv[:128], xv[:128] + 0.5 * torch.randn(128, 32, generator=g)]), torch.zeros(()))
    fit(ctx, encoder, opt, batch, lambda out, _: nt_xent(out, 0.2), val=val_pair,
        score=lambda: class_mean_accuracy(encoder, (x[:1000], y[:1000]), (xv, yv), 10))  # fmt: skip


WORKLOADS: dict[str, Callable[[Ctx], None]] = {
    "mlp": mlp_classifier, "curriculum": curriculum, "conv": convnet, "images": image_pipeline,
    "transformer": transformer_classifier, "lm": language_model, "rnn": recurrent_classifier, "recommender": recommender, "gan": gan,
    "autoencoder": autoencoder, "policy": policy_gradient, "finetune": finetune, "multitask": multitask,
    "regression": regression, "binary": binary, "distill": distillation, "contrastive": contrastive,
}  # fmt: skip
WORKLOADS.update(noisy_objectives.WORKLOADS)
"""Workload name -> its function."""
WORKLOADS.update(likelihoods.WORKLOADS)
