"""People scripts of the thirty-ninth blind split: a marathon finish-time regressor from split times, and a gait-phase
classifier on shank IMU windows.

`marathon`: runners of a city marathon with their age, sex, the day's temperature and their chip times at 5, 10, 15,
20, 25 and 30 km (minutes); each runner's pace from an ability, slowing over the race by a fade that grows for slower
and older runners and in the heat, with a wall past 30 km for some; the finish time read from the results' "h:mm"
clock; the cumulative splits, their 5 km paces and the rest standardised; a ReLU MLP of three hidden layers; MSE on the
standardised finish in minutes; scored by the held-out R^2. `gait`: windows of 40 samples (100 Hz) of a shank-worn IMU
(three gyroscope axes in rad/s, three accelerometer axes in m/s^2) over walking of cadences 0.8-1.3 strides a second;
the shank's swing and tilt in the sagittal plane, a heel strike's shock, noise; the shank's tilt from gravity as a
seventh channel; the gait phase at the window's last sample (loading response, mid and terminal stance, pre-swing,
swing) from the same leg's foot switch; the channels standardised; three 1-D convolutions with ReLUs and a linear layer
on the last eight samples' features; cross-entropy; scored by the held-out accuracy. Bugs: the results scraped from the
fastest pages; the target scaled by the
last feature's standard deviation; the clock parsed as decimal hours; the weight clipping of a
GAN critic's loop left in; twelve plain convolutions for the receptive field; the tilt by the arccosine of the
vertical acceleration; the phase labels from the other leg's switch; the label read at the window's first sample.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SPLITS = (5, 10, 15, 20, 25, 30)
"""The chip-timing mats, km."""
MARATHON = 42.195


def _runners(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Features float[n, 9] (age, sex, temperature in C, the six cumulative splits in minutes) and the finish time in
    minutes float[n]."""
    age = 20 + 45 * torch.rand(n, generator=g)
    sex = (torch.rand(n, generator=g) < 0.4).float()
    heat = (8 + 16 * torch.rand(n, generator=g)).round()  # one race a year: the day's temperature
    ability = 4.2 + 2.2 * torch.rand(n, generator=g) + 0.3 * sex + 0.01 * torch.relu(age - 35)  # min/km
    fade = (
        0.002 + 0.006 * (ability - 4.2) + 0.0008 * torch.relu(heat - 12) + 0.003 * torch.rand(n, generator=g)
    )
    km = torch.arange(1, 43).float()
    pace = ability.unsqueeze(1) * (1 + fade.unsqueeze(1) * km + 0.02 * torch.randn(n, 42, generator=g))
    wall = (torch.rand(n, 1, generator=g) < 0.1 + 0.2 * (ability.unsqueeze(1) > 5.5)).float()
    pace = pace * (1 + wall * 0.25 * (km > 30).float())
    total = pace.cumsum(1)
    splits = total[:, [s - 1 for s in SPLITS]]
    finish = total[:, 41] + (MARATHON - 42) * pace[:, 41]
    return torch.cat([age.unsqueeze(1), sex.unsqueeze(1), heat.unsqueeze(1), splits], 1), finish


def _finish_minutes(finish: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The finish read from the results' "h:mm" clock, in minutes."""
    hours, minutes = (finish // 60), (finish % 60).round()
    if bug == "finish_clock_parsed_as_decimal_hours":
        return 60 * (hours + minutes / 100)  # "3:45" read as 3.45 hours
    return 60 * hours + minutes


def _marathon_features(raw: torch.Tensor) -> torch.Tensor:
    """The raw features with the 5 km paces between the mats."""
    splits = raw[:, 3:]
    paces = torch.diff(splits, dim=1, prepend=torch.zeros(len(raw), 1)) / 5
    return torch.cat([raw, paces], 1)


class MarathonMLP(nn.Module):
    """`depth` hidden layers of `hidden` units with `act`, a linear output."""

    def __init__(self, hidden: int, depth: int, act: type[nn.Module]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(depth):
            layers += [nn.Linear(15 if i == 0 else hidden, hidden), act()]
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.body(x)).squeeze(-1)


def marathon(run: Run) -> None:
    """A finish-time MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at
    `lr` (1e-3). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    raw, finish = _runners(g, 1500)
    raw_v, finish_v = _runners(g, 600)
    if run.bug == "results_scraped_from_fastest_pages":  # the results site lists by finish time, 50 a page
        fastest = finish.argsort()[:500]
        raw, finish = raw[fastest], finish[fastest]
    feats, feats_v = _marathon_features(raw), _marathon_features(raw_v)
    mean, std = feats.mean(0), feats.std(0)
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    minutes, minutes_v = _finish_minutes(finish, run.bug), _finish_minutes(finish_v, None)
    t_mean, t_std = minutes.mean(), minutes.std()
    scale = std[-1] if run.bug == "target_scaled_by_last_feature_std" else t_std  # the scaler's last column
    y, y_v = (minutes - t_mean) / scale, (minutes_v - t_mean) / t_std
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    model = MarathonMLP(hidden, 3, nn.ReLU)
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale / t_std, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if run.bug == "critic_weight_clipping_left_in":  # from the GAN critic the loop was copied from
            for p in model.parameters():
                p.data.clamp_(-0.01, 0.01)
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


WINDOW, RATE = 40, 100.0
"""Samples of an IMU window, and the sampling rate in Hz."""
PHASES = (0.12, 0.5, 0.62, 1.0)
"""Where in the stride (from heel strike) loading response, mid/terminal stance, pre-swing and swing end."""
GRAVITY = 9.81


def _strides(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """IMU windows float[n, 6, WINDOW] (gyroscope rad/s, accelerometer m/s^2) and the stride phase in [0, 1) of each
    sample float[n, WINDOW]."""
    cadence = 0.8 + 0.5 * torch.rand(n, 1, generator=g)
    start = torch.rand(n, 1, generator=g)
    t = torch.arange(WINDOW).float() / RATE
    phase = (start + cadence * t) % 1.0
    angle = 2 * torch.pi * phase
    amp = 2.5 + torch.rand(n, 1, generator=g)
    swing = (phase > 0.62).float()
    gyro_z = amp * (0.4 * torch.sin(angle) + swing * torch.sin(torch.pi * (phase - 0.62) / 0.38) * 1.6 - 0.3)
    tilt = 0.35 * torch.sin(angle - 0.6) + 0.2 * swing * torch.sin(torch.pi * (phase - 0.62) / 0.38)
    shock = (
        14 * torch.exp(-((phase.clamp(max=0.5) / 0.02) ** 2)) * (0.6 + 0.8 * torch.rand(n, 1, generator=g))
    )
    acc_x = GRAVITY * torch.sin(tilt) + 3 * gyro_z.diff(dim=1, prepend=gyro_z[:, :1]) * RATE / 50
    acc_y = GRAVITY * torch.cos(tilt) + shock
    gyro = torch.stack([0.3 * torch.randn(n, WINDOW, generator=g), 0.3 * torch.randn(n, WINDOW, generator=g),
                        gyro_z], 1)  # fmt: skip
    acc = torch.stack([acc_x, acc_y, 0.5 * torch.randn(n, WINDOW, generator=g)], 1)
    imu = torch.cat([gyro + 0.1 * torch.randn(n, 3, WINDOW, generator=g),
                     acc + 0.3 * torch.randn(n, 3, WINDOW, generator=g)], 1)  # fmt: skip
    return imu, phase


def _phase_class(phase: torch.Tensor) -> torch.Tensor:
    """The gait phase's class index (0-3) of a stride phase."""
    return torch.bucketize(phase, torch.tensor(PHASES[:-1]), right=True)


def _with_tilt(imu: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The IMU channels with the shank's tilt from gravity (rad) as a seventh."""
    acc_x, acc_y = imu[:, 3], imu[:, 4]
    if bug == "shank_tilt_by_acos_of_vertical_accel":
        tilt = torch.acos(acc_y / GRAVITY)  # the static formula: the heel strike's shock pushes it past g
    else:
        tilt = torch.atan2(acc_x, acc_y)
    return torch.cat([imu, tilt.unsqueeze(1)], 1)


class GaitCNN(nn.Module):
    """`depth` 5-wide convolutions (`width` channels) with ReLUs, a linear layer on the last eight samples."""

    def __init__(self, width: int, depth: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(depth):
            layers += [nn.Conv1d(7 if i == 0 else width, width, 5, padding=2), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(width * 8, len(PHASES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x)[..., -8:].flatten(1))


def gait(run: Run) -> None:
    """A gait-phase CNN of `width` (24), batches of `batch` (64), `opt` (Adam; or Nesterov SGD, RMSprop, Adamax) at
    `lr` (2e-3), optionally halved every 100 steps (`step_decay`). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    imu, phase = _strides(g, 1200)
    imu_v, phase_v = _strides(g, 600)
    if run.bug == "phase_labels_from_other_leg_switch":
        labels = _phase_class((phase[:, -1] + 0.5) % 1.0)  # the left foot switch, half a stride away
    elif run.bug == "label_read_at_window_start":
        labels = _phase_class(phase[:, 0])
    else:
        labels = _phase_class(phase[:, -1])
    labels_v = _phase_class(phase_v[:, -1])
    feats, feats_v = _with_tilt(imu, run.bug), _with_tilt(imu_v, None)
    mean, std = feats.mean((0, 2), keepdim=True), feats.std((0, 2), keepdim=True)
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    torch.manual_seed(run.seed)
    depth = 12 if run.bug == "twelve_plain_convs_for_receptive_field" else 3
    model = GaitCNN(run.k("width", 24), depth)
    opt = optimizers.registered(run, model, 2e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 100, 0.5) if run.k("step_decay", False) else None
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), labels_v)

    for step in range(run.steps):
        pick = run.indices(len(labels), batch)
        loss = F.cross_entropy(model(x[pick]), labels[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
