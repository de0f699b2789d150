"""Farm scripts of the forty-sixth blind split: a cranberry-bog frost-protection trigger classifier, and a kelp-farm
growth-rate regressor.

`frost`: spring nights on a grower's bogs: the 18:00 and 21:00 canopy temperatures, the air temperature at the
weather station's screen, the dew point, the wind, the cloud cover, the sand's temperature and the buds' hardiness
(their critical temperature by bud stage); the night is a frost night when the canopy minimum falls below the
hardiness, the canopy cooling faster than the screen air on calm clear nights; standardised; a ReLU MLP of two hidden
layers; BCE on the logit; scored by the held-out AUC on other bogs' nights. `kelp`: longline survey intervals of
sugar-kelp farms: the season's mean sea temperature, nitrate, light, current and the depth, the day of the season and
the frond length at the last survey; the growth rate in mm/day from nitrate-limited, light-limited, temperature-bounded
growth; standardised; a tanh MLP of four hidden layers; MSE on the standardised rate; scored by the held-out R^2 on
other farms' lines. Bugs: the cooling rate over a zero interval; the sprinkler's run hours kept; the frost label from
the screen's 0 C; LeCun's scaled tanh with its constants inverted; batches of one longline each; the growth over the days since deployment.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers


def _nights(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Nights' readings float[n, 8] (canopy at 18:00 and 21:00 in C, hours between them, screen air, dew point, wind
    in m/s, cloud in oktas, hardiness in C), the sprinkler's run hours float[n], the canopy minimum float[n] and the
    screen's minimum float[n]."""
    air = 2 + 5 * torch.randn(n, generator=g)
    dew = air - 1 - 4 * torch.rand(n, generator=g)
    wind = 4 * torch.rand(n, generator=g) ** 2
    cloud = (9 * torch.rand(n, generator=g)).floor().clamp(max=8)
    hardiness = -(1 + 6 * torch.rand(n, generator=g))  # bud stage: tight bud hardy, hook stage not
    clear_calm = (1 - cloud / 8) * torch.exp(-wind / 1.5)
    c18 = air + 0.5 * torch.randn(n, generator=g)
    # loggers of some bogs report once in the evening, their 21:00 reading copied from 18:00
    once = torch.rand(n, generator=g) < 0.15
    hours = torch.where(once, 0.0, 3.0)
    rate = 0.4 + 1.2 * clear_calm + 0.1 * torch.randn(n, generator=g)  # C per hour
    c21 = torch.where(once, c18, c18 - 3 * rate)
    screen_min = air - 3 - 2 * clear_calm + 0.6 * torch.randn(n, generator=g)
    canopy_min = torch.maximum(air - 3 - 6 * clear_calm + 1.5 * torch.randn(n, generator=g), dew - 2.5)
    frost = canopy_min < hardiness
    # growers run the sprinklers through the frost nights, and on a few close calls
    close = (canopy_min < hardiness + 1.5) & (torch.rand(n, generator=g) < 0.3)
    sprinkler = torch.where(frost | close, 4 + 3 * torch.rand(n, generator=g), torch.zeros(n))
    x = torch.stack([c18, c21, hours, air, dew, wind, cloud, hardiness], 1)
    return x, sprinkler, canopy_min, screen_min


def _frost_features(x: torch.Tensor, sprinkler: torch.Tensor, *, bug: str | None) -> torch.Tensor:
    """The model's columns: the readings, the evening's cooling rate (C/h) and, for the bug, the sprinkler hours."""
    hours = x[:, 2]
    if bug == "cooling_rate_over_single_evening_reading":
        rate = (x[:, 0] - x[:, 1]) / hours  # 0/0 for the bogs that report once
    else:
        rate = torch.where(hours > 0, (x[:, 0] - x[:, 1]) / hours.clamp(min=1e-6), torch.nan)
        rate = torch.where(rate.isnan(), rate.nanmean(), rate)  # filled with the mean rate
    cols = [x, rate.unsqueeze(1)]
    if bug == "sprinkler_run_hours_kept":
        cols.append(sprinkler.unsqueeze(1))
    return torch.cat(cols, 1)


class FrostMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units and one logit."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def frost(run: Run) -> None:
    """A frost MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (1e-3). Scored by the held-out AUC of the canopy frost on other bogs' nights."""
    g = torch.Generator().manual_seed(run.seed)
    x, sprinkler, canopy, screen = _nights(g, 2000)
    x_v, _, canopy_v, _ = _nights(g, 1000)
    y = (canopy < x[:, 7]).float() if run.bug != "frost_labelled_at_screen_height" else (screen < 0).float()
    y_v = (canopy_v < x_v[:, 7]).float()
    feats = _frost_features(x, sprinkler, bug=run.bug)
    # the nights to alert on come before anyone has run a sprinkler
    feats_v = _frost_features(x_v, torch.zeros(len(x_v)), bug=run.bug)
    mean, std = feats.mean(0), feats.std(0).clamp(min=1e-6)
    feats, feats_v = (feats - mean) / std, (feats_v - mean) / std
    torch.manual_seed(run.seed)
    model = FrostMLP(feats.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(feats_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(feats[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


def _lines(g: torch.Generator, farms: int, lines: int, surveys: int) -> tuple[torch.Tensor, torch.Tensor,
                                                                           torch.Tensor, torch.Tensor]:  # fmt: skip
    """Survey intervals float[n, 7] (sea temperature in C, nitrate in umol/L, light in mol/m2/day, current in m/s,
    depth in m, day of the season, frond length at the last survey in mm), the growth rate in mm/day float[n], the
    days since deployment float[n] and the longline of each row long[n]."""
    n_lines = farms * lines
    farm = torch.arange(farms).repeat_interleave(lines)
    site_temp = (9 + 3 * torch.rand(farms, generator=g))[farm]
    site_nitrate = (4 + 6 * torch.rand(farms, generator=g))[farm]
    depth = 1 + 4 * torch.rand(n_lines, generator=g)
    line = torch.arange(n_lines).repeat_interleave(surveys)
    day = (torch.arange(surveys) * 14 + 14).float().repeat(n_lines) + 3 * torch.rand(
        n_lines * surveys, generator=g
    )
    n = len(line)
    temp = site_temp[line] + 3 * torch.sin(day / 60) + 0.5 * torch.randn(n, generator=g)
    nitrate = (site_nitrate[line] * (1 - day / 250) + 0.8 * torch.randn(n, generator=g)).clamp(min=0.2)
    light = (8 + 12 * day / 180) * torch.exp(-0.25 * depth[line]) * (1 + 0.2 * torch.randn(n, generator=g))
    current = 0.05 + 0.3 * torch.rand(n, generator=g)
    length = 20 + 8 * day * (1 + 0.2 * torch.randn(n, generator=g)).clamp(min=0.3)
    rate = (
        14 * nitrate / (nitrate + 2) * light / (light + 6) * torch.exp(-((temp - 11) / 5) ** 2)
        * (1 + 0.6 * current) / (1 + length / 1500)
        + 0.6 * torch.randn(n, generator=g)
    )  # fmt: skip
    x = torch.stack([temp, nitrate, light, current, depth[line], day, length], 1)
    return x, rate, day, line


class LeCunTanh(nn.Module):
    """The scaled tanh of LeCun's efficient-backprop recipe as the bug writes it, its constants inverted:
    2/3 tanh(x / 1.7159) for 1.7159 tanh(2x / 3)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2 / 3 * torch.tanh(x / 1.7159)


class KelpMLP(nn.Module):
    """A tanh MLP of four hidden layers of `hidden` units (the bug's activation in their place)."""

    def __init__(self, inputs: int, hidden: int, act: type[nn.Module] = nn.Tanh) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(4):
            layers += [nn.Linear(inputs if i == 0 else hidden, hidden), act()]
        self.net = nn.Sequential(*layers, nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def kelp(run: Run) -> None:
    """A growth MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adamax) at `lr`
    (1e-3). Scored by the held-out R^2 of the growth rate on other farms' lines."""
    g = torch.Generator().manual_seed(run.seed)
    x, rate, day, line = _lines(g, 12, 10, 12)
    x_v, rate_v, _, _ = _lines(g, 6, 10, 12)
    if run.bug == "growth_over_days_since_deployment":
        # the survey's gain in length divided by the days since the line went out, not since the last survey
        rate = rate * 14 / day
    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = rate.mean(), rate.std()
    torch.manual_seed(run.seed)
    act: type[nn.Module] = LeCunTanh if run.bug == "scaled_tanh_constants_inverted" else nn.Tanh
    model = KelpMLP(x.shape[1], run.k("hidden", 64), act)
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)
    lines = int(line.max()) + 1

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, rate_v)

    for step in range(run.steps):
        if run.bug == "batches_one_longline_each":
            # a loader grouped by longline (the survey sheets' order), each batch one line's surveys
            pick = (line == int(torch.randint(0, lines, (1,), generator=run.gen))).nonzero().squeeze(1)
        else:
            pick = run.indices(len(rate), batch)
        loss = F.mse_loss(model(x[pick]), (rate[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
