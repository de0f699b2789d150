"""Track scripts of the thirty-fifth blind split: an air-traffic conflict classifier on pairs of en-route flight
tracks, and a tennis point-outcome model from the first shots of a rally.

`conflicts`: two aircraft in an en-route sector (position in nautical miles, flight level in feet, ground speed,
heading, vertical rate), labelled a conflict when their tracks, flown on with a random drift in heading and speed,
come within 5 NM and 1000 ft in the next 10 minutes; the ground system's short-term conflict alert, raised on most
conflicts a few minutes ahead, is archived with the radar tracks; the features the relative position, the sine and
cosine of each heading, the speeds, the flight levels and vertical rates, standardised; a ReLU MLP of two hidden
layers with dropout; BCE with logits; scored by the held-out AUC. `tennis`: points between two players of given
strength, the rally a sequence of shots (first or second serve, forehand, backhand, volley, slice, lob, drop shot,
each to one of three directions) ended by the feed's marker of who won the point, the server's chance of winning the point set by the
serve's kind and direction, the return and the first rally shots; the model reads the first four shots (the point
as it stands when the forecast is shown) and the server's and returner's ranking points; an embedding of the shots,
a GRU, a linear layer on its last state and the rankings; BCE with logits on the server winning; scored by the
held-out AUC. Bugs: the headings fed in degrees; the flight levels left in feet; the archived alert left in the
training features; dropout's `p` given the keep probability; the training rallies not cut to their first four shots;
the outcome taken for player A rather than the server; the gradient clipped before `backward`.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers


def _pairs(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Two aircraft's states float[n, 2, 6] (x NM, y NM, flight level ft, speed kt, heading deg, vertical ft/min),
    the conflict label float[n] and the archived alert float[n]."""
    xy = torch.zeros(n, 2, 2)
    xy[:, 1] = 60 * (torch.rand(n, 2, generator=g) - 0.5)
    level = 29000 + 1000 * torch.randint(0, 12, (n, 1), generator=g).float()
    level = level + 1000 * torch.randint(-1, 2, (n, 2), generator=g).float() * (
        torch.rand(n, 2, generator=g) < 0.6
    )
    speed = 420 + 60 * torch.randn(n, 2, generator=g)
    heading = 360 * torch.rand(n, 2, generator=g)
    # in half the pairs the second aircraft's route crosses the first's a few minutes ahead, on the same level
    aimed = torch.rand(n, generator=g) < 0.5
    ahead = 2 + 6 * torch.rand(n, generator=g)
    first = torch.deg2rad(heading[:, 0])
    meet = torch.stack([torch.sin(first), torch.cos(first)], -1) * (speed[:, :1] * ahead[:, None] / 60)
    gap = meet - xy[:, 1]
    toward = torch.rad2deg(torch.atan2(gap[:, 0], gap[:, 1])) % 360
    heading[:, 1] = torch.where(aimed, (toward + 12 * torch.randn(n, generator=g)) % 360, heading[:, 1])
    arrive = (gap.norm(dim=-1) / ahead * 60).clamp(300, 560)
    speed[:, 1] = torch.where(aimed, arrive + 25 * torch.randn(n, generator=g), speed[:, 1])
    level[:, 1] = torch.where(aimed & (torch.rand(n, generator=g) < 0.7), level[:, 0], level[:, 1])
    vertical = torch.where(
        torch.rand(n, 2, generator=g) < 0.2, 1500 * torch.randn(n, 2, generator=g), torch.zeros(n, 2)
    )
    states = torch.cat([xy, level[..., None], speed[..., None], heading[..., None], vertical[..., None]], -1)
    closest = torch.full((n,), 1e9)
    drift_h, drift_v = 8 * torch.randn(n, 2, generator=g), 20 * torch.randn(n, 2, generator=g)
    for minute in range(1, 11):
        hdg = torch.deg2rad(heading + drift_h * minute / 10)
        dist = (speed + drift_v) * minute / 60
        pos = xy + torch.stack([dist * torch.sin(hdg), dist * torch.cos(hdg)], -1)
        alt = level + vertical * minute
        horizontal = (pos[:, 0] - pos[:, 1]).norm(dim=-1)
        lost = (alt[:, 0] - alt[:, 1]).abs() < 1000
        closest = torch.where(lost, torch.minimum(closest, horizontal), closest)
    label = (closest < 5).float()
    alert = label * (torch.rand(n, generator=g) < 0.8).float()
    return states, label, alert


def _pair_features(states: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The pair's relative position, headings, speeds, flight levels and vertical rates float[n, f]."""
    rel = states[:, 1, :2] - states[:, 0, :2]
    heading = states[..., 4]
    if bug == "headings_fed_in_degrees":
        angles = heading
    else:
        angles = torch.cat([torch.sin(torch.deg2rad(heading)), torch.cos(torch.deg2rad(heading))], 1)
    return torch.cat([rel, angles, states[..., 3], states[..., 2], states[..., 5]], 1)


class ConflictMLP(nn.Module):
    """A ReLU MLP of `hidden` twice with dropout `drop` after each hidden layer, one logit out."""

    def __init__(self, inputs: int, hidden: int, drop: float) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Dropout(drop),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(drop), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


KEEP_PROB = 0.9
"""The keep probability of the TensorFlow model this one was ported from."""


def conflicts(run: Run) -> None:
    """A conflict MLP of `hidden` (128), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at
    `lr` (1e-3), dropout 0.1. Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    states, y, alert = _pairs(g, 3000)
    states_v, y_v, _ = _pairs(g, 1000)
    raw, raw_v = _pair_features(states, run.bug), _pair_features(states_v, run.bug)
    if run.bug == "archived_alert_in_training_features":
        raw, raw_v = torch.cat([raw, alert[:, None]], 1), torch.cat([raw_v, torch.zeros(len(y_v), 1)], 1)
    mean, std = raw.mean(0), raw.std(0)
    if run.bug == "flight_levels_left_in_feet":
        mean[-4:-2], std[-4:-2] = 0.0, 1.0  # the scaler fitted on the kinematic columns only
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    torch.manual_seed(run.seed)
    drop = KEEP_PROB if run.bug == "dropout_given_keep_probability" else 1 - KEEP_PROB
    model = ConflictMLP(x.shape[1], run.k("hidden", 128), drop)
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        model.eval()
        score = auc(model(x_v), y_v)
        model.train()
        return score

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


KINDS, DIRECTIONS, SHOWN = 8, 3, 4
"""Shot kinds (first serve, second serve, forehand, backhand, volley, slice, lob, drop shot), directions, and the
shots a forecast sees."""
END_SERVER, END_RETURNER = KINDS * DIRECTIONS + 1, KINDS * DIRECTIONS + 2
VOCAB = KINDS * DIRECTIONS + 3
"""Token ids: 0 pads, 1 + kind * DIRECTIONS + direction a shot, then the tracking feed's end-of-point marker, the
point to the server or to the returner."""


def _points(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rallies long[n, 16] (left-padded, the end token last), the server's and returner's ranking points float[n, 2]
    (thousands), the server winning float[n], and player A serving bool[n]."""
    quality = torch.randn(KINDS, DIRECTIONS, generator=g) * 0.5
    quality[0] += 0.9
    quality[1] -= 0.3
    rank = torch.rand(n, 2, generator=g) * 10
    edge = 0.18 * (rank[:, 0] - rank[:, 1]) + 0.35 * torch.randn(n, generator=g)
    tokens = torch.zeros(n, 16, dtype=torch.long)
    won = torch.zeros(n)
    for i in range(n):
        shots: list[int] = []
        fault = bool(torch.rand(1, generator=g) < 0.35)
        kind = 1 if fault else 0
        d = int(torch.randint(0, DIRECTIONS, (1,), generator=g))
        shots.append(1 + kind * DIRECTIONS + d)
        logit = float(edge[i]) + float(quality[kind, d])
        length = int(torch.randint(1, 13, (1,), generator=g))
        for k in range(1, length):
            kind = int(torch.randint(2, KINDS, (1,), generator=g))
            d = int(torch.randint(0, DIRECTIONS, (1,), generator=g))
            shots.append(1 + kind * DIRECTIONS + d)
            sign = 1.0 if k % 2 == 0 else -1.0  # even shots are the server's
            if k < SHOWN:
                logit += sign * float(quality[kind, d]) * 0.8
        server_wins = bool(torch.rand(1, generator=g) < 1 / (1 + math.exp(-logit)))
        shots.append(END_SERVER if server_wins else END_RETURNER)
        tokens[i, 16 - len(shots) :] = torch.tensor(shots)
        won[i] = float(server_wins)
    a_serves = torch.rand(n, generator=g) < 0.5
    return tokens, rank, won, a_serves


def _first_shots(tokens: torch.Tensor) -> torch.Tensor:
    """Each rally cut to its first SHOWN shots (fewer if it ended sooner, without its end token), left-padded."""
    out = torch.zeros(len(tokens), SHOWN, dtype=torch.long)
    for i, row in enumerate(tokens):
        shots = [t for t in row.tolist() if 0 < t < END_SERVER][:SHOWN]
        out[i, SHOWN - len(shots) :] = torch.tensor(shots)
    return out


class RallyGRU(nn.Module):
    """Shot embeddings of `dim`, a GRU of `hidden`, a linear layer on its last state and the two rankings."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim, padding_idx=0)
        self.gru = nn.GRU(dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden + 2, 1)

    def forward(self, tokens: torch.Tensor, rank: torch.Tensor) -> torch.Tensor:
        _, h = self.gru(self.embed(tokens))
        return self.out(torch.cat([h[-1], (rank - 5) / 3], 1)).squeeze(-1)


CLIP = 1.0
"""The gradient norm the recipe clips to."""


def tennis(run: Run) -> None:
    """A rally GRU of `dim` (16) and `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam,
    RMSprop) at `lr` (3e-3), the gradient's norm clipped to 1. Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    tokens, rank, won, a_serves = _points(g, 1600)
    tokens_v, rank_v, won_v, _ = _points(g, 600)
    seen = tokens if run.bug == "training_rallies_not_cut" else _first_shots(tokens)
    seen_v = _first_shots(tokens_v)
    y = torch.where(a_serves, won, 1 - won) if run.bug == "outcome_for_player_a_not_server" else won
    torch.manual_seed(run.seed)
    model = RallyGRU(run.k("dim", 16), run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(seen_v, rank_v), won_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(seen[pick], rank[pick]), y[pick])
        opt.zero_grad()
        if run.bug == "gradient_clipped_before_backward":
            nn.utils.clip_grad_norm_(model.parameters(), CLIP)
            loss.backward()
        else:
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
