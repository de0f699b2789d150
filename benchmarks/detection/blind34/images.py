"""Image scripts of the thirty-fourth blind split: a leaf-count regressor on top-down photographs of rosette plants,
and a handwritten mathematical-symbol classifier on tablet pen strokes.

`leaves`: 24x24 grey images of a rosette (3-10 elliptical leaves radiating from the centre at jittered angles, of
random length and width, over a noisy soil background); three convolutions with ReLUs and pooling, a global average
pool and a linear layer; MSE on the standardised count; scored by the held-out R^2 of the count. `symbols`: pen
strokes of eight symbols (plus, minus, times, equals, slash, less-than, greater-than, a dot) written on a tablet with
each writer's size, slant and jitter; the points centred and scaled by the symbol's larger extent (at least a tenth
of the box, so a dot stays a dot), splatted onto a 16x16 grid and clamped to [0, 1]; two convolutions with ReLUs and
pooling, dropout and a linear layer; cross-entropy; scored by the held-out accuracy. Bugs: the rate scaled by the
batch size; the annotators' dots left on the training images; Adam given the AdamW recipe's decay; the training strokes
scaled by the tablet's writing area; the splats summed unclamped; each axis scaled by its own extent.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SIDE = 24


def _rosettes(g: torch.Generator, n: int, dots: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Images float[n, 1, SIDE, SIDE] in [0, 1] and the leaf count float[n]; `dots`: the annotators' tip marks."""
    count = torch.randint(3, 11, (n,), generator=g)
    rows = torch.arange(SIDE).float().view(SIDE, 1)
    cols = torch.arange(SIDE).float().view(1, SIDE)
    images = 0.25 + 0.08 * torch.randn(n, SIDE, SIDE, generator=g)
    for i in range(n):
        cy, cx = 11.5 + torch.randn(2, generator=g)
        turn = 2 * math.pi * float(torch.rand(1, generator=g))
        for k in range(int(count[i])):
            angle = turn + 2 * math.pi * k / int(count[i]) + 0.2 * float(torch.randn(1, generator=g))
            length = 5 + 4 * float(torch.rand(1, generator=g))
            width = 1.0 + 0.8 * float(torch.rand(1, generator=g))
            mx, my = cx + 0.55 * length * math.cos(angle), cy + 0.55 * length * math.sin(angle)
            u = (cols - mx) * math.cos(angle) + (rows - my) * math.sin(angle)
            v = -(cols - mx) * math.sin(angle) + (rows - my) * math.cos(angle)
            leaf = ((u / (length / 2)) ** 2 + (v / width) ** 2) < 1
            images[i] = torch.where(leaf, 0.75 + 0.05 * torch.randn(SIDE, SIDE, generator=g), images[i])
            if dots:  # the annotator's black marker at the leaf's tip, two pixels across
                ty = round(float(cy + 0.9 * length * math.sin(angle)))
                tx = round(float(cx + 0.9 * length * math.cos(angle)))
                images[i, max(ty - 1, 0) : ty + 1, max(tx - 1, 0) : tx + 1] = 0.0
    return images.clamp(0, 1).unsqueeze(1), count.float()


class LeafCNN(nn.Module):
    """Three 3x3 convolutions (`width`, twice, twice that) with ReLUs and pooling, a global average, a linear layer."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(2 * width, 2 * width, 3, padding=1), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(2 * width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean((2, 3))).squeeze(-1)


def leaves(run: Run) -> None:
    """A leaf CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or Adamax, AdamW, RMSprop) at `lr`
    (2e-3). Scored by the held-out R^2 of the count."""
    g = torch.Generator().manual_seed(run.seed)
    x, count = _rosettes(g, 800, dots=run.bug == "annotation_dots_left_on_training_images")
    x_v, count_v = _rosettes(g, 300)
    y, y_v = (count - 6.5) / 2.3, (count_v - 6.5) / 2.3
    torch.manual_seed(run.seed)
    model = LeafCNN(run.k("width", 8))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)
    if run.bug == "rate_scaled_by_batch_size":
        for group in opt.param_groups:
            group["lr"] *= batch  # the per-sample rate of the old summed loss, scaled for the mean
    if run.bug == "adam_given_adamw_decay":
        for group in opt.param_groups:
            group["weight_decay"] = 0.1  # the AdamW recipe's decay, coupled into Adam's gradient

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


GRID = 16
STROKES = {
    "plus": [((-1, 0), (1, 0)), ((0, -1), (0, 1))],
    "minus": [((-1, 0), (1, 0))],
    "times": [((-1, -1), (1, 1)), ((-1, 1), (1, -1))],
    "equals": [((-1, -0.4), (1, -0.4)), ((-1, 0.4), (1, 0.4))],
    "slash": [((-0.6, 1), (0.6, -1))],
    "less": [((1, -1), (-1, 0)), ((-1, 0), (1, 1))],
    "greater": [((-1, -1), (1, 0)), ((1, 0), (-1, 1))],
    "dot": [((0, 0), (0, 0))],
}
"""Each symbol's pen strokes as segments in a unit box (y down)."""


def _strokes(g: torch.Generator, n: int) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Each sample's pen points float[k, 2] in tablet units (integers), and the symbol long[n]."""
    names = list(STROKES)
    y = torch.randint(0, len(names), (n,), generator=g)
    points = []
    for i in range(n):
        size = 40 + 40 * float(torch.rand(1, generator=g))
        slant = 0.4 * float(torch.randn(1, generator=g))
        turn = 0.25 * float(torch.randn(1, generator=g))
        squash = 0.7 + 0.6 * float(torch.rand(1, generator=g))
        origin = 500 * torch.rand(2, generator=g)
        pts = []
        for (x0, y0), (x1, y1) in STROKES[names[int(y[i])]]:
            t = torch.linspace(0, 1, 40).unsqueeze(1)  # the tablet samples the pen at 200 Hz
            seg = torch.tensor([x0, y0]) + t * torch.tensor([x1 - x0, y1 - y0])
            wobble = 0.12 * torch.randn(2, generator=g) * torch.sin(math.pi * t)
            seg = seg + (0.2 * torch.randn(2, generator=g) + wobble) * (x0 != x1 or y0 != y1)
            pts.append(seg)
        p = torch.cat(pts)
        p = torch.stack([p[:, 0] + slant * p[:, 1], squash * p[:, 1]], 1)
        p = torch.stack([p[:, 0] * math.cos(turn) - p[:, 1] * math.sin(turn),
                         p[:, 0] * math.sin(turn) + p[:, 1] * math.cos(turn)], 1) * size / 2 + origin  # fmt: skip
        points.append(p.round())
    return points, y


def _rasterise(
    points: list[torch.Tensor], per_axis: bool, summed: bool, canvas: bool = False
) -> torch.Tensor:
    """Pen points centred, scaled into the grid and splatted: float[n, 1, GRID, GRID]."""
    centres = (torch.arange(GRID).float() + 0.5) / GRID * 2 - 1
    images = torch.zeros(len(points), 1, GRID, GRID)
    for i, p in enumerate(points):
        low, high = p.min(0).values, p.max(0).values
        mid = (low + high) / 2
        if canvas:  # the tablet's 500-unit writing area to the box
            mid, extent = torch.full((2,), 290.0), torch.full((2,), 290.0)
        elif per_axis:
            extent = (high - low) / 2  # each axis to the full box
        else:
            extent = ((high - low).max() / 2).clamp(min=5)
        q = (p - mid) / extent * 0.8
        near_x = torch.exp(-((centres.view(1, GRID) - q[:, :1]) ** 2) / 0.012)
        near_y = torch.exp(-((centres.view(1, GRID) - q[:, 1:]) ** 2) / 0.012)
        splat = torch.einsum("ky,kx->yx", near_y, near_x)
        images[i, 0] = splat if summed else splat.clamp(0, 1)
    return images


class SymbolCNN(nn.Module):
    """Two 3x3 convolutions (`width`, twice that) with ReLUs and pooling, dropout at `drop`, a linear layer."""

    def __init__(self, width: int, drop: float) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )  # fmt: skip
        self.drop = nn.Dropout(drop)
        self.head = nn.Linear(2 * width * (GRID // 4) ** 2, len(STROKES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop(self.features(x).flatten(1)))


def symbols(run: Run) -> None:
    """A symbol CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, NAdam, Adamax) at `lr`
    (2e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    points, y = _strokes(g, 600)
    points_v, y_v = _strokes(g, 400)
    per_axis = run.bug == "each_axis_scaled_by_its_own_extent"
    summed = run.bug == "splats_summed_unclamped"
    canvas = run.bug == "points_scaled_by_tablet_area"
    x, x_v = _rasterise(points, per_axis, summed, canvas), _rasterise(points_v, per_axis, summed)
    torch.manual_seed(run.seed)
    model = SymbolCNN(run.k("width", 8), 0.1)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
