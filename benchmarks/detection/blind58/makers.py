"""Makers' scripts of the fifty-eighth blind split: a glass studio's annealing-crack warning from its annealer's
controller log, and a bicycle factory's wheel-truing check on the truing stand's rim profiles.

`anneal`: the annealer's temperature, logged every 10 minutes over 8 hours from the garage soak at the annealing
point down to room temperature, with its rate of change, by a small 1-D CNN, its pooled features joined to the
piece's thickness and the mismatch between its base glass's and its colour's expansion coefficients; whether the
piece cracked within the week; BCE with logits; scored by the held-out AUC on another studio's pieces. `truing`: the
lateral runout and the radial hop at 64 points round a trued rim, from the valve hole, in mm; an autoencoder (a 1-D
CNN encoder with circular padding, a code of 8, a linear decoder) trained on the wheels that passed; MSE; scored by
the held-out AUC of the reconstruction error for the wheels with a dented rim or a loose spoke. Bugs: the colour
supplier's coefficients in 1e-6/K among the studio's 1e-7/K; the controller's export cut after the soak; momentum
SGD given the momentum as its dampening; each piece's loss weighted by its price; the rim profiles zero-padded; the
second stand's profiles in micrometres.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES = 48


def _pieces(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """A studio's pieces: the annealer's log float[n, SAMPLES] in C, the samples of its soak long[n], the thickness in mm float[n], the base glass's
    and the colour's expansion coefficients in 1e-7/K float[n] each, whether the colour came from the second supplier
    bool[n], whether the piece cracked float[n] and its price in euros float[n]."""
    thick = 3 + 22 * torch.rand(n, generator=g)
    soak = (6 + 8 * torch.rand(n, generator=g)).round()  # samples at the annealing point
    anneal_pt = 505 + 15 * torch.rand(n, 1, generator=g)
    slow = 0.6 + 2.4 * torch.rand(n, 1, generator=g)  # C per minute through the strain range
    fast = 1.5 + 3 * torch.rand(n, 1, generator=g)
    t = torch.arange(SAMPLES).float().view(1, -1)
    after = (t - soak.view(-1, 1)).clamp(min=0) * 10  # minutes since the soak ended
    strain = 65.0
    first = torch.minimum(after * slow, torch.full_like(after, strain))
    second = (after - strain / slow).clamp(min=0) * fast
    temp = (anneal_pt - first - second).clamp(min=22)
    temp = temp + 1.5 * torch.randn(n, SAMPLES, generator=g)
    base = 96 + 0.8 * torch.randn(n, generator=g)
    colour = 96 + 2.5 * torch.randn(n, generator=g)
    second_supplier = torch.rand(n, generator=g) < 0.5
    # stress from cooling through the strain range too fast for the thickness, from a short soak and from the
    # colour's mismatch with the base glass
    need = 1.2 * (thick / 10) ** 2
    risk = (1.3 * slow.squeeze(1) * thick / 10 + 0.5 * (need - soak * 10 / 60).clamp(min=0)
            + 0.6 * (colour - base).abs() - 3.6)  # fmt: skip
    crack = (torch.rand(n, generator=g) < torch.sigmoid(1.2 * risk)).float()
    # what the piece sold for, in euros, by its size and the colour work in it
    price = 30 + 25 * thick * (1 + torch.rand(n, generator=g))
    return {
        "temp": temp,
        "soak": soak.long(),
        "thick": thick,
        "base": base,
        "colour": colour,
        "second": second_supplier,
        "crack": crack,
        "price": price,
    }


def _inputs(p: dict[str, torch.Tensor], bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The trace's channels float[n, 2, L] (the temperature less 300 over 200, its rate per 10 minutes over 10) and
    the piece's columns float[n, 2] (thickness, expansion mismatch), before standardising the columns."""
    temp = p["temp"]
    if bug == "controller_export_cut_after_soak":
        # the bug: the controller's export holds the program's first segments only, up to the end of the soak, and
        # the loader pads each log to its length with its last reading, so the cooling never reaches the script
        last = temp.gather(1, (p["soak"] - 1).view(-1, 1))
        temp = torch.where(torch.arange(SAMPLES).view(1, -1) < p["soak"].view(-1, 1), temp, last)
    rate = torch.diff(temp, dim=1, prepend=temp[:, :1])
    trace = torch.stack([(temp - 300) / 200, rate / 10], 1)
    colour = p["colour"]
    if bug == "colour_coefficient_in_ppm_from_second_supplier":
        # the bug: the second supplier's catalogue gives the expansion in 1e-6/K (9.6 for 96), entered as printed
        colour = torch.where(p["second"], colour / 10, colour)
    cols = torch.stack([p["thick"], (colour - p["base"]).abs()], 1)
    return trace, cols


class CrackNet(nn.Module):
    """Two 1-D conv layers of `width` channels with ReLU over the log, a mean and a max over time, joined to the
    piece's columns, and a linear head to one logit."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(2, width, 5, padding=2), nn.ReLU(), nn.Conv1d(width, width, 5, padding=2),
                                  nn.ReLU())  # fmt: skip
        self.head = nn.Sequential(nn.Linear(2 * width + 2, width), nn.ReLU(), nn.Linear(width, 1))

    def forward(self, trace: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        h = self.conv(trace)
        return self.head(torch.cat([h.mean(-1), h.amax(-1), cols], 1)).squeeze(-1)


def anneal(run: Run) -> None:
    """A crack net of `width` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, NAdam) at `lr`
    (2e-3). Scored by the held-out AUC of the cracks on another studio's pieces."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _pieces(g, 1000), _pieces(g, 400)
    trace, cols = _inputs(tr, run.bug)
    trace_v, cols_v = _inputs(va, run.bug if run.bug == "controller_export_cut_after_soak" else None)
    if run.bug == "colour_coefficient_in_ppm_from_second_supplier":
        # the other studio's sheet is entered the same way
        trace_v, cols_v = _inputs(va, run.bug)
    mean, std = cols.mean(0), cols.std(0)
    cols, cols_v = (cols - mean) / std, (cols_v - mean) / std
    y = tr["crack"]
    # the bug: each piece's loss weighted by its price in euros, so that the dear pieces count more, unnormalised
    weight = tr["price"] if run.bug == "loss_weighted_by_piece_price" else torch.ones_like(y)
    torch.manual_seed(run.seed)
    model = CrackNet(run.k("width", 16))
    if run.bug == "momentum_given_as_dampening":
        # the bug: the config's momentum of 0.9 passed as SGD's dampening too, each gradient scaled by 1 - 0.9 as it
        # enters the momentum buffer
        opt: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=run.k("lr", 2e-3), momentum=0.9,
                                                     dampening=0.9)  # fmt: skip
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def auc_held_out() -> float:
        return auc(model(trace_v, cols_v), va["crack"])

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(
            model(trace[pick], cols[pick]), y[pick], weight=weight[pick]
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


POINTS, SPOKES = 64, 32


def _wheels(g: torch.Generator, n: int, faulty: float) -> dict[str, torch.Tensor]:
    """Trued wheels' profiles float[n, 2, POINTS] (lateral runout, radial hop, mm, from the valve hole), whether the
    wheel has a dented rim or a loose spoke float[n] (a share `faulty`) and whether it was measured on the second
    stand bool[n]."""
    a = torch.arange(POINTS).float().view(1, 1, -1) * 2 * torch.pi / POINTS
    prof = torch.zeros(n, 2, POINTS)
    for k in (1, 2, 3):  # the spoke tensions' low harmonics left after truing
        amp = 0.12 / k * torch.rand(n, 2, 1, generator=g)
        phase = 2 * torch.pi * torch.rand(n, 2, 1, generator=g)
        prof = prof + amp * torch.cos(k * a + phase)
    # the rim's welded or pinned joint, opposite the valve hole: a small bump in the hop and a kink sideways
    joint = torch.exp(-((torch.arange(POINTS).float() - POINTS / 2) ** 2) / 3).view(1, -1)
    prof[:, 1] += (0.05 + 0.1 * torch.rand(n, 1, generator=g)) * joint
    prof[:, 0] += 0.04 * torch.randn(n, 1, generator=g) * joint
    bad = torch.rand(n, generator=g) < faulty
    where = torch.randint(0, POINTS, (n, 1), generator=g).float()
    d = (torch.arange(POINTS).float().view(1, -1) - where).abs()
    d = torch.minimum(d, POINTS - d)
    dent = torch.rand(n, generator=g) < 0.5
    size = 0.12 + 0.25 * torch.rand(n, 1, generator=g)
    local = torch.exp(-(d**2) / 1.5) * size * bad.view(-1, 1)
    side = torch.where(torch.rand(n, 1, generator=g) < 0.5, -1.0, 1.0)
    prof[:, 1] -= local * dent.view(-1, 1)  # a dent: the hop dips sharply
    prof[:, 0] += 0.4 * local * dent.view(-1, 1) * side
    # a loose spoke: the rim pulled away from its side over the spokes next to it
    wide = torch.exp(-(d**2) / 8) * size * bad.view(-1, 1) * (~dent).view(-1, 1)
    prof[:, 0] += wide * side
    prof[:, 1] += 0.3 * wide
    prof = prof + 0.015 * torch.randn(n, 2, POINTS, generator=g)
    return {"prof": prof, "bad": bad.float(), "second": torch.rand(n, generator=g) < 0.4}


class TruingAE(nn.Module):
    """A 1-D CNN encoder (`width` channels, two stride-2 layers, padding `mode`), a code of 8 and a linear decoder
    back to the profile."""

    def __init__(self, width: int, mode: str = "circular") -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv1d(2, width, 5, padding=2, padding_mode=mode), nn.ReLU(),
            nn.Conv1d(width, width, 5, stride=2, padding=2, padding_mode=mode), nn.ReLU(),
            nn.Conv1d(width, width, 5, stride=2, padding=2, padding_mode=mode), nn.ReLU(),
            nn.Flatten(), nn.Linear(width * POINTS // 4, 8),
        )  # fmt: skip
        self.decoder = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 2 * POINTS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x)).view(-1, 2, POINTS)


def truing(run: Run) -> None:
    """A truing autoencoder of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, Adamax)
    at `lr` (2e-3). Scored by the held-out AUC of the reconstruction error for the faulty wheels."""
    g = torch.Generator().manual_seed(run.seed)
    tr = _wheels(g, 800, faulty=0.0)
    va = _wheels(g, 300, faulty=0.3)
    prof = tr["prof"]
    if run.bug == "second_stand_profiles_in_micrometres":
        # the bug: the second stand's export writes micrometres; its rows are read as the first stand's mm
        prof = torch.where(tr["second"].view(-1, 1, 1), 1000 * prof, prof)
    mean, std = prof.mean((0, 2), keepdim=True), prof.std((0, 2), keepdim=True)
    x, x_v = (prof - mean) / std, (va["prof"] - mean) / std
    torch.manual_seed(run.seed)
    model = TruingAE(run.k("width", 8), "zeros" if run.bug == "rim_profile_zero_padded" else "circular")
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def auc_held_out() -> float:
        err = ((model(x_v) - x_v) ** 2).mean((1, 2))
        return auc(err, va["bad"])

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.mse_loss(model(x[pick]), x[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
