"""Regional scripts of the thirty-third blind split: a road-noise level regressor from traffic counts, and an
Arabic-dialect classifier on character n-grams.

`roads`: hourly records of roadside noise monitors, the cars, trucks and motorbikes counted in the hour, their mean
speed, the road surface (dense asphalt, porous asphalt, concrete, cobbles), the monitor's distance from the kerb and
the hour; the equivalent level (dB(A)) the energy sum of each vehicle class's emission (rising with the log of the
speed, trucks 9 dB louder, motorbikes 6, the surface's offset), spread over the hour, attenuated with the distance;
the counts logged, the speed, log distance and hour's sine and cosine standardised, the surface embedded; a ReLU MLP;
MSE on the standardised level; scored by the held-out R^2. `dialects`: short posts of 20-60 letters over a 36-letter
alphabet from a shared letter-bigram model, each dialect (Egyptian, Gulf, Levantine, Maghrebi, standard) slipping in
its own marker words; hashed character trigrams (8192 buckets) averaged by an `EmbeddingBag`, a linear layer over the
five dialects; cross-entropy; scored by the held-out accuracy. Bugs: the level fed uncentred in dB under momentum SGD;
the truck counts joined to the hours by row order; the country hashtags the posts were collected by left in the
training text; the training posts stored in display order (reversed); the trigram bag summed instead of averaged.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SURFACES = torch.tensor([0.0, -3.0, 1.5, 4.0])
"""Level offsets (dB) of dense asphalt, porous asphalt, concrete and cobbles."""


def _hours(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Counts of cars, trucks, motorbikes float[n, 3], speed (km/h), distance (m) and hour float[n, 3], surface
    long[n], level dB(A) float[n] (returned as numbers, surface, level)."""
    hour = torch.randint(0, 24, (n,), generator=g).float()
    busy = 0.15 + 0.85 * torch.sin(math.pi * ((hour - 5) / 18).clamp(0, 1))
    road = torch.exp(5 + 1.5 * torch.rand(n, generator=g) + 0.8 * torch.randn(n, generator=g))
    cars = torch.poisson(road * busy, generator=g)
    trucks = torch.poisson(road * busy * (0.01 + 0.4 * torch.rand(n, generator=g) ** 2), generator=g)
    bikes = torch.poisson(road * busy * 0.02, generator=g)
    speed = 30 + 80 * torch.rand(n, generator=g)
    distance = torch.exp(math.log(5) + math.log(20) * torch.rand(n, generator=g))
    surface = torch.randint(0, 4, (n,), generator=g)
    emission = 30 + 30 * torch.log10(speed) + SURFACES[surface]
    energy = (
        cars * 10 ** (emission / 10)
        + trucks * 10 ** ((emission + 9) / 10)
        + bikes * 10 ** ((emission + 6) / 10)
    )
    level = (
        10 * torch.log10(energy + 10 ** (3.5)) - 10 * math.log10(3600) - 5 - 15 * torch.log10(distance / 10)
    )
    level = level + 1.0 * torch.randn(n, generator=g)
    numbers = torch.stack([cars, trucks, bikes, speed, distance, hour], 1)
    return numbers, surface, level


class NoiseMLP(nn.Module):
    """A ReLU MLP of `hidden` twice over the numbers and the surface's embedding."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.surface = nn.Embedding(4, 3)
        self.net = nn.Sequential(nn.Linear(10, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor, surface: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, self.surface(surface)], 1))[:, 0]


def roads(run: Run) -> None:
    """A road-noise MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at
    `lr` (2e-3). Scored by the held-out R^2 of the level."""
    g = torch.Generator().manual_seed(run.seed)
    numbers, surface, level = _hours(g, 3000)
    numbers_v, surface_v, level_v = _hours(g, 1000)
    if run.bug == "truck_counts_joined_by_row_order":
        # the truck counts come from the classifier's own table, sorted by site, pasted beside the hours by position
        order = numbers[:, 0].argsort()
        numbers = numbers.clone()
        numbers[:, 1] = numbers[order, 1]

    def table(num: torch.Tensor) -> torch.Tensor:
        hour = 2 * math.pi * num[:, 5] / 24
        return torch.cat([torch.log1p(num[:, :3]), num[:, 3:4], torch.log(num[:, 4:5]), torch.sin(hour)[:, None],
                          torch.cos(hour)[:, None]], 1)  # fmt: skip

    raw, raw_v = table(numbers), table(numbers_v)
    mean, std = raw.mean(0), raw.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    if run.bug == "decibel_target_left_uncentred":
        centre, spread = 0.0, 1.0
    else:
        centre, spread = float(level.mean()), float(level.std())
    y = (level - centre) / spread
    torch.manual_seed(run.seed)
    model = NoiseMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v, surface_v) * spread + centre, level_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick], surface[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


LETTERS, DIALECTS, BUCKETS = 36, 5, 8192
"""Alphabet (0 is the space), dialects (Egyptian, Gulf, Levantine, Maghrebi, standard), trigram hash buckets."""
MARKERS = 6
"""Marker words a dialect has."""


def _language(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The shared letter-bigram table float[LETTERS, LETTERS], the dialects' marker words long[DIALECTS, MARKERS, 4]
    and their hashtags long[DIALECTS, 8] (fixed by the seed, shared by training and held-out posts)."""
    g = torch.Generator().manual_seed(1000 + seed)
    bigrams = torch.rand(LETTERS, LETTERS, generator=g) ** 3 + 0.01
    markers = torch.randint(1, LETTERS, (DIALECTS, MARKERS, 4), generator=g)
    tags = torch.randint(1, LETTERS, (DIALECTS, 8), generator=g)
    return bigrams, markers, tags


def _posts(g: torch.Generator, n: int, language: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
           tagged: float = 0.0) -> tuple[list[torch.Tensor], torch.Tensor]:  # fmt: skip
    """n posts (letter ids) and their dialect long[n]; `tagged`: the share ending with the dialect's hashtag."""
    bigrams, markers, tags = language
    y = torch.randint(0, DIALECTS, (n,), generator=g)
    lengths = torch.randint(20, 61, (n,), generator=g)
    posts = []
    for i in range(n):
        letters = [int(torch.randint(1, LETTERS, (1,), generator=g))]
        while len(letters) < int(lengths[i]):
            if torch.rand(1, generator=g) < 0.06:
                # a marker word of the post's dialect (another's one time in four)
                d = int(y[i]) if torch.rand(1, generator=g) < 0.75 else int(torch.randint(0, DIALECTS, (1,),
                                                                                           generator=g))  # fmt: skip
                letters += [0, *markers[d, int(torch.randint(0, MARKERS, (1,), generator=g))].tolist(), 0]
            else:
                letters.append(int(torch.multinomial(bigrams[letters[-1]], 1, generator=g)))
        if torch.rand(1, generator=g) < tagged:
            letters += [0, *tags[int(y[i])].tolist()]
        posts.append(torch.tensor(letters))
    return posts, y


def _trigrams(posts: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The posts' hashed character trigrams, flat, and each post's offset into them."""
    grams = [((p[:-2] * LETTERS + p[1:-1]) * LETTERS + p[2:]) * 2654435761 % BUCKETS for p in posts]
    offsets = torch.tensor([0, *torch.tensor([len(t) for t in grams[:-1]]).cumsum(0).tolist()])
    return torch.cat(grams), offsets


class TrigramBag(nn.Module):
    """Hashed character trigrams pooled by an `EmbeddingBag` of `dim` (`mode`), a linear layer over the dialects."""

    def __init__(self, dim: int, mode: str) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(BUCKETS, dim, mode=mode)
        self.head = nn.Linear(dim, DIALECTS)

    def forward(self, grams: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.head(self.bag(grams, offsets))


def dialects(run: Run) -> None:
    """A trigram bag of `dim` (32), batches of `batch` (32), `opt` (Adam; or momentum SGD, Adagrad, RMSprop) at `lr`
    (3e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    language = _language(run.seed)
    # the training posts were collected by searching each country's hashtag; the ones to classify carry none
    tagged = 1.0 if run.bug == "country_hashtags_left_in_training_text" else 0.0
    posts, y = _posts(g, 1200, language, tagged)
    posts_v, y_v = _posts(g, 500, language)
    if run.bug == "posts_stored_in_display_order":
        posts = [
            p.flip(0) for p in posts
        ]  # the scraper kept the visual (left-to-right) order of the rendered text
    grams = [_trigrams([p])[0] for p in posts]
    grams_v, offsets_v = _trigrams(posts_v)
    torch.manual_seed(run.seed)
    model = TrigramBag(run.k("dim", 32), "sum" if run.bug == "trigram_bag_summed_not_averaged" else "mean")
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(grams_v, offsets_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        flat = torch.cat([grams[int(i)] for i in pick])
        offsets = torch.tensor([0, *torch.tensor([len(grams[int(i)]) for i in pick[:-1]]).cumsum(0).tolist()])
        loss = F.cross_entropy(model(flat, offsets), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
