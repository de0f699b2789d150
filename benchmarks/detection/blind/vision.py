"""Vision scripts of the blind split: a small CNN classifier on uint8 photos with augmentation, and a
U-Net-like segmenter of shapes.

Both decode uint8 pixels the usual way (divide by 255, normalise with a mean and std). Bugs: brightness
jitter added in uint8 (bright pixels wrap around to dark), training batches drawn in label order from
a label-sorted set without shuffling, pixels divided by 255 twice.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind import data
from benchmarks.detection.blind.harness import Run, accuracy


def _to_input(img: torch.Tensor, *, twice: bool = False) -> torch.Tensor:
    x = img.float() / 255.0
    if twice:  # the loader already returns [0, 1] floats and the script divides again
        x = x / 255.0
    return (x - 0.5) / 0.25


class SmallCNN(nn.Module):
    def __init__(self, k: int = 6) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )  # fmt: skip
        self.classifier = nn.Linear(32, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x).flatten(1))


def cnn_classifier(run: Run) -> None:
    """Classify 6 patterns in 12x12 uint8 photos; random flips and brightness jitter; SGD with Nesterov
    momentum and one-cycle (`sched`), or Adam with a constant rate; optional label smoothing. Epochs of
    shuffled batches."""
    g = torch.Generator().manual_seed(run.seed)
    imgs, y = data.pattern_images(g, 3300)
    imgs, y, xv, yv = imgs[300:], y[300:], _to_input(imgs[:300]), y[:300]
    if run.bug == "label_sorted_without_shuffle":  # the files were written class by class
        order = y.argsort(stable=True)
        imgs, y = imgs[order], y[order]
    torch.manual_seed(run.seed)
    model = SmallCNN()
    lr = run.k("lr", 0.1)
    if run.k("sched", None) == "onecycle":
        opt: torch.optim.Optimizer = torch.optim.SGD(
            model.parameters(), lr=lr, momentum=0.9, nesterov=True, weight_decay=5e-4
        )
        sched: torch.optim.lr_scheduler.LRScheduler | None = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=lr, total_steps=run.steps
        )
    else:
        opt, sched = torch.optim.Adam(model.parameters(), lr=lr), None
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    bs, smoothing = 64, run.k("smoothing", 0.0)
    per_epoch = len(y) // bs
    order = torch.arange(len(y))

    def score() -> float:
        return accuracy(model(xv), yv)

    for step in range(run.steps):
        b = step % per_epoch
        if b == 0 and run.bug != "label_sorted_without_shuffle":
            order = torch.randperm(len(y), generator=run.gen)
        i = order[b * bs : (b + 1) * bs]
        img = imgs[i]
        flip = torch.rand(len(i), generator=run.gen) < 0.5
        img = torch.where(flip[:, None, None, None], img.flip(3), img)
        delta = torch.randint(0, 120, (len(i), 1, 1, 1), generator=run.gen, dtype=torch.uint8)
        if run.bug == "uint8_brightness_overflow":
            img = img + delta  # uint8 arithmetic: 230 + 40 wraps to 14
        else:
            img = (img.int() + delta).clamp(0, 255).to(torch.uint8)
        loss = F.cross_entropy(model(_to_input(img)), y[i], label_smoothing=smoothing)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            model.eval()
            with torch.no_grad():
                vl = model(xv)
            run.hook.record_scalar("val_loss", F.cross_entropy(vl, yv), mode="eval")
            run.hook.record_scalar("val_acc", accuracy(vl, yv), mode="eval")
            model.train()
        if not run.end_step(step, loss.detach(), model, score):
            break


class TinyUNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU()
        )
        self.bottom = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.out = nn.Sequential(nn.Conv2d(32, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = self.down(x)
        return self.out(torch.cat([skip, self.up(self.bottom(skip))], 1))


def _iou(logits: torch.Tensor, mask: torch.Tensor) -> float:
    pred = logits > 0
    inter = (pred & (mask > 0.5)).sum().float()
    union = (pred | (mask > 0.5)).sum().float()
    return float(inter / union.clamp(min=1))


def segmentation(run: Run) -> None:
    """Segment a disc or square in 16x16 uint8 images with a small U-Net; BCE + soft Dice, Adam."""
    g = torch.Generator().manual_seed(run.seed)
    imgs, masks = data.shapes(g, 2200)
    twice = run.bug == "pixels_divided_by_255_twice"
    x, m, xv, mv = (
        _to_input(imgs[200:], twice=twice),
        masks[200:],
        _to_input(imgs[:200], twice=twice),
        masks[:200],
    )
    torch.manual_seed(run.seed)
    model = TinyUNet()
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 2e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def dice_loss(logits: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        p = torch.sigmoid(logits)
        inter = (p * t).sum((1, 2, 3))
        return (1 - (2 * inter + 1) / (p.sum((1, 2, 3)) + t.sum((1, 2, 3)) + 1)).mean()

    for step in range(run.steps):
        i = run.indices(len(x), 16)
        logits = model(x[i])
        loss = F.binary_cross_entropy_with_logits(logits, m[i]) + dice_loss(logits, m[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            with torch.no_grad():
                run.hook.record_scalar("val_iou", _iou(model(xv), mv), mode="eval", collection="metrics")
        if not run.end_step(step, loss.detach(), model, lambda: _iou(model(xv), mv)):
            break
