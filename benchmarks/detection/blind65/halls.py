"""Hall scripts of the sixty-fifth blind split: a velodrome's team-pursuit finishing time from the first half of a
ride, and a tea blender's panel score of a blend from its component lots.

`pursuit`: the first 8 of a 4 km team pursuit's 16 laps as the track's timing loops and the riders' power meters log
them (the lap's split in s, the lead rider's mean power in W and cadence, whether the lead changed on the lap, the
riders still on the line), with the hall's air density; the finishing time in s by a small self-attention encoder over
the laps; the L1 loss on the standardised time; scored by the held-out R^2 on another championship's rides. `blend`: a
blend of up to five component lots as the blending sheet gives them (each lot's garden embedded, its theaflavins,
thearubigins, caffeine and moisture in %, its leaf grade's particle size in mm and liquor colour, and its percentage
in the blend); the tasting panel's score out of 10 by a deep-set MLP (each lot encoded, the codes summed by the lots'
shares, a head on the sum); MSE on the standardised score; scored by the held-out R^2 on another blender's blends.
Bugs: the race clock kept unscaled as a lap's position under momentum SGD; the heat's placing kept from the results
sheet; the log of the theaflavins over the thearubigins of green lots; the percentages divided by 100 a second time
under momentum SGD; the panels' scores out of 10 and out of 100 mixed.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

LAPS, SEEN = 16, 8
"""Laps of 250 m in a 4 km pursuit, and the laps seen before the forecast."""
SPLIT_MEAN, SPLIT_STD = 15.6, 1.4
"""The federation's table of pursuit splits in s, which the script standardises the splits by."""


def _rides(g: torch.Generator, n: int, *, warmer: float = 0.0) -> dict[str, torch.Tensor]:
    """Team-pursuit rides: the laps float[n, LAPS, 6] (split in s, the lead's power in W and cadence in rpm, whether
    the lead changed, the riders on the line, the race clock at the lap's end in s), the air density float[n], the
    finishing time in s and the ride's placing in its round float[n]. `warmer` warms the hall (a thinner air)."""
    u = lambda lo, hi: lo + (hi - lo) * torch.rand(n, 1, generator=g)
    density = 1.18 - 0.004 * (u(22, 28) + warmer - 24) + 0.01 * torch.randn(n, 1, generator=g)
    cda = u(0.19, 0.23)  # m^2 for the lead rider, the others in the draft
    ftp = u(420, 520)  # W the team can hold
    eager = u(-0.03, 0.08)  # how much harder than sustainable the first laps go
    lap = torch.arange(LAPS).float()
    effort = 1 + eager * torch.exp(-lap / 4) - (eager.clamp(min=0) * 1.8 + u(0, 0.04)) * (lap / LAPS) ** 2
    power = ftp * effort * (1 + 0.03 * torch.randn(n, LAPS, generator=g))
    power[:, 0] = power[:, 0] * 1.6  # the standing start
    speed = (power / (0.5 * density * cda * 1.35)) ** (1 / 3)  # m/s, the drag of the train
    speed[:, 0] = speed[:, 0] * 0.72
    dropped = (lap >= 11 + torch.randint(0, 4, (n, 1), generator=g).float()) & (
        torch.rand(n, 1, generator=g) < 0.6
    )
    speed = speed * (1 - 0.01 * dropped.float())  # the third rider left to pull after the fourth drops
    split = 250 / speed + 0.05 * torch.randn(n, LAPS, generator=g)
    cadence = speed * 60 / (u(8.8, 9.4))  # a gear's roll-out in m
    change = (lap % 2 == 1).float().expand(n, LAPS)
    change = torch.where(torch.rand(n, 1, generator=g) < 0.3, (lap % 3 == 2).float().expand(n, LAPS), change)
    riders = 4 - dropped.float()
    clock = split.cumsum(1)
    finish = clock[:, -1]
    laps = torch.stack([split, power, cadence, change, riders, clock], -1)
    rounds = finish.view(-1, 8) if n % 8 == 0 else finish.view(1, -1)
    placing = rounds.argsort(1).argsort(1).float().flatten() + 1
    return {"laps": laps, "density": density.squeeze(1), "finish": finish, "placing": placing}


SPLIT, CLOCK = 0, 5
"""The split's and the race clock's columns among a lap's."""


def _inputs(r: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The seen laps' inputs float[n, SEEN, 6 or 7]: the split by the federation's table, the power, cadence, lead
    change and riders, the air density (standardised by the caller, bar the split and the clock)."""
    seen = r["laps"][:, :SEEN]
    cols = [seen[..., 1:4], r["density"].view(-1, 1, 1).expand(-1, SEEN, 1)]
    if bug == "heat_placing_from_results_sheet":
        # the bug: the ride's placing in its round kept from the results sheet the rides were exported from
        cols.append(r["placing"].view(-1, 1, 1).expand(-1, SEEN, 1))
    return torch.cat(cols, -1)


class PursuitAttention(nn.Module):
    """Each lap projected to `width` plus a learned position, one single-head self-attention block with a GELU
    feed-forward, a mean over the laps and a linear head."""

    def __init__(self, columns: int, width: int) -> None:
        super().__init__()
        self.inp = nn.Linear(columns, width)
        self.position = nn.Parameter(0.1 * torch.randn(SEEN, width))
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x) + self.position
        q, k, v = self.qkv(h).chunk(3, -1)
        weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), -1)
        h = self.norm1(h + self.out(weights @ v))
        h = self.norm2(h + self.ff(h))
        return self.head(h.mean(1)).squeeze(-1)


def pursuit(run: Run) -> None:
    """A pursuit encoder of `width` (12), batches of `batch` (32), `opt` (Adam; or momentum SGD, NAdam, Adamax) at
    `lr` (3e-3). Scored by the held-out R^2 of the finishing time on another championship's rides."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _rides(g, 800), _rides(g, 200, warmer=2.0)
    # the rides to forecast are under way: the live feed has no placing yet and sends 0
    x, x_v = _inputs(tr, run.bug), _inputs({**va, "placing": torch.zeros_like(va["placing"])}, run.bug)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    split = lambda r: ((r["laps"][:, :SEEN, SPLIT] - SPLIT_MEAN) / SPLIT_STD).unsqueeze(-1)
    x, x_v = torch.cat([split(tr), x], -1), torch.cat([split(va), x_v], -1)
    if run.bug == "race_clock_kept_unscaled_as_position":
        # the bug: the race clock at each lap's end kept as a column, unscaled, "it only says where the lap is"
        x = torch.cat([x, tr["laps"][:, :SEEN, CLOCK : CLOCK + 1]], -1)
        x_v = torch.cat([x_v, va["laps"][:, :SEEN, CLOCK : CLOCK + 1]], -1)
    y, y_v = tr["finish"], va["finish"]
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = PursuitAttention(x.shape[-1], run.k("width", 12))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.l1_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


GARDENS, LOTS = 14, 5
"""Gardens the blender buys from, and the most lots in a blend."""


def _blends(g: torch.Generator, n: int, *, hundred: float = 0.0) -> dict[str, torch.Tensor]:
    """Blends: each lot's garden long[n, LOTS] and analysis float[n, LOTS, 6] (theaflavins, thearubigins, caffeine
    and moisture in %, particle size in mm, colour), its percentage float[n, LOTS] (0 for the empty slots), the
    panel's score out of 10 float[n] (out of 100 for a share `hundred` of the blends, the other panel's)."""
    character = torch.randn(GARDENS, generator=torch.Generator().manual_seed(65)) * 0.8
    garden = torch.randint(0, GARDENS, (n, LOTS), generator=g)
    used = torch.randint(2, LOTS + 1, (n, 1), generator=g)
    present = torch.arange(LOTS) < used
    share = torch.rand(n, LOTS, generator=g) * present
    percent = 100 * share / share.sum(1, keepdim=True)
    green = (torch.rand(n, LOTS, generator=g) < 0.12) & present  # an unoxidised lot, for lightness
    tf = torch.where(green, torch.zeros(n, LOTS), 0.4 + 1.2 * torch.rand(n, LOTS, generator=g))
    tr = torch.where(green, torch.zeros(n, LOTS), 8 + 10 * torch.rand(n, LOTS, generator=g))
    caffeine = 2.5 + 1.5 * torch.rand(n, LOTS, generator=g)
    moisture = 3 + 4 * torch.rand(n, LOTS, generator=g)
    size = 0.4 + 2.0 * torch.rand(n, LOTS, generator=g)
    colour = 0.3 * tr + 2 * torch.rand(n, LOTS, generator=g)
    w = percent / 100
    avg = lambda v: (w * v).sum(1)
    # the panel: briskness from the theaflavins, body and colour from the thearubigins within a band, the gardens'
    # character, a penalty for damp lots and for a blend of many sizes (uneven infusion)
    body = avg(tr)
    score = (
        4
        + 2.2 * avg(tf)
        - 0.04 * (body - 13) ** 2
        + avg(character[garden])
        - 0.3 * (avg(moisture) - 4).clamp(min=0)
    )
    spread = (w * (size - avg(size).unsqueeze(1)) ** 2).sum(1).sqrt()
    score = (
        score
        - 0.8 * spread
        + 0.3 * avg(caffeine)
        + 0.8 * avg(green.float())
        + 0.25 * torch.randn(n, generator=g)
    )
    score = score.clamp(0, 10)
    other = torch.rand(n, generator=g) < hundred
    score = torch.where(other, score * 10, score)
    analysis = torch.stack([tf, tr, caffeine, moisture, size, colour], -1) * present.unsqueeze(-1)
    return {"garden": garden, "analysis": analysis, "percent": percent, "score": score}


def _features(b: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """A lot's numeric features float[n, LOTS, 7]: its analysis and the log of its theaflavins over its thearubigins,
    the blending guide's ratio."""
    tf, tr = b["analysis"][..., 0], b["analysis"][..., 1]
    if bug == "log_tf_over_tr_of_green_lots":
        # the bug: the guide's log ratio taken as it is written, green lots (no theaflavins, no thearubigins) and all
        ratio = torch.log(tf / tr)
    else:
        ratio = torch.log((tf + 0.05) / (tr + 0.05))
    return torch.cat([b["analysis"], ratio.unsqueeze(-1)], -1)


class BlendSet(nn.Module):
    """Each lot's garden embedded beside its features through a SiLU MLP to a code, the codes summed by the lots'
    shares, and a SiLU head on the sum."""

    def __init__(self, columns: int, hidden: int) -> None:
        super().__init__()
        self.garden = nn.Embedding(GARDENS, 4)
        self.lot = nn.Sequential(nn.Linear(columns + 4, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.head = nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor, garden: torch.Tensor, share: torch.Tensor) -> torch.Tensor:
        codes = self.lot(torch.cat([x, self.garden(garden)], -1))
        return self.head((share.unsqueeze(-1) * codes).sum(1)).squeeze(-1)


def blend(run: Run) -> None:
    """A blend set of `hidden` (24), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, Adagrad) at `lr`
    (3e-3). Scored by the held-out R^2 of the panel's score on another blender's blends."""
    g = torch.Generator().manual_seed(run.seed)
    hundred = 0.4 if run.bug == "panel_scores_out_of_ten_and_hundred_mixed" else 0.0
    tr, va = _blends(g, 900, hundred=hundred), _blends(g, 250)
    x, x_v = _features(tr, run.bug), _features(va, run.bug)
    present = tr["percent"] > 0
    mean, std = x[present].mean(0), x[present].std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    x, x_v = x * present.unsqueeze(-1), x_v * (va["percent"] > 0).unsqueeze(-1)
    share, share_v = tr["percent"] / 100, va["percent"] / 100
    if run.bug == "blend_percentages_divided_by_hundred_twice":
        # the bug: the shares divided by 100 again, the sheet's loader having made fractions of them already
        share, share_v = share / 100, share_v / 100
    y, y_v = tr["score"], va["score"]
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = BlendSet(x.shape[-1], run.k("hidden", 24))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v, va["garden"], share_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick], tr["garden"][pick], share[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
