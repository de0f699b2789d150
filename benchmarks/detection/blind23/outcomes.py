"""Outcome scripts of the twenty-third blind split: a wind-turbine power-curve model on SCADA records and a
tic-tac-toe position evaluator.

`turbine`: ten-minute records of the wind speed (Weibull), its direction against the nacelle's, the air density from
the pressure and temperature (in whole degrees) and the turbulence intensity; the power as a share of the rated power
by a smoothed cubic power curve from cut-in at 3 m/s to rated at 12 m/s, reduced by yaw misalignment and turbulence,
and 0 past cut-out at 25 m/s; two records in five above 9 m/s curtailed by the grid operator (the power capped at 30%
and the curtailment flag set), those records dropped; a tanh MLP with a sigmoid output; MSE; scored by the held-out
R^2 on uncurtailed records. `tictactoe`: every position reachable in play with the game still open, valued by
minimax for the side to move (loss, draw, win); a third of them for training; each board as two planes, the mover's
marks and the opponent's, turned by one of the board's eight symmetries at random in each batch; an MLP; cross-entropy
over the three outcomes; scored by the accuracy on the held-out positions. Bugs: the curtailed records kept; the
features multiplied by their spread instead of divided; the density computed from the temperature in Celsius; the
outcomes kept from X's side while the boards are drawn from the mover's; the symmetry augmentation left out.
"""

from __future__ import annotations

from functools import cache

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers


def _records(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """SCADA records float[n, 6] (wind speed m/s, direction offset rad, pressure hPa, temperature in whole degrees
    Celsius, turbulence intensity, curtailment flag) and the power as a share of rated (true, and as logged)."""
    u = torch.rand(n, generator=g)
    speed = 8.5 * (-torch.log(1 - u)) ** 0.5
    offset = 0.25 * torch.randn(n, generator=g)
    pressure = 1013 + 10 * torch.randn(n, generator=g)
    celsius = torch.round(8 + 9 * torch.randn(n, generator=g))
    turbulence = 0.06 + 0.1 * torch.rand(n, generator=g)
    density = pressure * 100 / (287.05 * (celsius + 273.15))
    v = speed * torch.cos(offset) ** (2 / 3) * (density / 1.225) ** (1 / 3)
    ramp = ((v - 3) / 9).clamp(0, 1) ** 3
    soft = torch.sigmoid((v - 12) / (1.5 * turbulence * 12))
    power = ramp * (1 - soft) + soft * (1 - 0.4 * turbulence)
    power = torch.where(speed > 25, 0.0, power)
    true = power.clamp(0, 1)
    logged = (true + 0.02 * torch.randn(n, generator=g)).clamp(0, 1)
    curtailed = (speed > 9) & (torch.rand(n, generator=g) < 0.4)  # oversupply on windy days
    logged = torch.where(curtailed, logged.clamp(max=0.3), logged)
    records = torch.stack([speed, offset, pressure, celsius, turbulence, curtailed.float()], 1)
    return records, true, logged


def _features(records: torch.Tensor, kelvin: bool = True, times_spread: bool = False) -> torch.Tensor:
    """Wind speed, the offset's cosine and sine, the air density and the turbulence intensity, about unit scale
    (`times_spread`: the standardisation written with * where / was meant)."""
    speed, offset, pressure, celsius, turbulence = records[:, :5].unbind(1)
    temperature = celsius + 273.15 if kelvin else celsius
    density = pressure * 100 / (287.05 * temperature)
    raw = torch.stack([speed, torch.cos(offset), torch.sin(offset), density, turbulence], 1)
    centre = torch.tensor([8.0, 0.97, 0.0, 1.225, 0.11])
    spread = torch.tensor([4.5, 0.25, 0.25, 0.05, 0.03])
    return (raw - centre) * spread if times_spread else (raw - centre) / spread


class PowerCurve(nn.Module):
    """Five features -> two tanh layers of `hidden` -> a logit (the sigmoid of which is the power share)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, 1), nn.Sigmoid())  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def turbine(run: Run) -> None:
    """A power-curve model (a tanh MLP of `hidden` (64)), batches of `batch` (128), `opt` (Adam; or momentum SGD,
    AdamW, Adamax) at `lr` (3e-3). Scored by the held-out R^2 of the power share."""
    g = torch.Generator().manual_seed(run.seed)
    records, _, logged = _records(g, 5000)
    records_v, true_v, _ = _records(g, 2000)
    if run.bug != "curtailed_records_kept":
        keep = records[:, 5] == 0
        records, logged = records[keep], logged[keep]
    x = _features(records, run.bug != "density_from_celsius", run.bug == "features_multiplied_by_spread")
    x_v = _features(records_v, times_spread=run.bug == "features_multiplied_by_spread")
    torch.manual_seed(run.seed)
    model = PowerCurve(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 128)

    def r2_held_out() -> float:
        return r2(model(x_v), true_v)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.mse_loss(model(x[pick]), logged[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
"""The board's eight winning lines, cells numbered row by row."""


def _winner(board: tuple[int, ...]) -> int:
    """+1 or -1 when that player has a line, else 0 (X is +1 and moves first)."""
    for a, b, c in LINES:
        if board[a] != 0 and board[a] == board[b] == board[c]:
            return board[a]
    return 0


@cache
def _value(board: tuple[int, ...], mover: int) -> int:
    """The minimax outcome for `mover` (-1 loss, 0 draw, +1 win) with best play from `board`."""
    w = _winner(board)
    if w != 0:
        return w * mover
    empty = [i for i in range(9) if board[i] == 0]
    if not empty:
        return 0
    return max(-_value(board[:i] + (mover,) + board[i + 1 :], -mover) for i in empty)


@cache
def _positions() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every open position reachable in play: boards long[n, 9] (+1 X, -1 O), the mover (+1, -1) and the outcome for
    the mover (-1, 0, +1)."""
    seen: dict[tuple[int, ...], int] = {}
    layer = {(0,) * 9}
    mover = 1
    while layer:
        for board in layer:
            seen[board] = mover
        layer = {b[:i] + (mover,) + b[i + 1 :] for b in layer for i in range(9) if b[i] == 0}
        layer = {b for b in layer if _winner(b) == 0 and 0 in b}
        mover = -mover
    boards = torch.tensor(list(seen))
    movers = torch.tensor(list(seen.values()))
    values = torch.tensor([_value(b, m) for b, m in seen.items()])
    return boards, movers, values


SYMMETRIES = torch.stack([torch.arange(9).view(3, 3).rot90(k).flip(1) if f else torch.arange(9).view(3, 3).rot90(k)
                          for k in range(4) for f in (0, 1)]).view(8, 9)  # fmt: skip
"""The eight symmetries of the board as permutations of its cells."""


def _planes(boards: torch.Tensor, movers: torch.Tensor) -> torch.Tensor:
    """Two planes per board, the mover's marks and the opponent's: float[n, 18]."""
    rel = boards * movers.view(-1, 1)
    return torch.cat([(rel == 1).float(), (rel == -1).float()], 1)


def tictactoe(run: Run) -> None:
    """A position evaluator (an MLP of `hidden` (128)), batches of `batch` (64), `opt` (Adam; or AdamW, momentum SGD,
    RMSprop) at `lr` (2e-3). Scored by the accuracy on the held-out positions."""
    boards, movers, values = _positions()
    g = torch.Generator().manual_seed(run.seed)
    order = torch.randperm(len(boards), generator=g)
    n_train = len(boards) // 3
    train, held = order[:n_train], order[n_train:]
    labels = values + 1  # loss, draw, win as 0, 1, 2
    if run.bug == "outcomes_kept_from_x_side":
        labels = values * movers + 1  # the outcome table written from X's side
    x_v, y_v = _planes(boards[held], movers[held]), values[held] + 1
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 128)
    model = nn.Sequential(
        nn.Linear(18, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 3)
    )
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = train[run.indices(n_train, batch)]
        b = boards[pick]
        if run.bug != "symmetry_augmentation_left_out":
            b = torch.gather(b, 1, SYMMETRIES[torch.randint(0, 8, (len(b),), generator=run.gen)])
        loss = F.cross_entropy(model(_planes(b, movers[pick])), labels[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
