"""Travel scripts of the twenty-first blind split: a hotel-booking cancellation predictor (an MLP over embedded
booking fields) and a flight-delay regressor.

`hotels`: bookings with a lead time in days (0 for walk-ins and same-day bookings, which are common), nights, adults,
children, the average daily rate, earlier cancellations, special requests, the deposit type, the market segment and the
guest's country (one of 30); a booking is cancelled by a logistic model of a long lead time, a refundable deposit, an
online-agency segment, earlier cancellations and few special requests; the numeric fields (the lead time as log(1 +
days)) standardised by the training bookings, the three categories embedded, an MLP of two ReLU layers and a linear
output; BCE with logits; scored by the held-out AUC. The hotel's export also carries the reservation status (cancelled
or checked out), which only exists once the stay is over. `flights`: flights with the scheduled hour, the day of week,
the carrier (one of 10), the origin airport (one of 40), the distance, a weather severity and the inbound aircraft's
delay; the arrival delay in minutes (negative for early arrivals) from the inbound delay, the weather, a busy evening
bank and the airport's and carrier's own delays, heavy-tailed; the target as a signed log(1 + |minutes|), an MLP over
the standardised numbers, the hour as sine and cosine and the embedded carrier and airport, MSE under a linear warmup
of 30 steps; scored by the held-out R^2 of the signed log delay. Bugs: the lead time logged without the one; the
reservation status left among the features; Adam run at an SGD recipe's rate; the MLP's `nn.Sequential` ending in a
ReLU before the logits; Adam's beta of 0.999 read as the momentum of the Nesterov SGD run; the delays logged by `log1p` without their sign; every
linear layer's weights initialised to zero by an init function meant for biases.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.torch_real.loop import make_optimizer

COUNTRIES, SEGMENTS, DEPOSITS = 30, 5, 3
"""Guest countries, market segments (online agency first) and deposit types (no deposit, refundable, non-refund)."""


def registered(
    run: Run, model: nn.Module, default_lr: float, lr: float | None = None, default_opt: str = "adam"
) -> torch.optim.Optimizer:
    """The optimizer named by the `opt` knob (or `default_opt`) over `model` at `lr` (or the `lr` knob, or
    `default_lr`), registered with the hook together with the model."""
    name = run.k("opt", default_opt)
    opt = make_optimizer(name, model.parameters(), lr if lr is not None else run.k("lr", default_lr),
                         weight_decay=1e-4 if name == "adamw" else 0.0)  # fmt: skip
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    return opt


def _bookings(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Numeric fields float[n, 7] (lead days, nights, adults, children, daily rate, earlier cancellations, special
    requests), categories long[n, 3] (deposit, segment, country), the reservation status float[n] (1 cancelled, 0
    checked out) and the cancellation float[n] (the same thing, known once the stay is over)."""
    same_day = torch.rand(n, generator=g) < 0.15
    lead = torch.where(
        same_day, 0.0, torch.floor(torch.exp(3.5 + 1.2 * torch.randn(n, generator=g))).clamp(0, 700)
    )
    nights = 1 + torch.poisson(torch.full((n,), 2.0), generator=g)
    adults = 1 + (torch.rand(n, generator=g) < 0.7).float()
    children = torch.poisson(torch.full((n,), 0.2), generator=g)
    rate = 60 + 30 * adults + 15 * children + 25 * torch.randn(n, generator=g).abs()
    earlier = torch.poisson(torch.full((n,), 0.15), generator=g)
    requests = torch.poisson(torch.full((n,), 0.8), generator=g)
    deposit = torch.multinomial(torch.tensor([0.7, 0.1, 0.2]), n, True, generator=g)
    segment = torch.multinomial(torch.tensor([0.45, 0.2, 0.15, 0.1, 0.1]), n, True, generator=g)
    country = torch.multinomial(torch.linspace(2.0, 0.2, COUNTRIES), n, True, generator=g)
    country_risk = torch.sin(torch.arange(COUNTRIES).float() * 1.7)
    logit = (0.9 * torch.log1p(lead) - 3.5 + 1.2 * (deposit == 2).float() * torch.log1p(lead) / 3
             + 0.8 * (segment == 0).float() + 1.0 * earlier.clamp(max=2) - 0.6 * requests
             + 0.7 * country_risk[country] - 1.5 * (deposit == 1).float())  # fmt: skip
    cancelled = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    num = torch.stack([lead, nights, adults, children, rate, earlier, requests], 1)
    return num, torch.stack([deposit, segment, country], 1), cancelled, cancelled.clone()


class BookingMLP(nn.Module):
    """Embedded deposit, segment and country with the numbers (and the status, if fed), two ReLU layers of
    `hidden`, a linear output (followed by a ReLU when `relu_end`)."""

    def __init__(self, numeric: int, hidden: int, relu_end: bool = False) -> None:
        super().__init__()
        self.deposit, self.segment = nn.Embedding(DEPOSITS, 3), nn.Embedding(SEGMENTS, 3)
        self.country = nn.Embedding(COUNTRIES, 6)
        layers: list[nn.Module] = [nn.Linear(numeric + 12, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                   nn.Linear(hidden, 1)]  # fmt: skip
        if relu_end:
            layers.append(nn.ReLU())  # every block of the stack written as Linear + ReLU, the last one too
        self.mlp = nn.Sequential(*layers)

    def forward(self, num: torch.Tensor, cat: torch.Tensor) -> torch.Tensor:
        emb = [self.deposit(cat[:, 0]), self.segment(cat[:, 1]), self.country(cat[:, 2])]
        return self.mlp(torch.cat([num, *emb], -1))[:, 0]


def hotels(run: Run) -> None:
    """A cancellation MLP of `hidden` (64), batches of `batch` (128), `opt` (Adam; or AdamW, RMSprop, momentum SGD)
    at `lr` (1e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    num, cat, status, y = _bookings(g, 4000)
    num_v, cat_v, _, y_v = _bookings(g, 1500)
    status_v = torch.zeros(len(y_v))  # the bookings to score have not reached their stay: no status yet

    def prepared(fields: torch.Tensor, st: torch.Tensor) -> torch.Tensor:
        lead = (
            torch.log(fields[:, :1])
            if run.bug == "lead_time_logged_without_one"
            else torch.log1p(fields[:, :1])
        )
        cols = [lead, fields[:, 1:]]
        if run.bug == "reservation_status_left_in":
            cols.append(st.unsqueeze(1))  # the export's reservation_status column, never dropped
        return torch.cat(cols, 1)

    raw, raw_v = prepared(num, status), prepared(num_v, status_v)
    mean, std = raw.mean(0), raw.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    torch.manual_seed(run.seed)
    model = BookingMLP(x.shape[1], run.k("hidden", 64), run.bug == "sequential_ends_in_relu")
    # the bug: Adam run at the 0.5 of the SGD recipe the script started from
    opt = registered(run, model, 1e-3, 0.5 if run.bug == "adam_given_sgd_rate" else None)
    batch = run.k("batch", 128)

    def auc_held_out() -> float:
        return auc(model(x_v, cat_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick], cat[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


CARRIERS, AIRPORTS = 10, 40


def _flights(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Numeric fields float[n, 5] (scheduled hour, day of week, distance in miles, weather severity, inbound delay in
    minutes), carrier and origin long[n, 2], the arrival delay in minutes float[n] (negative when early)."""
    hour = torch.randint(5, 23, (n,), generator=g).float()
    day = torch.randint(0, 7, (n,), generator=g).float()
    distance = 200 + 1800 * torch.rand(n, generator=g)
    weather = -0.5 * torch.log(torch.rand(n, generator=g))  # exponential, mean 0.5
    inbound = torch.where(
        torch.rand(n, generator=g) < 0.6, 0.0, torch.exp(2.5 + 1.0 * torch.randn(n, generator=g))
    )
    carrier = torch.randint(0, CARRIERS, (n,), generator=g)
    origin = torch.randint(0, AIRPORTS, (n,), generator=g)
    carrier_delay = 6 * torch.cos(torch.arange(CARRIERS).float() * 2.1)
    airport_delay = 8 * torch.sin(torch.arange(AIRPORTS).float() * 0.9)
    evening = torch.exp(-((hour - 18) ** 2) / 8)
    delay = (0.8 * inbound + 25 * weather ** 1.5 + 15 * evening + carrier_delay[carrier] + airport_delay[origin]
             - 8 + 0.003 * distance + 6 * torch.randn(n, generator=g))  # fmt: skip
    return torch.stack([hour, day, distance, weather, inbound], 1), torch.stack([carrier, origin], 1), delay


def _signed_log(minutes: torch.Tensor) -> torch.Tensor:
    return torch.sign(minutes) * torch.log1p(minutes.abs())


class DelayMLP(nn.Module):
    """Embedded carrier and airport with the numbers, two ReLU layers of `hidden`, a linear output."""

    def __init__(self, numeric: int, hidden: int) -> None:
        super().__init__()
        self.carrier, self.origin = nn.Embedding(CARRIERS, 4), nn.Embedding(AIRPORTS, 8)
        self.mlp = nn.Sequential(nn.Linear(numeric + 12, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, num: torch.Tensor, cat: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([num, self.carrier(cat[:, 0]), self.origin(cat[:, 1])], -1))[:, 0]


def flights(run: Run) -> None:
    """A delay MLP of `hidden` (64), batches of `batch` (128), `opt` (Adam; or Nesterov SGD, RMSprop, Adagrad) at
    `lr` (2e-3) after a linear warmup of 30 steps. Scored by the held-out R^2 of the signed log delay."""
    g = torch.Generator().manual_seed(run.seed)
    num, cat, minutes = _flights(g, 4000)
    num_v, cat_v, minutes_v = _flights(g, 1500)

    def features(f: torch.Tensor) -> torch.Tensor:
        angle = 2 * math.pi * f[:, 0] / 24
        return torch.stack([angle.sin(), angle.cos(), f[:, 1], f[:, 2], f[:, 3], torch.log1p(f[:, 4])], 1)

    raw, raw_v = features(num), features(num_v)
    mean, std = raw.mean(0), raw.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    # the skewed delays on a log scale, keeping the sign of early arrivals (the bug: log1p of the minutes as they are)
    y = torch.log1p(minutes) if run.bug == "delays_log1p_with_early_arrivals" else _signed_log(minutes)
    y_v = _signed_log(minutes_v)
    torch.manual_seed(run.seed)
    model = DelayMLP(x.shape[1], run.k("hidden", 64))

    def init_weights(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            if run.bug == "init_fills_weights_with_zero":
                m.weight.data.fill_(0.0)  # the bias line copied onto the weight
            nn.init.zeros_(m.bias)

    model.apply(init_weights)
    if run.bug == "adam_beta_given_as_sgd_momentum":
        # the config's `beta: 0.999`, written for the Adam run, read as the momentum of the Nesterov one
        opt = torch.optim.SGD(model.parameters(), lr=run.k("lr", 2e-3), momentum=0.999, nesterov=True)
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = registered(run, model, 2e-3)
    warmup = 30
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    batch = run.k("batch", 128)

    def r2_held_out() -> float:
        return r2(model(x_v, cat_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick], cat[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
