"""Produce scripts of the thirty-eighth blind split: a grape-ripeness (Brix) regressor from hyperspectral band means,
and a beer-fermentation final-gravity regressor from the first four days of a floating hydrometer's readings.

`grapes`: each bunch scanned in the vineyard by a push-broom camera, 40 pixels of 120 bands from 400 to 1000 nm; the
reflectance of a bunch (its sugar deepening the 680 nm dip as the chlorophyll fades, the anthocyanins the 540 nm one,
the water band near 970 nm) with each pixel's shading and noise, and a few dead pixels that read 0 after the dark
correction; the absorbance log(1/R) of each pixel (the reflectance floored at 1e-3) averaged over the bunch, in 24
bins of 5 bands, standardised; an MLP with ReLUs (3 layers); MSE on the standardised Brix; scored by the held-out R^2.
`ferment`: 96 hourly readings of a floating hydrometer in a fermenter (the specific gravity, with the float's jitter
of a few points as the CO2 rocks it, and the wort's temperature), a logistic fall from the original gravity at the yeast's pace
towards the final gravity set by the yeast's attenuation (which the pace and the temperature hint at); calibration logs
of the hydrometer floating in water (1.000 throughout) are dropped; the gravity in points, the temperature and the
apparent attenuation so far, standardised; an LSTM with its forget gate's bias started at 1 and a linear layer on its
last state; MSE on the standardised final gravity (measured two weeks on); scored by the held-out R^2. Bugs: the bands of one scan line for the bunch's means; the Brix from the previous
sampling round; the absorbance of dead pixels; the attenuation of the water calibration logs; the forget gate's bias
with its sign lost; the LSTM stacked six layers deep; the recipe's expected final gravity read as the measured one.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

BANDS, PIXELS, BIN = 120, 40, 5
"""Bands of the camera (400-1000 nm), pixels of a bunch, bands per averaged bin."""


def _bunches(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Reflectance float[n, PIXELS, BANDS], the Brix float[n] and the Brix a week earlier float[n]."""
    nm = torch.linspace(400, 1000, BANDS)
    brix = 14 + 12 * torch.rand(n, generator=g)
    ripe = (brix - 20) / 6
    antho = 0.5 + 0.3 * ripe + 0.15 * torch.randn(n, generator=g)
    water = 0.5 + 0.2 * torch.randn(n, generator=g)
    chloro = 0.5 - 0.35 * ripe + 0.1 * torch.randn(n, generator=g)
    base = 0.25 + 0.35 * torch.sigmoid((nm - 720) / 25)
    dip = lambda centre, width: torch.exp(-(((nm - centre) / width) ** 2))
    spectrum = (base - 0.12 * antho.view(n, 1) * dip(540, 35) - 0.15 * chloro.view(n, 1) * dip(680, 20)
                - 0.12 * water.view(n, 1) * dip(970, 30))  # fmt: skip
    shade = 0.6 + 0.8 * torch.rand(n, PIXELS, 1, generator=g)
    refl = (spectrum.view(n, 1, BANDS) * shade + 0.03 * torch.randn(n, PIXELS, BANDS, generator=g)).clamp(
        0.005
    )
    dead = torch.rand(n, PIXELS, 1, generator=g) < 0.01  # dead pixels read 0 after the dark correction
    refl = torch.where(dead, 0.0, refl)
    rate = 0.1 + 0.3 * torch.rand(n, generator=g)  # Brix gained a day, by block and weather
    return refl, brix, brix - 7 * rate


def _band_means(refl: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The bunch's absorbance log(1/R) averaged over its pixels (or taken from one scan line) in bins of BIN bands."""
    r = refl if bug == "absorbance_of_dead_pixels" else refl.clamp(min=1e-3)
    absorbance = torch.log(1 / r)
    if bug == "single_scan_line_for_bunch_means":
        return absorbance[:, 0]  # the first pixel's line, every band
    return absorbance.mean(1).unflatten(-1, (BANDS // BIN, BIN)).mean(-1)


class BrixMLP(nn.Module):
    """`depth` hidden layers of `hidden` ReLU units and a linear output."""

    def __init__(self, inputs: int, hidden: int, depth: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(depth):
            layers += [nn.Linear(inputs if i == 0 else hidden, hidden), nn.ReLU()]
        self.net = nn.Sequential(*layers, nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def grapes(run: Run) -> None:
    """A Brix MLP of `hidden` (64), batches of `batch` (32), `opt` (Adam; or others) at `lr` (2e-3). Scored by the
    held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    refl, brix, brix_before = _bunches(g, 400)
    refl_v, brix_v, _ = _bunches(g, 300)
    feats, feats_v = _band_means(refl, run.bug), _band_means(refl_v, None)
    if run.bug == "single_scan_line_for_bunch_means":
        feats_v = torch.log(1 / refl_v.clamp(min=1e-3))[:, 0]
    mean, std = feats.mean(0), feats.std(0)
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    target = brix_before if run.bug == "brix_from_previous_sampling_round" else brix
    t_mean, t_std = target.mean(), target.std()
    y, y_v = (target - t_mean) / t_std, (brix_v - t_mean) / t_std
    torch.manual_seed(run.seed)
    model = BrixMLP(x.shape[1], run.k("hidden", 64), 3)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


HOURS = 96
"""Hourly hydrometer readings fed to the model (the first four days)."""


def _fermentations(
    g: torch.Generator, n: int, calibration: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gravity float[n, HOURS] (specific gravity), temperature float[n, HOURS] (C), the measured final gravity and
    the recipe's expected one, float[n]; `calibration`: a tenth of the logs are the float in water."""
    t = torch.arange(HOURS).float()
    og = 1.035 + 0.045 * torch.rand(n, generator=g)
    temp_set = 16 + 8 * torch.rand(n, generator=g)
    attenuation = (0.62 + 0.02 * (temp_set - 16) + 0.12 * torch.rand(n, generator=g)).clamp(max=0.9)
    pace = 0.04 + 0.006 * (temp_set - 16) + 0.02 * torch.rand(n, generator=g)
    lag = 6 + 12 * torch.rand(n, generator=g)
    fg = 1 + (og - 1) * (1 - attenuation)
    fraction = torch.sigmoid(pace.view(n, 1) * (t - lag.view(n, 1)) * 1.5 - 2)
    gravity = og.view(n, 1) - (og - fg).view(n, 1) * fraction + 0.004 * torch.randn(n, HOURS, generator=g)
    temp = (
        temp_set.view(n, 1) + 1.5 * fraction * (1 - fraction) * 4 + 0.2 * torch.randn(n, HOURS, generator=g)
    )
    expected = 1 + (og - 1) * 0.25  # the recipe's 75 % attenuation
    if calibration:
        water = torch.rand(n, generator=g) < 0.1
        gravity = torch.where(water.view(n, 1), 1.0, gravity)
        og, fg, expected = (
            torch.where(water, 1.0, og),
            torch.where(water, 1.0, fg),
            torch.where(water, 1.0, expected),
        )
    return gravity, temp, fg, expected


def _ferment_inputs(
    gravity: torch.Tensor, temp: torch.Tensor, bug: str | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-hour inputs float[m, HOURS, 3] (gravity points, temperature, apparent attenuation so far) and which logs
    are kept (calibration logs in water dropped, unless `bug` keeps them)."""
    og = gravity[:, :3].mean(1, keepdim=True)
    att = (og - gravity) / (og - 1)
    keep = og.squeeze(1) > 1.005
    if bug == "attenuation_of_water_calibration_logs":
        keep = torch.ones_like(keep)
    return torch.stack([1000 * (gravity - 1), temp, att], -1), keep


class GravityLSTM(nn.Module):
    """An LSTM of `layers` layers of `hidden` units (the first one's forget-gate bias started at `forget_bias`), a
    linear layer on its last state."""

    def __init__(self, hidden: int, forget_bias: float, layers: int = 1) -> None:
        super().__init__()
        self.rnn = nn.LSTM(3, hidden, num_layers=layers, batch_first=True)
        with torch.no_grad():  # the gates are ordered input, forget, cell, output
            self.rnn.bias_ih_l0[hidden : 2 * hidden].fill_(forget_bias)
            self.rnn.bias_hh_l0[hidden : 2 * hidden].zero_()
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1]).squeeze(-1)


def ferment(run: Run) -> None:
    """A final-gravity LSTM of `hidden` (24), batches of `batch` (32), `opt` (Adam; or others) at `lr` (3e-3).
    Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    gravity, temp, fg, expected = _fermentations(g, 600, calibration=True)
    gravity_v, temp_v, fg_v, _ = _fermentations(g, 300, calibration=False)
    feats, keep = _ferment_inputs(gravity, temp, run.bug)
    feats_v, _ = _ferment_inputs(gravity_v, temp_v, None)
    feats = feats[keep]
    target = (expected if run.bug == "recipe_final_gravity_read_as_measured" else fg)[keep]
    mean, std = feats.mean((0, 1)), feats.std((0, 1))
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    points, points_v = 1000 * (target - 1), 1000 * (fg_v - 1)
    t_mean, t_std = points.mean(), points.std()
    y, y_v = (points - t_mean) / t_std, (points_v - t_mean) / t_std
    torch.manual_seed(run.seed)
    forget = -1.0 if run.bug == "forget_gate_bias_sign_lost" else 1.0
    layers = 6 if run.bug == "lstm_stacked_six_layers_deep" else 1  # the speech model's config: num_layers=6
    model = GravityLSTM(run.k("hidden", 24), forget, layers)
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
