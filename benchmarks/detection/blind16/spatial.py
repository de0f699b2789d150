"""Scripts on positions and pixels of the sixteenth blind split: a pedestrian trajectory predictor, and an image
colouriser.

`trajectory`: pedestrians walking at 0.8-1.6 m/s along slowly turning paths (a tenth of them standing still, which
the tracker reports at exactly the same spot), sampled every 0.4 s with 3 cm of tracker noise; 8 observed positions,
12 to predict; a GRU over the observed steps' displacements, with the last step's heading (a unit vector) and speed
beside its state, and an MLP to the 12 future offsets from the last observed position; mean squared error under
momentum SGD; scored by the share of held-out pedestrians whose average displacement error over
the 12 predicted positions is under 0.5 m.
`colouriser`: 16x16 RGB pictures (uint8, as decoded) of a sky-to-ground gradient with a few shapes whose colour
follows their kind (red discs, yellow squares, blue crosses); the network sees the grey picture (the channels'
mean) and predicts the colour picture as a correction to the grey one, by a small dilated CNN under mean squared
error; scored by how much of the grey picture's error to the true colours the prediction removes on held-out pictures.
Bugs: the loss summed over the batch and the horizon; the futures taken from one frame late; the heading of a
standing pedestrian divided by its zero speed; the targets' channels read in BGR order; the grey picture summed in
uint8; every weight initialised to zero.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

OBSERVED, FUTURE, DT = 8, 12, 0.4
"""Observed positions, positions to predict, seconds between them."""


def _tracks(g: torch.Generator, n: int) -> torch.Tensor:
    """Tracks float[n, OBSERVED + FUTURE + 1, 2] in metres (one spare position at the end)."""
    steps = OBSERVED + FUTURE + 1
    speed = 0.8 + 0.8 * torch.rand(n, generator=g)
    speed = torch.where(torch.rand(n, generator=g) < 0.1, torch.zeros(()), speed)
    heading = 2 * math.pi * torch.rand(n, generator=g)
    turn = 0.12 * torch.randn(n, generator=g)
    angles = heading.unsqueeze(1) + turn.unsqueeze(1) * torch.arange(steps)
    moves = (speed * DT).unsqueeze(1).unsqueeze(2) * torch.stack([angles.cos(), angles.sin()], 2)
    start = 10 * torch.randn(n, 1, 2, generator=g)
    path = start + torch.cumsum(moves, 1) - moves[:, :1]
    noise = 0.03 * torch.randn(n, steps, 2, generator=g) * (speed > 0).float().view(n, 1, 1)
    return path + noise


class TrajectoryNet(nn.Module):
    """A GRU of `hidden` over the observed displacements (in the walker's frame); its state and the speed -> the 12
    future steps, summed into offsets."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(2, hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden + 1, hidden), nn.ReLU(), nn.Linear(hidden, 2 * FUTURE))

    def forward(self, moves: torch.Tensor, speed: torch.Tensor) -> torch.Tensor:
        _, h = self.gru(moves)
        steps = self.head(torch.cat([h[0], speed.unsqueeze(1)], 1)).view(-1, FUTURE, 2)
        return torch.cumsum(steps, 1)


def _to_walker_frame(points: torch.Tensor, heading: torch.Tensor) -> torch.Tensor:
    """`points` float[n, k, 2] rotated so that `heading` (unit vectors float[n, 2]) points along +x."""
    c, s = heading[:, :1], heading[:, 1:]
    return torch.stack([c * points[..., 0] + s * points[..., 1], c * points[..., 1] - s * points[..., 0]], -1)


def _walker_frame(
    tracks: torch.Tensor, first: int, bug: str | None
) -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The model's inputs for `tracks` (the observed displacements in the frame of the last step's heading, and the
    speed in m/s) and the 12 future offsets from the last observed position in that frame, the first at `first`."""
    moves = tracks[:, 1:OBSERVED] - tracks[:, : OBSERVED - 1]
    last = moves[:, -1]
    length = last.norm(dim=1, keepdim=True)
    if bug != "heading_of_standing_pedestrian_divided_by_zero":
        length = length.clamp_min(1e-6)
    heading = last / length
    future = tracks[:, first : first + FUTURE] - tracks[:, OBSERVED - 1 : OBSERVED]
    return (_to_walker_frame(moves, heading), length[:, 0] / DT), _to_walker_frame(future, heading)


def trajectory(run: Run) -> None:
    """A trajectory predictor with a GRU of `hidden` (64), batches of `batch` (128), `opt` (momentum SGD; or
    Adam, Nesterov SGD, RMSprop) at `lr` (0.02). Scored by the share of held-out pedestrians whose
    average displacement error is under 0.5 m."""
    g = torch.Generator().manual_seed(run.seed)
    tracks, tracks_v = _tracks(g, 4000), _tracks(g, 600)
    first = OBSERVED + 1 if run.bug == "futures_taken_one_frame_late" else OBSERVED
    inputs, future = _walker_frame(tracks, first, run.bug)
    inputs_v, future_v = _walker_frame(tracks_v, OBSERVED, run.bug)
    torch.manual_seed(run.seed)
    model = TrajectoryNet(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 0.02, default_opt="momentum")
    batch = run.k("batch", 128)

    def ade_within_half_metre() -> float:
        ade = (model(*inputs_v) - future_v).norm(dim=2).mean(1)
        return float((ade < 0.5).float().mean())

    for step in range(run.steps):
        pick = run.indices(len(tracks), batch)
        err = (model(*(t[pick] for t in inputs)) - future[pick]) ** 2
        loss = err.sum() if run.bug == "loss_summed_over_batch_and_horizon" else err.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_ade_within_0.5m", ade_within_half_metre):
            break


SIDE = 16
"""Side of a picture."""


def _pictures(g: torch.Generator, n: int) -> torch.Tensor:
    """RGB pictures uint8[n, 3, SIDE, SIDE]: a sky-to-ground gradient and 3 shapes coloured by their kind."""
    rows = torch.linspace(0, 1, SIDE).view(1, SIDE, 1)
    sky, ground = torch.tensor([110.0, 160.0, 230.0]), torch.tensor([70.0, 140.0, 60.0])
    horizon = 0.3 + 0.4 * torch.rand(n, 1, 1, generator=g)
    below = torch.sigmoid((rows - horizon) * 30).unsqueeze(1)
    img = sky.view(1, 3, 1, 1) * (1 - below) + ground.view(1, 3, 1, 1) * below
    img = img.expand(n, 3, SIDE, SIDE).clone()
    ys, xs = torch.meshgrid(torch.arange(SIDE), torch.arange(SIDE), indexing="ij")
    colours = torch.tensor([[220.0, 40.0, 40.0], [240.0, 220.0, 50.0], [40.0, 60.0, 220.0]])
    for _ in range(3):
        kind = torch.randint(0, 3, (n,), generator=g)
        cy, cx = (torch.randint(3, SIDE - 3, (n,), generator=g).view(n, 1, 1) for _ in range(2))
        dy, dx = (ys - cy).abs(), (xs - cx).abs()
        disc = dy**2 + dx**2 <= 6
        square = (dy <= 2) & (dx <= 2)
        cross = ((dy <= 2) & (dx == 0)) | ((dx <= 2) & (dy == 0))
        shape = torch.where(
            kind.view(n, 1, 1) == 0, disc, torch.where(kind.view(n, 1, 1) == 1, square, cross)
        )
        img = torch.where(shape.unsqueeze(1), colours[kind].view(n, 3, 1, 1), img)
    img = img + 8 * torch.randn(n, 3, SIDE, SIDE, generator=g)
    return img.round().clamp(0, 255).to(torch.uint8)


class Colouriser(nn.Module):
    """Three 3x3 convolutions of `channels` dilated 1, 2, 4 and a 1x1 to an RGB correction of the grey input."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        c = channels
        self.net = nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=2, dilation=2),
                                 nn.ReLU(), nn.Conv2d(c, c, 3, padding=4, dilation=4), nn.ReLU(), nn.Conv2d(c, 3, 1))  # fmt: skip

    def forward(self, grey: torch.Tensor) -> torch.Tensor:
        return grey + self.net(grey)


def _grey(pictures: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The grey pictures float[n, 1, SIDE, SIDE] in [0, 1]: the mean of the three channels."""
    if bug == "grey_summed_in_uint8":
        total = pictures[:, 0] + pictures[:, 1] + pictures[:, 2]
        return (total / 3 / 255).unsqueeze(1)
    return pictures.float().mean(1, keepdim=True) / 255


def colouriser(run: Run) -> None:
    """A colouriser of `channels` (16), batches of `batch` (32), `opt` (Adam; or AdamW, Adamax, NAdam) at `lr`
    (2e-3). Scored by the share of the grey picture's squared error to the held-out colours that it removes."""
    g = torch.Generator().manual_seed(run.seed)
    pictures, pictures_v = _pictures(g, 2000), _pictures(g, 300)
    target = pictures.float() / 255
    if run.bug == "channels_read_as_bgr":
        target = target.flip(1)
    grey, grey_v = _grey(pictures, run.bug), _grey(pictures_v, run.bug)
    truth_v = pictures_v.float() / 255
    baseline = float(((pictures_v.float().mean(1, keepdim=True) / 255 - truth_v) ** 2).mean())
    torch.manual_seed(run.seed)
    model = Colouriser(run.k("channels", 16))
    if run.bug == "every_weight_initialised_to_zero":
        for p in model.parameters():
            nn.init.zeros_(p)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def error_removed() -> float:
        err = float(((model(grey_v) - truth_v) ** 2).mean())
        return max(0.0, 1 - err / baseline) if math.isfinite(err) else 0.0

    for step in range(run.steps):
        pick = run.indices(len(pictures), batch)
        loss = F.mse_loss(model(grey[pick]), target[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_colour_error_removed", error_removed):
            break
