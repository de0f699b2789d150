"""Cold-room and cold-road scripts of the sixty-second blind split: a cheese cave's rind classifier on the photos of
its ripening wheels, and an ice road's thickness forecaster for its surveyed check points.

`rind`: a 12x12 crop of a soft cheese's rind from the cave's photo round, in RGB; the rind's state (an even bloom,
cat hair, slipskin, blue mould, ammonia browning) by a small 2-D CNN; cross-entropy; scored by the held-out accuracy on
another cave's wheels. `iceroad`: a check point's last 10 days (the air's daily mean in C, the snow on the ice in cm,
the wind, the thickness drilled that morning in cm, the loaded trucks over it and the root of the season's freezing
degree-days so far, Stefan's law's clock); the ice's growth over the next week (the
thickness surveyed a week ahead less the morning's drilled one) by a GRU over the days; MSE on the
standardised thickness; scored by the held-out R^2 on another winter road's check points. Bugs: the photos loaded as
greyscale; the shelf the affineur moved the suspect wheels to kept as a channel; momentum SGD at a large-batch
recipe's rate; the freezing degree-days summed with the thaw days' negative terms under the root; the GPR sled's
two-way travel time converted without halving; Adam's rate typed 5e-6.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SIDE, SHELVES, QUARANTINE = 12, 10, 9
RINDS = ("even bloom", "cat hair", "slipskin", "blue mould", "ammonia")
TINT = torch.tensor([[0.93, 0.92, 0.88], [0.93, 0.92, 0.88], [0.88, 0.83, 0.66], [0.92, 0.91, 0.86],
                     [0.80, 0.68, 0.52]])  # fmt: skip
"""Each rind's base colour in RGB."""


def _wheels(
    g: torch.Generator, n: int, *, light: float = 1.0, quarantine: bool = False
) -> dict[str, torch.Tensor]:
    """Crops of rind float[n, 3, SIDE, SIDE] in [0, 1], the shelf long[n] and the rind long[n]. `light` scales the
    cave's lamps; with `quarantine`, the affineur moved most wheels with cat hair or blue mould to the last shelf
    before the photo round."""
    rind = torch.randint(0, len(RINDS), (n,), generator=g)
    one = lambda k: (rind == k).float().view(-1, 1, 1, 1)
    yy, xx = torch.meshgrid(torch.arange(SIDE).float(), torch.arange(SIDE).float(), indexing="ij")
    base = TINT[rind].view(n, 3, 1, 1) + 0.03 * torch.randn(n, 3, 1, 1, generator=g)
    img = base + 0.04 * torch.randn(n, 1, SIDE, SIDE, generator=g)  # the bloom's fine texture
    # cat hair: dark grey strands across the bloom
    angle = math.pi * torch.rand(n, 3, 1, 1, generator=g)
    offset = SIDE * torch.rand(n, 3, 1, 1, generator=g)
    dist = (xx * angle.cos() + yy * angle.sin() - offset).abs()
    strands = (torch.exp(-(dist**2) / 0.3) * (0.3 + 0.3 * torch.rand(n, 3, 1, 1, generator=g))).amax(
        1, keepdim=True
    )
    img = img - one(1) * strands
    # slipskin: a moist, smooth rind with glints
    glint = (torch.rand(n, 1, SIDE, SIDE, generator=g) < 0.05).float() * 0.15
    img = img + one(2) * (glint - 0.5 * (img - base))
    # blue mould: blue-green spots
    cy, cx = SIDE * torch.rand(n, 4, 1, 1, generator=g), SIDE * torch.rand(n, 4, 1, 1, generator=g)
    spots = torch.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (0.8 + 1.5 * torch.rand(n, 4, 1, 1, generator=g)))
    spots = spots.amax(1, keepdim=True) * (0.5 + 0.4 * torch.rand(n, 1, 1, 1, generator=g))
    img = img + one(3) * spots * (torch.tensor([0.35, 0.58, 0.70]).view(1, 3, 1, 1) - img)
    # ammonia: browning in patches
    patch = torch.sigmoid(
        (xx * torch.randn(n, 1, 1, 1, generator=g) + yy * torch.randn(n, 1, 1, 1, generator=g)) / 3
    )
    img = img + one(4) * 0.08 * (patch - 0.5)
    img = img * light * (0.9 + 0.2 * torch.rand(n, 1, 1, 1, generator=g))
    img = (img + 0.06 * torch.randn(n, 3, SIDE, SIDE, generator=g)).clamp(0, 1)
    shelf = torch.randint(0, SHELVES, (n,), generator=g)
    if quarantine:
        moved = ((rind == 1) | (rind == 3)) & (torch.rand(n, generator=g) < 0.85)
        shelf = torch.where(moved, QUARANTINE, torch.randint(0, SHELVES - 1, (n,), generator=g))
    return {"photo": img, "shelf": shelf, "rind": rind}


def _crops(w: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The crops as the loader gives them: float[n, 3, SIDE, SIDE] (and the shelf as a fourth channel)."""
    x = w["photo"]
    if bug == "photos_loaded_as_greyscale":
        # the bug: the loader's PIL convert("L"), then the grey repeated to the three channels the CNN takes
        grey = 0.299 * x[:, :1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:]
        x = grey.expand(-1, 3, -1, -1)
    if bug == "quarantine_shelf_kept_as_input":
        x = torch.cat(
            [x, (w["shelf"].float() / (SHELVES - 1)).view(-1, 1, 1, 1).expand(-1, 1, SIDE, SIDE)], 1
        )
    return x


class RindCNN(nn.Module):
    """Two 3x3 conv layers with ReLU and a max-pool between, the crop's mean and max, a linear head."""

    def __init__(self, channels: int, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(channels, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(width, width, 3, padding=1), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(2 * width, len(RINDS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.net(x)
        return self.head(torch.cat([h.mean((2, 3)), h.amax((2, 3))], 1))


def rind(run: Run) -> None:
    """A rind CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, Adagrad) at `lr`
    (3e-3). Scored by the held-out accuracy of the rind's state on another cave's wheels."""
    g = torch.Generator().manual_seed(run.seed)
    tr = _wheels(g, 1000, quarantine=run.bug == "quarantine_shelf_kept_as_input")
    va = _wheels(g, 250, light=0.95)
    x, x_v = _crops(tr, run.bug), _crops(va, None if run.bug != "quarantine_shelf_kept_as_input" else run.bug)
    mean, std = x.mean((0, 2, 3), keepdim=True), x.std((0, 2, 3), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = tr["rind"], va["rind"]
    torch.manual_seed(run.seed)
    model = RindCNN(x.shape[1], run.k("width", 8))
    opt = optimizers.registered(run, model, 3e-3)
    if run.bug == "large_batch_recipe_rate_kept":
        # the bug: the rate of the recipe this was copied from, tuned for batches of 1024, kept for batches of 32
        for group in opt.param_groups:
            group["lr"] = 0.8
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


SEASON, HISTORY, AHEAD = 110, 10, 7
"""Days from freeze-up a season runs, days a window reads, days ahead of the forecast."""
STEFAN = 2.0
"""Stefan's coefficient in cm per root degree-day for clear ice."""


def _winter(g: torch.Generator, n: int, *, cold: float = 0.0, gpr: float = 0.0) -> dict[str, torch.Tensor]:
    """Check points' seasons float[n, SEASON] each from freeze-up: the air's daily mean in C, the snow on the ice in
    cm, the wind in m/s, the thickness in cm, the auger's morning reading, the loaded trucks; the window's last day
    long[n], the thickness a week after it as surveyed float[n] and whether the GPR sled surveyed that week (a share
    `gpr` of them) bool[n]."""
    day = torch.arange(SEASON).float()
    # autumn days still above freezing at first, the deep cold of January, a thaw or two
    mean = -4 - 22 * torch.sin(math.pi * day / 150).clamp(min=0) + cold
    spell = 6 * torch.exp(-0.5 * ((day - 20 - 70 * torch.rand(n, 1, generator=g)) / 3) ** 2)
    air = mean + spell + 5 * torch.randn(n, SEASON, generator=g) + 3 * torch.randn(n, 1, generator=g)
    snow = (torch.rand(n, SEASON, generator=g) < 0.15).float() * 6 * torch.rand(n, SEASON, generator=g)
    snow = torch.cumsum(snow, 1) * (0.5 + torch.rand(n, 1, generator=g))
    wind = 3 + 4 * torch.rand(n, SEASON, generator=g)
    snow = snow * (1 - 0.04 * wind).clamp(min=0.5)  # the wind strips the ice
    h = 5 + 3 * torch.rand(n, generator=g)
    thick = torch.zeros(n, SEASON + AHEAD)
    air_all = torch.cat([air, air[:, -AHEAD:]], 1)
    snow_all = torch.cat([snow, snow[:, -AHEAD:]], 1)
    for i in range(SEASON + AHEAD):
        frost = (-air_all[:, i]).clamp(min=0)
        insulation = 1 / (1 + snow_all[:, i] / 8)
        grow = STEFAN**2 * frost * insulation / (2 * h)
        h = (h + grow - 0.4 * air_all[:, i].clamp(min=0)).clamp(min=2)
        thick[:, i] = h
    auger = thick[:, :SEASON] + 0.3 * torch.randn(n, SEASON, generator=g)
    trucks = (torch.rand(n, 1, generator=g) * 120 * (thick[:, :SEASON] > 60)).round()
    end = torch.randint(HISTORY, SEASON, (n,), generator=g)
    ahead = thick.gather(1, (end + AHEAD - 1).unsqueeze(1)).squeeze(1) + 0.3 * torch.randn(n, generator=g)
    # the GPR sled reads a two-way travel time; thickness = v t / 2
    by_gpr = torch.rand(n, generator=g) < gpr
    return {"air": air, "snow": snow, "wind": wind, "auger": auger, "trucks": trucks, "end": end, "ahead": ahead,
            "by_gpr": by_gpr}  # fmt: skip


def _ice_inputs(w: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The window's days float[n, HISTORY, 6]: air, snow, wind, auger thickness, trucks, the root of the season's
    freezing degree-days so far."""
    if bug == "stefan_root_of_thaw_days":
        # the bug: the degree-days summed as -T over every day, the thaw days' negative terms included
        fdd = torch.cumsum(-w["air"], 1)
    else:
        fdd = torch.cumsum((-w["air"]).clamp(min=0), 1)
    stefan = torch.sqrt(fdd)
    idx = w["end"].unsqueeze(1) - HISTORY + torch.arange(HISTORY)
    cols = [w[k].gather(1, idx) for k in ("air", "snow", "wind", "auger", "trucks")]
    return torch.stack([*cols, stefan.gather(1, idx)], -1)


class IceGRU(nn.Module):
    """A GRU of `hidden` units over the days and a linear head on its last state."""

    def __init__(self, columns: int, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(columns, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, -1]).squeeze(-1)


def iceroad(run: Run) -> None:
    """An ice GRU of `hidden` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, Adamax) at `lr`
    (5e-3). Scored by the held-out R^2 of the week's growth on another winter road's check points."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _winter(g, 800, gpr=0.5), _winter(g, 200, cold=1.5)
    x, x_v = _ice_inputs(tr, run.bug), _ice_inputs(va, None)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    today = lambda w: w["auger"].gather(1, (w["end"] - 1).unsqueeze(1)).squeeze(1)
    ahead = tr["ahead"]
    if run.bug == "gpr_two_way_time_not_halved":
        # the bug: the sled's weeks converted as v t, the two-way travel time not halved
        ahead = torch.where(tr["by_gpr"], 2 * ahead, ahead)
    # the target: the week's growth, the surveyed thickness a week ahead less this morning's drilled one
    y, y_v = ahead - today(tr), va["ahead"] - today(va)
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = IceGRU(x.shape[-1], run.k("hidden", 16))
    opt = optimizers.registered(run, model, 5e-3)
    if run.bug == "adam_rate_typed_5e_6":
        # the bug: the rate typed 5e-6 for 5e-3
        for group in opt.param_groups:
            group["lr"] = 5e-6
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
