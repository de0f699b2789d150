"""Road scripts of the twenty-third blind split: a traffic-sign classifier on small colour crops and a taxi-fare
regressor on trip records.

`signs`: 16x16 RGB crops of seven signs (stop, yield, speed limit, no entry, turn left, turn right, ahead only) drawn
as red, white and blue shapes at a random position, size and brightness over a noisy background; the channels
standardised; random shifts of up to a pixel and random horizontal flips that swap the two turn signs' labels; a
two-block CNN and a hidden layer; cross-entropy, accumulated over `accum` mini-batches where the recipe asks for a
larger batch; scored by the held-out accuracy. `fares`: trips with pickup and dropoff coordinates around a city centre,
the hour and the weekday; the fare a flag fall, a rate per road kilometre and a rate per minute in traffic that is
slow in the weekday rush hours, one trip in twenty a flat airport fare, 8% noise; the great-circle distance by the
haversine formula, the offsets between the ends and from the centre; embeddings of the hour and weekday beside them in
an MLP; MSE on the standardised log fare; `ReduceLROnPlateau` on a check fold's loss every 25 steps; scored by the
held-out R^2. Bugs: the shift augmentation rolling over the batch axis; the accumulation sized for the paper's batch of
4096; the one-cycle schedule's divisor given as its inverse; the haversine fed degrees; the Earth's radius given in
metres; the optimizer's step indented into the validation block; the plateau scheduler fed each batch's loss.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SIDE, SIGNS, LEFT, RIGHT = 16, 7, 4, 5
"""Crop side, sign classes, and the turn-left and turn-right classes (mirror images of each other)."""
RED, WHITE, BLUE = (0.8, 0.1, 0.12), (0.92, 0.92, 0.9), (0.1, 0.25, 0.8)


def _signs(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Crops float[n, 3, SIDE, SIDE] in [0, 1] and classes long[n]."""
    y = torch.randint(0, SIGNS, (n,), generator=g)
    grid = torch.arange(SIDE, dtype=torch.float)
    cx = 7.5 + 1.5 * (2 * torch.rand(n, 1, 1, generator=g) - 1)
    cy = 7.5 + 1.5 * (2 * torch.rand(n, 1, 1, generator=g) - 1)
    r = 5 + 1.5 * torch.rand(n, 1, 1, generator=g)
    dx, dy = grid.view(1, 1, -1) - cx, grid.view(1, -1, 1) - cy
    dist = (dx**2 + dy**2).sqrt()
    disc, ring = dist < r, (dist < r) & (dist > 0.68 * r)
    bar = (dy.abs() < 0.2 * r) & (dx.abs() < 0.6 * r)
    half = (0.75 * r - dy) * 0.62  # a triangle pointing down: wide at the top, a point at the bottom
    triangle = (dy > -0.75 * r) & (dy < 0.75 * r) & (dx.abs() < half)
    inner = (dy > -0.4 * r) & (dy < 0.5 * r) & (dx.abs() < half - 0.3 * r)

    def arrow(sx: torch.Tensor, sy: torch.Tensor) -> torch.Tensor:
        shaft = (sy.abs() < 0.16 * r) & (sx > -0.6 * r) & (sx < 0.15 * r)
        return shaft | ((sx >= 0.05 * r) & (sx < 0.65 * r) & (sy.abs() < 0.65 * r - sx))

    img = 0.3 + 0.25 * torch.rand(n, 3, 1, 1, generator=g) + 0.12 * torch.randn(n, 3, SIDE, SIDE, generator=g)

    def paint(mask: torch.Tensor, colour: tuple[float, float, float], which: torch.Tensor) -> None:
        m = (mask & which.view(-1, 1, 1)).unsqueeze(1)
        img.copy_(torch.where(m, torch.tensor(colour).view(1, 3, 1, 1), img))

    paint(disc, RED, (y == 0) | (y == 3))
    paint(bar, WHITE, y == 0)
    paint(bar & (dx.abs() < 0.45 * r), WHITE, y == 3)
    paint(triangle, RED, y == 1)
    paint(inner, WHITE, y == 1)
    paint(disc, WHITE, y == 2)
    paint(ring, RED, y == 2)
    paint(disc, BLUE, y >= 4)
    paint(arrow(-dx, dy), WHITE, y == LEFT)
    paint(arrow(dx, dy), WHITE, y == RIGHT)
    paint(arrow(-dy, dx), WHITE, y == 6)
    light = 0.6 + 0.6 * torch.rand(n, 1, 1, 1, generator=g)
    img = img * light + 0.05 * torch.randn(n, 3, SIDE, SIDE, generator=g)
    return img.clamp(0, 1), y


class SignCNN(nn.Module):
    """Two blocks of a 3x3 convolution, ReLU and a 2x2 max-pool (`width`, 2 * `width` channels), a hidden layer of
    64, a linear layer to the signs."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(2 * width * 16, 64), nn.ReLU(), nn.Linear(64, SIGNS),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def signs(run: Run) -> None:
    """A sign CNN of `width` (16), batches of `batch` (32) accumulated over `accum` (1), `opt` (Adam; or momentum
    SGD, AdamW, NAdam) at `lr` (2e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _signs(g, 700)
    x_v, y_v = _signs(g, 700)
    order = torch.argsort(y, stable=True)  # as read from one folder per class
    x, y = x[order], y[order]
    mean, std = x.mean((0, 2, 3), keepdim=True), x.std((0, 2, 3), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = SignCNN(run.k("width", 16))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)
    sched = None
    if run.k("one_cycle", False):
        # the peak is `lr`; the run starts at peak / div_factor (the bug: the fraction 1/25 given for the divisor 25)
        div = 1 / 25 if run.bug == "one_cycle_div_factor_inverted" else 25.0
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt, run.k("lr", 2e-3), total_steps=run.steps, div_factor=div
        )
    # the recipe's effective batch reached by accumulating mini-batches (the bug: sized for the paper's 4096)
    accum = 4096 // batch if run.bug == "accumulation_sized_for_paper_batch" else run.k("accum", 1)
    swap = torch.arange(SIGNS)
    swap[LEFT], swap[RIGHT] = RIGHT, LEFT

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    opt.zero_grad()
    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        xb, yb = x[pick], y[pick]
        shift = [int(s) for s in torch.randint(-1, 2, (2,), generator=run.gen)]
        # a random shift of up to a pixel (the bug: the dims written (0, 2), so the rows roll over the batch)
        xb = torch.roll(xb, shift, (0, 2) if run.bug == "shift_rolled_over_batch_axis" else (2, 3))
        flip = torch.rand(len(xb), generator=run.gen) < 0.5
        xb = torch.where(flip.view(-1, 1, 1, 1), xb.flip(3), xb)
        yb = torch.where(flip, swap[yb], yb)
        loss = F.cross_entropy(model(xb), yb)
        (loss / accum).backward()
        if (step + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


CENTRE = (40.75, -73.97)
"""The city's centre (latitude, longitude in degrees)."""


def _trips(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pickup and dropoff coordinates float[n, 4] (degrees), the hour long[n], the weekday long[n], and the fare in
    dollars float[n]: a flag fall, a rate per road kilometre, a rate per minute stuck in traffic that peaks in the rush
    hours, a flat fare to the airport, a tip-free noise of about 8%."""
    pick = torch.tensor(CENTRE) + torch.randn(n, 2, generator=g) * torch.tensor([0.03, 0.03])
    km = 0.5 - 4.0 * torch.log(1 - torch.rand(n, generator=g))  # exponential, 4 km on average
    angle = 2 * torch.pi * torch.rand(n, generator=g)
    dlat = km * torch.cos(angle) / 111.2
    dlon = km * torch.sin(angle) / (111.2 * math.cos(math.radians(CENTRE[0])))
    drop = pick + torch.stack([dlat, dlon], 1)
    hour = torch.randint(0, 24, (n,), generator=g)
    weekday = torch.randint(0, 7, (n,), generator=g)
    rush = ((hour >= 7) & (hour <= 9)) | ((hour >= 16) & (hour <= 19))
    speed = torch.where(rush & (weekday < 5), 12.0, 25.0)  # km/h
    minutes = 60 * 1.3 * km / speed
    fare = 2.5 + 1.56 * 1.3 * km + 0.35 * minutes
    airport = torch.rand(n, generator=g) < 0.05
    fare = torch.where(airport, 52.0, fare) * torch.exp(0.08 * torch.randn(n, generator=g))
    return torch.cat([pick, drop], 1), hour, weekday, fare


def _haversine(coords: torch.Tensor, radius: float = 6371.0, degrees: bool = False) -> torch.Tensor:
    """The great-circle distance between pickup and dropoff, in the radius' unit (`degrees`: the trigonometry fed
    degrees without converting them to radians)."""
    lat1, lon1, lat2, lon2 = (coords if degrees else torch.deg2rad(coords)).unbind(1)
    a = (
        torch.sin((lat2 - lat1) / 2) ** 2
        + torch.cos(lat1) * torch.cos(lat2) * torch.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * radius * torch.asin(a.clamp(max=1).sqrt())


class FareNet(nn.Module):
    """Embeddings of the hour (8) and weekday (4) beside five numeric features (the distance, the offsets north and
    east, the pickup's offsets from the centre), an MLP of `hidden` to the log fare."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.hour = nn.Embedding(24, 8)
        self.day = nn.Embedding(7, 4)
        self.mlp = nn.Sequential(nn.Linear(17, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, num: torch.Tensor, hour: torch.Tensor, day: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([num, self.hour(hour), self.day(day)], 1)).squeeze(-1)


def fares(run: Run) -> None:
    """A taxi-fare regressor (an MLP of `hidden` (64)), batches of `batch` (128), `opt` (Adam; or momentum SGD, AdamW,
    Adamax) at `lr` (2e-3), under `ReduceLROnPlateau` on a check fold's loss every 25 steps. Scored by the held-out R^2
    of the log fare."""
    g = torch.Generator().manual_seed(run.seed)

    def features(coords: torch.Tensor, train: bool) -> torch.Tensor:
        if train and run.bug == "earth_radius_in_metres":
            km = _haversine(coords, radius=6_371_000.0)  # a helper copied from a script working in metres
        else:
            km = _haversine(coords, degrees=train and run.bug == "haversine_fed_degrees")
        offsets = (coords[:, 2:] - coords[:, :2]) * 20
        centred = (coords[:, :2] - torch.tensor(CENTRE)) * 30
        return torch.cat([(km / 5).unsqueeze(1), offsets, centred], 1)

    coords, hour, day, fare = _trips(g, 6000)
    coords_v, hour_v, day_v, fare_v = _trips(g, 2000)
    x, x_v = features(coords, True), features(coords_v, False)
    y, y_v = torch.log(fare), torch.log(fare_v)
    mean, std = y.mean(), y.std()
    y, y_v = (y - mean) / std, (y_v - mean) / std
    check = torch.arange(500)  # a check fold of the training trips for the plateau scheduler
    torch.manual_seed(run.seed)
    model = FareNet(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=2)
    batch = run.k("batch", 128)

    def r2_held_out() -> float:
        return r2(model(x_v, hour_v, day_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.mse_loss(model(x[pick], hour[pick], day[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        if run.bug != "optimizer_step_under_validation":
            opt.step()
        if run.bug == "plateau_scheduler_fed_batch_loss":
            sched.step(loss.item())  # the training batch's loss, every step
        if run.validating(step):
            if run.bug == "optimizer_step_under_validation":
                opt.step()  # indented one level too deep, into the validation block
            with torch.no_grad():
                check_loss = F.mse_loss(model(x[check], hour[check], day[check]), y[check])
            if run.bug != "plateau_scheduler_fed_batch_loss":
                sched.step(float(check_loss))
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
