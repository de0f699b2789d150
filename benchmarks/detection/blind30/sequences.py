"""Sequence scripts of the thirtieth blind split: a bacterial promoter classifier on DNA and an exoplanet transit
detector on light curves.

`promoters`: 80-base sequences, one-hot over A, C, G, T; a promoter carries the -35 box TTGACA and the -10 box TATAAT
(each base mutated one time in seven) 15-19 bases apart, in a GC-rich stretch; the non-promoters are drawn to the same
GC content, two in five with one box alone as a decoy; a 1-D CNN (a motif convolution, a dilated convolution spanning
the two boxes, a max over positions, a linear layer); BCE with logits; scored by the held-out AUC. `transits`: 256
cadences (30 minutes apart) of a star's flux in electrons per second, with the star's own variability, white noise and a
data gap of 12 cadences (NaN, as the pipeline exports them); two curves in five carry periodic box-shaped transits of
2-4.5 hours; each curve divided by its median and detrended by a 12-hour moving median, the gap set to 0, scaled by the
training curves' spread; a CNN of three convolutions, a max over time and a linear layer; BCE with logits; scored by the
held-out AUC. Bugs: the training non-promoters drawn from the genome's background GC content; the training file exported
from the opposite strand and not reverse-complemented; the motif convolution's bias set to a PWM threshold; the median
of a curve taken over its gap; the detrending window's hours multiplied by the cadence instead of divided; each curve's
median subtracted instead of divided.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

LENGTH = 80
BOXES = (torch.tensor([3, 3, 2, 0, 1, 0]), torch.tensor([3, 0, 3, 0, 0, 3]))
"""Sequence length; the -35 box TTGACA and the -10 box TATAAT as indices into A, C, G, T."""


def _sequences(g: torch.Generator, n: int, gc_negative: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Bases long[n, LENGTH] and promoter labels float[n]; the non-promoters drawn at GC content `gc_negative`."""
    y = (torch.rand(n, generator=g) < 0.5).float()
    gc = torch.where(y > 0, 0.58, gc_negative).unsqueeze(1)
    strong = torch.rand(n, LENGTH, generator=g) < gc
    base = torch.where(strong, 1 + torch.randint(0, 2, (n, LENGTH), generator=g),
                       3 * torch.randint(0, 2, (n, LENGTH), generator=g))  # fmt: skip
    for i in range(n):
        ten = int(torch.randint(40, 68, (1,), generator=g))
        thirty_five = ten - 6 - int(torch.randint(15, 20, (1,), generator=g))
        decoy = float(torch.rand(1, generator=g))
        for box, at, keep in ((BOXES[0], thirty_five, y[i] > 0 or decoy < 0.2),
                              (BOXES[1], ten, y[i] > 0 or 0.2 <= decoy < 0.4)):  # fmt: skip
            if keep:
                mutated = torch.rand(6, generator=g) < 1 / 7
                base[i, at : at + 6] = torch.where(mutated, torch.randint(0, 4, (6,), generator=g), box)
    return base, y


class PromoterCNN(nn.Module):
    """A motif convolution of `width`, a dilated convolution spanning both boxes, a max over positions, a linear
    layer."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.motif = nn.Conv1d(4, width, 7, padding=3)
        self.pair = nn.Conv1d(width, width, 9, padding=12, dilation=3)
        self.out = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(F.relu(self.pair(F.relu(self.motif(x)))).amax(-1))[:, 0]


def promoters(run: Run) -> None:
    """A promoter CNN of `width` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at `lr`
    (2e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    # the training non-promoters are GC-matched to the promoters (the bug: drawn from the genome's background)
    background = 0.42 if run.bug == "negatives_not_gc_matched" else 0.58
    bases, y = _sequences(g, 2000, background)
    bases_v, y_v = _sequences(g, 600, 0.58)
    if run.bug == "training_strand_not_reverse_complemented":
        # the training file was exported from the opposite strand and used as it came
        bases = (3 - bases).flip(-1)
    x, x_v = F.one_hot(bases, 4).float().transpose(1, 2), F.one_hot(bases_v, 4).float().transpose(1, 2)
    torch.manual_seed(run.seed)
    model = PromoterCNN(run.k("width", 32))
    if run.bug == "conv_bias_set_to_motif_threshold":
        with torch.no_grad():
            model.motif.bias.fill_(
                -4.5
            )  # a position weight matrix's log-odds threshold, from a motif scanner
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

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


CADENCES, GAP = 256, 12
"""Cadences a curve (30 minutes apart) and the length of its data gap."""


def _curves(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Flux in electrons per second float[n, CADENCES] with NaN in each curve's gap, and transit labels float[n]."""
    y = (torch.rand(n, generator=g) < 0.4).float()
    t = torch.arange(CADENCES, dtype=torch.float32).unsqueeze(0)
    brightness = 1e4 * torch.exp(1.5 * torch.randn(n, 1, generator=g))
    amp = 0.001 + 0.005 * torch.rand(n, 1, generator=g)
    spin = 60 + 340 * torch.rand(n, 1, generator=g)
    phase = 6.3 * torch.rand(n, 1, generator=g)
    variability = amp * torch.sin(6.2832 * t / spin + phase) + 0.4 * amp * torch.sin(12.566 * t / spin)
    depth = 0.0015 + 0.0045 * torch.rand(n, 1, generator=g)
    duration = torch.randint(4, 10, (n, 1), generator=g)
    period = torch.randint(40, 110, (n, 1), generator=g)
    epoch = (torch.rand(n, 1, generator=g) * period).long()
    in_transit = ((t.long() - epoch) % period) < duration
    dips = depth * in_transit * y.unsqueeze(1)
    noise = (0.0005 + 0.001 * torch.rand(n, 1, generator=g)) * torch.randn(n, CADENCES, generator=g)
    flux = brightness * (1 + variability - dips + noise)
    start = torch.randint(0, CADENCES - GAP, (n, 1), generator=g)
    gap = (t >= start) & (t < start + GAP)
    return flux.masked_fill(gap, float("nan")), y


class TransitCNN(nn.Module):
    """Three convolutions of `width` with poolings, a max over time, a linear layer."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(1, width, 7, padding=3), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
        )  # fmt: skip
        self.out = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.body(x.unsqueeze(1)).amax(-1))


def transits(run: Run) -> None:
    """A transit CNN of `width` (16), batches of `batch` (64), `opt` (Adam; or NAdam, momentum SGD) at `lr` (2e-3).
    Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    flux, y = _curves(g, 2000)
    flux_v, y_v = _curves(g, 500)
    hours = 12.0  # the detrending window; the bug multiplies the hours by the 0.5-hour cadence instead of dividing
    size = int(hours * 0.5) + 1 if run.bug == "detrend_hours_times_cadence" else int(hours / 0.5) + 1

    def prepare(f: torch.Tensor) -> torch.Tensor:
        if run.bug == "median_taken_over_gaps":
            median = f.median(1, keepdim=True).values
        else:
            median = f.nanmedian(1, keepdim=True).values
        # the curve as a fraction of its median (the bug: the median subtracted, leaving electrons per second)
        rel = f - median if run.bug == "median_subtracted_not_divided" else f / median - 1
        padded = F.pad(rel.unsqueeze(1), (size // 2, size // 2), mode="replicate")[:, 0]
        trend = padded.unfold(1, size, 1).nanmedian(-1).values
        return torch.where(f.isnan(), 0.0, rel - trend)  # the gap set to 0 after detrending

    x, x_v = prepare(flux), prepare(flux_v)
    scale = x.std()
    x, x_v = x / scale, x_v / scale
    torch.manual_seed(run.seed)
    model = TransitCNN(run.k("width", 16))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v)[:, 0], y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick])[:, 0], y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
