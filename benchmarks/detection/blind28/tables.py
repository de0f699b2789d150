"""Table scripts of the twenty-eighth blind split: a hospital length-of-stay regressor and a power-transformer fault
classifier from dissolved-gas readings.

`stay`: admissions with age, an emergency flag, the number of diagnoses, a surgery flag, a comorbidity index, a
weekend flag, prior admissions and the charges estimated at admission in dollars; the stay in whole days (0 for a
same-day discharge; none for an admission still open at the export, which is dropped) is lognormal around a mean set by them; an MLP regresses the centred log(1 + days); MSE; scored by
the held-out R^2 of log(1 + days). `gas`: oil samples of transformers with the five fault gases in ppm (H2, CH4, C2H6,
C2H4, C2H2; a gas below its detection limit reads 0); six conditions (normal, partial discharge, low and high thermal,
low- and high-energy arcing) set the gases' log levels; the features are the gases' log(1 + ppm) and three Rogers
ratios of guarded gases, standardised; an MLP; cross-entropy; scored by the held-out accuracy, on other transformers.
Bugs: the admissions still open at the export (no discharge date, a NaN stay) kept; the discharge disposition left among the inputs; the charges left in dollars; the
predicted stay rounded to whole days before the loss; the weights of a deep tanh network drawn
by `uniform_` with its default bounds [0, 1); unguarded Rogers ratios; the
inference temperature applied to the training logits; LeakyReLU given `True` as its slope; an embedding of the transformer's serial number.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers


def _admissions(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Admission features float[n, 8] in their units, the stay in whole days float[n], disposition float[n]."""
    age = 18 + 77 * torch.rand(n, generator=g)
    emergency = (torch.rand(n, generator=g) < 0.45).float()
    diagnoses = torch.randint(1, 16, (n,), generator=g).float()
    surgery = (torch.rand(n, generator=g) < 0.3).float()
    comorbidity = torch.randint(0, 11, (n,), generator=g).float()
    weekend = (torch.rand(n, generator=g) < 2 / 7).float()
    prior = torch.poisson(0.3 + comorbidity / 5, generator=g)
    log_mean = (-0.2 + 0.018 * (age - 50) + 0.5 * emergency + 0.09 * diagnoses + 0.7 * surgery + 0.08 * comorbidity
                + 0.2 * weekend + 0.05 * prior)  # fmt: skip
    days = torch.floor(torch.exp(log_mean + 0.45 * torch.randn(n, generator=g)))
    days[torch.rand(n, generator=g) < 0.04] = float(
        "nan"
    )  # still in hospital at the export: no discharge date
    charges = (
        3000 + 1800 * diagnoses + 15000 * surgery + 4000 * emergency + 800 * torch.randn(n, generator=g).abs()
    )
    x = torch.stack([age, emergency, diagnoses, surgery, comorbidity, weekend, prior, charges], 1)
    disposition = (days > 6).float() + (
        days > 12
    ).float()  # NaN stays compare False  # home, rehabilitation, nursing home
    return x, days, disposition


def _stay_model(hidden: int, depth: int, tanh: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = 8
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), nn.Tanh() if tanh else nn.ReLU()]
        width = hidden
    return nn.Sequential(*layers, nn.Linear(width, 1))


def stay(run: Run) -> None:
    """A stay MLP of `depth` (2) layers of `hidden` (64), tanh when `tanh`, batches of `batch` (64), `opt` (Adam; or
    momentum SGD, RMSprop, AdamW) at `lr` (1e-3), decayed by a cosine when `cosine`. Scored by the held-out R^2 of
    log(1 + days)."""
    g = torch.Generator().manual_seed(run.seed)
    z, days, disposition = _admissions(g, 1500)
    z_v, days_v, _ = _admissions(g, 1500)
    closed_v = ~days_v.isnan()
    z_v, days_v = z_v[closed_v], days_v[closed_v]
    if run.bug != "open_admissions_kept":
        closed = ~days.isnan()  # the admissions still open at the export dropped
        z, days, disposition = z[closed], days[closed], disposition[closed]
    if run.bug == "discharge_disposition_left_in":
        # the disposition column of the discharge table kept; the admissions to score have none yet: "home"
        z = torch.cat([z[:, :7], disposition.unsqueeze(1)], 1)
        z_v = torch.cat([z_v[:, :7], torch.zeros(len(z_v), 1)], 1)
    mean, std = z.mean(0), z.std(0)
    if run.bug == "charges_estimate_in_dollars":
        mean[7], std[7] = 0.0, 1.0  # the charges, joined from billing, missed the scaling
    x, x_v = (z - mean) / std, (z_v - mean) / std
    y_mean = float(torch.log1p(days).nanmean())
    t = torch.log1p(days) - y_mean
    tanh = run.k("tanh", False)
    torch.manual_seed(run.seed)
    model = _stay_model(run.k("hidden", 64), run.k("depth", 2), tanh)
    if run.bug == "uniform_init_default_bounds":
        for m in list(model)[:-1]:  # the hidden layers; the output layer keeps its own start
            if isinstance(m, nn.Linear):
                nn.init.uniform_(
                    m.weight
                )  # meant as a symmetric uniform start; the defaults draw from [0, 1)
                nn.init.zeros_(m.bias)
    opt = optimizers.registered(run, model, 1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v)[:, 0] + y_mean, torch.log1p(days_v))

    for step in range(run.steps):
        pick = run.indices(len(t), batch)
        pred = model(x[pick])[:, 0]
        if run.bug == "prediction_rounded_to_whole_days":
            # the predicted stay rounded to whole days, as the stays are, before the loss: round has no gradient
            pred = torch.log1p(torch.round(torch.expm1(pred + y_mean)).clamp_min(0)) - y_mean
        loss = F.mse_loss(pred, t[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


CONDITIONS = 6
LEVELS = torch.tensor([  # log ppm of H2, CH4, C2H6, C2H4, C2H2 by condition
    [3.0, 2.5, 2.5, 1.5, -1.0],  # normal
    [6.0, 3.5, 2.0, 1.0, -1.0],  # partial discharge
    [3.5, 4.5, 4.5, 2.5, -1.0],  # low thermal
    [4.0, 5.0, 3.5, 5.5, 0.5],  # high thermal
    [5.0, 3.0, 2.0, 3.5, 3.5],  # low-energy arcing
    [5.5, 4.0, 2.5, 5.0, 5.0],  # high-energy arcing
])  # fmt: skip


def _samples(g: torch.Generator, units: int, per_unit: int, first_serial: int) -> tuple[torch.Tensor, ...]:
    """Gas readings float[n, 5] in ppm (0 below detection), condition long[n], serial long[n]: each transformer
    sampled `per_unit` times in one condition."""
    condition = torch.randint(0, CONDITIONS, (units,), generator=g).repeat_interleave(per_unit)
    serial = (first_serial + torch.arange(units)).repeat_interleave(per_unit)
    unit_shift = (0.8 * torch.randn(units, 5, generator=g)).repeat_interleave(per_unit, 0)
    logs = LEVELS[condition] + unit_shift + 0.9 * torch.randn(len(condition), 5, generator=g)
    ppm = torch.exp(logs)
    ppm = torch.where(ppm < 1.0, torch.zeros_like(ppm), ppm.round())
    return ppm, condition, serial


def _features(ppm: torch.Tensor, guarded: bool) -> torch.Tensor:
    h2, ch4, c2h6, c2h4, c2h2 = ppm.unbind(1)
    eps = 1.0 if guarded else 0.0
    ratios = [(ch4 + eps) / (h2 + eps), (c2h2 + eps) / (c2h4 + eps), (c2h4 + eps) / (c2h6 + eps)]
    return torch.cat([torch.log1p(ppm), torch.log(torch.stack(ratios, 1))], 1)


def gas(run: Run) -> None:
    """A fault MLP of `hidden` (64) twice, batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at
    `lr` (2e-3). Scored by the held-out accuracy on other transformers."""
    g = torch.Generator().manual_seed(run.seed)
    ppm, y, serial = _samples(g, 80, 12, 0)
    ppm_v, y_v, _ = _samples(g, 200, 5, 80)
    guarded = run.bug != "rogers_ratio_unguarded"
    f, f_v = _features(ppm, guarded), _features(ppm_v, guarded)
    mean, std = f.mean(0), f.std(0)
    x, x_v = (f - mean) / std, (f_v - mean) / std
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    serials = run.bug == "transformer_serial_embedded"
    width = 8 + (16 if serials else 0)
    # LeakyReLU's first argument is the negative slope, not `inplace` as for ReLU: True makes it the identity
    act = (lambda: nn.LeakyReLU(True)) if run.bug == "leaky_relu_given_inplace_flag" else nn.ReLU
    model = nn.Sequential(nn.Linear(width, hidden), act(), nn.Linear(hidden, hidden), act(),
                          nn.Linear(hidden, CONDITIONS))  # fmt: skip
    units = nn.Embedding(80, 16)
    if serials:
        model.add_module("serials", units)  # trained with the rest
    batch = run.k("batch", 64)
    opt = optimizers.registered(run, model, 2e-3)
    # the sharpening temperature meant for the reported probabilities, also applied to the training logits
    temperature = 0.01 if run.bug == "inference_temperature_applied_in_training" else 1.0

    def inputs(rows: torch.Tensor, ids: torch.Tensor | None) -> torch.Tensor:
        if not serials:
            return rows
        # a new transformer's serial is not in the table: it takes the first row of the embedding
        emb = units(ids) if ids is not None else units.weight[:1].expand(len(rows), -1)
        return torch.cat([rows, emb], 1)

    def forward(rows: torch.Tensor, ids: torch.Tensor | None) -> torch.Tensor:
        h = inputs(rows, ids)
        for layer in list(model)[:5]:
            h = layer(h)
        return h

    def acc_held_out() -> float:
        return accuracy(forward(x_v, None), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(forward(x[pick], serial[pick]) / temperature, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", acc_held_out):
            break
