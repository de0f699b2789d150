"""Workshop scripts of the sixty-second blind split: an organ builder's flue-pipe voicing classifier on the recorded
attack of each pipe, and a fireworks factory's star-colour classifier from the star's composition.

`voicing`: the first 160 ms of a pipe's speech as the voicing room's analyser tracks it (the levels of the first six
harmonics and of the wind noise in 32 frames of 5 ms, in dB against the pipe's own steady fundamental); what the
voicer hears (well voiced, slow speech, too much chiff, overblowing to the octave, windy) by a 1-D CNN over the frames;
cross-entropy; scored by the held-out accuracy on another organ's pipes. `stars`: a star's recipe as a set of up to
seven ingredients with their shares of the mix, and the star's burn speed from the factory's fuse test; the colour the
test-fire shows (red, green, blue, purple, yellow, white, washed out) by a small transformer encoder over the
ingredients; cross-entropy; scored by the held-out accuracy on another factory's stars. Bugs: the four-foot and
two-foot ranks tracked at the eight-foot pitch; each envelope divided by the loudest pipe's peak; the wind pressure of
the voicing jack kept as a channel; the mixing sheet's grams fed where shares were meant; the test stand kept as a
token; the new chlorine donors' codes looked up as the first ingredient; the burn speed of the duds, whose burn time
is 0.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

FRAMES, HARMONICS, FLOOR = 32, 6, -60.0
"""Frames of 5 ms in the attack, harmonics tracked, the analyser's floor in dB against the steady fundamental."""
VOICING = ("voiced", "slow speech", "chiff", "overblown", "windy")
FOOTAGE = torch.tensor([8.0, 4.0, 2.0])
"""The ranks' pitches in feet: an 8' rank speaks at the written note, a 4' an octave above, a 2' two octaves."""


def _pipes(g: torch.Generator, n: int, *, bright: float = 1.0, noise: float = 1.0,
           jack: bool = False) -> dict[str, torch.Tensor]:  # fmt: skip
    """Pipes' attacks: the linear amplitudes of the six harmonics and the wind noise float[n, HARMONICS + 1, FRAMES]
    (in Pa at the microphone), the rank's footage index long[n], the wind pressure in mm of water float[n] and the
    fault long[n]. With `jack`, the faulty pipes were recorded on the voicing jack at the workshop's higher pressure
    while the voiced ones were recorded standing in the organ."""
    fault = torch.randint(0, len(VOICING), (n,), generator=g)
    one = lambda k: (fault == k).float().unsqueeze(1)
    t = (torch.arange(FRAMES).float() + 0.5).unsqueeze(0)  # frames
    rank = torch.randint(0, 3, (n,), generator=g)
    loud = 10 ** ((70 + 25 * torch.rand(n, 1, generator=g) - 10 * rank.unsqueeze(1)) / 20) * 2e-5  # Pa
    # the fundamental's rise: a few frames when voiced, slower when the languid sits low
    rise = 2 + 2.5 * torch.rand(n, 1, generator=g) + one(1) * (2.5 + 5 * torch.rand(n, 1, generator=g))
    tones = []
    slope = bright * (
        4 + 5 * torch.rand(n, 1, generator=g)
    )  # dB lost per harmonic: principals bright, flutes dark
    for k in range(1, HARMONICS + 1):
        level = -slope * (k - 1) + 2 * torch.randn(n, 1, generator=g)
        # overblowing: the pipe jumps to its octave, the second harmonic takes over from the fundamental
        if k == 1:
            level = level - one(3) * (6 + 8 * torch.rand(n, 1, generator=g))
        if k == 2:
            level = level + one(3) * (slope + 4 + 6 * torch.rand(n, 1, generator=g))
        tau = rise * (0.5 + 0.5 / k)
        env = 1 - torch.exp(-t / tau)
        # the chiff: a burst of the upper harmonics in the first frames, small when voiced, strong when not
        burst = (0.4 + one(2) * (1.2 + 1.5 * torch.rand(n, 1, generator=g))) * (k >= 2) * (k <= 5)
        env = env + burst * torch.exp(-((t - 2.5) ** 2) / 4) * (0.5 + torch.rand(n, 1, generator=g))
        tones.append(10 ** (level / 20) * env)
    wind = -38 + 5 * torch.randn(n, 1, generator=g) + one(4) * (8 + 10 * torch.rand(n, 1, generator=g))
    tones.append(10 ** (wind / 20) * (0.6 + 0.4 * torch.exp(-t / 6)))
    amp = (
        torch.stack(tones, 1) * (1 + 0.15 * noise * torch.randn(n, HARMONICS + 1, FRAMES, generator=g)).abs()
    )
    amp = amp * loud.unsqueeze(-1)
    pressure = 70 + 4 * torch.randn(n, generator=g)
    if jack:
        pressure = torch.where(
            fault > 0, 76 + 2 * torch.randn(n, generator=g), 68 + 2 * torch.randn(n, generator=g)
        )
    return {"amp": amp, "rank": rank, "pressure": pressure, "fault": fault}


def _tracks(p: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The analyser's tracks float[n, HARMONICS + 1, FRAMES] in dB against the pipe's steady fundamental."""
    amp = p["amp"]
    if bug == "four_foot_rank_tracked_at_eight_foot_pitch":
        # the bug: every rank analysed at the 8' pitch of its written note, so a 4' pipe's harmonics fall on every
        # second bin (the odd bins read the wind noise) and a 2' pipe's on every fourth
        noise = amp[:, HARMONICS:]
        bins = []
        for k in range(1, HARMONICS + 1):
            step = FOOTAGE[0] / FOOTAGE[p["rank"]]  # 1, 2 or 4
            h = (k / step).long() - 1
            hit = (k % step == 0) & (h < HARMONICS)
            picked = amp.gather(1, h.clamp(0, HARMONICS - 1).view(-1, 1, 1).expand(-1, 1, FRAMES))
            bins.append(torch.where(hit.view(-1, 1, 1), picked, noise))
        amp = torch.cat([torch.cat(bins, 1), noise], 1)
    steady = amp[:, :1, -8:].mean(-1, keepdim=True)
    return (20 * torch.log10(amp / steady)).clamp(min=FLOOR)


class VoicingCNN(nn.Module):
    """Two conv layers over the frames with ReLU and a max-pool between, the frames' mean and max, a linear head."""

    def __init__(self, channels: int, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(channels, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
                                 nn.Conv1d(width, width, 3, padding=1), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(2 * width, len(VOICING))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.net(x)
        return self.head(torch.cat([h.mean(-1), h.amax(-1)], 1))


def voicing(run: Run) -> None:
    """A voicing CNN of `width` (12), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (2e-3). Scored by the held-out accuracy of the voicer's verdict on another organ's pipes."""
    g = torch.Generator().manual_seed(run.seed)
    tr = _pipes(g, 1000, jack=run.bug == "wind_pressure_kept_from_voicing_jack")
    va = _pipes(g, 250, bright=1.2, noise=1.4)
    if run.bug == "envelopes_scaled_by_loudest_pipe":
        # the bug: the amplitudes peak-normalised over the whole set, by the loudest pipe's peak, not each by its own
        peak = tr["amp"].amax()
        x, x_v = tr["amp"] / peak, va["amp"] / peak
    else:
        x, x_v = _tracks(tr, run.bug), _tracks(va, None)
        mean, std = x.mean((0, 2), keepdim=True), x.std((0, 2), keepdim=True)
        x, x_v = (x - mean) / std, (x_v - mean) / std
    if run.bug == "wind_pressure_kept_from_voicing_jack":
        # the bug: the recording's wind pressure kept as a channel, standardised like the others
        p_mean, p_std = tr["pressure"].mean(), tr["pressure"].std()
        col = lambda p: ((p - p_mean) / p_std).view(-1, 1, 1).expand(-1, 1, FRAMES)
        x, x_v = torch.cat([x, col(tr["pressure"])], 1), torch.cat([x_v, col(va["pressure"])], 1)
    y, y_v = tr["fault"], va["fault"]
    torch.manual_seed(run.seed)
    model = VoicingCNN(x.shape[1], run.k("width", 12))
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


INGREDIENTS = ("potassium perchlorate", "potassium nitrate", "strontium nitrate", "strontium carbonate",
               "barium nitrate", "copper oxide", "copper carbonate", "magnalium", "red gum", "dextrin",
               "sodium oxalate", "parlon", "pvc")  # fmt: skip
OLDER_LIST = 11
"""The factory's older code list ends before parlon and PVC, the chlorine donors it took up later."""
STANDS, MAXLEN = 4, 7
PAD = len(INGREDIENTS) + STANDS
"""Token ids: the ingredients, then the test stands, then the padding."""
COLOURS = ("red", "green", "blue", "purple", "yellow", "white", "washed out")
SR, BA, CU, MG, NA, CL = (2, 3), (4,), (5, 6), (7,), (10,), (11, 12)


def _stars(g: torch.Generator, n: int, *, duds: float = 0.0, stands: bool = False,
           donors: float = 1.0) -> dict[str, torch.Tensor]:  # fmt: skip
    """Stars: the ingredients long[n, MAXLEN] (PAD after the last) and their shares float[n, MAXLEN], the batch's grams
    of each float[n, MAXLEN], the fuse test's burn time over 25 mm in s float[n] (0 for the duds, a share `duds`, which
    did not light), the test stand long[n] and the colour long[n]. With `stands`, the blue and purple stars were
    fired on stand 3, where the spectrometer is."""
    k = len(INGREDIENTS)
    share = torch.zeros(n, k)
    share[:, 0] = 0.35 + 0.3 * torch.rand(n, generator=g)  # the oxidiser, perchlorate or nitrate
    nitrate = torch.rand(n, generator=g) < 0.3
    share[nitrate, 1], share[nitrate, 0] = share[nitrate, 0], 0
    share[:, 8] = 0.08 + 0.1 * torch.rand(n, generator=g)  # red gum
    share[:, 9] = 0.04 + 0.02 * torch.rand(n, generator=g)  # dextrin
    colourant = torch.randint(0, 5, (n,), generator=g)  # Sr, Ba, Cu, Sr+Cu, none
    sr = (colourant == 0) | (colourant == 3)
    sr_kind = torch.randint(2, 4, (n,), generator=g)
    share[torch.arange(n), sr_kind] += sr * (0.15 + 0.2 * torch.rand(n, generator=g))
    share[:, 4] += (colourant == 1) * (0.2 + 0.2 * torch.rand(n, generator=g))
    cu_kind = torch.randint(5, 7, (n,), generator=g)
    share[torch.arange(n), cu_kind] += ((colourant == 2) | (colourant == 3)) * (
        0.1 + 0.1 * torch.rand(n, generator=g)
    )
    share[:, 7] = (torch.rand(n, generator=g) < 0.45) * (0.03 + 0.2 * torch.rand(n, generator=g))
    share[:, 10] = (torch.rand(n, generator=g) < 0.12) * (0.02 + 0.08 * torch.rand(n, generator=g))
    donor = torch.randint(11, 13, (n,), generator=g)
    share[torch.arange(n), donor] += (torch.rand(n, generator=g) < 0.6 * donors + 0.2) * (
        0.03 + 0.12 * torch.rand(n, generator=g)
    )
    share = share / share.sum(1, keepdim=True)
    s = lambda idx: share[:, list(idx)].sum(1)
    chlorine = s(CL) + 0.1 * share[:, 0]  # perchlorate gives a little chlorine
    heat = s(MG) * 3 + 0.3
    e = lambda: 0.05 * torch.randn(n, generator=g)
    red = s(SR) * (0.4 + 4 * chlorine.clamp(max=0.15)) + e()
    green = s(BA) * (0.3 + 5 * chlorine.clamp(max=0.15)) + e()
    blue = s(CU) * 8 * (chlorine - 0.06).clamp(min=0) * (1 - 1.5 * s(MG)).clamp(min=0) + e()
    yellow = 4 * s(NA) + e()
    white = s(MG) * (1 - 2 * (s(SR) + s(BA) + s(CU))).clamp(min=0) * 1.5 + e()
    score = torch.stack([red, green, blue, torch.minimum(red, blue) * 2.2, yellow, white], 1)
    colour = score.argmax(1)
    colour = torch.where(score.amax(1) < 0.12 + 0.05 * heat, len(COLOURS) - 1, colour)
    # the recipe as a list of its ingredients, largest first
    order = share.argsort(1, descending=True)[:, :MAXLEN]
    frac = share.gather(1, order)
    ids = torch.where(frac > 0, order, torch.full_like(order, PAD))
    grams = frac * (1000 + 4000 * torch.rand(n, 1, generator=g)).round()
    burn = 25 / (2 + 4 * s(MG) * 10 + 2 * share[:, 8] * 10 + 0.5 * torch.randn(n, generator=g)).clamp(min=1)
    burn = torch.where(torch.rand(n, generator=g) < duds, torch.zeros_like(burn), burn)
    stand = torch.randint(0, STANDS, (n,), generator=g)
    if stands:
        spectro = ((colour == 2) | (colour == 3)) & (torch.rand(n, generator=g) < 0.9)
        stand = torch.where(spectro, STANDS - 1, torch.randint(0, STANDS - 1, (n,), generator=g))
    return {"ids": ids, "frac": frac, "grams": grams, "burn": burn, "stand": stand, "colour": colour}


class StarEncoder(nn.Module):
    """Each ingredient embedded to `width` plus its share's projection, one pre-norm transformer encoder layer over
    the recipe (padding masked), the mean over the ingredients beside the burn speed, a linear head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(PAD + 1, width)
        self.amount = nn.Linear(1, width)
        self.encoder = nn.TransformerEncoderLayer(width, 2, 2 * width, dropout=0.0, batch_first=True,
                                                  norm_first=True)  # fmt: skip
        self.head = nn.Linear(width + 1, len(COLOURS))

    def forward(self, ids: torch.Tensor, amount: torch.Tensor, speed: torch.Tensor) -> torch.Tensor:
        pad = ids == PAD
        h = self.encoder(self.embed(ids) + self.amount(amount.unsqueeze(-1)), src_key_padding_mask=pad)
        keep = (~pad).float().unsqueeze(-1)
        pooled = (h * keep).sum(1) / keep.sum(1)
        return self.head(torch.cat([pooled, speed.unsqueeze(-1)], 1))


def _speed(s: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The fuse test's burn speed in mm/s (0 for the duds)."""
    if bug == "burn_speed_of_duds":
        # the bug: 25 mm over the logged burn time as it is; the duds' time is 0
        return 25 / s["burn"]
    return torch.where(s["burn"] > 0, 25 / s["burn"].clamp(min=1e-6), torch.zeros_like(s["burn"]))


def stars(run: Run) -> None:
    """A star encoder of `width` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, Adamax) at `lr`
    (3e-3). Scored by the held-out accuracy of the colour on another factory's stars."""
    g = torch.Generator().manual_seed(run.seed)
    tr = _stars(g, 1200, duds=0.05, stands=run.bug == "test_stand_kept_as_token")
    va = _stars(g, 250, donors=0.8)
    ids, ids_v = tr["ids"], va["ids"]
    if run.bug == "new_codes_looked_up_as_first_ingredient":
        # the bug: the recipes' codes looked up in the older list with .get(code, 0), so parlon and PVC come back as
        # the list's first entry, potassium perchlorate
        ids = torch.where((ids >= OLDER_LIST) & (ids < len(INGREDIENTS)), torch.zeros_like(ids), ids)
    amount, amount_v = tr["frac"], va["frac"]
    if run.bug == "mixing_grams_fed_as_fractions":
        # the bug: the mixing sheet's grams of each ingredient where the recipe's shares were meant
        amount = tr["grams"]
    if run.bug == "test_stand_kept_as_token":
        # the bug: the test stand appended to the recipe as one more token
        ids = torch.cat([ids, len(INGREDIENTS) + tr["stand"].unsqueeze(1)], 1)
        ids_v = torch.cat([ids_v, len(INGREDIENTS) + va["stand"].unsqueeze(1)], 1)
        amount = torch.cat([amount, torch.ones(len(ids), 1)], 1)
        amount_v = torch.cat([amount_v, torch.ones(len(ids_v), 1)], 1)
    speed, speed_v = _speed(tr, run.bug), _speed(va, None)
    s_mean, s_std = speed.mean(), speed.std()
    speed, speed_v = (speed - s_mean) / s_std, (speed_v - s_mean) / s_std
    y, y_v = tr["colour"], va["colour"]
    torch.manual_seed(run.seed)
    model = StarEncoder(run.k("width", 16))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(ids_v, amount_v, speed_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(ids[pick], amount[pick], speed[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
