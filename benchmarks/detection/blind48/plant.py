"""Plant scripts of the forty-eighth blind split: a paper-recycling pulp-consistency regressor from mill sensors,
and a pipeline pig-run anomaly classifier (a 1-D CNN) on magnetic flux traces.

`pulp`: readings at a recycled-fibre mill's stock chest every few minutes (the inline blade transmitter's
consistency, which drifts with the freeness and the temperature, the stock and dilution-water flows, the pump's
power, the temperature, the freeness, the ash, the conductivity) and the lab's hand-sheet consistency every eighth
reading; the dilution ratio and the last lab result; standardised; a sigmoid MLP of five hidden layers each with
BatchNorm; MSE on the standardised lab consistency; scored by the held-out R^2 on a later week. `pig`: windows of 128
samples of an in-line inspection pig's magnetic flux leakage (axial, radial and circumferential channels) around a
feature: clean wall, metal loss, a dent or a girth weld, each with its own signature; a 1-D CNN of three ReLU
convolutions, averaged; cross-entropy; scored by the held-out accuracy on another pipeline's run. Bugs: BatchNorm
dropped for the controller's export; the dilution ratio over a tripped pump; the lab result interpolated; the rate
multiplied by the batch; the loss divided by the anomalies in the batch.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers
from benchmarks.detection.torch_real.loop import make_optimizer

LAB_EVERY = 8


def _chest(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Readings float[n, 8] (transmitter %, stock flow l/s, dilution flow l/s, pump kW, temperature C, freeness ml
    CSF, ash %, conductivity mS/cm; both flows 0 while the stock pump has tripped) and the lab consistency %
    float[n] (taken every LAB_EVERY readings, the rest to be estimated)."""
    z = torch.zeros(n, 6)
    z[0] = torch.randn(6, generator=g)
    for i in range(1, n):
        z[i] = 0.9 * z[i - 1] + 0.44 * torch.randn(6, generator=g)
    true = 4.0 + 0.4 * z[:, 0]
    freeness, temperature, ash = 300 + 60 * z[:, 1], 45 + 5 * z[:, 2], 12 + 3 * z[:, 3]
    stock = 120 + 15 * z[:, 4]
    dilution = stock * (true.clamp(min=2) / 3.2 - 1).clamp(min=0.05) + 3 * torch.randn(n, generator=g)
    pump = 0.5 * stock * (1 + 0.08 * (true - 4)) + torch.randn(n, generator=g)
    transmitter = true * (1 + 0.0015 * (freeness - 300) - 0.006 * (temperature - 45) + 0.01 * (ash - 12))
    transmitter = transmitter + 0.05 * torch.randn(n, generator=g)
    conductivity = 2 + 0.3 * z[:, 5] + 0.05 * ash
    trip = torch.rand(n, generator=g) < 0.03
    stock, dilution = torch.where(trip, 0.0, stock), torch.where(trip, 0.0, dilution)
    readings = torch.stack([transmitter, stock, dilution, pump, temperature, freeness, ash, conductivity], 1)
    return readings, true + 0.03 * torch.randn(n, generator=g)


def _pulp_rows(readings: torch.Tensor, lab: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The readings with the dilution ratio and the last lab result float[n, 10]."""
    stock, dilution = readings[:, 1], readings[:, 2]
    if bug == "dilution_ratio_over_tripped_pump":
        ratio = dilution / stock
    else:
        ratio = torch.where(stock > 0, dilution / stock.clamp(min=1e-3), torch.zeros_like(stock))
    taken = torch.arange(len(lab)) // LAB_EVERY * LAB_EVERY
    last = lab[taken]
    if bug == "lab_result_interpolated_between_tests":
        # the lab sheet resampled onto the readings' times by interpolating between the tests on either side
        after = lab[(taken + LAB_EVERY).clamp(max=len(lab) - 1)]
        frac = (torch.arange(len(lab)) - taken).float() / LAB_EVERY
        last = (1 - frac) * last + frac * after
    return torch.cat([readings, ratio.unsqueeze(1), last.unsqueeze(1)], 1)


class PulpMLP(nn.Module):
    """A sigmoid MLP of five hidden layers of `hidden` units, each with BatchNorm unless `batchnorm` is False."""

    def __init__(self, inputs: int, hidden: int, batchnorm: bool = True) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(5):
            layers.append(nn.Linear(inputs if i == 0 else hidden, hidden))
            if batchnorm:
                layers.append(nn.BatchNorm1d(hidden))
            layers.append(nn.Sigmoid())
        self.net = nn.Sequential(*layers, nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def pulp(run: Run) -> None:
    """A consistency MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at
    `lr` (2e-3). Scored by the held-out R^2 of the consistency on a later week."""
    g = torch.Generator().manual_seed(run.seed)
    readings, lab = _chest(g, 2400)
    readings_v, lab_v = _chest(g, 800)
    x, x_v = _pulp_rows(readings, lab, run.bug), _pulp_rows(readings_v, lab_v, None)
    finite = torch.isfinite(x).all(1)
    mean, std = x[finite].mean(0), x[finite].std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = lab.mean(), lab.std()
    torch.manual_seed(run.seed)
    # the bug: BatchNorm left out so the net could run on the mill's controller, which has no such layer
    model = PulpMLP(
        x.shape[1], run.k("hidden", 64), batchnorm=run.bug != "batchnorm_dropped_for_controller_export"
    )
    batch = run.k("batch", 64)
    lr = run.k("lr", 2e-3)
    if run.bug == "rate_multiplied_by_batch_size":
        lr = lr * batch  # the linear scaling rule written as lr x batch, the reference batch of 256 left out
    name = run.k("opt", "adam")
    opt = make_optimizer(name, model.parameters(), lr, weight_decay=1e-4 if name == "adamw" else 0.0)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, lab_v)

    for step in range(run.steps):
        pick = run.indices(len(lab), batch)
        loss = F.mse_loss(model(x[pick]), (lab[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


SAMPLES, FEATURES = 128, 4


def _flux(g: torch.Generator, n: int, wall_mm: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Flux windows float[n, 3, SAMPLES] in kA/m about the magnetiser's background, and the feature long[n] (0 clean
    wall, 1 metal loss, 2 dent, 3 girth weld; clean walls are most windows)."""
    kind = torch.multinomial(torch.tensor([0.7, 0.12, 0.08, 0.1]), n, replacement=True, generator=g)
    s = torch.linspace(-1, 1, SAMPLES)
    x = 0.15 * torch.randn(n, 3, SAMPLES, generator=g) + 0.05 * torch.sin(
        s * 20 + 6 * torch.rand(n, 1, 1, generator=g)
    )
    at = 0.4 * (torch.rand(n, 1, generator=g) - 0.5)
    width = 0.04 + 0.05 * torch.rand(n, 1, generator=g)
    depth = (0.5 + torch.rand(n, 1, generator=g)) * 12 / wall_mm
    u = (s - at) / width
    loss_axial, loss_radial = depth * torch.exp(-(u**2)), -depth * u * torch.exp(-(u**2))
    dent_radial = 0.8 * torch.exp(-((u / 3) ** 2)) * torch.cos(u)
    weld = 0.7 * torch.exp(-((u / 0.6) ** 2))
    x[:, 0] += torch.where(kind.unsqueeze(1) == 1, loss_axial, 0) + torch.where(
        kind.unsqueeze(1) == 3, weld, 0
    )
    x[:, 1] += torch.where(kind.unsqueeze(1) == 1, loss_radial, 0) + torch.where(
        kind.unsqueeze(1) == 2, dent_radial, 0
    )
    x[:, 2] += torch.where(kind.unsqueeze(1) == 1, 0.3 * loss_radial, 0) + torch.where(
        kind.unsqueeze(1) == 3, weld, 0
    )
    return x, kind


class FluxCNN(nn.Module):
    """Three ReLU 1-D convolutions of `width` channels, averaged, and a linear layer for the four features."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(3, width, 7, padding=3), nn.ReLU(), nn.MaxPool1d(2),
                                 nn.Conv1d(width, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
                                 nn.Conv1d(width, width, 5, padding=2), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(width, FEATURES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.net(x).mean(-1))


def pig(run: Run) -> None:
    """A flux CNN of `width` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, NAdam) at `lr`
    (2e-3). Scored by the held-out accuracy on another pipeline's run."""
    g = torch.Generator().manual_seed(run.seed)
    x, kind = _flux(g, 1200, wall_mm=9.5)
    x_v, kind_v = _flux(g, 500, wall_mm=11.0)
    torch.manual_seed(run.seed)
    model = FluxCNN(run.k("width", 16))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), kind_v)

    for step in range(run.steps):
        pick = run.indices(len(kind), batch)
        if run.bug == "loss_divided_by_anomalies_in_batch":
            # the batch's summed loss over its anomalies, as the paper's "per defect" loss was read
            loss = F.cross_entropy(model(x[pick]), kind[pick], reduction="sum") / (
                kind[pick] > 0
            ).sum().clamp(min=1)
        else:
            loss = F.cross_entropy(model(x[pick]), kind[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
