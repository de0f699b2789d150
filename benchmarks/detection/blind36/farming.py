"""Farming scripts of the thirty-sixth blind split: a beehive queen-presence detector on hive-audio features, and a
rice-grain variety classifier on grain image patches.

`queen`: a minute of a hive microphone as the energy of 20 bands from 0 to 1 kHz with the brood box's temperature and
humidity; a colony that lost its queen hums louder and higher (the "queenless roar" in bands 8-12) and broods cooler and
less steadily; each hive has its own loudness and spectrum tilt; the labels come from the inspection log (1 for a
queenless colony); the band energies logged, everything standardised by the training clips; a ReLU MLP; BCE with logits;
scored by the held-out AUC. `rice`: 16x16 grey patches of a single grain on the tray, one of four varieties by its
length and width (long slender, long bold, medium, short round) and its chalky spot, at any angle and a small offset;
the pixels scaled to [0, 1]; three convolutions with batch norm and ReLU, a global mean pool and a linear layer;
cross-entropy; scored by the held-out accuracy. Bugs: the labels read from a logger's export that marks a queenright
hive with 1; the features and labels shuffled apart; the SVM baseline's labels of -1 and 1 fed to BCE.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

BANDS = 20
"""Energy bands of a clip, 50 Hz wide."""


def _clips(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Band energies, brood temperature and humidity float[n, BANDS + 2], and queenless float[n]."""
    hives = 30
    hive = torch.randint(0, hives, (n,), generator=g)
    loud = 1 + 0.6 * torch.rand(hives, generator=g)
    tilt = 0.2 * torch.randn(hives, generator=g)
    queenless = (torch.rand(n, generator=g) < 0.35).float()
    band = torch.arange(BANDS).float()
    base = torch.exp(-((band - 5) ** 2) / 18) + 0.1
    roar = 0.12 * torch.exp(-((band - 10) ** 2) / 4)
    energy = (
        loud[hive, None] * (base + queenless[:, None] * roar) * torch.exp(tilt[hive, None] * (band - 10) / 10)
    )
    energy = energy * torch.exp(0.3 * torch.randn(n, BANDS, generator=g))
    temp = 34.5 - 0.2 * queenless + (0.5 + 0.2 * queenless) * torch.randn(n, generator=g)
    humidity = 60 + 5 * torch.randn(n, generator=g)
    return torch.cat([energy, torch.stack([temp, humidity], 1)], 1), queenless


def _features(raw: torch.Tensor) -> torch.Tensor:
    """The band energies logged beside the brood climate."""
    return torch.cat([raw[:, :BANDS].log(), raw[:, BANDS:]], 1)


def queen(run: Run) -> None:
    """A queen MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (1e-3), the rate halved by StepLR every 60 steps. Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    raw, y = _clips(g, 1500)
    raw_v, y_v = _clips(g, 600)
    x, x_v = _features(raw), _features(raw_v)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    if run.bug == "logger_export_labels_queenright_as_one":
        y = 1 - y  # the new logger's export marks a queenright hive with 1
    if run.bug == "features_and_labels_shuffled_apart":
        x = x[torch.randperm(len(x), generator=g)]
        y = y[torch.randperm(len(y), generator=g)]
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    model = nn.Sequential(
        nn.Linear(x.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
    )
    opt = optimizers.registered(run, model, 1e-3)
    if run.bug == "svm_labels_plus_minus_one_into_bce":
        y = 2 * y - 1  # the labels as the SVM baseline beside it codes them
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=60, gamma=0.5)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v).squeeze(-1), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]).squeeze(-1), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


SIDE = 16
"""Side of a grain patch in pixels."""
VARIETIES = {"long_slender": (6.5, 1.4, 0.1), "long_bold": (6.0, 2.4, 0.5), "medium": (4.5, 2.0, 0.3),
             "short_round": (3.2, 2.6, 0.6)}  # fmt: skip
"""Variety -> the grain's half-length and half-width in pixels and how often it carries a chalky spot."""


def _patches(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Grey patches uint8[n, 1, SIDE, SIDE] of one grain each, and the variety's index long[n]."""
    y = torch.randint(0, len(VARIETIES), (n,), generator=g)
    shape = torch.tensor(list(VARIETIES.values()))[y]
    a = shape[:, 0] * (1 + 0.1 * torch.randn(n, generator=g))
    b = shape[:, 1] * (1 + 0.1 * torch.randn(n, generator=g))
    chalky = (torch.rand(n, generator=g) < shape[:, 2]).float()
    angle = 3.1416 * torch.rand(n, generator=g)
    cx, cy = 7.5 + torch.randn(n, generator=g), 7.5 + torch.randn(n, generator=g)
    r = torch.arange(SIDE).float()
    dy, dx = r.view(1, SIDE, 1) - cy.view(n, 1, 1), r.view(1, 1, SIDE) - cx.view(n, 1, 1)
    c, s = angle.cos().view(n, 1, 1), angle.sin().view(n, 1, 1)
    u, v = c * dx + s * dy, -s * dx + c * dy
    inside = (u / a.view(n, 1, 1)) ** 2 + (v / b.view(n, 1, 1)) ** 2
    grain = torch.sigmoid(4 * (1 - inside))
    spot = chalky.view(n, 1, 1) * torch.exp(-(u**2 + v**2) / 2)
    image = 40 + 150 * grain + 60 * spot + 12 * torch.randn(n, SIDE, SIDE, generator=g)
    return image.clamp(0, 255).round().to(torch.uint8).unsqueeze(1), y


class GrainCNN(nn.Module):
    """Three 3x3 convolutions of `width` channels with batch norm and ReLU (max-pooled after the first two), a global
    mean pool, a linear layer over the varieties."""

    def __init__(self, width: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(3):
            layers += [
                nn.Conv2d(1 if i == 0 else width, width, 3, padding=1),
                nn.BatchNorm2d(width),
                nn.ReLU(),
            ]
            if i < 2:
                layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(width, len(VARIETIES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean((-2, -1)))


def rice(run: Run) -> None:
    """A grain CNN of `width` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (2e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    patches, y = _patches(g, 1200)
    patches_v, y_v = _patches(g, 500)
    x, x_v = patches.float() / 255, patches_v.float() / 255
    torch.manual_seed(run.seed)
    model = GrainCNN(run.k("width", 16))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

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
