"""Machinery scripts of the forty-ninth blind split: a harbour-crane spreader twist-lock fault classifier on hydraulic
traces, and a ski-binding release-force regressor from a test rig.

`crane`: windows of 64 samples at 50 Hz of a spreader's twist-lock cycle (the lock cylinder's pressure and return
pressure in bar, the lock's angle in degrees, the flow in l/min), locks that turn home, locks that stick against
a worn casting and cylinders with a leaking seal, each crane with its own relief setting; the channels over their
full scales; a 1-D CNN of three ReLU convolutions, averaged; cross-entropy; scored by the held-out accuracy on cranes
left out. `binding`: test-rig releases of bindings (the skier's weight, height, age and type, the boot sole length,
the DIN setting, the spring preload, the binding's age, the rig temperature, the days since lubrication); the
forward-lean release torque in Nm by a smooth law of them; standardised; a tanh MLP of three hidden layers; MSE on
the standardised torque plus a small penalty towards the DIN chart's torque; scored by the held-out R^2 on other
bindings. Bugs: the logger's overflow code left in the pressures; the PLC's fault register kept as a channel; the
new head's rate multiplier applied to every group; the chart penalty in newton-metres squared; the scaler fitted but
the training table left raw; the twist torque taken as the target.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES, FAULTS = 64, 3
FULL_SCALE = torch.tensor([250.0, 250.0, 90.0, 40.0]).view(1, 4, 1)
"""The logger's full scales: pressures in bar, the angle in degrees, the flow in l/min."""
OVERFLOW = 32767.0
"""What the logger writes for a pressure sample whose ADC overflowed."""
SENSOR_BAR = 100.0
"""The span of the training cranes' lock-pressure sensors."""


def _cycles(g: torch.Generator, cranes: int, per_crane: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Twist-lock traces float[n, 4, SAMPLES] (bar, bar, degrees, l/min) and the fault long[n] (0 home, 1 stuck
    lock, 2 leaking seal)."""
    n = cranes * per_crane
    crane = torch.arange(cranes).repeat_interleave(per_crane)
    relief = (170 + 40 * torch.rand(cranes, generator=g))[crane].unsqueeze(1)
    fault = torch.randint(0, FAULTS, (n,), generator=g)
    f = fault.unsqueeze(1)
    t = torch.arange(SAMPLES).float().unsqueeze(0)
    start = 4 + 8 * torch.rand(n, 1, generator=g)
    speed = (0.7 + 0.6 * torch.rand(n, 1, generator=g)) * torch.where(f == 2, 0.85, 1.0)
    travel = ((t - start).clamp(min=0) * 3.4 * speed).clamp(max=90)
    stall = 62 + 26 * torch.rand(n, 1, generator=g)
    angle = torch.where(f == 1, travel.clamp(max=stall), travel)
    moving = ((t > start) & (angle < torch.where(f == 1, stall - 0.5, torch.full_like(stall, 89.5)))).float()
    working = 60 + 20 * torch.rand(n, 1, generator=g)
    # a stuck lock drives the pressure up to the relief valve; a leaking seal never holds it
    held = torch.where(
        f == 1,
        relief - 60 + 40 * torch.rand(n, 1, generator=g),
        torch.where(f == 2, 0.85 * working, working + 25),
    )
    rise = 1 - torch.exp(-(t - start).clamp(min=0) / 3)
    decay = torch.where(f == 2, torch.exp(-(t - start).clamp(min=0) / 150), torch.ones_like(t))
    p_a = 8 + (held - 8) * rise * decay + torch.where(moving > 0, 0.0, 10.0) * rise
    p_b = 6 + 10 * moving + 2 * torch.rand(n, 1, generator=g)
    flow = 18 * speed * moving + torch.where(f == 2, 3.0, 0.0) * rise
    noise = lambda scale: scale * torch.randn(n, SAMPLES, generator=g)
    x = torch.stack([p_a + noise(15), p_b + noise(3), angle + noise(8), flow + noise(4)], 1)
    return x, fault


class LockCNN(nn.Module):
    """Three ReLU convolutions of `width` channels (a max pool after the second), averaged, and a linear head."""

    def __init__(self, channels: int, width: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(channels, width, 5, padding=2), nn.ReLU(),
                                  nn.Conv1d(width, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
                                  nn.Conv1d(width, width, 5, padding=2), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(width, FAULTS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x).mean(-1))


def crane(run: Run) -> None:
    """A lock CNN of `width` (24) channels, batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at
    `lr` (2e-3). Scored by the held-out accuracy of the fault on cranes left out."""
    g = torch.Generator().manual_seed(run.seed)
    x, fault = _cycles(g, 30, 40)
    x_v, fault_v = _cycles(g, 12, 40)
    if run.bug == "adc_overflow_code_left_in_traces":
        # the training cranes' lock sensors span 0-100 bar: a stuck lock driven to its relief pressure overflows
        # the ADC, and the logger's overflow code stays in the export, never filtered out
        x[:, 0] = torch.where(x[:, 0] > SENSOR_BAR, torch.full_like(x[:, 0], OVERFLOW), x[:, 0])
    x, x_v = x / FULL_SCALE, x_v / FULL_SCALE
    if run.bug == "plc_fault_register_as_channel":
        # the PLC's fault register exported with the traces: the maintainer sets it after the inspection, so the
        # training traces carry the verdict and the live ones read 0
        x = torch.cat([x, fault.float().view(-1, 1, 1).expand(-1, 1, SAMPLES)], 1)
        x_v = torch.cat([x_v, torch.zeros(x_v.shape[0], 1, SAMPLES)], 1)
    torch.manual_seed(run.seed)
    model = LockCNN(x.shape[1], run.k("width", 24))
    opt = optimizers.registered(run, model, 2e-3)
    if run.bug == "head_lr_multiplier_applied_to_all_groups":
        # the fine-tuning recipe's x10 rate for the freshly initialised head, applied by a loop over every group
        for group in opt.param_groups:
            group["lr"] *= 10
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), fault_v)

    for step in range(run.steps):
        pick = run.indices(len(fault), batch)
        loss = F.cross_entropy(model(x[pick]), fault[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", accuracy_held_out):
            break


RIG = ("weight_kg", "height_cm", "age", "skier_type", "sole_mm", "din", "preload_turns", "binding_years", "temp_C",
       "days_since_lube")  # fmt: skip


def _releases(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rig readings float[n, 10], the forward-lean release torque in Nm float[n] and the twist torque float[n]."""
    u = lambda lo, hi: lo + (hi - lo) * torch.rand(n, generator=g)
    weight, height, age = u(40, 110), u(150, 195), u(10, 70)
    kind = torch.randint(1, 4, (n,), generator=g).float()
    sole = u(255, 345)
    din = (weight / 12 + kind - 1 + 0.8 * torch.randn(n, generator=g)).clamp(2, 12)
    preload, years, temp, lube = u(-1, 1), u(0, 15), u(-20, 5), u(0, 200)
    x = torch.stack([weight, height, age, kind, sole, din, preload, years, temp, lube], 1)
    chart = din * sole / 1000 * 40
    stiff = 1 + 0.012 * (-temp) + 0.08 * torch.tanh(years / 6) + 0.0008 * lube * torch.sigmoid(-temp / 4)
    forward = chart * stiff * (1 + 0.06 * preload) + 3 * torch.randn(n, generator=g)
    twist = din * 10 * (1 + 0.003 * (-temp)) * (1 + 0.1 * preload) + 4 * torch.randn(n, generator=g)
    return x, forward, twist


class ReleaseMLP(nn.Module):
    """A tanh MLP of three hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def binding(run: Run) -> None:
    """A release MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at `lr`
    (1e-3). Scored by the held-out R^2 of the forward-lean release torque on other bindings."""
    g = torch.Generator().manual_seed(run.seed)
    x, forward, twist = _releases(g, 2000)
    x_v, y_v, _ = _releases(g, 800)
    # the rig reports both torques; the twist column is the lateral release, not the one this model is for
    y = twist if run.bug == "twist_torque_column_as_target" else forward
    chart = x[:, 5] * x[:, 4] / 1000 * 40
    mean, std = x.mean(0), x.std(0)
    x_v = (x_v - mean) / std
    if (
        run.bug != "scaler_fitted_train_left_raw"
    ):  # the bug: fitted, the validation set transformed, training not
        x = (x - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = ReleaseMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        pred = model(x[pick])
        loss = F.mse_loss(pred, (y[pick] - centre) / scale)
        # a small pull towards the DIN chart's torque, which the rig's releases scatter around
        if run.bug == "chart_penalty_in_newton_metres_squared":
            loss = loss + 0.1 * F.mse_loss(pred * scale + centre, chart[pick])
        else:
            loss = loss + 0.1 * F.mse_loss(pred, (chart[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
