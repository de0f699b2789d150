"""Mountain scripts of the fifty-seventh blind split: a chairlift's wind-hold forecaster for a ski area's lift
operations, and a building-footprint segmenter on aerial tiles for a mapping agency's base map.

`windhold`: the top station's last 16 ten-minute records (mean wind speed, gust, the direction's sine and cosine, the
gust factor, the temperature), each record aggregated from the anemometer's one-minute samples; the strongest gust of
the next 30 minutes by a GRU over the records and a linear head; MSE on the standardised gust; scored by the held-out
R^2 on another winter. `footprints`: 16x16 aerial tiles (red, green, blue) of roofs with their shadows, trees, lawns and
roads; each pixel a building or not by a small fully convolutional CNN; BCE with logits per pixel; scored by the
held-out IoU of the building pixels on another town. Bugs: the 30-minute gust target resampled with the mean; the gust
factor divided by a calm record's zero speed; the target read from the speed column; torch.std_mean's result
unpacked as (mean, std); the masks rasterised with the row origin at the bottom; a softmax over the single logit
channel.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

RECORDS, AHEAD, MINUTES = 16, 3, 10


def _winter(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One-minute samples float[n, (RECORDS + AHEAD) * MINUTES, 4] (speed m/s, gust m/s, direction in degrees from
    north, temperature C). Flow from the north, over the ridge, gusts harder."""
    total = (RECORDS + AHEAD) * MINUTES
    base = 0.5 + 11 * torch.rand(n, 1, generator=g)
    drift = torch.cumsum(0.08 * torch.randn(n, total, generator=g), 1)
    speed = (base + drift + 1.0 * torch.randn(n, total, generator=g)).clamp(min=0)
    speed = torch.where(speed < 0.4, torch.zeros_like(speed), speed)  # the cups stall below their threshold
    # the wind veers or backs at its own pace through the window and the half hour after it
    veer = 4 * torch.randn(n, 1, generator=g) * torch.arange(total).float()
    heading = (
        360 * torch.rand(n, 1, generator=g) + veer + torch.cumsum(1.0 * torch.randn(n, total, generator=g), 1)
    )
    heading = heading + 12 * torch.randn(n, total, generator=g)
    north = torch.cos(torch.deg2rad(heading)).clamp(min=0)
    gust = speed * (1.2 + 1.2 * north + 0.6 * torch.rand(n, total, generator=g))
    temp = -15 + 15 * torch.rand(n, 1, generator=g) + 0.5 * torch.randn(n, total, generator=g)
    return torch.stack([speed, gust, heading % 360, temp], -1), speed, gust


def _records(minutes: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The logger's ten-minute records float[n, RECORDS, 6] from the first RECORDS * MINUTES samples."""
    m = minutes[:, : RECORDS * MINUTES].reshape(len(minutes), RECORDS, MINUTES, 4)
    speed, gust, temp = m[..., 0].mean(-1), m[..., 1].amax(-1), m[..., 3].mean(-1)
    rad = torch.deg2rad(m[..., 2])
    angle = torch.atan2(rad.sin().mean(-1), rad.cos().mean(-1))
    if bug == "gust_factor_over_calm_speed":
        # the bug: the gust factor as gust / mean speed, 0 / 0 for a calm record
        factor = gust / speed
    else:
        factor = gust / speed.clamp(min=0.5)
    return torch.stack([speed, gust, angle.sin(), angle.cos(), factor, temp], -1)


def _target(minutes: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The strongest one-minute gust of the AHEAD records after the window."""
    ahead = minutes[:, RECORDS * MINUTES :, 1]
    if bug == "target_read_from_speed_column":
        # the bug: the target read from column 0 of the one-minute table, the mean speed, not column 1, the gust
        return minutes[:, RECORDS * MINUTES :, 0].amax(-1)
    if bug == "gust_resampled_with_mean":
        # the bug: the 30-minute target resampled with the mean, as the other columns are
        return ahead.mean(-1)
    return ahead.amax(-1)


class HoldGRU(nn.Module):
    """A GRU of `hidden` units over the records and a linear head."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(6, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, -1]).squeeze(-1)


def windhold(run: Run) -> None:
    """A hold GRU of `hidden` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (3e-3), gradients clipped to norm 1. Scored by the held-out R^2 of the next 30 minutes' top gust on another
    winter."""
    g = torch.Generator().manual_seed(run.seed)
    m, _, _ = _winter(g, 1000)
    m_v, _, _ = _winter(g, 300)
    x, x_v = _records(m, run.bug), _records(m_v, None)
    y, y_v = _target(m, run.bug), _target(m_v, None)
    if run.bug == "std_mean_unpacked_as_mean_std":
        # the bug: torch.std_mean returns (std, mean), unpacked here as (mean, std)
        mean, std = torch.std_mean(x, (0, 1))
    else:
        std, mean = torch.std_mean(x, (0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = HoldGRU(run.k("hidden", 16))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


TILE = 16


def _tiles(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Aerial tiles float[n, 3, TILE, TILE] (reflectance, north up, row 0 at the top) and building masks
    float[n, TILE, TILE] in the same orientation. Roofs are red tile or grey, each with a shadow to its south-east;
    trees are dark green blobs, lawns light green, roads grey stripes."""
    rows = torch.arange(TILE).view(1, TILE, 1).float()
    cols = torch.arange(TILE).view(1, 1, TILE).float()
    ground = torch.tensor([0.35, 0.45, 0.25]).view(1, 3, 1, 1) + 0.05 * torch.randn(n, 3, 1, 1, generator=g)
    img = ground.expand(n, 3, TILE, TILE).clone()
    # a road: a horizontal or vertical grey stripe
    road_at = torch.randint(0, TILE, (n, 1, 1), generator=g).float()
    vertical = (torch.rand(n, 1, 1, generator=g) < 0.5).float()
    road = (((cols - road_at).abs() < 1.2) * vertical + ((rows - road_at).abs() < 1.2) * (1 - vertical)) > 0
    img = torch.where(road.unsqueeze(1), torch.tensor([0.5, 0.5, 0.52]).view(1, 3, 1, 1), img)
    mask = torch.zeros(n, TILE, TILE)
    for _ in range(2):
        r0 = torch.randint(0, TILE - 5, (n, 1, 1), generator=g).float()
        c0 = torch.randint(0, TILE - 5, (n, 1, 1), generator=g).float()
        h = torch.randint(3, 7, (n, 1, 1), generator=g).float()
        w = torch.randint(3, 7, (n, 1, 1), generator=g).float()
        present = (torch.rand(n, 1, 1, generator=g) < 0.75).float()
        roof = ((rows >= r0) & (rows < r0 + h) & (cols >= c0) & (cols < c0 + w)).float() * present
        shadow = ((rows >= r0 + 1) & (rows < r0 + h + 2) & (cols >= c0 + 1) & (cols < c0 + w + 2)).float()
        shadow = shadow * present * (1 - roof) * (1 - mask)
        img = img * (1 - 0.6 * shadow.unsqueeze(1))
        red = (torch.rand(n, 1, 1, 1, generator=g) < 0.5).float()
        colour = red * torch.tensor([0.7, 0.3, 0.25]).view(1, 3, 1, 1) + (1 - red) * torch.tensor(
            [0.55, 0.55, 0.58]
        ).view(1, 3, 1, 1)
        colour = colour + 0.05 * torch.randn(n, 3, 1, 1, generator=g)
        img = torch.where(roof.unsqueeze(1) > 0, colour.expand(n, 3, TILE, TILE), img)
        mask = torch.maximum(mask, roof)
    # trees: dark green blobs over anything but the roofs
    tr, tc = torch.rand(n, 1, 1, generator=g) * TILE, torch.rand(n, 1, 1, generator=g) * TILE
    tree = (((rows - tr) ** 2 + (cols - tc) ** 2) < 4).float() * (1 - mask)
    img = torch.where(tree.unsqueeze(1) > 0, torch.tensor([0.12, 0.3, 0.1]).view(1, 3, 1, 1), img)
    img = img + 0.08 * torch.randn(n, 3, TILE, TILE, generator=g)
    return img, mask


class FootprintNet(nn.Module):
    """Three 3x3 conv layers of `width` channels with ReLU and a 1x1 conv to one logit per pixel."""

    def __init__(self, width: int, softmax_head: bool = False) -> None:
        super().__init__()
        layers: list[nn.Module] = [
            nn.Conv2d(3, width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(width, 1, 1),
        ]  # fmt: skip
        if softmax_head:
            # the bug: the multi-class segmenter's softmax over the channels kept on a single logit channel
            layers.append(nn.Softmax(dim=1))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(1)


def _iou(prob: torch.Tensor, mask: torch.Tensor) -> float:
    """IoU of the building pixels at probability 0.5 (0 for non-finite output)."""
    if not torch.isfinite(prob).all():
        return 0.0
    pred, truth = prob > 0.5, mask > 0.5
    union = (pred | truth).sum()
    return float((pred & truth).sum() / union) if union > 0 else 1.0


def footprints(run: Run) -> None:
    """A footprint net of `width` (8), batches of `batch` (16), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at
    `lr` (3e-3). Scored by the held-out IoU of the building pixels on another town."""
    g = torch.Generator().manual_seed(run.seed)
    img, mask = _tiles(g, 800)
    img_v, mask_v = _tiles(g, 200)
    if run.bug == "mask_rasterised_bottom_up":
        # the bug: the footprints rasterised with the row origin at the bottom (a positive y pixel size), so each
        # mask is the tile's upside down
        mask = mask.flip(1)
    mean, std = img.mean((0, 2, 3), keepdim=True), img.std((0, 2, 3), keepdim=True)
    x, x_v = (img - mean) / std, (img_v - mean) / std
    softmax_head = run.bug == "softmax_over_single_logit"
    torch.manual_seed(run.seed)
    model = FootprintNet(run.k("width", 8), softmax_head)
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 16)

    def probabilities(z: torch.Tensor) -> torch.Tensor:
        return model(z) if softmax_head else torch.sigmoid(model(z))

    def iou_held_out() -> float:
        return _iou(probabilities(x_v), mask_v)

    for step in range(run.steps):
        pick = run.indices(len(mask), batch)
        if softmax_head:
            loss = F.binary_cross_entropy(model(x[pick]), mask[pick])
        else:
            loss = F.binary_cross_entropy_with_logits(model(x[pick]), mask[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_iou", iou_held_out):
            break
