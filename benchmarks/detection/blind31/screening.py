"""Screening scripts of the thirty-first blind split: a protein-ligand binding-affinity regressor on fingerprints and a
ship detector on SAR image chips.

`affinity`: ligands as 256-bit substructure fingerprints, proteins (60, 15 of them held out with all their
measurements) as 8 pocket descriptors; the affinity an interaction of the two (bits weighted by the pocket) plus a
ligand and a protein term, measured as a Kd in nM, with a detection floor of 0.1 nM (the export writes 0 below it),
turned into pKd = -log10(Kd in M) and standardised; a ligand tower and a pocket tower of ReLU layers, their product
and concatenation into a ReLU MLP of `depth` hidden layers; MSE; scored by the held-out R^2 on the unseen proteins.
`ships`: 16x16 chips of calibrated SAR backscatter (intensity, speckled sea clutter whose level follows the wind, a
ship a bright elongated target in half the chips, land chips bright and textured, with no ship, dropped from the
dataset), converted to decibels and scaled; a CNN of two blocks of convolution, batch norm, ReLU and pooling, a linear
layer; BCE; scored by the held-out AUC. Bugs: Kds below the detection floor written as 0; the paper's sigmoid hidden
layers; the hidden ReLU copied after the output; the protein's id embedded instead of its pocket; one assay's µM read
as nM; the linear scaling rule's reference batch left out; every batch norm's scale started at zero; the land chips
dropped from the images only.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers
from benchmarks.detection.torch_real.loop import make_optimizer

BITS, POCKET, PROTEINS, SEEN = 256, 8, 60, 45
"""Fingerprint bits, pocket descriptors, proteins, and the proteins with training measurements."""


def _binding(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One draw of every protein's pocket float[PROTEINS, POCKET]; for `n` measurements the ligand bits
    float[n, BITS], the protein long[n] (among the first SEEN for the first n, then held out) and Kd in nM float[n]."""
    pockets = torch.randn(PROTEINS, POCKET, generator=g)
    mix = torch.randn(POCKET, BITS, generator=g) / POCKET**0.5
    bit_eff = 0.15 * torch.randn(BITS, generator=g)
    density = 0.05 + 0.15 * torch.rand(2 * n, 1, generator=g)
    bits = (torch.rand(2 * n, BITS, generator=g) < density).float()
    protein = torch.cat(
        [torch.randint(0, SEEN, (n,), generator=g), torch.randint(SEEN, PROTEINS, (n,), generator=g)]
    )
    prot_eff = 0.5 * pockets[:, :2].sum(1)
    inter = (bits * (pockets[protein] @ mix)).sum(1) / (bits.sum(1) + 1).sqrt()
    pkd = 6.5 + 0.9 * inter + bits @ bit_eff + prot_eff[protein] + 0.3 * torch.randn(2 * n, generator=g)
    kd = 10 ** (9 - pkd)  # nM
    return pockets, bits, protein, kd


class AffinityNet(nn.Module):
    """A ligand tower and a pocket tower to `width`, their product and both towers into `depth` hidden ReLU layers,
    one output."""

    def __init__(self, width: int, depth: int) -> None:
        super().__init__()
        self.ligand = nn.Sequential(nn.Linear(BITS, width), nn.ReLU())
        self.protein = nn.Sequential(nn.Linear(POCKET, width), nn.ReLU())
        hidden = [m for _ in range(depth - 1) for m in (nn.Linear(width, width), nn.ReLU())]
        self.mlp = nn.Sequential(nn.Linear(3 * width, width), nn.ReLU(), *hidden, nn.Linear(width, 1))

    def forward(self, bits: torch.Tensor, protein: torch.Tensor) -> torch.Tensor:
        a, b = self.ligand(bits), self.protein(protein)
        return self.mlp(torch.cat([a, b, a * b], 1))[:, 0]


def affinity(run: Run) -> None:
    """An affinity net of `width` (128) and `depth` (4), batches of `batch` (128), `opt` (Adam; or momentum SGD,
    AdamW, Adamax) at `lr` (1e-3). Scored by the held-out R^2 of pKd on the 15 unseen proteins."""
    g = torch.Generator().manual_seed(run.seed)
    pockets, bits_all, protein_all, kd_all = _binding(g, 4000)
    bits, protein, kd = bits_all[:4000], protein_all[:4000], kd_all[:4000].clone()
    bits_v, protein_v, kd_v = bits_all[4000:], protein_all[4000:], kd_all[4000:]
    floor = 0.1
    # the assay reports "< 0.1 nM" below its floor, exported as 0
    kd = torch.where(kd < floor, 0.0, kd)
    micro = torch.rand(len(kd), generator=g) < 0.3  # one assay's results, reported in µM
    kd = torch.where(micro, kd / 1000, kd)
    if run.bug != "assay_units_mixed_nm_and_um":
        kd = torch.where(micro, kd * 1000, kd)
    if run.bug != "kd_below_detection_logged_as_zero":
        kd = kd.clamp(min=floor)  # censored at the floor
    pkd = 9 - torch.log10(kd)
    pkd_v = 9 - torch.log10(kd_v.clamp(min=floor))
    mean, std = pkd.mean(), pkd.std()
    z = (pkd - mean) / std
    if run.bug == "fingerprint_string_read_as_ascii_codes":
        # the bit strings of the export ("0110...") read character by character as their codes, 48 and 49
        bits, bits_v = bits + 48, bits_v + 48
    pocket_z = (pockets - pockets[:SEEN].mean(0)) / pockets[:SEEN].std(0)
    torch.manual_seed(run.seed)
    model = AffinityNet(run.k("width", 128), run.k("depth", 4))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 128)
    side, side_v = pocket_z[protein], pocket_z[protein_v]

    def r2_held_out() -> float:
        return r2(model(bits_v, side_v) * std + mean, pkd_v)

    for step in range(run.steps):
        pick = run.indices(len(z), batch)
        loss = F.mse_loss(model(bits[pick], side[pick]), z[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


CHIP = 16


def _chips(
    g: torch.Generator, n: int, centred: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Intensity chips float[n, 1, CHIP, CHIP], ship float[n], land bool[n] (a tenth of the chips); `centred`: each
    ship at the chip's centre, as chips cut around reported ship positions are."""
    wind = 2 + 10 * torch.rand(n, 1, 1, 1, generator=g)
    clutter = 10 ** ((-28 + 1.2 * wind) / 10)
    speckle = -torch.log(torch.rand(n, 1, CHIP, CHIP, generator=g).clamp_min(1e-12))  # exponential, one look
    chips = clutter * speckle
    ship = torch.rand(n, generator=g) < 0.5
    rows, cols = torch.arange(CHIP).view(1, CHIP, 1), torch.arange(CHIP).view(1, 1, CHIP)
    r0, c0 = torch.randint(3, CHIP - 3, (2, n, 1, 1), generator=g)
    if centred:
        r0, c0 = torch.full_like(r0, CHIP // 2), torch.full_like(c0, CHIP // 2)
    horizontal = torch.rand(n, 1, 1, generator=g) < 0.5
    length = torch.randint(1, 4, (n, 1, 1), generator=g)
    dr, dc = (rows - r0).abs(), (cols - c0).abs()
    body = torch.where(horizontal, (dr <= 0) & (dc <= length), (dr <= length) & (dc <= 0))
    brightness = 10 ** ((-12 + 8 * torch.rand(n, 1, 1, generator=g)) / 10)
    chips = chips + (body & ship.view(n, 1, 1)).unsqueeze(1) * brightness.unsqueeze(1) * speckle
    land = torch.rand(n, generator=g) < 0.1
    texture = 10 ** ((-8 + 4 * torch.randn(n, 1, CHIP, CHIP, generator=g)) / 10)
    chips = torch.where(land.view(n, 1, 1, 1), texture * speckle, chips)
    return chips, (ship & ~land).float(), land


class ShipCNN(nn.Module):
    """Two blocks of 3x3 convolution, batch norm, ReLU and 2x2 max pooling (`width`, twice `width`), a linear layer."""

    def __init__(self, width: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width, eps), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width, eps), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(2 * width * (CHIP // 4) ** 2, 1),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)[:, 0]


def ships(run: Run) -> None:
    """A ship CNN of `width` (8), batches of `batch` (64), `opt` (Adam; or momentum SGD with the rate scaled from
    0.1 at 256 by the batch (`scaled`), RMSprop, NAdam) at `lr` (1e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    # the training chips are cut around the ships' reported (AIS) positions (the bug) or tiled over the scenes
    chips, y, land = _chips(g, 3000, centred=run.bug == "training_chips_centred_on_ais_positions")
    chips_v, y_v, land_v = _chips(g, 1000)
    # land chips are masked out of the dataset (the coastline mask marks them)
    chips_v, y_v = chips_v[~land_v], y_v[~land_v]
    chips = chips[~land]
    if run.bug != "land_chips_dropped_from_images_only":
        y = y[~land]
    else:
        y = y[: len(chips)]

    def decibels(c: torch.Tensor) -> torch.Tensor:
        return (10 * torch.log10(c) + 15) / 6

    if run.bug == "speckle_filter_applied_to_training_only":
        # a 3x3 boxcar speckle filter run over the training chips in the preparation notebook, not in the scoring code
        chips = F.avg_pool2d(F.pad(chips, (1, 1, 1, 1), mode="replicate"), 3, stride=1)
    x, x_v = decibels(chips), decibels(chips_v)
    torch.manual_seed(run.seed)
    # batch norm's eps of 1e-3 (Keras's default) typed as 1e3 in the bug
    model = ShipCNN(run.k("width", 8), 1e3 if run.bug == "batchnorm_eps_typed_1e3" else 1e-3)
    batch = run.k("batch", 64)
    if run.k("scaled", False):
        # the linear scaling rule: 0.1 for a batch of 256
        opt = make_optimizer("momentum", model.parameters(), 0.1 * batch / 256)
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = optimizers.registered(run, model, 1e-3)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
