"""More workloads of the realistic PyTorch suite: objectives that go below zero, frozen encoders, embeddings
before BatchNorm and a 1-D CNN, each written the way such scripts are usually written.

- `gaussian_regression`: heteroscedastic regression, an MLP predicting a mean and a variance trained with
  `nn.GaussianNLLLoss`; the noise is small, so the loss goes below zero as the variance head learns it.
- `gaussian_vae`: a VAE with a Gaussian decoder whose per-dimension log-scale is learned; the loss is the
  negative ELBO in nats per dimension, negative once the decoder is sharper than unit variance.
- `linear_probe`: a linear head on a frozen pretrained encoder (a CNN or an MLP trained briefly without the
  hook, `requires_grad` off), the head initialised small as linear-probe recipes do.
- `tabular`: categorical columns through embedding tables (Zipf-distributed categories, rare ones seldom
  looked up) concatenated with numeric columns, then Linear-BatchNorm-ReLU blocks.
- `cnn1d`: a 1-D CNN (Conv1d-BatchNorm-ReLU, global average pooling) on noisy periodic signals, SGD with
  Nesterov momentum and weight decay.

Registered into `workloads.WORKLOADS`; the programs are in `suite.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.torch_real import data
from benchmarks.detection.torch_real.loop import Ctx, accuracy, fit, make_optimizer, make_scheduler, sampler


def _opt(ctx: Ctx, params: object, default: str, lr: float) -> torch.optim.Optimizer:
    return make_optimizer(ctx.k("opt", default), params, ctx.k("lr", lr), weight_decay=ctx.k("wd", 0.0))  # type: ignore[arg-type]


def _sched(ctx: Ctx, opt: torch.optim.Optimizer, lr: float):  # type: ignore[no-untyped-def]
    return make_scheduler(ctx.k("sched", "constant"), opt, ctx.steps, lr=ctx.k("lr", lr))


# --- a loss below zero by design -----------------------------------------------------------------------------------
def _heteroscedastic(
    g: torch.Generator, *, n: int = 6000, dim: int = 6, n_val: int = 512
) -> tuple[data.Pair, data.Pair]:
    """y = a smooth function of x plus noise whose scale (0.02 to 0.3) depends on x."""
    x = torch.randn(n, dim, generator=g)
    a = torch.randn(dim, generator=g)
    scale = 0.02 + 0.28 * torch.sigmoid(2 * x[:, 1])
    y = torch.sin(x @ a / 2) + 0.3 * x[:, 0] + scale * torch.randn(n, generator=g)
    return (x[n_val:], y[n_val:]), (x[:n_val], y[:n_val])


class MeanVariance(nn.Module):
    """A trunk and two heads: the mean and (through softplus) the variance."""

    def __init__(self, d_in: int, width: int = 64) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(d_in, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU())
        self.mean = nn.Linear(width, 1)
        self.var = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(x)
        v = self.var(h).squeeze(1)
        return self.mean(h).squeeze(1), F.softplus(v) + 1e-6


def gaussian_regression(ctx: Ctx) -> None:
    """Heteroscedastic regression with `nn.GaussianNLLLoss` (see the module docstring)."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = _heteroscedastic(g)
    torch.manual_seed(ctx.seed)
    model = MeanVariance(x.shape[1])
    opt = _opt(ctx, model.parameters(), "adam", 1e-3)
    nll = nn.GaussianNLLLoss()

    def loss_fn(out: tuple[torch.Tensor, torch.Tensor], t: torch.Tensor) -> torch.Tensor:
        return nll(out[0], t, out[1])

    def score() -> float:
        model.eval()
        return max(0.0, 1.0 - float(F.mse_loss(model(xv)[0], yv) / yv.var()))

    fit(ctx, model, opt, sampler(ctx, (x, y), ctx.k("batch", 128)), loss_fn, val=(xv, yv), score=score,
        schedule=_sched(ctx, opt, 1e-3), clip=ctx.k("clip", None),
        extra=lambda out, t: {"mse": F.mse_loss(out[0], t)})  # fmt: skip


class GaussianVAE(nn.Module):
    """Encoder to (mu, logvar) of 6 latents, decoder to the data's mean and log-scale per dimension."""

    def __init__(self, dim: int = 32, latent: int = 6) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, 128), nn.ReLU(), nn.Linear(128, 2 * dim))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mu, logvar = self.encoder(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp() if self.training else mu
        kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1)
        mean, log_scale = self.decoder(z).chunk(2, dim=1)
        return mean, kl, log_scale.clamp(min=-7)


def gaussian_vae(ctx: Ctx) -> None:
    """A VAE whose loss is the negative ELBO per data dimension (see the module docstring)."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, _), (xv, _) = data.manifold(g)
    x, xv = 0.2 * x, 0.2 * xv  # in the data's own units, not standardised
    torch.manual_seed(ctx.seed)
    model = GaussianVAE(x.shape[1])
    opt = _opt(ctx, model.parameters(), "adamw", 1e-3)

    def loss_fn(out: tuple[torch.Tensor, torch.Tensor, torch.Tensor], t: torch.Tensor) -> torch.Tensor:
        recon, kl, log_scale = out
        loglik = torch.distributions.Normal(recon, log_scale.exp()).log_prob(t).sum(1)
        return -(loglik - kl).mean() / t.shape[1]

    def score() -> float:
        model.eval()
        return max(0.0, 1.0 - float(F.mse_loss(model(xv)[0], xv) / xv.var()))

    fit(ctx, model, opt, sampler(ctx, (x, x), ctx.k("batch", 32)), loss_fn, val=(xv, xv), score=score,
        schedule=_sched(ctx, opt, 1e-3), extra=lambda out, t: {"kl": out[1].mean()})  # fmt: skip


# --- a frozen encoder and a small head -----------------------------------------------------------------------------
class SmallCNN(nn.Module):
    def __init__(self, k: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
        )  # fmt: skip
        self.fc = nn.Linear(128, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))


def _pretrain(model: nn.Module, x: torch.Tensor, y: torch.Tensor, g: torch.Generator, steps: int) -> None:
    """A short supervised pretraining, without the hook, on the first half of the classes."""
    keep = y < 5
    x, y = x[keep], y[keep]
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        i = torch.randint(0, len(x), (64,), generator=g)
        opt.zero_grad()
        F.cross_entropy(model(x[i]), y[i]).backward()
        opt.step()


class Probe(nn.Module):
    """A frozen encoder, its features normalised without affine parameters (as linear-probe recipes do), a head."""

    def __init__(self, encoder: nn.Module, width: int, k: int, init_std: float) -> None:
        super().__init__()
        self.encoder = encoder
        self.norm = nn.BatchNorm1d(width, affine=False)
        self.head = nn.Linear(width, k)
        nn.init.trunc_normal_(self.head.weight, std=init_std)
        nn.init.zeros_(self.head.bias)

    def train(self, mode: bool = True) -> Probe:
        super().train(mode)
        self.encoder.eval()  # frozen: its BatchNorm statistics stay those of pretraining
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            h = self.encoder(x)
        return self.head(self.norm(h))


def linear_probe(ctx: Ctx) -> None:
    """A linear probe on a frozen CNN (images) or MLP (tabular) encoder (see the module docstring)."""
    g = torch.Generator().manual_seed(ctx.seed)
    torch.manual_seed(ctx.seed)
    if ctx.k("encoder", "cnn") == "cnn":
        (x, y), (xv, yv) = data.images(g)
        net: nn.Module = SmallCNN()
        _pretrain(net, x, y, g, 120)
        encoder, width = net.features, 128
    else:
        (x, y), (xv, yv) = data.mixture(g, n=6512)
        net = nn.Sequential(nn.Linear(32, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 10))
        _pretrain(net, x, y, g, 150)
        encoder, width = net[:4], 256
    encoder.eval()
    for p in encoder.parameters():
        p.requires_grad_(False)
    model = Probe(encoder, width, 10, ctx.k("init_std", 0.01))
    opt = _opt(ctx, model.head.parameters(), "momentum", 0.1)
    fit(ctx, model, opt, sampler(ctx, (x, y), ctx.k("batch", 128)), F.cross_entropy, val=(xv, yv),
        score=lambda: accuracy(model, xv, yv), schedule=_sched(ctx, opt, 0.1), classify=True)  # fmt: skip


# --- embeddings before BatchNorm -----------------------------------------------------------------------------------
def _tabular(g: torch.Generator, *, n: int = 20000, cards: tuple[int, ...], numeric: int = 8,
             n_val: int = 1000) -> tuple[data.Pair, data.Pair]:  # fmt: skip
    """Categorical columns (Zipf-distributed codes) and numeric columns; a binary label from both."""
    cols = []
    effect = torch.zeros(n)
    for card in cards:
        p = 1.0 / torch.arange(1, card + 1, dtype=torch.float) ** 1.1
        c = torch.multinomial(p / p.sum(), n, replacement=True, generator=g)
        cols.append(c)
        effect += 0.8 * torch.randn(card, generator=g)[c]
    num = torch.randn(n, numeric, generator=g)
    w = torch.randn(numeric, generator=g) / math.sqrt(numeric)
    logit = effect + num @ w + 0.5 * num[:, 0] * num[:, 1]
    y = (torch.rand(n, generator=g) < torch.sigmoid(1.5 * logit)).float()
    x = torch.cat([torch.stack(cols, 1).float(), num], 1)
    return (x[n_val:], y[n_val:]), (x[:n_val], y[:n_val])


class TabularNet(nn.Module):
    """An embedding table per categorical column, concatenated with the numeric columns, then Linear-BatchNorm-ReLU
    blocks and a logit; `bn_first`: BatchNorm on the concatenated embeddings first, then BatchNorm-Linear-ReLU
    blocks (the layout of fastai's tabular model)."""

    def __init__(self, cards: tuple[int, ...], numeric: int, dim: int = 8, hidden: tuple[int, ...] = (128, 64),
                 bn_first: bool = False) -> None:  # fmt: skip
        super().__init__()
        self.emb = nn.ModuleList(nn.Embedding(c, dim) for c in cards)
        layers: list[nn.Module] = []
        d = dim * len(cards) + numeric
        for width in hidden:
            if bn_first:
                layers += [nn.BatchNorm1d(d), nn.Linear(d, width), nn.ReLU()]
            else:
                layers += [nn.Linear(d, width), nn.BatchNorm1d(width), nn.ReLU()]
            d = width
        self.mlp = nn.Sequential(*layers)
        self.out = nn.Linear(d, 1)
        self.n_cat = len(cards)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        codes = x[:, : self.n_cat].long()
        parts = [e(codes[:, i]) for i, e in enumerate(self.emb)]
        return self.out(self.mlp(torch.cat([*parts, x[:, self.n_cat :]], 1))).squeeze(1)


def tabular(ctx: Ctx) -> None:
    """Embeddings + BatchNorm MLP on a tabular binary task, BCE with logits, scored by AUC."""
    g = torch.Generator().manual_seed(ctx.seed)
    cards = ctx.k("cards", (5000, 800, 60, 12))
    (x, y), (xv, yv) = _tabular(g, cards=cards)
    torch.manual_seed(ctx.seed)
    model = TabularNet(cards, 8, dim=ctx.k("dim", 8), bn_first=ctx.k("bn_first", False))
    opt = _opt(ctx, model.parameters(), "adam", 1e-3)

    from benchmarks.detection.torch_real.workloads import _auc  # here: workloads imports this module

    def score() -> float:
        model.eval()
        return _auc(model(xv), yv)

    fit(ctx, model, opt, sampler(ctx, (x, y), ctx.k("batch", 256)), F.binary_cross_entropy_with_logits,
        val=(xv, yv), score=score, schedule=_sched(ctx, opt, 1e-3))  # fmt: skip


# --- a 1-D CNN -----------------------------------------------------------------------------------------------------
def _signals(
    g: torch.Generator, *, n: int = 4000, length: int = 96, k: int = 6, n_val: int = 500
) -> tuple[data.Pair, data.Pair]:
    """Noisy periodic signals: class c mixes two frequencies of its own with a random phase, plus noise."""
    y = torch.randint(0, k, (n,), generator=g)
    t = torch.arange(length, dtype=torch.float)
    f1 = 0.04 + 0.03 * torch.arange(k, dtype=torch.float)
    f2 = f1 * 1.7
    phase = 2 * math.pi * torch.rand(n, 1, generator=g)
    x = torch.sin(2 * math.pi * f1[y, None] * t + phase) + 0.5 * torch.sin(
        2 * math.pi * f2[y, None] * t + 2 * phase
    )
    x = x + 0.8 * torch.randn(n, length, generator=g)
    return (x[n_val:, None], y[n_val:]), (x[:n_val, None], y[:n_val])


class Conv1dNet(nn.Module):
    def __init__(self, k: int = 6, width: int = 16) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        c = 1
        for w, kernel in ((width, 7), (2 * width, 5), (2 * width, 3)):
            layers += [
                nn.Conv1d(c, w, kernel, padding=kernel // 2),
                nn.BatchNorm1d(w),
                nn.ReLU(),
                nn.MaxPool1d(2),
            ]
            c = w
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool1d(1), nn.Flatten())
        self.classifier = nn.Linear(c, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def cnn1d(ctx: Ctx) -> None:
    """A 1-D CNN classifying signals with Nesterov SGD (see the module docstring)."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = _signals(g)
    torch.manual_seed(ctx.seed)
    model = Conv1dNet()
    opt = _opt(ctx, model.parameters(), "nesterov", 0.05)
    fit(ctx, model, opt, sampler(ctx, (x, y), ctx.k("batch", 64)), F.cross_entropy, val=(xv, yv),
        score=lambda: accuracy(model, xv, yv), schedule=_sched(ctx, opt, 0.05), classify=True)  # fmt: skip


WORKLOADS: dict[str, Callable[[Ctx], None]] = {
    "gaussian_regression": gaussian_regression, "gaussian_vae": gaussian_vae, "linear_probe": linear_probe,
    "tabular": tabular, "cnn1d": cnn1d,
}  # fmt: skip
"""Workload name -> its function (merged into `workloads.WORKLOADS`)."""
