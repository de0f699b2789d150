"""Mill scripts of the sixty-fourth blind split: a paper mill's web-inspection defect classifier, and a stamping
press's tonnage-signature anomaly detector.

`web`: a 12x12 patch of the web-inspection camera's two views of a paper web (transmitted and reflected light) over
the sheet's formation; the defect (none, a hole, a dirt spot, a thin spot, a machine-direction streak, a
cross-direction wrinkle) by a 2-D CNN; cross-entropy; scored by the held-out accuracy on another machine's line.
`tonnage`: a stroke of a drawing press as its tonnage monitor records it (the two posts' load in t over the working
part of the stroke); an autoencoder trained on the shift's good strokes; the reconstruction MSE on the standardised
signature; scored by the held-out AUC of the reconstruction error against the quality check's verdict on another
shift's strokes (splits, double blanks and misfeeds). Bugs: quarter turns as augmentation, which turn streaks into
wrinkles; the defects' patches cut from the alarm viewer's contrast-stretched images while the clean ones come raw;
RMSprop given a TensorFlow recipe's epsilon of 1.0; the reconstruction compared with the raw tonnes, under momentum
SGD; the scrap strokes left in the training shift.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

PATCH = 12
DEFECTS = ("none", "hole", "dirt", "thin spot", "streak", "wrinkle")


def _formation(g: torch.Generator, n: int) -> torch.Tensor:
    """The sheet's flocs: smoothed noise float[n, PATCH, PATCH] of about unit spread."""
    z = torch.randn(n, 1, PATCH, PATCH, generator=g)
    z = F.avg_pool2d(F.pad(z, (1, 1, 1, 1), mode="circular"), 3, stride=1)
    return (z / z.std()).squeeze(1)


def _web(g: torch.Generator, n: int, *, grammage: float = 0.0) -> dict[str, torch.Tensor]:
    """Patches float[n, 2, PATCH, PATCH] (transmitted, reflected, in [0, 1]) and the defect long[n]. `grammage`
    darkens the transmitted view of a heavier sheet."""
    defect = torch.randint(0, len(DEFECTS), (n,), generator=g)
    yy, xx = torch.meshgrid(torch.arange(PATCH).float(), torch.arange(PATCH).float(), indexing="ij")
    cy = 5.5 + 3 * (torch.rand(n, 1, 1, generator=g) - 0.5)
    cx = 5.5 + 3 * (torch.rand(n, 1, 1, generator=g) - 0.5)
    r = torch.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
    size = 1.0 + 1.2 * torch.rand(n, 1, 1, generator=g)
    strength = (0.5 + 0.5 * torch.rand(n, 1, 1, generator=g)).squeeze(-1).squeeze(-1)
    flocs = _formation(g, n)
    trans = 0.55 - grammage + 0.06 * flocs + 0.03 * torch.randn(n, 1, 1, generator=g)
    refl = 0.72 - 0.03 * flocs + 0.03 * torch.randn(n, 1, 1, generator=g)
    spot = torch.sigmoid((size - r) / 0.35)
    blob = torch.exp(-(r**2) / (2 * (2.5 + 1.5 * torch.rand(n, 1, 1, generator=g)) ** 2))
    # streaks run along the machine direction (the patch's columns), wrinkles across it, the same dark line
    streak = torch.exp(-((xx - cx) ** 2) / (2 * 0.6**2))
    wrinkle = torch.exp(-((yy - cy) ** 2) / (2 * 0.7**2))
    d_trans = torch.stack([torch.zeros_like(r), 0.9 - trans, -0.7 * trans, 0.14 + 0 * r, -0.13 + 0 * r,
                           -0.13 + 0 * r], 1)  # fmt: skip
    d_refl = torch.stack([torch.zeros_like(r), -0.45 + 0 * r, -0.5 * refl, -0.04 + 0 * r, -0.06 + 0 * r,
                          -0.06 + 0 * r], 1)  # fmt: skip
    cover = torch.stack([torch.zeros_like(r), spot, spot, blob, streak, wrinkle], 1)
    pick = lambda d: (d * cover).gather(1, defect.view(n, 1, 1, 1).expand(n, 1, PATCH, PATCH)).squeeze(1)
    s = strength.view(n, 1, 1)
    img = torch.stack([trans + s * pick(d_trans), refl + s * pick(d_refl)], 1)
    img = (img + 0.05 * torch.randn(n, 2, PATCH, PATCH, generator=g)).clamp(0, 1)
    return {"patch": img, "defect": defect}


def _stretched(p: torch.Tensor) -> torch.Tensor:
    """Each patch's views stretched to fill [0, 1], as the alarm viewer saves them."""
    low, high = p.amin((2, 3), keepdim=True), p.amax((2, 3), keepdim=True)
    return (p - low) / (high - low).clamp(min=1e-3)


class WebCNN(nn.Module):
    """Two 3x3 conv layers with ReLU and a max-pool between, a global max and mean, a linear head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(2, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(width, width, 3, padding=1), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(2 * width, len(DEFECTS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.net(x)
        return self.head(torch.cat([h.amax((2, 3)), h.mean((2, 3))], 1))


def web(run: Run) -> None:
    """A web CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (3e-3). Scored by the held-out accuracy of the defect on another machine's line."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _web(g, 1000), _web(g, 200, grammage=0.06)
    x, x_v = tr["patch"].clone(), va["patch"]
    y, y_v = tr["defect"], va["defect"]
    if run.bug == "defects_from_contrast_stretched_alarms":
        # the bug: the defects' patches cut from the alarm viewer's saved images, stretched to fill the range, the
        # clean ones from the raw frames; the other line's patches are all raw frames
        x[y > 0] = _stretched(x[y > 0])
    mean, std = x.mean((0, 2, 3), keepdim=True), x.std((0, 2, 3), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = WebCNN(run.k("width", 8))
    opt = optimizers.registered(run, model, 3e-3)
    if run.bug == "tensorflow_epsilon_given_to_rmsprop":
        # the bug: the TensorFlow recipe's epsilon of 1.0 (inside the root there, outside it here) carried over
        for group in opt.param_groups:
            group["eps"] = 1.0
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        xb = x[pick]
        if run.bug == "quarter_turns_as_augmentation":
            # the bug: random quarter turns "since a defect looks the same any way up"
            turns = int(torch.randint(0, 4, (1,), generator=run.gen))
            xb = torch.rot90(xb, turns, (2, 3))
        loss = F.cross_entropy(model(xb), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


SAMPLES = 48
"""Samples of the working part of the stroke, 150 to 195 degrees of crank."""


def _strokes(g: torch.Generator, n: int, *, scrap: float) -> dict[str, torch.Tensor]:
    """Strokes: the two posts' load in t float[n, 2, SAMPLES] and the quality check's verdict long[n] (0 good,
    1 split, 2 double blank, 3 misfeed), a share `scrap` of them bad."""
    u = torch.linspace(0, 1, SAMPLES)
    bad = torch.rand(n, generator=g) < scrap
    kind = torch.where(bad, torch.randint(1, 4, (n,), generator=g), torch.zeros(n, dtype=torch.long))
    tonnes = 90 + 30 * torch.rand(n, 1, generator=g)  # the coil's lot: its strength and thickness
    onset = 0.2 + 0.06 * torch.rand(n, 1, generator=g)
    onset = onset - (kind == 2).float().unsqueeze(1) * 0.03  # two blanks meet the punch early
    rise = torch.sigmoid((u - onset) / (0.04 + 0.02 * torch.rand(n, 1, generator=g)))
    unload = 1 - torch.sigmoid((u - 0.86) / 0.025)
    shape = rise * unload * (0.75 + 0.3 * u + 0.05 * torch.randn(n, 1, generator=g))
    at = 0.45 + 0.25 * torch.rand(n, 1, generator=g)
    drop = 1 - (0.06 + 0.12 * torch.rand(n, 1, generator=g)) * torch.sigmoid((u - at) / 0.02)
    shape = torch.where((kind == 1).unsqueeze(1), shape * drop, shape)
    shape = torch.where(
        (kind == 2).unsqueeze(1), shape * (1.08 + 0.15 * torch.rand(n, 1, generator=g)), shape
    )
    share = 0.5 + 0.02 * torch.randn(n, 1, generator=g)
    share = share + (kind == 3).float().unsqueeze(1) * (0.03 + 0.05 * torch.rand(n, 1, generator=g))
    total = tonnes * shape
    load = torch.stack([share * total, (1 - share) * total], 1)
    load = load + 0.8 * torch.randn(n, 2, SAMPLES, generator=g)
    return {"load": load, "kind": kind}


class TonnageAutoencoder(nn.Module):
    """The two posts' samples flattened, a ReLU encoder to a code of `code`, a ReLU decoder back."""

    def __init__(self, hidden: int, code: int = 6, *, code_relu: bool = False) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Flatten(), nn.Linear(2 * SAMPLES, hidden), nn.ReLU(), nn.Linear(hidden, code)
        )
        if code_relu:
            # the bug: a ReLU after the code layer too, as after every other layer of the stack
            self.encoder.append(nn.ReLU())
        self.decoder = nn.Sequential(nn.Linear(code, hidden), nn.ReLU(), nn.Linear(hidden, 2 * SAMPLES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x)).view(-1, 2, SAMPLES)


def tonnage(run: Run) -> None:
    """A tonnage autoencoder of `hidden` (32), batches of `batch` (32), `opt` (Adam; or momentum SGD, NAdam,
    Adagrad) at `lr` (2e-3). Scored by the held-out AUC of the reconstruction error against the quality check's
    verdict on another shift's strokes."""
    g = torch.Generator().manual_seed(run.seed)
    shift, va = _strokes(g, 1000, scrap=0.25), _strokes(g, 300, scrap=0.3)
    keep = torch.ones(len(shift["kind"]), dtype=torch.bool)
    if run.bug != "scrap_strokes_left_in_training":
        keep = shift["kind"] == 0  # the quality check's scrap flags joined and dropped
    raw = shift["load"][keep]
    mean, std = raw.mean(0), raw.std()  # each sample's mean stroke, one spread for the signature
    x, x_v = (raw - mean) / std, (va["load"] - mean) / std
    flagged = (va["kind"] > 0).float()
    torch.manual_seed(run.seed)
    model = TonnageAutoencoder(run.k("hidden", 32), code_relu=run.bug == "relu_after_the_code_layer")
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def auc_held_out() -> float:
        error = ((model(x_v) - x_v) ** 2).mean((1, 2))
        return auc(error, flagged)

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        recon = model(x[pick])
        if run.bug == "reconstruction_against_raw_tonnes":
            # the bug: the reconstruction compared with the batch as loaded, in t, not with the scaled input
            loss = F.mse_loss(recon, raw[pick])
        else:
            loss = F.mse_loss(recon, x[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
