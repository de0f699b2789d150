"""Record-level scripts of the fifteenth blind split: a discrete-time survival model of monthly hazards, and a denoising
autoencoder imputing missing values of a table.

`hazard`: patients with 8 covariates, a monthly hazard over 12 months from a logistic model with a nonlinear risk
score and a rising baseline, follow-up censored at a uniform time that is shorter for the patients with a high seventh
covariate; an MLP gives one hazard logit a month, trained by the person-period likelihood (BCE of each month the
patient was at risk: 0 for the months survived, 1 for the month of the event, nothing after); scored by the
concordance of the predicted expected survival time with the held-out patients' true (uncensored) event times
(2 C - 1, clipped at 0). `imputer`: 10 columns in their own units (a level and a spread each) from 3 latent factors through a
mild nonlinearity, 25% of the values missing completely at random; standardised by the observed values' statistics,
missing ones filled with 0 and flagged by a mask beside them; a denoising autoencoder trained to restore observed
values hidden at random (a fifth of them a batch), the loss on the hidden values only; scored by the R^2 of the
held-out table's truly missing values (its mean imputation scores 0). Bugs: censored patients counted as events; the months
after the event left in the likelihood as survived; the monthly logits softmaxed over the months as if they were
hazards; the event flag copied to every month of the person-period rows; the event's own month left out of the months
at risk; the inputs never corrupted; the statistics computed from the zero-filled columns; the mask dropped from the
input; the rows shuffled after the mask was taken, so the mask belongs to other rows.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

MONTHS = 12
"""Months of follow-up, one hazard each."""


def _patients(
    g: torch.Generator, w: torch.Tensor, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Covariates float[n, 8], observed month int64[n] (0-based), whether it was an event float[n], and the true
    event month int64[n] (MONTHS when none happened in follow-up)."""
    x = torch.randn(n, 8, generator=g)
    risk = x @ w + 0.5 * x[:, 0] * x[:, 1] - 0.4 * x[:, 2] ** 2
    base = torch.linspace(-3.2, -2.0, MONTHS)
    hazard = torch.sigmoid(base + risk.unsqueeze(1))
    happened = torch.rand(n, MONTHS, generator=g) < hazard
    event_month = torch.where(happened.any(1), happened.float().argmax(1), torch.full((n,), MONTHS))
    limit = MONTHS * torch.rand(n, generator=g) * torch.where(x[:, 6] > 0.5, 0.6, 1.4)
    censor_month = limit.long().clamp(max=MONTHS)
    observed = torch.minimum(event_month, censor_month).clamp(max=MONTHS - 1)
    event = (event_month <= censor_month) & (event_month < MONTHS)
    return x, observed, event.float(), event_month


def _concordance(score: torch.Tensor, time: torch.Tensor) -> float:
    """Share of pairs with different times ordered alike by `score` (higher: longer) and by `time`."""
    ds, dt = score.unsqueeze(1) - score.unsqueeze(0), time.unsqueeze(1) - time.unsqueeze(0)
    pairs = dt != 0
    agree = ((ds * dt.float()) > 0).float() + 0.5 * (ds == 0).float()
    return float(agree[pairs].mean())


def hazard(run: Run) -> None:
    """A monthly-hazard MLP of `width` (64), batches of `batch` (256), `opt` (Adam; or AdamW, Adagrad, NAdam) at `lr`
    (2e-3), with dropout `dropout` (0). Scored by the held-out concordance of the expected survival time."""
    g = torch.Generator().manual_seed(run.seed)
    w = torch.randn(8, generator=g) * torch.tensor([0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.0, 0.0])
    x, observed, event, _ = _patients(g, w, 4000)
    x_v, _, _, truth_v = _patients(g, w, 600)
    if run.bug == "censored_counted_as_events":
        event = torch.ones_like(event)
    months = torch.arange(MONTHS)
    if run.bug == "event_month_excluded_from_risk_set":
        at_risk = (months.unsqueeze(0) < observed.unsqueeze(1)).float()
    else:
        at_risk = (months.unsqueeze(0) <= observed.unsqueeze(1)).float()
    if run.bug == "months_after_event_kept":
        at_risk = torch.ones_like(at_risk)
    died = (months.unsqueeze(0) == observed.unsqueeze(1)).float() * event.unsqueeze(1)
    if run.bug == "event_flag_copied_to_every_month":
        died = event.unsqueeze(1).expand(-1, MONTHS).clone()
    torch.manual_seed(run.seed)
    width = run.k("width", 64)
    model = nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Dropout(run.k("dropout", 0.0)), nn.Linear(width, width),
                          nn.ReLU(), nn.Linear(width, MONTHS))  # fmt: skip
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 256)

    def hazards(logits: torch.Tensor) -> torch.Tensor:
        if run.bug == "logits_softmaxed_over_months":
            return logits.softmax(1)
        return torch.sigmoid(logits)

    def concordance() -> float:
        survival = torch.cumprod(1 - hazards(model(x_v)), 1)
        if not torch.isfinite(survival).all():
            return 0.0
        return max(0.0, 2 * _concordance(survival.sum(1), truth_v) - 1)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        h = hazards(model(x[pick])).clamp(1e-6, 1 - 1e-6)
        nll = F.binary_cross_entropy(h, died[pick], reduction="none")
        loss = (nll * at_risk[pick]).sum() / at_risk[pick].sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_concordance", concordance):
            break


COLUMNS = 10
"""Columns of the table."""


def _table(
    g: torch.Generator, mix: tuple[torch.Tensor, torch.Tensor], n: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Complete values float[n, COLUMNS] in their own units and which are observed (bool[n, COLUMNS], 75%)."""
    z = torch.randn(n, 3, generator=g)
    clean = z @ mix[0] + 0.3 * torch.tanh(z @ mix[0]) ** 2 + 0.25 * torch.randn(n, COLUMNS, generator=g)
    level = torch.tensor([50.0, 3.0, 1200.0, 0.5, 20.0, 7.0, 300.0, 1.0, 65.0, 10.0])
    values = level + mix[1] * clean
    return values, torch.rand(n, COLUMNS, generator=g) > 0.25


class Imputer(nn.Module):
    """A denoising autoencoder: the filled values and the mask (or only the values) -> `width` -> values."""

    def __init__(self, width: int, with_mask: bool) -> None:
        super().__init__()
        self.with_mask = with_mask
        inputs = 2 * COLUMNS if with_mask else COLUMNS
        self.net = nn.Sequential(nn.Linear(inputs, width), nn.ReLU(), nn.Linear(width, width // 2), nn.ReLU(),
                                 nn.Linear(width // 2, width), nn.ReLU(), nn.Linear(width, COLUMNS))  # fmt: skip

    def forward(self, values: torch.Tensor, seen: torch.Tensor) -> torch.Tensor:
        filled = values * seen
        return self.net(torch.cat([filled, seen.float()], 1) if self.with_mask else filled)


def imputer(run: Run) -> None:
    """A denoising imputer of `width` (64), batches of `batch` (128), `opt` (Adam; or AdamW, RMSprop, Adamax) at `lr`
    (2e-3), observed values hidden at rate `hide` (0.2). Scored by the R^2 of the held-out missing values."""
    g = torch.Generator().manual_seed(run.seed)
    mix = (torch.randn(3, COLUMNS, generator=g), torch.exp(torch.randn(COLUMNS, generator=g)))
    raw, seen = _table(g, mix, 3000)
    raw_v, seen_v = _table(g, mix, 600)
    if run.bug == "stats_from_zero_filled_columns":
        filled = torch.where(seen, raw, torch.zeros(()))
        mean, std = filled.mean(0), filled.std(0)
    else:
        count = seen.sum(0)
        mean = torch.where(seen, raw, torch.zeros(())).sum(0) / count
        std = (torch.where(seen, raw - mean, torch.zeros(())) ** 2).sum(0).div(count - 1).sqrt()
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    x = torch.where(seen, x, torch.zeros(()))
    if run.bug == "mask_rows_out_of_step_with_values":
        x = x[torch.randperm(len(x), generator=g)]
    truth_v, missing_v = x_v.clone(), ~seen_v
    x_v = torch.where(seen_v, x_v, torch.zeros(()))
    torch.manual_seed(run.seed)
    model = Imputer(run.k("width", 64), run.bug != "mask_dropped_from_input")
    opt = optimizers.registered(run, model, 2e-3)
    batch, hide = run.k("batch", 128), run.k("hide", 0.2)

    def missing_r2() -> float:
        pred = model(x_v, seen_v)[missing_v]
        truth = truth_v[missing_v]
        if not torch.isfinite(pred).all():
            return 0.0
        return max(0.0, 1 - float(((pred - truth) ** 2).sum() / ((truth - truth.mean()) ** 2).sum()))

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        values, observed = x[pick], seen[pick]
        hidden = observed & (torch.rand(observed.shape, generator=run.gen) < hide)
        shown = observed if run.bug == "inputs_never_corrupted" else observed & ~hidden
        err = (model(values, shown) - values) ** 2
        loss = err[hidden].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_missing_r2", missing_r2):
            break
