"""Sensing scripts of the twenty-second blind split: an electronic-nose gas classifier on metal-oxide sensor arrays and
a seismic P-wave arrival picker.

`enose`: six gases at 10-500 ppm on 16 metal-oxide sensors, each sensor's resistance falling from its baseline R0 by a
gas- and sensor-specific power of the concentration; each sample has five baseline readings before the gas (a sensor
still heating reads 0 now and then) and a steady-state reading; sensor sensitivities drift from one recording session to
the next, and each sample carries its recording time in hours; 300 training samples recorded one gas cylinder a session,
held-out samples from any session; the feature of a sensor is log(R0 / R) with R0 the median baseline reading,
standardised; an MLP of two sigmoid layers; cross-entropy; scored by the held-out accuracy. `seismic`: single-component
traces of 256 samples of coloured noise at a random level, a P arrival between samples 48 and 200 (a growing then
decaying 6-sample wavelet) and a stronger S arrival 20-50 samples later, a third of the traces starting after a gap of
zeros; training crops of 192 samples containing the pick; two input channels, the trace over its peak and an STA/LTA
ratio (5 and 40 samples, the LTA floored); a dilated 1-D CNN gives a logit per sample, cross-entropy over the samples of
a crop against the pick; scored by the share of held-out picks within 4 samples. Bugs: R0 read from the first baseline
reading; the resistances fed in kilo-ohms; the recording time kept as a feature; the STA/LTA ratio over an unfloored
LTA; the division of a trace by its peak discarded; the pick not moved with the crop.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

GASES, SENSORS, SESSIONS = 6, 16, 6
"""Gases, sensors in the array and recording sessions."""


def _array(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The array's sensitivities float[GASES, SENSORS], exponents float[SENSORS] and per-session drift
    float[SESSIONS, SENSORS]."""
    sens = torch.exp(
        0.8 * torch.randn(1, SENSORS, generator=g) + 0.3 * torch.randn(GASES, SENSORS, generator=g)
    )
    power = 0.4 + 0.4 * torch.rand(SENSORS, generator=g)
    drift = 1 + 0.15 * torch.randn(SESSIONS, SENSORS, generator=g).cumsum(0)
    return sens, power, drift.clamp_min(0.3)


def _exposures(
    g: torch.Generator, n: int, array: tuple[torch.Tensor, torch.Tensor, torch.Tensor], confounded: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Baseline readings float[n, 5, SENSORS] and steady readings float[n, SENSORS] in kilo-ohms, recording hours
    float[n], gases long[n] (`confounded`: each gas recorded in its own session, as a lab tests one cylinder a day)."""
    sens, power, drift = array
    y = torch.randint(0, GASES, (n,), generator=g)
    session = torch.randint(0, SESSIONS, (n,), generator=g)
    if confounded:
        session = y % SESSIONS
    conc = torch.exp(torch.empty(n, 1).uniform_(2.3, 6.2, generator=g))
    response = (
        sens[y]
        * drift[session]
        * (conc / 100) ** power
        * torch.exp(0.35 * torch.randn(n, SENSORS, generator=g))
    )
    r0 = torch.exp(torch.empty(n, SENSORS).uniform_(3.0, 4.4, generator=g))
    baseline = r0.unsqueeze(1) * (1 + 0.02 * torch.randn(n, 5, SENSORS, generator=g))
    heating = torch.rand(n, 1, SENSORS, generator=g) < 0.03
    baseline[:, :1] = torch.where(heating, torch.zeros(1), baseline[:, :1])  # a sensor not yet at temperature
    steady = r0 / (1 + response)
    hours = session * 24.0 + 24 * torch.rand(n, generator=g)
    return baseline, steady, hours, y


def enose(run: Run) -> None:
    """A gas classifier (two sigmoid layers of `hidden` (64)), batches of `batch` (32), `opt` (Adam; or RMSprop, NAdam,
    momentum SGD) at `lr` (1e-2). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    array = _array(g)
    base, steady, hours, y = _exposures(g, 300, array, confounded=True)
    base_v, steady_v, hours_v, y_v = _exposures(g, 1000, array, confounded=False)

    def features(baseline: torch.Tensor, reading: torch.Tensor, when: torch.Tensor) -> torch.Tensor:
        if run.bug == "resistances_fed_in_kiloohms":
            cols = reading
        elif run.bug == "baseline_from_unheated_first_reading":
            cols = torch.log(baseline[:, 0] / reading)
        else:
            cols = torch.log(baseline.median(1).values / reading)
        if run.bug == "session_time_kept_as_feature":
            cols = torch.cat([cols, when.unsqueeze(1)], 1)
        return cols

    x, x_v = features(base, steady, hours), features(base_v, steady_v, hours_v)
    if run.bug != "resistances_fed_in_kiloohms":
        mean, std = x.mean(0), x.std(0)
        x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    model = nn.Sequential(nn.Linear(x.shape[1], hidden), nn.Sigmoid(), nn.Linear(hidden, hidden), nn.Sigmoid(),
                          nn.Linear(hidden, GASES))  # fmt: skip
    opt = optimizers.registered(run, model, 1e-2)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


TRACE, CROP = 256, 192
"""Samples per trace and per training crop."""


def _traces(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Traces float[n, TRACE] in counts and the P arrival's sample long[n]."""
    white = torch.randn(n, TRACE + 20, generator=g)
    noise = F.conv1d(white.unsqueeze(1), torch.full((1, 1, 4), 0.5)).squeeze(1)[:, :TRACE]
    level = torch.exp(torch.empty(n, 1).uniform_(4.0, 6.0, generator=g))
    p = torch.randint(48, 201, (n,), generator=g)
    s = p + torch.randint(20, 51, (n,), generator=g)
    t = torch.arange(TRACE).unsqueeze(0)
    snr = torch.empty(n, 1).uniform_(1.5, 6.0, generator=g)

    def arrival(at: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
        d = (t - at.unsqueeze(1)).float()
        env = torch.where(d >= 0, (d / 4).clamp(max=1) * torch.exp(-d.clamp_min(0) / 30), torch.zeros(1))
        return gain * env * torch.sin(2 * torch.pi * d / 6)

    x = level * (noise + arrival(p, snr) + arrival(s, 2 * snr))
    gap = torch.randint(1, 16, (n, 1), generator=g)
    gapped = torch.rand(n, 1, generator=g) < 1 / 3
    x = torch.where(gapped & (t < gap), torch.zeros(1), x)  # the digitiser's first samples lost
    return x, p


def _sta_lta(x: torch.Tensor, floor: bool) -> torch.Tensor:
    """The ratio of the trailing 5-sample to the trailing 40-sample mean energy of each trace (`floor`: the LTA kept
    above a thousandth of the trace's mean energy)."""
    e = (x**2).unsqueeze(1)
    sta = F.avg_pool1d(F.pad(e, (4, 0)), 5, 1).squeeze(1)
    lta = F.avg_pool1d(F.pad(e, (39, 0)), 40, 1).squeeze(1)
    if floor:
        lta = lta.clamp_min(1e-3 * float(e.mean()))
    return sta / lta


class Picker(nn.Module):
    """Dilated 1-D convolutions of `width` channels with ReLUs, a 1x1 convolution to a logit per sample."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(2, width, 7, padding=3), nn.ReLU(),
            nn.Conv1d(width, width, 7, padding=6, dilation=2), nn.ReLU(),
            nn.Conv1d(width, width, 7, padding=12, dilation=4), nn.ReLU(),
            nn.Conv1d(width, 1, 1),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(1)


def seismic(run: Run) -> None:
    """A P-wave picker of `width` (16) channels, batches of `batch` (32), `opt` (Adam; or AdamW, RAdam, momentum
    SGD) at `lr` (2e-3). Scored by the share of held-out picks within 4 samples."""
    g = torch.Generator().manual_seed(run.seed)
    x, p = _traces(g, 600)
    x_v, p_v = _traces(g, 500)

    def inputs(traces: torch.Tensor) -> torch.Tensor:
        ratio = _sta_lta(traces, floor=run.bug != "sta_lta_over_unfloored_lta")
        peak = traces.abs().amax(1, keepdim=True)
        if run.bug == "division_result_discarded":
            traces.div(peak)  # meant to scale the trace; the result goes nowhere
        else:
            traces = traces.div(peak)
        return torch.stack([traces, ratio.log1p()], 1)

    inputs_v = inputs(x_v.clone())
    torch.manual_seed(run.seed)
    model = Picker(run.k("width", 16))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def picks_held_out() -> float:
        return float(((model(inputs_v).argmax(-1) - p_v).abs() <= 4).float().mean())

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        # a crop that keeps the pick inside it, away from the crop's first 8 samples
        low = (p[pick] - CROP + 8).clamp_min(0)
        high = (p[pick] - 8).clamp(max=TRACE - CROP)
        starts = low + (torch.rand(batch, generator=run.gen) * (high - low + 1)).long()
        crops = torch.stack([x[i, s : s + CROP] for i, s in zip(pick, starts, strict=True)])
        target = p[pick] if run.bug == "pick_not_shifted_with_crop" else p[pick] - starts
        loss = F.cross_entropy(model(inputs(crops)), target.clamp(max=CROP - 1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_pick_rate", picks_held_out):
            break
