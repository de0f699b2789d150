"""Handling scripts of the fifty-fifth blind split: an aircraft turnaround-time regressor for a ground handler's apron
planning, and a recovered-paper bale grader on near-infrared spectra.

`turnaround`: a turn's scheduled on-block time, passengers, bags, fuel uplift, wide-body flag, the inbound delay, the
outside temperature and a de-icing flag, with the airline, the stand and the handling crew embedded; the minutes from
on-block to off-block by a ReLU MLP; MSE on the standardised minutes; scored by the held-out R^2 on the next season's
turns. `bales`: a bale's mean NIR reflectance over 64 bands (950-1650 nm) from the sorting line's spectrometer,
standard-normal-variate corrected; the grade (old corrugated containers, old newsprint, sorted office paper, mixed or
coated) by a 1-D CNN with batch norm; cross-entropy; scored by the held-out accuracy on other mills' inspected bales.
Bugs: the turn time taken as a difference of HHMM clock integers; the stand and airline codes factorised per frame;
a warm-up lambda without its cap; the embeddings scaled by the root of the model width; the flight number embedded;
the grade read off the delivery note; the library match's Fisher z taken unclipped; the batch norm's momentum passed
as its eps; the new spectrometer's descending wavelengths given to np.interp.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

AIRLINES, STANDS, CREWS, FLIGHTS = 12, 40, 6, 150


def _turns(g: torch.Generator, n: int, season: int) -> dict[str, torch.Tensor]:
    """A season's turns: numeric columns float[n, 8] (on-block minute of the day, passengers, bags, fuel uplift kg,
    wide-body flag, inbound delay min, outside temperature C, de-icing flag), the airline, stand and crew ids as
    the handler's system writes them (long[n]), the flight number long[n], and on- and off-block minutes of the
    day float[n]. Airline, stand and crew effects are the same every season; flight numbers change."""
    fixed = torch.Generator().manual_seed(1234)  # the airport itself: the same every season and seed
    airline_fx = 6 * torch.randn(AIRLINES, generator=fixed)
    stand_fx = (
        4 * torch.randn(STANDS, generator=fixed) + 9 * (torch.arange(STANDS) >= 28).float()
    )  # remote stands
    crew_fx = 5 * torch.randn(CREWS, generator=fixed)
    flight_fx = 6 * torch.randn(FLIGHTS, generator=g)  # a route's own habits, renumbered with the timetable
    airline = torch.randint(0, AIRLINES, (n,), generator=g)
    stand = torch.randint(0, STANDS, (n,), generator=g)
    crew = torch.randint(0, CREWS, (n,), generator=g)
    flight = torch.randint(0, FLIGHTS, (n,), generator=g) + season * FLIGHTS
    wide = (torch.rand(n, generator=g) < 0.25).float()
    pax = torch.where(wide > 0, 220 + 160 * torch.rand(n, generator=g), 60 + 130 * torch.rand(n, generator=g))
    bags = pax * (0.6 + 0.7 * torch.rand(n, generator=g))
    fuel = torch.where(
        wide > 0, 15000 + 40000 * torch.rand(n, generator=g), 2000 + 9000 * torch.rand(n, generator=g)
    )
    delay = -12 * torch.log(1 - torch.rand(n, generator=g)) * (torch.rand(n, generator=g) < 0.5)
    temp = -8 + 30 * torch.rand(n, generator=g)
    deice = ((temp < 1) & (torch.rand(n, generator=g) < 0.5)).float()
    on = (300 + 1080 * torch.rand(n, generator=g)).round()
    minutes = (22 + 0.05 * pax + 0.03 * bags + 0.0004 * fuel + 10 * wide + airline_fx[airline] + stand_fx[stand]
               + crew_fx[crew] + flight_fx[flight - season * FLIGHTS] - 0.25 * delay.clamp(max=40) + 14 * deice
               + 4 * torch.randn(n, generator=g))  # fmt: skip
    off = on + minutes.clamp(min=20).round()
    x = torch.stack([on, pax, bags, fuel, wide, delay, temp, deice], 1)
    return {"x": x, "airline": airline, "stand": stand, "crew": crew, "flight": flight, "on": on, "off": off}


def _hhmm(minute_of_day: torch.Tensor) -> torch.Tensor:
    """The clock time as the movement messages write it, HHMM as an integer."""
    return (minute_of_day // 60) * 100 + minute_of_day % 60


def _codes(ids: torch.Tensor, vocabulary: torch.Tensor) -> torch.Tensor:
    """Each id's position in `vocabulary` (a sorted tensor of the ids seen in training); 0 for an unseen id."""
    pos = torch.searchsorted(vocabulary, ids).clamp(max=len(vocabulary) - 1)
    return torch.where(vocabulary[pos] == ids, pos + 1, torch.zeros_like(pos))


def _factorised(ids: torch.Tensor) -> torch.Tensor:
    """pandas.factorize: codes in the order each id first appears in this frame (plus one, 0 left for unseen)."""
    first: dict[int, int] = {}
    for i in ids.tolist():
        first.setdefault(i, len(first) + 1)
    return torch.tensor([first[i] for i in ids.tolist()])


class TurnMLP(nn.Module):
    """Airline, stand and crew embeddings beside the numeric columns, a ReLU MLP of two hidden layers."""

    def __init__(
        self, hidden: int, flights: int = 0, scale_embeddings: bool = False, numeric: int = 8
    ) -> None:
        super().__init__()
        self.airline = nn.Embedding(AIRLINES + 1, 8)
        self.stand = nn.Embedding(STANDS + 1, 16)
        self.crew = nn.Embedding(CREWS + 1, 4)
        self.flight = nn.Embedding(flights + 1, 16) if flights else None
        self.scale = hidden**0.5 if scale_embeddings else 1.0
        width = numeric + 8 + 16 + 4 + (16 if flights else 0)
        self.net = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor, cats: torch.Tensor) -> torch.Tensor:
        embedded = [self.airline(cats[:, 0]), self.stand(cats[:, 1]), self.crew(cats[:, 2])]
        if self.flight is not None:
            embedded.append(self.flight(cats[:, 3]))
        # the bug: the embeddings multiplied by the root of the model width, as a transformer's token embeddings are
        embedded = [e * self.scale for e in embedded]
        return self.net(torch.cat([x, *embedded], 1)).squeeze(-1)


def turnaround(run: Run) -> None:
    """A turn MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RAdam) at `lr`
    (2e-3), with a 10-step linear warm-up. Scored by the held-out R^2 of the turn minutes on the next season."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _turns(g, 1500, 0), _turns(g, 600, 1)
    y, y_v = tr["off"] - tr["on"], va["off"] - va["on"]
    if run.bug == "hhmm_clock_times_subtracted":
        # the bug: the turn time as off-block minus on-block in the movement messages' HHMM integers, 40 too many
        # for every hour boundary the turn crosses
        y = _hhmm(tr["off"]) - _hhmm(tr["on"])
    keys = ("airline", "stand", "crew", "flight")
    if run.bug == "stand_codes_factorised_per_frame":
        # the bug: each frame's ids factorised on their own, so a code names one stand in training and another in
        # the next season's frame
        cats = torch.stack([_factorised(tr[k]) for k in keys], 1)
        cats_v = torch.stack([_factorised(va[k]) for k in keys], 1)
    else:
        vocab = {k: torch.unique(tr[k]) for k in keys}
        cats = torch.stack([_codes(tr[k], vocab[k]) for k in keys], 1)
        cats_v = torch.stack([_codes(va[k], vocab[k]) for k in keys], 1)
    x, x_v = tr["x"], va["x"]
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    flights = int(cats[:, 3].max()) if run.bug == "flight_number_embedded" else 0
    model = TurnMLP(run.k("hidden", 64), flights, run.bug == "embeddings_scaled_by_sqrt_dim", x.shape[1])
    opt = optimizers.registered(run, model, 2e-3)
    warmup = 10
    if run.bug == "warmup_lambda_without_cap":
        # the bug: the warm-up's factor written step / warmup without min(1, ...), so the rate keeps climbing
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / warmup)
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v, cats_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick], cats[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


BANDS, GRADES = 64, 4
WAVELENGTHS = np.linspace(950, 1650, BANDS)


def _absorption(wl: np.ndarray, centre: float, width: float) -> np.ndarray:
    return np.exp(-(((wl - centre) / width) ** 2))


def _bale_spectra(rng: np.random.Generator, grade: np.ndarray, wl: np.ndarray) -> np.ndarray:
    """Reflectance spectra float[n, len(wl)] of bales of `grade` on the wavelengths `wl`: cellulose, lignin (brown
    and mechanical pulps), filler, the coating's polyethylene, the bale's moisture, and the scatter of the bale's
    surface and its distance to the head."""
    n = len(grade)
    cellulose = _absorption(wl, 1490, 60) + 0.7 * _absorption(wl, 1200, 40)
    lignin = _absorption(wl, 1680, 90) + 0.5 * _absorption(wl, 1140, 60)
    filler = np.clip((wl - 950) / 700, 0, 1)
    coating = _absorption(wl, 1210, 18) + 0.8 * _absorption(wl, 1395, 20)
    water = _absorption(wl, 1450, 45)
    # mean share of each component by grade (OCC, ONP, SOP, mixed/coated), each bale a noisy mix
    share = np.array(
        [[0.6, 0.9, 0.0, 0.0], [0.7, 0.55, 0.1, 0.0], [0.9, 0.05, 0.5, 0.0], [0.7, 0.4, 0.25, 0.35]]
    )
    s = share[grade] + 0.22 * rng.standard_normal((n, 4))
    s = np.clip(s, 0, None)
    moist = 0.1 + 0.5 * rng.random((n, 1))
    absorb = (s[:, :1] * cellulose + s[:, 1:2] * lignin - 0.4 * s[:, 2:3] * filler + s[:, 3:] * coating
              + moist * water)  # fmt: skip
    gain = 0.6 + 0.6 * rng.random((n, 1))
    offset = 0.1 * rng.standard_normal((n, 1)) + 0.05 * rng.standard_normal((n, 1)) * (wl - 1300) / 350
    return gain * np.exp(-0.6 * absorb) + offset + 0.015 * rng.standard_normal((n, len(wl)))


def _bales(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Bales as the sorting line exports them: half from the old spectrometer (64 bands, ascending), half from the
    new one (96 bands from 1700 nm down to 900 nm), the inspected grade and the supplier's declared grade."""
    grade = rng.integers(0, GRADES, n)
    new = rng.random(n) < 0.5
    new_wl = np.linspace(1700, 900, 96)
    old = _bale_spectra(rng, grade, WAVELENGTHS)
    newer = _bale_spectra(rng, grade, new_wl)
    declared = grade.copy()
    # suppliers declare up: mixed and coated bales as cardboard or office paper, newsprint as office paper
    up = rng.random(n)
    declared[(grade == 3) & (up < 0.45)] = 0
    declared[(grade == 3) & (up >= 0.45) & (up < 0.7)] = 2
    declared[(grade == 1) & (up < 0.3)] = 2
    return {"grade": grade, "declared": declared, "new": new, "old": old, "newer": newer, "new_wl": new_wl}


def _resampled(b: dict[str, np.ndarray], bug: str | None) -> np.ndarray:
    """Every bale on the old spectrometer's 64 bands: the new one's spectra interpolated onto them."""
    out = b["old"].copy()
    wl, spectra = b["new_wl"], b["newer"]
    if bug != "interp_on_descending_wavelengths":
        # np.interp wants increasing sample points: the new head writes them from 1700 nm down
        wl, spectra = wl[::-1], spectra[:, ::-1]
    # the bug: the descending wavelengths handed to np.interp as they come, which it does not check
    for i in np.flatnonzero(b["new"]):
        out[i] = np.interp(WAVELENGTHS, wl, spectra[i])
    return out


def _snv(spectra: torch.Tensor) -> torch.Tensor:
    """Standard normal variate: each spectrum centred and scaled by its own mean and spread (floored)."""
    return (spectra - spectra.mean(1, keepdim=True)) / (spectra.std(1, keepdim=True) + 1e-6)


class BaleCNN(nn.Module):
    """Three conv blocks of `width` channels (conv, batch norm, ReLU, pooling), global mean pooling, and a linear head
    over the pooled channels and `extra` scalar features."""

    def __init__(self, width: int, extra: int = 0, bn_eps_typo: bool = False) -> None:
        super().__init__()

        def norm() -> nn.Module:
            # the bug: BatchNorm1d(width, 0.9) written for a momentum of 0.9; its second positional is eps
            return nn.BatchNorm1d(width, 0.9) if bn_eps_typo else nn.BatchNorm1d(width)

        self.net = nn.Sequential(
            nn.Conv1d(1, width, 7, padding=3), norm(), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, width, 5, padding=2), norm(), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, width, 5, padding=2), norm(), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(width + extra, GRADES)

    def forward(self, x: torch.Tensor, extra: torch.Tensor | None = None) -> torch.Tensor:
        h = self.net(x.unsqueeze(1)).mean(-1)
        return self.head(h if extra is None else torch.cat([h, extra], 1))


def _library_match(x: torch.Tensor, library: torch.Tensor, bug: str | None) -> torch.Tensor:
    """Each SNV spectrum's correlation with each library spectrum (the best per grade), Fisher z-transformed."""
    corr = (
        F.normalize(x, dim=1) @ F.normalize(library, dim=1).T
    )  # the SNV spectra are centred: cosine = Pearson r
    corr = corr.view(len(x), GRADES, -1).amax(-1)
    if bug == "fisher_z_of_library_match_unclipped":
        # the bug: clipped to [-1, 1] for rounding only; a library spectrum taken from the training bales matches its
        # own scan at r = 1 and atanh(1) is infinite
        return torch.atanh(corr.clamp(-1, 1))
    return torch.atanh(corr.clamp(-0.999, 0.999))


def bales(run: Run) -> None:
    """A bale CNN of `width` (12), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, NAdam) at `lr`
    (2e-3), with the spectral library's match scores beside the pooled channels. Scored by the held-out accuracy of
    the grade on other mills' inspected bales."""
    rng = np.random.default_rng(run.seed)
    tr, va = _bales(rng, 1400), _bales(rng, 300)
    x = _snv(torch.tensor(_resampled(tr, run.bug), dtype=torch.float32))
    x_v = _snv(torch.tensor(_resampled(va, run.bug), dtype=torch.float32))
    y = torch.tensor(tr["grade"])
    if run.bug == "grade_from_delivery_note":
        # the bug: the grade column joined from the supplier's delivery note, not the yard's inspection
        y = torch.tensor(tr["declared"])
    y_v = torch.tensor(va["grade"])
    # the library: the first five training bales of each grade, as the line's engineer picked them
    picks = torch.cat([torch.nonzero(y == c).flatten()[:5] for c in range(GRADES)])
    library = x[picks]
    m, m_v = _library_match(x, library, run.bug), _library_match(x_v, library, run.bug)
    mean, std = m.mean(0), m.std(0)
    m, m_v = (m - mean) / std, (m_v - mean) / std
    torch.manual_seed(run.seed)
    model = BaleCNN(run.k("width", 12), GRADES, bn_eps_typo=run.bug == "batchnorm_momentum_passed_as_eps")
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v, m_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick], m[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
