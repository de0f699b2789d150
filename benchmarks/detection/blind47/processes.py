"""Process scripts of the forty-seventh blind split: a compost-pile temperature forecaster, and a cement-kiln clinker
free-lime regressor from process readings.

`compost`: windrows logged hourly (the core and ambient temperatures, the moisture, the oxygen, whether the pile was
turned); the microbes' heat peaks near 55 C and falls off as the oxygen runs down, a turning restores the oxygen and
drops the core by several degrees; windows of 24 hours and the turnings planned in the next 12; the core's excess over
the ambient taken as a log; standardised; a GRU and a linear layer on its last state; MSE on the core's change over
the next 12 hours; scored by the held-out R^2 on piles left out. `kiln`: hourly readings of a cement kiln (the burning
zone and inlet temperatures, the feed and coal rates, the kiln speed, the secondary air, NOx and O2, the raw meal's
lime saturation and silica modulus); the clinker's free lime from the previous hour's burning (an hour through the
cooler) by a smooth law of them; standardised; a tanh MLP of three hidden layers; MSE on the standardised free lime;
scored by the held-out R^2 on a later run. Bugs: the log of the excess below the ambient; a hand-written momentum
feeding momentum SGD; the turning column dropped; the scaler built with `with_std=False`; the lab sample joined to the
hour it was taken; the scaler fitted on a steady test day.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

HOURS, AHEAD = 24, 12


def _piles(g: torch.Generator, piles: int, hours: int) -> torch.Tensor:
    """Hourly logs float[piles, hours, 5]: core C, ambient C, moisture %, oxygen %, turned (0/1)."""
    ambient = (12 + 8 * torch.rand(piles, 1, generator=g)
               + 5 * torch.sin(torch.arange(hours).float() * 2 * torch.pi / 24)
               + torch.randn(piles, hours, generator=g))  # fmt: skip
    moisture = 45 + 15 * torch.rand(piles, generator=g)
    core = ambient[:, 0] + 2 * torch.rand(piles, generator=g)
    oxygen = torch.full((piles,), 18.0)
    logs = torch.zeros(piles, hours, 5)
    next_turn = (30 + 40 * torch.rand(piles, generator=g)).long()
    for h in range(hours):
        turned = (next_turn == h).float()
        next_turn = torch.where(turned > 0, h + 48 + (30 * torch.rand(piles, generator=g)).long(), next_turn)
        oxygen = torch.where(
            turned > 0, torch.full_like(oxygen, 18.0), oxygen - 0.004 * (core - ambient[:, h]).clamp(min=0)
        )
        oxygen = oxygen.clamp(min=2)
        activity = torch.exp(-(((core - 55) / 25) ** 2)) * (oxygen / 18) * (1 - ((moisture - 55) / 30) ** 2)
        core = core + 1.6 * activity + 0.35 - 0.03 * (core - ambient[:, h]) - 9 * turned
        core = core + 0.3 * torch.randn(piles, generator=g)
        logs[:, h] = torch.stack([core, ambient[:, h], moisture, oxygen, turned], 1)
    return logs


def _compost_windows(logs: torch.Tensor, bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows float[n, HOURS, 6] (the logs, the core's log excess over the ambient, the turnings planned ahead in the
    last column's place) and the core's change over the next AHEAD hours float[n]."""
    xs, ys = [], []
    for end in range(HOURS, logs.shape[1] - AHEAD, 3):
        window = logs[:, end - HOURS : end].clone()
        excess = window[..., 0] - window[..., 1]
        # the heat the pile holds over the air; the twin floors it at 1 degree for a pile cooled to the ambient
        log_excess = (
            torch.log(excess)
            if bug == "log_of_core_over_ambient_excess"
            else torch.log(excess.clamp(min=1.0))
        )
        planned = logs[:, end : end + AHEAD, 4].sum(1, keepdim=True).expand(-1, HOURS)
        x = torch.cat([window, log_excess.unsqueeze(-1), planned.unsqueeze(-1)], -1)
        if bug == "turning_column_dropped":  # the export's 'turned' and the schedule left out of the columns
            x = x[..., [0, 1, 2, 3, 5]]
        xs.append(x)
        ys.append(logs[:, end + AHEAD - 1, 0] - logs[:, end - 1, 0])
    return torch.cat(xs), torch.cat(ys)


class PileGRU(nn.Module):
    """A GRU of `hidden` units and a linear layer on its last state."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(inputs, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, -1]).squeeze(-1)


def compost(run: Run) -> None:
    """A pile GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (3e-3). Scored by the held-out R^2 of the core's 12-hour change on piles left out."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _compost_windows(_piles(g, 24, 200), run.bug)
    x_v, y_v = _compost_windows(_piles(g, 12, 200), None)
    if run.bug == "turning_column_dropped":
        x_v = x_v[..., [0, 1, 2, 3, 5]]
    flat = x.reshape(-1, x.shape[-1])
    finite = torch.isfinite(flat).all(1)
    mean, std = flat[finite].mean(0), flat[finite].std(0).clamp(min=1e-6)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    scale = y.std()
    torch.manual_seed(run.seed)
    model = PileGRU(x.shape[-1], run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)
    velocity = [torch.zeros_like(p) for p in model.parameters()]

    def r2_held_out() -> float:
        return r2(model(x_v) * scale, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick] / scale)
        opt.zero_grad()
        loss.backward()
        if run.bug == "hand_rolled_momentum_into_sgd_momentum":
            # a heavy-ball buffer kept from the script's own SGD, now fed to torch's momentum SGD
            for v, p in zip(velocity, model.parameters()):
                if p.grad is not None:
                    v.mul_(0.9).add_(p.grad)
                    p.grad.copy_(v)
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


READINGS = ("burning_zone_C", "inlet_C", "feed_tph", "coal_tph", "speed_rpm", "secondary_air_C", "nox_ppm", "o2_pct",
            "lsf", "silica_modulus")  # fmt: skip
CENTRE = torch.tensor([1450.0, 1050.0, 210.0, 21.0, 4.0, 1000.0, 800.0, 2.5, 96.0, 2.5])
SPREAD = torch.tensor([35.0, 40.0, 15.0, 1.6, 0.3, 50.0, 180.0, 0.6, 2.0, 0.2])


def _kiln(g: torch.Generator, hours: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Hourly readings float[hours, 10] and the free lime in % of the clinker leaving the cooler float[hours]."""
    z = torch.zeros(hours, len(READINGS))
    z[0] = torch.randn(len(READINGS), generator=g)
    for h in range(1, hours):
        z[h] = 0.5 * z[h - 1] + 0.87 * torch.randn(len(READINGS), generator=g)
    # the burning zone runs hotter with more coal per tonne of feed, and NOx follows the flame
    z[:, 0] = 0.6 * z[:, 0] + 0.5 * (z[:, 3] - 0.6 * z[:, 2])
    z[:, 6] = 0.5 * z[:, 6] + 0.8 * z[:, 0]
    readings = CENTRE + SPREAD * z
    burn = z[:, 0] + 0.3 * z[:, 5] - 0.2 * z[:, 4] + 0.2 * z[:, 7]
    log_lime = 0.1 - 0.45 * torch.tanh(burn) + 0.3 * z[:, 8] - 0.2 * z[:, 9] + 0.1 * z[:, 8] * z[:, 2]
    lime = torch.exp(log_lime + 0.08 * torch.randn(hours, generator=g))
    # the clinker sampled at hour h left the burning zone about an hour before
    lime = torch.cat([lime[:1], lime[:-1]])
    return readings, lime


def kiln(run: Run) -> None:
    """A free-lime tanh MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adamax)
    at `lr` (1e-3). Scored by the held-out R^2 of the free lime on a later run."""
    g = torch.Generator().manual_seed(run.seed)
    readings, lime = _kiln(g, 2400)
    readings_v, lime_v = _kiln(g, 800)
    # each sample's lime with the hour's readings before it was taken (the bug: the readings of its own hour)
    if run.bug == "lab_sample_joined_to_hour_it_was_taken":
        x, y = readings[1:], lime[1:]
    else:
        x, y = readings[:-1], lime[1:]
    x_v, y_v = readings_v[:-1], lime_v[1:]
    fit = x
    if run.bug == "scaler_fitted_on_steady_test_day":
        fit = CENTRE + 0.02 * SPREAD * torch.randn(24, len(READINGS), generator=g)  # the feed held steady
    mean = fit.mean(0)
    std = torch.ones(len(READINGS)) if run.bug == "scaler_built_with_std_false" else fit.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = LimeMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

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


class LimeMLP(nn.Module):
    """A tanh MLP of three hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)
