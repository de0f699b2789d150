"""Studio scripts of the sixtieth blind split: a dyehouse's levelness grader on scans of dyed fabric, and a perfume
house's quality check of incoming lavender oil lots by their gas chromatograms.

`levelness`: a 12x12 grey scan of a piece of dyed fabric under the inspection table's lamp (the weave's checker, the
shade and the lamp's fall-off, the camera's noise), the training scans flat-fielded by the lamp's reference frame
after its two dead pixels are filled; the dyeing fault (level, barre: bands across the width where the
yarn took the dye unevenly, warp streaks: lines along the length, dye spots) by a small 2-D CNN whose first layer is a
hand-set 2x2 box filter that averages the weave out, fixed; random left-right and up-down flips; cross-entropy; scored
by the held-out accuracy on another machine's pieces. `lots`: a lot's composition, the area percent of 24 components
of the chromatogram (the integrator reports the traces under its threshold as 0), as centred log-ratios after the
zeros are replaced by half the threshold, standardised; an autoencoder trained on the genuine lots; MSE; scored by the
held-out AUC of the reconstruction error between genuine lots and lots cut with lavandin, synthetic linalyl acetate or
a cheaper oil. Bugs: quarter turns for augmentation, which turn barre into streaks; the freeze of the box filter
written with the fine-tuning snippet that freezes everything but the head; the flat field divided over the dead
pixels; the log-ratios taken of the zeros; the method's spiked reference lots left among the training lots.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SIDE = 12
FAULTS = ("level", "barre", "streaks", "spots")


def _pieces(g: torch.Generator, n: int, *, lamp: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Fabric scans float[n, 1, SIDE, SIDE] (0 black, 1 white) and their fault long[n]: barre runs across the width
    (rows), streaks along the length (columns). `lamp` changes the table's fall-off on another machine."""
    fault = torch.randint(0, len(FAULTS), (n,), generator=g)
    rows = torch.arange(SIDE).view(1, SIDE, 1).float()
    cols = torch.arange(SIDE).view(1, 1, SIDE).float()
    shade = 0.35 + 0.3 * torch.rand(n, 1, 1, generator=g)
    weave = 0.04 * ((rows + cols) % 2 * 2 - 1)
    fall = (0.04 + lamp) * torch.rand(n, 1, 1, generator=g) * ((cols - SIDE / 2) / SIDE) ** 2 * 4
    img = shade + weave - fall
    strength = 0.04 + 0.06 * torch.rand(n, 1, 1, generator=g)
    # barre: one or two bands across the width where a yarn lot took the dye darker; streaks: the same along it
    at = torch.randint(0, SIDE, (n, 2, 1, 1), generator=g).float()
    wide = 1 + (torch.rand(n, 2, 1, 1, generator=g) < 0.4).float()
    second = (torch.rand(n, 1, 1, generator=g) < 0.5).float()

    def lines(axis: torch.Tensor) -> torch.Tensor:
        near = ((axis.unsqueeze(1) - at).abs() < wide).float()
        return (near[:, 0] + second * near[:, 1]).clamp(max=1)

    barre, streak = -1.3 * strength * lines(rows), -1.3 * strength * lines(cols)
    r0, c0 = SIDE * torch.rand(n, 2, 1, 1, generator=g), SIDE * torch.rand(n, 2, 1, 1, generator=g)
    blobs = torch.exp(-((rows.unsqueeze(1) - r0) ** 2 + (cols.unsqueeze(1) - c0) ** 2) / 2.0)
    two = torch.stack([torch.ones(n), (torch.rand(n, generator=g) < 0.5).float()], 1).view(n, 2, 1, 1)
    spots = -strength * 1.6 * (blobs * two).sum(1)
    f = fault.view(n, 1, 1)
    img = img + (f == 1) * barre + (f == 2) * streak + (f == 3) * spots
    img = img + 0.025 * torch.randn(n, SIDE, SIDE, generator=g)
    return img.clamp(0, 1).unsqueeze(1), fault


def _lamp(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The inspection camera's raw scans of `n` pieces float[n, 1, SIDE, SIDE] under the lamp's uneven light, the
    lamp's reference frame (a white card) float[SIDE, SIDE] with the sensor's two dead pixels at 0, and the faults."""
    img, fault = _pieces(g, n)
    rows = torch.arange(SIDE).view(SIDE, 1).float()
    cols = torch.arange(SIDE).view(1, SIDE).float()
    light = 1 - 0.25 * (((rows - 4) / SIDE) ** 2 + ((cols - 7) / SIDE) ** 2)
    dead = torch.zeros(SIDE, SIDE, dtype=torch.bool)
    dead[3, 8] = dead[9, 2] = True
    raw = torch.where(dead, torch.zeros_like(img), img * light)
    return raw, torch.where(dead, torch.zeros_like(light), light), fault


def _flat_fielded(raw: torch.Tensor, reference: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The scans divided by the lamp's reference frame; its dead pixels filled from their neighbours first."""
    if bug != "flat_field_over_dead_pixels":
        # the dead pixels (0 in the reference and in every scan) filled with the mean of their row's live pixels
        dead = reference == 0
        row_mean = (raw * ~dead).sum(-1, keepdim=True) / (~dead).sum(-1, keepdim=True)
        raw = torch.where(dead, row_mean, raw)
        reference = torch.where(dead, reference[~dead].mean(), reference)
    return raw / reference  # the bug: 0 / 0 at the dead pixels


class LevelCNN(nn.Module):
    """A fixed 2x2 box filter that averages the weave out (the stem), two 3x3 conv layers with ReLU and a max-pool
    between (the trunk), a global mean and max, a linear head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, 1, 2, bias=False)
        with torch.no_grad():
            self.stem.weight.fill_(0.25)
        self.trunk = nn.Sequential(nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                   nn.Conv2d(width, width, 3, padding=1), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(2 * width, len(FAULTS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.trunk(self.stem(x))
        return self.head(torch.cat([h.mean((2, 3)), h.amax((2, 3))], 1))


def _augmented(x: torch.Tensor, gen: torch.Generator, bug: str | None) -> torch.Tensor:
    """A batch flipped at random left-right and up-down (or, with the bug, turned by random quarter turns)."""
    if bug == "quarter_turn_augmentation":
        # the bug: the defect recipe's random quarter turns, which turn barre across the width into lines along it
        turns = torch.randint(0, 4, (len(x),), generator=gen)
        return torch.stack([torch.rot90(img, int(k), (1, 2)) for img, k in zip(x, turns)])
    lr = torch.rand(len(x), 1, 1, 1, generator=gen) < 0.5
    ud = torch.rand(len(x), 1, 1, 1, generator=gen) < 0.5
    x = torch.where(lr, x.flip(3), x)
    return torch.where(ud, x.flip(2), x)


def levelness(run: Run) -> None:
    """A levelness CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, Adagrad) at `lr`
    (3e-3). Scored by the held-out accuracy on another machine's pieces."""
    g = torch.Generator().manual_seed(run.seed)
    raw, reference, y = _lamp(g, 800)
    x = _flat_fielded(raw, reference, run.bug)
    x_v, y_v = _pieces(g, 200, lamp=0.03)
    mean, std = x.mean(), x.std()
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = LevelCNN(run.k("width", 8))
    if run.bug == "box_filter_frozen_with_finetuning_snippet":
        # the bug: the fine-tuning snippet "freeze everything, then the head", meant for the box filter alone
        model.requires_grad_(False)
        model.head.requires_grad_(True)
    else:
        model.stem.requires_grad_(False)
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(_augmented(x[pick], run.gen, run.bug)), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


COMPONENTS, THRESHOLD = 24, 0.05
"""The chromatogram's integrated components, and the integrator's reporting threshold in area percent."""
ADULTERANTS = ("lavandin", "synthetic linalyl acetate", "cheaper oil")


def _lots(g: torch.Generator, n: int, *, cut: float = 0.0, spiked: float = 0.0) -> dict[str, torch.Tensor]:
    """Lavender oil lots: area percent float[n, COMPONENTS] (traces under THRESHOLD reported as 0) and whether the lot
    was cut long[n]; a share `cut` of the lots cut with one of ADULTERANTS, and a share `spiked` of the method's
    reference lots, cut on purpose, among them. Genuine lots vary along three factors: altitude, harvest, distillation
    time."""
    fixed = torch.Generator().manual_seed(3301)
    base = torch.cat([torch.tensor([3.4, 3.5, 1.5, 1.2, 0.8, 0.6]), 0.6 * torch.randn(COMPONENTS - 6, generator=fixed)
                      - 1.5])  # fmt: skip
    loadings = 0.45 * torch.randn(3, COMPONENTS, generator=fixed)
    patterns = torch.zeros(len(ADULTERANTS), COMPONENTS)
    patterns[0, [2, 3, 7]] = torch.tensor([1.2, 1.0, 0.8])  # lavandin: camphor, 1,8-cineole, borneol
    patterns[1, [1, 11]] = torch.tensor([0.6, 1.4])  # synthetic linalyl acetate and its by-product
    patterns[2, [4, 5, 12, 13]] = torch.tensor([0.7, -0.8, 0.9, 0.7])  # a cheaper oil's terpenes
    factors = torch.randn(n, 3, generator=g)
    log_area = base + factors @ loadings + 0.12 * torch.randn(n, COMPONENTS, generator=g)
    bad = torch.rand(n, generator=g) < cut + spiked
    kind = torch.randint(0, len(ADULTERANTS), (n,), generator=g)
    amount = 0.35 + 0.65 * torch.rand(n, 1, generator=g)
    log_area = log_area + bad.float().unsqueeze(1) * amount * patterns[kind]
    area = torch.softmax(log_area, 1) * 100
    area = torch.where(area < THRESHOLD, torch.zeros_like(area), area)
    return {"area": area, "cut": bad.long()}


def _log_ratios(area: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The centred log-ratios of the composition: float[n, COMPONENTS]."""
    if bug != "log_ratios_of_unreported_traces":
        # the traces the integrator did not report put back at half its threshold before the logs
        area = torch.where(area == 0, torch.full_like(area, THRESHOLD / 2), area)
    logs = torch.log(area)  # the bug: log(0) on the unreported traces
    return logs - logs.mean(1, keepdim=True)


class LotAutoencoder(nn.Module):
    """An ELU MLP autoencoder through a code of 4."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.encode = nn.Sequential(nn.Linear(COMPONENTS, hidden), nn.ELU(), nn.Linear(hidden, 4))
        self.decode = nn.Sequential(nn.Linear(4, hidden), nn.ELU(), nn.Linear(hidden, COMPONENTS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x))


def lots(run: Run) -> None:
    """A lot autoencoder of `hidden` (32), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, Adamax) at
    `lr` (3e-3). Scored by the held-out AUC of the reconstruction error, cut lots against genuine ones."""
    g = torch.Generator().manual_seed(run.seed)
    spiked = 0.2 if run.bug == "spiked_reference_lots_in_training" else 0.0
    # the bug: the method's reference lots, cut on purpose to check it, left in the folder of genuine training lots
    tr, va = _lots(g, 800, spiked=spiked), _lots(g, 300, cut=0.3)
    x, x_v = _log_ratios(tr["area"], run.bug), _log_ratios(va["area"], None)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = LotAutoencoder(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def auc_held_out() -> float:
        error = ((model(x_v) - x_v) ** 2).mean(1)
        return auc(error, va["cut"].float())

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.mse_loss(model(x[pick]), x[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
