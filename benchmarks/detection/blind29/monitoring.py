"""Monitoring scripts of the twenty-ninth blind split: a sepsis early-warning GRU over hourly vital signs and a
solar-flare classifier on magnetogram features.

`sepsis`: 24 hours of heart rate, temperature, respiratory rate, systolic pressure, SpO2 and lactate (drawn in about
one hour in six, unmeasured otherwise) for each stay; a patient heading for sepsis drifts over the last hours towards
tachycardia, fever, fast breathing, falling pressure and rising lactate, and the window ends six hours before onset;
the vitals standardised by the training stays, lactate carried forward with a flag for a fresh draw, a GRU cell run
hour by hour, a linear layer on its last state; BCE; scored by the held-out AUC. `flares`: active regions' SHARP-like
magnetogram features (total unsigned flux, area, total current helicity, mean shear angle, R-value, total free energy,
gradient, twist), heavy-tailed and correlated, about one region in twelve flaring within a day; the features logged
and standardised, an MLP; BCE with a positive weight of negatives over positives; scored by the held-out AUC. Bugs:
the unmeasured lactate left as NaN; the training windows run to the onset; the hidden state detached every hour; the
positive weight given as the count of negatives; the class weight given as `weight` instead of `pos_weight`.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

HOURS, VITALS = 24, 6
"""Hours per window and vitals (heart rate, temperature, respiratory rate, systolic pressure, SpO2, lactate)."""


def _stays(g: torch.Generator, n: int, to_onset: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Vitals float[n, HOURS, VITALS] in their units (lactate NaN when not drawn) and sepsis float[n]; the window
    ends six hours before onset (or at onset with `to_onset`)."""
    sepsis = (torch.rand(n, generator=g) < 0.3).float()
    base = torch.tensor([80.0, 36.9, 16, 120, 97, 1.2])
    spread = torch.tensor([10.0, 0.4, 3, 12, 1.5, 0.4])
    drift = torch.tensor([25.0, 1.5, 8, -25, -4, 2.5])
    person = base + spread * torch.randn(n, 1, VITALS, generator=g)
    # the drift starts 8-16 hours before onset (on the window's clock) and grows towards it
    start = 8 + 8 * torch.rand(n, 1, generator=g)
    clock = torch.arange(HOURS).float() - (HOURS - 1) + (0 if to_onset else -6)
    ramp = ((clock + start) / start).clamp(0, 1) ** 2 * sepsis.unsqueeze(1)
    if not to_onset:
        ramp = ramp * 0.45
    vitals = person + ramp.unsqueeze(-1) * drift + 0.5 * spread * torch.randn(n, HOURS, VITALS, generator=g)
    drawn = torch.rand(n, HOURS, generator=g) < 1 / 6
    drawn[:, 0] = True
    if to_onset:
        drawn[:, -1] |= sepsis > 0  # the sepsis bundle draws a lactate at onset
    vitals[..., 5] = torch.where(drawn, vitals[..., 5].clamp_min(0.3), float("nan"))
    return vitals, sepsis


class VitalsGRU(nn.Module):
    """A GRU cell of `hidden` over the hours (vitals and a fresh-draw flag), a linear layer on the last state."""

    def __init__(self, hidden: int, detach_each_hour: bool = False) -> None:
        super().__init__()
        self.cell = nn.GRUCell(VITALS + 1, hidden)
        self.head = nn.Linear(hidden, 1)
        self.detach_each_hour = detach_each_hour

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.new_zeros(len(x), self.cell.hidden_size)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
            if self.detach_each_hour:
                h = h.detach()  # kept from a truncated-backprop recipe for long streams
        return self.head(h)[:, 0]


def sepsis(run: Run) -> None:
    """A vitals GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or AdamW, RMSprop) at `lr` (3e-3),
    optionally clipped at norm `clip`. Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    vitals, y = _stays(g, 1200, to_onset=run.bug == "training_windows_run_to_onset")
    vitals_v, y_v = _stays(g, 800)
    flat = vitals.reshape(-1, VITALS)
    mean, std = flat.nanmean(0), (flat - flat.nanmean(0)).pow(2).nanmean(0).sqrt()

    def features(v: torch.Tensor) -> torch.Tensor:
        drawn = torch.isfinite(v[..., 5])
        z = (v - mean) / std
        if run.bug != "unmeasured_lactate_left_as_nan":
            # carry the last lactate forward over the hours it was not drawn
            lac = z[..., 5].clone()
            for t in range(1, HOURS):
                lac[:, t] = torch.where(drawn[:, t], lac[:, t], lac[:, t - 1])
            z = torch.cat([z[..., :5], lac.unsqueeze(-1)], -1)
        return torch.cat([z, drawn.float().unsqueeze(-1)], -1)

    x, x_v = features(vitals), features(vitals_v)
    torch.manual_seed(run.seed)
    model = VitalsGRU(run.k("hidden", 32), run.bug == "hidden_state_detached_each_hour")
    opt = optimizers.registered(run, model, 3e-3)
    batch, clip = run.k("batch", 64), run.k("clip", None)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


FEATURES = 8
"""Magnetogram features (total unsigned flux, area, current helicity, mean shear, R-value, free energy, gradient,
twist)."""


def _regions(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Features float[n, FEATURES] in their (positive, heavy-tailed) units and flare float[n]."""
    size = torch.randn(n, 1, generator=g)
    complexity = torch.randn(n, 1, generator=g)
    load_size = torch.tensor([1.0, 1.0, 0.8, 0.1, 0.6, 0.9, 0.4, 0.2])
    load_cplx = torch.tensor([0.1, 0.0, 0.5, 0.8, 0.7, 0.5, 0.6, 0.7])
    scale = torch.tensor([22.0, 2.5, 3.0, 1.5, 0.5, 23.0, 1.8, 0.1])
    logs = size * load_size + complexity * load_cplx + 0.4 * torch.randn(n, FEATURES, generator=g)
    feats = 10 ** (scale / 10 + 0.5 * logs)
    logit = 1.6 * size[:, 0] + 1.4 * complexity[:, 0] + 0.8 * size[:, 0] * complexity[:, 0] - 3.6
    flare = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    return feats, flare


def flares(run: Run) -> None:
    """A flare MLP of `hidden` (64), batches of `batch` (128), `opt` (Adam; or momentum SGD, AdamW, RAdam) at `lr`
    (1e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    feats, y = _regions(g, 3000)
    feats_v, y_v = _regions(g, 2000)
    logged, logged_v = torch.log10(feats), torch.log10(feats_v)
    mean, std = logged.mean(0), logged.std(0)
    x, x_v = (logged - mean) / std, (logged_v - mean) / std
    positives = y.sum()
    ratio = (len(y) - positives) / positives
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    model = nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 1))  # fmt: skip
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 128)
    # the positive class up-weighted by the negatives over the positives (the bug: by the count of negatives)
    pos_weight = len(y) - positives if run.bug == "pos_weight_as_negatives_count" else ratio

    def auc_held_out() -> float:
        return auc(model(x_v)[:, 0], y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        logits = model(x[pick])[:, 0]
        if run.bug == "class_weight_given_as_weight":
            # the class weight passed as `weight`, which scales every example's loss alike
            loss = F.binary_cross_entropy_with_logits(logits, y[pick], weight=ratio)
        else:
            loss = F.binary_cross_entropy_with_logits(logits, y[pick], pos_weight=pos_weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
