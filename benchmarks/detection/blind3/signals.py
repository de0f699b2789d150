"""Signal and physics scripts of the third blind split: a WaveNet-style sample model, a quantile forecaster, a
physics-informed network, a mixture density network.

`wavenet`: embedded mu-law codes through gated dilated causal convolutions (dilations 1-8) with residual and skip
paths, next-sample cross-entropy; scored by next-sample accuracy (within one code) after a held-out prefix.
`quantile`: a residual MLP forecaster of the 10/50/90% quantiles of the next 12 values with the pinball loss;
scored by its pinball loss against the window mean's. `pinn`: a tanh residual MLP fitted to a few early
observations of a damped oscillator plus the ODE residual at collocation points (second derivatives by
autograd); scored by 1 - relative L2 error on the whole interval. `mdn`: a mixture density network on the
multi-valued inverse of y + 0.3 sin(2 pi y); scored by held-out log-likelihood. Bugs: the causal padding trimmed
at the wrong end, the pinball residual's sign flipped, a summed loss under an SGD rate tuned for the mean, the
second derivative taken without create_graph, mixture weights normalised over the batch, functional dropout
left on at evaluation.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind2.data import seasonal_series
from benchmarks.detection.blind3 import data
from benchmarks.detection.blind3.harness import close_step


class CausalBlock(nn.Module):
    def __init__(self, ch: int, dilation: int, kernel: int, *, trim_left: bool) -> None:
        super().__init__()
        self.pad, self.trim_left = (kernel - 1) * dilation, trim_left
        self.conv = nn.Conv1d(ch, 2 * ch, kernel, dilation=dilation, padding=self.pad)
        self.res, self.skip = nn.Conv1d(ch, ch, 1), nn.Conv1d(ch, ch, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.conv(x)
        # padding on both sides: keep the first L outputs (causal); the bug keeps the last L (each sees the future)
        h = h[..., self.pad :] if self.trim_left else h[..., : x.shape[-1]]
        a, b = h.chunk(2, 1)
        z = torch.tanh(a) * torch.sigmoid(b)
        return x + self.res(z), self.skip(z)


class WaveNet(nn.Module):
    def __init__(self, levels: int = 16, ch: int = 16, kernel: int = 2, *, trim_left: bool = False) -> None:
        super().__init__()
        self.emb = nn.Embedding(levels, ch)
        self.blocks = nn.ModuleList(CausalBlock(ch, d, kernel, trim_left=trim_left) for d in (1, 2, 4, 8))
        self.head = nn.Sequential(nn.ReLU(), nn.Conv1d(ch, ch, 1), nn.ReLU(), nn.Conv1d(ch, levels, 1))

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        x = self.emb(codes).transpose(1, 2)
        skips = 0
        for block in self.blocks:
            x, s = block(x)
            skips = skips + s
        return self.head(skips)  # [B, levels, L]


def wavenet(run: Run) -> None:
    """A WaveNet-style model of mu-law audio codes: gated dilated causal convolutions, Adam (lr 3e-3), batch 16,
    next-sample cross-entropy. Scored by next-sample accuracy within one code after a 48-sample held-out prefix."""
    g = torch.Generator().manual_seed(run.seed)
    clips = data.waveforms(g, 700)
    val, clips = clips[:150], clips[150:]
    torch.manual_seed(run.seed)
    model = WaveNet(kernel=run.k("kernel", 2), trim_left=run.bug == "causal_trim_wrong_end")
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def next_sample() -> float:
        pred = model(val[:, :48])[:, :, -1].argmax(1)
        return float(((pred - val[:, 48]).abs() <= 1).float().mean())

    for step in range(run.steps):
        x = clips[run.indices(len(clips), 16)]
        loss = F.cross_entropy(model(x[:, :-1]), x[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_next_sample_acc", next_sample):
            break


QUANTILES = torch.tensor([0.1, 0.5, 0.9])


def pinball(pred: torch.Tensor, y: torch.Tensor, *, flipped: bool = False) -> torch.Tensor:
    """The pinball (quantile) loss per element of pred float[B, H, Q] against y float[B, H]."""
    err = pred - y[..., None] if flipped else y[..., None] - pred  # the bug: the residual's sign flipped
    return torch.maximum(QUANTILES * err, (QUANTILES - 1) * err)


class QuantileMLP(nn.Module):
    def __init__(self, window: int = 48, horizon: int = 12, width: int = 96) -> None:
        super().__init__()
        self.horizon = horizon
        self.inp = nn.Linear(window, width)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU())
                                    for _ in range(2))  # fmt: skip
        self.out = nn.Linear(width, horizon * len(QUANTILES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h).view(len(x), self.horizon, len(QUANTILES))


def quantile(run: Run) -> None:
    """A quantile forecaster (10/50/90%) of the next 12 values from 48, each window centred on its mean; a residual
    MLP with the pinball loss, Adam (lr 1e-3) or SGD with momentum (lr 0.02) with OneCycle, batch 256. Scored by
    1 - its pinball loss over the window-mean forecast's on held-out series."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = seasonal_series(g, 4000, level=3.0)
    mean = x.mean(1, keepdim=True)
    x, y = x - mean, y - mean
    xv, yv, x, y = x[:500], y[:500], x[500:], y[500:]
    torch.manual_seed(run.seed)
    model = QuantileMLP()
    sgd = run.k("opt", "adam") == "sgd"
    lr = 0.02 if sgd else 1e-3
    opt = (
        torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        if sgd
        else torch.optim.Adam(model.parameters(), lr)
    )
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=run.steps)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    naive = float(pinball(torch.zeros(len(yv), 12, 3), yv).mean())

    def skill() -> float:
        return max(0.0, 1 - float(pinball(model(xv), yv).mean()) / naive)

    for step in range(run.steps):
        i = run.indices(len(x), 256)
        per = pinball(model(x[i]), y[i], flipped=run.bug == "pinball_residual_flipped")
        loss = per.sum() if run.bug == "sum_reduction_sgd_rate" else per.mean()  # the bug: sum over the batch
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_quantile_skill", skill):
            break


class ResTanh(nn.Module):
    def __init__(self, width: int = 32, depth: int = 3) -> None:
        super().__init__()
        self.inp = nn.Linear(1, width)
        self.hidden = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.out = nn.Linear(width, 1)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.inp(t))
        for lin in self.hidden:
            h = h + torch.tanh(lin(h))
        return self.out(h)


def pinn(run: Run) -> None:
    """A physics-informed network for a damped oscillator observed only over the first 40% of the interval: data MSE
    plus the ODE residual at 256 collocation points (weight 1e-3, the residual scaled by w^2), full batch; Adam
    (lr 3e-3) or Rprop. Scored by 1 - relative L2 error on the whole interval (clipped to [0, 1])."""
    g = torch.Generator().manual_seed(run.seed)
    t_obs, u_obs, colloc, t_grid, u_grid, (zeta, w) = data.oscillator(g)
    torch.manual_seed(run.seed)
    model = ResTanh()
    rprop = run.k("opt", "adam") == "rprop"
    opt = (
        torch.optim.Rprop(model.parameters(), lr=1e-3)
        if rprop
        else torch.optim.Adam(model.parameters(), 3e-3)
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def accuracy_on_grid() -> float:
        err = (model(t_grid) - u_grid).norm() / u_grid.norm()
        return max(0.0, 1 - float(err)) if torch.isfinite(err) else 0.0

    for step in range(run.steps):
        t = colloc.clone().requires_grad_(True)
        u = model(t)
        (u_t,) = torch.autograd.grad(u.sum(), t, create_graph=True)
        # the bug: create_graph left out of the second derivative (retain_graph added to silence the error it raised),
        # so u_tt carries no gradient to the weights
        (u_tt,) = torch.autograd.grad(
            u_t.sum(), t, create_graph=run.bug != "second_derivative_without_graph", retain_graph=True
        )
        residual = (u_tt + 2 * zeta * w * u_t + w**2 * u) / w**2
        loss = F.mse_loss(model(t_obs), u_obs) + run.k("physics", 1.0) * residual.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_rel_l2_score", accuracy_on_grid):
            break


class MDN(nn.Module):
    def __init__(
        self, k: int = 5, width: int = 48, *, eval_dropout: bool = False, dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.k, self.p, self.eval_dropout = k, dropout, eval_dropout
        self.l1, self.l2 = nn.Linear(1, width), nn.Linear(width, width)
        self.out = nn.Linear(width, 3 * k)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = torch.tanh(self.l1(x))
        # the bug: training=True written for "apply dropout", so it also runs at evaluation
        h = F.dropout(h, self.p, training=True if self.eval_dropout else self.training)
        h = torch.tanh(self.l2(h))
        logits, mu, log_sigma = self.out(h).split(self.k, 1)
        return logits, mu, log_sigma.clamp(-7, 3)


def mixture_nll(
    logits: torch.Tensor, mu: torch.Tensor, log_sigma: torch.Tensor, y: torch.Tensor, *, weight_dim: int = 1
) -> torch.Tensor:
    """The negative log-likelihood per row of y float[B, 1] under the Gaussian mixture."""
    log_pi = F.log_softmax(logits, dim=weight_dim)  # weight_dim 0 is the bug: normalised over the batch
    comp = -0.5 * ((y - mu) / log_sigma.exp()) ** 2 - log_sigma - 0.5 * math.log(2 * math.pi)
    return -torch.logsumexp(log_pi + comp, 1)


def mdn(run: Run) -> None:
    """A mixture density network (5 Gaussians) for the inverse of y + 0.3 sin(2 pi y): NLL, Adam (lr 5e-3), batch
    128, dropout 0.1 between the layers. Scored by the held-out log-likelihood, (ll + 1) / 3 clipped to [0, 1]."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.inverse_sine(g, 5000)
    xv, yv, x, y = x[:800], y[:800], x[800:], y[800:]
    torch.manual_seed(run.seed)
    model = MDN(dropout=run.k("dropout", 0.1), eval_dropout=run.bug == "functional_dropout_at_eval")
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 5e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    dim = 0 if run.bug == "mixture_weights_over_batch" else 1

    def loglik() -> float:
        ll = -float(mixture_nll(*model(xv), yv).mean())
        return max(0.0, min(1.0, (ll + 1) / 3)) if math.isfinite(ll) else 0.0

    for step in range(run.steps):
        i = run.indices(len(x), 128)
        loss = mixture_nll(*model(x[i]), y[i], weight_dim=dim).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_loglik_score", loglik):
            break
