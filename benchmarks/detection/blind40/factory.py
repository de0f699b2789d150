"""Factory scripts of the fortieth blind split: a glass-furnace bubble-defect classifier on melt sensor windows, and a
tyre-tread wear regressor.

`furnace`: windows of 64 readings (one every ten seconds) of a float-glass furnace's six melt sensors (the throat
temperature in C, the crown temperature in C, the bubbler line's pressure in kPa, the gas flow in Nm3/h, the oxygen
flow in Nm3/h, the batch charger's rate in t/h); a window ahead of a bubble (seed) defect carries a dip of the throat
temperature, a pulsing of the bubbler pressure and a lean oxygen-to-gas ratio; about 25 % of the windows are followed
by a defect on the line's inspection camera; each channel less its window mean, divided by a nominal scale per sensor;
the oxygen-to-gas ratio as a seventh channel; three 1-D convolutions with ReLUs, a global mean pool and a linear layer;
BCE with logits; scored by the held-out AUC.
`tread`: tyres of a delivery fleet: the km since fitting (thousands), the inflation pressure (bar), the axle load
(t), the mean speed (km/h), the road roughness index, the rubber compound's hardness (Shore A), the ambient
temperature (C); the tread worn in mm from 8 mm new, growing with distance, under-inflation, load and roughness, less
on harder compounds; the inputs standardised; a ReLU MLP of two hidden layers; MSE on the standardised wear; scored
by the held-out R^2. Bugs: the bubbler pressure logged in pascals; the few defect windows copied to balance; the
oxygen-to-gas ratio over idle burners; the wear target in micrometres; six spectrally
normalised layers; load and pressure swapped.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

READINGS = 64
"""Readings of a furnace window."""
SENSORS = ("throat_c", "crown_c", "bubbler_kpa", "gas_nm3h", "oxygen_nm3h", "charger_th")
"""The melt sensors in the historian's column order."""
NOMINAL = torch.tensor([5.0, 5.0, 2.0, 50.0, 100.0, 2.0])
"""A typical swing of each sensor within a window: the scale its window is divided by."""


def _melt(g: torch.Generator, n: int, pascals: bool, few_defects: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Sensor windows float[n, 6, READINGS] in the historian's units and the defect label float[n]; `pascals`: the
    bubbler pressure logged in Pa; `few_defects`: the defect windows only the 12 the camera's first week logged,
    copied to a quarter of the windows."""
    label = (torch.rand(n, generator=g) < 0.25).float()
    t = torch.arange(READINGS).float()
    base = torch.tensor([1450.0, 1580.0, 120.0, 900.0, 1800.0, 25.0]).view(1, 6, 1)
    level = base * (1 + 0.02 * torch.randn(n, 6, 1, generator=g))
    walk = torch.randn(n, 6, READINGS, generator=g).cumsum(-1) * torch.tensor(
        [0.3, 0.2, 0.05, 2.0, 4.0, 0.05]
    ).view(1, 6, 1)
    noise = torch.randn(n, 6, READINGS, generator=g) * torch.tensor([1.0, 1.0, 0.3, 8.0, 15.0, 0.3]).view(
        1, 6, 1
    )
    x = level + walk + noise
    at = 10 + 40 * torch.rand(n, 1, generator=g)
    width = 4 + 6 * torch.rand(n, 1, generator=g)
    bump = torch.exp(-(((t - at) / width) ** 2))
    strength = (0.5 + torch.rand(n, 1, generator=g)) * label.unsqueeze(-1)
    x[:, 0] -= 6 * strength * bump  # the throat cools
    x[:, 2] += (
        2.5 * strength * bump * torch.sin(t * (0.8 + 0.4 * torch.rand(n, 1, generator=g)))
    )  # the bubbler pulses
    x[:, 4] -= 120 * strength * bump  # the burners run lean
    x[:, 3] *= (torch.rand(n, 1, generator=g) > 0.03).float()  # burners idled for a reversal: no gas
    x[:, 4] *= (x[:, 3] > 0).float()
    if few_defects:
        pos = label.nonzero().squeeze(-1)
        keep = pos[:12]
        x[pos] = x[keep[torch.arange(len(pos)) % len(keep)]]
    if pascals:
        x[:, 2] *= 1000.0
    return x, label


def _channels(x: torch.Tensor, bug: str | None) -> torch.Tensor:
    """Each sensor less its window mean over its nominal swing, and the oxygen-to-gas ratio as a seventh channel."""
    scaled = (x - x.mean(-1, keepdim=True)) / NOMINAL.view(1, 6, 1)
    if bug == "oxygen_ratio_over_idle_burners":
        ratio = x[:, 4] / x[:, 3]  # the idle burners' windows: 0 / 0
    else:
        ratio = x[:, 4] / x[:, 3].clamp(min=1.0)
    ratio = (ratio - 2.0) * 5
    return torch.cat([scaled, ratio.unsqueeze(1)], 1)


class FurnaceCNN(nn.Module):
    """Three 5-wide convolutions over time (`width` channels) with ReLUs, a global mean pool, a linear layer."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(7, width, 5, padding=2), nn.ReLU(), nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
            nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(-1)).squeeze(-1)


def furnace(run: Run) -> None:
    """A furnace CNN of `width` (24), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (2e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    raw, y = _melt(g, 1200, pascals=run.bug == "bubbler_pressure_logged_in_pascals",
                   few_defects=run.bug == "few_defect_windows_copied_to_balance")  # fmt: skip
    raw_v, y_v = _melt(g, 600, pascals=False, few_defects=False)
    x, x_v = _channels(raw, run.bug), _channels(raw_v, None)
    torch.manual_seed(run.seed)
    model = FurnaceCNN(run.k("width", 24))
    opt = optimizers.registered(run, model, 2e-3)
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


FEATURES = ("km_thousands", "pressure_bar", "load_t", "speed_kmh", "roughness", "shore_a", "ambient_c")
"""The tyre log's columns."""


def _tyres(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The tyre log float[n, 7] and the tread worn float[n] in mm."""
    km = 5 + 75 * torch.rand(n, generator=g)
    pressure = 7.5 + 1.5 * torch.randn(n, generator=g)
    load = 2 + 5 * torch.rand(n, generator=g)
    speed = 30 + 50 * torch.rand(n, generator=g)
    rough = 1 + 4 * torch.rand(n, generator=g)
    shore = 60 + 12 * torch.rand(n, generator=g)
    ambient = 15 + 10 * torch.randn(n, generator=g)
    under = (8.5 - pressure).clamp(min=0)
    rate = 0.06 * (1 + 0.25 * under**2) * (load / 4) ** 0.8 * (0.6 + 0.2 * rough) * (1 + (ambient - 15) / 80)
    rate = rate * (72 / shore) ** 2 * (0.8 + speed / 200)
    wear = (km * rate).clamp(max=7.5) + 0.1 * torch.randn(n, generator=g)
    return torch.stack([km, pressure, load, speed, rough, shore, ambient], -1), wear


class TreadMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden`; or, `lipschitz`, six hidden layers each under spectral
    normalisation (a wear curve meant to stay smooth in its inputs)."""

    def __init__(self, hidden: int, lipschitz: bool = False) -> None:
        super().__init__()
        if lipschitz:
            sn = nn.utils.parametrizations.spectral_norm
            layers: list[nn.Module] = [sn(nn.Linear(7, hidden)), nn.ReLU()]
            for _ in range(5):
                layers += [sn(nn.Linear(hidden, hidden)), nn.ReLU()]
            layers.append(sn(nn.Linear(hidden, 1)))
        else:
            layers = [
                nn.Linear(7, hidden),
                nn.ReLU(),
                nn.Linear(hidden, hidden),
                nn.ReLU(),
                nn.Linear(hidden, 1),
            ]
        self.body = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).squeeze(-1)


def tread(run: Run) -> None:
    """A tread MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at `lr`
    (2e-3). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    raw, wear = _tyres(g, 1500)
    raw_v, wear_v = _tyres(g, 600)
    if run.bug == "load_and_pressure_columns_swapped":  # the second depot's export lists load before pressure
        raw = raw[:, [0, 2, 1, 3, 4, 5, 6]]
    mean, std = raw.mean(0), raw.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    w_mean, w_std = wear.mean(), wear.std()
    y, y_v = (wear - w_mean) / w_std, (wear_v - w_mean) / w_std
    if run.bug == "wear_target_in_micrometres":  # the gauge's export in um, left as it came
        y = wear * 1000.0
    torch.manual_seed(run.seed)
    model = TreadMLP(run.k("hidden", 64), lipschitz=run.bug == "spectral_norm_on_six_layers_for_smoothness")
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        pred = model(x_v)
        if run.bug == "wear_target_in_micrometres":
            return r2(pred / 1000.0, wear_v)
        return r2(pred, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
