"""Show scripts of the fifty-fifth blind split: a stage LED fixture's colour calibration model, and an archery
release classifier on a bow-mounted motion sensor.

`fixture`: the DMX levels of a moving head's five emitters (red, green, blue, white, amber, each a 16-bit pair of
coarse and fine channels) and the fixture's head temperature; the colour a spectrometer measured at 5 m (CIE x, y and
the log illuminance) by a SiLU MLP; MSE on the standardised outputs; scored by the held-out R^2 on other fixtures of
the model. `release`: 32 samples at 200 Hz of a stabiliser IMU's three accelerometer and three gyroscope axes around
the clicker's click; the release (clean, plucked, collapsed, punched) by a small transformer encoder over the
samples; cross-entropy; scored by the held-out accuracy on other archers. Bugs: the coarse and fine DMX bytes
swapped; the chromaticity of the blackout rows; the window cut from the recording's start, not the click; the coach's
note kept; each archer's spread taken across their shots, NaN for an archer with one shot.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

EMITTERS = 5
# each emitter's XYZ tristimulus at full output (red, green, blue, white, amber)
XYZ = torch.tensor([[41.2, 21.3, 1.9], [35.8, 71.5, 11.9], [18.0, 7.2, 95.0], [95.0, 100.0, 108.9],
                    [55.0, 38.0, 2.0]])  # fmt: skip
DROOP = torch.tensor([0.009, 0.004, 0.002, 0.003, 0.011])  # output lost per degree C over 25 C


def _plan(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A calibration plan: DMX bytes float[n, 2 * EMITTERS] (coarse, fine per emitter) and the head temperature
    float[n], one emitter to all five lit per row, 8 % blackout rows (every emitter at 0)."""
    level = torch.rand(n, EMITTERS, generator=g) ** 1.5
    lit = torch.rand(n, EMITTERS, generator=g) < 0.6
    lit[torch.arange(n), torch.randint(0, EMITTERS, (n,), generator=g)] = True
    level = torch.where(lit, level, torch.zeros_like(level))
    level[torch.rand(n, generator=g) < 0.08] = 0
    value = (level * 65535).round()
    dmx = torch.stack([value // 256, value % 256], 2).flatten(1)
    temp = 25 + 30 * torch.rand(n, generator=g)
    return dmx, temp


def _measured(g: torch.Generator, dmx: torch.Tensor, temp: torch.Tensor) -> torch.Tensor:
    """The spectrometer's XYZ float[n, 3] for each row (0 below its floor), each row on a fixture of the rig with its
    own LED bins."""
    n = len(dmx)
    value = dmx.view(n, EMITTERS, 2)
    level = (value[..., 0] * 256 + value[..., 1]) / 65535
    binning = 1 + 0.06 * torch.randn(n, EMITTERS, generator=g)  # the fixture's LED bins
    output = level**2.2 * binning * (1 - DROOP * (temp.unsqueeze(1) - 25))
    xyz = output @ XYZ * (1 + 0.01 * torch.randn(n, 1, generator=g))
    return torch.where(xyz[:, 1:2] > 0.01, xyz, torch.zeros_like(xyz))


def _colour(xyz: torch.Tensor) -> torch.Tensor:
    """CIE x, y and log10 of the illuminance (Y)."""
    total = xyz.sum(1)
    return torch.stack([xyz[:, 0] / total, xyz[:, 1] / total, torch.log10(xyz[:, 1])], 1)


def _fixture_inputs(dmx: torch.Tensor, temp: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The five levels in [0, 1] from their DMX pairs, and the head temperature."""
    pair = dmx.view(len(dmx), EMITTERS, 2)
    if bug == "dmx_coarse_fine_bytes_swapped":
        # the bug: the pair read fine byte first, as the fixture's manual lists the channels in its 16-bit mode
        level = (pair[..., 1] * 256 + pair[..., 0]) / 65535
    else:
        level = (pair[..., 0] * 256 + pair[..., 1]) / 65535
    return torch.cat([level, temp.unsqueeze(1)], 1)


class ColourMLP(nn.Module):
    """A SiLU MLP of three hidden layers of `hidden` units and three outputs."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
                                 nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 3))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def fixture(run: Run) -> None:
    """A colour MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adamax) at `lr`
    (2e-3). Scored by the held-out R^2 of x, y and the log illuminance on other fixtures."""
    g = torch.Generator().manual_seed(run.seed)
    dmx, temp = _plan(g, 1500)
    xyz = _measured(g, dmx, temp)
    dmx_v, temp_v = _plan(g, 600)
    xyz_v = _measured(g, dmx_v, temp_v)
    lit_v = xyz_v[:, 1] > 0
    dmx_v, temp_v, xyz_v = dmx_v[lit_v], temp_v[lit_v], xyz_v[lit_v]
    if run.bug != "chromaticity_of_blackout_rows":
        # the plan's blackout rows have no colour: the meter reads 0 and x = X / (X + Y + Z) is 0 / 0
        lit = xyz[:, 1] > 0
        dmx, temp, xyz = dmx[lit], temp[lit], xyz[lit]
    x, x_v = _fixture_inputs(dmx, temp, run.bug), _fixture_inputs(dmx_v, temp_v, run.bug)
    y, y_v = _colour(xyz), _colour(xyz_v)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(0), y.std(0)
    torch.manual_seed(run.seed)
    model = ColourMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        pred = model(x_v) * scale + centre
        return sum(r2(pred[:, i], y_v[:, i]) for i in range(3)) / 3

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


WINDOW, RECORDING, RELEASES = 32, 260, 4


def _shots(g: torch.Generator, n: int, archers: int, first_id: int) -> dict[str, torch.Tensor]:
    """Shots of `archers` archers (ids from `first_id`): recordings float[n, 6, RECORDING] from the start of the
    draw, the click's sample long[n], the release long[n], the archer long[n] and the coach's call long[n]. Each
    archer has a stance (the gravity on the axes), a hold's sway and a habitual fault; one archer of the lot shot
    once."""
    archer = torch.randint(0, archers, (n,), generator=g)
    archer[0] = archers  # a guest's single shot
    habit = torch.randint(1, RELEASES, (archers + 1,), generator=g)
    fault = torch.rand(n, generator=g) < 0.6
    release = torch.where(fault, habit[archer], torch.randint(0, RELEASES, (n,), generator=g))
    stance = (torch.randn(archers + 1, 6, 1, generator=g) * torch.tensor([3, 3, 3, 0, 0, 0.0]).view(6, 1))[
        archer
    ]
    sway = (0.2 + 0.4 * torch.rand(archers + 1, 1, 1, generator=g))[archer]
    click = 80 + torch.randint(0, 120, (n,), generator=g)
    t = torch.arange(RECORDING).float()
    since = (t - click.unsqueeze(1).float()).unsqueeze(1)  # samples after the click
    after = (since >= 0).float()
    rec = stance + sway * torch.randn(n, 6, RECORDING, generator=g).cumsum(-1) / 8
    rec = rec + 0.3 * torch.randn(n, 6, RECORDING, generator=g)
    # every release: the string's shock along x and the bow's forward rotation after the click
    shock = after * torch.exp(-since.clamp(min=0) / 4) * torch.sin(since * 1.3)
    rec[:, 0:1] += 6 * shock
    rec[:, 4:5] += 2 * after * torch.exp(-since.clamp(min=0) / 20)
    kind = F.one_hot(release, RELEASES).float()
    size = 1.0 + 0.8 * torch.rand(n, 1, 1, generator=g)
    # plucked: a sideways jolt of the string hand at the click
    rec[:, 1:2] += size * kind[:, 1, None, None] * 2.0 * after * torch.exp(-since.clamp(min=0) / 6)
    # collapsed: the bow creeps forward in the half-second before the click
    creep = ((since + 60).clamp(0, 60) / 60) * (1 - after)
    rec[:, 0:1] += size * kind[:, 2, None, None] * 1.2 * creep
    # punched: the bow arm drops just after the click
    rec[:, 3:4] += size * kind[:, 3, None, None] * -2.0 * after * (since.clamp(min=0) < 25).float()
    # the coach's call on the sheet, from which the release labels were typed in
    return {
        "rec": rec,
        "click": click,
        "release": release,
        "archer": archer + first_id,
        "note": release.clone(),
    }


def _windows(rec: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """WINDOW samples of each recording from its own start index."""
    idx = start.view(-1, 1, 1) + torch.arange(WINDOW).view(1, 1, WINDOW)
    return rec.gather(2, idx.expand(-1, rec.shape[1], -1))


def _per_archer(x: torch.Tensor, archer: torch.Tensor, bug: str | None) -> torch.Tensor:
    """Each archer's shots centred and scaled by the archer's own mean and spread per axis (the stance and the
    sway), over all their shots' samples."""
    out = torch.empty_like(x)
    for a in archer.unique():
        rows = archer == a
        shots = x[rows]
        mean = shots.mean((0, 2), keepdim=True)
        if bug == "archer_spread_across_one_shot":
            # the bug: the spread taken across the archer's shots sample by sample, then averaged over the samples:
            # the std of one shot is NaN, as pandas' groupby std is for a group of one row
            std = shots.std(0, keepdim=True).mean(2, keepdim=True)
        else:
            std = shots.std((0, 2), keepdim=True)
        out[rows] = (shots - mean) / std
    return out


class ReleaseEncoder(nn.Module):
    """Each sample's six axes projected to `width`, a learned position, one transformer encoder layer, mean pooling
    and a linear head (over the pooled features and `extra` further inputs)."""

    def __init__(self, width: int, extra: int = 0) -> None:
        super().__init__()
        self.embed = nn.Linear(6, width)
        self.position = nn.Parameter(0.02 * torch.randn(WINDOW, width))
        self.encoder = nn.TransformerEncoderLayer(width, 4, 2 * width, dropout=0.0, batch_first=True)
        self.head = nn.Linear(width + extra, RELEASES)

    def forward(self, x: torch.Tensor, extra: torch.Tensor | None = None) -> torch.Tensor:
        h = self.encoder(self.embed(x.transpose(1, 2)) + self.position).mean(1)
        return self.head(h if extra is None else torch.cat([h, extra], 1))


def release(run: Run) -> None:
    """A release encoder of `width` (24), batches of `batch` (32), `opt` (Adam; or AdamW, RAdam, RMSprop) at `lr`
    (1e-3). Scored by the held-out accuracy of the release on other archers."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _shots(g, 1400, 30, 1), _shots(g, 300, 12, 100)
    start = tr["click"] - 8
    if run.bug == "window_cut_from_recording_start":
        # the bug: the window cut from the recording's first sample, not around the clicker's click
        start = torch.zeros_like(start)
    x, x_v = _windows(tr["rec"], start), _windows(va["rec"], va["click"] - 8)
    x = _per_archer(x, tr["archer"], run.bug)
    x_v = _per_archer(x_v, va["archer"], None)
    y, y_v = tr["release"], va["release"]
    notes = notes_v = None
    if run.bug == "coach_note_kept":
        # the bug: the coach's call column left among the inputs, one-hot beside the pooled motion; the live
        # classifier runs before any coach has seen the shot, and the form's default call is "clean"
        notes = F.one_hot(tr["note"], RELEASES).float()
        notes_v = F.one_hot(torch.zeros_like(y_v), RELEASES).float()
    torch.manual_seed(run.seed)
    model = ReleaseEncoder(run.k("width", 24), 0 if notes is None else RELEASES)
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v, notes_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick], None if notes is None else notes[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
