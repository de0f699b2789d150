"""Vision scripts of the fifteenth blind split: a displacement (optical-flow-like) regressor on pairs of tiny frames,
and a Siamese change detector on co-registered image pairs.

`displacement`: a smooth random texture rendered twice at 40x40, the second time moved by a sub-pixel displacement of
up to 3 pixels each way (bilinear resampling), both frames average-pooled 2x to 20x20, so the label in the frames'
own pixels is half the rendered displacement; training crops 16x16 windows at one random offset for both frames,
validation the centre; a small CNN over the two frames stacked as channels regresses (dx, dy) by the endpoint
error; scored by the share of held-out pairs whose endpoint error is under 0.3 pixel. `change`: 16x16 scenes of a
blurred texture with 3x3 bright buildings, the second acquisition with some buildings demolished and some built,
a brightness and contrast change and noise; the change mask is where a building appeared or disappeared; random
flips of the pair as augmentation; one encoder applied to both images, the absolute difference of their features,
a 1x1 head to per-pixel logits, BCE weighted towards the rare changed pixels; scored by the held-out IoU of the
predicted change mask. Bugs: the frames downsampled without rescaling the displacement label; the frames fed in the
reverse order; each frame of a pair cropped at its own random offset; the two images of a pair flipped
independently; the label taken from the second image's footprints instead of the change; the features subtracted
with their sign kept.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

FULL, LOW, CROP = 40, 20, 16
"""Rendered side, the frames' side after 2x pooling, and the side of the crop the network sees."""


def _textures(g: torch.Generator, n: int, side: int) -> torch.Tensor:
    """Smooth random textures float[n, 1, side, side]: white noise blurred by a 5x5 box twice, standardised."""
    t = torch.randn(n, 1, side + 8, side + 8, generator=g)
    box = torch.ones(1, 1, 5, 5) / 25
    t = F.conv2d(F.conv2d(t, box), box)
    return (t - t.mean()) / t.std()


def _pairs(g: torch.Generator, n: int, rescale: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Frame pairs float[n, 2, LOW, LOW] and their displacement float[n, 2] in the frames' pixels."""
    tex = _textures(g, n, FULL)
    shift = (torch.rand(n, 2, generator=g) * 2 - 1) * 3
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, FULL), torch.linspace(-1, 1, FULL), indexing="ij")
    base = torch.stack([xs, ys], dim=-1).expand(n, FULL, FULL, 2)
    # the second frame shows the texture moved by `shift`: it samples the first at x - shift
    moved = F.grid_sample(tex, base - (shift * 2 / (FULL - 1)).view(n, 1, 1, 2), align_corners=True)
    first = F.grid_sample(tex, base, align_corners=True)
    frames = F.avg_pool2d(torch.cat([first, moved], dim=1), 2)
    return frames, shift / 2 if rescale else shift


class FlowNet(nn.Module):
    """Two stacked frames -> three strided convolutions of `channels` -> a global average -> (dx, dy)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        c = channels
        self.body = nn.Sequential(nn.Conv2d(2, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, 2 * c, 3, stride=2, padding=1),
                                  nn.ReLU(), nn.Conv2d(2 * c, 2 * c, 3, stride=2, padding=1), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(2 * c * 16, 2)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(frames).flatten(1))


def displacement(run: Run) -> None:
    """A displacement regressor of `channels` (16), batches of `batch` (64), `opt` (Adam; or AdamW, RMSprop, Nesterov
    SGD) at `lr` (2e-3), optionally decayed by a cosine (`cosine`). Scored by the share of held-out pairs within 0.3
    pixel."""
    g = torch.Generator().manual_seed(run.seed)
    frames, flow = _pairs(g, 3000, rescale=run.bug != "flow_not_rescaled_with_frames")
    frames_v, flow_v = _pairs(g, 500)
    if run.bug == "frames_in_reverse_order":
        frames = frames.flip(1)
    centre = (LOW - CROP) // 2
    frames_v = frames_v[:, :, centre : centre + CROP, centre : centre + CROP]
    torch.manual_seed(run.seed)
    model = FlowNet(run.k("channels", 16))
    opt = optimizers.registered(run, model, 2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch = run.k("batch", 64)

    def within() -> float:
        return float(((model(frames_v) - flow_v).norm(dim=1) < 0.3).float().mean())

    for step in range(run.steps):
        pick = run.indices(len(frames), batch)
        r, c = (int(v) for v in torch.randint(0, LOW - CROP + 1, (2,), generator=run.gen))
        x = frames[pick, :, r : r + CROP, c : c + CROP]
        target = flow[pick]
        if run.bug == "crops_drawn_separately_per_frame":
            r2, c2 = (int(v) for v in torch.randint(0, LOW - CROP + 1, (2,), generator=run.gen))
            x = torch.stack([x[:, 0], frames[pick, 1, r2 : r2 + CROP, c2 : c2 + CROP]], dim=1)
        loss = (model(x) - target).norm(dim=1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_within_0.3px", within):
            break


SIDE = 16
"""Side of a change-detection scene."""


def _scenes(g: torch.Generator, n: int, post_footprint: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Image pairs float[n, 2, SIDE, SIDE] (before, after) and the change mask float[n, SIDE, SIDE]."""
    ground = 0.5 * _textures(g, n, SIDE)[:, 0]
    cells = (SIDE - 4) // 3 + 1
    before = torch.rand(n, cells, cells, generator=g) < 0.3
    toggled = torch.rand(n, cells, cells, generator=g) < 0.12
    after = before ^ toggled

    def paint(built: torch.Tensor) -> torch.Tensor:
        return built.float().repeat_interleave(3, 1).repeat_interleave(3, 2)[:, :SIDE, :SIDE]

    pad = (2, SIDE - 2 - 3 * cells, 2, SIDE - 2 - 3 * cells)
    b, a = F.pad(paint(before), pad)[:, :SIDE, :SIDE], F.pad(paint(after), pad)[:, :SIDE, :SIDE]
    gain = 0.7 + 0.6 * torch.rand(n, 1, 1, generator=g)
    offset = 0.3 * torch.randn(n, 1, 1, generator=g)
    img_b = ground + 1.5 * b + 0.2 * torch.randn(n, SIDE, SIDE, generator=g)
    img_a = gain * (ground + 1.5 * a) + offset + 0.2 * torch.randn(n, SIDE, SIDE, generator=g)
    mask = a if post_footprint else (a - b).abs()
    return torch.stack([img_b, img_a], dim=1), mask


class SiameseChange(nn.Module):
    """One conv encoder of `channels` for both images, the absolute difference of their features, a 1x1 head."""

    def __init__(self, channels: int, bug: str | None = None) -> None:
        super().__init__()
        c = channels
        self.encoder = nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1),
                                     nn.ReLU())  # fmt: skip
        self.head = nn.Sequential(nn.Conv2d(c, c, 1), nn.ReLU(), nn.Conv2d(c, 1, 1))
        self.signed = bug == "features_subtracted_with_sign"

    def forward(self, pair: torch.Tensor) -> torch.Tensor:
        f_b, f_a = self.encoder(pair[:, :1]), self.encoder(pair[:, 1:])
        diff = f_a - f_b if self.signed else (f_a - f_b).abs()
        return self.head(diff)[:, 0]


def change(run: Run) -> None:
    """A Siamese change detector of `channels` (16), batches of `batch` (32), `opt` (Adam; or AdamW, Adamax, NAdam) at
    `lr` (3e-3). Scored by the held-out IoU of the change mask."""
    g = torch.Generator().manual_seed(run.seed)
    pairs, mask = _scenes(g, 2000, post_footprint=run.bug == "label_is_post_footprint")
    pairs_v, mask_v = _scenes(g, 400)
    pos_weight = torch.tensor((1 - float(mask.mean())) / float(mask.mean())).sqrt()
    torch.manual_seed(run.seed)
    model = SiameseChange(run.k("channels", 16), run.bug)
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def iou() -> float:
        pred = model(pairs_v) > 0
        truth = mask_v > 0.5
        return float((pred & truth).sum() / max(1, int((pred | truth).sum())))

    for step in range(run.steps):
        pick = run.indices(len(pairs), batch)
        x, y = pairs[pick], mask[pick]
        flip = torch.rand(batch, generator=run.gen) < 0.5
        if run.bug == "pair_flipped_independently":
            x = torch.where(flip.view(-1, 1, 1, 1), x.flip(-1), x)
            other = torch.rand(batch, generator=run.gen) < 0.5
            x = torch.cat(
                [x[:, :1], torch.where(other.view(-1, 1, 1, 1), x[:, 1:].flip(-1), x[:, 1:])], dim=1
            )
            y = torch.where(flip.view(-1, 1, 1), y.flip(-1), y)
        else:
            x = torch.where(flip.view(-1, 1, 1, 1), x.flip(-1), x)
            y = torch.where(flip.view(-1, 1, 1), y.flip(-1), y)
        loss = F.binary_cross_entropy_with_logits(model(x), y, pos_weight=pos_weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_change_iou", iou):
            break
