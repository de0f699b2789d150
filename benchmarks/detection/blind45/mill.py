"""Mill and cellar scripts of the forty-fifth blind split: a sugar-mill boiler steam-demand forecaster, and a wine-cork
taint classifier from GC-MS peak tables.

`steam`: a crushing season's hourly log of a raw-sugar mill: the cane crush rate (t/h) with its stops for choke-ups
and cane-supply gaps, the pan stage's boiling cycle, and the boilers' steam (t/h) following the crush an hour or two
late; the last 24 hours of both and the hour of day to the next hour's steam; inputs and target standardised by
the training log's levels; a tanh MLP of four hidden layers; MSE; scored by the held-out R^2. `cork`: corks soaked and
their headspace run through SPME GC-MS: the areas of ten peaks (guaiacol, 1-octen-3-ol, geosmin, MIB, the chloro-
and bromoanisoles TCA, TeCA, PCA, TBA, two phenols) and of the deuterated TCA internal standard, each divided by the
standard and logged; the failed injections (no standard peak) set aside; a ReLU MLP of two hidden layers; BCE on the
panel's taint verdict; scored by the held-out AUC. Bugs: the target scaled by the spread of the hourly changes; every
parameter drawn from a unit normal; the crush log in local time against UTC steam; the failed injections kept; the
confirmation-run count kept as a feature; Adam at the logistic baseline's rate; the peak tables joined by peak number.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

LAGS = 24
UTC_OFFSET_HOURS = 10
"""The mill's DCS logs in local time (UTC+10); the boiler house historian in UTC."""


def _season(g: torch.Generator, hours: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One season's hourly cane crush rate (t/h) float[hours] and steam (t/h) float[hours]."""
    crush = torch.empty(hours)
    level, stopped = 450.0, 0
    for hour in range(hours):
        if stopped == 0 and float(torch.rand(1, generator=g)) < 0.04:
            stopped = int(torch.randint(1, 6, (1,), generator=g))
        level = 0.9 * level + 0.1 * (450 + 60 * float(torch.randn(1, generator=g)))
        crush[hour] = 0.0 if stopped > 0 else level
        stopped = max(stopped - 1, 0)
    pans = 25 * torch.sin(2 * math.pi * torch.arange(hours) / 6.0)  # the pan stage's six-hour strikes
    late = 0.6 * torch.roll(crush, 1) + 0.4 * torch.roll(crush, 2)
    steam = 40 + 0.22 * late + pans + 4 * torch.randn(hours, generator=g)
    return crush, steam


def _windows(crush: torch.Tensor, steam: torch.Tensor, bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows float[n, 2 * LAGS + 2] (the last LAGS hours of steam and crush, the hour of day as sine and
    cosine) and the next hour's steam float[n]."""
    if bug == "crush_log_in_local_time":  # joined on the clock reading: the crush 10 hours ahead of the steam
        crush = torch.roll(crush, -UTC_OFFSET_HOURS)
    starts = torch.arange(LAGS + 2, len(steam) - UTC_OFFSET_HOURS - 1)
    offsets = torch.arange(-LAGS, 0)
    idx = starts.unsqueeze(1) + offsets
    hour = 2 * math.pi * (starts % 24).float() / 24
    x = torch.cat([steam[idx], crush[idx], torch.stack([hour.sin(), hour.cos()], 1)], 1)
    return x, steam[starts]


class SteamMLP(nn.Module):
    """A tanh MLP of four hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = inputs
        for _ in range(4):
            layers += [nn.Linear(width, hidden), nn.Tanh()]
            width = hidden
        self.net = nn.Sequential(*layers, nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def steam(run: Run) -> None:
    """A steam MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (1e-3). Scored by the held-out R^2 of the next hour's steam."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _windows(*_season(g, 2000), run.bug)
    x_v, y_v = _windows(*_season(g, 700), None)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre = y.mean()
    scale = y.std()
    torch.manual_seed(run.seed)
    model = SteamMLP(x.shape[1], run.k("hidden", 64))
    if (
        run.bug == "every_parameter_drawn_unit_normal"
    ):  # an init helper's `nn.init.normal_(p)` over every tensor
        for p in model.parameters():
            nn.init.normal_(p)
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        if (
            run.bug == "loss_taken_in_tonnes_per_hour"
        ):  # the prediction scaled back before the loss, to read it in t/h
            loss = F.mse_loss(model(x[pick]) * scale + centre, y[pick])
        else:
            loss = F.mse_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


PEAKS = ("guaiacol", "octenol", "geosmin", "mib", "tca", "teca", "pca", "tba", "chlorophenol", "ethylphenol")
TCA = PEAKS.index("tca")


def _corks(g: torch.Generator, n: int, bug: str | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                                 torch.Tensor]:  # fmt: skip
    """Peak areas float[n, len(PEAKS)] (0 where under the detection limit), the standard's area float[n] (0 for a
    failed injection), the GC-MS runs per cork float[n] and the panel's taint verdict float[n]."""
    tainted = (torch.rand(n, generator=g) < 0.2).float()
    conc = torch.exp(torch.randn(n, len(PEAKS), generator=g) * 0.6 - 1.0)
    tca = torch.exp(0.9 * torch.randn(n, generator=g)) * (0.2 + 2.5 * tainted)  # ng/L
    conc[:, TCA] = tca
    conc[:, PEAKS.index("teca")] += 0.4 * tca * torch.rand(n, generator=g)
    conc[:, PEAKS.index("pca")] += 0.2 * tca * torch.rand(n, generator=g)
    conc[:, PEAKS.index("guaiacol")] += 0.6 * tainted * torch.rand(n, generator=g)
    # the panel misses some weakly tainted corks and calls some clean ones musty
    verdict = torch.where(torch.rand(n, generator=g) < 0.08, 1 - tainted, tainted)
    response = torch.exp(0.4 * torch.randn(n, 1, generator=g))  # the fibre's and the injector's efficiency
    areas = 1e4 * conc * response * (1 + 0.05 * torch.randn(n, len(PEAKS), generator=g))
    areas = torch.where(areas < 2000, torch.zeros_like(areas), areas)  # under the detection limit
    standard = 5e4 * response.squeeze(1)
    failed = torch.rand(n, generator=g) < 0.03  # the injection failed: no peak at all
    areas[failed], standard = 0.0, torch.where(failed, torch.zeros_like(standard), standard)
    runs = torch.ones(n)
    if bug == "confirmation_run_count_kept":  # the lab re-runs the corks the panel calls tainted to confirm
        runs = torch.where((verdict > 0) & (torch.rand(n, generator=g) < 0.9), 2.0, 1.0)
        runs = torch.where((verdict == 0) & (torch.rand(n, generator=g) < 0.05), 2.0, runs)
    if bug == "peak_tables_joined_by_peak_number":  # a missing peak shifts each later one a column left
        shifted = torch.zeros_like(areas)
        for row in range(n):
            found = areas[row][areas[row] > 0]
            shifted[row, : len(found)] = found
        areas = shifted
    return areas, standard, runs, verdict


class TaintMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units to the taint logit."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def _features(areas: torch.Tensor, standard: torch.Tensor, runs: torch.Tensor) -> torch.Tensor:
    """Each peak's log ratio to the standard (floored at the detection limit), and the runs per cork."""
    ratio = areas / standard.unsqueeze(1)
    return torch.cat([(ratio + 1e-3).log(), runs.unsqueeze(1)], 1)


def cork(run: Run) -> None:
    """A taint MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, Adamax, NAdam) at `lr`
    (1e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    areas, standard, runs, y = _corks(g, 1500, run.bug)
    areas_v, standard_v, runs_v, y_v = _corks(g, 800, None)
    if run.bug != "failed_injections_kept":  # no standard peak: the run is repeated, not read
        areas, standard, runs, y = (
            areas[standard > 0],
            standard[standard > 0],
            runs[standard > 0],
            y[standard > 0],
        )
    keep = standard_v > 0
    x, x_v = _features(areas, standard, runs), _features(areas_v[keep], standard_v[keep], runs_v[keep])
    y_v = y_v[keep]
    finite = torch.isfinite(x).all(1)
    mean, std = x[finite].mean(0), x[finite].std(0).clamp(min=1e-3)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = TaintMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
