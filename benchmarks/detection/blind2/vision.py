"""Vision and audio scripts of the second blind split: a small ViT, a box regressor with a class head, a CNN
with CutMix, an audio CNN with SpecAugment and mixup, a CNN evaluated through EMA weights, SWA.

`vit`: patch embeddings, a class token, pre-norm transformer layers, AdamW without decay on norms, biases
and embeddings, linear warmup then cosine. `boxes`: a BatchNorm CNN with dropout, smooth L1 on the box plus
cross-entropy on the class, SGD with momentum; scored by half IoU, half accuracy. `cutmix`: NAdam on
textures with CutMix. `audio`: SpecAugment masks and mixup on log-mel spectrograms, SGD with Nesterov
momentum and the linear scaling rule for its learning rate. `ema`: Adam, predictions from an exponential
moving average of the weights (and BatchNorm buffers). `swa`: SGD, a cosine phase then stochastic weight
averaging. Bugs: softmax before the cross-entropy, a huge decay on the no-decay group, model.train() not
called again after validation, the linear scaling rule with integer division.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F
from torch.optim import swa_utils

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind2 import data


class ViT(nn.Module):
    def __init__(self, d: int = 48, patch: int = 4, size: int = 16, k: int = 4, depth: int = 2) -> None:
        super().__init__()
        self.patch = nn.Conv2d(1, d, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, (size // patch) ** 2 + 1, d))
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                d, 4, 2 * d, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
            )
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.patch(x).flatten(2).transpose(1, 2)
        h = torch.cat([self.cls_token.expand(len(h), -1, -1), h], 1) + self.pos_embed
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h[:, 0]))


def vit(run: Run) -> None:
    """A small vision transformer on noisy texture images: AdamW (decay 0.05 on matrices only), 30 warmup steps then
    cosine, optional label smoothing. Scored by validation accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.textures(g, 6000, noise=1.5)
    xv, yv = x[:400], y[:400]
    x, y = x[400:], y[400:]
    torch.manual_seed(run.seed)
    model = ViT()
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embed" not in n and "token" not in n]
    no_decay = [
        p for n, p in model.named_parameters() if not (p.ndim >= 2 and "embed" not in n and "token" not in n)
    ]
    no_decay_wd = 5.0 if run.bug == "no_decay_group_huge_wd" else 0.0  # 5.0 typed into the no-decay group
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                             {"params": no_decay, "weight_decay": no_decay_wd}], lr=run.k("lr", 2e-3))  # fmt: skip
    warmup, steps = 30, run.steps
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: (
            (s + 1) / warmup
            if s < warmup
            else 0.5 * (1 + math.cos(math.pi * (s - warmup) / (steps - warmup)))
        ),
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch, smoothing = run.k("batch", 64), run.k("smoothing", 0.0)
    for step in range(run.steps):
        i = run.indices(len(x), batch)
        logits = model(x[i])
        if run.bug == "softmax_before_cross_entropy":
            logits = logits.softmax(-1)  # CrossEntropyLoss applies log_softmax itself
        loss = F.cross_entropy(logits, y[i], label_smoothing=smoothing)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_acc", accuracy(model(xv), yv), mode="eval")
        if not run.end_step(step, loss.detach(), model, lambda: accuracy(model(xv), yv)):
            break


class BoxNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        )  # fmt: skip
        self.neck = nn.Sequential(nn.Flatten(), nn.Linear(32 * 25, 64), nn.ReLU(), nn.Dropout(0.3))
        self.box = nn.Linear(64, 4)
        self.cls = nn.Linear(64, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.neck(self.features(x))
        return torch.sigmoid(self.box(h)), self.cls(h)


def _iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    lo = torch.maximum(a[:, :2] - a[:, 2:] / 2, b[:, :2] - b[:, 2:] / 2)
    hi = torch.minimum(a[:, :2] + a[:, 2:] / 2, b[:, :2] + b[:, 2:] / 2)
    inter = (hi - lo).clamp(min=0).prod(1)
    return inter / (a[:, 2:].prod(1) + b[:, 2:].prod(1) - inter + 1e-9)


def boxes(run: Run) -> None:
    """Single-object detection: a box (smooth L1, weight 5) and a class (cross-entropy) from a BatchNorm CNN with
    dropout; SGD with momentum, batch 32, a validation pass every 25 steps. Scored by 0.5 mean IoU + 0.5
    accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, box, cls = data.objects(g, 5000)
    xv, bv, cv = x[:400], box[:400], cls[:400]
    x, box, cls = x[400:], box[400:], cls[400:]
    torch.manual_seed(run.seed)
    model = BoxNet()
    opt = torch.optim.SGD(model.parameters(), lr=run.k("lr", 0.03), momentum=0.9, weight_decay=5e-4)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def score() -> float:
        pb, pc = model(xv)
        return 0.5 * float(_iou(pb, bv).mean()) + 0.5 * accuracy(pc, cv)

    for step in range(run.steps):
        i = run.indices(len(x), 32)
        pb, pc = model(x[i])
        loss = 5 * F.smooth_l1_loss(pb, box[i], beta=0.05) + F.cross_entropy(pc, cls[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            model.eval()
            with torch.no_grad():
                run.hook.record_scalar("val_score", score(), mode="eval")
            if run.bug == "train_mode_not_restored":  # model.train() forgotten after validation
                run.took_effect(step + 1)
            else:
                model.train()
        if not run.end_step(step, loss.detach(), model, score):
            break


def _small_cnn(k: int, norm: str = "bn") -> nn.Sequential:
    def norm_layer(c: int) -> nn.Module:
        return nn.BatchNorm2d(c) if norm == "bn" else nn.GroupNorm(4, c)

    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), norm_layer(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), norm_layer(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, k),
    )  # fmt: skip


def cutmix(run: Run) -> None:
    """A small CNN on textures with CutMix (a random box of another image pasted, labels mixed by area, p 0.5);
    NAdam, batch 64. Scored by validation accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.textures(g, 6000, noise=1.0)
    xv, yv = x[:400], y[:400]
    x, y = x[400:], y[400:]
    torch.manual_seed(run.seed)
    model = _small_cnn(4)
    opt = torch.optim.NAdam(model.parameters(), lr=run.k("lr", 2e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    size = x.shape[-1]
    for step in range(run.steps):
        i = run.indices(len(x), 64)
        xb, yb = x[i].clone(), y[i]
        if float(torch.rand(1, generator=run.gen)) < 0.5:
            perm = torch.randperm(len(xb), generator=run.gen)
            lam = float(torch.distributions.Beta(1.0, 1.0).sample())
            cut = int(size * math.sqrt(1 - lam))
            cy, cx = (int(v) for v in torch.randint(0, size, (2,), generator=run.gen))
            y0, y1, x0, x1 = (
                max(cy - cut // 2, 0),
                min(cy + cut // 2, size),
                max(cx - cut // 2, 0),
                min(cx + cut // 2, size),
            )
            xb[:, :, y0:y1, x0:x1] = xb[perm, :, y0:y1, x0:x1]
            lam = 1 - (y1 - y0) * (x1 - x0) / size**2
            out = model(xb)
            loss = lam * F.cross_entropy(out, yb) + (1 - lam) * F.cross_entropy(out, yb[perm])
        else:
            loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_acc", accuracy(model(xv), yv), mode="eval")
        if not run.end_step(step, loss.detach(), model, lambda: accuracy(model(xv), yv)):
            break


def audio(run: Run) -> None:
    """A sound-event classifier on log-mel spectrograms: SpecAugment (one frequency and one time mask) and mixup
    (alpha 0.2); SGD with Nesterov momentum, its rate from the linear scaling rule 0.1 x batch / 256, batch 64,
    cosine decay. Scored by validation accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.spectrograms(g, 3000)
    mean, std = x.mean(), x.std()
    x = (x - mean) / std
    xv, yv = x[:300], y[:300]
    x, y = x[300:], y[300:]
    torch.manual_seed(run.seed)
    model = _small_cnn(5)
    batch = 64
    if run.bug == "lr_integer_division":
        lr = 0.4 * batch // 256  # floor division: 25.6 // 256 == 0.0
    else:
        lr = 0.4 * batch / 256
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=run.steps)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    mels, frames = x.shape[2], x.shape[3]
    for step in range(run.steps):
        i = run.indices(len(x), batch)
        xb, yb = x[i].clone(), y[i]
        f0 = int(torch.randint(0, mels - 3, (1,), generator=run.gen))
        t0 = int(torch.randint(0, frames - 5, (1,), generator=run.gen))
        xb[:, :, f0 : f0 + 3] = 0.0
        xb[:, :, :, t0 : t0 + 5] = 0.0
        lam = float(torch.distributions.Beta(0.2, 0.2).sample())
        perm = torch.randperm(batch, generator=run.gen)
        out = model(lam * xb + (1 - lam) * xb[perm])
        loss = lam * F.cross_entropy(out, yb) + (1 - lam) * F.cross_entropy(out, yb[perm])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_acc", accuracy(model(xv), yv), mode="eval")
        if not run.end_step(step, loss.detach(), model, lambda: accuracy(model(xv), yv)):
            break


def ema(run: Run) -> None:
    """A BatchNorm CNN on noisy textures with Adam (batch 32); predictions come from an exponential moving
    average of the weights and buffers (decay 0.99), which the oracle scores."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.textures(g, 5000, noise=1.3)
    xv, yv = x[:400], y[:400]
    x, y = x[400:], y[400:]
    torch.manual_seed(run.seed)
    model = _small_cnn(4)
    averaged = swa_utils.AveragedModel(
        model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.99), use_buffers=True
    )
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 1e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(x), 32)
        loss = F.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        averaged.update_parameters(model)
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_acc_ema", accuracy(averaged(xv), yv), mode="eval")
        if not run.end_step(step, loss.detach(), averaged, lambda: accuracy(averaged(xv), yv)):
            break


def swa(run: Run) -> None:
    """A GroupNorm CNN on the objects' classes: SGD with momentum, cosine over the first 60% of the steps, then a
    constant SWALR rate with the weights averaged every 5 steps; once averaging starts the averaged model is the
    one kept (and scored)."""
    g = torch.Generator().manual_seed(run.seed)
    x, _, y = data.objects(g, 4000, size=16)
    xv, yv = x[:400], y[:400]
    x, y = x[400:], y[400:]
    torch.manual_seed(run.seed)
    model = _small_cnn(3, norm="gn")
    averaged = swa_utils.AveragedModel(model)
    opt = torch.optim.SGD(model.parameters(), lr=run.k("lr", 0.05), momentum=0.9)
    start = int(0.6 * run.steps)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=start)
    swa_sched = swa_utils.SWALR(opt, swa_lr=0.02, anneal_epochs=10)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    averaging = False
    for step in range(run.steps):
        i = run.indices(len(x), 64)
        loss = F.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= start:
            if step % 5 == 0:
                averaged.update_parameters(model)
                averaging = True
            swa_sched.step()
        else:
            cosine.step()
        kept: nn.Module = averaged if averaging else model
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_acc", accuracy(kept(xv), yv), mode="eval")
        if not run.end_step(step, loss.detach(), kept, lambda kept=kept: accuracy(kept(xv), yv)):
            break
