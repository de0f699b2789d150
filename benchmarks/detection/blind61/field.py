"""Field scripts of the sixty-first blind split: a falconry centre's weight-management model for its hawks, and an
archery club's form-fault classifier on its archers' practice rounds.

`mews`: a bird's last 10 days in the weighing book (the morning weight in g, the food given in g of each kind (day-old
chick, quail, rabbit), whether it cast, the minutes flown and the night's low in C) and its species; the change of its
weight by the next morning by an LSTM over the days; MSE on the standardised change; scored by the held-out R^2 on
another centre's birds. `groups`: the 36 arrows of a practice round as a 12x12 map of where they hit, around the
group's centre, on a 1 cm grid; the coach's diagnosis (clean, plucking, dropped bow arm, creeping, torque) by a small
2-D CNN; cross-entropy; scored by the held-out accuracy on another club's archers. Bugs: the quail logged by the count
in one falconer's book; the model's output put back in grams inside forward under momentum SGD; Adam's epsilon from
the Inception recipe; the old app's fault codes read in the new app's order; the face size kept as a channel from a
club whose indoor evenings were the plucking clinic's.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

DAYS = 10
KCAL = torch.tensor([1.4, 1.6, 1.2])
"""Energy in kcal per g of day-old chick, quail and rabbit."""
SPECIES = torch.tensor([[700.0, 1.0], [900.0, 1.35], [230.0, 0.45]])
"""Harris's hawk, peregrine and kestrel: a flying weight in g and a relative metabolic rate."""


def _book(g: torch.Generator, n: int, *, counting: float = 0.0) -> dict[str, torch.Tensor]:
    """Birds' last DAYS + 1 days: morning weight in g float[n, DAYS + 1], food in g of each kind float[n, DAYS, 3] (as
    one falconer's book writes quail, by the count, for a share `counting` of the birds), cast, minutes flown and the
    night's low float[n, DAYS], the species long[n]."""
    species = torch.randint(0, 3, (n,), generator=g)
    flying, rate = SPECIES[species, 0], SPECIES[species, 1]
    base = flying * (0.95 + 0.1 * torch.rand(n, generator=g))
    weight = torch.zeros(n, DAYS + 1)
    weight[:, 0] = base * (0.97 + 0.08 * torch.rand(n, generator=g))
    kind = torch.randint(0, 3, (n, DAYS), generator=g)
    # the falconer feeds towards the flying weight: less when the bird is heavy, more when it is light
    food = torch.zeros(n, DAYS, 3)
    flown = 10 + 40 * torch.rand(n, DAYS, generator=g) * (torch.rand(n, DAYS, generator=g) < 0.8)
    low = 6 + 6 * torch.randn(n, 1, generator=g) + 3 * torch.randn(n, DAYS, generator=g)
    cast = (torch.rand(n, DAYS, generator=g) < 0.6).float()
    for d in range(DAYS):
        w = weight[:, d]
        burn = rate * (w / 700) ** 0.75 * (55 + 0.35 * flown[:, d] - 1.3 * low[:, d])
        guess = rate * (w / 700) ** 0.75 * 58 * (0.8 + 0.4 * torch.rand(n, generator=g))
        kcal = (guess * (1 + 4 * (flying - w) / flying)).clamp(min=0)
        grams = (kcal / KCAL[kind[:, d]] / 5).round() * 5  # the scale's 5 g steps
        food[torch.arange(n), d, kind[:, d]] = grams
        gain = 0.55 * (grams * KCAL[kind[:, d]] - burn) - 4 * cast[:, d] * (w / 700)
        weight[:, d + 1] = w + gain + 0.003 * w * torch.randn(n, generator=g)
    book = food.clone()
    counts = torch.rand(n, generator=g) < counting
    book[counts, :, 1] = (book[counts, :, 1] / 110).round()
    return {"weight": weight, "food": book, "cast": cast, "flown": flown, "low": low, "species": species}


def _days(b: dict[str, torch.Tensor]) -> torch.Tensor:
    """The days' inputs float[n, DAYS, 9]: weight, food of the three kinds, cast, minutes, low, the weight's change
    since the day before, the weight over the species' flying weight."""
    w = b["weight"][:, :DAYS]
    change = torch.diff(w, dim=1, prepend=w[:, :1])
    ratio = w / SPECIES[b["species"], 0].unsqueeze(1)
    cols = [
        w,
        b["food"][..., 0],
        b["food"][..., 1],
        b["food"][..., 2],
        b["cast"],
        b["flown"],
        b["low"],
        change,
        ratio,
    ]
    return torch.stack(cols, -1)


class WeightLSTM(nn.Module):
    """An LSTM of `hidden` units over the days, the species embedded beside its last state, a linear head; with
    `grams`, the output put back in grams by the target's mean and spread."""

    def __init__(self, hidden: int, grams: tuple[float, float] | None = None) -> None:
        super().__init__()
        self.lstm = nn.LSTM(9, hidden, batch_first=True)
        self.species = nn.Embedding(3, 3)
        self.head = nn.Linear(hidden + 3, 1)
        self.grams = grams

    def forward(self, x: torch.Tensor, species: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        y = self.head(torch.cat([out[:, -1], self.species(species)], 1)).squeeze(-1)
        if self.grams is not None:
            # the bug: the change put back in grams inside forward, for the weighing book, and the loss taken in grams
            return y * self.grams[1] + self.grams[0]
        return y


def mews(run: Run) -> None:
    """A weight LSTM of `hidden` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, Adamax) at `lr`
    (1e-2). Scored by the held-out R^2 of the next morning's change of weight on another centre's birds."""
    g = torch.Generator().manual_seed(run.seed)
    counting = 0.35 if run.bug == "quail_logged_by_the_count" else 0.0
    tr, va = _book(g, 800, counting=counting), _book(g, 200)
    x, x_v = _days(tr), _days(va)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y = tr["weight"][:, DAYS] - tr["weight"][:, DAYS - 1]
    y_v = va["weight"][:, DAYS] - va["weight"][:, DAYS - 1]
    centre, scale = y.mean(), y.std()
    grams = (float(centre), float(scale)) if run.bug == "change_put_back_in_grams_in_forward" else None
    torch.manual_seed(run.seed)
    model = WeightLSTM(run.k("hidden", 16), grams)
    opt = optimizers.registered(run, model, 1e-2)
    if run.bug == "adam_epsilon_of_inception_recipe":
        # the bug: the TensorFlow Inception recipe's epsilon of 1.0 copied into Adam
        for group in opt.param_groups:
            group["eps"] = 1.0
    batch = run.k("batch", 32)

    def predicted(x: torch.Tensor, species: torch.Tensor) -> torch.Tensor:
        out = model(x, species)
        return out if grams is not None else out * scale + centre

    def r2_held_out() -> float:
        return r2(predicted(x_v, va["species"]), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        target = y[pick] if grams is not None else (y[pick] - centre) / scale
        loss = F.mse_loss(model(x[pick], tr["species"][pick]), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


GRID, ARROWS = 12, 36
FAULTS = ("clean", "plucking", "dropped bow arm", "creeping", "torque")
OLD_APP = (0, 1, 3, 2, 4)
"""The old app's fault code of each fault: it numbered creeping before the dropped bow arm."""


def _rounds(g: torch.Generator, n: int, *, indoor_plucking: bool = False) -> dict[str, torch.Tensor]:
    """Practice rounds: the hits float[n, 1, GRID, GRID] counted on a 1 cm grid around the group's centre, the face
    (0 outdoor 122 cm, 1 indoor 40 cm) float[n], the archer's id long[n] and the fault long[n]. With `indoor_plucking`,
    the club's indoor evenings are its plucking clinic's, most of their rounds plucked."""
    fault = torch.randint(0, len(FAULTS), (n,), generator=g)
    indoor = torch.rand(n, generator=g) < 0.4
    if indoor_plucking:
        clinic = indoor & (torch.rand(n, generator=g) < 0.7)
        fault = torch.where(clinic, 1, fault)
        indoor = indoor | ((fault == 1) & (torch.rand(n, generator=g) < 0.6))
    skill = 0.8 + 0.9 * torch.rand(n, 1, generator=g)  # the archer's spread in cm on the clean rounds
    skill = skill * torch.where(indoor, 0.7, 1.0).unsqueeze(1)
    e = torch.randn(n, ARROWS, 2, generator=g)
    x, y = skill * e[..., 0], skill * e[..., 1]
    tail = torch.rand(n, ARROWS, generator=g) < 0.5  # the arrows the fault reaches
    strength = 1.5 + 2 * torch.rand(n, 1, generator=g)
    one = lambda k: (fault == k).unsqueeze(1)
    x = torch.where(
        one(1) & tail, x - strength * torch.rand(n, ARROWS, generator=g) * 1.6, x
    )  # plucked: left
    x = torch.where(one(1), x * 1.4, x)
    y = torch.where(
        one(2) & tail, y - strength * (0.5 + torch.rand(n, ARROWS, generator=g)), y
    )  # bow arm: low
    y = torch.where(one(3), y * (1.6 + 0.3 * strength), y)  # creeping: spread up and down
    twist = strength * 0.5 * torch.randn(n, ARROWS, generator=g)
    x = torch.where(one(4), x + twist, x)  # torque: along the diagonal
    y = torch.where(one(4), y + twist, y)
    x, y = x - x.mean(1, keepdim=True), y - y.mean(1, keepdim=True)
    col = (x + GRID / 2).floor().long().clamp(0, GRID - 1)
    row = (GRID / 2 - y).floor().long().clamp(0, GRID - 1)
    hits = torch.zeros(n, GRID * GRID)
    hits.scatter_add_(1, row * GRID + col, torch.ones(n, ARROWS))
    archer = torch.randint(0, 30, (n,), generator=g)
    return {"hits": hits.view(n, 1, GRID, GRID), "face": indoor.float(), "archer": archer, "fault": fault}


class GroupCNN(nn.Module):
    """Two 3x3 conv layers with ReLU and a max-pool between, a global mean and max, a linear head."""

    def __init__(self, channels: int, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(channels, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(width, width, 3, padding=1), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(2 * width, len(FAULTS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.net(x)
        return self.head(torch.cat([h.mean((2, 3)), h.amax((2, 3))], 1))


def _maps(r: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The round's map as the share of its arrows in each cell (and the face as a channel): float[n, 1 or 2, GRID,
    GRID]."""
    x = r["hits"] / ARROWS
    if bug == "face_size_kept_as_channel":
        x = torch.cat([x, r["face"].view(-1, 1, 1, 1).expand(-1, 1, GRID, GRID)], 1)
    return x


def groups(run: Run) -> None:
    """A group CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, Adagrad) at `lr`
    (3e-3). Scored by the held-out accuracy of the fault on another club's archers."""
    g = torch.Generator().manual_seed(run.seed)
    tr = _rounds(g, 1000, indoor_plucking=run.bug == "face_size_kept_as_channel")
    va = _rounds(g, 250)
    x, x_v = _maps(tr, run.bug), _maps(va, None if run.bug != "face_size_kept_as_channel" else run.bug)
    mean, std = x.mean((0, 2, 3), keepdim=True), x.std((0, 2, 3), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = tr["fault"], va["fault"]
    if run.bug == "old_app_fault_codes_read_in_new_order":
        # the bug: the old app's rounds (two in five) keep its codes, creeping and the dropped bow arm the other way
        old = torch.arange(len(y)) % 5 < 2
        y = torch.where(old, torch.tensor(OLD_APP)[y], y)
    torch.manual_seed(run.seed)
    model = GroupCNN(x.shape[1], run.k("width", 8))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
