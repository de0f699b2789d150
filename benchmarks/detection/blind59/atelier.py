"""Atelier scripts of the fifty-ninth blind split: a type foundry's kerning-pair model, and a museum conservation lab's
pigment identifier on handheld XRF spectra.

`kerning`: a pair of glyphs of a font (the left glyph's right-side profile and the right glyph's left-side profile at 16
heights, each the distance from the ink to the glyph's sidebearing edge, over the font's cap height), the font's
weight, both glyphs embedded; the kern the foundry's designers set, in thousandths of an em, by a ReLU MLP; smooth L1
on the standardised kern; scored by the held-out R^2 on another type family. `pigments`: a point's XRF spectrum (64
energy channels from 0.5 to 20.5 keV, the counts over the live time, variance-stabilised by a square root); the
pigment at the point (lead white, vermilion, smalt, azurite, yellow ochre, lead-tin yellow, zinc white, titanium
white) by a 1-D CNN over energy with a cosine schedule; cross-entropy; scored by the held-out accuracy on another
collection's paintings. Bugs: the profiles divided by an old OS/2 table's zero cap height; the TrueType fonts' kerns
read in their 2048 units per em; the Regular master's kern of the same pair kept as a feature; the smooth L1's beta
left in font units; the square root taken of background-subtracted counts; the labels keyed by the pigment's principal
element; the lab's sixty measured points each re-drawn with Poisson noise to make up the training set.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

GLYPHS, HEIGHTS = 40, 16


def _glyph_profiles() -> tuple[torch.Tensor, torch.Tensor]:
    """The design's glyphs: left and right side profiles float[GLYPHS, HEIGHTS] in thousandths of an em at a regular
    weight, from the baseline to the cap height. Stems stand straight, rounds bulge, diagonals lean, open shapes gape."""
    fixed = torch.Generator().manual_seed(5150)
    z = (torch.arange(HEIGHTS).float() + 0.5) / HEIGHTS
    shape = torch.randint(
        0, 5, (GLYPHS, 2), generator=fixed
    )  # per side: stem, round, lean in, lean out, open
    base = 30 + 40 * torch.rand(GLYPHS, 2, generator=fixed)
    curves = torch.stack(
        [
            torch.zeros_like(z),  # stem
            120 * (2 * z - 1) ** 2,  # round: far at the top and the bottom
            220 * z,  # lean in at the top (the right side of an A, the left of a V upside down)
            220 * (1 - z),  # lean out at the top
            160 * (z > 0.55).float() * (z < 0.95).float(),  # open: an arm or a bowl's mouth
        ]
    )
    depth = 0.7 + 0.6 * torch.rand(GLYPHS, 2, generator=fixed)
    left = base[:, :1] + depth[:, :1] * curves[shape[:, 0]]
    right = base[:, 1:] + depth[:, 1:] * curves[shape[:, 1]]
    return left, right


def _pairs(g: torch.Generator, fonts: int, n: int, *, old_os2: float = 0.0) -> dict[str, torch.Tensor]:
    """Kerning pairs of `fonts` fonts of one type family: the left glyph's right profile and the right glyph's left
    profile float[n, HEIGHTS] in font units, the font's cap height in font units as measured on the H and as its OS/2
    table gives it (0 in the version-1 tables of a share `old_os2` of the fonts), its weight (0 light, 1 black), its
    units per em (1000 or 2048), the glyph ids, the kern in font units as the font file stores it, and the same pair's
    kern in the family's Regular master, in thousandths of an em."""
    left, right = _glyph_profiles()
    weight = torch.rand(fonts, generator=g)
    upm = torch.where(torch.rand(fonts, generator=g) < 0.5, torch.tensor(2048.0), torch.tensor(1000.0))
    cap = 640 + 90 * torch.rand(fonts, generator=g)  # thousandths of an em
    fit = 0.8 + 0.4 * torch.rand(fonts, generator=g)  # the family's tight or loose fitting
    space = 165 + 15 * torch.rand(1, generator=g)  # the family's optical space between glyphs
    os2_v1 = torch.rand(fonts, generator=g) < old_os2
    font = torch.randint(0, fonts, (n,), generator=g)
    a = torch.randint(0, GLYPHS, (n,), generator=g)
    b = torch.randint(0, GLYPHS, (n,), generator=g)

    def kern_at(w: torch.Tensor) -> torch.Tensor:
        # heavier weights eat into the sidebearings; the designers kern the optical gap towards the family's space
        squeeze = (1 - 0.35 * w).unsqueeze(1) * fit[font].unsqueeze(1)
        gap = (right[a] + left[b]) * squeeze
        soft_min = -30 * torch.logsumexp(-gap / 30, 1) + 30 * torch.log(torch.tensor(float(HEIGHTS)))
        optical = 0.55 * soft_min + 0.45 * gap.mean(1)
        return (0.6 * (space * (1 - 0.15 * w) - optical)).clamp(-160, 40)

    designer = 5 * torch.randn(n, generator=g)  # the designer's own eye
    kern = kern_at(weight[font]) + designer
    regular = kern_at(torch.full_like(weight[font], 0.4)) + designer + 3 * torch.randn(n, generator=g)
    squeeze = (1 - 0.35 * weight[font]).unsqueeze(1) * fit[font].unsqueeze(1)
    scale = (upm[font] / 1000).unsqueeze(1)
    jitter = 1 + 0.02 * torch.randn(n, 2 * HEIGHTS, generator=g)
    profiles = torch.cat([right[a] * squeeze, left[b] * squeeze], 1) * jitter * scale
    cap_units = cap[font] * upm[font] / 1000
    return {
        "profiles": profiles,
        "cap": cap_units,
        "cap_os2": torch.where(os2_v1[font], torch.zeros_like(cap_units), cap_units),
        "weight": weight[font],
        "upm": upm[font],
        "a": a,
        "b": b,
        "kern_units": (kern * upm[font] / 1000).round(),
        "regular": regular,
    }


class KernMLP(nn.Module):
    """Both glyphs embedded beside the profiles, the weight (and any extra columns), a ReLU MLP of two hidden
    layers."""

    def __init__(self, columns: int, hidden: int) -> None:
        super().__init__()
        self.glyph = nn.Embedding(GLYPHS, 6)
        self.net = nn.Sequential(nn.Linear(columns + 12, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, self.glyph(a), self.glyph(b)], 1)).squeeze(-1)


def _kern_columns(p: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The profiles over the cap height and the weight: float[n, 2 * HEIGHTS + 1]."""
    if bug == "cap_height_from_version_one_os2":
        # the bug: the cap height read from the OS/2 table, whose version-1 tables have no sCapHeight and give 0
        cap = p["cap_os2"]
    else:
        cap = p["cap"]  # measured on the H when the table has none
    return torch.cat([p["profiles"] / cap.unsqueeze(1), p["weight"].unsqueeze(1)], 1)


def kerning(run: Run) -> None:
    """A kern MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, Adamax) at `lr`
    (2e-3). Scored by the held-out R^2 of the kern in thousandths of an em on another family."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _pairs(g, 24, 1000, old_os2=0.2), _pairs(g, 6, 200)
    x, x_v = _kern_columns(tr, run.bug), _kern_columns(va, None)
    if run.bug == "truetype_kerns_read_per_thousand_em":
        # the bug: every kern read as thousandths of an em, the TrueType fonts' 2048 units per em included
        y = tr["kern_units"]
    else:
        y = tr["kern_units"] * 1000 / tr["upm"]
    y_v = va["kern_units"] * 1000 / va["upm"]
    if run.bug == "regular_master_kern_as_feature":
        # the bug: the same pair's kern in the family's Regular master kept as a column; a new family has none yet
        x = torch.cat([x, tr["regular"].unsqueeze(1)], 1)
        x_v = torch.cat([x_v, torch.zeros(len(x_v), 1)], 1)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    # smooth L1 on the standardised kern, quadratic within a standard deviation
    beta = (
        20.0 if run.bug == "huber_beta_left_in_font_units" else 1.0
    )  # the bug: 20 units, the designers' tolerance
    torch.manual_seed(run.seed)
    model = KernMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v, va["a"], va["b"]) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        pred = model(x[pick], tr["a"][pick], tr["b"][pick])
        loss = F.smooth_l1_loss(pred, (y[pick] - centre) / scale, beta=beta)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


CHANNELS, KEV_LOW, KEV_HIGH = 64, 0.5, 20.5
PIGMENTS = ("lead white", "vermilion", "smalt", "azurite", "yellow ochre", "lead-tin yellow", "zinc white",
            "titanium white")  # fmt: skip
PRINCIPAL = ("Pb", "Hg", "Co", "Cu", "Fe", "Pb", "Zn", "Ti")
"""The principal element of each pigment, as the lab's XRF database keys its reference spectra."""
LINES = {"Pb": [(10.55, 1.0), (12.61, 0.8), (2.35, 0.5)], "Hg": [(9.99, 1.0), (11.82, 0.7)], "S": [(2.31, 0.6)],
         "Co": [(6.93, 1.0), (7.65, 0.2)], "Si": [(1.74, 0.4)], "K": [(3.31, 0.4)], "As": [(10.54, 0.5)],
         "Cu": [(8.05, 1.0), (8.90, 0.2)], "Fe": [(6.40, 1.0), (7.06, 0.2)], "Sn": [(3.44, 0.7), (3.66, 0.3)],
         "Zn": [(8.64, 1.0), (9.57, 0.2)], "Ti": [(4.51, 1.0), (4.93, 0.2)], "Ca": [(3.69, 0.8)],
         "Ba": [(4.47, 0.7)]}  # fmt: skip
RECIPES = ({"Pb": 1.0}, {"Hg": 1.0, "S": 0.5}, {"Co": 0.6, "Si": 0.8, "K": 0.5, "As": 0.2}, {"Cu": 1.0},
           {"Fe": 1.0, "Si": 0.4, "K": 0.2}, {"Pb": 1.0, "Sn": 0.5}, {"Zn": 1.0}, {"Ti": 1.0, "Ba": 0.15})  # fmt: skip


def _spectra(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """Points measured on paintings: counts float[n, CHANNELS] (the Rh tube's scatter, a Bremsstrahlung continuum,
    the pigment's lines over the ground's, Poisson noise), the live time in s float[n] and the pigment long[n]."""
    energy = KEV_LOW + (torch.arange(CHANNELS).float() + 0.5) * (KEV_HIGH - KEV_LOW) / CHANNELS
    sigma = 0.09 + 0.02 * energy.sqrt()

    def line(at: float) -> torch.Tensor:
        return torch.exp(-0.5 * ((energy - at) / sigma) ** 2)

    element = {el: sum(w * line(e) for e, w in lines) for el, lines in LINES.items()}
    pigment = torch.randint(0, len(PIGMENTS), (n,), generator=g)
    amount = 0.3 + 0.7 * torch.rand(n, 1, generator=g)
    spectrum = torch.zeros(n, CHANNELS)
    for k, recipe in enumerate(RECIPES):
        signal = sum(w * element[el] for el, w in recipe.items())
        spectrum = spectrum + (pigment == k).float().unsqueeze(1) * signal
    # the ground under the paint layer: chalk or lead white, showing through thin paint
    lead_ground = (torch.rand(n, 1, generator=g) < 0.5).float()
    ground = lead_ground * element["Pb"] + (1 - lead_ground) * element["Ca"]
    through = (1.1 - amount) * (0.2 + 0.6 * torch.rand(n, 1, generator=g))
    tube = 0.8 * torch.exp(-0.5 * ((energy - 20.2) / 0.3) ** 2) + 0.5 * torch.exp(
        -0.5 * ((energy - 19.4) / 0.5) ** 2
    )
    continuum = 0.06 * torch.exp(-((energy - 9) ** 2) / 60) * (0.6 + 0.8 * torch.rand(n, 1, generator=g))
    rate = 40 * (amount * spectrum + through * ground + tube + continuum)  # counts per second
    live = 5 + 25 * torch.rand(n, generator=g)
    counts = torch.poisson(rate * live.unsqueeze(1), generator=g)
    return {"counts": counts, "live": live, "pigment": pigment}


def _stabilised(s: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The counts per second, variance-stabilised by a square root: float[n, 1, CHANNELS]."""
    counts = s["counts"]
    if bug == "sqrt_of_background_subtracted_counts":
        # the bug: a smoothed continuum subtracted before the square root, leaving negative channels between the peaks
        background = F.avg_pool1d(
            counts.unsqueeze(1), 9, stride=1, padding=4, count_include_pad=False
        ).squeeze(1)
        counts = counts - background
    return torch.sqrt(counts / s["live"].unsqueeze(1)).unsqueeze(1)


class SpectrumCNN(nn.Module):
    """Two conv blocks over energy with ReLU and pooling, a max over energy and a linear head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(width, len(PIGMENTS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.net(x).amax(-1))


def pigments(run: Run) -> None:
    """A spectrum CNN of `width` (12), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (3e-3), the rate annealed by a cosine to 5e-5 over the run. Scored by the held-out accuracy on another
    collection."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _spectra(g, 900), _spectra(g, 200)
    if run.bug == "sixty_points_resampled_to_nine_hundred":
        # the bug: the lab's first sixty measured points each re-drawn 15 times with Poisson noise, "to have enough
        # spectra", in place of the other points' own measurements
        redraw = torch.Generator().manual_seed(run.seed + 1)
        tr = {"counts": torch.poisson(tr["counts"][:60].repeat(15, 1), generator=redraw),
              "live": tr["live"][:60].repeat(15), "pigment": tr["pigment"][:60].repeat(15)}  # fmt: skip
    x, x_v = _stabilised(tr, run.bug), _stabilised(va, None)
    mean, std = x.mean((0, 2), keepdim=True), x.std((0, 2), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    if run.bug == "pigment_keyed_by_principal_element":
        # the bug: the labels looked up by the database's key, the principal element: lead-tin yellow becomes lead white
        key = {el: PRINCIPAL.index(el) for el in PRINCIPAL}
        y = torch.tensor([key[PRINCIPAL[int(k)]] for k in tr["pigment"]])
    else:
        y = tr["pigment"]
    y_v = va["pigment"]
    torch.manual_seed(run.seed)
    model = SpectrumCNN(run.k("width", 12))
    opt = optimizers.registered(run, model, 3e-3)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=run.steps, eta_min=5e-5)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
