"""Road scripts of the forty-eighth blind split: a motorway tunnel CO-level forecaster, and a cycling power-output
estimator from bike-computer streams.

`tunnel`: a bore's readings every two minutes (cars and HGVs per minute, their mean speed, the jet fans running, the
wind at the portals, the opacity meter's transmittance, the CO at mid-tunnel); the CO built up by the traffic,
congestion raising the emissions, cleared by the fans and the wind, the fan controller switching fans by the CO;
windows of 16 readings with the visibility's extinction coefficient; standardised; a GRU and a linear layer on its
last state; MSE on the CO ten minutes ahead; scored by the held-out R^2 on other bores. `cycling`: one-second
streams of rides (speed, cadence, road gradient, heart rate, headwind, the rider and bike's mass); the power by the
road-load equation (rolling resistance, drag on the air speed, climbing, accelerating) over the drivetrain's
efficiency, 0 when coasting; the last five seconds' readings; standardised; a ReLU MLP of three hidden layers; MSE on
the standardised power; scored by the held-out R^2 on other riders' rides. Bugs: the extinction of a dark opacity
meter; the fans' log from after the window; the portal's CO as the target; the GRU's output read at the first step;
the window passed as the GRU's layer count; momentum typed as one; the weights left from an LR range test; the power
meter's torque in the training table; the power joined by elapsed time across auto-pauses.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

WINDOW, AHEAD, BORE_M = 16, 5, 3000.0


def _bores(g: torch.Generator, bores: int, readings: int) -> torch.Tensor:
    """Readings float[bores, readings, 8] every two minutes: cars/min, HGVs/min, speed km/h, fans running, wind m/s,
    transmittance (0 while the meter's lamp is cleaned), mid-tunnel CO ppm, portal CO ppm."""
    t = torch.arange(readings).float()
    rush = torch.exp(-((((t % 720) - 240) / 60) ** 2)) + 0.8 * torch.exp(-((((t % 720) - 520) / 70) ** 2))
    logs = torch.zeros(bores, readings, 8)
    co = torch.full((bores,), 8.0)
    fans = torch.zeros(bores)
    base = 20 + 10 * torch.rand(bores, generator=g)
    for i in range(readings):
        cars = (base * (0.4 + rush[i]) * (1 + 0.2 * torch.randn(bores, generator=g))).clamp(min=0)
        hgv = (0.12 * base * (0.6 + 0.5 * rush[i]) * (1 + 0.3 * torch.randn(bores, generator=g))).clamp(min=0)
        speed = (95 - 55 * ((cars + 3 * hgv) / 60).clamp(max=1) + 5 * torch.randn(bores, generator=g)).clamp(
            10, 110
        )
        wind = 1.5 * torch.randn(bores, generator=g)
        emission = (0.25 * cars + 1.2 * hgv) * (1 + 60 / speed) / 8
        co = (
            0.8 * co + emission - 0.5 * fans - 0.3 * wind.abs() + 0.6 * torch.randn(bores, generator=g)
        ).clamp(1)
        # the controller starts a pair of fans for every 3 ppm over 12, up to 8 fans
        fans = (2 * ((co - 12) / 3).ceil()).clamp(0, 8)
        transmittance = torch.exp(-BORE_M * (0.00004 * hgv + 0.00002 * cars) / 10) * (
            0.97 + 0.02 * torch.rand(bores, generator=g)
        )
        transmittance = torch.where(
            torch.rand(bores, generator=g) < 0.04, torch.zeros_like(transmittance), transmittance
        )
        portal = 0.3 * co + 2 + torch.randn(bores, generator=g)
        logs[:, i] = torch.stack([cars, hgv, speed, fans, wind, transmittance, co, portal], 1)
    return logs


def _tunnel_windows(logs: torch.Tensor, bug: str | None, held_out: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows float[n, WINDOW, 8] (the readings but the portal CO, the extinction coefficient per km in the
    transmittance's place, the fans last known) and the mid-tunnel CO AHEAD readings on float[n]."""
    xs, ys = [], []
    target = 7 if bug == "co_sensor_at_entry_portal_as_target" and not held_out else 6
    for end in range(WINDOW, logs.shape[1] - AHEAD, 2):
        window = logs[:, end - WINDOW : end, :7].clone()
        transmittance = window[..., 5]
        if bug != "extinction_of_dark_opacity_meter":
            transmittance = transmittance.clamp(
                min=0.01
            )  # the lamp's cleaning minutes held at the meter's floor
        window[..., 5] = -torch.log(transmittance) / (BORE_M / 1000)
        if bug == "fan_log_from_after_the_window" and not held_out:
            window[:, -1, 3] = logs[
                :, end + AHEAD - 1, 3
            ]  # the fans the controller ran at the forecast's time
        xs.append(window)
        ys.append(logs[:, end + AHEAD - 1, target])
    return torch.cat(xs), torch.cat(ys)


class CoGRU(nn.Module):
    """A GRU of `hidden` units (`layers` of them) and a linear layer on one of its outputs."""

    def __init__(self, inputs: int, hidden: int, layers: int = 1, read_first: bool = False) -> None:
        super().__init__()
        self.gru = nn.GRU(inputs, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, 1)
        self.read = 0 if read_first else -1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, self.read]).squeeze(-1)


def tunnel(run: Run) -> None:
    """A CO GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (3e-3). Scored by the held-out R^2 of the CO ten minutes ahead on other bores."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _tunnel_windows(_bores(g, 6, 400), run.bug, held_out=False)
    x_v, y_v = _tunnel_windows(_bores(g, 3, 400), None, held_out=True)
    flat = x.reshape(-1, x.shape[-1])
    finite = torch.isfinite(flat).all(1)
    mean, std = flat[finite].mean(0), flat[finite].std(0).clamp(min=1e-6)  # the fans may never start
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    # the bug: the window's length passed where nn.GRU takes its number of layers
    layers = WINDOW if run.bug == "window_passed_as_gru_layers" else 1
    model = CoGRU(
        x.shape[-1], run.k("hidden", 32), layers, read_first=run.bug == "gru_output_read_at_first_step"
    )
    if run.bug == "sgd_momentum_typed_as_one":
        opt: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=run.k("lr", 3e-3), momentum=1.0)
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = optimizers.registered(run, model, 3e-3)
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


LAGS = 5


def _ride(g: torch.Generator, seconds: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One ride's streams float[seconds, 7] (speed m/s, cadence rpm, gradient %, heart rate bpm, acceleration m/s^2,
    headwind m/s, mass kg), its power in watts float[seconds] and whether the rider was stopped bool[seconds]."""
    mass = 70 + 25 * torch.rand(1, generator=g)
    fitness = 0.8 + 0.4 * torch.rand(1, generator=g)
    grade = torch.cumsum(0.15 * torch.randn(seconds, generator=g), 0).clamp(-8, 10)
    wind = 3 * torch.randn(1, generator=g) + 0.3 * torch.randn(seconds, generator=g)
    effort = (180 + 60 * torch.sin(torch.arange(seconds) / 90.0 + 6 * torch.rand(1, generator=g))) * fitness
    stopped = (torch.arange(seconds) % 300 > 270) & (torch.rand(1, generator=g) < 0.8)
    v = torch.zeros(seconds)
    speed = 8.0
    for s in range(seconds):
        resist = mass * 9.81 * (0.004 + grade[s] / 100) + 0.5 * 1.2 * 0.35 * (speed + wind[s]) * abs(
            speed + wind[s]
        )
        push = (effort[s] / max(speed, 1.0) - resist.item()) / mass.item()
        speed = 0.0 if stopped[s] else min(15.0, max(1.0, speed + max(-1.0, min(1.0, push))))
        v[s] = speed
    accel = torch.cat([torch.zeros(1), v[1:] - v[:-1]])
    coasting = (grade < -4) | stopped
    drag = 0.5 * 1.2 * 0.35 * (v + wind) * (v + wind).abs()
    power = ((mass * 9.81 * (0.004 + grade / 100) + drag + mass * accel) * v / 0.976).clamp(min=0)
    power = torch.where(coasting, torch.zeros_like(power), power) + 5 * torch.randn(seconds, generator=g)
    power = power.clamp(min=0)
    cadence = torch.where(coasting, torch.zeros_like(v), 75 + 3 * v + 5 * torch.randn(seconds, generator=g))
    heart = 100 + 0.25 * power.cumsum(0) / (torch.arange(seconds) + 1) + 0.1 * power
    streams = torch.stack([v, cadence, grade, heart, accel, wind, mass.expand(seconds)], 1)
    return streams, power, stopped


def _rides(
    g: torch.Generator, rides: int, seconds: int, bug: str | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows float[n, 7 * LAGS + 1] (the last LAGS seconds' streams and the power meter's torque in N m) and the power
    in watts float[n]."""
    xs, ys = [], []
    for _ in range(rides):
        streams, power, stopped = _ride(g, seconds)
        if bug == "power_joined_by_elapsed_time_across_pauses":
            # the power file skips the auto-paused seconds and is joined to the GPS stream second by second
            moving = power[~stopped]
            power = torch.cat([moving, moving[-1:].expand(int(stopped.sum()))])
        torque = (
            power / (streams[:, 1].clamp(min=1) * 2 * torch.pi / 60)
            if bug == "torque_column_from_power_meter"
            else torch.zeros(seconds)
        )
        for s in range(LAGS, seconds):
            xs.append(torch.cat([streams[s - LAGS + 1 : s + 1].flatten(), torque[s : s + 1]]))
            ys.append(power[s])
    return torch.stack(xs), torch.stack(ys)


class PowerMLP(nn.Module):
    """A ReLU MLP of three hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def cycling(run: Run) -> None:
    """A power MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at `lr`
    (1e-3). Scored by the held-out R^2 of the power on other riders' rides."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _rides(g, 10, 300, run.bug)
    x_v, y_v = _rides(g, 4, 300, None)  # the riders to score ride without a power meter: no torque
    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = PowerMLP(x.shape[1], run.k("hidden", 64))
    if run.bug == "weights_kept_from_lr_range_test":
        # an LR range test (SGD, the rate rising from 1e-4 to 10, stopped once the loss passes four times its best)
        # run on the model itself, its weights not restored
        finder, best = torch.optim.SGD(model.parameters(), lr=1e-4), float("inf")
        for i in range(60):
            for group in finder.param_groups:
                group["lr"] = 1e-4 * (1e5 ** (i / 59))
            pick = run.indices(len(y), 64)
            finder.zero_grad()
            probe = F.mse_loss(model(x[pick]), (y[pick] - centre) / scale)
            probe.backward()
            finder.step()
            best = min(best, probe.item())
            if probe.item() > 4 * best:
                break
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
