"""Site scripts of the fifty-ninth blind split: a tunnel boring machine's penetration forecaster for a metro drive,
and a windsurfing club's manoeuvre classifier on its riders' GPS watch tracks.

`penetration`: the last 8 rings of a drive (the mean thrust in kN, the cutterhead torque in kN m and speed in rpm,
the face's earth pressure in bar and the penetration in mm per revolution, each ring's from the PLC's samples of the
stroke); the next ring's penetration by an LSTM over the rings and a linear head; MSE on the standardised penetration;
scored by the held-out R^2 on another drive. `manoeuvres`: 12 s of a rider's 1 Hz GPS track (the speed, the course
against the forecast wind as its sine and cosine, the turn rate and the acceleration); what the rider did (sailed on,
tacked, gybed or fell) by a small transformer encoder with learned positions; cross-entropy; scored by the held-out
accuracy on another club's riders. Bugs: the head's output turned into metres per revolution inside the model; the
penetration taken as the mean of the samples' ratios, ring builds included; a hand-written clipping whose ratio is
upside down; the logits bounded by a tanh; the labels cut from the video by a camera clock running ahead; the
watch's own manoeuvre flag kept as an input.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

RINGS, SAMPLES, BUILD = 8, 12, 3


def _drive(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """Stretches of a drive: per ring, the PLC's samples of the stroke float[n, RINGS + 1, SAMPLES] of the advance in
    mm/min and the cutterhead speed in rpm (the last BUILD samples of about a third of the rings logged during the
    ring build, both 0), the mean thrust in kN, torque in kN m and earth pressure in bar float[n, RINGS + 1]."""
    steps = RINGS + 1
    # the face's rock strength in MPa drifts along the drive, with lenses of harder ground
    ucs = 25 + 30 * torch.rand(n, 1, generator=g) + torch.cumsum(3 * torch.randn(n, steps, generator=g), 1)
    lens = (torch.rand(n, steps, generator=g) < 0.15).float() * 25 * torch.rand(n, steps, generator=g)
    ucs = (ucs + lens).clamp(min=8)
    thrust = 9000 + 7000 * torch.rand(n, 1, generator=g) + 600 * torch.randn(n, steps, generator=g)  # kN
    rpm = 1.6 + 1.2 * torch.rand(n, 1, generator=g) + 0.1 * torch.randn(n, steps, generator=g)
    pressure = 1.2 + 1.5 * torch.rand(n, 1, generator=g) + 0.1 * torch.randn(n, steps, generator=g)
    # penetration per revolution: thrust per cutter against the rock, the face pressure holding the machine back
    pen = 14 * (thrust / 12000) ** 1.4 * (35 / ucs) ** 0.8 * (1 - 0.06 * pressure)
    pen = pen * (1 + 0.06 * torch.randn(n, steps, generator=g))
    torque = 120 * pen * rpm.sqrt() * (ucs / 35) ** 0.3 + 150 * torch.randn(n, steps, generator=g) + 900
    # the stroke's samples: the advance follows the rpm, each sample jittered
    sample_rpm = rpm.unsqueeze(-1) * (1 + 0.05 * torch.randn(n, steps, SAMPLES, generator=g))
    advance = pen.unsqueeze(-1) * sample_rpm * (1 + 0.05 * torch.randn(n, steps, SAMPLES, generator=g))
    build = (torch.rand(n, steps, 1, generator=g) < 0.35) & (torch.arange(SAMPLES) >= SAMPLES - BUILD)
    sample_rpm, advance = sample_rpm * ~build, advance * ~build
    return {"advance": advance, "rpm": sample_rpm, "thrust": thrust, "torque": torque, "pressure": pressure}


def _penetration(d: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """Each ring's penetration in mm per revolution float[n, RINGS + 1] from the PLC's samples."""
    if bug == "penetration_as_mean_of_sample_ratios":
        # the bug: the mean over the samples of advance / rpm, the ring build's 0 / 0 samples included
        return (d["advance"] / d["rpm"]).mean(-1)
    return d["advance"].sum(-1) / d["rpm"].sum(-1)


def _rings(d: dict[str, torch.Tensor], pen: torch.Tensor) -> torch.Tensor:
    """The input rings float[n, RINGS, 5]: thrust, torque, mean rpm while turning, earth pressure, penetration."""
    turning = d["rpm"].sum(-1) / (d["rpm"] > 0).sum(-1).clamp(min=1)
    cols = [d["thrust"], d["torque"], turning, d["pressure"], pen]
    return torch.stack([c[:, :RINGS] for c in cols], -1)


class RingLSTM(nn.Module):
    """An LSTM of `hidden` units over the rings and a linear head; `metres` divides the head's output by 1000."""

    def __init__(self, hidden: int, metres: bool = False) -> None:
        super().__init__()
        self.lstm = nn.LSTM(5, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)
        self.metres = metres

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        y = self.head(out[:, -1]).squeeze(-1)
        # the bug: the head's output converted to metres per revolution for the site's shift report
        return y / 1000 if self.metres else y


def penetration(run: Run) -> None:
    """A ring LSTM of `hidden` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (3e-3), gradients clipped to norm 0.5. Scored by the held-out R^2 of the next ring's penetration on another drive."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _drive(g, 800), _drive(g, 200)
    pen, pen_v = _penetration(tr, run.bug), _penetration(va, None)
    x, x_v = _rings(tr, pen), _rings(va, pen_v)
    y, y_v = pen[:, RINGS], pen_v[:, RINGS]
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = RingLSTM(run.k("hidden", 16), metres=run.bug == "penetration_head_scaled_to_metres")
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        # the gradients clipped to norm 0.5 by hand, as the site's older training code does
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
        if norm > 0.5:
            # the bug: the ratio written upside down, the gradients multiplied by their norm over the limit
            ratio = norm / 0.5 if run.bug == "hand_clipping_ratio_inverted" else 0.5 / norm
            for grad in grads:
                grad.mul_(ratio)
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


SECONDS, TRACK, CENTRE = 12, 28, 14
MOVES = ("sailing on", "tack", "gybe", "fall")


def _tracks(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """Riders' 1 Hz tracks of TRACK s around a moment the club's video annotators marked at second CENTRE: speed in
    m/s, course in degrees, the forecast wind's direction (where it blows from) in degrees, the watch's own manoeuvre
    flag (brand A watches only) float[n, TRACK] each, and what the rider did long[n]."""
    move = torch.randint(0, 4, (n,), generator=g)
    # the seconds from the turn, whose moment the annotators mark give or take
    t = torch.arange(TRACK).float() - CENTRE + 2.5 * torch.randn(n, 1, generator=g)
    wind = 360 * torch.rand(n, 1, generator=g)
    wind_error = 35 * torch.randn(n, 1, generator=g)  # the forecast's error on the real wind
    tws = 6 + 8 * torch.rand(n, 1, generator=g)
    # the rider reaches on one tack, at 60-140 degrees off the wind, then turns to the other side
    off = 60 + 80 * torch.rand(n, 1, generator=g)
    side = torch.where(torch.rand(n, 1, generator=g) < 0.5, -1.0, 1.0)
    dur = 3 + 3 * torch.rand(n, 1, generator=g)
    phase = torch.sigmoid(t / dur * 2.5)  # 0 before the turn, 1 after
    through_wind = side * (1 - 2 * phase) * off  # a tack turns the course through the wind
    through_lee = side * (off + phase * (2 * (180 - off)))  # a gybe turns through the downwind direction
    # sailing on: the rider bears away or heads up in the gusts
    straight = side * (
        off + 25 * torch.sin(t / (2 + 3 * torch.rand(n, 1, generator=g)) + 6 * torch.rand(n, 1, generator=g))
    )
    real_wind = wind + wind_error
    course = torch.where(
        (move == 1).unsqueeze(1), through_wind, torch.where((move == 2).unsqueeze(1), through_lee, straight)
    )
    course = real_wind + 180 + course + torch.cumsum(4 * torch.randn(n, TRACK, generator=g), 1)
    speed_on = tws * (0.7 + 0.3 * torch.rand(n, 1, generator=g))
    dip = torch.exp(-0.5 * (t / dur) ** 2)
    speed = torch.where((move == 1).unsqueeze(1), speed_on * (1 - 0.6 * dip),  # a tack stalls the board
                        torch.where((move == 2).unsqueeze(1), speed_on * (1 - 0.4 * dip), speed_on))  # fmt: skip
    # a fall: the rider stops dead, the board drifts, then a water start and slow acceleration
    fall = (
        speed_on * (1 - torch.sigmoid(t * 2))
        + speed_on * torch.sigmoid((t - 6 - 4 * torch.rand(n, 1, generator=g)) / 2) * 0.8
    )
    speed = torch.where((move == 3).unsqueeze(1), fall.clamp(min=0.3), speed)
    course = torch.where(
        (move == 3).unsqueeze(1), course + 40 * torch.sigmoid(t) * torch.randn(n, 1, generator=g), course
    )
    lull = 1 - 0.3 * torch.rand(n, 1, generator=g) * torch.exp(
        -0.5 * ((t - 8 * torch.randn(n, 1, generator=g)) / 3) ** 2
    )
    speed = (speed * lull + 1.0 * torch.randn(n, TRACK, generator=g)).clamp(min=0)
    turning = (move == 1) | (move == 2)
    detected = turning.unsqueeze(1) & (dip > 0.3) & (torch.rand(n, 1, generator=g) < 0.9)
    flag = (detected | (torch.rand(n, TRACK, generator=g) < 0.03)).float()
    return {"speed": speed, "course": course % 360, "wind": wind.expand(n, TRACK), "flag": flag, "move": move}


def _window(tr: dict[str, torch.Tensor], start: int, flag: bool) -> torch.Tensor:
    """SECONDS s of the track from `start`: float[n, SECONDS, 6 or 7] of the speed, the course against the forecast
    wind (sine and cosine), the turn rate in degrees per s wrapped to +-180, the acceleration (and the watch's flag)."""
    s = slice(start, start + SECONDS)
    speed, course, wind = tr["speed"][:, s], tr["course"][:, s], tr["wind"][:, s]
    rel = torch.deg2rad(course - wind)
    turn = torch.diff(course, dim=1, prepend=course[:, :1])
    turn = (turn + 180) % 360 - 180
    accel = torch.diff(speed, dim=1, prepend=speed[:, :1])
    cols = [speed, rel.sin(), rel.cos(), turn / 10, accel]
    if flag:
        cols.append(tr["flag"][:, s])
    return torch.stack(cols, -1)


class MoveEncoder(nn.Module):
    """Each second projected to `width` plus a learned position, one transformer encoder layer, a mean over time and
    a linear head; with `bounded`, the logits squashed by a tanh."""

    def __init__(self, columns: int, width: int, bounded: bool = False) -> None:
        super().__init__()
        self.inp = nn.Linear(columns, width)
        self.position = nn.Parameter(0.1 * torch.randn(SECONDS, width))
        self.encoder = nn.TransformerEncoderLayer(width, 2, 2 * width, dropout=0.0, batch_first=True)
        self.head = nn.Linear(width, len(MOVES))
        self.bounded = bounded

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.encoder(self.inp(x) + self.position)
        logits = self.head(h.mean(1))
        # the bug: the logits bounded by a tanh "to keep the softmax stable", its output at most 1 in size
        return torch.tanh(logits) if self.bounded else logits


def manoeuvres(run: Run) -> None:
    """A move encoder of `width` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, RAdam) at `lr`
    (2e-3). Scored by the held-out accuracy of the move on another club's riders."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _tracks(g, 1000), _tracks(g, 200)
    centred = CENTRE - SECONDS // 2
    # the bug: the windows cut at the video's marks, the camera's clock 7 s ahead of the watches'
    start = centred + 7 if run.bug == "video_marks_on_camera_clock_ahead" else centred
    flag = run.bug == "watch_manoeuvre_flag_as_input"
    x = _window(tr, start, flag)
    x_v = _window(va, centred, flag)
    if flag:
        # the other club's riders wear brand B watches, which have no manoeuvre detection
        x_v[..., -1] = 0
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = tr["move"], va["move"]
    torch.manual_seed(run.seed)
    model = MoveEncoder(x.shape[-1], run.k("width", 16), run.bug == "logits_bounded_by_tanh")
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

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
