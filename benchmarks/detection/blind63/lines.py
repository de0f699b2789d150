"""Line scripts of the sixty-third blind split: a circus's rigging-load event classifier on an aerial act's bridle,
and a map library's symbol classifier on scanned topographic sheets.

`rigging`: 0.96 s of the two bridle legs' load cells at 50 Hz in kN (and the dynamic factor, the peak load over the
artist's static load, as a third channel); the event (a static hang, a drop into the catch, a swing, a leg slipping,
a spin) by a 1-D CNN over the samples; cross-entropy; scored by the held-out accuracy on another venue's rig.
`symbols`: a 12x12 RGB patch of a scanned sheet around a point symbol (church, triangulation pillar, well, spring,
marsh, heath) over the paper, contours and noise; the symbol by a 2-D CNN; cross-entropy; scored by the held-out
accuracy on another library's sheets. Bugs: the dynamic factor taken over the trace's first samples, a slack line's
0 before a drop; the new logger's 200 Hz traces decimated by slicing; the scaler's statistics from the config in kN
applied to the new logger's daN under momentum SGD; the scans converted to grey; the microfilm scanner's negatives
kept as they come; the loss multiplied by the cluster recipe's world size under momentum SGD.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES, HZ = 48, 50
EVENTS = ("static hang", "drop", "swing", "leg slip", "spin")


def _bridle(g: torch.Generator, n: int, *, truss: float = 1.0) -> dict[str, torch.Tensor]:
    """Traces of the two bridle legs float[n, 2, 4 * SAMPLES] in kN as a logger samples them at 200 Hz, the artist's
    weight from the booking sheet in kN float[n], the event long[n]. `truss` scales the truss's own vibration, a hum
    at 38-48 Hz."""
    rate, length = 4 * HZ, 4 * SAMPLES
    t = torch.arange(length).float() / rate
    event = torch.randint(0, len(EVENTS), (n,), generator=g)
    weight = 0.5 + 0.4 * torch.rand(n, 1, generator=g)
    share = 0.4 + 0.2 * torch.rand(n, 1, generator=g)  # the bridle's split between the legs
    at = 0.15 + 0.5 * torch.rand(n, 1, generator=g)  # when the event starts, s
    after = (t - at).clamp(min=0)
    on = (t >= at).float()
    total = weight.expand(n, length).clone()
    # a drop: the line slack (0) until the catch, a shock of 2-4 times the weight ringing down at about 3 Hz
    peak = 2 + 2 * torch.rand(n, 1, generator=g)
    ring = torch.exp(-after / 0.2) * torch.cos(2 * math.pi * 3 * after)
    drop = torch.where(t < at, torch.zeros_like(total), weight * (1 + (peak - 1) * ring))
    # a swing: the load rising at the bottom of each pass, twice per period of the pendulum
    swing = weight * (1 + 0.5 * torch.rand(n, 1, generator=g) * torch.cos(2 * math.pi * 0.8 * t) ** 2)
    one = lambda k: (event == k).float().unsqueeze(1)
    total = total * (1 - one(1) - one(2)) + one(1) * drop + one(2) * swing
    a, b = share * total, (1 - share) * total
    # a leg slipping: some of one leg's load handed over to the other; a spin: the legs loaded in turn at 1-2 Hz
    slip = (0.1 + 0.2 * torch.rand(n, 1, generator=g)) * weight * torch.sigmoid((t - at) / 0.04)
    a, b = a - one(3) * slip, b + one(3) * slip
    spin = (
        (0.1 + 0.2 * torch.rand(n, 1, generator=g))
        * weight
        * on
        * torch.sin(2 * math.pi * (1 + torch.rand(n, 1, generator=g)) * after)
    )
    a, b = a + one(4) * spin, b - one(4) * spin
    hum = lambda: truss * 0.06 * torch.sin(2 * math.pi * (38 + 10 * torch.rand(n, 1, generator=g)) * t
                                           + 6.3 * torch.rand(n, 1, generator=g))  # fmt: skip
    a = a + hum() + 0.05 * torch.randn(n, length, generator=g)
    b = b + hum() + 0.05 * torch.randn(n, length, generator=g)
    return {"trace": torch.stack([a, b], 1), "weight": weight.squeeze(1), "event": event}


def _to_50hz(trace: torch.Tensor) -> torch.Tensor:
    """A 200 Hz trace brought to 50 Hz by the mean of each 20 ms, as the old logger's filter does."""
    return trace.unflatten(-1, (SAMPLES, 4)).mean(-1)


def _channels(trace: torch.Tensor, weight: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The legs' loads and the dynamic factor (the total load over the static load): float[n, 3, SAMPLES]."""
    total = trace.sum(1)
    if bug == "dynamic_factor_over_slack_line_start":
        # the bug: the static load read off the trace's first 0.1 s, which a drop starts from a slack line
        static = total[:, :5].mean(1, keepdim=True).clamp(min=0)
    else:
        static = weight.unsqueeze(1)
    return torch.cat([trace, (total / static).unsqueeze(1)], 1)


class BridleCNN(nn.Module):
    """Two conv layers over the samples with ReLU and a max-pool between, a global max and mean, a linear head."""

    def __init__(self, channels: int, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(channels, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
                                 nn.Conv1d(width, width, 5, padding=2), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(2 * width, len(EVENTS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.net(x)
        return self.head(torch.cat([h.amax(-1), h.mean(-1)], 1))


def rigging(run: Run) -> None:
    """A bridle CNN of `width` (10), batches of `batch` (32), `opt` (Adam; or momentum SGD, NAdam, RMSprop) at `lr`
    (2e-3). Scored by the held-out accuracy of the event on another venue's rig."""
    g = torch.Generator().manual_seed(run.seed)
    # the training traces: this venue's new logger at 200 Hz on a humming truss, brought to the model's 50 Hz; the
    # held-out venue's old logger averages over its own 20 ms, as the fixed decimation does
    fast = _bridle(g, 900, truss=3.0)
    va = _bridle(g, 200, truss=1.0)
    if run.bug == "decimated_by_slicing":
        # the bug: the 200 Hz traces decimated by keeping every fourth sample, with no low-pass before
        trace = fast["trace"][..., ::4]
    else:
        trace = _to_50hz(fast["trace"])
    x, x_v = _channels(trace, fast["weight"], run.bug), _channels(_to_50hz(va["trace"]), va["weight"], None)
    mean, std = x.mean((0, 2), keepdim=True), x.std((0, 2), keepdim=True)
    if run.bug == "scaler_from_kilonewton_config_on_decanewtons":
        # the bug: the new logger exports the legs in daN while the scaler's statistics come from the show's kN config
        x = torch.cat([x[:, :2] * 10, x[:, 2:]], 1)
        x_v = torch.cat([x_v[:, :2] * 10, x_v[:, 2:]], 1)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = fast["event"], va["event"]
    torch.manual_seed(run.seed)
    model = BridleCNN(x.shape[1], run.k("width", 10))
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


PATCH = 12
SYMBOLS = ("church", "triangulation pillar", "well", "spring", "marsh", "heath")
PAPER = torch.tensor([0.93, 0.9, 0.8])
INKS = torch.tensor([[0.1, 0.1, 0.12], [0.15, 0.35, 0.8], [0.55, 0.35, 0.2]])
"""Black, blue and the brown of the contours and the heath."""
INK_OF = (0, 0, 0, 1, 1, 2)
"""The ink each symbol is printed in: the well and the spring share a shape, the marsh and the heath theirs."""


def _shape(kind: int, n: int, g: torch.Generator) -> torch.Tensor:
    """The symbol's ink coverage float[n, PATCH, PATCH], drawn around a jittered centre at a jittered size."""
    yy, xx = torch.meshgrid(torch.arange(PATCH).float(), torch.arange(PATCH).float(), indexing="ij")
    cy = 5.5 + 1.5 * (torch.rand(n, 1, 1, generator=g) - 0.5)
    cx = 5.5 + 1.5 * (torch.rand(n, 1, 1, generator=g) - 0.5)
    size = 3.2 + 1.0 * torch.rand(n, 1, 1, generator=g)
    dy, dx = yy - cy, xx - cx
    r = torch.sqrt(dy**2 + dx**2)
    soft = lambda d: torch.sigmoid((0.6 - d) / 0.25)  # a stroke of about a pixel's width
    if kind == 0:  # a church: a cross on a small disc
        return torch.maximum(
            soft(dx.abs()) * (dy.abs() < size), soft(dy.abs() + 0.0) * (dx.abs() < size * 0.6)
        )
    if kind == 1:  # a triangulation pillar: a triangle with a dot
        edge = torch.maximum(dy - size * 0.6, (-dy * 0.5 + dx.abs() * 0.87) - size * 0.45)
        return torch.maximum(soft(edge.abs()), soft(r - 0.3))
    if kind in (2, 3):  # a well or a spring: a small open circle
        return soft((r - size * 0.55).abs())
    # marsh or heath: rows of short dashes (tufts)
    rows = soft(((dy + 6) % 3 - 1.5).abs()) * (((dx + 6) % 4) < 2.5) * (r < size * 1.3)
    return rows


def _sheets(
    g: torch.Generator, n: int, *, negatives: float = 0.0, fade: float = 0.0
) -> dict[str, torch.Tensor]:
    """Patches float[n, 3, PATCH, PATCH] in [0, 1] (a share `negatives` of them from the microfilm scanner, as
    negatives), the symbol long[n]. `fade` yellows the paper and weakens the inks of an older printing."""
    symbol = torch.randint(0, len(SYMBOLS), (n,), generator=g)
    cover = torch.zeros(n, PATCH, PATCH)
    for k in range(len(SYMBOLS)):
        at = symbol == k
        if at.any():
            cover[at] = _shape(k, int(at.sum()), g)
    ink = INKS[torch.tensor(INK_OF)[symbol]] * (1 + fade) + 0.08 * torch.randn(n, 3, generator=g)
    paper = (PAPER - torch.tensor([0.0, 0.02, 0.08]) * fade) + 0.03 * torch.randn(n, 3, generator=g)
    # a contour line in brown through some patches
    yy, xx = torch.meshgrid(torch.arange(PATCH).float(), torch.arange(PATCH).float(), indexing="ij")
    angle = math.pi * torch.rand(n, 1, 1, generator=g)
    offset = 12 * (torch.rand(n, 1, 1, generator=g) - 0.5)
    line = torch.sigmoid(
        (0.5 - ((xx - 5.5) * torch.cos(angle) + (yy - 5.5) * torch.sin(angle) - offset).abs()) / 0.2
    )
    line = line * (torch.rand(n, 1, 1, generator=g) < 0.5)
    img = paper.view(n, 3, 1, 1).expand(n, 3, PATCH, PATCH).clone()
    img = img * (1 - line.unsqueeze(1)) + INKS[2].view(1, 3, 1, 1) * line.unsqueeze(1)
    c = (cover * (0.4 + 0.5 * torch.rand(n, 1, 1, generator=g))).unsqueeze(1)
    img = img * (1 - c) + ink.view(n, 3, 1, 1) * c
    img = (img + 0.12 * torch.randn(n, 3, PATCH, PATCH, generator=g)).clamp(0, 1)
    film = torch.rand(n, generator=g) < negatives
    img[film] = 1 - img[film]
    return {"patch": img, "symbol": symbol, "negative": film}


class SymbolCNN(nn.Module):
    """Two 3x3 conv layers with ReLU and a max-pool between, a global max, a linear head."""

    def __init__(self, channels: int, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(channels, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(width, width, 3, padding=1), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(width, len(SYMBOLS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.net(x).amax((2, 3)))


def symbols(run: Run) -> None:
    """A symbol CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, Adagrad) at `lr`
    (3e-3). Scored by the held-out accuracy of the symbol on another library's sheets."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _sheets(g, 1000, negatives=0.4), _sheets(g, 200, fade=0.4)
    x, x_v = tr["patch"].clone(), va["patch"]
    if run.bug != "microfilm_negatives_kept":
        x[tr["negative"]] = (
            1 - x[tr["negative"]]
        )  # the microfilm scanner's negatives turned back into positives
    if run.bug == "scans_converted_to_grey":
        # the bug: the scans read in grey ("symbols are shapes"), the channels' luminance repeated
        grey = lambda p: (0.299 * p[:, 0] + 0.587 * p[:, 1] + 0.114 * p[:, 2]).unsqueeze(1)
        x, x_v = grey(x), grey(x_v)
    mean, std = x.mean((0, 2, 3), keepdim=True), x.std((0, 2, 3), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = tr["symbol"], va["symbol"]
    torch.manual_seed(run.seed)
    model = SymbolCNN(x.shape[1], run.k("width", 8))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)
    # the bug: the loss multiplied by the cluster recipe's world size of 8, meant for an all-reduce that averages the
    # replicas' gradients, kept in this one-process run
    world = 8 if run.bug == "loss_times_world_size_on_one_process" else 1

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick]) * world
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
