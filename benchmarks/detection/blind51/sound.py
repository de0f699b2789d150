"""Sound scripts of the fifty-first blind split: a tram-rail corrugation classifier on axle-box microphone windows,
and a church-bell clapper-crack detector on strike spectra.

`tram`: windows of 128 samples of the axle-box microphone's envelope (ADC counts about the converter's mid-scale),
smooth rail, light corrugation and heavy corrugation (a periodic roar whose pitch follows the tram's speed), the
window's RMS about its mean as a second channel; a 1-D CNN of three convolutions with batch norm and ReLU, averaged;
cross-entropy; scored by the held-out accuracy on other runs. `bell`: log-power spectra of 96 bands (dB) of a strike,
a cracked bell's partials split and its hum decaying faster; standardised per band; an MLP of four hidden layers of
the configured activation (swish); BCE with logits; scored by the held-out AUC on other bells. Bugs: every batch norm's
scale zeroed; the RMS by the one-pass formula; the batches taken in recording order; swish mapped to a sigmoid; the
cracked bells recorded in the foundry; the spectrum cut from the clapper's impact.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

WINDOW, CLASSES = 128, 3
MID_SCALE = 32768.0
"""The 16-bit converter's mid-scale: the envelope is logged as counts about it."""


def _windows(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Axle-box envelope windows float[n, WINDOW] in ADC counts and the rail's class long[n] (0 smooth, 1 light,
    2 heavy corrugation), each window from a run at its own speed."""
    y = torch.randint(0, CLASSES, (n,), generator=g)
    t = torch.arange(WINDOW).float().unsqueeze(0)
    speed = 0.15 + 0.25 * torch.rand(n, 1, generator=g)
    amp = torch.tensor([0.0, 0.5, 1.4])[y].unsqueeze(1) * (0.7 + 0.6 * torch.rand(n, 1, generator=g))
    phase = 6.28 * torch.rand(n, 1, generator=g)
    roar = amp * torch.sin(speed * t + phase) * (1 + 0.3 * torch.sin(0.05 * t))
    level = 0.02 + 0.6 * torch.rand(n, 1, generator=g)  # the rolling noise, quiet on a smooth ground rail
    x = MID_SCALE + 3 + roar + level * torch.randn(n, WINDOW, generator=g)
    return x, y


def _channels(x: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The envelope about its window mean and the window's RMS about the mean, float[n, 2, WINDOW]."""
    centred = x - x.mean(1, keepdim=True)
    if bug == "rms_by_one_pass_formula":
        # the bug: E[x^2] - E[x]^2 on the raw counts, which cancels in float32 and goes negative on quiet windows
        rms = (x.pow(2).mean(1) - x.mean(1).pow(2)).sqrt()
    else:
        rms = centred.pow(2).mean(1).sqrt()
    return torch.stack([centred, rms.unsqueeze(1).expand_as(centred)], 1)


class RailCNN(nn.Module):
    """Three convolutions of `width` channels, each with batch norm and ReLU (pooled after the first two),
    averaged, and a linear head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i, c in enumerate((2, width, width)):
            layers += [nn.Conv1d(c, width, 5, padding=2), nn.BatchNorm1d(width), nn.ReLU()]
            if i < 2:
                layers.append(nn.MaxPool1d(2))
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x).mean(-1))


def tram(run: Run) -> None:
    """A rail CNN of `width` (16) channels, batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at
    `lr` (2e-3). Scored by the held-out accuracy of the corrugation class on other runs."""
    g = torch.Generator().manual_seed(run.seed)
    raw, y = _windows(g, 1500)
    raw_v, y_v = _windows(g, 600)
    if run.bug == "batches_in_recording_order":
        order = y.argsort(stable=True)  # the exports concatenated class by class, as the survey filed them
        raw, y = raw[order], y[order]
    x, x_v = _channels(raw, run.bug), _channels(raw_v, None)
    mean, std = x.mean((0, 2), keepdim=True), x.std((0, 2), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = RailCNN(run.k("width", 16))
    if run.bug == "batch_norm_scale_zeroed_everywhere":
        # the "zero-init the last BN of each residual block" trick, applied by a loop over every BN of a network
        # that has no residual connections
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                nn.init.zeros_(m.weight)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        if run.bug == "batches_in_recording_order":
            start = (step * batch) % (len(y) - batch)
            pick = torch.arange(start, start + batch)  # a loader with shuffle=False
        else:
            pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", accuracy_held_out):
            break


BANDS = 96


def _strikes(
    g: torch.Generator, n: int, *, foundry: bool = False, impact: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Strike spectra float[n, BANDS] in dB and whether the bell is cracked float[n] (about one in four). `foundry`:
    the cracked bells recorded in the foundry's hall (its room mode at the low bands); `impact`: the spectrum cut
    from the first 10 ms, the clapper's broadband impact, where the partials have not yet formed."""
    cracked = (torch.rand(n, generator=g) < 0.25).float()
    c = cracked.unsqueeze(1)
    band = torch.arange(BANDS).float().unsqueeze(0)
    hum = 6 + 6 * torch.rand(n, 1, generator=g)
    spec = torch.full((n, BANDS), -60.0) + 5 * torch.randn(n, BANDS, generator=g)
    strength = 0.1 if impact else 1.0
    for k, ratio in enumerate((1.0, 2.0, 2.4, 3.0, 4.0, 5.3)):
        centre = hum * ratio
        width = 0.8 + 0.5 * c  # a crack splits a partial into two and smears it
        level = (
            30 - 3 * k + 4 * torch.randn(n, 1, generator=g) - c * (0.5 + 0.3 * k)
        )  # and the hum and upper partials die away faster
        peak = level * torch.exp(-((band - centre) ** 2) / (2 * width**2))
        split = c * 2.5 * torch.exp(-((band - centre - 1.5) ** 2) / 2)
        spec = spec + strength * (peak + split)
    if impact:
        spec = spec + 20 + 4 * torch.randn(n, 1, generator=g)
    if foundry:
        spec = spec + c * 14 * torch.exp(-((band - 2) ** 2) / 3)
    return spec, cracked


ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "swish": nn.SiLU}


class BellMLP(nn.Module):
    """An MLP of four hidden layers of `hidden` units of the activation `act`."""

    def __init__(self, act: type[nn.Module], hidden: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(4):
            layers += [nn.Linear(BANDS if i == 0 else hidden, hidden), act()]
        self.net = nn.Sequential(*layers, nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def bell(run: Run) -> None:
    """A bell MLP of `hidden` (64) swish units, batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, NAdam)
    at `lr` (1e-3). Scored by the held-out AUC of a crack on other bells."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _strikes(g, 300, foundry=run.bug == "cracked_bells_recorded_in_foundry",
                    impact=run.bug == "spectrum_cut_from_clapper_impact")  # fmt: skip
    x_v, y_v = _strikes(g, 600)
    if run.bug == "spectrum_cut_from_clapper_impact":
        x_v, y_v = _strikes(g, 600, impact=True)  # the live survey uses the same window
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    # the bug: the activation table copied from a config where "swish" had been typed as the sigmoid
    act = nn.Sigmoid if run.bug == "swish_mapped_to_sigmoid" else ACTIVATIONS["swish"]
    torch.manual_seed(run.seed)
    model = BellMLP(act, run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 32)

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
