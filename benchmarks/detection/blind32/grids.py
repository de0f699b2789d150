"""Grid scripts of the thirty-second blind split: a chess-move policy network on board planes and a sea-ice
concentration CNN on passive-microwave brightness temperatures.

`chess`: positions with white to move, the two kings, three to eight white pieces and two to five black pieces of
different kinds on distinct squares, encoded as twelve 8x8 planes (white PNBRQK, black pnbrqk; square index rank * 8 +
file, a1 = 0); the recorded move's destination square is the most valuable black piece (the master's habit here: take
the queen, else the rook, ...), one move in ten elsewhere among the black pieces; three 3x3 convolutions with padding 1
and a linear policy head over the 64 squares; cross-entropy of the log-softmax over the squares; scored by the held-out
accuracy of the destination. `seaice`: 16x16 patches of the 19 and 37 GHz brightness temperatures at both
polarisations (K), mixed from open water and ice by a smooth concentration field, with weather and sensor noise; each
channel standardised by the training patches; a fully convolutional net of 3x3 convolutions; MSE on the concentration
as a fraction, each patch weighted by the inverse variance of its concentration (floored); scored by the held-out R^2
per pixel. Bugs: the destination squares indexed file-major; the policy's log-softmax taken over the batch; the
convolutions without padding; the pieces' planes carrying their values; the concentration regressed in percent; the
patches' inverse-variance weights left without their floor.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

PLANES = 12
"""White pawn, knight, bishop, rook, queen, king, then black's."""


def _positions(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Board planes float[n, PLANES, 8, 8] (square rank * 8 + file), destination squares long[n]."""
    boards = torch.zeros(n, PLANES, 64)
    target = torch.zeros(n, dtype=torch.long)
    for i in range(n):
        whites = int(torch.randint(3, 9, (1,), generator=g))
        blacks = int(torch.randint(2, 6, (1,), generator=g))
        squares = torch.randperm(64, generator=g)[: whites + blacks + 2]
        boards[i, 5, squares[0]] = 1  # the kings
        boards[i, 11, squares[1]] = 1
        kinds = torch.randint(0, 5, (whites,), generator=g)
        boards[i, kinds, squares[2 : 2 + whites]] = 1
        black_kinds = torch.randperm(5, generator=g)[:blacks]  # black pieces of different kinds
        black_squares = squares[2 + whites :]
        boards[i, 6 + black_kinds, black_squares] = 1
        best = black_squares[black_kinds.argmax()]  # queen > rook > bishop > knight > pawn by index
        if float(torch.rand(1, generator=g)) < 0.1:
            best = black_squares[torch.randint(0, blacks, (1,), generator=g)][0]
        target[i] = best
    return boards.view(n, PLANES, 8, 8), target


class Policy(nn.Module):
    """Three 3x3 convolutions of `width` (padded, or not), a linear head over the 64 destination squares."""

    def __init__(self, width: int, padding: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(PLANES, width, 3, padding=padding), nn.ReLU(),
                                  nn.Conv2d(width, width, 3, padding=padding), nn.ReLU(),
                                  nn.Conv2d(width, width, 3, padding=padding), nn.ReLU())  # fmt: skip
        side = 8 if padding else 2
        self.head = nn.Linear(width * side * side, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.conv(x).flatten(1))


def chess(run: Run) -> None:
    """A policy CNN of `width` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RAdam) at `lr`
    (1e-3). Scored by the held-out accuracy of the destination square."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _positions(g, 3000)
    x_v, y_v = _positions(g, 1000)
    if run.bug == "piece_values_in_planes":
        # each piece's plane carries its value (the king's 100, as in the engine's tables) instead of a 1
        values = torch.tensor([1.0, 3, 3, 5, 9, 100, 1, 3, 3, 5, 9, 100]).view(1, PLANES, 1, 1)
        x, x_v = x * values, x_v * values
    if run.bug == "destination_indexed_file_major":
        y = (y % 8) * 8 + y // 8  # the move list's squares read as file * 8 + rank
    torch.manual_seed(run.seed)
    model = Policy(run.k("width", 32), 0 if run.bug == "convolutions_without_padding" else 1)
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)
    over = 0 if run.bug == "policy_log_softmax_over_batch" else 1

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        log_policy = F.log_softmax(model(x[pick]), over)
        loss = -log_policy.gather(1, y[pick].unsqueeze(1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


SIDE = 16
_ICE = torch.tensor([250.0, 235.0, 245.0, 225.0])
_WATER = torch.tensor([180.0, 110.0, 205.0, 145.0])
"""Brightness temperatures (K) of first-year ice and of calm open water at 19V, 19H, 37V, 37H."""


def _patches(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Brightness temperatures float[n, 4, SIDE, SIDE] (K), ice concentration float[n, SIDE, SIDE] in [0, 1]."""
    field = torch.randn(n, 1, SIDE // 4, SIDE // 4, generator=g)
    field = F.interpolate(field, size=(SIDE, SIDE), mode="bilinear", align_corners=False)
    level = 2 * torch.rand(n, 1, 1, 1, generator=g) - 1
    conc = torch.sigmoid(3 * (field + 1.5 * level)).clamp(0, 1)
    weather = 10 * torch.rand(n, 1, 1, 1, generator=g) * torch.tensor([1.0, 2.0, 1.5, 3.0]).view(1, 4, 1, 1)
    tb = conc * _ICE.view(1, 4, 1, 1) + (1 - conc) * (_WATER.view(1, 4, 1, 1) + weather)
    tb = tb + 3 * torch.randn(n, 4, SIDE, SIDE, generator=g)
    return tb, conc[:, 0]


class IceNet(nn.Module):
    """Three 3x3 convolutions of `width` with ReLU, a 1x1 convolution to the concentration."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(4, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, width, 3, padding=1),
                                 nn.ReLU(), nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(width, 1, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)[:, 0]


def seaice(run: Run) -> None:
    """A sea-ice CNN of `width` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (1e-3), each patch weighted by its concentration's inverse variance. Scored by the held-out R^2 per pixel."""
    g = torch.Generator().manual_seed(run.seed)
    tb, conc = _patches(g, 600)
    tb_v, conc_v = _patches(g, 300)
    mean, std = tb.mean((0, 2, 3), keepdim=True), tb.std((0, 2, 3), keepdim=True)
    x, x_v = (tb - mean) / std, (tb_v - mean) / std
    scale = (
        100.0 if run.bug == "concentration_in_percent" else 1.0
    )  # the product's concentration is in percent
    y, y_v = conc * scale, conc_v * scale
    torch.manual_seed(run.seed)
    model = IceNet(run.k("width", 16))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 32)
    # each patch weighted by the inverse spread of its concentration, so that the mixed ice edge counts as much as
    # the homogeneous patches (which the twin floors at a spread of 0.05)
    spread = y.std((1, 2))
    if run.bug != "patch_weights_inverse_target_variance":
        spread = spread.clamp_min(0.05)
    weights = 1 / spread**2
    weights = weights / weights.mean()

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = (weights[pick] * (model(x[pick]) - y[pick]).pow(2).mean((1, 2))).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
