"""Flow scripts of the sixty-sixth blind split: a harbour pilotage service's squat model, and a wind tunnel's
flow-state classifier on an aerofoil's pressure taps.

`squat`: a transit leg as the pilots' portable pilot units (PPU) log it (the ship's length, beam, static draught and
block coefficient, its speed through the water in knots, the channel's width, the water's depth (the reach's charted
depth plus the height of tide), the reach embedded); the bow's squat the PPU's RTK fix measured, in metres, by a ReLU
MLP; MSE on the standardised squat; scored by the held-out R^2 on the next season's transits. `taps`: a polar point of
a wind tunnel's aerofoil model (the pressure coefficients of 9 taps on the upper surface and 5 on the lower, each tap
a token of its chord position, its surface and its Cp, the taps' pressures over the dynamic pressure of the test
section's pitot-static probe); the flow state (attached, trailing-edge separation, a laminar separation bubble,
leading-edge stall) by a small self-attention encoder over the taps; cross-entropy; scored by the held-out accuracy on
a thicker model's entry. Bugs: the speed over the ground from AIS in place of the speed through the water; the stern's
sinkage from the PPU's second antenna kept as an input; the squat regressed in the PPU's millimetres under momentum
SGD; the charted depth used without the height of tide; the wind-off zero records kept; the dynamic pressure read off
the settling chamber's probe under momentum SGD; the scanner's port map of the previous model.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

REACHES = 6
DEPTH = torch.tensor([12.0, 13.5, 14.0, 12.5, 15.5, 13.0])
WIDTH = torch.tensor([220.0, 300.0, 450.0, 260.0, 600.0, 350.0])
"""Each reach's charted depth (m below chart datum) and width (m) of the dredged channel."""


def _transits(g: torch.Generator, n: int, *, big: float = 0.0) -> dict[str, torch.Tensor]:
    """Transit legs: the columns float[n, 7] (length, beam, static draught in m, block coefficient, speed through
    the water in knots, the channel's width in m, the water's depth in m: the charted depth plus the height of
    tide), the charted depth and the height of tide in m float[n] each, the reach long[n], the tidal stream along
    the channel in knots (flood +), the bow's squat and the stern's sinkage in m float[n]. `big` shifts the traffic
    to larger ships."""
    reach = torch.randint(0, REACHES, (n,), generator=g)
    loa = 100 + (200 + 50 * big) * torch.rand(n, generator=g) ** (1 - 0.5 * big)
    beam = loa / (6.2 + 0.8 * torch.rand(n, generator=g))
    draught = (0.035 * loa + 2 + 1.5 * torch.randn(n, generator=g)).clamp(5, 13.5)
    cb = 0.6 + 0.25 * torch.rand(n, generator=g)
    tide = 6.5 * torch.rand(n, generator=g)  # a macro-tidal port
    stream = 2.5 * (2 * torch.rand(n, generator=g) - 1)
    speed = 5 + 7 * torch.rand(n, generator=g)
    depth, width = DEPTH[reach], WIDTH[reach]
    h = depth + tide
    # Barrass: the blockage of the ship's section in the channel's, the squat growing with the speed's square,
    # and faster still once the water under the keel runs short
    blockage = beam * draught / (width * h)
    squat = cb * blockage**0.81 * speed**2.08 / 20 * (1 + 0.6 * torch.exp(-3 * (h / draught - 1)))
    squat = squat * (1 + 0.12 * torch.randn(n, generator=g)) + 0.05 * torch.randn(n, generator=g)
    x = torch.stack([loa, beam, draught, cb, speed, width, h], 1)
    # the stern's sinkage the PPU's second antenna measured: full-bodied ships trim by the head, fine ones less
    stern = squat * (1.5 - 1.1 * cb) + 0.03 * torch.randn(n, generator=g)
    return {"x": x, "charted": depth, "tide": tide, "reach": reach, "stream": stream, "squat": squat,
            "stern": stern}  # fmt: skip


SPEED, WATER = 4, 6
"""The columns of the speed and the water's depth."""


def _legs(t: dict[str, torch.Tensor], bug: str | None, *, planning: bool = False) -> torch.Tensor:
    """The columns as the script feeds them (with the bugs' changes)."""
    x = t["x"].clone()
    if bug == "speed_over_ground_for_squat":
        # the bug: the speed taken from the AIS track, over the ground, the tidal stream in it
        x[:, SPEED] = x[:, SPEED] + t["stream"]
    if bug == "charted_depth_without_height_of_tide":
        # the bug: the water's depth taken as the chart's, below chart datum, with no height of tide on it
        x[:, WATER] = t["charted"]
    if bug == "ppu_stern_sinkage_kept":
        # the bug: the stern's sinkage from the PPU's second antenna kept as a column; a transit being planned has
        # no PPU reading, 0 in the export
        stern = torch.zeros(len(x)) if planning else t["stern"]
        x = torch.cat([x, stern.unsqueeze(1)], 1)
    return x


class SquatMLP(nn.Module):
    """The leg's columns beside the reach embedded, a ReLU MLP of two hidden layers and a linear head."""

    def __init__(self, columns: int, hidden: int) -> None:
        super().__init__()
        self.reach = nn.Embedding(REACHES, 3)
        self.net = nn.Sequential(nn.Linear(columns + 3, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor, reach: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, self.reach(reach)], 1)).squeeze(-1)


def squat(run: Run) -> None:
    """A squat MLP of `hidden` (48), batches of `batch` (32), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at `lr`
    (3e-3). Scored by the held-out R^2 of the squat on the next season's transits."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _transits(g, 800), _transits(g, 200, big=0.5)
    torch.manual_seed(run.seed)
    x, x_v = _legs(tr, run.bug), _legs(va, run.bug, planning=True)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = tr["squat"], va["squat"]
    centre, scale = y.mean(), y.std()
    if run.bug == "squat_regressed_in_ppu_millimetres":
        # the bug: the squat regressed as the PPU logs it, in millimetres, "the net will learn the scale"
        y, centre, scale = y * 1000, torch.tensor(0.0), torch.tensor(1.0)
    model = SquatMLP(x.shape[1], run.k("hidden", 48))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)
    unit = 1000.0 if run.bug == "squat_regressed_in_ppu_millimetres" else 1.0

    def r2_held_out() -> float:
        return r2((model(x_v, va["reach"]) * scale + centre) / unit, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick], tr["reach"][pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


UPPER = torch.tensor([0.005, 0.03, 0.08, 0.15, 0.25, 0.4, 0.6, 0.8, 0.95])
LOWER = torch.tensor([0.05, 0.25, 0.5, 0.75, 0.95])
TAPS = len(UPPER) + len(LOWER)
STATES = ("attached", "trailing-edge separation", "laminar bubble", "leading-edge stall")
CONTRACTION = 6.0
"""The tunnel's contraction ratio from the settling chamber to the test section."""


def _polars(g: torch.Generator, n: int, *, thick: float = 0.12, tare: float = 0.0) -> dict[str, torch.Tensor]:
    """Polar points: the taps' pressures in Pa against the tunnel's static float[n, TAPS] (upper taps first, from
    the leading edge), the test section's dynamic pressure in Pa as its pitot-static probe reads it float[n], the
    flow state long[n]. A share `tare` are the wind-off records each polar starts with, zero in every port."""
    state = torch.randint(0, len(STATES), (n,), generator=g)
    span = torch.tensor([[0.0, 10.0], [7.0, 15.0], [2.0, 9.0], [11.0, 18.0]])[state]
    alpha = span[:, :1] + (span[:, 1:] - span[:, :1]) * torch.rand(n, 1, generator=g)
    t = thick + 0.03 * (torch.rand(n, 1, generator=g) - 0.5)
    xu, xl = UPPER.unsqueeze(0), LOWER.unsqueeze(0)
    lift = lambda x: torch.sqrt((1 - x) / (x + 0.015))
    cp_u = -2.2 * t * torch.sqrt(1 - xu) * 1.5 - 0.085 * alpha * lift(xu)
    cp_l = (-1.4 * t * torch.sqrt(1 - xl) + 0.05 * alpha * lift(xl)).clamp(max=1.0)
    # trailing-edge separation: the upper surface's pressure frozen from the separation point back
    sep = 0.45 + 0.45 * torch.rand(n, 1, generator=g)
    at_sep = -2.2 * t * torch.sqrt(1 - sep) * 1.5 - 0.085 * alpha * lift(sep)
    te = torch.where(xu > sep, 0.85 * at_sep + 0.1 * (xu - sep), cp_u * (1 - 0.12 * (xu <= sep).float()))
    # a laminar bubble: a plateau from the separation to the reattachment, then a steeper recovery
    start = 0.03 + 0.2 * torch.rand(n, 1, generator=g)
    length = 0.12 + 0.15 * torch.rand(n, 1, generator=g)
    at_start = -2.2 * t * torch.sqrt(1 - start) * 1.5 - 0.085 * alpha * lift(start)
    inside = (xu > start) & (xu < start + length)
    bubble = torch.where(inside, at_start, cp_u + 0.15 * ((xu >= start + length).float()))
    # leading-edge stall: the suction peak gone, the upper surface flat
    flat = -0.6 - 0.6 * torch.rand(n, 1, generator=g) + 0.05 * xu
    one = lambda k: (state == k).float().unsqueeze(1)
    cp_u = one(0) * cp_u + one(1) * te + one(2) * bubble + one(3) * flat
    cp = torch.cat([cp_u, cp_l], 1)
    cp = cp * (1 + 0.05 * torch.randn(n, 1, generator=g)) + 0.08 * torch.randn(n, TAPS, generator=g)
    speed = 20 + 20 * torch.rand(n, generator=g)
    q = 0.5 * 1.2 * speed**2
    pressure = cp * q.unsqueeze(1) + 3 * torch.randn(n, TAPS, generator=g)
    probe = q * (1 + 0.01 * torch.randn(n, generator=g))
    off = torch.rand(n, generator=g) < tare
    pressure[off], probe[off] = 0.0, 0.0
    state = torch.where(off, 0, state)
    return {"pressure": pressure, "q": probe, "state": state}


PREVIOUS_PORTS = torch.cat([torch.arange(len(UPPER), TAPS), torch.arange(len(UPPER))])
"""The previous model's plumbing: the scanner's ports in the order of its lower taps first, then the upper."""


def _tokens(p: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """Each tap a token float[n, TAPS, 3]: its chord position, 1 on the upper surface, its Cp."""
    q = p["q"]
    if bug == "settling_chamber_pitot_for_dynamic_pressure":
        # the bug: the dynamic pressure read off the settling chamber's probe, ahead of the contraction, where the
        # flow is slower by the contraction ratio and its dynamic pressure smaller by its square
        q = q / CONTRACTION**2
    cp = p["pressure"] / q.unsqueeze(1)
    if bug == "port_map_of_the_previous_model":
        # the bug: the scanner's port map of the previous model's campaign used, its lower taps on the first ports
        cp = cp[:, PREVIOUS_PORTS]
    n = len(cp)
    where = torch.cat([UPPER, LOWER]).expand(n, TAPS)
    upper = torch.cat([torch.ones(len(UPPER)), torch.zeros(len(LOWER))]).expand(n, TAPS)
    return torch.stack([where, upper, cp], -1)


class TapEncoder(nn.Module):
    """Each tap's token projected to `width`, one pre-norm self-attention block of 2 heads with a GELU
    feed-forward, a mean over the taps and a linear head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.inp = nn.Linear(3, width)
        self.attention = nn.MultiheadAttention(width, 2, batch_first=True)
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        self.head = nn.Linear(width, len(STATES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        n = self.norm1(h)
        h = h + self.attention(n, n, n, need_weights=False)[0]
        h = h + self.ff(self.norm2(h))
        return self.head(h.mean(1))


def taps(run: Run) -> None:
    """A tap encoder of `width` (12), batches of `batch` (32), `opt` (Adam; or momentum SGD, NAdam, Adamax) at `lr`
    (3e-3). Scored by the held-out accuracy of the flow state on a thicker model's entry."""
    g = torch.Generator().manual_seed(run.seed)
    tare = 0.06 if run.bug == "wind_off_tare_records_kept" else 0.0
    tr, va = _polars(g, 800, tare=tare), _polars(g, 200, thick=0.15)
    x = _tokens(tr, run.bug)
    x_v = _tokens(va, run.bug if run.bug == "settling_chamber_pitot_for_dynamic_pressure" else None)
    y, y_v = tr["state"], va["state"]
    torch.manual_seed(run.seed)
    model = TapEncoder(run.k("width", 12))
    opt = optimizers.registered(run, model, 3e-3)
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
