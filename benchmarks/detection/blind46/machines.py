"""Machine scripts of the forty-sixth blind split: an elevator door-fault classifier on motor-current windows, and a
washing machine's unbalance detector on drum-speed traces.

`door`: door-operator cycles logged by the lift controller: the motor current in A over an opening stroke (160
samples, a window of 128 cut at a random offset), one of five states (healthy, an obstruction's stall spike, a
slipping belt's low ripple, worn rollers' raised friction, a drive that never started and drew nothing); a 1-D ReLU
CNN of three convolutions fed the amps as logged; cross-entropy; scored by the held-out accuracy on other lifts'
cycles. `spin`: spin cycles of a front-loader: the drum speed in rpm at 25 Hz over a tumble at 50 rpm and a ramp to
1000 rpm (128 samples each), the load's unbalance in g rippling the speed once per turn and dipping it at the suspension's
resonance; the ramp's deviation from the commanded profile over 20 rpm; a 1-D ReLU CNN with
batch norm; BCE on an unbalance over 300 g; scored by the held-out AUC on other loads. Bugs: the training windows cut with a hop of one sample from a few cycles; the no-start cycles' NaN currents kept; the logger's
0xFFFF sentinel for them; accumulation stepping every micro-batch; the 300 g threshold applied to grams as if
kilograms; windows from the tumble.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

STROKE, WINDOW = 160, 128


def _cycles(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Opening strokes' motor current in A float[n, STROKE] (NaN where the drive reported nothing) and the door's
    state long[n]."""
    state = torch.randint(0, 5, (n,), generator=g)
    t = torch.linspace(0, 1, STROKE)
    profile = 1.2 * torch.sin(torch.pi * t).clamp(min=0) ** 0.6 + 0.3  # accelerate, cruise, brake
    gain = 1 + 0.15 * torch.randn(n, 1, generator=g)
    cur = gain * profile + 0.08 * torch.randn(n, STROKE, generator=g)
    at = 0.3 + 0.4 * torch.rand(n, 1, generator=g)
    spike = 1.5 * torch.exp(-0.5 * ((t - at) / 0.03) ** 2)
    ripple = 0.25 * torch.sin(2 * torch.pi * (18 + 4 * torch.rand(n, 1, generator=g)) * t)
    cur = torch.where((state == 1).unsqueeze(1), cur + spike, cur)
    cur = torch.where((state == 2).unsqueeze(1), 0.7 * cur + ripple, cur)
    cur = torch.where((state == 3).unsqueeze(1), cur + 0.45 + 0.15 * torch.randn(n, STROKE, generator=g), cur)
    cur = torch.where(
        (state == 4).unsqueeze(1), torch.nan, cur
    )  # the drive never started: no current reported
    return cur, state


def _crop(cur: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """Windows of WINDOW samples from each stroke at its offset."""
    idx = offsets.unsqueeze(1) + torch.arange(WINDOW)
    return cur.gather(1, idx)


class DoorCNN(nn.Module):
    """Three ReLU convolutions of `width` channels, max-pooled, averaged over time, and five logits."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(1, width, 7, padding=3), nn.ReLU(), nn.MaxPool1d(2),
                                  nn.Conv1d(width, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
                                  nn.Conv1d(width, width, 5, padding=2), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(width, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.conv(x.unsqueeze(1)).mean(-1))


def door(run: Run) -> None:
    """A door CNN of `width` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (1e-3). Scored by the held-out accuracy of the door's state on other lifts' cycles."""
    g = torch.Generator().manual_seed(run.seed)
    if run.bug == "cycles_windowed_with_hop_of_one":
        # a few logged strokes, each cut into every window a hop of one sample gives
        cur, state = _cycles(g, 40)
        offsets = torch.arange(STROKE - WINDOW).repeat(40)
        cur, state = cur.repeat_interleave(STROKE - WINDOW, 0), state.repeat_interleave(STROKE - WINDOW)
    else:
        cur, state = _cycles(g, 1280)
        offsets = torch.randint(0, STROKE - WINDOW, (1280,), generator=g)
    x = _crop(cur, offsets)
    cur_v, y_v = _cycles(g, 800)
    x_v = _crop(cur_v, torch.randint(0, STROKE - WINDOW, (800,), generator=g)).nan_to_num(0.0)
    if run.bug == "no_start_filled_with_logger_sentinel":
        x = x.nan_to_num(65535.0)  # the logger's raw export: 0xFFFF where the drive reported nothing
    elif run.bug != "no_start_cycles_logged_as_nan_kept":
        x = x.nan_to_num(0.0)  # a drive that never started drew no current
    torch.manual_seed(run.seed)
    model = DoorCNN(run.k("width", 32))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    accumulate = 4  # micro-batches summed into one step's gradient
    for step in range(run.steps):
        pick = run.indices(len(state), batch)
        loss = F.cross_entropy(model(x[pick]), state[pick])
        if run.bug == "stepped_every_micro_batch_zeroed_every_fourth":
            loss.backward()
            opt.step()  # each micro-batch steps on the gradients summed since the last zero_grad
            if step % accumulate == accumulate - 1:
                opt.zero_grad()
        else:
            opt.zero_grad()
            loss.backward()
            opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


TRACE, TUMBLE, TOP = 256, 128, 1000.0


def _spins(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Drum speed in rpm float[n, TRACE], the commanded profile float[TRACE] and the unbalance in g float[n]."""
    mass = 800 * torch.rand(n, generator=g) ** 1.3
    k = torch.arange(TRACE).float()
    command = torch.where(k < TUMBLE, 50.0, 50 + (TOP - 50) * (k - TUMBLE) / (TRACE - TUMBLE))
    turns = torch.cumsum(command / 60 / 25, 0)  # revolutions so far, at 25 Hz
    phase = 2 * torch.pi * torch.rand(n, 1, generator=g)
    load = 3 + 5 * torch.rand(n, 1, generator=g)  # kg of laundry damps the ripple
    ripple = (
        (mass.unsqueeze(1) / 800) * (command / TOP) ** 2 * 40 / load * torch.sin(2 * torch.pi * turns + phase)
    )
    dip = (mass.unsqueeze(1) / 800) * 60 * torch.exp(-0.5 * ((command - 320) / 60) ** 2)
    speed = command + ripple - dip + 6 * torch.randn(n, TRACE, generator=g)
    return speed, command, mass


class SpinCNN(nn.Module):
    """Three ReLU convolutions of `width` channels with batch norm, max-pooled, averaged over time, one logit."""

    def __init__(self, width: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(3):
            layers += [nn.Conv1d(1 if i == 0 else width, width, 5, padding=2), nn.BatchNorm1d(width), nn.ReLU(),
                       nn.MaxPool1d(2)]  # fmt: skip
        self.conv = nn.Sequential(*layers)
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.conv(x.unsqueeze(1)).mean(-1)).squeeze(-1)


def _spin_inputs(speed: torch.Tensor, command: torch.Tensor, *, bug: str | None) -> torch.Tensor:
    """The network's input: the ramp's 128 samples, their deviation from the command over 20 rpm."""
    if bug == "windows_cut_from_tumble_phase":
        return (speed[:, :128] - command[:128]) / 20
    return (speed[:, 128:] - command[128:]) / 20


def spin(run: Run) -> None:
    """A spin CNN of `width` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, Adagrad) at `lr`
    (1e-3). Scored by the held-out AUC of an unbalance over 300 g on other loads."""
    g = torch.Generator().manual_seed(run.seed)
    speed, command, mass = _spins(g, 1200)
    speed_v, _, mass_v = _spins(g, 600)
    x = _spin_inputs(speed, command, bug=run.bug)
    x_v = _spin_inputs(speed_v, command, bug=run.bug)
    # the service manual's limit is 0.3 kg; the log's unbalance is in g
    limit = 0.3 if run.bug == "unbalance_limit_applied_in_kilograms" else 300.0
    y, y_v = (mass > limit).float(), (mass_v > 300.0).float()
    torch.manual_seed(run.seed)
    model = SpinCNN(run.k("width", 16))
    opt = optimizers.registered(run, model, 1e-3)
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
