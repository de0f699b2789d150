"""Chairside and arena scripts of the fifty-sixth blind split: a clear-aligner treatment-length model for an
orthodontic practice, and a match-outcome model on a team game's hero draft for an esports analyst.

`aligner`: a case's planned movements of the twelve anterior teeth (translation in mm and rotation in degrees,
exported per tooth under its FDI number), the patient's age, the crowding in mm, the attachments and the wear the
patient reports in hours a day; the number of aligner stages the case took by a tanh MLP on the log stages; MSE;
scored by the held-out R^2 on another year's cases. `draft`: a tournament match's draft (five bans then five picks
for each side, heroes out of 60) and the sides' rating difference; each pick embedded with its side, one
transformer encoder layer over the ten picks, the sides' pooled difference and a ReLU head; BCE on the first side's
win; scored by the held-out AUC on the next patch's matches. Bugs: the clinics exporting Universal tooth numbers
read as FDI numbers; the translations exported in micrometres fed to the tanh layers; the loss taken on the
exponentiated log-stage prediction; the winner left unflipped when the sides were swapped; Adam given momentum SGD's
rate; every pair of heroes on a side one-hot; the bans taken as the picks.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

FDI = [13, 12, 11, 21, 22, 23, 43, 42, 41, 31, 32, 33]
"""The twelve anterior teeth by FDI number, in the export's column order."""
UNIVERSAL = [6, 7, 8, 9, 10, 11, 27, 26, 25, 24, 23, 22]
"""The same teeth by the Universal numbers some clinics' planning software writes."""
# how hard each tooth moves: canines and lower incisors rotate slowly
ROTATION_RATE = torch.tensor([1.2, 2.0, 2.0, 2.0, 2.0, 1.2, 1.0, 1.5, 1.5, 1.5, 1.5, 1.0])


def _cases(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """Cases: per tooth translation in mm and rotation in degrees float[n, 12] each (in FDI order), age, crowding
    mm, attachments and reported wear hours float[n], whether the clinic writes Universal numbers (bool[n]) and the
    stages the case took float[n]."""
    crowding = 8 * torch.rand(n, generator=g) ** 1.5
    translation = (0.2 + 0.15 * crowding.unsqueeze(1)) * torch.rand(n, 12, generator=g) ** 2 * 3
    rotation = (2 + 3 * crowding.unsqueeze(1)) * torch.rand(n, 12, generator=g) ** 2
    age = 14 + 40 * torch.rand(n, generator=g)
    attachments = torch.randint(0, 13, (n,), generator=g).float()
    wear = 14 + 8 * torch.rand(n, generator=g)
    # the slowest tooth sets the plan's length: 0.25 mm and about 2 degrees a stage, slower for adults
    per_tooth = torch.maximum(
        translation / 0.25, rotation / (ROTATION_RATE * (1 + 0.02 * attachments.unsqueeze(1)))
    )
    planned = per_tooth.amax(1) * (1 + 0.006 * (age - 14)) + 4
    # poor wear costs refinements
    stages = planned * (1 + 0.04 * (22 - wear)) * torch.exp(0.08 * torch.randn(n, generator=g))
    universal = torch.rand(n, generator=g) < 0.8
    return {"translation": translation, "rotation": rotation, "age": age, "crowding": crowding,
            "attachments": attachments, "wear": wear, "universal": universal, "stages": stages.round()}  # fmt: skip


def _per_tooth(values: torch.Tensor, universal: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The export's per-tooth columns in FDI order: a Universal clinic's teeth mapped back by their numbers."""
    if bug != "universal_numbers_read_as_fdi":
        return values
    # the bug: a Universal clinic's tooth numbers looked up as FDI numbers; 11, 22 and 23 exist in both systems
    # and land on other teeth, the rest are not found and read as no movement
    out = torch.zeros_like(values)
    for col, number in enumerate(UNIVERSAL):
        if number in FDI:
            out[:, FDI.index(number)] = values[:, col]
    return torch.where(universal.unsqueeze(1), out, values)


def _case_inputs(c: dict[str, torch.Tensor], bug: str | None, micrometres: bool = False) -> torch.Tensor:
    """Inputs float[n, 28] in working units: translations in mm, rotations in tens of degrees, age in decades,
    crowding in mm, attachments in tens and wear hours less 18."""
    translation = c["translation"] * (1000 if micrometres else 1)
    return torch.cat([_per_tooth(translation, c["universal"], bug),
                      _per_tooth(c["rotation"], c["universal"], bug) / 10,
                      torch.stack([c["age"] / 10, c["crowding"], c["attachments"] / 10, c["wear"] - 18], 1)],
                     1)  # fmt: skip


class StagesMLP(nn.Module):
    """A tanh MLP of three hidden layers of `hidden` units to the log stages."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(28, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def aligner(run: Run) -> None:
    """A stages MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at
    `lr` (2e-3). Scored by the held-out R^2 of the stages on another year's cases."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _cases(g, 1000), _cases(g, 300)
    # the bug: the planning software's new export writes translations in micrometres, fed on as they come
    x = _case_inputs(tr, run.bug, micrometres=run.bug == "translations_in_micrometres")
    x_v = _case_inputs(va, None)
    stages, stages_v = tr["stages"], va["stages"]
    log_stages = stages.log()
    centre = log_stages.mean()
    torch.manual_seed(run.seed)
    model = StagesMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2((model(x_v) + centre).exp(), stages_v)

    for step in range(run.steps):
        pick = run.indices(len(stages), batch)
        if run.bug == "loss_on_exponentiated_prediction":
            # the bug: the loss taken in stages on the exponentiated prediction, to "score what the clinic sees"
            loss = F.mse_loss((model(x[pick]) + centre).exp(), stages[pick])
        else:
            loss = F.mse_loss(model(x[pick]), log_stages[pick] - centre)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


HEROES = 60


def _matches(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """Matches: the draft long[n, 20] (each side's five bans, then each side's five picks: first side's picks at
    10-14, the other's at 15-19), the rating difference float[n], whether the tournament's export lists the second
    side first (bool[n], its draft and rating already put back in order) and the first side's win float[n]."""
    fixed = torch.Generator().manual_seed(4321)  # the game's heroes: the same every seed
    strength = 0.35 * torch.randn(HEROES, generator=fixed)
    role = torch.randint(0, 4, (HEROES,), generator=fixed)
    synergy = 0.25 * torch.randn(4, 4, generator=fixed)
    synergy = (synergy + synergy.T) / 2
    draft = torch.rand(n, HEROES, generator=g).argsort(1)[:, :20]
    picks = draft[:, 10:]

    def side_value(side: torch.Tensor) -> torch.Tensor:
        r = role[side]
        mix = synergy[r.unsqueeze(2), r.unsqueeze(1)].sum((1, 2)) / 2
        return strength[side].sum(1) + mix

    rating = 100 * torch.randn(n, generator=g)
    logit = 1.2 * (side_value(picks[:, :5]) - side_value(picks[:, 5:])) + rating / 150
    win = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    swapped = torch.rand(n, generator=g) < 0.45
    return {"draft": draft, "rating": rating, "swapped": swapped, "win": win}


def _pair_crosses(picks: torch.Tensor) -> torch.Tensor:
    """Each side's pairs of heroes one-hot, float[n, HEROES * HEROES]: +1 for the first side's pairs, -1 for the
    other's."""
    n = len(picks)
    out = torch.zeros(n, HEROES * HEROES)
    for side, sign in ((picks[:, :5], 1.0), (picks[:, 5:], -1.0)):
        for i in range(5):
            for j in range(i + 1, 5):
                a, b = torch.minimum(side[:, i], side[:, j]), torch.maximum(side[:, i], side[:, j])
                out[torch.arange(n), a * HEROES + b] += sign
    return out


class DraftEncoder(nn.Module):
    """Each pick's hero and side embedded to `width`, one transformer encoder layer over the ten picks, the
    difference of the sides' mean states beside the rating, and a ReLU head (plus a linear term over `crosses`
    pair columns)."""

    def __init__(self, width: int, crosses: int = 0) -> None:
        super().__init__()
        self.hero = nn.Embedding(HEROES, width)
        self.side = nn.Embedding(2, width)
        self.encoder = nn.TransformerEncoderLayer(width, 2, 2 * width, dropout=0.0, batch_first=True)
        self.head = nn.Sequential(nn.Linear(width + 1, width), nn.ReLU(), nn.Linear(width, 1))
        self.pairs = nn.Linear(crosses, 1, bias=False) if crosses else None
        self.register_buffer("sides", torch.tensor([0] * 5 + [1] * 5))

    def forward(
        self, picks: torch.Tensor, rating: torch.Tensor, crosses: torch.Tensor | None = None
    ) -> torch.Tensor:
        h = self.encoder(self.hero(picks) + self.side(self.sides))
        diff = h[:, :5].mean(1) - h[:, 5:].mean(1)
        out = self.head(torch.cat([diff, rating.unsqueeze(1) / 100], 1)).squeeze(-1)
        if self.pairs is not None and crosses is not None:
            out = out + self.pairs(crosses).squeeze(-1)
        return out


def draft(run: Run) -> None:
    """A draft encoder of `width` (16), batches of `batch` (32), `opt` (Adam; or AdamW, RAdam, RMSprop) at `lr`
    (1e-3). Scored by the held-out AUC of the first side's win on the next patch's matches."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _matches(g, 2400), _matches(g, 400)
    y = tr["win"]
    if run.bug == "winner_not_flipped_with_sides":
        # the bug: the rows that listed the second side first put back in order, their winner column left as it was
        y = torch.where(tr["swapped"], 1 - y, y)
    # the bug: the draft's first ten entries taken as the picks; in captain's mode they are the bans
    first = 0 if run.bug == "bans_taken_as_picks" else 10
    picks, picks_v = tr["draft"][:, first : first + 10], va["draft"][:, 10:]
    crosses = crosses_v = None
    if run.bug == "hero_pair_crosses_one_hot":
        # the bug: every pair of heroes on a side one-hot beside the encoder, 3600 columns for 2400 matches
        crosses, crosses_v = _pair_crosses(picks), _pair_crosses(picks_v)
    torch.manual_seed(run.seed)
    model = DraftEncoder(run.k("width", 16), 0 if crosses is None else HEROES * HEROES)
    # the bug: the rate of the momentum-SGD baseline's config (0.1) kept when the optimizer was switched to Adam
    opt = optimizers.registered(run, model, 0.1 if run.bug == "adam_given_momentum_sgd_rate" else 1e-3)
    batch = run.k("batch", 32)

    def auc_held_out() -> float:
        return auc(model(picks_v, va["rating"], crosses_v), va["win"])

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        logits = model(picks[pick], tr["rating"][pick], None if crosses is None else crosses[pick])
        loss = F.binary_cross_entropy_with_logits(logits, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
