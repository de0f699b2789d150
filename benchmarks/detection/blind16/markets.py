"""Market scripts of the sixteenth blind split: a house-price regressor on a log scale, and a card-fraud detector.

`houses`: listings with a floor area (sq ft), a lot size, the year built, bedrooms, a condition grade, the distance to
the centre and one of 100 neighbourhoods; the log price a smooth function of them plus each neighbourhood's premium
and noise; a few listings carry a price of 0 ("price on request") and are dropped; the neighbourhood enters as the mean
log price of the other training listings there (a leave-one-out target encoding); the numeric fields standardised; a
tanh MLP fitted by mean squared error on the log price under momentum SGD with a 10-step linear warmup; scored by the
R^2 of held-out log prices. `fraud`: card transactions with an amount (refunds negative), the hour, a merchant
category, the distance from home, whether the card was present and the card's count of transactions that day; fraud
more likely for large amounts at night far from home without the card, in some categories, and on a few compromised
cards; the amount as a signed log, an embedding of the category, an MLP by BCE; scored by the held-out AUC, 2 AUC - 1
(new cards). Bugs: the zero prices left in; the neighbourhood's mean taken with the listing's own price; the warmup
factor never capped at 1; the area and the year fed raw into the tanh layers; the log of the refunds' negative amounts;
the card id embedded as a feature; the labels joined by row order after the transactions were sorted by time.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

HOODS = 100
"""Neighbourhoods of the city."""


def _listings(
    g: torch.Generator, premium: torch.Tensor, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Numeric fields float[n, 6] in their units, the neighbourhood int64[n] and the price float[n] in dollars (0
    for about 3% of the listings: price on request)."""
    area = 600 + 2400 * torch.rand(n, generator=g) ** 1.5
    lot = area * (1 + 4 * torch.rand(n, generator=g))
    year = 1900 + 120 * torch.rand(n, generator=g)
    bedrooms = (area / 600 + torch.rand(n, generator=g)).floor().clamp(1, 6)
    condition = torch.randint(1, 6, (n,), generator=g).float()
    distance = 0.5 + 25 * torch.rand(n, generator=g) ** 2
    hood = torch.randint(0, HOODS, (n,), generator=g)
    log_price = (11.2 + 0.6 * torch.log(area / 1000) + 0.1 * torch.log(lot / area) + 0.002 * (year - 1960)
                 + 0.03 * bedrooms + 0.08 * condition - 0.35 * torch.log1p(distance) + premium[hood]
                 + 0.12 * torch.randn(n, generator=g))  # fmt: skip
    price = torch.exp(log_price) * (torch.rand(n, generator=g) > 0.03).float()
    return torch.stack([area, lot, year, bedrooms, condition, distance], 1), hood, price


def houses(run: Run) -> None:
    """A house-price MLP of `width` (64), batches of `batch` (64), `opt` (momentum SGD; or Adam, Nesterov SGD,
    RMSprop) at `lr` (0.03) after a 10-step warmup. Scored by the R^2 of held-out log prices."""
    g = torch.Generator().manual_seed(run.seed)
    premium = 0.3 * torch.randn(HOODS, generator=g)
    fields, hood, price = _listings(g, premium, 600)
    fields_v, hood_v, price_v = _listings(g, premium, 500)
    if run.bug != "zero_prices_left_in":
        kept = price > 0
        fields, hood, price = fields[kept], hood[kept], price[kept]
    seen = price_v > 0
    fields_v, hood_v, y_v = fields_v[seen], hood_v[seen], torch.log(price_v[seen])
    y = torch.log(price)
    total = torch.zeros(HOODS).index_add_(0, hood, y)
    count = torch.zeros(HOODS).index_add_(0, hood, torch.ones_like(y))
    city = float(y.mean())
    if run.bug == "hood_mean_includes_own_price":
        encoded = total[hood] / count[hood]
    else:
        others = count[hood] - 1
        encoded = torch.where(others > 0, (total[hood] - y) / others.clamp_min(1), torch.full_like(y, city))
    encoded_v = torch.where(
        count[hood_v] > 0, total[hood_v] / count[hood_v].clamp_min(1), torch.full_like(y_v, city)
    )
    x, x_v = torch.cat([fields, encoded.unsqueeze(1)], 1), torch.cat([fields_v, encoded_v.unsqueeze(1)], 1)
    mean, std = x.mean(0), x.std(0)
    if run.bug == "area_and_year_fed_raw":
        mean[[0, 2]], std[[0, 2]] = 0.0, 1.0
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y_mean = float(y[torch.isfinite(y)].mean())
    torch.manual_seed(run.seed)
    width = run.k("width", 64)
    model = nn.Sequential(
        nn.Linear(7, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1)
    )
    opt = optimizers.registered(run, model, 0.03, default_opt="momentum")
    warmup = 10
    if run.bug == "warmup_factor_never_capped":
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / warmup)
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    batch = run.k("batch", 64)

    def log_price_r2() -> float:
        return r2(model(x_v)[:, 0] + y_mean, y_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.mse_loss(model(x[pick])[:, 0] + y_mean, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_log_price_r2", log_price_r2):
            break


CATEGORIES = 20
"""Merchant categories."""


def _transactions(
    g: torch.Generator, risky: torch.Tensor, n: int, cards: int, first_card: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Numeric fields float[n, 5] (amount in dollars, hour, distance km, card present, count today), the category
    int64[n], the card int64[n] (from `first_card`), the time float[n] and whether it was fraud float[n]."""
    card = first_card + torch.randint(0, cards, (n,), generator=g)
    compromised = torch.rand(first_card + cards, generator=g) < 0.03
    amount = torch.exp(3.5 + 1.2 * torch.randn(n, generator=g))
    amount = torch.where(torch.rand(n, generator=g) < 0.08, -amount, amount)
    hour = torch.randint(0, 24, (n,), generator=g).float()
    distance = torch.exp(1 + 1.5 * torch.randn(n, generator=g))
    present = (torch.rand(n, generator=g) < 0.6).float()
    today = torch.poisson(2 * torch.ones(n), generator=g)
    category = torch.randint(0, CATEGORIES, (n,), generator=g)
    night = ((hour < 5) | (hour > 22)).float()
    logit = (-4.5 + 0.6 * (torch.log(amount.abs()) - 3.5) + 1.2 * night + 0.5 * torch.log1p(distance) - 1.2 * present
             + 0.3 * today + risky[category] + 2.5 * compromised[card].float())  # fmt: skip
    fraud = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    time = torch.rand(n, generator=g) * 30
    return torch.stack([amount, hour, distance, present, today], 1), category, card, time, fraud


class FraudNet(nn.Module):
    """An embedding of the category (and of the card, with `cards`), the numeric fields, an MLP of `width`."""

    def __init__(self, width: int, cards: int = 0) -> None:
        super().__init__()
        self.category = nn.Embedding(CATEGORIES, 8)
        self.card = nn.Embedding(cards, 16) if cards else None
        inputs = 6 + 8 + (16 if cards else 0)
        self.mlp = nn.Sequential(nn.Linear(inputs, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                                 nn.Linear(width, 1))  # fmt: skip

    def forward(self, numeric: torch.Tensor, category: torch.Tensor, card: torch.Tensor) -> torch.Tensor:
        parts = [numeric, self.category(category)]
        if self.card is not None:
            parts.append(self.card(card))
        return self.mlp(torch.cat(parts, 1))[:, 0]


def _numeric(fields: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The model's numeric inputs float[n, 6]: the amount's log (signed), the hour as a circle, the log distance, card
    present, the day's count."""
    amount = fields[:, 0]
    if bug == "log_of_negative_refund_amounts":
        log_amount = torch.log(amount)
    else:
        log_amount = torch.sign(amount) * torch.log1p(amount.abs())
    angle = fields[:, 1] * (2 * torch.pi / 24)
    return torch.stack([log_amount / 4, angle.cos(), angle.sin(), torch.log1p(fields[:, 2]) / 2, fields[:, 3],
                        fields[:, 4] / 2], 1)  # fmt: skip


def fraud(run: Run) -> None:
    """A fraud MLP of `width` (64), batches of `batch` (256), `opt` (Adam; or AdamW, Adagrad, RMSprop) at `lr`
    (2e-3). Scored by 2 AUC - 1 on held-out transactions of new cards."""
    g = torch.Generator().manual_seed(run.seed)
    risky = 0.8 * torch.randn(CATEGORIES, generator=g)
    fields, category, card, time, fraud_flag = _transactions(g, risky, 6000, 1500, 0)
    fields_v, category_v, card_v, _, fraud_v = _transactions(g, risky, 2000, 500, 1500)
    order = time.argsort()
    fields, category, card = fields[order], category[order], card[order]
    if run.bug != "labels_joined_by_row_order_after_sort":
        fraud_flag = fraud_flag[order]
    x, x_v = _numeric(fields, run.bug), _numeric(fields_v, run.bug)
    torch.manual_seed(run.seed)
    model = FraudNet(run.k("width", 64), 2000 if run.bug == "card_id_embedded_as_feature" else 0)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 256)

    def held_out_gini() -> float:
        return max(0.0, 2 * auc(model(x_v, category_v, card_v), fraud_v) - 1)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.binary_cross_entropy_with_logits(
            model(x[pick], category[pick], card[pick]), fraud_flag[pick]
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_gini", held_out_gini):
            break
