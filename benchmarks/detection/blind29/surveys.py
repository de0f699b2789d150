"""Survey scripts of the twenty-ninth blind split: a bird-species classifier on tabular field traits and a
hyperspectral pixel classifier.

`birds`: field records of 8 species with wing, tail, bill length, bill depth and tarsus in millimetres, body mass in
grams (log-normal around each species' mean) and the habitat (one of 5, tied loosely to the species); the
measurements logged and standardised by the training records, the habitat one-hot, an MLP of linear, batch-norm and ReLU blocks; cross-entropy; scored
by the held-out accuracy. `pixels`: pixels of a scene with 6 ground covers, each pixel's 64-band reflectance a mix of
its cover's endmember with a little of the others, scaled by illumination and noisy, stored as digital numbers
(reflectance times 10000) in a ground-truth map where 0 is unlabelled; the reflectance standardised per band by the
training pixels, a 1-D CNN over the bands; cross-entropy over the labelled pixels; scored by the held-out accuracy.
Bugs: every batch-norm scale of the trait MLP started at zero; a missing mass recorded as 0 and logged; the record number left in the
traits; wing and tail swapped in the training sheet; the raw digital numbers fed in; a small Gaussian start on the
band CNN under momentum SGD; the unlabelled pixels kept as class 0; the cube read band-sequential.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SPECIES, HABITATS, TRAITS = 8, 5, 6
"""Bird species, habitats and measurements (wing, tail, bill length, bill depth, tarsus, mass)."""


def _records(
    g: torch.Generator, n: int, means: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Measurements float[n, TRAITS] (mm, g), habitat long[n], species long[n]; 5% of masses not weighed (NaN)."""
    species = torch.randint(0, SPECIES, (n,), generator=g)
    size = 0.08 * torch.randn(n, 1, generator=g)  # one bird larger than another of its species all over
    traits = means[species] * torch.exp(size + 0.07 * torch.randn(n, TRAITS, generator=g))
    traits[:, 5] = traits[:, 5] * torch.exp(2 * size[:, 0])
    traits[torch.rand(n, generator=g) < 0.05, 5] = float("nan")
    habitat = torch.where(torch.rand(n, generator=g) < 0.5, species % HABITATS,
                          torch.randint(0, HABITATS, (n,), generator=g))  # fmt: skip
    return traits, habitat, species


class TraitMLP(nn.Module):
    """Logged standardised traits (and `extra` more columns) and the habitat one-hot, `depth` blocks of a linear layer
    of `hidden`, batch norm and a ReLU."""

    def __init__(self, hidden: int, depth: int, extra: int = 0) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = TRAITS + extra + HABITATS
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.BatchNorm1d(hidden), nn.ReLU()]
            width = hidden
        self.mlp = nn.Sequential(*layers, nn.Linear(width, SPECIES))

    def forward(self, x: torch.Tensor, habitat: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([x, F.one_hot(habitat, HABITATS).float()], -1))


def birds(run: Run) -> None:
    """A trait MLP of `depth` (6) layers of `hidden` (64), batches of `batch` (32), `opt` (Adam; or Nesterov SGD,
    AdamW, Adamax) at `lr` (1e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    means = torch.exp(torch.log(torch.tensor([90.0, 60, 15, 8, 22, 40])) + 0.12 * torch.randn(SPECIES, TRAITS,
                                                                                                generator=g))  # fmt: skip
    traits, habitat, y = _records(g, 800, means)
    traits_v, habitat_v, y_v = _records(g, 1000, means)
    if run.bug == "wing_and_tail_columns_swapped":
        traits = traits[:, [1, 0, 2, 3, 4, 5]]  # the training sheet lists tail before wing; read by position
    fill = 0.0 if run.bug == "missing_mass_logged_as_zero" else float(traits[:, 5].nanmedian())
    traits, traits_v = traits.nan_to_num(fill), traits_v.nan_to_num(float(traits_v[:, 5].nanmedian()))
    logged, logged_v = torch.log(traits), torch.log(traits_v)
    extra = 0
    if run.bug == "record_number_left_in_traits":
        # the record number kept as a column; the training sheet was typed in species by species
        order = torch.argsort(y.float() + 0.3 * torch.rand(len(y), generator=g))
        number = torch.empty(len(y))
        number[order] = torch.arange(len(y)).float()
        logged = torch.cat([logged, number.unsqueeze(1)], 1)
        logged_v = torch.cat([logged_v, len(y) + torch.arange(len(y_v)).float().unsqueeze(1)], 1)
        extra = 1
    mean, std = logged.mean(0), logged.std(0)
    x, x_v = (logged - mean) / std, (logged_v - mean) / std
    torch.manual_seed(run.seed)
    model = TraitMLP(run.k("hidden", 64), run.k("depth", 6), extra)
    if run.bug == "every_batchnorm_scale_zeroed":
        # the residual nets' trick of starting a block's last batch-norm scale at zero, applied to every one
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                nn.init.zeros_(m.weight)
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 32)

    def acc_held_out() -> float:
        return accuracy(model(x_v, habitat_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick], habitat[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", acc_held_out):
            break


BANDS, COVERS = 64, 6
"""Spectral bands and ground covers (water, soil, grass, crop, forest, roof)."""


def _scene(g: torch.Generator, n: int, ends: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Digital numbers long[n, BANDS] (reflectance times 10000) and the ground-truth map's labels long[n] (0:
    unlabelled, 1..COVERS: the covers)."""
    cover = torch.randint(0, COVERS, (n,), generator=g)
    mix = torch.softmax(torch.randn(n, COVERS, generator=g) + 4 * F.one_hot(cover, COVERS), -1)
    light = 0.7 + 0.6 * torch.rand(n, 1, generator=g)
    refl = light * (mix @ ends) + 0.02 * torch.randn(n, BANDS, generator=g)
    labelled = torch.rand(n, generator=g) < 0.6
    return (refl.clamp(0, 1) * 10000).round().long(), torch.where(labelled, cover + 1, 0)


def _endmembers(g: torch.Generator) -> torch.Tensor:
    """Each cover's smooth reflectance spectrum float[COVERS, BANDS]."""
    wl = torch.linspace(0, 1, BANDS)
    centres, widths = torch.rand(COVERS, 3, generator=g), 0.05 + 0.2 * torch.rand(COVERS, 3, generator=g)
    bumps = torch.exp(-(((wl - centres.unsqueeze(-1)) / widths.unsqueeze(-1)) ** 2))
    return 0.1 + 0.12 * (bumps * torch.rand(COVERS, 3, 1, generator=g)).sum(1)


class BandCNN(nn.Module):
    """Four 1-D convolutions of `width` channels over the bands (two pooled), a linear layer over the flattened
    channels."""

    def __init__(self, width: int, classes: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, width, 5, padding=2), nn.ReLU(), nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
            nn.MaxPool1d(2), nn.Conv1d(width, width, 5, padding=2), nn.ReLU(), nn.Conv1d(width, width, 5, padding=2),
            nn.ReLU(), nn.MaxPool1d(4), nn.Flatten(), nn.Linear(width * BANDS // 8, classes),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.unsqueeze(1))


def pixels(run: Run) -> None:
    """A band CNN of `width` (16) channels, batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop) at `lr`
    (1e-3), optionally divided by ten at step 150 (`step_decay`). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    ends = _endmembers(g)
    dn, label = _scene(g, 2500, ends)
    dn_v, label_v = _scene(g, 1500, ends)
    if run.bug == "cube_read_band_sequential":
        # the training cube is stored band-interleaved by pixel but read as band-sequential
        dn = dn.reshape(-1).reshape(BANDS, -1).t().contiguous()
    keep = label_v > 0
    dn_v, y_v = dn_v[keep], label_v[keep] - 1
    unlabelled_as_class = run.bug == "unlabelled_pixels_kept_as_class_zero"
    if unlabelled_as_class:
        y = label  # the map's 0 taken for a cover, the covers shifted to 1..COVERS
    else:
        y = label[label > 0] - 1
        dn = dn[label > 0]
    refl, refl_v = dn.float() / 10000, dn_v.float() / 10000
    if run.bug == "reflectance_left_as_raw_digital_numbers":
        x, x_v = dn.float(), dn_v.float()
    else:
        mean, std = refl.mean(0), refl.std(0)
        x, x_v = (refl - mean) / std, (refl_v - mean) / std
    torch.manual_seed(run.seed)
    classes = COVERS + 1 if unlabelled_as_class else COVERS
    model = BandCNN(run.k("width", 16), classes)
    if run.bug == "caffe_gaussian_init_std_001":
        for m in model.modules():  # the Caffe prototxt's weight_filler: gaussian, std 0.01; bias 0
            if isinstance(m, (nn.Conv1d, nn.Linear)):
                nn.init.normal_(m.weight, std=0.01)
                nn.init.zeros_(m.bias)
    opt = optimizers.registered(run, model, 1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 150, 0.1) if run.k("step_decay", False) else None
    batch = run.k("batch", 64)

    def acc_held_out() -> float:
        # with the unlabelled class kept, a prediction of class c is cover c - 1 (and 0 predicts no cover)
        return accuracy(model(x_v), y_v + 1 if unlabelled_as_class else y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_acc", acc_held_out):
            break
