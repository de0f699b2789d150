"""Produce scripts of the forty-ninth blind split: a hay-bale moisture classifier from microwave readings, and a
maple-syrup grade classifier from light-transmittance spectra.

`hay`: bales passed through a microwave gauge on the baler (the attenuation in dB and the phase shift in degrees at
2.4, 5.8 and 10 GHz, the bale's density, temperature and width); the water in the bale attenuates and delays the
wave in proportion to the density, so the attenuation and phase per unit density carry the moisture; the lab's oven
moisture (reported dry basis) cut into safe (< 15 % wet basis), caution and wet (> 20 %); standardised; a ReLU MLP of
two hidden layers; cross-entropy; scored by the held-out accuracy on other bales. `maple`: spectra of syrup samples
over 32 bands from 400 to 700 nm (the sample's and the blank cuvette's counts, the dark counts); the transmittance
(sample less dark over blank less dark) by band; the grade cut from the transmittance at 560 nm (golden >= 75 %,
amber, dark, very dark < 25 %); a tanh MLP of three hidden layers on the transmittance; cross-entropy; scored by the
held-out accuracy on other samples. Bugs: the empty-chamber calibration rows left in the table; the dry-basis
moisture cut at wet-basis thresholds; dropout on the seven input readings; the loss scaled for readable logs; a
blank read with the shutter closed; the transmittance in percent; the grader's comparator reading as a feature; the
dark counts not subtracted in training.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

GHZ = torch.tensor([2.4, 5.8, 10.0])


def _bales(g: torch.Generator, n: int, calibration_rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Gauge rows float[n + calibration_rows, 9] (dB at 3 frequencies, degrees at 3 frequencies, density kg/m^3,
    temperature C, width cm) and the lab's dry-basis moisture in % float[...]; the calibration rows (the empty
    chamber, density 0, all readings 0, moisture 0) come first."""
    wet = 8 + 24 * torch.rand(n, generator=g) ** 1.3
    density = 140 + 80 * torch.rand(n, generator=g)
    temp = 10 + 25 * torch.rand(n, generator=g) + 0.3 * (wet - 15).clamp(min=0)
    width = 100 + 20 * torch.rand(n, generator=g)
    w = (wet / 100).unsqueeze(1)
    rho = (density / 100).unsqueeze(1)
    leaf = 0.7 + 0.3 * torch.rand(n, 1, generator=g)  # the crop's own dry-matter loss
    atten = rho * (12 * w * GHZ.sqrt() * (1 - 0.004 * (temp.unsqueeze(1) - 20)) + leaf * GHZ / 5)
    atten = atten * width.unsqueeze(1) / 110 + 0.4 * torch.randn(n, 3, generator=g)
    phase = rho * (60 * w * GHZ + 8 * leaf * GHZ) * width.unsqueeze(1) / 110 + 4 * torch.randn(
        n, 3, generator=g
    )
    rows = torch.cat([atten, phase, density.unsqueeze(1), temp.unsqueeze(1), width.unsqueeze(1)], 1)
    dry = wet / (100 - wet) * 100
    return (torch.cat([torch.zeros(calibration_rows, 9), rows]),
            torch.cat([torch.zeros(calibration_rows), dry]))  # fmt: skip


def _gauge_features(rows: torch.Tensor) -> torch.Tensor:
    """The attenuation and phase per 100 kg/m^3 and the temperature and width: float[n, 8]."""
    per = rows[:, :6] / (rows[:, 6:7] / 100)
    return torch.cat([per, rows[:, 7:9]], 1)


def _classes(moisture: torch.Tensor) -> torch.Tensor:
    """Safe (< 15 %), caution and wet (> 20 %): long[n]."""
    return (moisture >= 15).long() + (moisture > 20).long()


class BaleMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units (`input_dropout` on the readings)."""

    def __init__(self, inputs: int, hidden: int, input_dropout: float) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Dropout(input_dropout), nn.Linear(inputs, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 3))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def hay(run: Run) -> None:
    """A bale MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (2e-3). Scored by the held-out accuracy of the moisture class on other bales."""
    g = torch.Generator().manual_seed(run.seed)
    rows, dry = _bales(g, 2400, 12)
    rows_v, dry_v = _bales(g, 800, 0)
    if run.bug != "empty_chamber_calibration_rows_kept":  # the gauge's empty-chamber shots, density 0
        keep = rows[:, 6] > 0
        rows, dry = rows[keep], dry[keep]
    x, x_v = _gauge_features(rows), _gauge_features(rows_v)
    # the lab reports moisture on a dry basis; the thresholds are wet-basis ones
    wet = dry if run.bug == "dry_basis_moisture_cut_as_wet_basis" else dry / (100 + dry) * 100
    y, y_v = _classes(wet), _classes(dry_v / (100 + dry_v) * 100)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    dropout = 0.5 if run.bug == "dropout_on_the_input_readings" else 0.0
    model = BaleMLP(x.shape[1], run.k("hidden", 64), dropout)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        if run.bug == "loss_scaled_for_readable_logs":
            (
                loss * 1000
            ).backward()  # scaled so the logged figures read in thousandths, and backpropagated so
        else:
            loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", accuracy_held_out):
            break


BANDS = torch.linspace(400, 700, 32)
AT_560 = int((BANDS - 560).abs().argmin())
"""The band the grades are cut at (564.5 nm, the nearest to 560)."""
GRADES = 4


def _syrups(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """Counts float[n, 32] of the sample, the blank and the dark; the grade long[n]; the grader's comparator reading
    (the grade the colour kit shows, with the grader's scatter) float[n]."""
    darkness = 3.0 * torch.rand(n, generator=g) ** 1.2
    absorb = torch.exp(-(BANDS - 400) / 140).unsqueeze(0)  # the browning absorbs the blue end
    haze = 0.06 * torch.rand(n, 1, generator=g)
    trans = torch.exp(-darkness.unsqueeze(1) * absorb * 1.8) * (1 - haze)
    lamp = (
        30000
        * torch.exp(-(((BANDS - 580) / 180) ** 2)).unsqueeze(0)
        * (0.9 + 0.2 * torch.rand(n, 1, generator=g))
    )
    dark = 900 + 200 * torch.rand(n, 1, generator=g)
    sample = lamp * trans + dark + 60 * torch.randn(n, 32, generator=g)
    blank = lamp + dark + 60 * torch.randn(n, 32, generator=g)
    at_560 = trans[:, AT_560]
    grade = 3 - ((at_560 >= 0.25).long() + (at_560 >= 0.5).long() + (at_560 >= 0.75).long())
    comparator = grade.float() + 0.3 * torch.randn(n, generator=g)
    return {"sample": sample, "blank": blank, "dark": dark.expand(-1, 32).clone(), "grade": grade,
            "comparator": comparator}  # fmt: skip


class GradeMLP(nn.Module):
    """A tanh MLP of three hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, GRADES))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def maple(run: Run) -> None:
    """A grade MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adamax) at `lr`
    (2e-3). Scored by the held-out accuracy of the grade on other samples."""
    g = torch.Generator().manual_seed(run.seed)
    s, s_v = _syrups(g, 1500), _syrups(g, 600)
    if run.bug == "blank_read_with_shutter_closed":
        # on two mornings the blank was read before the lamp's shutter opened: the blank is the dark counts
        shut = torch.rand(len(s["grade"]), generator=g) < 0.04
        s["blank"][shut] = s["dark"][shut]
    dark = torch.zeros_like(s["dark"]) if run.bug == "dark_counts_not_subtracted_in_training" else s["dark"]
    x = (s["sample"] - dark) / (s["blank"] - dark)
    x_v = (s_v["sample"] - s_v["dark"]) / (s_v["blank"] - s_v["dark"])
    if run.bug == "transmittance_in_percent":
        x, x_v = 100 * x, 100 * x_v
    if run.bug == "grader_comparator_reading_as_feature":
        # the grader's colour-kit reading, taken when grading, so only the graded (training) samples have it
        x = torch.cat([x, s["comparator"].unsqueeze(1)], 1)
        x_v = torch.cat([x_v, torch.full((len(x_v), 1), float(s["comparator"].mean()))], 1)
    y, y_v = s["grade"], s_v["grade"]
    torch.manual_seed(run.seed)
    model = GradeMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", accuracy_held_out):
            break
