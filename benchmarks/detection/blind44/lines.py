"""Production-line scripts of the forty-fourth blind split: a paper-machine sheet-break predictor on sensor windows,
and a ceramic-tile glaze-defect CNN.

`sheet`: 40-minute windows of a paper machine's sensors (headbox consistency, wire speed, press speed, steam pressure,
draw tension, sheet moisture) plus the draw ratio of wire to press speed; a break follows within the next 10 minutes
more often when the draw runs high, the sheet wet and the tension restless; a ReLU 1-D CNN reads the window and
predicts the break; BCE; scored by the held-out AUC. `tiles`: 16 x 16 photos of glazed tiles from the line camera in
12-bit counts, some with pinholes or a crawled patch; a ReLU CNN; cross-entropy on defect or flawless; scored by the
held-out accuracy. Bugs: the draw ratio over a stopped press; the break windows ending at the break; each window
standardised by its own statistics; the plateau scheduler stepped every batch; the 12-bit counts divided by 255; the
defect tiles shot under another lamp; a strong brightness jitter.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

MINUTES, LEAD, CHANNELS = 40, 10, 7


def _machine_logs(g: torch.Generator, n: int, bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows float[n, CHANNELS, MINUTES] (consistency %, wire m/min, press m/min, steam kPa, tension N/m,
    moisture %, draw ratio) and whether the sheet broke within LEAD minutes after the window float[n]."""
    steps = MINUTES + LEAD
    t = torch.arange(steps).float()
    draw = 1.02 + 0.02 * torch.randn(n, 1, generator=g) + 0.004 * torch.randn(n, steps, generator=g)
    wire = 1200 + 60 * torch.randn(n, 1, generator=g) + 3 * torch.randn(n, steps, generator=g)
    press = wire / draw
    moisture = 7 + 1.2 * torch.randn(n, 1, generator=g) + 0.3 * torch.randn(n, steps, generator=g)
    restless = 0.5 + torch.rand(n, 1, generator=g)
    tension = 320 + 40 * restless * torch.sin(t / 3 + 6 * torch.rand(n, 1, generator=g))
    tension = tension + 15 * restless * torch.randn(n, steps, generator=g)
    consistency = 0.8 + 0.05 * torch.randn(n, 1, generator=g) + 0.01 * torch.randn(n, steps, generator=g)
    steam = 350 + 20 * (moisture - 7) + 5 * torch.randn(n, steps, generator=g)
    risk = (
        60 * (draw[:, :MINUTES].mean(1) - 1.02)
        + 1.3 * (moisture[:, :MINUTES].mean(1) - 7)
        + 3 * (restless[:, 0] - 1)
    )
    broke = (torch.rand(n, generator=g) < torch.sigmoid(risk - 2.6)).float()
    # a break: the draw tension falls off and the press slows over the minutes up to it
    at = MINUTES + torch.randint(2, LEAD, (n, 1), generator=g)
    after = (t >= at) & (broke.unsqueeze(1) > 0)
    tension = torch.where(after, 40 + 10 * torch.randn(n, steps, generator=g), tension)
    press = torch.where(after, press * 0.4, press)
    # a wash-up stop: the press section logged at 0 m/min for a few minutes
    stopped = (torch.rand(n, 1, generator=g) < 0.03) & (t >= 20) & (t < 24)
    press = torch.where(stopped, torch.zeros_like(press), press)
    if bug == "draw_ratio_over_stopped_press":
        ratio = wire / press
    else:
        ratio = torch.where(press > 0, wire / press.clamp(min=1.0), torch.ones_like(press))
    logs = torch.stack([consistency, wire, press, steam, tension, moisture, ratio], 1)
    if bug == "break_windows_end_at_break":  # the breaks' windows cut from the break log's timestamp back
        ends = torch.where(broke > 0, at[:, 0] + 1, torch.full_like(at[:, 0], MINUTES))
        rows = torch.arange(MINUTES).unsqueeze(0) + (ends - MINUTES).unsqueeze(1)
        logs = logs.gather(2, rows.unsqueeze(1).expand(n, CHANNELS, MINUTES))
    else:
        logs = logs[:, :, :MINUTES]
    return logs, broke


class BreakCNN(nn.Module):
    """Two ReLU convolutions over the minutes, a mean over time and a linear layer to the break's logit."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(CHANNELS, hidden, 5, padding=2)
        self.conv2 = nn.Conv1d(hidden, hidden, 5, padding=2)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.head(h.mean(2)).squeeze(-1)


def sheet(run: Run) -> None:
    """A break CNN of `hidden` (32) channels, batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop)
    at `lr` (2e-3), with a plateau scheduler on the validation loss when `plateau`. Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _machine_logs(g, 3000, run.bug)
    x_v, y_v = _machine_logs(g, 1000, None)
    # per-window z-scoring, as for the vibration model
    if run.bug == "windows_standardised_each_by_own_stats":
        x = (x - x.mean(2, keepdim=True)) / (x.std(2, keepdim=True) + 1e-6)
        x_v = (x_v - x_v.mean(2, keepdim=True)) / (x_v.std(2, keepdim=True) + 1e-6)
    else:
        mean, std = x.mean((0, 2), keepdim=True), x.std((0, 2), keepdim=True)
        x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = BreakCNN(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 2e-3)
    plateau = (
        torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=2)
        if run.k("plateau", False)
        else None
    )
    batch = run.k("batch", 64)
    x_check, y_check = x[-300:], y[-300:]  # the script's own check split, the last rows of the training logs

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y) - 300, batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if plateau is not None:
            if run.bug == "plateau_stepped_every_batch_on_train_loss":
                plateau.step(float(loss))
            elif run.validating(step):
                with torch.no_grad():
                    plateau.step(float(F.binary_cross_entropy_with_logits(model(x_check), y_check)))
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


SIDE, FULL_SCALE = 16, 4095.0


def _tile_photos(g: torch.Generator, n: int, bug: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Photos float[n, 1, SIDE, SIDE] in the camera's 12-bit counts and the defect labels long[n] (1: defect)."""
    defect = (torch.rand(n, generator=g) < 0.4).long()
    glaze = 0.55 + 0.1 * torch.rand(n, 1, 1, 1, generator=g)
    light = 1 + 0.08 * torch.randn(n, 1, 1, 1, generator=g)
    ramp = torch.linspace(-1, 1, SIDE)
    shading = 0.03 * torch.randn(n, 1, 1, 1, generator=g) * ramp.view(1, 1, 1, SIDE)
    img = glaze + shading + 0.03 * torch.randn(n, 1, SIDE, SIDE, generator=g)
    rows, cols = torch.meshgrid(torch.arange(SIDE).float(), torch.arange(SIDE).float(), indexing="ij")
    for i in defect.nonzero().flatten().tolist():
        if torch.rand(1, generator=g) < 0.5:  # pinholes: a few dark pits
            for _ in range(int(torch.randint(2, 5, (1,), generator=g))):
                r, c = torch.randint(1, SIDE - 1, (2,), generator=g).tolist()
                img[i, 0, r, c] -= 0.3
        else:  # crawling: a patch where the glaze pulled back from the body
            cr, cc = (3 + 10 * torch.rand(2, generator=g)).tolist()
            radius = 1.5 + 1.5 * float(torch.rand(1, generator=g))
            patch = ((rows - cr) ** 2 + (cols - cc) ** 2) < radius**2
            img[i, 0][patch] = 0.85 + 0.03 * torch.randn(int(patch.sum()), generator=g)
    img = img * light
    if bug == "defect_tiles_shot_under_other_lamp":  # the rejects photographed at the repair bench's lamp
        img = torch.where(defect.view(n, 1, 1, 1) > 0, img * 1.25, img)
    return (img.clamp(0, 1) * FULL_SCALE).round(), defect


class TileCNN(nn.Module):
    """Two ReLU convolutions with max pooling, a ReLU hidden layer and the two classes' logits."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, hidden, 3, padding=1), nn.Conv2d(hidden, hidden, 3, padding=1)
        self.fc, self.out = nn.Linear(hidden * 16, 64), nn.Linear(64, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return self.out(F.relu(self.fc(h.flatten(1))))


def tiles(run: Run) -> None:
    """A tile CNN of `hidden` (16) channels, batches of `batch` (32), `opt` (Adam; or momentum SGD, NAdam, AdamW)
    at `lr` (1e-3), random flips. Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _tile_photos(g, 1500, run.bug)
    x_v, y_v = _tile_photos(g, 600, None)
    scale = 255.0 if run.bug == "counts_divided_by_255" else FULL_SCALE  # 8-bit habit on the 12-bit camera
    x, x_v = (x / scale - 0.5) / 0.25, (x_v / scale - 0.5) / 0.25  # to [0, 1], then Normalize(0.5, 0.25)
    torch.manual_seed(run.seed)
    model = TileCNN(run.k("hidden", 16))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 32)

    def acc_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        xb = x[pick]
        flip = torch.rand(batch, generator=run.gen) < 0.5
        xb = torch.where(flip.view(-1, 1, 1, 1), xb.flip(3), xb)
        if run.bug == "brightness_jitter_of_eighty_percent":  # ColorJitter(brightness=0.8)
            xb = (xb * 0.25 + 0.5) * (0.2 + 1.6 * torch.rand(batch, 1, 1, 1, generator=run.gen))
            xb = (xb.clamp(0, 1) - 0.5) / 0.25
        loss = F.cross_entropy(model(xb), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", acc_held_out):
            break
