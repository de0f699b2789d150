"""Biomedical scripts of the thirty-second blind split: an epigenetic age clock on CpG methylation and a heart-murmur
detector on phonocardiogram band energies.

`clock`: 300 training blood samples of 1,000 CpG probes' methylated and unmethylated intensities (a tenth of the
probes drift with age, the rest vary by person; a few reads in a thousand fail and give 0 for both); the beta taken as
methylated over the sum plus Illumina's offset of 100, clipped to [0.01, 0.99], turned into M-values (log2 of beta
over 1 - beta) and standardised by the training samples; the age standardised; an MLP of four SiLU layers with an L1
penalty on its first layer; MSE; scored by the held-out R^2.
`murmur`: recordings of 48 frames of the power in 16 bands of 50 Hz from a digital stethoscope at 1,600 Hz (S1 and S2
below 200 Hz every 8-12 frames, a systolic murmur between them from 150 to 600 Hz, noise at a level of its own, one
recording in forty flat where the chest piece lost contact); each recording divided by its peak power, the bands up to
600 Hz kept, logged; a 1-D CNN over the frames with a global max pool; training recordings rolled in time and scaled
in gain at random; BCE with logits; scored by the held-out AUC. Bugs: the beta without Illumina's offset; sigmoid
written for SiLU; the L1 penalty computed and not added to the loss; a flat recording divided by its zero peak; the
augmentation's training guard inverted; the band width taken from the stethoscope's nominal 4 kHz rate; the band
powers fed as unscaled decibels.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

PROBES, AGEING = 1000, 100
"""CpG probes on the array, and how many of them drift with age."""


def _samples(
    g: torch.Generator, n: int, probe_base: torch.Tensor, slope: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Methylated and unmethylated intensities float[n, PROBES] (both 0 where the read failed), ages in years
    float[n]."""
    age = 20 + 60 * torch.rand(n, generator=g)
    person = 0.4 * torch.randn(n, PROBES, generator=g)
    logit = probe_base + slope * (age.unsqueeze(1) - 50) / 15 + person
    beta = torch.sigmoid(logit)
    total = torch.exp(8 + 0.5 * torch.randn(n, PROBES, generator=g))
    read = (torch.rand(n, PROBES, generator=g) > 0.003).float()  # a few reads fail and give no signal
    return (beta * total).round() * read, ((1 - beta) * total).round() * read, age


class Clock(nn.Module):
    """Four layers of `hidden` with `act` between them, a linear output."""

    def __init__(self, hidden: int, act: type[nn.Module]) -> None:
        super().__init__()
        self.first = nn.Linear(PROBES, hidden)
        self.body = nn.Sequential(act(), nn.Linear(hidden, hidden), act(), nn.Linear(hidden, hidden), act(),
                                  nn.Linear(hidden, hidden), act(), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.first(x))[:, 0]


def clock(run: Run) -> None:
    """An age clock of `hidden` (64), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (1e-3), L1 weight `l1` (1e-4) on the first layer. Scored by the held-out R^2 of the age."""
    g = torch.Generator().manual_seed(run.seed)
    probe_base = 2.5 * torch.randn(PROBES, generator=g)
    slope = torch.zeros(PROBES)
    slope[:AGEING] = 0.6 * torch.randn(AGEING, generator=g)
    meth, unmeth, age = _samples(g, 300, probe_base, slope)
    meth_v, unmeth_v, age_v = _samples(g, 800, probe_base, slope)

    def m_values(methylated: torch.Tensor, unmethylated: torch.Tensor) -> torch.Tensor:
        # Illumina's beta adds an offset of 100 to the denominator; the bug leaves it out, 0/0 for a failed read
        offset = 0.0 if run.bug == "beta_without_illumina_offset" else 100.0
        b = (methylated / (methylated + unmethylated + offset)).clamp(0.01, 0.99)
        return torch.log2(b / (1 - b))

    m, m_v = m_values(meth, unmeth), m_values(meth_v, unmeth_v)
    mean, std = m.mean(0), m.std(0)
    std = torch.where(std > 0, std, torch.ones_like(std))  # a probe read the same in every sample
    x, x_v = (m - mean) / std, (m_v - mean) / std
    y, y_v = (age - 50) / 15, (age_v - 50) / 15
    torch.manual_seed(run.seed)
    model = Clock(run.k("hidden", 64), nn.Sigmoid if run.bug == "sigmoid_written_for_silu" else nn.SiLU)
    opt = optimizers.registered(run, model, 1e-3)
    batch, l1 = run.k("batch", 32), run.k("l1", 1e-4)

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        penalty = l1 * model.first.weight.abs().sum()
        if run.bug != "l1_penalty_computed_not_added":
            loss = loss + penalty
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


FRAMES, BANDS, RATE = 48, 16, 1600
"""Frames a recording, bands of the spectrum up to the Nyquist frequency, the stethoscope's sample rate in Hz."""
CUTOFF_HZ = 600
"""Bands above this carry only noise."""


def _recordings(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Band powers float[n, FRAMES, BANDS], murmur float[n]."""
    murmur = (torch.rand(n, generator=g) < 0.35).float()
    period = torch.randint(8, 13, (n,), generator=g)
    start = torch.randint(0, 8, (n,), generator=g)
    t = (torch.arange(FRAMES).unsqueeze(0) - start.unsqueeze(1)) % period.unsqueeze(1)
    s1, s2 = (t == 0).float(), (t == (period // 2).unsqueeze(1)).float()
    systole = ((t > 0) & (t < (period // 2).unsqueeze(1))).float()
    bands = torch.arange(BANDS).float()
    heart = torch.exp(-bands / 1.5)  # S1 and S2 below 200 Hz
    murmur_shape = torch.exp(-((bands - 8) ** 2) / 6)  # 150-600 Hz
    level = 0.1 + 0.5 * torch.rand(n, 1, 1, generator=g)
    power = (s1 + 0.7 * s2).unsqueeze(-1) * heart * (1 + 0.3 * torch.rand(n, 1, 1, generator=g))
    power = power + (0.2 * torch.rand(n, generator=g) + 0.02).view(n, 1, 1) * systole.unsqueeze(
        -1
    ) * murmur_shape * murmur.view(n, 1, 1)
    noise = level * 0.3 * torch.rand(n, FRAMES, BANDS, generator=g) * torch.exp(-bands / 10)
    power = power + noise
    flat = torch.rand(n, generator=g) < 0.025  # the chest piece lost contact: a recording of zeros
    return power * (~flat).float().view(n, 1, 1), murmur


class MurmurCNN(nn.Module):
    """Two 1-D convolutions of `width` over the frames, a global max pool, a linear layer."""

    def __init__(self, bands: int, width: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(bands, width, 5, padding=2), nn.ReLU(),
                                  nn.Conv1d(width, width, 5, padding=2), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.conv(x.transpose(1, 2)).amax(-1))[:, 0]


def murmur(run: Run) -> None:
    """A murmur CNN of `width` (32), batches of `batch` (32), `opt` (Adam; or AdamW, Nesterov SGD, Adamax) at `lr`
    (1e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    power, y = _recordings(g, 400)
    power_v, y_v = _recordings(g, 1000)
    rate = 4000 if run.bug == "band_width_from_nominal_rate" else RATE
    keep = int(CUTOFF_HZ / (rate / 2 / BANDS))

    def features(p: torch.Tensor) -> torch.Tensor:
        peak = p.amax((1, 2), keepdim=True)
        if run.bug != "peak_normalised_flat_recordings":
            peak = peak.clamp_min(1e-8)
        if run.bug == "decibels_fed_unscaled":
            return 10 * torch.log10(p[..., :keep] / peak + 1e-4)  # decibels below the peak, -40 to 0
        return torch.log(p[..., :keep] / peak + 1e-4) / 4 + 1

    x, x_v = features(power), features(power_v)
    torch.manual_seed(run.seed)
    model = MurmurCNN(keep, run.k("width", 32))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 32)

    def augment(xb: torch.Tensor) -> torch.Tensor:
        shift = int(torch.randint(0, FRAMES, (1,), generator=run.gen))
        gain = 0.25 * torch.randn(
            len(xb), 1, 1, generator=run.gen
        )  # a gain of the recording, on the log scale
        return torch.roll(xb, shift, 1) + gain

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        xb = x[pick]
        training = model.training
        if run.bug == "augmentation_guard_inverted":
            training = not training
        if training:
            xb = augment(xb)
        loss = F.binary_cross_entropy_with_logits(model(xb), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
