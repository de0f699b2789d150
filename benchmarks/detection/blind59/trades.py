"""Trade scripts of the fifty-ninth blind split: a bakery's proofing grader on scans of its loaves' crumb, and a
hearing-aid clinic's fitting model from its patients' audiograms.

`crumb`: a 12x12 grey scan of a slice from the middle of a loaf (the crumb's cells as dark holes in the lighter
crumb, a tunnel under the crust when the dough collapsed); the proof (under, right, over) by a small 2-D CNN;
cross-entropy; scored by the held-out accuracy on another week's bakes. `fitting`: both ears' thresholds in dB HL at
the audiogram's eight frequencies, the patient's age and whether they wore aids before, the aid's style embedded; the
insertion gains in dB the audiologist settled on at the eight bands by a GELU MLP; L1 on the standardised gains with a
small penalty on jumps between neighbouring bands; scored by the held-out R^2 on another clinic's patients. Bugs: the
baker's proof offset read with its sign inverted; the training slices cut from the loaves' heels; the NLL taken of
the softmax's probabilities; the right aids given the left ear's audiogram; each audiogram reduced to its
four-frequency average; the aid's datalogged volume offset kept as an input.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SIDE = 12
PROOFS = ("under", "right", "over")


def _slices(g: torch.Generator, n: int, *, heel: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Crumb scans float[n, 1, SIDE, SIDE] (0 black, 1 white) and the baker's proof long[n]. Under-proofed crumb is
    tight, with many small cells; over-proofed crumb is open, with a few big ones and often a tunnel under the top
    crust. A heel slice (`heel`) has the crust along one edge and a compressed crumb."""
    proof = torch.randint(0, 3, (n,), generator=g)
    rows = torch.arange(SIDE).view(1, SIDE, 1).float()
    cols = torch.arange(SIDE).view(1, 1, SIDE).float()
    level = 0.72 + 0.06 * torch.randn(n, 1, 1, generator=g) + 0.03 * proof.view(n, 1, 1)
    img = level.expand(n, SIDE, SIDE).clone()
    squeeze = 0.7 if heel else 1.0
    p = proof.float().view(n, 1, 1)
    for k in range(10):
        # each proof has its number and size of cells, overlapping the neighbouring proofs'
        count = 9 - 2.5 * p + 2 * torch.randn(n, 1, 1, generator=g)
        present = (k < count).float()
        radius = (0.7 + 0.5 * p + 0.45 * torch.randn(n, 1, 1, generator=g)).clamp(min=0.4) * squeeze
        r0, c0 = SIDE * torch.rand(n, 1, 1, generator=g), SIDE * torch.rand(n, 1, 1, generator=g)
        stretch = 1 + 0.5 * torch.rand(n, 1, 1, generator=g)
        d2 = (rows - r0) ** 2 + ((cols - c0) / stretch) ** 2
        hole = (d2 < radius**2).float() * present
        img = img * (1 - 0.6 * hole)
    tunnel = (proof == 2).view(n, 1, 1) & (torch.rand(n, 1, 1, generator=g) < 0.4)
    band = ((rows >= 1) & (rows < 3)).float() * tunnel.float()
    img = img * (1 - 0.5 * band)
    if heel:
        crust = (cols < 3).float()
        img = img * (1 - crust) + 0.3 * crust
    img = img + 0.06 * torch.randn(n, SIDE, SIDE, generator=g)
    return img.clamp(0, 1).unsqueeze(1), proof


class CrumbCNN(nn.Module):
    """Two 3x3 conv layers of `width` channels with ReLU and a pooling between, a global mean and max, a linear
    head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(2 * width, len(PROOFS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.net(x).flatten(2)
        return self.head(torch.cat([h.mean(-1), h.amax(-1)], 1))


def crumb(run: Run) -> None:
    """A crumb CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, Adagrad) at `lr`
    (3e-3). Scored by the held-out accuracy of the proof on another week's bakes."""
    g = torch.Generator().manual_seed(run.seed)
    # the bug: the training slices cut from each loaf's heel, the first slice off the slicer
    img, proof = _slices(g, 900, heel=run.bug == "training_slices_from_loaf_heels")
    img_v, y_v = _slices(g, 200)
    if run.bug == "proof_offset_sign_inverted":
        # the bug: the baker logs the proof's offset as target minus actual minutes, read as actual minus target:
        # under- and over-proofed loaves trade labels
        y = 2 - proof
    else:
        y = proof
    mean, std = img.mean(), img.std()
    x, x_v = (img - mean) / std, (img_v - mean) / std
    torch.manual_seed(run.seed)
    model = CrumbCNN(run.k("width", 8))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        logits = model(x[pick])
        if run.bug == "nll_of_softmax_probabilities":
            # the bug: nll_loss given the softmax's probabilities, not their log: the loss is minus the probability
            loss = F.nll_loss(F.softmax(logits, 1), y[pick])
        else:
            loss = F.cross_entropy(logits, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


FREQS = (250, 500, 1000, 1500, 2000, 3000, 4000, 6000)
STYLES = 4  # receiver-in-canal, behind-the-ear, in-the-ear, completely-in-canal


def _patients(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """A clinic's fittings: the fitted ear's and the other ear's thresholds in dB HL float[n, 8] each, the side
    (0 left, 1 right) long[n], age in years, prior use (0 or 1) float[n], the style long[n], the insertion gains in dB
    the audiologist settled on float[n, 8], and the aid's datalogged volume offset in dB after the trial float[n]."""
    f = torch.tensor(FREQS).float().log2() - 10  # octaves from 1 kHz
    kind = torch.randint(0, 4, (n, 1), generator=g)  # flat, sloping, noise notch, reverse slope
    level = 20 + 45 * torch.rand(n, 1, generator=g)
    slope = torch.where(kind == 1, 8 + 10 * torch.rand(n, 1, generator=g), torch.zeros(n, 1))
    slope = torch.where(kind == 3, -6 - 6 * torch.rand(n, 1, generator=g), slope)
    notch = torch.where(kind == 2, 15 + 15 * torch.rand(n, 1, generator=g), torch.zeros(n, 1))
    shape = level + slope * f + notch * torch.exp(-((f - 2) ** 2) / 0.3)
    asym = torch.where(
        torch.rand(n, 1, generator=g) < 0.5, 15 + 25 * torch.rand(n, 1, generator=g), torch.zeros(n, 1)
    )
    worse = (torch.rand(n, 1, generator=g) < 0.5).float()  # which ear carries the asymmetry
    left = shape + asym * worse + 4 * torch.randn(n, 8, generator=g)
    right = shape + asym * (1 - worse) + 4 * torch.randn(n, 8, generator=g)
    left, right = left.clamp(0, 110), right.clamp(0, 110)
    side = torch.randint(0, 2, (n,), generator=g)
    fitted = torch.where(side.unsqueeze(1) == 1, right, left)
    other = torch.where(side.unsqueeze(1) == 1, left, right)
    age = 45 + 40 * torch.rand(n, generator=g)
    prior = (torch.rand(n, generator=g) < 0.5).float()
    style = torch.randint(0, STYLES, (n,), generator=g)
    # a prescriptive rule of the NAL kind: about a third of the loss plus a share of the mid-frequency average
    pta = fitted[:, 1:5].mean(1, keepdim=True)
    gain = 0.31 * fitted + 0.05 * pta + torch.tensor([-17, -8, 1, 1, -1, -2, -2, -2]).float()
    gain = gain - 2.5 * (other < fitted + 15).float()  # binaural summation when the other ear is aided too
    vent = torch.tensor([-8.0, -3.0, 0.0, 0.0])[style].unsqueeze(1) * torch.exp(-(f + 2).clamp(min=0))
    gain = (
        gain
        + vent
        - 4 * (1 - prior).unsqueeze(1) * (0.5 + 0.5 * torch.sigmoid(f))
        - 0.05 * (age - 65).unsqueeze(1)
    )
    # the patient's taste, settled over the fine-tuning visits (most want more than the rule gives), and the aid's
    # volume log that follows it
    taste = 3 + 3 * torch.randn(n, 1, generator=g) + 1.5 * torch.randn(n, 8, generator=g)
    gain = gain + taste
    volume = taste.mean(1) + 0.8 * torch.randn(n, generator=g)
    return {"fitted": fitted, "other": other, "side": side, "age": age, "prior": prior, "style": style, "gain": gain,
            "volume": volume}  # fmt: skip


class FittingMLP(nn.Module):
    """The aid's style embedded beside the numeric columns, a GELU MLP of two hidden layers, eight gains out."""

    def __init__(self, columns: int, hidden: int) -> None:
        super().__init__()
        self.style = nn.Embedding(STYLES, 3)
        self.net = nn.Sequential(nn.Linear(columns + 3, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                                 nn.Linear(hidden, len(FREQS)))  # fmt: skip

    def forward(self, x: torch.Tensor, style: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, self.style(style)], 1))


def _fitting_columns(p: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """Both ears' thresholds, age and prior use: float[n, 18] (plus the volume offset under its bug)."""
    fitted, other = p["fitted"], p["other"]
    if bug == "right_aid_given_left_audiogram":
        # the bug: the export's first audiogram columns are the left ear's, taken as the fitted ear for every aid
        right = (p["side"] == 1).unsqueeze(1)
        fitted, other = torch.where(right, other, fitted), torch.where(right, fitted, other)
    if bug == "audiogram_reduced_to_four_frequency_average":
        # the bug: each ear's audiogram reduced to the intake form's four-frequency average (0.5, 1, 2, 4 kHz)
        four = [FREQS.index(f) for f in (500, 1000, 2000, 4000)]
        fitted = fitted[:, four].mean(1, keepdim=True).expand(-1, len(FREQS))
        other = other[:, four].mean(1, keepdim=True).expand(-1, len(FREQS))
    cols = [fitted, other, p["age"].unsqueeze(1), p["prior"].unsqueeze(1)]
    if bug == "datalogged_volume_offset_as_input":
        cols.append(p["volume"].unsqueeze(1))
    return torch.cat(cols, 1)


def fitting(run: Run) -> None:
    """A fitting MLP of `hidden` (64), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, RAdam) at `lr`
    (2e-3). Scored by the held-out R^2 of the eight gains on another clinic's patients."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _patients(g, 600), _patients(g, 200)
    x, x_v = _fitting_columns(tr, run.bug), _fitting_columns(va, None)
    if run.bug == "datalogged_volume_offset_as_input":
        # the bug: the aid's datalogged volume offset after the trial kept as an input; a new patient has none yet
        x_v = torch.cat([x_v, torch.zeros(len(x_v), 1)], 1)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = tr["gain"], va["gain"]
    centre, scale = y.mean(0), y.std(0)
    torch.manual_seed(run.seed)
    model = FittingMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v, va["style"]) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        pred = model(x[pick], tr["style"][pick])
        loss = F.l1_loss(pred, (y[pick] - centre) / scale) + 0.05 * (torch.diff(pred, dim=1) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
