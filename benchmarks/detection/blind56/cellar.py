"""Cellar and dyehouse scripts of the fifty-sixth blind split: a grape-ripeness forecaster for a winery's harvest
planning, and a reactive-dye shade predictor for a cotton dyehouse's lab dips.

`ripeness`: a vineyard block's last 8 weekly samples (sugar in Brix, titratable acidity g/l, pH, the mean and spread
of 100 berries' weights in g, the week's growing degree days and rain in mm); the Brix two weeks after the last
sample by a GRU over the weeks and a linear head; MSE on the standardised Brix; scored by the held-out R^2 on
another estate's blocks. `dyebath`: a recipe (three reactive dyes in % on the weight of fibre, salt and soda ash in
g/l, the fixation temperature and time, the liquor ratio); the dyed swatch's CIELAB shade as the spectrophotometer
measures it by a GELU MLP; Huber loss on the standardised L*, a*, b*; scored by the held-out R^2 on the next month's
dips. Bugs: the samples ordered by lab id; the berries' spread from a one-pass variance under a square root; the
linear scaling rule applied with the rows instead of the batch; the next sample's Brix, a week on, taken as the
target; the shade read off the wet swatch; the simplified
cube root of CIELAB taken of a negative tristimulus; degree-four polynomial features of the recipe; a sigmoid on
the standardised output.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

WEEKS, BERRIES, AHEAD = 8, 100, 2


def _blocks(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """Blocks' weekly samples: berry weights float[n, WEEKS, BERRIES] in g (5 % of the samples typed in by a lab
    that weighs the 100 berries together and enters the mean for each), Brix, TA, pH, degree days and rain
    float[n, WEEKS], the lab's sample ids long[n, WEEKS] (handed out as the samples arrive, not by week), the
    Brix of the next week's sample float[n] and the Brix AHEAD weeks after the last sample float[n]."""
    total = WEEKS + AHEAD
    vigour = torch.randn(n, 1, generator=g)
    onset = 3 * torch.randn(n, 1, generator=g)  # veraison's timing, in weeks
    gdd = (70 + 40 * torch.rand(n, total, generator=g)) * (1 + 0.1 * vigour)
    rain = 25 * torch.rand(n, total, generator=g) * (torch.rand(n, total, generator=g) < 0.3)
    heat = (gdd.cumsum(1) - 70 * (5 + onset)) / 150
    sugar = 8 + 17 * torch.sigmoid(heat) - 0.8 * vigour
    dilution = 0.05 * rain.cumsum(1).clamp(max=80) / 10
    brix = sugar - dilution + 0.4 * torch.randn(n, total, generator=g)
    ta = 4 + 12 * torch.sigmoid(-heat) + 0.4 * torch.randn(n, total, generator=g)
    ph = 3.0 + 0.6 * torch.sigmoid(heat) + 0.05 * torch.randn(n, total, generator=g)
    mean_weight = 1.1 + 0.4 * torch.sigmoid(heat) + 0.1 * vigour + 0.02 * rain.cumsum(1).clamp(max=80) / 10
    weights = mean_weight[:, :WEEKS].unsqueeze(-1) * (1 + 0.15 * torch.randn(n, WEEKS, BERRIES, generator=g))
    pooled = torch.rand(n, WEEKS, generator=g) < 0.05
    weights = torch.where(pooled.unsqueeze(-1), weights.mean(-1, keepdim=True).expand_as(weights), weights)
    lab_id = torch.rand(n, WEEKS, generator=g).argsort(1)
    return {"weights": weights, "brix": brix[:, :WEEKS], "ta": ta[:, :WEEKS], "ph": ph[:, :WEEKS],
            "gdd": gdd[:, :WEEKS], "rain": rain[:, :WEEKS], "lab_id": lab_id, "next": brix[:, WEEKS],
            "target": brix[:, -1]}  # fmt: skip


def _berry_spread(weights: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The spread of each sample's berry weights."""
    if bug == "one_pass_variance_under_sqrt":
        # the bug: the variance as the mean of squares less the squared mean, one pass over the berries, whose
        # float32 rounding goes below zero for the samples typed in as 100 equal weights
        return (weights.pow(2).mean(-1) - weights.mean(-1).pow(2)).sqrt()
    return weights.std(-1)


def _weekly(b: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """Weekly inputs float[n, WEEKS, 7] in the order of the sampling dates (or, with the bug, of the lab ids)."""
    cols = [b["brix"], b["ta"], b["ph"], b["weights"].mean(-1), _berry_spread(b["weights"], bug), b["gdd"] / 10,
            b["rain"]]  # fmt: skip
    x = torch.stack(cols, -1)
    if bug == "samples_in_lab_id_order":
        # the bug: the export sorted by the lab's sample id, which the lab hands out as the samples arrive
        x = x.gather(1, b["lab_id"].argsort(1).unsqueeze(-1).expand_as(x))
    return x


class RipenessGRU(nn.Module):
    """A GRU of `hidden` units over the weeks and a linear head on its last state."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(7, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, -1]).squeeze(-1)


def ripeness(run: Run) -> None:
    """A ripeness GRU of `hidden` (24), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, Adamax) at
    `lr` (3e-3) scaled by the linear scaling rule from batches of 64, gradients clipped to norm 1. Scored by the
    held-out R^2 of the Brix two weeks on, on another estate's blocks."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _blocks(g, 1200), _blocks(g, 300)
    x, x_v = _weekly(tr, run.bug), _weekly(va, None)
    y, y_v = tr["target"], va["target"]
    if run.bug == "target_from_next_sample_column":
        # the bug: the lab sheet's "next sample" column, one week on, taken as the target two weeks on
        y = tr["next"]
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = RipenessGRU(run.k("hidden", 24))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)
    # the linear scaling rule: the rate tuned at batches of 64, scaled with the batch
    # the bug: scaled by the number of training rows instead of the batch size
    factor = len(y) / 64 if run.bug == "linear_scaling_by_rows_not_batch" else batch / 64
    for group in opt.param_groups:
        group["lr"] *= factor

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


BANDS = 16
WAVELENGTHS = torch.linspace(400, 700, BANDS)


def _bump(centre: float, width: float) -> torch.Tensor:
    return torch.exp(-(((WAVELENGTHS - centre) / width) ** 2))


# absorption (K/S per % owf) of the yellow, red and blue dyes, and rough colour-matching functions
ABSORB = torch.stack([_bump(430, 40), _bump(520, 40), _bump(610, 45)])
CMF = torch.stack([_bump(600, 45) + 0.35 * _bump(445, 25), _bump(555, 50), 1.7 * _bump(450, 30)], 1)
CMF = CMF / CMF.sum(0)
WHITE = torch.ones(BANDS) @ CMF


def _recipes(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """Recipes float[n, 8] (yellow, red, blue % owf; salt g/l; soda ash g/l; temperature C; time min; liquor
    ratio), 4 % of them deep blacks, and the spectrophotometer's XYZ of the dry (float[n, 3]) and of the wet swatch
    straight from the bath (float[n, 3])."""
    dyes = 3 * torch.rand(n, 3, generator=g) ** 2 * (torch.rand(n, 3, generator=g) < 0.75)
    black = torch.rand(n, generator=g) < 0.04
    dyes = torch.where(black.unsqueeze(1), 15 + 10 * torch.rand(n, 3, generator=g), dyes)
    salt = 20 + 60 * torch.rand(n, generator=g)
    soda = 10 + 15 * torch.rand(n, generator=g)
    temp = 50 + 30 * torch.rand(n, generator=g)
    time = 30 + 60 * torch.rand(n, generator=g)
    ratio = 5 + 10 * torch.rand(n, generator=g)
    # exhaustion: more with salt, less at long liquor ratios; fixation peaks near each dye's temperature
    exhaust = torch.sigmoid(0.05 * (salt.unsqueeze(1) - 40) - 0.15 * (ratio.unsqueeze(1) - 10) + 0.8)
    optimum = torch.tensor([60.0, 65.0, 70.0])
    fixed = torch.exp(-(((temp.unsqueeze(1) - optimum) / 15) ** 2)) * (1 - torch.exp(-time.unsqueeze(1) / 40))
    fixed = fixed * (0.6 + 0.4 * torch.sigmoid((soda.unsqueeze(1) - 15) / 3))
    on_fibre = dyes * exhaust * fixed * (1 + 0.04 * torch.randn(n, 3, generator=g))

    def measured(ks: torch.Tensor) -> torch.Tensor:
        reflect = 1 + ks - (ks**2 + 2 * ks).sqrt()
        # the instrument's black-trap correction leaves a little noise around zero on the deepest shades
        reflect = reflect - 0.01 + 0.004 * torch.randn(n, BANDS, generator=g)
        return reflect @ CMF

    strength = 1 + 0.15 * torch.randn(n, 3, generator=g)  # the dye lots' strength, not on the recipe
    ks = 0.02 + 8 * (on_fibre * strength) @ ABSORB
    dry, wet = measured(ks), measured(2.5 * ks + 0.1)
    x = torch.stack([dyes[:, 0], dyes[:, 1], dyes[:, 2], salt, soda, temp, time, ratio], 1)
    return {"x": x, "dry": dry, "wet": wet}


def _lab(xyz: torch.Tensor, bug: str | None) -> torch.Tensor:
    """CIELAB L*, a*, b* of tristimulus values relative to the white."""
    t = xyz / WHITE
    if bug == "cube_root_of_negative_xyz":
        # the bug: the simplified f(t) = t ** (1/3) for every t, NaN for the slightly negative readings
        f = t ** (1 / 3)
    else:
        f = torch.where(t > 0.008856, t.clamp(min=0.008856) ** (1 / 3), 7.787 * t + 16 / 116)
    return torch.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], 1)


def _poly4(x: torch.Tensor) -> torch.Tensor:
    """Every product of up to four of the columns (sklearn's PolynomialFeatures(4) without the bias)."""
    cols = [x]
    prev = [(i,) for i in range(x.shape[1])]
    for _ in range(3):
        prev = [c + (j,) for c in prev for j in range(c[-1], x.shape[1])]
        cols.append(torch.stack([x[:, list(c)].prod(1) for c in prev], 1))
    return torch.cat(cols, 1)


class ShadeMLP(nn.Module):
    """A GELU MLP of two hidden layers of `hidden` units and three outputs (or their sigmoid, with the bug)."""

    def __init__(self, inputs: int, hidden: int, squash: bool = False) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                                 nn.Linear(hidden, 3))  # fmt: skip
        self.squash = squash

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x)
        # the bug: a sigmoid kept on the output from the reflectance model, the targets standardised
        return torch.sigmoid(out) if self.squash else out


def dyebath(run: Run) -> None:
    """A shade MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, RAdam) at `lr`
    (2e-3). Scored by the held-out R^2 of the CIELAB shade on the next month's dips."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _recipes(g, 700), _recipes(g, 300)
    # the bug: the shade read off the swatch straight from the bath, before it is rinsed and dried
    y = _lab(tr["wet" if run.bug == "shade_read_off_wet_swatch" else "dry"], run.bug)
    y_v = _lab(va["dry"], None)
    x, x_v = tr["x"], va["x"]
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    if run.bug == "polynomial_features_degree_four":
        # the bug: PolynomialFeatures(degree=4) of the standardised recipe, 494 columns for 700 dips
        x, x_v = _poly4(x), _poly4(x_v)
        mean, std = x.mean(0), x.std(0)
        x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(0), y.std(0)
    torch.manual_seed(run.seed)
    model = ShadeMLP(x.shape[1], run.k("hidden", 64), squash=run.bug == "sigmoid_on_standardised_output")
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.huber_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
