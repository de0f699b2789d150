"""Ground scripts of the fifty-sixth blind split: a railway point-machine fault classifier on the motor's current
during a throw, and a seismic-event discriminator telling quarry blasts from earthquakes at a regional network.

`points`: the motor current of an electric point machine over a throw (48 samples at 10 Hz from the start command,
in amps; most machines of the training area and half of the held-out one log at 20 Hz, their traces decimated), the throw normal, obstructed (a stall to the
cut-out), on dry slide chairs (a friction hump mid-throw) or with a misadjusted detection (a late lock); a 1-D CNN;
cross-entropy; scored by the held-out accuracy on another maintenance area's machines. `quakes`: an event's
picks at its 3-8 stations (epicentral distance, the P/S amplitude ratio, a low/high spectral ratio, the station's
azimuth) and the event's local hour and catalogue depth; each station embedded, attention pooling with a learned
query over the present stations, a ReLU head; BCE; scored by the held-out AUC of a blast on a later year's reviewed
events. Bugs: the 20 Hz traces cut to their first half instead of decimated; StepLR's gamma written as the factor
to divide by; the attention's padding mask inverted; the catalogue's automatic
"probable blast" flag taken as the label; one network's distances in degrees read as kilometres.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SAMPLES, KINDS = 48, 4


def _throws(g: torch.Generator, n: int, newer: float) -> dict[str, torch.Tensor]:
    """Throws of `n` point machines' motors: the current in amps as logged (float[n, 96]: a 10 Hz logger's 48
    samples padded with zeros, a 20 Hz logger's 96), whether the logger runs at 20 Hz (bool[n]) and the kind of
    throw (long[n]: normal, obstructed, dry slide chairs, misadjusted detection)."""
    kind = torch.randint(0, KINDS, (n,), generator=g)
    fast = torch.rand(n, generator=g) < newer
    t = torch.arange(96).float() / 20  # seconds on the 20 Hz grid
    t = t.unsqueeze(0)
    level = 1.6 + 0.6 * torch.rand(n, 1, generator=g)  # the motor's running current
    inrush = (4 + 2 * torch.rand(n, 1, generator=g)) * torch.exp(-t / 0.15)
    end = 2.8 + 0.5 * torch.rand(n, 1, generator=g)  # the lock, when the motor cuts
    end = torch.where(kind.view(n, 1) == 3, end + 0.6 + 0.4 * torch.rand(n, 1, generator=g), end)
    slope = 0.1 * torch.randn(n, 1, generator=g)
    running = (t < end).float() * (level + slope * t)
    # dry slide chairs: the blades drag harder through the middle of the stroke
    hump = (0.2 + 0.3 * torch.rand(n, 1, generator=g)) * torch.exp(-(((t - 1.5) / 0.5) ** 2))
    running = running + (kind.view(n, 1) == 2).float() * hump * (t < end).float()
    # obstructed: the blades meet a stone, the motor stalls and draws until the cut-out at 4.5 s
    hit = 1.8 + 0.8 * torch.rand(n, 1, generator=g)
    stall = (t >= hit) & (t < 4.5)
    stalled = level + (1.2 + 0.8 * torch.rand(n, 1, generator=g)) * (1 - torch.exp(-(t - hit) / 0.3))
    running = torch.where((kind.view(n, 1) == 1) & stall, stalled, running)
    running = torch.where((kind.view(n, 1) == 1) & (t >= 4.5), torch.zeros_like(running), running)
    # misadjusted detection: a dip as the blade reaches the stock rail late, before the lock
    dip = 0.5 * torch.exp(-(((t - end + 0.4) / 0.15) ** 2))
    running = running - (kind.view(n, 1) == 3).float() * dip
    current = running + inrush + 0.3 * torch.randn(n, 96, generator=g)
    slow = torch.cat([current[:, ::2], torch.zeros(n, 48)], 1)  # a 10 Hz logger: every second instant
    logged = torch.where(fast.view(n, 1), current, slow)
    return {"current": logged, "fast": fast, "kind": kind}


def _traces(throws: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """Every throw on the 10 Hz grid, float[n, SAMPLES]: the 20 Hz loggers' traces decimated."""
    current, fast = throws["current"], throws["fast"]
    if bug == "truncated_not_decimated":
        # the bug: the 20 Hz traces cut to their first SAMPLES samples, the first half of the throw
        resampled = current[:, :SAMPLES]
    else:
        resampled = current[:, ::2]
    return torch.where(fast.view(-1, 1), resampled, current[:, :SAMPLES])


class ThrowCNN(nn.Module):
    """Three conv blocks of `width` channels (conv, ReLU, pooling), global mean and max pooling, a linear head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, width, 3, padding=1), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(2 * width, KINDS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.net(x.unsqueeze(1))
        return self.head(torch.cat([h.mean(-1), h.amax(-1)], 1))


def points(run: Run) -> None:
    """A throw CNN of `width` (12), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, NAdam) at `lr`
    (2e-3), the rate halved every 60 steps. Scored by the held-out accuracy of the throw's kind on another area."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _throws(g, 1200, 0.8), _throws(g, 300, 0.5)
    x, x_v = _traces(tr, run.bug), _traces(va, None)
    y, y_v = tr["kind"], va["kind"]
    mean, std = x.mean(), x.std()
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = ThrowCNN(run.k("width", 12))
    opt = optimizers.registered(run, model, 2e-3)
    if run.bug == "steplr_gamma_given_as_divisor":
        # the bug: "halve the rate every 60 steps" written with gamma as the number to divide by
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=60, gamma=2.0)
    else:
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=60, gamma=0.5)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


STATIONS = 8
KM_PER_DEGREE = 111.19


def _events(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """A catalogue's events: per station float[n, STATIONS, 5] (distance as the network reports it, log10 P/S
    amplitude ratio, log10 low/high spectral ratio, sin and cos of the azimuth), which stations have picks
    (bool[n, STATIONS]: 3-8 of them, the first ones), which report distance in degrees (bool[n, STATIONS], the
    second network's), the local hour (float[n]), the catalogue depth in km (float[n]), the reviewed type (1 a
    blast, float[n]) and the automatic "probable blast" flag (float[n])."""
    blast = (torch.rand(n, generator=g) < 0.35).float()
    hour_quake = 24 * torch.rand(n, generator=g)
    hour_blast = 7 + 12 * torch.rand(n, generator=g)  # quarries blast in the working day
    hour = torch.where(blast > 0, hour_blast, hour_quake)
    true_depth = torch.where(blast > 0, torch.zeros(n), 0.5 + 19.5 * torch.rand(n, generator=g) ** 2)
    depth = (true_depth + 5 * torch.randn(n, generator=g)).clamp(min=0)  # the locator's depth is poor
    magnitude = 1.2 + 1.5 * torch.rand(n, 1, generator=g)
    count = torch.randint(3, STATIONS + 1, (n, 1), generator=g)
    present = torch.arange(STATIONS).view(1, -1) < count
    km = 10 ** (1.2 + 1.0 * torch.rand(n, STATIONS, generator=g))  # 16-160 km
    # blasts: strong P, weak S, and a ripple-fired source rich in low frequencies; both fade with distance
    ps = (-0.35 + 0.3 * blast.view(n, 1) + 0.6 * (torch.log10(km) - 1.7) - 0.1 * (magnitude - 2)
          + 0.35 * torch.randn(n, STATIONS, generator=g))  # fmt: skip
    spectral = (0.1 + 0.25 * blast.view(n, 1) + 1.0 * (torch.log10(km) - 1.7)
                + 0.35 * torch.randn(n, STATIONS, generator=g))  # fmt: skip
    azimuth = 2 * math.pi * torch.rand(n, STATIONS, generator=g)
    degrees = torch.rand(n, STATIONS, generator=g) < 0.7
    reported = torch.where(degrees, km / KM_PER_DEGREE, km)
    picks = torch.stack([reported, ps, spectral, azimuth.sin(), azimuth.cos()], 2)
    picks = torch.where(present.unsqueeze(-1), picks, torch.zeros_like(picks))
    flag = ((hour > 8) & (hour < 18) & (depth < 3)).float()
    return {"picks": picks, "present": present, "degrees": degrees, "hour": hour, "depth": depth, "blast": blast,
            "flag": flag}  # fmt: skip


def _station_inputs(ev: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """Each station's inputs: log10 distance in km and the other four columns."""
    dist = ev["picks"][..., 0]
    if bug != "distance_degrees_read_as_km":
        # the second network reports epicentral distance in degrees
        dist = torch.where(ev["degrees"], dist * KM_PER_DEGREE, dist)
    # the bug: its degrees read as kilometres, a hundred times too close
    logd = torch.where(ev["present"], torch.log10(dist.clamp(min=1e-3)) - 1.7, torch.zeros_like(dist))
    return torch.cat([logd.unsqueeze(-1), ev["picks"][..., 1:]], -1)


def _event_inputs(ev: dict[str, torch.Tensor]) -> torch.Tensor:
    """The event's local hour on the clock circle and its catalogue depth (scaled)."""
    angle = 2 * math.pi * ev["hour"] / 24
    return torch.stack([angle.sin(), angle.cos(), ev["depth"] / 10], 1)


class StationPool(nn.Module):
    """Each station's picks embedded to `width`, attention pooling with a learned query over the present stations,
    and a ReLU head over the pooled picks and the event's own inputs."""

    def __init__(self, width: int, inverted_mask: bool = False) -> None:
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(5, width), nn.ReLU(), nn.Linear(width, width))
        self.query = nn.Parameter(0.1 * torch.randn(1, 1, width))
        self.attention = nn.MultiheadAttention(width, 2, batch_first=True)
        self.head = nn.Sequential(nn.Linear(width + 3, width), nn.ReLU(), nn.Linear(width, 1))
        self.inverted_mask = inverted_mask

    def forward(self, picks: torch.Tensor, present: torch.Tensor, event: torch.Tensor) -> torch.Tensor:
        h = self.embed(picks)
        # key_padding_mask: True where a key is to be ignored
        # the bug: the present stations passed as the mask, so only the padding is attended to
        mask = present if self.inverted_mask else ~present
        pooled, _ = self.attention(self.query.expand(len(h), -1, -1), h, h, key_padding_mask=mask)
        return self.head(torch.cat([pooled.squeeze(1), event], 1)).squeeze(-1)


def quakes(run: Run) -> None:
    """A station-pooling model of `width` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop,
    Adagrad) at `lr` (2e-3). Scored by the held-out AUC of a blast on a later year's reviewed events."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _events(g, 1500), _events(g, 300)
    s, s_v = _station_inputs(tr, run.bug), _station_inputs(va, None)
    e, e_v = _event_inputs(tr), _event_inputs(va)
    y, y_v = tr["blast"], va["blast"]
    if run.bug == "probable_blast_flag_as_label":
        # the bug: the catalogue's automatic "probable blast" flag (a daytime shallow event) taken as the label
        # instead of the analysts' reviewed event type
        y = tr["flag"]
    torch.manual_seed(run.seed)
    model = StationPool(run.k("width", 16), inverted_mask=run.bug == "key_padding_mask_inverted")
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(s_v, va["present"], e_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(s[pick], tr["present"][pick], e[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
