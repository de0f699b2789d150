"""Clinical scripts of the twenty-third blind split: a glucose forecaster on continuous-glucose-monitor readings and a
tumour-subtype classifier on gene-expression counts from several labs.

`glucose`: patients' 5-minute readings simulated from a baseline level, meals whose carbohydrates raise glucose after
about 45 minutes and insulin boluses that lower it after about 75, a basal insulin rate, with sensor noise and one
reading in fifty lost (recorded as 0 by the export); windows of two hours of readings, insulin units and carbohydrate
grams; the lost readings filled by the last good one, glucose logged and standardised; a GRU whose final state feeds a
linear layer predicting the standardised log glucose 30 minutes ahead; MSE; scored by the held-out R^2. `genes`: RNA
counts of 1000 genes for four tumour subtypes, each raising its own 20 genes, from two labs (160 patients) whose
protocols shift every gene's level and whose patients lean to different subtypes; counts per million, log2(1 + CPM),
each lab's mean profile removed, the genes standardised; an MLP with dropout under AdamW (weight decay 0.01); scored by
the accuracy on a third lab's patients.
Bugs: the lost readings filled after the log, so their log of 0 stays; the readings exported in mmol/L; the forecast
horizon given in minutes where samples were meant; the training windows' insulin and meals cut at the target's time;
the target logged in base ten; the labs' offsets not removed; a failed library of zero reads kept; the counts per
million taken over the patients.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers
from benchmarks.detection.torch_real.loop import make_optimizer

WINDOW, HORIZON_MIN, SAMPLE_MIN = 24, 30, 5
"""Readings in an input window (two hours), the forecast horizon in minutes, minutes between readings."""


def _kernel(peak: float, length: int) -> torch.Tensor:
    """A gamma-shaped response over `length` samples peaking at `peak` samples, summing to 1."""
    t = torch.arange(length, dtype=torch.float)
    k = t * torch.exp(-t / peak)
    return k / k.sum()


def _patients(g: torch.Generator, n: int, length: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Glucose mg/dL [n, length] as the sensor reports it (lost readings 0), insulin units (basal and boluses) and
    carbohydrate grams."""
    pad = 40
    total = length + pad
    carbs = (torch.rand(n, total, generator=g) < 0.04) * (20 + 60 * torch.rand(n, total, generator=g))
    bolus = carbs / (8 + 6 * torch.rand(n, 1, generator=g))
    correction = (torch.rand(n, total, generator=g) < 0.01) * (1 + 2 * torch.rand(n, total, generator=g))
    insulin = bolus + correction
    rise = F.conv1d(F.pad(carbs, (39, 0)).unsqueeze(1), _kernel(9.0, 40).flip(0).view(1, 1, -1)).squeeze(1)
    fall = F.conv1d(F.pad(insulin, (39, 0)).unsqueeze(1), _kernel(15.0, 40).flip(0).view(1, 1, -1)).squeeze(1)
    base = 110 + 40 * torch.rand(n, 1, generator=g)
    drift = torch.cumsum(torch.randn(n, total, generator=g), 1) * 0.8
    glucose = (base + 3.5 * _smooth(rise) - 35 * _smooth(fall) + drift).clamp(40, 400)
    glucose = glucose + 4 * torch.randn(n, total, generator=g)
    lost = torch.rand(n, total, generator=g) < 0.02
    basal = 0.06 + 0.06 * torch.rand(n, 1, generator=g)  # the pump's basal rate, balancing the liver's output
    return torch.where(lost, 0.0, glucose)[:, pad:], (insulin + basal)[:, pad:], carbs[:, pad:]


def _smooth(x: torch.Tensor) -> torch.Tensor:
    """A response integrated over about an hour (the effect of a meal or a dose that wears off)."""
    return F.conv1d(F.pad(x, (23, 0)).unsqueeze(1), torch.ones(1, 1, 24) / 2.0).squeeze(1)


def _fill_lost(x: torch.Tensor, lost: torch.Tensor) -> torch.Tensor:
    """Each lost reading replaced by the last good one before it (the first by the window's mean)."""
    out = x.clone()
    out[:, 0] = torch.where(lost[:, 0], x.masked_fill(lost, 0).sum(1) / (~lost).sum(1).clamp(min=1), x[:, 0])
    for t in range(1, x.shape[1]):
        out[:, t] = torch.where(lost[:, t], out[:, t - 1], x[:, t])
    return out


class Forecaster(nn.Module):
    """A GRU of `hidden` over (glucose, insulin, carbohydrates) and a linear layer on its final state."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(3, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.gru(x)[0][:, -1]).squeeze(-1)


def glucose(run: Run) -> None:
    """A glucose forecaster (a GRU of `hidden` (32)), batches of `batch` (64), `opt` (Adam; or RMSprop, AdamW, NAdam)
    at `lr` (3e-3), optionally clipped at norm `clip`. Scored by the held-out R^2 of the log glucose 30 minutes
    ahead."""
    g = torch.Generator().manual_seed(run.seed)
    # the horizon in samples; the bug passes the minutes where the function wanted samples
    ahead = HORIZON_MIN if run.bug == "horizon_given_in_minutes_as_samples" else HORIZON_MIN // SAMPLE_MIN
    length = WINDOW + HORIZON_MIN

    def windows(n: int, train: bool) -> tuple[torch.Tensor, torch.Tensor]:
        raw, insulin, carbs = _patients(g, n, length)
        if run.bug == "glucose_exported_in_mmol":
            raw = raw / 18.0  # the clinic's monitors export mmol/L; the transform below expects mg/dL
        lost = raw == 0
        step = ahead if train else HORIZON_MIN // SAMPLE_MIN
        if train and run.bug == "gaps_filled_after_log":
            # the log taken first; the fill then looks for zeros that are now -inf
            logged = _fill_lost(torch.log(raw), torch.log(raw) == 0)
        else:
            logged = torch.log(_fill_lost(raw, lost))
        z = (logged - 4.8) / 0.27
        target = z[:, WINDOW - 1 + step]
        if train and run.bug == "target_logged_base_ten":
            # the target helper takes log10 where the features take the natural log
            future = _fill_lost(raw, lost)[:, WINDOW - 1 + step]
            target = (torch.log10(future) - 4.8) / 0.27
        end = WINDOW
        if train and run.bug == "covariates_sliced_at_target_time":
            # insulin and meals cut at the target's time, so the next half hour's meals leak in
            end = WINDOW + step
        covariates = [insulin[:, end - WINDOW : end] / 5, carbs[:, end - WINDOW : end] / 50]
        return torch.stack([z[:, :WINDOW], *covariates], -1), target

    x, y = windows(3000, True)
    x_v, y_v = windows(1000, False)
    torch.manual_seed(run.seed)
    model = Forecaster(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    batch, clip = run.k("batch", 64), run.k("clip", None)

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


GENES, SUBTYPES, MARKERS = 1000, 4, 20
"""Genes measured, tumour subtypes and marker genes raised by each subtype."""


def _cohort(
    g: torch.Generator,
    base: torch.Tensor,
    n: int,
    lean: list[float],
    shift: torch.Tensor,
    failed: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw counts float[n, GENES] and subtypes long[n] of one lab: subtypes drawn by `lean`, its protocol's `shift`
    of every gene's log level (`failed`: the first library came back with no reads)."""
    y = torch.multinomial(torch.tensor(lean), n, True, generator=g)
    level = base + shift + 0.7 * torch.randn(n, GENES, generator=g)
    for s in range(SUBTYPES):
        level[y == s, s * MARKERS : (s + 1) * MARKERS] += 0.9
    share = torch.softmax(level, 1)
    depth = torch.exp(13 + 0.5 * torch.randn(n, 1, generator=g))
    counts = torch.poisson(share * depth, generator=g)
    if failed:
        counts[0] = 0.0
    return counts, y


def _log_cpm(counts: torch.Tensor, qc: bool = True, axis: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """log2(1 + counts per million) and the rows kept (`qc`: libraries under 10,000 reads dropped; `axis` 0: each
    count over its gene's total across the patients instead of over the patient's library)."""
    keep = counts.sum(1) >= 10_000 if qc else torch.ones(len(counts), dtype=torch.bool)
    counts = counts[keep]
    return torch.log2(1 + 1e6 * counts / counts.sum(axis, keepdim=True)), keep


class SubtypeMLP(nn.Module):
    """Genes -> `hidden` ReLU units -> dropout 0.5 -> `hidden` // 2 ReLU units -> the subtypes."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(GENES, hidden), nn.ReLU(), nn.Dropout(0.5), nn.Linear(hidden, hidden // 2),
                                 nn.ReLU(), nn.Linear(hidden // 2, SUBTYPES))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def genes(run: Run) -> None:
    """A subtype classifier (an MLP of `hidden` (128)) on 240 patients from two labs, batches of `batch` (32), `opt`
    (AdamW; or Adam, momentum SGD, RMSprop) at `lr` (1e-3). Scored by the accuracy on a third lab's patients."""
    g = torch.Generator().manual_seed(run.seed)
    base = (2 * torch.randn(GENES, generator=g)).clamp(min=-1.0)  # genes expressed at a detectable level
    labs = [1.0 * torch.randn(GENES, generator=g) for _ in range(3)]
    counts_a, y_a = _cohort(
        g, base, 90, [0.4, 0.35, 0.15, 0.1], labs[0], run.bug == "failed_library_kept_in_cpm"
    )
    counts_b, y_b = _cohort(g, base, 70, [0.1, 0.15, 0.35, 0.4], labs[1])
    counts_c, y_c = _cohort(g, base, 600, [0.25, 0.25, 0.25, 0.25], labs[2])
    qc = run.bug != "failed_library_kept_in_cpm"
    parts = []
    for counts, y in ((counts_a, y_a), (counts_b, y_b), (counts_c, y_c)):
        x, keep = _log_cpm(counts, qc, 0 if run.bug == "cpm_taken_over_patients" else 1)
        if run.bug != "lab_offsets_not_removed":
            x = x - x.mean(0)  # each lab's mean profile removed (its protocol's shift)
        parts.append((x, y[keep]))
    x = torch.cat([parts[0][0], parts[1][0]])
    y = torch.cat([parts[0][1], parts[1][1]])
    mean, std = x.mean(0), x.std(0) + 1e-3
    x, x_v, y_v = (x - mean) / std, (parts[2][0] - mean) / std, parts[2][1]
    torch.manual_seed(run.seed)
    model = SubtypeMLP(run.k("hidden", 128))

    def init(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)

    model.apply(init)
    name, lr = run.k("opt", "adamw"), run.k("lr", 1e-3)
    opt = make_optimizer(name, model.parameters(), lr, weight_decay=1e-2 if name == "adamw" else 0.0)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    model.train()
    batch = run.k("batch", 32)

    def accuracy_new_lab() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_new_lab):
            break
