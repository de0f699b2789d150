"""Outdoor scripts of the forty-fifth blind split: a rowing crew's 500 m split regressor from stroke rate and force
curves, and an urban street-temperature regressor from land-cover fractions.

`rowing`: strokes of eights and fours logged by an instrumented oarlock: the stroke rate, the crew's mean force
curve over the drive (16 samples, N), the drive length and the crew's mass and boat class; the boat's speed from the
power by the cube law with each crew's technique and the water's stream, the split the seconds per 500 m; standardised;
an ELU MLP of two hidden layers; MSE on the standardised split; scored by the held-out R^2 on new crews. `street`:
street sites of a city's sensor network: the land-cover fractions (building, asphalt, tree canopy, grass, water) of a
100 m buffer, the building height, the sky-view factor, and the night's temperature at the nearest other sensor and
its distance; the night's minimum temperature from the cover, the canyon geometry and a smooth city-wide field;
standardised; a ReLU MLP of two hidden layers; MSE on the centred temperature; scored by the held-out R^2 on sites
off the network. Bugs: each stroke's loss weighted by its duration in milliseconds; each crew's mean split encoded
with the stroke's own; the split from a speed in km/h read as m/s; the nearest sensor found among all of them, the
site itself included; the fractions of the 1 km tile for the buffer's; batches of 2 left from debugging.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES = 16


def _strokes(g: torch.Generator, crews: int, per_crew: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                                      torch.Tensor]:  # fmt: skip
    """Stroke features float[n, SAMPLES + 5] (force curve in N, rate in spm, drive length in m, crew mass in kg, two
    boat classes), the boat speed in m/s float[n], the stroke's duration in s float[n] and the crew of each row
    long[n]."""
    n = crews * per_crew
    crew = torch.arange(crews).repeat_interleave(per_crew)
    eight = (torch.rand(crews, generator=g) < 0.5).float()[crew]
    technique = (1 + 0.06 * torch.randn(crews, generator=g))[crew]
    peak_at = (0.35 + 0.1 * torch.rand(crews, generator=g))[crew]
    mass = torch.where(eight > 0, 720.0, 360.0) * (1 + 0.06 * torch.randn(crews, generator=g))[crew]
    rate = 20 + 16 * torch.rand(n, generator=g)
    peak = (500 + 12 * (rate - 20)) * (1 + 0.12 * torch.randn(n, generator=g))
    t = torch.linspace(0, 1, SAMPLES)
    curve = (
        peak.unsqueeze(1)
        * torch.exp(-0.5 * ((t - peak_at.unsqueeze(1)) / 0.25) ** 2)
        * (t * (1 - t) * 4) ** 0.3
    )
    curve = curve + 15 * torch.randn(n, SAMPLES, generator=g)
    drive = 1.4 + 0.15 * torch.randn(n, generator=g)
    seats = torch.where(eight > 0, 8.0, 4.0)
    power = seats * curve.mean(1) * drive * rate / 60  # W
    drag = torch.where(eight > 0, 4.2, 2.6) * (mass / 500) ** 0.3
    stream = 0.1 * torch.randn(n, generator=g)
    speed = technique * (power / drag) ** (1 / 3) / 2.0 + stream
    feats = torch.cat([curve, torch.stack([rate, drive, mass, eight, 1 - eight], 1)], 1)
    return feats, speed, 60 / rate, crew


class SplitMLP(nn.Module):
    """An ELU MLP of two hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ELU(), nn.Linear(hidden, hidden), nn.ELU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def rowing(run: Run) -> None:
    """A split MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, RMSprop) at `lr`
    (1e-3). Scored by the held-out R^2 of the split in seconds on new crews."""
    g = torch.Generator().manual_seed(run.seed)
    x, speed, seconds, _ = _strokes(g, 60, 25)
    x_v, speed_v, _, _ = _strokes(g, 30, 20)
    split_v = 500 / speed_v
    # the speed coach exports km/h; the twin converts to m/s before the split
    split = 500 / speed if run.bug != "speed_in_kmh_read_as_ms" else 500 / (3.6 * speed)
    if run.bug == "gps_speed_column_left_in":  # the speed coach's speed kept; the rig's strokes have none
        x = torch.cat([x, speed.unsqueeze(1)], 1)
        x_v = torch.cat([x_v, torch.full((len(x_v), 1), float(speed.mean()))], 1)  # filled with the mean
    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = split.mean(), split.std()
    # each stroke's loss weighted by its share of the piece's time, in seconds (the bug: the log's milliseconds)
    weight = seconds * 1000 if run.bug == "stroke_weight_in_milliseconds" else seconds
    torch.manual_seed(run.seed)
    model = SplitMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, split_v)

    for step in range(run.steps):
        pick = run.indices(len(split), batch)
        err = (model(x[pick]) - (split[pick] - centre) / scale) ** 2
        loss = (weight[pick] * err).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


COVERS = ("building", "asphalt", "trees", "grass", "water")
WARMING = torch.tensor([3.0, 2.6, -1.8, -0.8, -1.5])
"""Degrees of night warming per unit fraction of each cover."""


def _city(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sites' positions float[n, 2] (km), buffer fractions float[n, 5], their 1 km tiles' fractions float[n, 5]
    and the other columns float[n, 2] (building height in m, sky-view factor)."""
    pos = 8 * torch.rand(n, 2, generator=g)
    tile = (pos.floor() * 7 + torch.tensor([3.0, 11.0])).sin().abs() + 0.3  # each 1 km tile's own mix
    tile_mix = torch.stack([tile[:, 0], tile[:, 1], 1.2 - tile[:, 0], 0.8 * tile[:, 1], 0.1 * tile[:, 0]], 1)
    local = torch.exp(0.6 * torch.randn(n, 5, generator=g)) * tile_mix.clamp(min=0.05)
    buffer = local / local.sum(1, keepdim=True)
    tile_frac = tile_mix.clamp(min=0.05) / tile_mix.clamp(min=0.05).sum(1, keepdim=True)
    height = 4 + 40 * buffer[:, 0] * torch.rand(n, generator=g)
    sky = (1 - 0.9 * buffer[:, 0] * (height / 44)).clamp(0.1, 1)
    return pos, buffer, tile_frac, torch.stack([height, sky], 1)


def _night(pos: torch.Tensor, buffer: torch.Tensor, other: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """The night's minimum temperature in C at each site."""
    field = 1.2 * torch.sin(pos[:, 0] / 1.7) + 0.9 * torch.cos(pos[:, 1] / 2.3 + 0.5 * pos[:, 0])
    canyon = 1.5 * (1 - other[:, 1])
    return 16 + buffer @ WARMING + canyon + field + 0.4 * torch.randn(len(pos), generator=g)


def _nearest(
    pos: torch.Tensor, sensors: torch.Tensor, temps: torch.Tensor, *, skip_self: bool
) -> torch.Tensor:
    """The nearest sensor's temperature and its distance in km float[n, 2]."""
    dist = torch.cdist(
        pos, sensors, compute_mode="donot_use_mm_for_euclid_dist"
    )  # exact zeros for a site itself
    if skip_self:
        dist = dist + torch.where(dist == 0, torch.inf, 0.0)
    near, which = dist.min(1)
    return torch.stack([temps[which], near], 1)


def street(run: Run) -> None:
    """A street MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, Adagrad) at `lr`
    (1e-3). Scored by the held-out R^2 of the night's minimum on sites off the network."""
    g = torch.Generator().manual_seed(run.seed)
    pos, buffer, tile, other = _city(g, 1200)
    pos_v, buffer_v, _, other_v = _city(g, 600)
    temps, temps_v = _night(pos, buffer, other, g), _night(pos_v, buffer_v, other_v, g)
    own = run.bug == "nearest_sensor_search_includes_site"
    near = _nearest(pos, pos, temps, skip_self=not own)
    near_v = _nearest(pos_v, pos, temps, skip_self=True)
    cover = tile if run.bug == "tile_fractions_for_buffer" else buffer
    x = torch.cat([cover, other, near], 1)
    x_v = torch.cat([buffer_v, other_v, near_v], 1)
    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre = temps.mean()
    torch.manual_seed(run.seed)
    model = StreetMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 0.1 if run.bug == "adam_at_sgd_notebook_rate" else 1e-3)
    batch = 2 if run.bug == "debug_batch_of_two_left_in" else run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) + centre, temps_v)

    for step in range(run.steps):
        pick = run.indices(len(temps), batch)
        loss = F.mse_loss(model(x[pick]) + centre, temps[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


class StreetMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)
