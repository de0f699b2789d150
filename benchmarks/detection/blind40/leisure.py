"""Leisure scripts of the fortieth blind split: a drone battery state-of-health regressor, and a chess-clock
time-pressure blunder classifier.

`drone`: a quadcopter pack's logged discharge over a flight, 80 samples of the pack voltage (V), the current (A) and
the cells' temperature (C); an aged pack has lost capacity (its state of health, 70-100 %) and gained internal
resistance, so its voltage sags further under load and falls off the knee sooner; each flight its own hover current
and climbs; the voltage over 4.2 V a cell less 3, the current over 30 A, the temperature over 10 C less 2.5; a 1-D CNN of
three convolutions with ReLUs, a global mean pool and a linear layer; MSE on the state of health in percent less 85,
over 10; scored by the held-out R^2.
`blunder`: moves of online blitz games: the mover's clock and the opponent's (s), the increment (s), the move number,
the engine's evaluation before the move (pawns), the rating gap, the position's legal moves and the time control
(one of six, embedded); the blunder chance rises as the mover's clock runs down and in complex, level positions,
falls with rating; the clocks as log(1 + seconds), the rest standardised; a ReLU MLP of two hidden layers; BCE with
logits; scored by the held-out AUC. Bugs: a gradient-scaling layer left in; the loss weighted by the inverse capacity
fade; the resting voltage for the load voltage; the player's id embedded; the label of the opponent's reply; a site's clocks in
milliseconds; the log of the mover's clock at zero.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES = 80
"""Samples of a logged flight."""


def _flights(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Flights float[n, 3, SAMPLES] (voltage of a 4-cell pack, current, temperature) and the state of health float[n]
    in percent."""
    soh = 70 + 30 * torch.rand(n, generator=g)
    t = torch.arange(SAMPLES).float() / SAMPLES
    hover = 15 + 15 * torch.rand(n, 1, generator=g)
    climbs = (torch.rand(n, SAMPLES, generator=g) < 0.08).float()
    current = hover + 20 * F.conv1d(climbs.unsqueeze(1), torch.ones(1, 1, 5), padding=2).squeeze(1).clamp(
        max=1
    )
    current = current + torch.randn(n, SAMPLES, generator=g)
    used = (
        current.cumsum(-1) / SAMPLES / (soh.unsqueeze(-1) / 100 * 45)
    )  # the share of the pack's charge drawn
    ocv = 4.15 - 0.5 * used - 0.6 * (used - 0.7).clamp(min=0) ** 2 * 4
    resistance = 0.004 * (1 + 3 * (100 - soh.unsqueeze(-1)) / 30)
    temp = 20 + 5 * torch.rand(n, 1, generator=g) + 10 * t * (1 + (100 - soh.unsqueeze(-1)) / 30)
    voltage = 4 * (ocv - resistance * current) + 0.02 * torch.randn(n, SAMPLES, generator=g)
    return torch.stack([voltage, current, temp], 1), soh


def _flight_inputs(raw: torch.Tensor) -> torch.Tensor:
    """The voltage over 4.2 V a cell less 3, the current over 30 A, the temperature over 10 C less 2.5."""
    return torch.stack([raw[:, 0] / 4.2 - 3, raw[:, 1] / 30, raw[:, 2] / 10 - 2.5], 1)


class _ScaleGrad(torch.autograd.Function):
    """Identity forward, the gradient multiplied by `scale` backward (a domain-adversarial training's layer)."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.scale = scale  # type: ignore[attr-defined]
        return x.view_as(x)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad * ctx.scale, None  # type: ignore[attr-defined]


class DroneCNN(nn.Module):
    """Three 5-wide convolutions (`width` channels) with ReLUs, a global mean pool, a linear layer; `grad_scale`: the
    gradient into the convolutions scaled by it."""

    def __init__(self, width: int, grad_scale: float = 1.0) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(3, width, 5, padding=2), nn.ReLU(), nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
            nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(width, 1)
        self.grad_scale = grad_scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.features(x).mean(-1)
        if self.grad_scale != 1.0:
            features = _ScaleGrad.apply(features, self.grad_scale)
        return self.head(features).squeeze(-1)


def drone(run: Run) -> None:
    """A drone CNN of `width` (24), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (2e-3). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    raw, soh = _flights(g, 1000)
    raw_v, soh_v = _flights(g, 500)
    if (
        run.bug == "resting_voltage_column_for_load_voltage"
    ):  # the log's first column: the voltage before take-off
        raw = raw.clone()
        raw[:, 0] = raw[:, 0, :1] + 0.3
    x, x_v = _flight_inputs(raw), _flight_inputs(raw_v)
    y, y_v = (soh - 85) / 10, (soh_v - 85) / 10
    torch.manual_seed(run.seed)
    # the trunk shared with the pack-brand adversary, its gradient-scaling layer (lambda 1e-3) left in
    scale = 1e-3 if run.bug == "gradient_scaling_layer_left_from_brand_adversary" else 1.0
    model = DroneCNN(run.k("width", 24), scale)
    batch = run.k("batch", 32)
    opt = optimizers.registered(run, model, 2e-3)
    if run.bug == "loss_weighted_by_inverse_capacity_fade":  # meant to stress the nearly new packs
        weight = 1.0 / (100.0 - soh).clamp(min=1e-3)
    else:
        weight = torch.ones_like(soh)

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = (weight[pick] * (model(x[pick]) - y[pick]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


CONTROLS = 6
"""Time controls of the site (1+0 to 5+3)."""
PLAYERS = 400
"""Players in the training months."""


def _moves(
    g: torch.Generator, n: int, millis: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Move records float[n, 7] (the mover's clock s, the opponent's s, the increment s, the move number, the
    evaluation, the rating gap, the legal moves), the time control long[n], the player long[n], the blunder label of
    the move float[n] and of the opponent's reply float[n] (stacked as the last two: label float[n, 2]); `millis`: one
    site's clocks in milliseconds in a twentieth of the moves."""
    control = torch.randint(0, CONTROLS, (n,), generator=g)
    base = torch.tensor([60.0, 120.0, 180.0, 180.0, 300.0, 300.0])[control]
    inc = torch.tensor([0.0, 1.0, 0.0, 2.0, 0.0, 3.0])[control]
    move = torch.randint(5, 80, (n,), generator=g).float()
    share = (1 - move / 90 * (0.6 + 0.6 * torch.rand(n, generator=g))).clamp(min=0)
    clock = (base * share + inc * 3 * torch.rand(n, generator=g)) * (
        torch.rand(n, generator=g) > 0.02
    ).float()
    opp = base * (1 - move / 90 * (0.6 + 0.6 * torch.rand(n, generator=g))).clamp(min=0.02)
    evaluation = 2 * torch.randn(n, generator=g)
    gap = 200 * torch.randn(n, generator=g)
    legal = 10 + 40 * torch.rand(n, generator=g)
    player = torch.randint(0, PLAYERS, (n,), generator=g)
    pressure = 2.5 * torch.exp(-clock / 15)
    logit = -2.2 + pressure + 0.03 * (legal - 30) - 0.4 * evaluation.abs().clamp(max=3) - gap / 400
    label = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    reply = (torch.rand(n, generator=g) < torch.sigmoid(-2.2 + 0.03 * (legal - 30))).float()
    if millis:
        site = torch.rand(n, generator=g) < 0.05
        clock = torch.where(site, clock * 1000, clock)
        opp = torch.where(site, opp * 1000, opp)
    rows = torch.stack([clock, opp, inc, move, evaluation, gap, legal], -1)
    return rows, control, player, torch.stack([label, reply], -1)


def _move_inputs(rows: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The clocks as log(1 + s) (or, the bug, log s), the rest standardised by nominal scales."""
    if bug == "log_of_movers_clock_at_zero":
        clocks = torch.log(rows[:, :2])
    else:
        clocks = torch.log1p(rows[:, :2])
    rest = (rows[:, 2:] - torch.tensor([1.0, 42.0, 0.0, 0.0, 30.0])) / torch.tensor(
        [1.2, 21.0, 2.0, 200.0, 12.0]
    )
    return torch.cat([(clocks - 4) / 1.2, rest], -1)


class BlunderMLP(nn.Module):
    """A time-control embedding (and, the bug, a player embedding) beside the move's inputs, a ReLU MLP of two hidden
    layers of `hidden`."""

    def __init__(self, hidden: int, players: bool) -> None:
        super().__init__()
        self.control = nn.Embedding(CONTROLS, 4)
        self.player = nn.Embedding(PLAYERS, 16) if players else None
        self.body = nn.Sequential(nn.Linear(11 + (16 if players else 0), hidden), nn.ReLU(),
                                  nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor, control: torch.Tensor, player: torch.Tensor) -> torch.Tensor:
        parts = [x, self.control(control)]
        if self.player is not None:
            parts.append(self.player(player))
        return self.body(torch.cat(parts, -1)).squeeze(-1)


def blunder(run: Run) -> None:
    """A blunder MLP of `hidden` (64), batches of `batch` (128), `opt` (Adam; or momentum SGD, NAdam, Adamax) at
    `lr` (2e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    rows, control, player, labels = _moves(g, 3000, millis=run.bug == "one_sites_clocks_in_milliseconds")
    rows_v, control_v, _, labels_v = _moves(g, 1500, millis=False)
    player_v = torch.zeros(len(rows_v), dtype=torch.long)  # the next month's new players: the unknown id 0
    x, x_v = _move_inputs(rows, run.bug), _move_inputs(rows_v, None)
    column = 1 if run.bug == "label_of_opponents_reply" else 0
    y, y_v = labels[:, column], labels_v[:, 0]
    players = run.bug == "player_id_embedded"
    torch.manual_seed(run.seed)
    model = BlunderMLP(run.k("hidden", 64), players)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 128)

    def auc_held_out() -> float:
        return auc(model(x_v, control_v, player_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick], control[pick], player[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
