"""Trace scripts of the fifty-second blind split: a ferry-engine fuel-injector fault classifier on rail-pressure
traces, and a vaccine-fridge temperature-excursion predictor from hourly logger readings.

`injector`: 96 samples (one every crank degree) of the common rail's pressure in bar about an injection, the drop and
its recovery shaped by the injector's state (healthy, clogged, leaking, sticking), each trace centred and scaled by
its own spread; a ReLU 1-D CNN of three convolutions, averaged, cross-entropy; scored by the held-out accuracy on
other engines. `fridge`: 48 hours of a fridge's cabinet and ambient temperature (C), door openings and compressor
duty; whether the cabinet leaves 2-8 C in the next 12 hours; an LSTM, a linear head on its last state, BCE with
logits; scored by the held-out AUC on other fridges. Bugs: a stuck sensor's flat trace divided by its zero spread;
the batch-norm recipe's rate on a CNN without batch norm; the workshop's repair code kept as a column; the window cut
by cylinder number rather than firing order; the excursion threshold given in Fahrenheit; the older loggers' readings
in Fahrenheit.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES, CYLINDERS = 96, 6


def _pulse(g: torch.Generator, fault: torch.Tensor) -> torch.Tensor:
    """Rail pressure float[n, SAMPLES] in bar about one injection by injectors in state `fault` (0 healthy, 1
    clogged, 2 leaking, 3 sticking)."""
    n = len(fault)
    t = torch.arange(SAMPLES).float().unsqueeze(0)
    rail = 1400 + 200 * torch.rand(n, 1, generator=g)
    start = 30 + 4 * torch.randn(n, 1, generator=g)
    depth = 40 + 8 * torch.randn(n, 1, generator=g)
    width = 12 + 2 * torch.randn(n, 1, generator=g)
    f = fault.unsqueeze(1)
    depth = torch.where(f == 1, depth * 0.55, depth)
    width = torch.where(f == 3, width * 1.7, width)
    start = torch.where(f == 3, start + 6, start)
    inside = ((t - start) / width).clamp(0, 1)
    drop = depth * torch.sin(3.1416 * inside) * ((t >= start) & (t <= start + width)).float()
    leak = torch.where(f == 2, 0.25 * (t - start).clamp(min=0), torch.zeros(n, SAMPLES))
    ripple = 3 * torch.sin(
        t * (0.3 + 0.1 * torch.rand(n, 1, generator=g)) + 6.28 * torch.rand(n, 1, generator=g)
    )
    return rail - drop - leak + ripple + 1.5 * torch.randn(n, SAMPLES, generator=g)


def _engines(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Traces float[n, SAMPLES] of the injector under test, the fault long[n], the trace of the cylinder fired
    before it float[n, SAMPLES] (its injector healthy or not at random) and the workshop's repair code float[n]
    (the fault found on strip-down, 0 where nothing was done)."""
    fault = torch.randint(0, 4, (n,), generator=g)
    trace = _pulse(g, fault)
    other = _pulse(
        g, torch.where(torch.rand(n, generator=g) < 0.7, 0, torch.randint(1, 4, (n,), generator=g))
    )
    stuck = torch.rand(n, generator=g) < 0.03  # a stuck rail sensor logs one value for the whole window
    trace = torch.where(stuck.unsqueeze(1), trace[:, :1].round().expand(-1, SAMPLES), trace)
    return trace, fault, other, fault.float()


def _scaled(trace: torch.Tensor, bug: str | None) -> torch.Tensor:
    """Each trace about its own mean, over its own spread floored at 1 bar."""
    spread = trace.std(1, keepdim=True)
    if bug != "flat_trace_scaled_by_its_own_spread":
        spread = spread.clamp(min=1.0)
    # the bug above: no floor, so a stuck sensor's flat window is 0 / 0
    if bug == "trace_scaled_without_centring":
        # the bug: the trace divided by its spread with the centring line lost, the rail's 1,400-1,600 bar kept
        return (trace / spread).unsqueeze(1)
    return ((trace - trace.mean(1, keepdim=True)) / spread).unsqueeze(1)


class InjectorCNN(nn.Module):
    """Three 1-D convolutions of `width` channels with ReLU (no batch norm), averaged, a linear head (4 states)."""

    def __init__(self, width: int, extra: int = 0) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(1, width, 7, padding=3), nn.ReLU(),
            nn.Conv1d(width, width, 5, padding=2, stride=2), nn.ReLU(),
            nn.Conv1d(width, width, 5, padding=2, stride=2), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1), nn.Flatten(),
        )  # fmt: skip
        self.head = nn.Linear(width + extra, 4)

    def forward(self, x: torch.Tensor, extra: torch.Tensor | None = None) -> torch.Tensor:
        h = self.conv(x)
        return self.head(h if extra is None else torch.cat([h, extra], 1))


def injector(run: Run) -> None:
    """An injector CNN of `width` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at
    `lr` (2e-3). Scored by the held-out accuracy of the injector's state on other engines."""
    g = torch.Generator().manual_seed(run.seed)
    trace, y, other, repair = _engines(g, 1500)
    trace_v, y_v, _, _ = _engines(g, 600)
    if run.bug == "window_cut_by_cylinder_number":
        # the bug: the window cut at the cylinder's number times the crank spacing, not at its place in the firing
        # order (1-5-3-6-2-4), so five traces in six show the cylinder fired before it
        wrong = torch.rand(len(y), generator=g) < 5 / 6
        trace = torch.where(wrong.unsqueeze(1), other, trace)
    x, x_v = (
        _scaled(trace, run.bug),
        _scaled(trace_v, run.bug if run.bug == "trace_scaled_without_centring" else None),
    )
    extra = extra_v = None
    if run.bug == "repair_code_field_kept":
        # the bug: the workshop's repair code, written after strip-down, kept as an input; engines in service have
        # none yet, which the export writes as code 0, "no fault found"
        extra = F.one_hot(repair.long(), 4).float()
        extra_v = F.one_hot(torch.zeros(len(y_v), dtype=torch.long), 4).float()
    torch.manual_seed(run.seed)
    model = InjectorCNN(run.k("width", 16), extra=0 if extra is None else 4)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def acc_held_out() -> float:
        return accuracy(model(x_v, extra_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        logits = model(x[pick], None if extra is None else extra[pick])
        loss = F.cross_entropy(logits, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", acc_held_out):
            break


HOURS, AHEAD = 48, 12


def _fridges(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Hourly logs float[n, HOURS, 4] (cabinet C, ambient C, door openings, compressor duty 0-1), the cabinet's
    next AHEAD hours float[n, AHEAD] in C, and whether it leaves 2-8 C in them float[n]."""
    total = HOURS + AHEAD
    t = torch.arange(total).float().unsqueeze(0)
    ambient = 24 + 6 * torch.sin(6.2832 * t / 24 + 6.28 * torch.rand(n, 1, generator=g))
    ambient = ambient + 3 * torch.rand(n, 1, generator=g)
    busy = 0.3 + 2.5 * torch.rand(n, 1, generator=g)
    office = ((t % 24 > 8) & (t % 24 < 18)).float()
    doors = torch.poisson(busy * office * torch.ones(n, total), generator=g)
    health = 0.5 + 0.5 * torch.rand(n, 1, generator=g)  # the compressor's capacity
    cab = 5 + torch.randn(n, 1, generator=g)
    temps, duty = [], []
    for h in range(total):
        load = 0.04 * (ambient[:, h : h + 1] - cab) + 0.35 * doors[:, h : h + 1]
        want = ((cab - 4.5) * 0.8 + load).clamp(0, 1.5)
        run_frac = (want / (health * 1.5)).clamp(0, 1)
        cab = cab + load - health * 1.2 * run_frac + 0.15 * torch.randn(n, 1, generator=g)
        temps.append(cab)
        duty.append(run_frac)
    cabinet = torch.cat(temps, 1)
    duty_t = torch.cat(duty, 1)
    logs = torch.stack([cabinet[:, :HOURS], ambient[:, :HOURS], doors[:, :HOURS], duty_t[:, :HOURS]], -1)
    future = cabinet[:, HOURS:]
    out = ((future > 8) | (future < 2)).any(1).float()
    return logs, future, out


class FridgeLSTM(nn.Module):
    """An LSTM of `hidden` units over the hours and a linear head on its last state."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, (h, _) = self.lstm(x)
        return self.head(h[-1]).squeeze(-1)


def fridge(run: Run) -> None:
    """A fridge LSTM of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD clipped at norm 1,
    RMSprop, AdamW) at `lr` (3e-3). Scored by the held-out AUC of an excursion in the next 12 hours."""
    g = torch.Generator().manual_seed(run.seed)
    logs, future, y = _fridges(g, 1400)
    logs_v, _, y_v = _fridges(g, 600)
    if run.bug == "excursion_threshold_in_fahrenheit":
        # the bug: the upper limit written as 46.4, the 8 C of the Fahrenheit SOP, against readings in C
        y = ((future > 46.4) | (future < 2)).any(1).float()
    if run.bug == "older_loggers_read_in_fahrenheit":
        # the bug: a third of the fridges carry the older logger, whose export is in F, read as C
        old = torch.rand(len(logs), generator=g) < 1 / 3
        f = logs[..., :2] * 9 / 5 + 32
        logs = torch.cat([torch.where(old.view(-1, 1, 1), f, logs[..., :2]), logs[..., 2:]], -1)
    mean, std = logs.flatten(0, 1).mean(0), logs.flatten(0, 1).std(0)
    x, x_v = (logs - mean) / std, (logs_v - mean) / std
    torch.manual_seed(run.seed)
    model = FridgeLSTM(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    batch, clip = run.k("batch", 64), run.k("clip", 0.0)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
