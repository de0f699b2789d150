"""Workshop scripts of the thirty-sixth blind split: a CNC tool-wear regressor on spindle-current windows, and a
concrete compressive-strength regressor on mix proportions.

`toolwear`: windows of 64 samples of a milling spindle's current and the feed axis's current, logged by a 12-bit ADC
(2048 counts at zero, 400 counts to the ampere), while a tool wears from sharp to 0.3 mm of flank wear; the spindle's
load rises with the wear and the depth of cut, the tooth-passing ripple grows with the wear; one window in twenty is
logged while the spindle stands for a tool check (no current); the counts converted to amperes, the window's crest
factor (peak over RMS, 0 for a standing spindle) as a third channel; a 1-D CNN of three ReLU convolutions, a mean pool
and a linear layer; MSE on the standardised wear; scored by the held-out R^2. `concrete`: batches of concrete by their
cement, slag, fly ash, water, superplasticiser, coarse and fine aggregate (kg/m^3) and age (days); the strength from the
water-to-binder ratio (Abrams' law) growing with the log of the age; the age logged, every column standardised by the
training rows; a ReLU MLP; MSE on the standardised strength; scored by the held-out R^2. Bugs: the crest factor divided
by a standing spindle's zero RMS; the wear regressed in micrometres as the microscope logs it; each window standardised
on its own; a tutorial's nine-deep tanh network for the signed currents; the reference paper's sigmoid network deepened;
the weights reinitialised by `uniform_` with its default bounds; the split's fractions swapped; the ridge baseline's
alpha passed as weight decay; the output bias started at the mean strength in MPa; the slag and fly ash logged with
their zeros.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES = 64
"""Samples of a current window."""
ZERO_COUNTS, COUNTS_PER_AMP = 2048, 400
"""The ADC's reading at zero current and its counts per ampere."""


def _windows(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """ADC counts float[n, 2, SAMPLES] of the spindle and feed currents, and the flank wear in mm float[n]."""
    wear = 0.3 * torch.rand(n, generator=g) ** 0.8
    depth = 0.8 + 0.4 * torch.rand(n, 1, generator=g)
    t = torch.arange(SAMPLES).float()
    tooth = 0.6 + 0.3 * torch.rand(n, 1, generator=g)
    phase = 6.3 * torch.rand(n, 1, generator=g)
    load = depth * (1.2 + 3.0 * wear[:, None]) + 0.1 * torch.randn(n, 1, generator=g)
    ripple = (0.1 + 1.5 * wear[:, None]) * depth * torch.sin(tooth * t + phase)
    spindle = load + ripple + 0.15 * torch.randn(n, SAMPLES, generator=g)
    feed = 0.5 * depth * (1 + wear[:, None]) + 0.1 * torch.randn(n, SAMPLES, generator=g)
    amps = torch.stack([spindle, feed], 1)
    standing = torch.rand(n, generator=g) < 0.05
    amps[standing] = 0.0
    return (amps * COUNTS_PER_AMP + ZERO_COUNTS).round(), wear


def _channels(counts: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The currents in amperes and the spindle's crest factor as a third channel, float[n, 3, SAMPLES]."""
    amps = (counts - ZERO_COUNTS) / COUNTS_PER_AMP
    spindle = amps[:, 0]
    rms = spindle.pow(2).mean(-1).sqrt()
    if bug == "crest_factor_over_standing_spindle":
        crest = spindle.abs().amax(-1) / rms
    else:
        crest = torch.where(rms > 0, spindle.abs().amax(-1) / rms.clamp(min=1e-6), 0.0)
    x = torch.cat([amps, crest[:, None, None].expand(-1, 1, amps.shape[-1])], 1)
    if bug == "each_window_standardised_alone":
        x = (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-6)
    return x


class WearCNN(nn.Module):
    """5-wide convolutions of `width` channels with `act` (three ReLU ones; the second and third with stride 2, the
    rest `extra`, keeping the length), a mean pool over time, a linear layer."""

    def __init__(self, width: int, act: type[nn.Module] = nn.ReLU, extra: int = 0) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv1d(3, width, 5, padding=2), act()]
        for i in range(2 + extra):
            layers += [nn.Conv1d(width, width, 5, stride=2 if i < 2 else 1, padding=2), act()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(-1)).squeeze(-1)


def toolwear(run: Run) -> None:
    """A wear CNN of `width` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (1e-3). Scored by the held-out R^2 of the wear."""
    g = torch.Generator().manual_seed(run.seed)
    counts, wear = _windows(g, 1500)
    counts_v, wear_v = _windows(g, 600)
    x, x_v = _channels(counts, run.bug), _channels(counts_v, None)
    mean, std = wear.mean(), wear.std()
    y, y_v = (wear - mean) / std, (wear_v - mean) / std
    if run.bug == "wear_target_in_microns":
        y, y_v = 1000 * wear, 1000 * wear_v  # the microscope's log in micrometres, taken as it is
    torch.manual_seed(run.seed)
    if run.bug == "tutorial_tanh_stack_for_signed_currents":
        model = WearCNN(
            run.k("width", 32), nn.Tanh, extra=6
        )  # the vibration tutorial's network: tanh, nine deep
    else:
        model = WearCNN(run.k("width", 32))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

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


COLUMNS = ("cement", "slag", "fly_ash", "water", "superplasticiser", "coarse", "fine", "age")
RIDGE_ALPHA = 1.0
"""The ridge baseline's regularisation (sklearn's default alpha), fitted beside the network."""


def _batches(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mix proportions in kg/m^3 and the age in days float[n, 8], and the compressive strength in MPa float[n]."""
    u = torch.rand(n, 8, generator=g)
    cement = 100 + 440 * u[:, 0]
    slag = torch.where(u[:, 1] < 0.5, 0.0, 300 * u[:, 1] - 150)
    ash = torch.where(u[:, 2] < 0.55, 0.0, 400 * u[:, 2] - 220)
    water = 120 + 120 * u[:, 3]
    sp = torch.where(u[:, 4] < 0.4, 0.0, 32 * u[:, 4] - 12)
    coarse = 800 + 350 * u[:, 5]
    fine = 600 + 390 * u[:, 6]
    age = torch.tensor([1.0, 3, 7, 14, 28, 56, 90, 180, 365])[(u[:, 7] * 9).long().clamp(max=8)]
    binder = cement + 0.8 * slag + 0.4 * ash
    wb = water / binder
    strength = 100 * torch.exp(-1.9 * wb) * (age.log1p() / torch.tensor(29.0).log()) ** 0.7
    strength = strength * (1 + 0.01 * sp) * (1 + 0.0002 * (coarse - 975)) + 5 * torch.randn(n, generator=g)
    return torch.stack([cement, slag, ash, water, sp, coarse, fine, age], 1), strength


def _mlp(hidden: int, bug: str | None) -> nn.Sequential:
    """Two ReLU layers of `hidden` to the strength; the paper's network is sigmoid hidden layers, here six deep."""
    if bug == "paper_sigmoid_network_deepened":
        layers: list[nn.Module] = [nn.Linear(8, hidden), nn.Sigmoid()]
        for _ in range(5):
            layers += [nn.Linear(hidden, hidden), nn.Sigmoid()]
        return nn.Sequential(*layers, nn.Linear(hidden, 1))
    return nn.Sequential(
        nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
    )


def concrete(run: Run) -> None:
    """A strength MLP of `hidden` (64), batches of `batch` (32), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at `lr`
    (2e-3). Scored by the held-out R^2 of the strength."""
    g = torch.Generator().manual_seed(run.seed)
    mixes, strength = _batches(g, 1000)
    mixes_v, strength_v = _batches(g, 500)
    cut = 100 if run.bug == "split_fractions_swapped" else 900  # random_split(rows, [0.9, 0.1])
    mixes, strength = mixes[:cut], strength[:cut]
    logged = [1, 2, 7] if run.bug == "log_of_zero_slag_and_ash" else [7]  # the skewed columns, logged
    mixes, mixes_v = mixes.clone(), mixes_v.clone()
    mixes[:, logged], mixes_v[:, logged] = mixes[:, logged].log(), mixes_v[:, logged].log()
    mean, std = mixes.mean(0), mixes.std(0)
    x, x_v = (mixes - mean) / std, (mixes_v - mean) / std
    s_mean, s_std = strength.mean(), strength.std()
    y, y_v = (strength - s_mean) / s_std, (strength_v - s_mean) / s_std
    torch.manual_seed(run.seed)
    model = _mlp(run.k("hidden", 64), run.bug)
    if run.bug == "output_bias_started_at_mean_strength_mpa":
        nn.init.constant_(
            model[-1].bias, float(s_mean)
        )  # the mean strength in MPa, though the target is standardised
    if run.bug == "weights_reinitialised_by_bare_uniform":
        for m in model.modules():
            if isinstance(m, nn.Linear):
                nn.init.uniform_(m.weight)  # meant as Glorot's uniform, but its bounds default to [0, 1)
    opt = optimizers.registered(run, model, 2e-3)
    if run.bug == "ridge_alpha_passed_as_weight_decay":
        for group in opt.param_groups:
            group["weight_decay"] = RIDGE_ALPHA
    batch = run.k("batch", 32)

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
