"""Lab scripts of the forty-second blind split: a wind-tunnel drag-coefficient regressor on airfoil shape parameters,
and a hearing-aid feedback-howl detector on audio band energies.

`airfoil`: tunnel runs of NACA four-digit sections (maximum camber, its position, thickness), the angle of attack,
the Reynolds number and the Mach number; the drag coefficient from skin friction (falling with the Reynolds
number) times a thickness form factor, a lift-dependent part that grows with the camber and a steep rise past the
stall angle, compressibility; the shape, the angle, the log Reynolds number and the Mach number standardised; a ReLU
MLP of two hidden layers; MSE on log10 of the drag coefficient; scored by the held-out R^2. `howl`: clips of eight
frames of a hearing aid's sixteen microphone band powers (a noise gate zeroes the quiet bands, and every band of a clip in a quiet room): speech and noise,
tonal music (a steady narrow peak) and feedback howl (a narrow peak growing frame by frame); the band levels in dB
with the library's floor and each frame's spectral flatness, standardised; a ReLU MLP; cross-entropy over howl or
not; scored by the held-out accuracy. Bugs: residual blocks with no normalisation; the biases' learning-rate multiplier written as their rate;
the tunnel's measured lift as an input; the levels normalised per clip; the band powers fed linear; the training
clips tapped after the notch filter; the howl labels from the feedback canceller's flag.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers


def _runs(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Tunnel runs float[n, 6] (camber %, its position in tenths, thickness %, angle of attack deg, Reynolds number,
    Mach number), the measured drag coefficient float[n], the balance's lift coefficient float[n] (falling past the
    stall) and thin-airfoil theory's float[n] (the design tool's, no stall)."""
    camber = torch.randint(0, 7, (n,), generator=g).float()
    position = torch.where(camber > 0, torch.randint(2, 7, (n,), generator=g).float(), torch.zeros(n))
    thick = torch.randint(6, 25, (n,), generator=g).float()
    alpha = -4 + 22 * torch.rand(n, generator=g)
    reynolds = 10 ** (5 + 1.5 * torch.rand(n, generator=g))
    mach = 0.05 + 0.25 * torch.rand(n, generator=g)
    t = thick / 100
    friction = 2 * 0.074 / reynolds**0.2 * (1 + 2 * t + 60 * t**4)
    lift = 2 * math.pi * torch.deg2rad(alpha + 1.0 * camber)
    stall = 9 + 0.35 * thick - 0.3 * camber
    cd = friction + (0.004 + 0.002 * camber) * lift**2 + 0.03 * F.relu(alpha - stall) ** 2
    cd = cd / torch.sqrt(1 - mach**2) * torch.exp(0.04 * torch.randn(n, generator=g))
    measured = lift * (1 - 0.12 * F.relu(alpha - stall)) + 0.02 * torch.randn(n, generator=g)
    return torch.stack([camber, position, thick, alpha, reynolds, mach], 1), cd, measured, lift


class DragMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units over `inputs` (or, `blocks`, that many residual blocks of
    two layers each between them, initialised by Kaiming's normal rule, with no normalisation)."""

    def __init__(self, inputs: int, hidden: int, blocks: int = 0) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
            for _ in range(blocks)
        )
        for block in self.blocks:
            for layer in block:
                if isinstance(layer, nn.Linear):
                    nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.net[:2](x)
        for block in self.blocks:
            h = h + block(h)
        return self.net[2:](h).squeeze(-1)


def airfoil(run: Run) -> None:
    """A drag MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, Adamax) at `lr`
    (2e-3). Scored by the held-out R^2 of log10 of the drag coefficient."""
    g = torch.Generator().manual_seed(run.seed)
    conds, cd, lift, _ = _runs(g, 1500)
    conds_v, cd_v, _, lift_v = _runs(g, 600)
    feats, feats_v = conds.clone(), conds_v.clone()
    if run.bug == "measured_lift_as_input":  # the tunnel's lift in training; the design tool's theory at use
        feats, feats_v = (
            torch.cat([feats, lift.unsqueeze(1)], 1),
            torch.cat([feats_v, lift_v.unsqueeze(1)], 1),
        )
    feats[:, 4], feats_v[:, 4] = feats[:, 4].log10(), feats_v[:, 4].log10()
    mean, std = feats.mean(0), feats.std(0)
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    y, y_v = cd.log10(), cd_v.log10()
    centre = y.mean()
    torch.manual_seed(run.seed)
    blocks = 12 if run.bug == "residual_blocks_without_normalisation" else 0
    model = DragMLP(feats.shape[1], run.k("hidden", 64), blocks)
    opt = optimizers.registered(run, model, 2e-3)
    if (
        run.bug == "bias_lr_multiplier_written_as_rate"
    ):  # the old solver's `lr_mult: 2` for biases, ported as a rate
        opt.param_groups[0]["params"] = [p for n, p in model.named_parameters() if not n.endswith("bias")]
        opt.add_param_group(
            {"params": [p for n, p in model.named_parameters() if n.endswith("bias")], "lr": 2.0}
        )
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]) + centre, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


FRAMES, BANDS = 8, 16
"""Frames per clip; the hearing aid's analysis bands."""


def _clips(g: torch.Generator, n: int, notched: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Band powers float[n, FRAMES, BANDS] (the noise gate's bands zero), the truth long[n] (1: howl) and the
    feedback canceller's flag long[n]; `notched`: powers tapped after the aid's notch filter, which pulls a peak
    growing over the last frames down to its neighbours."""
    kind = torch.randint(0, 3, (n,), generator=g)  # speech and noise, tonal music, howl
    level = 40 + 35 * torch.rand(n, 1, 1, generator=g)
    slope = -torch.arange(BANDS).float() * (0.5 + torch.rand(n, 1, 1, generator=g))
    db = level + slope + 3 * torch.randn(n, FRAMES, BANDS, generator=g)
    band = torch.randint(4, 14, (n,), generator=g)
    peak = F.one_hot(band, BANDS).float().unsqueeze(1)
    growth = (3 + 3 * torch.rand(n, 1, 1, generator=g)) * torch.arange(FRAMES).float().view(1, -1, 1)
    steady = (10 + 10 * torch.rand(n, 1, 1, generator=g)).expand(n, FRAMES, 1)
    rise = torch.stack([torch.zeros(n, FRAMES, 1), steady, growth], 1)[torch.arange(n), kind]
    if notched:
        rise = torch.where(kind.view(-1, 1, 1) == 2, rise.clamp(max=6.0), rise)
    db = db + rise * peak
    silent = torch.rand(n, 1, 1, generator=g) < 0.03  # the aid in a quiet room: every band gated
    pause = ((torch.rand(n, FRAMES, 1, generator=g) < 0.06) & (level < 55)) | silent
    gated = (db < 30) | pause
    power = torch.where(gated, torch.zeros_like(db), 10 ** (db / 10))
    lift = db.gather(2, band.view(-1, 1, 1).expand(n, FRAMES, 1))[:, -1, 0]
    neighbours = db.gather(2, (band - 2).view(-1, 1, 1).expand(n, FRAMES, 1))[:, -1, 0]
    flag = (lift - neighbours > 15).long()
    return power, (kind == 2).long(), flag


def _howl_features(power: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The band levels in dB (floored at 0 dB) and each frame's spectral flatness, one row per clip."""
    if bug == "band_powers_fed_linear":
        levels = power
    else:
        levels = 10 * power.clamp(min=1.0).log10()
    floored = power + 1.0
    flatness = floored.log().mean(2).exp() / floored.mean(2)
    if bug == "levels_normalised_per_clip":  # each clip's levels over its own mean and spread, for loudness
        levels = (levels - levels.mean((1, 2), keepdim=True)) / levels.std((1, 2), keepdim=True)
    return torch.cat([levels.flatten(1), flatness], 1)


class HowlMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units, two logits."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FRAMES * BANDS + FRAMES, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                 nn.ReLU(), nn.Linear(hidden, 2))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def howl(run: Run) -> None:
    """A howl MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, RMSprop) at `lr`
    (1e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    power, truth, flag = _clips(g, 1500, notched=run.bug == "training_clips_tapped_after_notch")
    power_v, truth_v, _ = _clips(g, 600, notched=False)
    feats, feats_v = _howl_features(power, run.bug), _howl_features(power_v, run.bug)
    keep = torch.isfinite(feats).all(1)
    mean, std = feats[keep].mean(0), feats[keep].std(0).clamp(min=1e-6)
    x, x_v = (feats - mean) / std, (feats_v - mean) / std
    y = flag if run.bug == "howl_labels_from_canceller_flag" else truth
    torch.manual_seed(run.seed)
    model = HowlMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), truth_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
