"""Field scripts of the twenty-first blind split: a soil-moisture sensor regressor and a stroke-risk classifier with
temperature scaling.

`soil`: 120 lab-measured (gravimetric) samples, each with 16 raw readings of a capacitive probe's 12-bit ADC (0-4095,
lower when wetter) stored as int16, the soil temperature, the clay share and the rain of the last five days; the
volumetric water content (0 for oven-dry samples, up to about 0.45) from the probe's mean count, corrected for
temperature and clay; the 16 readings averaged, the features standardised by the training samples, an MLP of two
sigmoid layers with dropout 0.2 under weight decay; MAPE against the content with a floor of 0.02 in the denominator,
as the lab reports relative error; scored by the held-out R^2 of the content. `stroke`: patients' age, hypertension,
heart disease, average glucose, BMI (missing for about 4 in 100) and smoking status, a stroke in about 6 in 100 by a
logistic model of age, glucose, hypertension and smoking; missing BMIs imputed by the training median, the numbers
standardised, an MLP of two tanh layers; a temperature fitted on a calibration fold from the detached logits in the
same step; BCE with logits; scored by the held-out AUC. Bugs: the 16 readings summed into an int16 accumulator that
wraps; the raw counts fed to the sigmoid layer unstandardised; MAPE without its floor on oven-dry samples; the lab's
sample number, which follows the drying season the samples were cored in, left among the features; the training forward
placed under the calibration's `torch.no_grad`; the age given in days and fed raw to the tanh layer.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind21.travel import registered

READINGS = 16
"""Raw ADC readings oversampled per measurement."""


def _samples(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Raw readings int16[n, READINGS], other fields float[n, 7] (temperature, clay, five days of rain in mm), the
    volumetric water content float[n]."""
    dry = torch.rand(n, generator=g) < 0.1
    content = torch.where(dry, 0.0, 0.03 + 0.42 * torch.rand(n, generator=g))
    temperature = 5 + 25 * torch.rand(n, generator=g)
    clay = 0.05 + 0.45 * torch.rand(n, generator=g)
    rain = torch.poisson(3 * torch.rand(n, 5, generator=g) * (1 + 10 * content.unsqueeze(1)), generator=g)
    # the probe reads lower when wetter, shifted by temperature and clay
    count = 3600 - 5200 * content + 8 * (temperature - 20) - 600 * clay * content
    readings = (count.unsqueeze(1) + 25 * torch.randn(n, READINGS, generator=g)).round().clamp(0, 4095)
    return readings.to(torch.int16), torch.cat([temperature[:, None], clay[:, None], rain], 1), content


def soil(run: Run) -> None:
    """A moisture MLP of `hidden` (64), batches of `batch` (32), `opt` (Adam; or AdamW, RMSprop, Nesterov SGD) at
    `lr` (3e-3). Scored by the held-out R^2 of the water content."""
    g = torch.Generator().manual_seed(run.seed)
    readings, other, y = _samples(g, 120)
    readings_v, other_v, y_v = _samples(g, 600)
    # the lab sheet numbers the samples in the order they were cored, through a drying summer (wettest first);
    # the held-out samples come from later seasons and carry the numbers after them
    order = (-y + 0.08 * torch.randn(len(y), generator=g)).argsort()
    readings, other, y = readings[order], other[order], y[order]
    number, number_v = torch.arange(1.0, 121.0), torch.arange(121.0, 721.0)

    def mean_count(r: torch.Tensor) -> torch.Tensor:
        if run.bug == "int16_oversample_accumulator":
            total = torch.zeros(len(r), dtype=r.dtype)  # the accumulator takes the readings' dtype
            for i in range(READINGS):
                total += r[:, i]
            return total.float() / READINGS
        return r.float().mean(1)

    raw = torch.cat([mean_count(readings)[:, None], other], 1)
    raw_v = torch.cat([mean_count(readings_v)[:, None], other_v], 1)
    if run.bug == "sample_number_left_in_features":
        raw, raw_v = torch.cat([raw, number[:, None]], 1), torch.cat([raw_v, number_v[:, None]], 1)
    mean, std = raw.mean(0), raw.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    if run.bug == "raw_counts_fed_to_sigmoid_layer":
        x[:, 0], x_v[:, 0] = raw[:, 0], raw_v[:, 0]  # the counts column skipped by the scaler
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    model = nn.Sequential(nn.Linear(x.shape[1], hidden), nn.Sigmoid(), nn.Dropout(0.2), nn.Linear(hidden, hidden),
                          nn.Sigmoid(), nn.Dropout(0.2), nn.Linear(hidden, 1))  # fmt: skip
    opt = registered(run, model, 3e-3)
    for group in opt.param_groups:
        group["weight_decay"] = max(group["weight_decay"], 1e-3)
    batch = run.k("batch", 32)
    floor = 0.0 if run.bug == "mape_without_floor_on_dry_samples" else 0.02

    def r2_held_out() -> float:
        return r2(model(x_v)[:, 0], y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        pred = model(x[pick])[:, 0]
        loss = ((pred - y[pick]).abs() / y[pick].clamp_min(floor)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


def _patients(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fields float[n, 5] (age in years, hypertension, heart disease, glucose in mg/dL, BMI with NaN where missing),
    smoking status long[n] (never, formerly, smokes, unknown), stroke float[n]."""
    age = 18 + 70 * torch.rand(n, generator=g)
    hypertension = (torch.rand(n, generator=g) < 0.05 + 0.3 * (age - 18) / 70).float()
    heart = (torch.rand(n, generator=g) < 0.02 + 0.12 * (age - 18) / 70).float()
    glucose = 85 + 20 * torch.randn(n, generator=g).abs() + 60 * (torch.rand(n, generator=g) < 0.15).float()
    bmi = 27 + 5 * torch.randn(n, generator=g)
    smoking = torch.multinomial(torch.tensor([0.4, 0.2, 0.15, 0.25]), n, True, generator=g)
    logit = (0.075 * (age - 60) + 0.9 * hypertension + 0.6 * heart + 0.012 * (glucose - 100)
             + 0.5 * (smoking == 2).float() + 0.03 * (bmi - 27) - 3.2)  # fmt: skip
    stroke = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    bmi = torch.where(torch.rand(n, generator=g) < 0.04, float("nan"), bmi)
    return torch.stack([age, hypertension, heart, glucose, bmi], 1), smoking, stroke


class StrokeMLP(nn.Module):
    """The numbers with the embedded smoking status through two tanh layers of `hidden`, a linear logit."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.smoking = nn.Embedding(4, 3)
        self.mlp = nn.Sequential(nn.Linear(8, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, num: torch.Tensor, smoking: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([num, self.smoking(smoking)], -1))[:, 0]


def stroke(run: Run) -> None:
    """A stroke MLP of `hidden` (32), batches of `batch` (256), `opt` (Adam; or NAdam, momentum SGD, Adamax) at `lr`
    (2e-3), the temperature fitted alongside on a calibration fold. Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    num, smoke, y = _patients(g, 5000)
    num_c, smoke_c, y_c = _patients(g, 1000)
    num_v, smoke_v, y_v = _patients(g, 2000)
    median = num[:, 4].nanmedian()
    mean, std = num.nanmean(0), torch.tensor([float(c[~c.isnan()].std()) for c in num.T])

    def prepared(f: torch.Tensor) -> torch.Tensor:
        f = f.clone()
        f[:, 4] = f[:, 4].nan_to_num(float(median))
        out = (f - mean) / std
        if run.bug == "age_in_days_fed_raw_to_tanh":
            out[:, 0] = f[:, 0] * 365.25  # the registry's age_days column, taken as it comes
        return out

    x, x_c, x_v = prepared(num), prepared(num_c), prepared(num_v)
    torch.manual_seed(run.seed)
    model = StrokeMLP(run.k("hidden", 32))
    opt = registered(run, model, 2e-3)
    log_t = torch.zeros((), requires_grad=True)
    opt.add_param_group({"params": [log_t]})
    batch = run.k("batch", 256)

    def auc_held_out() -> float:
        return auc(model(x_v, smoke_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        cal = run.indices(len(y_c), batch)
        if run.bug == "training_forward_under_calibration_no_grad":
            with torch.no_grad():
                logits = model(x[pick], smoke[pick])
                cal_logits = model(x_c[cal], smoke_c[cal])
        else:
            logits = model(x[pick], smoke[pick])
            with torch.no_grad():
                cal_logits = model(x_c[cal], smoke_c[cal])
        loss = F.binary_cross_entropy_with_logits(logits, y[pick])
        calibration = F.binary_cross_entropy_with_logits(cal_logits / log_t.exp(), y_c[cal])
        opt.zero_grad()
        (loss + calibration).backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
