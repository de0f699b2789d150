"""Inspection-image scripts of the nineteenth blind split: a wafer-map defect classifier with heavy class imbalance,
and a licence-plate character recogniser.

`wafers`: 20x20 wafer maps stored as 8-bit images (0 off the wafer, 128 a passing die, 255 a failing one) with a scatter
of random failures and, for all but the majority class, a defect pattern (centre, edge ring, scratch at a random angle,
donut, local cluster); 'none' makes up about 60% of the 200 training maps and the rarest pattern 4%; a three-block CNN
on the map scaled to [0, 1], its convolutions held still for the first two epochs, trained on random quarter turns and
flips of each batch, cross-entropy weighted by the training set's balanced class weights; scored by the held-out
balanced accuracy. `plates`: 12x44 8-bit plate images of six characters (digits and letters, 36 glyphs of a random 5x3
font drawn at twice the size), a pixel of jitter, dark ink on a light plate and a little sensor noise added to the 8-bit
image; a two-block CNN whose features feed one linear head per character position; cross-entropy summed over positions;
scored by the held-out per-character accuracy. Bugs: the class weights computed from each batch's counts (infinite for a
class the batch lacks, then normalised); a learning-rate range test's last rate of 10 left in; the epoch counted in rows
instead of batches, so the convolutions are never released; the six positions' labels stacked position-major while the
logits are batch-major; a step decay's gamma written as the divisor 10.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers
from benchmarks.detection.blind19.texts import balanced_accuracy

SIDE, PATTERNS = 20, 6
"""Wafer map side; classes (none, centre, edge ring, scratch, donut, local cluster)."""
SHARES = torch.tensor([0.6, 0.1, 0.1, 0.08, 0.08, 0.04])


def _maps(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Wafer maps uint8[n, 1, SIDE, SIDE] and their pattern long[n]."""
    y = torch.multinomial(SHARES, n, True, generator=g)
    r = torch.arange(SIDE) - (SIDE - 1) / 2
    yy, xx = torch.meshgrid(r, r, indexing="ij")
    radius = torch.sqrt(xx**2 + yy**2)
    wafer = radius <= SIDE / 2
    maps = torch.zeros(n, SIDE, SIDE, dtype=torch.uint8)
    for i in range(n):
        p = torch.rand(SIDE, SIDE, generator=g) < 0.04 + 0.04 * float(torch.rand(1, generator=g))
        k = int(y[i])
        u = torch.rand(SIDE, SIDE, generator=g)
        if k == 1:
            p |= (radius < 3 + 2 * float(torch.rand(1, generator=g))) & (u < 0.8)
        elif k == 2:
            p |= (radius > SIDE / 2 - 2) & (u < 0.8)
        elif k == 3:
            angle = math.pi * float(torch.rand(1, generator=g))
            shift = 6 * (float(torch.rand(1, generator=g)) - 0.5)
            dist = (xx * math.sin(angle) - yy * math.cos(angle) - shift).abs()
            p |= (dist < 0.8) & (radius < 7) & (u < 0.9)
        elif k == 4:
            p |= (radius > 4) & (radius < 6.5) & (u < 0.75)
        elif k == 5:
            cx, cy = (torch.rand(2, generator=g) * 10 - 5).tolist()
            p |= ((xx - cx) ** 2 + (yy - cy) ** 2 < 5) & (u < 0.85)
        maps[i] = torch.where(wafer, torch.where(p, 255, 128), 0).to(torch.uint8)
    return maps.unsqueeze(1), y


class WaferCNN(nn.Module):
    """Three conv blocks of `width`, 2*`width`, 2*`width` channels (the first two pooled), a global mean, a linear
    layer to the patterns."""

    def __init__(self, width: int) -> None:
        super().__init__()
        w = width
        self.net = nn.Sequential(nn.Conv2d(1, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(2 * w, 2 * w, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                 nn.Flatten(), nn.Linear(2 * w, PATTERNS))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def _turned(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """The batch turned by a random number of quarter turns and flipped left-right half the time."""
    x = torch.rot90(x, int(torch.randint(0, 4, (1,), generator=g)), (2, 3))
    return x.flip(3) if float(torch.rand(1, generator=g)) < 0.5 else x


def wafers(run: Run) -> None:
    """A wafer-map CNN of `width` (12), batches of `batch` (32), `opt` (Adam; or AdamW, RMSprop, Adamax) at `lr`
    (2e-3), optionally halved at steps 150 and 225 (`milestones`). Scored by the held-out balanced accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    maps, y = _maps(g, 200)
    maps_v, y_v = _maps(g, 500)

    def scaled(m: torch.Tensor) -> torch.Tensor:
        return m.float() / 255

    x, x_v = scaled(maps), scaled(maps_v)
    counts = torch.bincount(y, minlength=PATTERNS).float().clamp_min(1)
    weights = len(y) / (PATTERNS * counts)
    torch.manual_seed(run.seed)
    model = WaferCNN(run.k("width", 12))
    opt = optimizers.registered(run, model, 2e-3)
    if run.bug == "range_test_rate_left_in":
        # a learning-rate range test swept the rate up to 10 in place and the script went on training from there
        for group in opt.param_groups:
            group["lr"] = 10.0
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [150, 225], 0.5) if run.k("milestones", False) else None
    batch = run.k("batch", 32)
    per_epoch = len(y) // batch
    # the convolutions held still for the first two epochs while the freshly initialised head settles
    convs = [m for m in model.net if isinstance(m, nn.Conv2d)]
    for conv in convs:
        conv.requires_grad_(False)

    def balanced_held_out() -> float:
        return balanced_accuracy(model(x_v), y_v)

    for step in range(run.steps):
        epoch = step // (len(y) if run.bug == "epoch_counted_in_rows" else per_epoch)
        if epoch == 2:
            for conv in convs:
                conv.requires_grad_(True)
        pick = run.indices(len(y), batch)
        inputs, target = x[pick], y[pick]
        inputs = _turned(inputs, run.gen)
        if run.bug == "class_weights_from_batch_counts":
            w = 1.0 / torch.bincount(target, minlength=PATTERNS).float()
            w = w / w.sum()
        else:
            w = weights
        loss = F.cross_entropy(model(inputs), target, weight=w)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_balanced_accuracy", balanced_held_out):
            break


ROWS, COLS, CHARS, GLYPHS = 12, 44, 6, 36
"""Plate height and width, characters per plate, glyphs (ten digits and 26 letters)."""


def _font(g: torch.Generator) -> torch.Tensor:
    """A 5x3 bitmap per glyph, each distinct, drawn at twice the size: float[GLYPHS, 10, 6]."""
    bitmaps: list[torch.Tensor] = []
    while len(bitmaps) < GLYPHS:
        b = (torch.rand(5, 3, generator=g) < 0.5).float()
        if b.sum() >= 4 and all(not torch.equal(b, o) for o in bitmaps):
            bitmaps.append(b)
    return torch.stack(bitmaps).repeat_interleave(2, 1).repeat_interleave(2, 2)


def _plates(g: torch.Generator, n: int, font: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Plates uint8[n, 1, ROWS, COLS] and their characters long[n, CHARS]."""
    chars = torch.randint(0, GLYPHS, (n, CHARS), generator=g)
    ink = torch.zeros(n, ROWS, COLS)
    for i in range(n):
        dr, dc = torch.randint(0, 2, (2,), generator=g).tolist()
        for j in range(CHARS):
            c = 2 + 7 * j + dc
            ink[i, 1 + dr : 11 + dr, c : c + 6] = font[chars[i, j]]
    plates = (225 - 185 * ink).to(torch.uint8)
    noise = torch.randint(0, 40, (n, ROWS, COLS), generator=g)
    plates = (plates.int() + noise).clamp(0, 255).to(torch.uint8)
    return plates.unsqueeze(1), chars


class PlateReader(nn.Module):
    """Two conv blocks of `width` and 2*`width` channels (pooled to 3x11), a linear head per character position."""

    def __init__(self, width: int, plain_list: bool = False) -> None:
        super().__init__()
        w = width
        self.backbone = nn.Sequential(nn.Conv2d(1, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Flatten())  # fmt: skip
        heads = [nn.Linear(2 * w * 3 * 11, GLYPHS) for _ in range(CHARS)]
        # a plain list hides the heads from .parameters(), so the optimizer never sees them
        self.heads = heads if plain_list else nn.ModuleList(heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.backbone(x)
        return torch.stack([head(h) for head in self.heads], 1)  # [b, CHARS, GLYPHS]


def plates(run: Run) -> None:
    """A plate reader of `width` (8), batches of `batch` (64), `opt` (Adam; or RMSprop, NAdam, Adamax) at `lr`
    (1e-3), optionally divided by ten every 100 steps (`step_decay`). Scored by the held-out per-character accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    font = _font(g)
    images, chars = _plates(g, 1500, font)
    images_v, chars_v = _plates(g, 400, font)
    x, x_v = images.float() / 255, images_v.float() / 255
    torch.manual_seed(run.seed)
    model = PlateReader(run.k("width", 8), run.bug == "heads_kept_in_plain_list")
    opt = optimizers.registered(run, model, 1e-3)
    # divide the rate by ten every 100 steps (the bug: gamma written as that divisor)
    gamma = 10.0 if run.bug == "step_gamma_written_as_divisor" else 0.1
    sched = torch.optim.lr_scheduler.StepLR(opt, 100, gamma) if run.k("step_decay", False) else None
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v).reshape(-1, GLYPHS), chars_v.reshape(-1))

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        target = chars[pick]
        if run.bug == "position_labels_stacked_position_major":
            # the loader yields a list of six label tensors (one per position), stacked into [CHARS, batch]
            target = torch.stack(list(target.unbind(1)))
        logits = model(x[pick])
        loss = F.cross_entropy(logits.reshape(-1, GLYPHS), target.reshape(-1)) * CHARS
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_char_accuracy", accuracy_held_out):
            break
