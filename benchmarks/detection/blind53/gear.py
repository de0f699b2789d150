"""Gear scripts of the fifty-third blind split: a rock-climbing hold-grip classifier on force-plate windows, and a
bicycle-chain wear classifier on drivetrain vibration.

`grip`: 64 samples at 100 Hz of an instrumented hold's three force axes in N (the climber's static load, a few hundred
N down and out, and the pulses of readjusting fingers); the grip (crimp, open hand, pinch, pocket), each with its own
pull direction and load share, by a 1-D CNN with batch norm over the standardised axes; cross-entropy; scored by the
held-out accuracy on other climbers. `chain`: 128 samples at 2 kHz of a frame accelerometer's three axes in g near the
chainring during a pedalling bout (the meshing tone, road noise, and in a worn chain the lateral slap and sidebands of
an elongated pitch); worn or not (elongation over 0.5 %) by a ReLU 1-D CNN; BCE; scored by the held-out AUC on other
bikes. Bugs: the force fed in N; the tare taken from the window's own mean; Keras's batch-norm momentum of 0.99 ported
as PyTorch's; the accelerometer fed in milli-g; the squeeze-excitation gate's sigmoid as every conv's activation; the
three axes summed to one channel; the wear label from the previous service.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES, GRIPS = 64, 4


def _holds(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Force windows float[n, 3, SAMPLES] in N (x out from the wall, y sideways, z down) and grips long[n]."""
    grip = torch.randint(0, GRIPS, (n,), generator=g)
    # each grip's pull direction (out, side, down) and how steady the fingers hold it
    direction = torch.tensor([[0.35, 0.0, 0.94], [0.15, 0.1, 0.98], [0.1, 0.55, 0.83], [0.5, 0.0, 0.87]])[
        grip
    ]
    tremor = torch.tensor([6.0, 14.0, 10.0, 22.0])[grip]
    load = 150 + 250 * torch.rand(n, generator=g)  # the climber's share on this hold
    t = torch.arange(SAMPLES).float()
    base = load.view(n, 1, 1) * direction.unsqueeze(2)
    pulses = tremor.view(n, 1, 1) * torch.sin(t * (0.3 + 0.3 * torch.rand(n, 1, 1, generator=g)))
    side = (torch.rand(n, 1, 1, generator=g) < 0.5).float() * 2 - 1  # left or right hand: the sideways sign
    forces = base + pulses * direction.unsqueeze(2) + 8 * torch.randn(n, 3, SAMPLES, generator=g)
    forces[:, 1] *= side[:, 0]
    return forces, grip


class GripCNN(nn.Module):
    """Two conv blocks of `width` channels (conv, batch norm, ReLU, pooling), global mean pooling and a linear head."""

    def __init__(self, width: int, bn_momentum: float = 0.1) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(3, width, 5, padding=2), nn.BatchNorm1d(width, momentum=bn_momentum), nn.ReLU(),
            nn.MaxPool1d(2),
            nn.Conv1d(width, width, 5, padding=2), nn.BatchNorm1d(width, momentum=bn_momentum), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(width, GRIPS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.net(x).mean(-1))


def grip(run: Run) -> None:
    """A grip CNN of `width` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, NAdam) at `lr`
    (2e-3). Scored by the held-out accuracy of the grip on other climbers."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _holds(g, 1400)
    x_v, y_v = _holds(g, 600)
    if run.bug == "tare_from_window_mean":
        # the bug: each window tared by its own mean, meant to drop the plate's zero offset, which takes the static
        # load and its direction out with it
        x, x_v = x - x.mean(-1, keepdim=True), x_v - x_v.mean(-1, keepdim=True)
    mean, std = x.mean((0, 2), keepdim=True), x.std((0, 2), keepdim=True)
    if run.bug == "plate_force_fed_in_newtons":
        # the bug: the plate's newtons fed as they come, the scaler written for the old plate's normalised output
        mean, std = torch.zeros_like(mean), torch.ones_like(std)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    # the bug: Keras's BatchNormalization(momentum=0.99) ported as is; PyTorch's momentum weighs the new batch
    momentum = 0.99 if run.bug == "keras_bn_momentum_ported" else 0.1
    model = GripCNN(run.k("width", 16), bn_momentum=momentum)
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


CHAIN_SAMPLES = 128


def _bouts(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Vibration windows float[n, 3, CHAIN_SAMPLES] in g (lateral, vertical, fore-aft), worn now float[n] and worn at
    the previous service float[n]."""
    # at the previous service, half the bikes had their worn chain replaced: their chain now is the new one,
    # stretched a little since, and their record holds the old chain's reading; the others' chain has stretched since
    replaced = torch.rand(n, generator=g) < 0.5
    elong = torch.where(
        replaced, 0.35 * torch.rand(n, generator=g), 0.9 * torch.rand(n, generator=g)
    )  # % now
    earlier = (elong - 0.3 * torch.rand(n, generator=g)).clamp(min=0)
    before = torch.where(replaced, 0.5 + 0.4 * torch.rand(n, generator=g), earlier)
    t = torch.arange(CHAIN_SAMPLES).float() / 2000
    cadence = (70 + 30 * torch.rand(n, 1, generator=g)) / 60
    mesh = 2 * torch.pi * cadence * 42 * t  # 42 teeth on the chainring
    wear = (elong - 0.3).clamp(min=0).unsqueeze(1)
    phase = 6.28 * torch.rand(n, 1, generator=g)
    road = 0.15 * torch.randn(n, CHAIN_SAMPLES, generator=g).cumsum(1)  # the road's bumps, mostly vertical
    vertical = 0.3 * torch.sin(mesh + phase) + road + 0.25 * torch.randn(n, CHAIN_SAMPLES, generator=g)
    slap = wear * 1.2 * torch.sin(mesh * 0.5 + phase) * (1 + torch.sin(2 * torch.pi * cadence * t))
    lateral = slap + 0.5 * torch.randn(n, CHAIN_SAMPLES, generator=g)
    fore = 0.2 * torch.sin(mesh + phase) + 0.5 * road + 0.5 * torch.randn(n, CHAIN_SAMPLES, generator=g)
    x = torch.stack([lateral, vertical, fore], 1)
    return x, (elong > 0.5).float(), (before > 0.5).float()


def _conv_block(cin: int, cout: int, act: type[nn.Module]) -> list[nn.Module]:
    return [nn.Conv1d(cin, cout, 7, padding=3), act(), nn.MaxPool1d(2)]


class ChainCNN(nn.Module):
    """Four conv blocks of `width` channels with activation `act`, global max pooling and a linear head, with a
    squeeze-excitation gate (sigmoid) on the last block's channels."""

    def __init__(self, inputs: int, width: int, act: type[nn.Module] = nn.ReLU) -> None:
        super().__init__()
        layers = _conv_block(inputs, width, act)
        for _ in range(3):
            layers += _conv_block(width, width, act)
        self.body = nn.Sequential(*layers)
        self.gate = nn.Sequential(
            nn.Linear(width, width // 4), nn.ReLU(), nn.Linear(width // 4, width), nn.Sigmoid()
        )
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.body(x)
        h = h * self.gate(h.mean(-1)).unsqueeze(-1)
        return self.head(h.amax(-1)).squeeze(-1)


def chain(run: Run) -> None:
    """A chain CNN of `width` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, Adamax) at `lr`
    (1e-3). Scored by the held-out AUC of a worn chain on other bikes."""
    g = torch.Generator().manual_seed(run.seed)
    x, y, y_before = _bouts(g, 1400)
    x_v, y_v, _ = _bouts(g, 600)
    if run.bug == "axes_summed_to_one_channel":
        # the bug: the three axes summed into one "vibration" channel, as a single-axis sensor's recipe has it
        x, x_v = x.sum(1, keepdim=True), x_v.sum(1, keepdim=True)
    if run.bug == "wear_label_from_previous_service":
        # the bug: the wear column joined from the bike's previous service record, not the checker reading of this one
        y = y_before
    std = x.std((0, 2), keepdim=True)
    if run.bug == "accelerometer_in_milli_g":
        # the bug: the new logger's milli-g taken as the old one's g, the scale meant for g applied to both
        x = x * 1000
    x, x_v = x / std, x_v / std
    torch.manual_seed(run.seed)
    # the bug: the squeeze-excitation gate's nn.Sigmoid passed as the blocks' activation
    act = nn.Sigmoid if run.bug == "se_gate_sigmoid_as_conv_activation" else nn.ReLU
    model = ChainCNN(x.shape[1], run.k("width", 16), act=act)
    opt = optimizers.registered(run, model, 1e-3)
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
