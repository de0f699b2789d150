"""Outdoor scripts of the sixty-second blind split: a salt-marsh survey's vegetation-zone classifier for its plots, and
a ski area's gondola queue forecaster at the valley station.

`marsh`: a survey plot's elevation in m above ordnance datum, the site's mean high water, the share of the year's tides
that cover the plot, the porewater salinity, the distance to the nearest creek (log) and the sediment's grain size,
with the substrate and grazing embedded; the plot's zone (pioneer, low marsh cordgrass, mid-marsh saltmarsh-grass,
high marsh, upper transition) by a ReLU MLP; cross-entropy; scored by the held-out accuracy on another estuary's plots.
`queue`: the last two hours of the valley station's quarter-hour log (skiers through the gates, riders boarded,
cabins dispatched, riders per cabin, the wind at the top station, the queue and the time of day); the queue an
hour ahead by an LSTM over the quarter hours; MSE on the standardised queue; scored by the held-out R^2 at another
resort's gondola. Bugs: three sites' elevations surveyed against chart datum; the elevations read off the LiDAR
model, which stands high in tall cordgrass; the tides covering a plot counted where their share was meant; the
distance from the sea wall kept as an input; the riders per cabin during a wind hold; the queue counted by the
camera, which sees only the front of the maze.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

ZONES = ("pioneer", "low marsh", "mid marsh", "high marsh", "upper transition")
TIDES, CHART_DATUM = 706, 2.9
"""Tides a year, and how far chart datum (lowest astronomical tide) lies below ordnance datum at the estuary, in m."""
LIDAR_BIAS = torch.tensor([0.02, 0.24, 0.08, 0.1, 0.2])
"""How high the LiDAR terrain model stands above the surveyed ground in each zone's vegetation, in m."""


def _plots(g: torch.Generator, n: int, *, sites: int = 8, mhw: tuple[float, float] = (2.0, 3.0),
           banded: bool = False) -> dict[str, torch.Tensor]:  # fmt: skip
    """Survey plots: the site long[n], elevation and the site's mean high water in m OD, salinity in ppt, distance
    to the creek and to the sea wall in m, grain size in phi float[n], substrate and grazing long[n], the zone
    long[n]. With `banded`, the marsh's zones run in bands from the sea wall, as on the training marsh."""
    site = torch.randint(0, sites, (n,), generator=g)
    site_mhw = mhw[0] + (mhw[1] - mhw[0]) * torch.rand(sites, generator=g)
    high = site_mhw[site]
    d = -0.95 + 1.5 * torch.rand(n, generator=g)  # the plot's height above mean high water
    creek = torch.exp(math.log(3) + 4 * torch.rand(n, generator=g))
    salinity = 30 - 8 * d + 3 * torch.randn(n, generator=g) - 4 * torch.exp(-creek / 30)
    substrate = torch.randint(0, 3, (n,), generator=g)  # sand, silt, clay
    grazed = (torch.rand(n, generator=g) < 0.4).long()
    grain = torch.tensor([2.0, 4.5, 8.0])[substrate] + 0.6 * torch.randn(n, generator=g)
    # drainage by the creeks and a sandy substrate lets a zone reach lower; salt holds it back
    eff = d + 0.1 * torch.exp(-creek / 20) + 0.05 * (substrate == 0) - 0.006 * (salinity - 30)
    eff = eff + 0.07 * torch.randn(n, generator=g)
    zone = torch.bucketize(eff, torch.tensor([-0.6, -0.3, 0.05, 0.35]))
    # grazing keeps the upper transition's couch grass down to a high-marsh sward
    zone = torch.where((zone == 4) & (grazed == 1) & (torch.rand(n, generator=g) < 0.7), 3, zone)
    if banded:
        wall = 40 + 60 * (4 - zone).float() + 12 * torch.randn(n, generator=g)
    else:
        wall = 40 + 280 * torch.rand(n, generator=g)
    return {"site": site, "elevation": high + d, "mhw": high, "salinity": salinity, "creek": creek, "wall": wall,
            "grain": grain, "substrate": substrate, "grazed": grazed, "zone": zone}  # fmt: skip


def _inundation(elevation: torch.Tensor, mhw: torch.Tensor) -> torch.Tensor:
    """The share of the year's tides whose high water covers the plot (high waters spread 0.35 m about the mean)."""
    return 0.5 * torch.erfc((elevation - mhw) / (0.35 * math.sqrt(2)))


def _marsh_columns(p: dict[str, torch.Tensor], bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The columns to standardise float[n, 5 or 6] and the inundation share, kept as it is in [0, 1], float[n, 1]."""
    elevation = p["elevation"]
    if bug == "elevation_against_chart_datum_at_three_sites":
        # the bug: three sites' surveys reduced to chart datum instead of ordnance datum, taken as they come
        elevation = torch.where(p["site"] < 3, elevation + CHART_DATUM, elevation)
    if bug == "lidar_elevation_high_in_tall_cordgrass":
        # the bug: the plots' elevations read off the LiDAR terrain model, which the vegetation holds up
        elevation = elevation + LIDAR_BIAS[p["zone"]]
    share = _inundation(elevation, p["mhw"])
    if bug == "inundation_counted_in_tides":
        # the bug: the helper returns the number of covering tides, the division by the year's tides left out
        share = share * TIDES
    cols = [elevation, p["mhw"], p["salinity"], torch.log(p["creek"]), p["grain"]]
    if bug == "distance_from_sea_wall_kept":
        cols.append(p["wall"])
    return torch.stack(cols, 1), share.unsqueeze(1)


class MarshMLP(nn.Module):
    """The plot's columns beside its substrate and grazing embedded, a ReLU MLP of two hidden layers."""

    def __init__(self, columns: int, hidden: int) -> None:
        super().__init__()
        self.substrate = nn.Embedding(3, 3)
        self.grazing = nn.Embedding(2, 2)
        self.net = nn.Sequential(nn.Linear(columns + 5, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, len(ZONES)))  # fmt: skip

    def forward(self, x: torch.Tensor, substrate: torch.Tensor, grazed: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, self.substrate(substrate), self.grazing(grazed)], 1))


def marsh(run: Run) -> None:
    """A marsh MLP of `hidden` (48), batches of `batch` (32), `opt` (Adam; or momentum SGD, Adagrad, RAdam) at `lr`
    (2e-3). Scored by the held-out accuracy of the zone on another estuary's plots."""
    g = torch.Generator().manual_seed(run.seed)
    tr = _plots(g, 1200, banded=run.bug == "distance_from_sea_wall_kept")
    va = _plots(g, 250, sites=5, mhw=(1.6, 2.6))
    (x, share), (x_v, share_v) = _marsh_columns(tr, run.bug), _marsh_columns(va, None)
    if run.bug == "distance_from_sea_wall_kept":
        x_v = torch.cat([x_v, va["wall"].unsqueeze(1)], 1)
    mean, std = x.mean(0), x.std(0)
    x, x_v = torch.cat([(x - mean) / std, share], 1), torch.cat([(x_v - mean) / std, share_v], 1)
    y, y_v = tr["zone"], va["zone"]
    torch.manual_seed(run.seed)
    model = MarshMLP(x.shape[1], run.k("hidden", 48))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v, va["substrate"], va["grazed"]), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick], tr["substrate"][pick], tr["grazed"][pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


DAY, WINDOW, AHEAD, SEATS = 32, 8, 4, 8
"""Quarter hours from 8:30 to 16:30, quarter hours a window reads, quarter hours ahead, seats in a cabin."""
CAMERA_VIEW = 150
"""The heads the queue camera sees at the front of the maze."""


def _days(
    g: torch.Generator, n: int, *, cabins: float = 100.0, crowd: float = 1.0
) -> dict[str, torch.Tensor]:
    """Days at the valley station float[n, DAY] each: skiers through the gates, riders boarded, cabins dispatched
    (`cabins` a quarter hour at full speed, fewer as the wind slows the rope, none in a wind hold), the wind at the top
    station in m/s and the queue at the end of each quarter hour; a window's start long[n]."""
    t = torch.arange(DAY).float()
    busy = crowd * (0.6 + 0.8 * torch.rand(n, 1, generator=g))  # a weekday to a holiday Saturday
    powder = (torch.rand(n, 1, generator=g) < 0.25).float()
    rush = (
        900 * torch.exp(-0.5 * ((t - 3 - 2 * torch.rand(n, 1, generator=g)) / 2.5) ** 2) * (1 + 0.6 * powder)
    )
    later = 350 * torch.exp(-0.5 * ((t - 18) / 6) ** 2)
    gates = busy * (rush + later + 60) * (1 + 0.25 * torch.randn(n, DAY, generator=g))
    # the ski buses from the villages: a load of skiers in some quarter hours, not on any timetable the log has
    bus = (torch.rand(n, DAY, generator=g) < 0.2) * (60 + 160 * torch.rand(n, DAY, generator=g))
    gates = (gates + bus).clamp(min=0).round()
    wind = (6 + 5 * torch.rand(n, 1, generator=g)) * (
        1 + 0.5 * torch.sin(t / 5 + 6 * torch.rand(n, 1, generator=g))
    )
    wind = (wind + 2.5 * torch.randn(n, DAY, generator=g)).clamp(min=0)
    speed = torch.where(wind > 15, 0.6, 1.0) * (wind < 19)
    dispatched = (cabins * speed * (1 + 0.03 * torch.randn(n, DAY, generator=g))).round().clamp(min=0)
    queue = torch.zeros(n, DAY)
    boarded = torch.zeros(n, DAY)
    q = torch.zeros(n)
    for i in range(DAY):
        waiting = q + gates[:, i]
        fill = 0.75 + 0.2 * torch.clamp(waiting / 400, max=1)  # a long queue fills the cabins
        boarded[:, i] = torch.minimum(waiting, (dispatched[:, i] * SEATS * fill).round())
        q = waiting - boarded[:, i]
        queue[:, i] = q
    start = torch.randint(0, DAY - WINDOW - AHEAD + 1, (n,), generator=g)
    return {
        "gates": gates,
        "boarded": boarded,
        "cabins": dispatched,
        "wind": wind,
        "queue": queue,
        "start": start,
    }


def _queue_inputs(d: dict[str, torch.Tensor], bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The window's inputs float[n, WINDOW, 8] and the queue AHEAD quarter hours after it float[n]."""
    idx = d["start"].unsqueeze(1) + torch.arange(WINDOW)
    take = lambda k: d[k].gather(1, idx)
    boarded, cabins, queue = take("boarded"), take("cabins"), take("queue")
    target = d["queue"].gather(1, (d["start"] + WINDOW + AHEAD - 1).unsqueeze(1)).squeeze(1)
    if bug == "riders_per_cabin_during_wind_hold":
        # the bug: the riders per cabin as boarded / dispatched, 0 / 0 in the quarter hours of a wind hold
        per_cabin = boarded / cabins
    else:
        per_cabin = torch.where(cabins > 0, boarded / cabins.clamp(min=1), torch.zeros_like(boarded))
    if bug == "queue_counted_by_camera_in_view":
        # the bug: the queue taken from the camera's head count, which sees only the front of the maze
        queue, target = queue.clamp(max=CAMERA_VIEW), target.clamp(max=CAMERA_VIEW)
    clock = 2 * math.pi * idx.float() / DAY
    cols = [take("gates"), boarded, cabins, per_cabin, take("wind"), queue, clock.sin(), clock.cos()]
    return torch.stack(cols, -1), target


class QueueLSTM(nn.Module):
    """An LSTM of `hidden` units over the quarter hours and a linear head on its last state."""

    def __init__(self, columns: int, hidden: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(columns, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.head(out[:, -1]).squeeze(-1)


def queue(run: Run) -> None:
    """A queue LSTM of `hidden` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (5e-3). Scored by the held-out R^2 of the queue an hour ahead at another resort's gondola."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _days(g, 800), _days(g, 200, cabins=85.0, crowd=0.9)
    (x, y), (x_v, y_v) = _queue_inputs(tr, run.bug), _queue_inputs(va, None)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = QueueLSTM(x.shape[-1], run.k("hidden", 16))
    opt = optimizers.registered(run, model, 5e-3)
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
