"""Compression and mixed-precision scripts of the fifth blind split: a quantisation-aware MLP with fake-quantised
weights and activations trained by a hand-written Lion optimizer, a small CNN pruned by magnitude with masks under
SGD with polynomial decay, a Perceiver-style latent cross-attention classifier under float16 autocast with a
hand-written loss scale.

`fakequant`: 8-bit symmetric fake quantisation (per-tensor scale max|w| / 127, straight-through gradients) of every
weight and activation; scored by held-out accuracy of the quantised model. `pruned_cnn`: magnitude pruning to 50%
then 80% of each convolution's weights at steps 100 and 200, the masks kept by zeroing the pruned weights after
every step and their gradients before it; scored by accuracy. `perceiver`: 8 latents cross-attend to a set of
points, one latent self-attention block, mean-pooled classifier; the loss multiplied by 1024 before backward, the
gradients divided by it, a step skipped (and the scale halved) on overflow; scored by accuracy. Bugs: the quantiser's
scale fixed at step 0, the quantiser without its straight-through estimator, Lion stepping by the update's magnitude instead of its sign, the masks applied to the
gradients only, the gradients never unscaled.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind5 import data


class Lion(torch.optim.Optimizer):
    """Lion (Chen et al. 2023): the sign of an interpolation of momentum and gradient, decoupled weight decay."""

    def __init__(self, params: Iterable[nn.Parameter], lr: float = 1e-4, betas: tuple[float, float] = (0.9, 0.99),
                 weight_decay: float = 0.0, *, use_sign: bool = True) -> None:  # fmt: skip
        super().__init__(params, {"lr": lr, "betas": betas, "weight_decay": weight_decay})
        self.use_sign = use_sign

    @torch.no_grad()
    def step(self, closure: None = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                m = self.state[p].setdefault("exp_avg", torch.zeros_like(p))
                update = m * b1 + p.grad * (1 - b1)
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(update.sign() if self.use_sign else update, alpha=-group["lr"])
                m.mul_(b2).add_(p.grad, alpha=1 - b2)


def fake_quant(x: torch.Tensor, scale: torch.Tensor, *, ste: bool = True) -> torch.Tensor:
    """Symmetric 8-bit fake quantisation with a straight-through gradient (`ste`; without it, round's zero
    gradient is what flows back)."""
    q = torch.clamp(torch.round(x / scale), -127, 127) * scale
    return x + (q - x).detach() if ste else q


class QuantMLP(nn.Module):
    def __init__(self, *, frozen_scale: bool = False, ste: bool = True) -> None:
        super().__init__()
        self.ste = ste
        self.layers = nn.ModuleList([nn.Linear(20, 96), nn.Linear(96, 96), nn.Linear(96, 6)])
        self.frozen_scale = frozen_scale
        self.scales: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for k, layer in enumerate(self.layers):
            if k not in self.scales or not self.frozen_scale:
                # the bug: the observer runs once ("calibrated on the first batch") and is never updated
                self.scales[k] = (
                    layer.weight.detach().abs().max() / 127,
                    x.detach().abs().max() / 127 + 1e-8,
                )
            ws, xs = self.scales[k]
            x = F.linear(
                fake_quant(x, xs, ste=self.ste), fake_quant(layer.weight, ws, ste=self.ste), layer.bias
            )
            if k < len(self.layers) - 1:
                x = F.relu(x)
        return x


def fakequant(run: Run) -> None:
    """Quantisation-aware training of an MLP classifier (8-bit fake-quant weights and activations) with a
    hand-written Lion (lr `lr`, 3e-4, weight decay 0.1) or AdamW, cosine decay, batch `batch` (128). Scored by the
    quantised model's accuracy on 500 held-out samples (clean labels)."""
    g = torch.Generator().manual_seed(run.seed)
    x, y, _ = data.noisy_labels(g, 4500, noise=0.0)
    xv, yv, x, y = x[:500], y[:500], x[500:], y[500:]
    torch.manual_seed(run.seed)
    model = QuantMLP(
        frozen_scale=run.bug == "quant_scale_frozen_at_step_0", ste=run.bug != "no_straight_through"
    )
    if run.k("opt", "lion") == "adamw":
        opt: torch.optim.Optimizer = torch.optim.AdamW(
            model.parameters(), lr=run.k("lr", 2e-3), weight_decay=0.01
        )
    else:
        opt = Lion(model.parameters(), lr=run.k("lr", 3e-4), weight_decay=0.1,
                   use_sign=run.bug != "lion_update_magnitude")  # fmt: skip
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps)
    batch = run.k("batch", 128)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", lambda: accuracy(model(xv), yv)):
            break


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(1, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1),
                                    nn.Conv2d(32, 32, 3, padding=1)])  # fmt: skip
        self.bns = nn.ModuleList([nn.BatchNorm2d(16), nn.BatchNorm2d(32), nn.BatchNorm2d(32)])
        self.fc = nn.Linear(32, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.bns[0](self.convs[0](x)))
        h = F.max_pool2d(h, 2)
        h = F.relu(self.bns[1](self.convs[1](h)))
        h = h + F.relu(self.bns[2](self.convs[2](h)))  # a residual block
        return self.fc(h.mean((2, 3)))


def rasterise(pts: torch.Tensor, size: int = 12) -> torch.Tensor:
    """Point sets float[n, points, >=2] drawn as occupancy images float[n, 1, size, size]."""
    idx = ((pts[..., :2].clamp(-1.5, 1.5) + 1.5) / 3 * (size - 1)).round().long()
    img = torch.zeros(len(pts), size * size)
    img.scatter_add_(1, idx[..., 1] * size + idx[..., 0], torch.ones(idx.shape[:2]))
    return img.reshape(-1, 1, size, size).clamp(max=2)


def pruned_cnn(run: Run) -> None:
    """A small residual CNN on rasterised point shapes, pruned by weight magnitude to 50% at step 100 and 80% at
    step 200 (masks per convolution); SGD (lr `lr`, 0.05, momentum 0.9, weight decay 5e-4) with polynomial decay
    (power 2), batch 64. Scored by accuracy on 400 held-out images."""
    g = torch.Generator().manual_seed(run.seed)
    pts, y = data.point_sets(g, 2400)
    x = rasterise(pts)
    xv, yv, x, y = x[:400], y[:400], x[400:], y[400:]
    torch.manual_seed(run.seed)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=run.k("lr", 0.05), momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=run.steps, power=2.0)
    masks = {c: torch.ones_like(c.weight) for c in model.convs}
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        if step in (100, 200):
            for conv in model.convs:
                w = conv.weight.detach().abs()
                masks[conv] = (w > w.flatten().quantile(0.5 if step == 100 else 0.8)).float()
                if run.bug == "mask_on_gradients_only" and step == 100:
                    run.took_effect(step)
        i = run.indices(len(y), 64)
        loss = F.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        for conv in model.convs:
            assert conv.weight.grad is not None
            conv.weight.grad.mul_(masks[conv])
        opt.step()
        sched.step()
        if run.bug != "mask_on_gradients_only":
            with torch.no_grad():
                for conv in model.convs:
                    conv.weight.mul_(masks[conv])
        if not close_step(run, step, loss, model, "val_accuracy", lambda: accuracy(model(xv), yv)):
            break


class Perceiver(nn.Module):
    def __init__(self, d: int = 32, latents: int = 8, classes: int = 5) -> None:
        super().__init__()
        self.inp = nn.Linear(4, d)
        self.latents = nn.Parameter(torch.randn(1, latents, d) * 0.5)
        self.cross = nn.MultiheadAttention(d, 1, batch_first=True)
        self.self_attn = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(d, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = self.inp(x)
        q = self.latents.expand(len(x), -1, -1)
        z = q + self.cross(q, e, e, need_weights=False)[0]
        return self.head(self.self_attn(z).mean(1))


def perceiver(run: Run) -> None:
    """A Perceiver-style classifier of point sets under float16 autocast on CPU with a hand-written dynamic loss
    scale (1024, halved on overflow, doubled after 100 clean steps); SGD (lr `lr`, 0.05, momentum 0.9) with
    gradient clipping by global norm `clip` (none), batch 32. Scored by accuracy on 400 held-out sets."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.point_sets(g, 2400)
    xv, yv, x, y = x[:400], y[:400], x[400:], y[400:]
    torch.manual_seed(run.seed)
    model = Perceiver()
    opt = torch.optim.SGD(model.parameters(), lr=run.k("lr", 0.05), momentum=0.9)
    scale, clean, clip = 1024.0, 0, run.k("clip", None)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(y), 32)
        with torch.autocast("cpu", dtype=torch.float16):
            loss = F.cross_entropy(model(x[i]).float(), y[i])
        opt.zero_grad()
        (loss * scale).backward()
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        if run.bug != "gradients_never_unscaled":
            for gr in grads:
                gr.div_(scale)
        if all(torch.isfinite(gr).all() for gr in grads):
            if clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            clean += 1
            if clean == 100:
                scale, clean = scale * 2, 0
        else:
            scale, clean = scale / 2, 0
        if not close_step(run, step, loss, model, "val_accuracy", lambda: accuracy(model(xv), yv)):
            break
