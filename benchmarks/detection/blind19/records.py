"""Record scripts of the nineteenth blind split: a churn predictor (an LSTM over customers' event logs) and a
network-intrusion detector on flow records.

`churn`: each customer's log of 8-30 events (login, view, purchase, support call, complaint, downgrade) with the days
since the previous event (0 for events on the same day, which are common) and the amount spent; the customer churns by a
logistic model of the recent gaps, complaints and downgrades and a falling spend; the events' type one-hot, the log of
one plus the gap, the standardised amount and the amount over the customer's average basket, packed by length into an
LSTM whose final state feeds a linear layer; BCE; scored by the held-out AUC. `intrusion`: flow records of duration,
bytes each way, packets, a land flag (always 0 in the training capture), the destination port (one of 16 services), the
protocol and the TCP flag; the bytes per second (a flow of one packet, which has no duration, counted over a
millisecond); an attack is a short flow to a telnet, SMB or RDP port, a flood of half-open (S0) connections, or an
oversized ICMP flow; the numeric fields logged and standardised by the training capture (a field without spread divided
by 1), the port, protocol and flag embedded, an MLP with dropout 0.1; BCE with logits; scored by the held-out AUC. Bugs:
the average basket of a customer who never bought taken as 0/0; the LSTM's padded outputs read at the first event
instead of its final state; the training logs exported past the churn date, so churners' logs end with the closing
downgrade; the bytes per second of one-packet flows divided by their zero duration; the port fed as a number;
TensorFlow's keep probability of 0.9 given to `nn.Dropout` as the share dropped.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from benchmarks.detection.blind.harness import Run, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

EVENTS, TYPES = 30, 6
"""Longest log and event types (login, view, purchase, support call, complaint, downgrade)."""


def _logs(
    g: torch.Generator, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Event types long[n, EVENTS], gaps in days and amounts float[n, EVENTS], lengths long[n], churn float[n]."""
    lengths = torch.randint(8, EVENTS + 1, (n,), generator=g)
    risk = torch.rand(n, generator=g)  # a hidden propensity that shapes the late events
    base = torch.tensor([0.35, 0.3, 0.2, 0.08, 0.04, 0.03])
    late = torch.tensor([0.25, 0.2, 0.1, 0.15, 0.15, 0.15])
    position = torch.arange(EVENTS).unsqueeze(0) / lengths.unsqueeze(1)
    mix = (risk.unsqueeze(1) * (position > 0.6)).unsqueeze(-1)
    probs = (1 - mix) * base + mix * late
    types = torch.multinomial(probs.view(-1, TYPES), 1, generator=g).view(n, EVENTS)
    same_day = torch.rand(n, EVENTS, generator=g) < 0.3
    gaps = torch.poisson((2.0 + 8.0 * mix[..., 0]).expand(n, EVENTS).contiguous(), generator=g).masked_fill(
        same_day, 0
    )
    spend = 40 * torch.exp(0.5 * torch.randn(n, 1, generator=g)) * (1 - 0.6 * mix[..., 0])
    amounts = torch.where(types == 2, spend * torch.exp(0.2 * torch.randn(n, EVENTS, generator=g)), 0.0)
    valid = torch.arange(EVENTS).unsqueeze(0) < lengths.unsqueeze(1)
    recent = valid & (torch.arange(EVENTS).unsqueeze(0) >= (lengths - 8).unsqueeze(1))
    complaints = ((types >= 4) & recent).float().sum(1)
    recent_gap = (gaps * recent).sum(1) / 8
    buys = ((types == 2) & recent).float().sum(1)
    logit = 0.8 * complaints + 0.25 * (recent_gap - 3) - 0.5 * buys - 0.5
    churn = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    return types * valid, gaps * valid, amounts * valid, lengths, churn


class ChurnLSTM(nn.Module):
    """An LSTM of `hidden` over the packed events, a linear layer on its final state."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(TYPES + 3, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor, first_event: bool = False) -> torch.Tensor:
        packed = pack_padded_sequence(feats, lengths, batch_first=True, enforce_sorted=False)
        out, (h, _) = self.lstm(packed)
        if first_event:
            # the padded outputs read at index 0 of the time axis, taken for the last step of a batch-first tensor
            return self.head(pad_packed_sequence(out, batch_first=True)[0][:, 0])[:, 0]
        return self.head(h[-1])[:, 0]


def churn(run: Run) -> None:
    """A churn LSTM of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (3e-3), optionally clipped at norm `clip`. Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    types, gaps, amounts, lengths, y = _logs(g, 3000)
    if run.bug == "logs_cut_after_churn_date":
        # the training export runs to today, so a churned customer's log ends with the account's closing downgrade,
        # while the customers to score are cut at the date the prediction is made
        last = (lengths - 1).clamp(max=EVENTS - 1)
        closing = (y > 0) & (torch.rand(len(y), generator=g) < 0.9)
        rows = closing.nonzero()[:, 0]
        types[rows, last[rows]] = TYPES - 1
    types_v, gaps_v, amounts_v, lengths_v, y_v = _logs(g, 1000)
    bought = amounts[amounts > 0]
    mean, std = bought.mean(), bought.std()

    def features(t: torch.Tensor, gap: torch.Tensor, amount: torch.Tensor) -> torch.Tensor:
        spent = torch.where(amount > 0, (amount - mean) / std, 0.0)
        # each purchase against the customer's own average basket
        basket = amount.sum(1, keepdim=True) / (amount > 0).float().sum(1, keepdim=True)
        relative = amount / basket
        if run.bug != "average_basket_of_non_buyers":
            relative = relative.nan_to_num(0.0)  # a customer who never bought has no average basket
        return torch.cat([F.one_hot(t, TYPES).float(), torch.log1p(gap).unsqueeze(-1), spent.unsqueeze(-1),
                          relative.unsqueeze(-1)], -1)  # fmt: skip

    feats, feats_v = features(types, gaps, amounts), features(types_v, gaps_v, amounts_v)
    torch.manual_seed(run.seed)
    model = ChurnLSTM(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    batch, clip = run.k("batch", 64), run.k("clip", None)

    first_event = run.bug == "output_read_at_first_event"

    def auc_held_out() -> float:
        return auc(model(feats_v, lengths_v, first_event), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(feats[pick], lengths[pick], first_event), y[pick])
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


PORTS = torch.tensor([20, 21, 22, 23, 25, 53, 80, 110, 139, 143, 443, 445, 993, 3306, 3389, 8080])
"""The destination ports seen (telnet 23, SMB 445 and RDP 3389 are the attacked ones)."""
ATTACKED = torch.tensor([3, 11, 14])
NUMERIC = 5
"""Numeric fields: duration, bytes sent, bytes received, packets, the land flag."""


def _flows(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Numeric fields float[n, NUMERIC] in their units, port/protocol/flag indices long[n, 3], attack float[n]."""
    port = torch.randint(0, len(PORTS), (n,), generator=g)
    proto = torch.multinomial(torch.tensor([0.8, 0.15, 0.05]), n, True, generator=g)  # tcp, udp, icmp
    flag = torch.multinomial(
        torch.tensor([0.7, 0.1, 0.1, 0.05, 0.05]), n, True, generator=g
    )  # SF, S0, REJ, RSTO, SH
    sent = torch.exp(6 + 2 * torch.randn(n, generator=g))
    received = torch.exp(7 + 2 * torch.randn(n, generator=g))
    packets = 1 + torch.poisson(sent / 300, generator=g)
    # a flow of one packet has no duration
    duration = torch.where(packets > 1, torch.exp(torch.randn(n, generator=g) * 1.5), 0.0)
    land = torch.zeros(n)
    short_probe = torch.isin(port, ATTACKED) & (sent < 600) & (proto == 0)
    flood = (flag == 1) & (packets > 3 * duration)
    ping = (proto == 2) & (sent > 2000)
    logit = 3.0 * short_probe + 3.0 * flood + 3.5 * ping - 2.5
    attack = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    return (
        torch.stack([duration, sent, received, packets, land], 1),
        torch.stack([port, proto, flag], 1),
        attack,
    )


class FlowMLP(nn.Module):
    """Embeddings of the port, protocol and flag (or the port as one more number), an MLP of `hidden` twice with
    `dropout`."""

    def __init__(self, hidden: int, port_as_number: bool = False, dropout: float = 0.1) -> None:
        super().__init__()
        self.port_as_number = port_as_number
        self.port = nn.Embedding(len(PORTS), 8)
        self.proto = nn.Embedding(3, 4)
        self.flag = nn.Embedding(5, 4)
        width = NUMERIC + 1 + (1 if port_as_number else 8) + 8
        self.mlp = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, hidden),
                                 nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, num: torch.Tensor, cat: torch.Tensor, port_number: torch.Tensor) -> torch.Tensor:
        port = port_number.unsqueeze(-1) if self.port_as_number else self.port(cat[:, 0])
        return self.mlp(torch.cat([num, port, self.proto(cat[:, 1]), self.flag(cat[:, 2])], -1))[:, 0]


def intrusion(run: Run) -> None:
    """An intrusion MLP of `hidden` (128), batches of `batch` (128), `opt` (Adam; or AdamW, Nesterov SGD, RAdam) at
    `lr` (1e-3), optionally under a one-cycle schedule (`one_cycle`). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    num, cat, y = _flows(g, 4000)
    num_v, cat_v, y_v = _flows(g, 1500)

    def rate(fields: torch.Tensor) -> torch.Tensor:
        """Bytes per second (a flow without duration counted over a millisecond)."""
        seconds = fields[:, 0] if run.bug == "rate_over_zero_duration" else fields[:, 0].clamp_min(1e-3)
        return (fields[:, 1] + fields[:, 2]) / seconds

    logged = torch.log1p(torch.cat([num, rate(num).unsqueeze(1)], 1))
    logged_v = torch.log1p(torch.cat([num_v, rate(num_v).unsqueeze(1)], 1))
    mean, std = logged.mean(0), logged.std(0)
    std = torch.where(std > 0, std, torch.ones_like(std))
    x, x_v = (logged - mean) / std, (logged_v - mean) / std
    ports = PORTS.float()
    port_mean, port_std = ports[cat[:, 0]].mean(), ports[cat[:, 0]].std()
    port_n, port_n_v = (ports[cat[:, 0]] - port_mean) / port_std, (ports[cat_v[:, 0]] - port_mean) / port_std
    torch.manual_seed(run.seed)
    # dropout 0.1; the bug keeps the keep-probability of 0.9 from the TensorFlow original
    dropout = 0.9 if run.bug == "keep_probability_given_as_dropout" else 0.1
    model = FlowMLP(run.k("hidden", 128), run.bug == "port_fed_as_number", dropout)
    opt = optimizers.registered(run, model, 1e-3)
    sched = (
        torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=opt.param_groups[0]["lr"], total_steps=run.steps)
        if run.k("one_cycle", False)
        else None
    )
    batch = run.k("batch", 128)
    per_epoch = len(y) // batch

    def auc_held_out() -> float:
        return auc(model(x_v, cat_v, port_n_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick], cat[pick], port_n[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        # the one-cycle schedule steps every batch (the bug: once an epoch, as the epoch schedulers do)
        if sched is not None and (run.bug != "one_cycle_stepped_per_epoch" or (step + 1) % per_epoch == 0):
            sched.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
