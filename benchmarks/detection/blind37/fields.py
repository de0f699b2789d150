"""Field scripts of the thirty-seventh blind split: a solar-panel soiling-loss regressor from a site's last fortnight of
weather, and a cattle live-weight regressor from body measurements.

`soiling`: 14 days of a solar site's daily PM10 (ug/m^3), rainfall (mm), relative humidity and wind speed, with the
panel tilt and the days since the last cleaning; the soiling loss (the fraction of power lost to dust) grows with the
dust deposited since the last rain of at least 2 mm or the last cleaning, faster on humid days (cementation) and on
flat panels, and is washed off by such rain; the days since a cleaning rain counted from the daily rainfall; the
standardised fortnight flattened with the site's columns; a ReLU MLP of three hidden layers; MSE on the loss in
percent, standardised; scored by the held-out R^2. `cattle`: body measurements of beef cattle (heart girth, body
length, hip height in cm, body condition score, age in months, sex, one of six breeds one-hot, two of them rare); the
live weight in kg from the girth squared times the length with a breed factor; standardised; a ReLU MLP of two hidden
layers; MSE on the standardised weight; scored by the held-out R^2. Bugs: Adam's rate typed 3e-1 for 3e-4; the rain
that cleans counted from any drizzle; the soiling ratio read for the loss; one farm's scale in pounds; the rare
breeds weighted by their inverse frequency; the breed dummies built for the training and the held-out rows apart.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DAYS = 14
"""Days of weather in a sample."""


def _sites(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Daily weather float[n, DAYS, 4] (PM10, rain, humidity, wind), site columns float[n, 2] (tilt in degrees, days
    since the last cleaning), the soiling loss in percent and the soiling ratio (1 - the loss fraction), float[n]."""
    pm = (20 + 120 * torch.rand(n, 1, generator=g)) * torch.exp(0.4 * torch.randn(n, DAYS, generator=g))
    wet = torch.rand(n, DAYS, generator=g) < 0.15
    rain = wet.float() * torch.exp(
        1.5 * torch.randn(n, DAYS, generator=g)
    )  # many drizzles, a few washing rains
    humidity = (40 + 40 * torch.rand(n, 1, generator=g) + 10 * torch.randn(n, DAYS, generator=g)).clamp(
        5, 100
    )
    wind = (2 + 4 * torch.rand(n, DAYS, generator=g)).clamp(min=0)
    tilt = 5 + 30 * torch.rand(n, 1, generator=g)
    cleaned = torch.randint(0, 40, (n, 1), generator=g).float()
    loss = 0.4 * torch.rand(n, generator=g) * (cleaned.squeeze(1) > DAYS).float()
    for d in range(DAYS):
        daily = (
            0.004
            * pm[:, d]
            * (1 + 0.015 * humidity[:, d])
            * (1.3 - tilt[:, 0] / 40)
            * (1 + 0.05 * wind[:, d])
        )
        loss = loss + daily
        loss = torch.where(rain[:, d] >= 2.0, 0.1 * loss, loss)
        loss = torch.where(cleaned[:, 0] == DAYS - 1 - d, torch.zeros_like(loss), loss)
    loss = (loss + 0.15 * torch.randn(n, generator=g)).clamp(min=0)
    weather = torch.stack([pm, rain, humidity, wind], -1)
    return weather, torch.cat([tilt, cleaned], 1), loss, 1 - loss / 100


def _days_since_rain(rain: torch.Tensor, any_drizzle: bool) -> torch.Tensor:
    """For each day, the days since the last washing rain of at least 2 mm (`any_drizzle`: any rain at all; DAYS before
    none), float[n, DAYS]."""
    washed = rain > 0 if any_drizzle else rain >= 2.0
    since = torch.full((rain.shape[0],), float(DAYS))
    out = torch.zeros_like(rain)
    for d in range(DAYS):
        since = torch.where(washed[:, d], torch.zeros_like(since), since + 1)
        out[:, d] = since
    return out


def _soiling_inputs(weather: torch.Tensor, site: torch.Tensor, any_drizzle: bool) -> torch.Tensor:
    """The fortnight's weather with the days since a cleaning rain, flattened, and the site's columns."""
    since = _days_since_rain(weather[..., 1], any_drizzle)
    days = torch.cat([weather, since.unsqueeze(-1)], -1)
    return torch.cat([days.flatten(1), site], 1)


def _mlp(inputs: int, hidden: int, layers: int) -> nn.Sequential:
    """`layers` hidden linear layers of `hidden` with ReLUs and a linear output."""
    parts: list[nn.Module] = []
    for i in range(layers):
        parts += [nn.Linear(inputs if i == 0 else hidden, hidden), nn.ReLU()]
    return nn.Sequential(*parts, nn.Linear(hidden, 1))


def soiling(run: Run) -> None:
    """A soiling MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, Adagrad, AdamW) at `lr`
    (3e-4 for Adam). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    weather, site, loss_pct, ratio = _sites(g, 1500)
    weather_v, site_v, loss_v, _ = _sites(g, 600)
    drizzle = run.bug == "cleaning_rain_counted_from_any_drizzle"
    feats, feats_v = _soiling_inputs(weather, site, drizzle), _soiling_inputs(weather_v, site_v, False)
    mean, std = feats.mean(0), feats.std(0)
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    target = ratio if run.bug == "soiling_ratio_read_for_loss" else loss_pct
    t_mean, t_std = target.mean(), target.std()
    y, y_v = (target - t_mean) / t_std, (loss_v - t_mean) / t_std
    torch.manual_seed(run.seed)
    model = _mlp(x.shape[1], run.k("hidden", 64), 3)
    default_lr = 3e-1 if run.bug == "adam_rate_typed_3e_1" else 3e-4
    opt = optimizers.registered(run, model, default_lr)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v).squeeze(-1), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]).squeeze(-1), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


BREEDS = ["angus", "hereford", "charolais", "limousin", "brahman", "wagyu"]
"""The herd book's breeds; the last two are rare in the data."""
BREED_SHARE = torch.tensor([0.35, 0.3, 0.17, 0.15, 0.02, 0.01])
BREED_FACTOR = torch.tensor([1.0, 0.97, 1.08, 1.05, 0.9, 0.93])


def _cattle(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Measurements float[n, 6] (girth, length, hip height, condition score, age in months, sex), breed long[n],
    live weight in kg float[n] and the farm long[n] (0-3)."""
    breed = torch.multinomial(BREED_SHARE, n, replacement=True, generator=g)
    age = 6 + 30 * torch.rand(n, generator=g)
    sex = (torch.rand(n, generator=g) < 0.5).float()
    size = (1 - torch.exp(-age / 14)) * (1 + 0.08 * sex) * (1 + 0.05 * torch.randn(n, generator=g))
    girth = 120 + 90 * size * BREED_FACTOR[breed]
    length = 100 + 70 * size * (1 + 0.04 * torch.randn(n, generator=g))
    hip = 95 + 45 * size * (1 + 0.03 * torch.randn(n, generator=g))
    condition = (3 + torch.randn(n, generator=g)).clamp(1, 5)
    weight = girth**2 * length / 10840 * BREED_FACTOR[breed] * (0.9 + 0.04 * condition)
    weight = weight * (1 + 0.03 * torch.randn(n, generator=g))
    farm = torch.randint(0, 4, (n,), generator=g)
    return torch.stack([girth, length, hip, condition, age, sex], 1), breed, weight, farm


def _dummies(breed: torch.Tensor) -> torch.Tensor:
    """One column per breed that occurs in these rows, in order of appearance (as a get_dummies over the rows would
    give them unless told the categories)."""
    seen = list(dict.fromkeys(breed.tolist()))
    return torch.stack([(breed == b).float() for b in seen], 1)


def cattle(run: Run) -> None:
    """A cattle MLP of `hidden` (64), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, RAdam) at `lr`
    (1e-3). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    meas, breed, weight, farm = _cattle(g, 700)
    meas_v, breed_v, weight_v, _ = _cattle(g, 500)
    if run.bug == "one_farm_scale_in_pounds":
        weight = torch.where(farm == 2, weight * 2.2046, weight)
    if run.bug == "breed_dummies_built_per_split":
        onehot, onehot_v = _dummies(breed), _dummies(breed_v)
        onehot_v = F.pad(onehot_v, (0, onehot.shape[1] - onehot_v.shape[1]))
    else:
        onehot, onehot_v = F.one_hot(breed, len(BREEDS)).float(), F.one_hot(breed_v, len(BREEDS)).float()
    mean, std = meas.mean(0), meas.std(0)
    x = torch.cat([(meas - mean) / std, onehot], 1)
    x_v = torch.cat([(meas_v - mean) / std, onehot_v], 1)
    w_mean, w_std = weight.mean(), weight.std()
    y, y_v = (weight - w_mean) / w_std, (weight_v - w_mean) / w_std
    if run.bug == "rare_breeds_weighted_by_inverse_frequency":
        counts = torch.bincount(breed, minlength=len(BREEDS)).float()
        sample_weight = (len(breed) / (len(BREEDS) * counts.clamp(min=1)))[breed]
    else:
        sample_weight = torch.ones(len(y))
    torch.manual_seed(run.seed)
    model = _mlp(x.shape[1], run.k("hidden", 64), 2)
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v).squeeze(-1), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        err = (model(x[pick]).squeeze(-1) - y[pick]) ** 2
        loss = (sample_weight[pick] * err).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
