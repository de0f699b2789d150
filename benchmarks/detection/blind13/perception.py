"""Perception scripts of the thirteenth blind split: a single-object box regressor trained with L1 and GIoU losses,
and a spiking network of leaky integrate-and-fire neurons trained with a surrogate gradient.

`box_regressor`: 16x16 grey images holding one bright rectangle (corners uniform, sides 3 to 9 pixels) on a noisy
background with a dimmer distractor square; a small CNN predicts the box as a sigmoid centre and size, turned into
normalised corners (x1, y1, x2, y2); the loss is the L1 distance of the corners plus 1 - GIoU; scored by the held-out
mean IoU. `spiking`: 10 normal features whose class (one of 4) is the argmax of a random two-layer teacher, fed as a
constant input current for 16 time steps to a layer of LIF neurons (decay 0.9, threshold 1, reset by subtraction) whose
spikes a linear readout sums over time into logits (cross-entropy); the spike's gradient is a fast-sigmoid surrogate;
scored by held-out accuracy. Bugs: COCO-style (x, y, w, h) targets used as corners, the targets' x and y swapped,
GIoU used as the loss instead of 1 - GIoU, images flipped for augmentation with their boxes left unflipped, the L1
term taken in pixels, the targets left in pixels; the spike's step function without its surrogate, the membrane never
reset after a spike, the logits read from the last time step only, the input current given at the first step only.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SIDE = 16
"""Image side in pixels."""
TIME_STEPS = 16
"""Simulation steps of the spiking network."""


def _scenes(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Images float[n, 1, SIDE, SIDE] and their boxes float[n, 4] as normalised corners (x1, y1, x2, y2)."""
    size = torch.randint(3, 10, (n, 2), generator=g)
    corner = (torch.rand(n, 2, generator=g) * (SIDE - size + 1)).floor().long()
    cols, rows = torch.arange(SIDE).view(1, 1, SIDE), torch.arange(SIDE).view(1, SIDE, 1)
    x0, y0 = corner[:, 0].view(n, 1, 1), corner[:, 1].view(n, 1, 1)
    inside = (cols >= x0) & (cols < x0 + size[:, 0].view(n, 1, 1))
    inside = inside & (rows >= y0) & (rows < y0 + size[:, 1].view(n, 1, 1))
    spot = torch.randint(0, SIDE - 2, (n, 2), generator=g)
    distractor = (cols >= spot[:, 0].view(n, 1, 1)) & (cols < spot[:, 0].view(n, 1, 1) + 2)
    distractor = distractor & (rows >= spot[:, 1].view(n, 1, 1)) & (rows < spot[:, 1].view(n, 1, 1) + 2)
    images = inside.float() + 0.4 * distractor.float() + 0.25 * torch.randn(n, SIDE, SIDE, generator=g)
    boxes = torch.cat([corner, corner + size], dim=1).float() / SIDE
    return images.unsqueeze(1), boxes


def box_iou(pred: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """IoU and GIoU float[n] of corner boxes float[n, 4]."""
    lo, hi = torch.max(pred[:, :2], target[:, :2]), torch.min(pred[:, 2:], target[:, 2:])
    inter = (hi - lo).clamp(min=0).prod(1)
    area_p = (pred[:, 2:] - pred[:, :2]).clamp(min=0).prod(1)
    area_t = (target[:, 2:] - target[:, :2]).clamp(min=0).prod(1)
    union = area_p + area_t - inter + 1e-7
    hull = (
        (torch.max(pred[:, 2:], target[:, 2:]) - torch.min(pred[:, :2], target[:, :2])).clamp(min=0).prod(1)
    )
    iou = inter / union
    return iou, iou - (hull - union) / (hull + 1e-7)


class BoxRegressor(nn.Module):
    """Two conv blocks of `channels` and 2 x `channels` and an MLP head of `width` giving normalised corners."""

    def __init__(self, channels: int, width: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )  # fmt: skip
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(2 * channels * 16, width), nn.ReLU(), nn.Linear(width, 4)
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        centre, size = torch.sigmoid(self.head(self.features(images))).split(2, dim=1)
        return torch.cat([centre - size / 2, centre + size / 2], dim=1)


def box_regressor(run: Run) -> None:
    """A box regressor of `channels` (16) and `width` (128), batches of `batch` (64), `opt` (Adam; or AdamW, RMSprop,
    NAdam) at `lr` (1e-3), a cosine decay when `cosine`. Scored by the held-out mean IoU."""
    g = torch.Generator().manual_seed(run.seed)
    images, boxes = _scenes(g, 3000)
    images_v, boxes_v = _scenes(g, 500)
    if run.bug == "coco_boxes_used_as_corners":
        boxes = torch.cat([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]], dim=1)
    if run.bug == "boxes_left_in_pixels":
        boxes = boxes * SIDE
    if run.bug == "box_x_and_y_swapped":
        boxes = boxes[:, [1, 0, 3, 2]]
    torch.manual_seed(run.seed)
    model = BoxRegressor(run.k("channels", 16), run.k("width", 128))
    opt = optimizers.registered(run, model, 1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch = run.k("batch", 64)

    def mean_iou() -> float:
        return float(box_iou(model(images_v), boxes_v)[0].mean())

    for step in range(run.steps):
        pick = run.indices(len(images), batch)
        x, target = images[pick], boxes[pick]
        flip = torch.rand(batch, generator=run.gen) < 0.5
        x = torch.where(flip.view(-1, 1, 1, 1), x.flip(3), x)
        if run.bug != "flipped_images_keep_their_boxes":
            right = SIDE if run.bug == "boxes_left_in_pixels" else 1
            mirrored = torch.stack(
                [right - target[:, 2], target[:, 1], right - target[:, 0], target[:, 3]], dim=1
            )
            target = torch.where(flip.view(-1, 1), mirrored, target)
        pred = model(x)
        _, giou = box_iou(pred, target)
        scale = SIDE if run.bug == "l1_in_pixels" else 1
        overlap = giou.mean() if run.bug == "giou_used_as_loss" else (1 - giou).mean()
        loss = F.l1_loss(pred * scale, target * scale) + overlap
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_mean_iou", mean_iou):
            break


def _currents(
    g: torch.Generator, teacher: tuple[torch.Tensor, torch.Tensor], n: int
) -> tuple[torch.Tensor, ...]:
    """Features float[n, 10] and their teacher classes int64[n]."""
    x = torch.randn(n, 10, generator=g)
    return x, (torch.tanh(x @ teacher[0]) @ teacher[1]).argmax(1)


class FastSigmoidSpike(torch.autograd.Function):
    """A Heaviside spike whose backward pass is the fast sigmoid's derivative 1 / (1 + 10 |v|)^2."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, v: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(v)
        return (v > 0).float()

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        (v,) = ctx.saved_tensors  # type: ignore[attr-defined]
        return grad / (1 + 10 * v.abs()) ** 2


class SpikingNet(nn.Module):
    """A LIF layer of `width` neurons driven by a constant input current and a linear readout of its spikes."""

    def __init__(self, width: int, beta: float = 0.9) -> None:
        super().__init__()
        self.inp, self.readout, self.beta = nn.Linear(10, width), nn.Linear(width, 4), beta

    def forward(self, x: torch.Tensor, bug: str | None = None) -> torch.Tensor:
        current = self.inp(x)
        mem = torch.zeros_like(current)
        logits = []
        for _ in range(TIME_STEPS):
            mem = self.beta * mem + current
            if bug == "input_presented_at_first_step_only":
                current = torch.zeros_like(current)
            spk = (mem > 1).float() if bug == "spike_without_surrogate" else FastSigmoidSpike.apply(mem - 1)
            if bug != "membrane_never_reset":
                mem = mem - spk
            logits.append(self.readout(spk))
        if bug == "logits_from_last_step_only":
            return logits[-1]
        return torch.stack(logits).mean(0)


def spiking(run: Run) -> None:
    """A spiking classifier of `width` (32) LIF neurons, batches of `batch` (128), `opt` (Adam; or Adamax, RMSprop,
    momentum SGD) at `lr` (2e-3). Scored by held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    teacher = (torch.randn(10, 16, generator=g), torch.randn(16, 4, generator=g))
    x, y = _currents(g, teacher, 4000)
    x_v, y_v = _currents(g, teacher, 1000)
    torch.manual_seed(run.seed)
    model = SpikingNet(run.k("width", 32))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 128)

    def accuracy() -> float:
        return float((model(x_v, bug=run.bug).argmax(1) == y_v).float().mean())

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.cross_entropy(model(x[pick], bug=run.bug), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy):
            break
