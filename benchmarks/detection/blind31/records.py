"""Record scripts of the thirty-first blind split: a student-dropout predictor from weekly course logs and an insurance
claim-severity regressor with a gamma deviance.

`dropout`: 10 weeks of a course's logs per student (logins, video minutes, forum posts, quizzes submitted, the mean
quiz score), exported as one table per field (float[n, FIELDS, WEEKS]); a hidden motivation shapes the engagement, and a
student who drops out fades over the weeks before leaving and is silent afterwards; the prediction is made at the end
of week 6 from the six weeks seen so far, log1p and standardised, a GRU over the weeks, a linear layer on its last
state; BCE; scored by the held-out AUC. `claims`: paid claims with the driver's age, the vehicle's age and value, the
region (12), the vehicle type (5) and the claim type (collision, theft, glass, liability) and the number of claims
settled together; the average amount per claim gamma-distributed around a log-linear mean with an age curve; claims
closed without payment are in the export and are dropped before modelling severity; a ReLU MLP with embeddings whose
output is the log of the mean, the gamma deviance weighted by the claim count; scored by the share of the held-out
deviance explained. Bugs: the training features counted over the whole course while the students scored have six
weeks; the field-major table viewed as week-major; a cyclic rate's peak typed from an image recipe; the claims closed
without payment kept; the deviance's arguments swapped; the amount column passed as the weights.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

WEEKS, FIELDS, SEEN = 10, 5, 6
"""Weeks of the course, fields logged each week, weeks seen when the prediction is made."""


def _students(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Weekly logs float[n, FIELDS, WEEKS] (logins, video minutes, posts, quizzes, mean score), dropout float[n] and
    the week of leaving long[n] (WEEKS for those who stay)."""
    motivation = torch.randn(n, generator=g)
    leaves = torch.rand(n, generator=g) < torch.sigmoid(-0.8 - 1.2 * motivation)
    # the week of leaving (excluded), WEEKS for those who stay
    last = torch.where(leaves, torch.randint(4, WEEKS, (n,), generator=g), WEEKS)
    week = torch.arange(WEEKS).unsqueeze(0)
    # engagement fades over the four weeks before leaving and is nil afterwards
    fade = ((last.unsqueeze(1) - week).float() / 4).clamp(0, 1)
    level = torch.exp(0.4 * motivation).unsqueeze(1) * fade * (0.7 + 0.6 * torch.rand(n, WEEKS, generator=g))
    logins = torch.poisson(4 * level, generator=g)
    minutes = torch.poisson(60 * level, generator=g) * (logins > 0)
    posts = torch.poisson(0.8 * level * (1 + motivation.clamp(0).unsqueeze(1)), generator=g)
    quizzes = (torch.rand(n, WEEKS, generator=g) < (0.9 * level).clamp(max=0.95)).float()
    score = (60 + 12 * motivation.unsqueeze(1) + 10 * torch.randn(n, WEEKS, generator=g)).clamp(
        0, 100
    ) * quizzes
    return torch.stack([logins, minutes, posts, quizzes, score], 1), leaves.float(), last


class DropoutGRU(nn.Module):
    """A GRU of `hidden` over the weeks' fields, a linear layer on its last state."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(FIELDS, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, weeks: torch.Tensor) -> torch.Tensor:
        _, h = self.gru(weeks)
        return self.head(h[-1])[:, 0]


def dropout(run: Run) -> None:
    """A dropout GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (3e-3), optionally on a triangular cyclic rate (`cyclic`, peaking at ten times `lr` every 50 steps). Scored by the
    held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    logs, y, last = _students(g, 3000)
    logs_v, y_v, _ = _students(g, 1000)
    if run.bug == "label_taken_at_prediction_week":
        y = (last <= SEEN).float()  # the status column as of the prediction week, not at the course's end
    # the students scored are at the end of week 6: their later weeks have not happened yet
    logs_v[:, :, SEEN:] = 0
    # the training export: one table per field, the weeks up to the prediction week (the bug: the whole course)
    weeks_kept = WEEKS if run.bug == "activity_counted_past_prediction_week" else SEEN
    logs, logs_v = logs[:, :, :weeks_kept], logs_v[:, :, :weeks_kept]
    if run.bug == "fields_fed_raw_to_gru":
        # the log and the standardisation left to a pipeline step that the training script never ran
        mean, std = torch.zeros(1, FIELDS, 1), torch.ones(1, FIELDS, 1)
        mean_v, std_v = mean, std
    elif run.bug == "standardised_per_student_over_weeks":
        # each student's fields scaled by their own mean and spread over the weeks
        logs, logs_v = torch.log1p(logs), torch.log1p(logs_v)
        mean, std = logs.mean(2, keepdim=True), logs.std(2, keepdim=True) + 1e-6
        mean_v, std_v = logs_v.mean(2, keepdim=True), logs_v.std(2, keepdim=True) + 1e-6
    else:
        logs, logs_v = torch.log1p(logs), torch.log1p(logs_v)
        mean, std = logs.mean((0, 2), keepdim=True), logs.std((0, 2), keepdim=True)
        mean_v, std_v = mean, std
    x, x_v = ((logs - mean) / std).transpose(1, 2), ((logs_v - mean_v) / std_v).transpose(1, 2)
    n = len(y)
    torch.manual_seed(run.seed)
    model = DropoutGRU(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    sched = None
    if run.k("cyclic", False):
        base = opt.param_groups[0]["lr"]
        sched = torch.optim.lr_scheduler.CyclicLR(opt, base_lr=base, max_lr=10 * base, step_size_up=25)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(n, batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


REGIONS, VEHICLES, CLAIM_TYPES = 12, 5, 4


def _claims(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Numeric fields float[n, 5] (driver age, vehicle age, vehicle value, the first and the final case reserve),
    region/vehicle/claim type long[n, 3], the
    number of claims settled together float[n], the average paid per claim float[n] (0 when closed unpaid)."""
    age = 18 + 62 * torch.rand(n, generator=g)
    vehicle_age = torch.randint(0, 20, (n,), generator=g).float()
    value = torch.exp(9.8 + 0.5 * torch.randn(n, generator=g))
    region = torch.randint(0, REGIONS, (n,), generator=g)
    vehicle = torch.randint(0, VEHICLES, (n,), generator=g)
    kind = torch.multinomial(torch.tensor([0.5, 0.1, 0.25, 0.15]), n, True, generator=g)
    count = 1 + torch.poisson(0.3 * torch.ones(n), generator=g)
    region_eff = torch.linspace(-0.4, 0.4, REGIONS)[torch.randperm(REGIONS, generator=g)]
    kind_eff = torch.tensor([0.0, 0.9, -1.3, 0.7])
    log_mean = (7.2 + 0.45 * (torch.log(value) - 9.8) - 0.03 * vehicle_age + 0.25 * ((age - 45) / 20) ** 2
                + region_eff[region] + kind_eff[kind] + 0.1 * vehicle.float())  # fmt: skip
    shape = 2.0 * count  # the average of several claims spreads less
    amount = torch.distributions.Gamma(shape, shape / torch.exp(log_mean)).sample()
    amount = torch.where(torch.rand(n, generator=g) < 0.07, 0.0, amount)  # closed without payment
    # the adjuster's first case reserve per claim, a rough guess at the amount; at settlement it is set to the amount
    reserve = torch.exp(log_mean + 0.8 * torch.randn(n, generator=g))
    final = torch.where(amount > 0, amount, reserve)
    fields = torch.stack([age, vehicle_age, value, reserve, final], 1)
    return fields, torch.stack([region, vehicle, kind], 1), count, amount


class SeverityMLP(nn.Module):
    """Embeddings of the region, vehicle and claim type with the standardised numbers, a ReLU MLP of `hidden` twice,
    one output: the log of the mean amount (its bias started at `log_start`)."""

    def __init__(self, hidden: int, log_start: float) -> None:
        super().__init__()
        self.region, self.vehicle, self.kind = (
            nn.Embedding(REGIONS, 4),
            nn.Embedding(VEHICLES, 3),
            nn.Embedding(CLAIM_TYPES, 3),
        )
        self.mlp = nn.Sequential(nn.Linear(4 + 10, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip
        if log_start:
            with torch.no_grad():
                self.mlp[-1].bias.fill_(log_start)

    def forward(self, num: torch.Tensor, cat: torch.Tensor) -> torch.Tensor:
        emb = [self.region(cat[:, 0]), self.vehicle(cat[:, 1]), self.kind(cat[:, 2])]
        return self.mlp(torch.cat([num, *emb], 1))[:, 0]


def gamma_deviance(y: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """The unit gamma deviance 2 (y/mu - log(y/mu) - 1) of each claim."""
    return 2 * (y / mu - torch.log(y / mu) - 1)


def claims(run: Run) -> None:
    """A severity MLP of `hidden` (64), batches of `batch` (256), `opt` (Adam; or momentum SGD, Adagrad, NAdam) at `lr`
    (3e-3). Scored by the share of the held-out gamma deviance explained."""
    g = torch.Generator().manual_seed(run.seed)
    num, cat, count, amount = _claims(g, 5000)
    num_v, cat_v, count_v, amount_v = _claims(g, 2000)
    if run.bug != "zero_payment_claims_kept":
        paid = amount > 0  # severity is modelled on paid claims; the unpaid go to the frequency model
        num, cat, count, amount = num[paid], cat[paid], count[paid], amount[paid]
    paid_v = amount_v > 0
    num_v, cat_v, count_v, amount_v = num_v[paid_v], cat_v[paid_v], count_v[paid_v], amount_v[paid_v]

    # the reserve known when a claim is scored is the first one (the bug: the training extract's final reserve)
    reserve_column = 4 if run.bug == "final_reserve_left_in_features" else 3

    def numbers(fields: torch.Tensor, reserve: int = 3) -> torch.Tensor:
        return torch.stack(
            [fields[:, 0], fields[:, 1], torch.log(fields[:, 2]), torch.log(fields[:, reserve])], 1
        )

    train_numbers = numbers(num, reserve_column)
    mean, std = train_numbers.mean(0), train_numbers.std(0)
    x, x_v = (train_numbers - mean) / std, (numbers(num_v) - mean) / std
    torch.manual_seed(run.seed)
    # the output bias starts at the log of the mean amount (the bug leaves that line out: it starts near 0)
    log_start = (
        0.0
        if run.bug == "output_bias_not_started_at_log_mean"
        else float(torch.log(amount[amount > 0].mean()))
    )
    model = SeverityMLP(run.k("hidden", 64), log_start)
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 256)
    # each row averages `count` claims and is weighted by it (the bug: by the amount column next to it)
    weight = amount if run.bug == "weights_given_amount_column" else count
    null_v = float((count_v * gamma_deviance(amount_v, amount_v.mean().expand_as(amount_v))).mean())

    def explained_held_out() -> float:
        dev = float((count_v * gamma_deviance(amount_v, torch.exp(model(x_v, cat_v)))).mean())
        return max(0.0, 1.0 - dev / null_v) if math.isfinite(dev) else 0.0

    for step in range(run.steps):
        pick = run.indices(len(amount), batch)
        mu = torch.exp(model(x[pick], cat[pick]))
        loss = (weight[pick] * gamma_deviance(amount[pick], mu)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_deviance_explained", explained_held_out):
            break
