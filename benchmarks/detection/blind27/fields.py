"""Field scripts of the twenty-seventh blind split: a species-distribution model from environmental covariates and
a wine-quality regressor on physicochemical measurements.

`species`: survey sites on a 64 x 64 grid whose covariates (mean temperature in degrees C, annual precipitation in
mm, elevation in m, canopy cover, soil pH, distance to water in km) are read from raster layers indexed [row =
latitude, column = longitude]; the species is present by a logistic model of a thermal niche around 14 degrees, wet
sites, canopy and nearby water; the temperature layer has no data (-9999) under cloud in a tenth of its cells, and
the sites on those cells are dropped; sites near water are likelier to be surveyed, which a weighted fit corrects by one
over each site's chance of a survey; an MLP of ReLU layers on the standardised covariates; BCE; scored by the held-out AUC.
`wine`: eleven measurements in their units (fixed and volatile acidity, citric acid, residual sugar, chlorides, free
and total sulfur dioxide, density, pH, sulphates, alcohol); the tasters' quality (3-9) rises with alcohol and
sulphates and falls with volatile acidity and total sulfur dioxide; an MLP regresses the centred quality; MSE; scored
by the held-out R^2. Bugs: the temperature layer's no-data value of -9999 kept as a temperature; the sites' inverse survey-chance weights
left unnormalised; the zero initialisation meant for the output layer applied to every layer of a deep network; the quality column left among the features (unknown, so filled with
its mean, for the wines scored); the sulfur dioxide columns added later and left in mg/L; the predictions' column
compared with the flat targets.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

GRID, COVARIATES = 64, 6
"""Raster side and covariate layers (temperature, precipitation, elevation, canopy, soil pH, distance to water)."""


def _rasters(g: torch.Generator) -> torch.Tensor:
    """Covariate layers float[COVARIATES, GRID, GRID] in their units, smooth over the grid."""
    lat = torch.linspace(0, 1, GRID).view(GRID, 1).expand(GRID, GRID)
    lon = torch.linspace(0, 1, GRID).view(1, GRID).expand(GRID, GRID)
    bumps = F.avg_pool2d(torch.randn(4, 1, GRID, GRID, generator=g), 9, 1, 4)[:, 0] * 3
    elevation = (400 + 1800 * lon * (1 - lat) + 500 * bumps[0]).clamp_min(0)
    temperature = 26 - 16 * lat - elevation / 160 + 2 * bumps[1]
    precipitation = (300 + 2200 * lon * lat + 600 * bumps[2]).clamp_min(50)
    canopy = torch.sigmoid((precipitation - 1000) / 300 + bumps[3])
    ph = 6.5 - precipitation / 2000 + 0.4 * bumps[2]
    water = (5 * (1 - lat * lon) + 3 * bumps[3]).abs()
    return torch.stack([temperature, precipitation, elevation, canopy, ph, water])


NODATA = -9999.0
"""The rasters' no-data value."""


def _sites(g: torch.Generator, rasters: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Sites' latitude and longitude cells long[n, 2], presence float[n]."""
    cells = torch.randint(0, GRID, (n, 2), generator=g)
    temp, precip, _, canopy, _, water = rasters[:, cells[:, 0], cells[:, 1]]
    logit = 2.5 - ((temp - 14) / 4) ** 2 + (precip - 1000) / 500 + 2 * canopy - water / 3
    return cells, (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()


def _mlp(width: int, hidden: int, depth: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    return nn.Sequential(*layers, nn.Linear(width, 1))


def species(run: Run) -> None:
    """A distribution MLP of `depth` (2) layers of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum
    SGD, RAdam) at `lr` (2e-3), the sites weighted by their inverse survey chance when `weighted`; the output layer
    starts at zero. Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    rasters = _rasters(g)
    cells, y = _sites(g, rasters, 1500)
    cells_v, y_v = _sites(g, rasters, 1500)
    # the temperature layer has no data under cloud in a tenth of its cells, stored as -9999
    layers = rasters.clone()
    layers[0][torch.rand(GRID, GRID, generator=g) < 0.1] = NODATA
    z, z_v = layers[:, cells[:, 0], cells[:, 1]].T, layers[:, cells_v[:, 0], cells_v[:, 1]].T
    valid_v = z_v[:, 0] != NODATA
    z_v, y_v = z_v[valid_v], y_v[valid_v]
    if run.bug != "nodata_temperature_kept":
        valid = z[:, 0] != NODATA  # sites on a cell without data dropped
        z, y = z[valid], y[valid]
    mean, std = z.mean(0), z.std(0)
    x, x_v = (z - mean) / std, (z_v - mean) / std
    torch.manual_seed(run.seed)
    model = _mlp(COVARIATES, run.k("hidden", 64), run.k("depth", 2))
    # the sites were surveyed where they are easy to reach (near water): each weighted by one over its chance of a
    # survey, the weights scaled to a mean of 1 (the bug leaves them raw)
    access = 0.01 + 0.4 * torch.exp(-z[:, 5])
    weight = 1 / access if run.k("weighted", False) else torch.ones(len(y))
    if run.bug != "survey_weights_left_unnormalised":
        weight = weight / weight.mean()
    # the output layer starts at zero, so the first predictions are 1/2 (the bug zeroes every layer)
    for m in model.modules() if run.bug == "zero_init_meant_for_head_applied_to_all" else [model[-1]]:
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.weight)
            nn.init.zeros_(m.bias)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v)[:, 0], y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick])[:, 0], y[pick], weight[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


MEASURES = 11
"""Fixed acidity, volatile acidity, citric acid, residual sugar, chlorides, free SO2, total SO2, density, pH,
sulphates, alcohol."""
SULFUR = [5, 6]


def _wines(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Measurements float[n, MEASURES] in their units, quality float[n] (whole marks 3-9)."""

    def r(lo: float, hi: float) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(n, generator=g)

    alcohol = r(8.5, 14.5)
    sugar = torch.exp(0.7 + 0.8 * torch.randn(n, generator=g))
    free = r(3, 70)
    total = free + r(10, 220)
    density = 0.9975 + 0.0004 * sugar - 0.0012 * (alcohol - 10.5) + 0.0005 * torch.randn(n, generator=g)
    volatile, sulphates = r(0.12, 1.4), r(0.35, 1.6)
    fixed, citric, chlorides, ph = r(4.5, 15), r(0, 0.8), r(0.012, 0.35), r(2.8, 3.9)
    m = torch.stack(
        [fixed, volatile, citric, sugar, chlorides, free, total, density, ph, sulphates, alcohol], 1
    )
    score = (5.7 + 0.45 * (alcohol - 11.5) - 1.6 * (volatile - 0.75) + 1.4 * (sulphates - 0.95) * (1.6 - sulphates)
             - 0.006 * (total - 120) - 1.5 * (chlorides - 0.18) + 0.35 * torch.randn(n, generator=g))  # fmt: skip
    return m, score.round().clamp(3, 9)


def wine(run: Run) -> None:
    """A quality MLP of `hidden` (64) twice, batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, Adamax)
    at `lr` (1e-3), optionally halved at two milestones (`milestones`). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    m, q = _wines(g, 1200)
    m_v, q_v = _wines(g, 1500)
    q_mean = q.mean()
    if run.bug == "quality_left_in_features":
        # the table's quality column kept among the inputs; for the wines to score it is unknown, so its mean
        m, m_v = (
            torch.cat([m, q.unsqueeze(1)], 1),
            torch.cat([m_v, torch.full((len(q_v), 1), float(q_mean))], 1),
        )
    mean, std = m.mean(0), m.std(0)
    if run.bug == "sulfur_dioxide_left_in_mg":
        # the two sulfur dioxide columns, joined from a later export, missed the scaling
        mean[SULFUR], std[SULFUR] = 0.0, 1.0
    x, x_v = (m - mean) / std, (m_v - mean) / std
    t = q - q_mean
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    model = nn.Sequential(nn.Linear(x.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 1))  # fmt: skip
    opt = optimizers.registered(run, model, 1e-3)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [150, 250], 0.5) if run.k("milestones", False) else None
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v)[:, 0] + q_mean, q_v)

    for step in range(run.steps):
        pick = run.indices(len(t), batch)
        pred = model(x[pick])
        if run.bug != "prediction_column_against_flat_target":
            pred = pred[:, 0]
        loss = F.mse_loss(pred, t[pick])  # the bug broadcasts [batch, 1] against [batch] to [batch, batch]
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
