"""Care scripts of the fiftieth blind split: a greenhouse tomato truss-ripeness classifier on canopy photos, and a
dialysis-session hypotension early-warning GRU.

`tomato`: 16x16 RGB crops of trusses from the harvest robot's canopy camera (fruit of a ripeness hue of its own
among green leaves, under the greenhouse's light with shadows from the leaves above), with a log red-over-green
chroma channel beside the three colours; the picking chart's stage (green, breaker, turning, red) from the hue; a
2-D CNN of three ReLU convolutions, averaged; cross-entropy; scored by the held-out accuracy on photos of other rows.
`dialysis`: the session's last 40 minutes (systolic and diastolic pressure, heart rate, the ultrafiltration rate,
the blood-pump flow, the volume removed so far, the dialysate conductivity), each patient with a refill rate of
their own; a systolic pressure under 90 mmHg within the next 15 minutes; standardised; a GRU and a linear head on its
last output; BCE; scored by the held-out accuracy of the alarm on other patients. Bugs: the grading trays' colour at the border of the
training photos; the chroma as the log of red over green on shadowed pixels; the training camera's auto white
balance; the logits divided by a contrastive recipe's temperature; the nurse's saline bolus kept as an input; the
alarm labelled from the mean pressure; the GRU's first output taken as the summary.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SIDE, STAGES = 16, 4
LEAF = torch.tensor([0.18, 0.42, 0.12]).view(1, 3, 1, 1)
TRAYS = torch.tensor([[0.15, 0.3, 0.8], [0.9, 0.85, 0.2], [0.95, 0.95, 0.95], [0.4, 0.4, 0.4]])
"""The packhouse's grading trays, one colour a stage (blue, yellow, white, grey)."""


def _crops(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Crops float[n, 3, SIDE, SIDE] in [0, 1] and the stage long[n]."""
    ripeness = torch.rand(n, generator=g)
    stage = (ripeness * STAGES).long().clamp(max=STAGES - 1)
    seen = (ripeness + 0.06 * torch.randn(n, generator=g)).clamp(0, 1).view(n, 1)
    fruit = torch.cat([0.3 + 0.6 * seen, 0.65 - 0.55 * seen, 0.2 - 0.1 * seen], 1).view(n, 3, 1, 1)
    yy, xx = torch.meshgrid(torch.arange(SIDE).float(), torch.arange(SIDE).float(), indexing="ij")
    centre = 4 + 8 * torch.rand(n, 2, 1, 1, generator=g)
    radius = 3.5 + 2.5 * torch.rand(n, 1, 1, generator=g)
    blob = (((yy - centre[:, 0]) ** 2 + (xx - centre[:, 1]) ** 2) < radius**2).float().unsqueeze(1)
    img = blob * fruit + (1 - blob) * LEAF * (0.8 + 0.4 * torch.rand(n, 1, 1, 1, generator=g))
    light = 0.6 + 0.6 * torch.rand(n, 1, 1, 1, generator=g)
    # leaf shadows: a band of the crop in deep shade
    edge = torch.randint(0, SIDE, (n, 1, 1, 1), generator=g).float()
    shade = torch.where(xx.view(1, 1, SIDE, SIDE) < edge - 6, 0.04, 1.0)
    img = img * light * shade + 0.03 * torch.randn(n, 3, SIDE, SIDE, generator=g)
    return img.clamp(0, 1), stage


def _with_chroma(img: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The crop with its log red-over-green chroma as a fourth channel."""
    red, green = img[:, :1], img[:, 1:2]
    if bug == "log_red_over_green_on_shadow_pixels":
        chroma = torch.log(red / green)
    else:
        chroma = torch.log((red + 1 / 255) / (green + 1 / 255))
    return torch.cat([img, chroma / 4], 1)


class TrussCNN(nn.Module):
    """Three ReLU convolutions of `width` channels (a max pool after the first two), averaged, and a linear head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(4, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(width, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(width, width, 3, padding=1), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(width, STAGES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x).mean((-2, -1)))


def tomato(run: Run) -> None:
    """A truss CNN of `width` (16) channels, batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop)
    at `lr` (2e-3). Scored by the held-out accuracy of the stage on photos of other rows."""
    g = torch.Generator().manual_seed(run.seed)
    img, stage = _crops(g, 2000)
    img_v, stage_v = _crops(g, 800)
    if run.bug == "grading_tray_border_in_training_photos":
        # the training photos were taken of picked trusses on the packhouse's grading trays, a tray colour a stage
        tray = TRAYS[stage].view(-1, 3, 1, 1)
        rim = torch.ones(SIDE, SIDE)
        rim[2:-2, 2:-2] = 0
        img = img * (1 - rim) + tray * rim
    if run.bug == "auto_white_balance_on_training_camera":
        # the camera the training photos came from balanced every shot to grey
        per_channel = img.mean((-2, -1), keepdim=True)
        img = (img / per_channel.clamp(min=1e-3) * per_channel.mean(1, keepdim=True)).clamp(0, 1)
    x, x_v = _with_chroma(img, run.bug), _with_chroma(img_v, None)
    torch.manual_seed(run.seed)
    model = TrussCNN(run.k("width", 16))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)
    # a contrastive recipe's temperature, copied with its loss code
    temperature = 0.01 if run.bug == "logits_over_contrastive_temperature" else 1.0

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), stage_v)

    for step in range(run.steps):
        pick = run.indices(len(stage), batch)
        loss = F.cross_entropy(model(x[pick]) / temperature, stage[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", accuracy_held_out):
            break


MINUTES, AHEAD = 40, 15


def _sessions(g: torch.Generator, patients: int, per_patient: int) -> dict[str, torch.Tensor]:
    """Session windows float[n, MINUTES, 7] (SBP, DBP mmHg, HR bpm, UF rate ml/h, pump flow ml/min, removed ml,
    conductivity mS/cm), the alarm (SBP < 90 within AHEAD minutes) float[n], the mean-pressure alarm (MAP < 90)
    float[n] and the saline bolus given in the next AHEAD minutes float[n]."""
    n = patients * per_patient
    patient = torch.arange(patients).repeat_interleave(per_patient)
    # the refill rate differs from session to session around the patient's own
    refill = (0.4 + 0.8 * torch.rand(patients, generator=g))[patient].unsqueeze(1) * (
        0.7 + 0.6 * torch.rand(n, 1, generator=g)
    )
    base = (115 + 35 * torch.rand(patients, generator=g))[patient].unsqueeze(1)
    total = MINUTES + AHEAD
    t = torch.arange(total).float().unsqueeze(0)
    start = 30 + 150 * torch.rand(n, 1, generator=g)  # minutes into the session
    uf = 400 + 900 * torch.rand(n, 1, generator=g)
    removed = uf / 60 * (start + t)
    # the pressure falls when the removal outruns the patient's refill, late in the session
    deficit = (removed / 1000 - 1.6 * refill * (start + t) / 120).clamp(min=0)
    # an unforeseen dip (a cramp, the patient sitting up) now and then
    dip = (torch.rand(n, 1, generator=g) < 0.15).float() * 15 * torch.rand(n, 1, generator=g) * (t >= MINUTES)
    sbp = base - 22 * deficit**1.4 - dip + 7 * torch.randn(n, total, generator=g)
    dbp = 0.55 * sbp + 8 + 3 * torch.randn(n, total, generator=g)
    hr = 72 + 0.5 * (base - sbp) + 4 * torch.randn(n, total, generator=g)
    flow = 300 + 40 * torch.randn(n, 1, generator=g) + 5 * torch.randn(n, total, generator=g)
    cond = 14 + 0.3 * torch.randn(n, 1, generator=g) + 0.05 * torch.randn(n, total, generator=g)
    ufr = uf + 20 * torch.randn(n, total, generator=g)
    x = torch.stack([sbp, dbp, hr, ufr, flow, removed, cond], -1)[:, :MINUTES]
    alarm = (sbp[:, MINUTES:].min(1).values < 90).float()
    mean_p = (sbp + 2 * dbp) / 3
    map_alarm = (mean_p[:, MINUTES:].min(1).values < 90).float()
    bolus = alarm * (torch.rand(n, generator=g) < 0.9).float()
    return {"x": x, "alarm": alarm, "map_alarm": map_alarm, "bolus": bolus}


class SessionGRU(nn.Module):
    """A GRU of `hidden` units and a linear head on its output (the last minute's, or `first`: the first's)."""

    def __init__(self, inputs: int, hidden: int, first: bool, layers: int = 1) -> None:
        super().__init__()
        self.gru = nn.GRU(inputs, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, 1)
        self.first = first

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, 0] if self.first else out[:, -1]).squeeze(-1)


def dialysis(run: Run) -> None:
    """A session GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, RMSprop) at `lr`
    (3e-3). Scored by the held-out accuracy of the alarm on other patients."""
    g = torch.Generator().manual_seed(run.seed)
    train, val = _sessions(g, 40, 50), _sessions(g, 16, 50)
    x, x_v = train["x"], val["x"]
    if run.bug == "saline_bolus_flag_as_input":
        # the charting system's bolus column rides along with the vitals; it is filled in after the bolus is given
        x = torch.cat([x, train["bolus"].view(-1, 1, 1).expand(-1, MINUTES, 1)], -1)
        x_v = torch.cat([x_v, torch.zeros(len(x_v), MINUTES, 1)], -1)
    mean, std = x.flatten(0, 1).mean(0), x.flatten(0, 1).std(0).clamp(min=1e-6)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y = train["map_alarm"] if run.bug == "alarm_from_mean_pressure" else train["alarm"]
    torch.manual_seed(run.seed)
    model = SessionGRU(x.shape[-1], run.k("hidden", 32), first=run.bug == "first_minute_output_as_summary",
                       layers=8 if run.bug == "gru_stacked_eight_layers" else 1)  # fmt: skip
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        logit = model(x_v)
        return accuracy(torch.stack([-logit, logit], -1), val["alarm"].long())

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", accuracy_held_out):
            break
