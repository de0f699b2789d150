"""Season scripts of the sixtieth blind split: an ice hockey analytics group's expected-goals model on play-by-play
shots, and a dairy farm's heat detector on its cows' neck-collar activity and rumination.

`shots`: an unblocked shot on goal from the league's play-by-play (its rink coordinates in feet, the period, whether
the shooting team is at home, the shot type, whether it is a rebound or off the rush, the strength state as the feed
writes it, from the home bench); its distance and angle to the net the shooting team attacks (teams change ends
for the second period), the rebound and rush flags standardised, the shot type and the shooting team's strength
embedded; whether it went in by a ReLU MLP; BCE; scored by the held-out AUC on another season, empty-net shots left
out as the group's models do. `heats`: a cow's last 3 days of 2-hour blocks from its collar (activity in counts per
hour, rumination in minutes per block), standardised by the herd norms of the collar's maker, and her days in milk;
whether she is in heat by a 1-D CNN over time; BCE; scored by the held-out AUC on another farm whose heats were
confirmed by milk progesterone. Bugs: the distance taken to the same net in every period; the empty-net shots kept;
the strength state read from the home bench for the away team's shots; the angle taken as the arctangent of a ratio;
the heats labelled from the insemination records; the milking robot's in-line progesterone kept as an input; the
rumination exported in seconds standardised by the norms in minutes.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SHOT_TYPES = ("wrist", "slap", "snap", "backhand", "tip-in", "wrap-around")
TYPE_EFFECT = torch.tensor([0.0, 0.15, 0.1, -0.35, 0.3, -0.6])
STRENGTHS = ("even", "power play", "short-handed")
NET_X = 89.0


def _shots(g: torch.Generator, n: int, *, empty_net: float = 0.0) -> dict[str, torch.Tensor]:
    """Unblocked shots: rink coordinates x, y in feet float[n], the period long[n], home (1) or away (0) long[n], the
    shot type, the rebound and rush flags, the strength state from the home bench long[n], whether the net was empty
    bool[n] and whether it went in float[n]; a share `empty_net` of the shots at a net whose goalie was pulled for an extra skater."""
    period = torch.randint(1, 4, (n,), generator=g)
    home = torch.randint(0, 2, (n,), generator=g)
    distance = (5 + 70 * torch.rand(n, generator=g) ** 1.6).clamp(max=88)
    angle = (torch.rand(n, generator=g) * 2 - 1) * 1.35 * torch.rand(n, generator=g).sqrt()
    kind = torch.multinomial(torch.tensor([0.45, 0.15, 0.15, 0.12, 0.09, 0.04]), n, True, generator=g)
    rebound = (torch.rand(n, generator=g) < 0.1).float()
    rush = (torch.rand(n, generator=g) < 0.15).float()
    own = torch.multinomial(torch.tensor([0.78, 0.17, 0.05]), n, True, generator=g)  # the shooting team's
    empty = torch.rand(n, generator=g) < empty_net
    distance = torch.where(empty, 15 + 75 * torch.rand(n, generator=g), distance)
    # close shots come off rebounds and tips, at the goalie's feet
    logit = (-0.5 - 0.055 * distance - 1.0 * angle.abs() + TYPE_EFFECT[kind] + 1.1 * rebound + 0.5 * rush
             + 0.45 * (own == 1).float() - 0.35 * (own == 2).float() + 0.6 * torch.randn(n, generator=g))  # fmt: skip
    logit = torch.where(empty, 1.1 + 0.3 * torch.randn(n, generator=g), logit)
    goal = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    right = (home == 1) ^ (
        period == 2
    )  # the home team attacks the right-hand net in the first and third periods
    side = torch.where(right, 1.0, -1.0)
    x = side * (NET_X - distance * torch.cos(angle))
    y = side * distance * torch.sin(angle)
    # the scorer logs a third of the tips at the crease on the net itself, in whole feet
    on_net = (kind == SHOT_TYPES.index("tip-in")) & (distance < 12) & (torch.rand(n, generator=g) < 0.35)
    x, y = torch.where(on_net, side * NET_X, x.round()), torch.where(on_net, 0.0, y.round())
    swap = torch.tensor([0, 2, 1])
    feed = torch.where(home == 1, own, swap[own])  # the feed writes the state from the home bench
    return {"x": x, "y": y, "period": period, "home": home, "kind": kind, "rebound": rebound, "rush": rush,
            "strength": feed, "empty": empty, "goal": goal}  # fmt: skip


def _shot_columns(s: dict[str, torch.Tensor], bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The numbers float[n, 4] (distance, angle, rebound, rush) and the categories long[n, 2] (shot type, strength)."""
    if bug == "net_fixed_across_periods":
        # the bug: every distance taken to the right-hand net, though the teams change ends for the second period
        net = torch.full_like(s["x"], NET_X)
    else:
        right = (s["home"] == 1) ^ (s["period"] == 2)
        net = torch.where(right, NET_X, -NET_X)
    dx, dy = (net - s["x"]).abs(), s["y"].abs()
    distance = torch.sqrt(dx**2 + dy**2)
    if bug == "shot_angle_by_atan_of_ratio":
        # the bug: the angle as atan(dy / dx), 0 / 0 for the tips the scorer logs at the crease's centre, on the net
        angle = torch.atan(dy / dx)
    else:
        angle = torch.atan2(dy, dx)
    strength = s["strength"]
    if bug != "strength_read_from_home_bench":
        # the feed's state is the home bench's: the away team's power play is the home team's short-handed spell
        swap = torch.tensor([0, 2, 1])
        strength = torch.where(s["home"] == 1, strength, swap[strength])
    numbers = torch.stack([distance, angle, s["rebound"], s["rush"]], 1)
    return numbers, torch.stack([s["kind"], strength], 1)


class ShotMLP(nn.Module):
    """The numbers beside the shot type's and the strength's embeddings, a ReLU MLP of two hidden layers."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.kind = nn.Embedding(len(SHOT_TYPES), 4)
        self.strength = nn.Embedding(len(STRENGTHS), 2)
        self.net = nn.Sequential(nn.Linear(10, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, self.kind(c[:, 0]), self.strength(c[:, 1])], 1)).squeeze(-1)


def shots(run: Run) -> None:
    """An expected-goals MLP of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, NAdam)
    at `lr` (2e-3). Scored by the held-out AUC on another season's shots, empty nets left out."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _shots(g, 3000, empty_net=0.08), _shots(g, 1500)
    if run.bug != "empty_net_shots_kept":
        # the empty-net shots left out, as the group's models do (the bug keeps them, with nothing to mark them)
        tr = {k: v[~tr["empty"]] for k, v in tr.items()}
    (x, c), (x_v, c_v) = _shot_columns(tr, run.bug), _shot_columns(va, None)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = tr["goal"], va["goal"]
    torch.manual_seed(run.seed)
    model = ShotMLP(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v, c_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick], c[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


BLOCKS = 36
"""Two-hour blocks in a window: three days."""
NORMS = {"activity": (30.0, 14.0), "rumination": (38.0, 12.0)}
"""The collar maker's herd norms: the mean and spread of the activity per hour and the rumination minutes per
block."""
VOLUNTARY_WAITING = 50
"""Days in milk before the farm inseminates a cow."""


def _cows(g: torch.Generator, n: int, *, farm: float = 1.0) -> dict[str, torch.Tensor]:
    """Windows of a cow's collar: activity per hour and rumination minutes per block float[n, BLOCKS], rumination in
    seconds as the collar exports it, her days in milk float[n], whether she is in heat at the window's end long[n],
    whether the farm inseminated her then long[n], the in-line milk progesterone in ng/ml of the robot at the window's
    last milking and that of the monthly milk recording float[n].
    `farm` scales another farm's activity."""
    hour = (torch.arange(BLOCKS) % 12).float() * 2
    daytime = torch.sin((hour - 8) / 24 * 2 * math.pi)
    level = farm * torch.exp(0.3 * torch.randn(n, 1, generator=g))
    heat = (torch.rand(n, generator=g) < 0.25).long()
    # a cow cycles from about three weeks after calving until she is pregnant
    dim = torch.where(
        heat == 1, 20 + 100 * torch.rand(n, generator=g) ** 1.5, 10 + 290 * torch.rand(n, generator=g)
    )
    onset = BLOCKS - 2 - torch.randint(0, 5, (n, 1), generator=g)
    during = ((torch.arange(BLOCKS) >= onset) & (heat == 1).unsqueeze(1)).float()
    rise = 1 + (0.3 + 0.9 * torch.rand(n, 1, generator=g)) * during
    # look-alikes: a pasture day, a pen move, lameness
    pasture = (torch.rand(n, 1, generator=g) < 0.25).float() * ((torch.arange(BLOCKS) // 12) == 2).float()
    moved = torch.randint(0, BLOCKS, (n, 1), generator=g)
    move = (torch.rand(n, 1, generator=g) < 0.3).float() * ((torch.arange(BLOCKS) - moved).abs() <= 1).float()
    lame = torch.where(torch.rand(n, 1, generator=g) < 0.1, 0.6, 1.0)
    activity = 30 * level * lame * (1 + 0.35 * daytime) * rise * (1 + 0.5 * pasture + 1.0 * move)
    activity = torch.poisson(activity * torch.exp(0.25 * torch.randn(n, BLOCKS, generator=g)), generator=g)
    rumination = 38 * (1 - 0.25 * daytime) * (1 - 0.15 * during) * (1 - 0.2 * move)
    rumination = (rumination + 8 * torch.randn(n, BLOCKS, generator=g)).clamp(0, 120)
    bred = heat * (dim >= VOLUNTARY_WAITING).long() * (torch.rand(n, generator=g) < 0.85).long()
    progesterone = torch.where(heat == 1, 1.5, 14.0) + 4 * torch.rand(n, generator=g)
    luteal_then = (
        torch.rand(n, generator=g) < 0.7
    )  # the monthly milk recording's sample, from another day of the cycle
    recorded = torch.where(luteal_then, 14.0, 1.5) + 4 * torch.rand(n, generator=g)
    return {"activity": activity, "rumination": rumination, "rumination_s": rumination * 60, "dim": dim,
            "heat": heat, "bred": bred, "progesterone": progesterone, "recorded_progesterone": recorded}  # fmt: skip


def _collar(c: dict[str, torch.Tensor], bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The blocks standardised by the herd norms float[n, 2, BLOCKS] and the days in milk over 100 float[n, 1]."""
    if bug == "rumination_seconds_under_minute_norms":
        # the bug: the collar's export, in seconds per block, standardised by the norms written in minutes
        rumination = c["rumination_s"]
    else:
        rumination = c["rumination"]
    a = (c["activity"] - NORMS["activity"][0]) / NORMS["activity"][1]
    r = (rumination - NORMS["rumination"][0]) / NORMS["rumination"][1]
    return torch.stack([a, r], 1), (c["dim"] / 100).unsqueeze(1)


class HeatCNN(nn.Module):
    """Two 1-D conv layers over the blocks with ReLU (the second dilated), a mean and a max over time, the scalar
    columns beside them, a linear head."""

    def __init__(self, width: int, scalars: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(2, width, 5, padding=2), nn.ReLU(),
                                 nn.Conv1d(width, width, 5, padding=4, dilation=2), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(2 * width + scalars, 1)

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        h = self.net(x)
        return self.head(torch.cat([h.mean(-1), h.amax(-1), s], 1)).squeeze(-1)


def heats(run: Run) -> None:
    """A heat CNN of `width` (12), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, Adagrad) at `lr`
    (3e-3). Scored by the held-out AUC on another farm's cows, their heats confirmed by milk progesterone."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _cows(g, 1000), _cows(g, 250, farm=1.15)
    (x, s), (x_v, s_v) = _collar(tr, run.bug), _collar(va, None)
    if run.bug == "heats_from_insemination_records":
        # the bug: the heats taken from the insemination records, which miss every heat before the voluntary
        # waiting period ends and those of the cows not to be bred
        y = tr["bred"].float()
    else:
        y = tr["heat"].float()
    y_v = va["heat"].float()
    if run.bug == "inline_progesterone_kept":
        # the bug: the training farm's robot's in-line progesterone, from the window's last milking, kept as a
        # column; the other farm's comes from the monthly milk recording, weeks old
        s = torch.cat([s, tr["progesterone"].unsqueeze(1)], 1)
        s_v = torch.cat([s_v, va["recorded_progesterone"].unsqueeze(1)], 1)
    torch.manual_seed(run.seed)
    model = HeatCNN(run.k("width", 12), s.shape[1])
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def auc_held_out() -> float:
        return auc(model(x_v, s_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick], s[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
