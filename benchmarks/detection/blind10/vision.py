"""Dense-prediction scripts of the tenth blind split: monocular depth with a scale-invariant log loss, keypoint
heatmap regression, and crowd counting by density maps, each a small fully convolutional network on 16 x 16
synthetic pictures generated from the seed.

`depth`: a scene is a tilted plane with a box standing in front of it (depth 1-8); the picture is its shading
(brighter when nearer) times a texture, plus noise; the network's softplus output is the depth, trained on
randomly flipped pictures with the scale-invariant log loss (lambda 0.5); scored by the share of held-out pixels within a factor 1.25 of the truth.
`keypoints`: a bright blob (the keypoint) and a dimmer distractor on a noisy background; the target heatmap is a
Gaussian of sigma 1.5 around the keypoint, fitted by mean squared error; scored by the share of held-out pictures
whose heatmap's arg-max lies within 1.5 pixels of the keypoint. `counting`: 0-20 small blobs (people) on a
cluttered background; the target density map puts a unit-mass Gaussian on each person, the network (with one 2x
pooling) predicts it at 8 x 8, the target summed over 2 x 2 cells to match; scored by 1 - the mean absolute count
error over the mean count. Bugs: the log taken of the raw (unclamped) prediction, lambda set to 1 (the fully
scale-invariant loss, which cannot learn the absolute depth), the flip augmentation applied to the picture but
not to its depth map, the heatmap's sigma computed as zero by an integer
division, the keypoint's coordinates transposed in the target, the density maps normalised per picture, the
targets downsampled by averaging instead of summing.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.torch_real.loop import make_optimizer

SIZE = 16
"""Pictures are SIZE x SIZE."""
_GRID = torch.stack(torch.meshgrid(torch.arange(SIZE).float(), torch.arange(SIZE).float(), indexing="ij"))
"""The (row, column) coordinate of every pixel, float[2, SIZE, SIZE]."""


def _fcn(channels: int, width: int, out: int, *, pool: bool = False) -> nn.Sequential:
    """A fully convolutional network of three 3 x 3 convolutions (`width` channels; one 2 x 2 max-pool after the
    first when `pool`) and a 1 x 1 head of `out` channels."""
    layers: list[nn.Module] = [nn.Conv2d(channels, width, 3, padding=1), nn.ReLU()]
    if pool:
        layers.append(nn.MaxPool2d(2))
    layers += [nn.Conv2d(width, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
               nn.Conv2d(width, out, 1)]  # fmt: skip
    return nn.Sequential(*layers)


def _optimizer(run: Run, model: nn.Module, default_lr: float) -> torch.optim.Optimizer:
    name = run.k("opt", "adam")
    opt = make_optimizer(
        name, model.parameters(), run.k("lr", default_lr), weight_decay=1e-4 if name == "adamw" else 0.0
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    return opt


def _scenes(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pictures float[n, 1, 16, 16] and their depth maps float[n, 1, 16, 16] (1-8)."""
    rows, cols = _GRID[0] / SIZE, _GRID[1] / SIZE
    base = 3 + 3 * torch.rand(n, 1, 1, generator=g)
    tilt = (torch.rand(n, 2, 1, 1, generator=g) - 0.5) * 3
    depth = base + tilt[:, 0] * rows + tilt[:, 1] * cols
    corner = torch.randint(0, SIZE - 6, (n, 2), generator=g)
    near = 1 + torch.rand(n, generator=g) * 1.5
    for i in range(n):
        r, c = int(corner[i, 0]), int(corner[i, 1])
        depth[i, r : r + 6, c : c + 6] = near[i]
    texture = 0.8 + 0.4 * torch.rand(n, SIZE, SIZE, generator=g)
    picture = texture * 2 / depth + 0.05 * torch.randn(n, SIZE, SIZE, generator=g)
    return picture[:, None], depth.clamp(min=1.0)[:, None]


def depth(run: Run) -> None:
    """Monocular depth: a width-`width` (16) fully convolutional network, Adam (`opt`; or AdamW, NAdam, Adamax) at
    `lr` (2e-3), batch `batch` (32), random horizontal flips, the scale-invariant log loss. Scored by the held-out delta < 1.25 accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, d = _scenes(g, 2200)
    xv, dv, x, d = x[:200], d[:200], x[200:], d[200:]
    torch.manual_seed(run.seed)
    model = _fcn(1, run.k("width", 16), 1)
    opt = _optimizer(run, model, 2e-3)
    lam = 1.0 if run.bug == "fully_scale_invariant_lambda" else 0.5
    batch = run.k("batch", 32)

    def predict(inp: torch.Tensor) -> torch.Tensor:
        out = model(inp)
        return out if run.bug == "log_of_unclamped_prediction" else F.softplus(out) + 1e-3

    def delta1() -> float:
        pred = predict(xv)
        if not torch.isfinite(pred).all():
            return 0.0
        ratio = torch.maximum(pred / dv, dv / pred)
        return float(((ratio < 1.25) & (pred > 0)).float().mean())

    for step in range(run.steps):
        i = run.indices(len(x), batch)
        pictures, depths = x[i], d[i]
        flip = torch.rand(batch, generator=run.gen) < 0.5  # random horizontal flips
        pictures = torch.where(flip[:, None, None, None], pictures.flip(3), pictures)
        if run.bug != "flip_not_applied_to_depth":
            depths = torch.where(flip[:, None, None, None], depths.flip(3), depths)
        diff = torch.log(predict(pictures)) - torch.log(depths)
        loss = (diff**2).mean() - lam * diff.mean() ** 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_delta1", delta1):
            break


def _keypoint_pictures(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pictures float[n, 1, 16, 16] with a bright blob at the keypoint and a dimmer one elsewhere; the keypoints
    float[n, 2] (row, column)."""
    key = 2 + torch.rand(n, 2, generator=g) * (SIZE - 4)
    other = 2 + torch.rand(n, 2, generator=g) * (SIZE - 4)

    def blob(at: torch.Tensor, radius: float) -> torch.Tensor:
        dist2 = ((_GRID[None] - at[:, :, None, None]) ** 2).sum(1)
        return torch.exp(-dist2 / (2 * radius**2))

    picture = blob(key, 1.0) + 0.5 * blob(other, 2.0) + 0.25 * torch.randn(n, SIZE, SIZE, generator=g)
    return picture[:, None], key


def _heatmaps(key: torch.Tensor, sigma: float) -> torch.Tensor:
    """Gaussian heatmaps float[n, 1, 16, 16] of width `sigma` around each keypoint."""
    dist2 = ((_GRID[None] - key[:, :, None, None]) ** 2).sum(1)
    return torch.exp(-dist2 / (2 * sigma**2))[:, None]


def keypoints(run: Run) -> None:
    """Keypoint heatmap regression: a width-`width` (16) fully convolutional network, Adam (`opt`; or AdamW,
    RAdam, Nesterov SGD) at `lr` (2e-3), batch `batch` (32), mean squared error on heatmaps. Scored by held-out
    PCK at 1.5 pixels."""
    g = torch.Generator().manual_seed(run.seed)
    x, key = _keypoint_pictures(g, 2200)
    xv, kv, x, key = x[:200], key[:200], x[200:], key[200:]
    torch.manual_seed(run.seed)
    model = _fcn(1, run.k("width", 16), 1)
    opt = _optimizer(run, model, 0.05 if run.k("opt", "adam") == "nesterov" else 2e-3)
    heatmap_size = SIZE
    sigma = heatmap_size // 32 if run.bug == "sigma_zero_by_integer_division" else 1.5
    target = _heatmaps(key.flip(1) if run.bug == "keypoint_coordinates_transposed" else key, sigma)
    batch = run.k("batch", 32)

    def pck() -> float:
        heat = model(xv).flatten(1)
        if not torch.isfinite(heat).all():
            return 0.0
        best = heat.argmax(1)
        found = torch.stack([best // SIZE, best % SIZE], 1).float()
        return float((((found - kv) ** 2).sum(1).sqrt() < 1.5).float().mean())

    for step in range(run.steps):
        i = run.indices(len(x), batch)
        loss = F.mse_loss(model(x[i]), target[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_pck", pck):
            break


def _crowds(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pictures float[n, 1, 16, 16] of 0-20 people on clutter, and the density maps float[n, 1, 16, 16] (a
    unit-mass Gaussian of sigma 1 on each person: each map sums to its count)."""
    pictures = 0.3 * torch.rand(n, SIZE, SIZE, generator=g)
    density = torch.zeros(n, SIZE, SIZE)
    counts = torch.randint(0, 21, (n,), generator=g)
    for i in range(n):
        at = torch.rand(int(counts[i]), 2, generator=g) * (SIZE - 1)
        if len(at) == 0:
            continue
        dist2 = ((_GRID[None] - at[:, :, None, None]) ** 2).sum(1)
        people = torch.exp(-dist2 / 2)
        pictures[i] += (people * (0.7 + 0.6 * torch.rand(len(at), 1, 1, generator=g))).sum(0)
        density[i] = (people / people.sum((1, 2), keepdim=True)).sum(0)
    return pictures[:, None], density[:, None]


def counting(run: Run) -> None:
    """Crowd counting by density maps: a width-`width` (32) fully convolutional network with one 2 x 2 pooling,
    Adam (`opt`; or Adamax, RAdam, momentum SGD) at `lr` (1e-3), batch `batch` (16), the mean squared error of the
    8 x 8 density maps times 100 (the usual scaling of small densities). Scored by 1 - the relative mean absolute
    count error on held-out pictures."""
    g = torch.Generator().manual_seed(run.seed)
    x, dens = _crowds(g, 1600)
    xv, cv = x[:300], dens[:300].sum((1, 2, 3))
    if run.bug == "density_normalised_per_image":
        dens = dens / dens.sum((2, 3), keepdim=True).clamp(min=1e-6)
    small = (
        F.avg_pool2d(dens, 2) if run.bug == "density_averaged_when_downsampled" else F.avg_pool2d(dens, 2) * 4
    )
    x, small = x[300:], small[300:]
    torch.manual_seed(run.seed)
    model = _fcn(1, run.k("width", 32), 1, pool=True)
    opt = _optimizer(run, model, 0.01 if run.k("opt", "adam") == "momentum" else 1e-3)
    batch = run.k("batch", 16)

    def count_score() -> float:
        pred = model(xv).sum((1, 2, 3))
        if not torch.isfinite(pred).all():
            return 0.0
        return max(0.0, 1.0 - float((pred - cv).abs().mean() / cv.mean()))

    for step in range(run.steps):
        i = run.indices(len(x), batch)
        loss = 100 * F.mse_loss(model(x[i]), small[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_count_score", count_score):
            break
