"""Audio scripts of the twenty-seventh blind split: a voice-activity detector on audio frames and a song-popularity
regressor on audio descriptors.

`vad`: frames of float audio (samples in [-1, 1]) summarised as the power in 16 bands over a context of 5 frames; the
noise has a tilted spectrum at a level that varies by recording, speech adds a formant pair at a random band and SNR,
and one frame in sixteen is digital silence (exact zeros, speech or not); a dither of one 16-bit step is added to the
power before the log, the log powers are standardised by the training frames, and a ReLU MLP over the 80 values
gives a logit; BCE; only 300 labelled training frames, with fresh background noise mixed into half of each batch
as augmentation; scored by the held-out AUC. `songs`: a song's tempo, loudness, danceability, energy, valence, duration
in milliseconds, key and the artist's followers; popularity (0-100) follows the artist's pull (seen through the
followers), a danceable energetic sound and a radio-friendly length; an MLP on the standardised descriptors (the key
one-hot) regresses the standardised popularity; MSE; the held-out songs are by artists the training set never saw;
scored by the held-out R^2. Bugs: the log taken without the dither, so silent frames give -inf; the dither given as
1.0 on float samples instead of one 16-bit step; the augmentation noise drawn once when the set is built; the log
powers fed to a deep tanh classifier in decibels, unstandardised; the popularity standardised by multiplying by its spread; the
descriptor table cast to half precision before scaling; Adam's rate typed as 1e-1; an embedding of the artist's id.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

BANDS, CONTEXT = 16, 5
"""Bands of a frame's power spectrum and frames of context the detector sees."""
LSB = (1 / 32768) ** 2
"""The power of one 16-bit step on float samples: the dither added before the log."""


def _noise(g: torch.Generator, n: int) -> torch.Tensor:
    """Background noise power float[n, CONTEXT, BANDS]: a tilted spectrum at a per-recording level."""
    level = 1e-4 * torch.exp(0.8 * torch.randn(n, 1, 1, generator=g))
    tilt = torch.linspace(1.5, 0.5, BANDS)
    return level * tilt * torch.exp(0.3 * torch.randn(n, CONTEXT, BANDS, generator=g))


def _frames(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Band powers float[n, CONTEXT, BANDS] of noisy frames, speech float[n] (digital silence is never speech)."""
    speech = (torch.rand(n, generator=g) < 0.45).float()
    formant = torch.randint(2, 9, (n, 1, 1), generator=g).float()
    band = torch.arange(BANDS).float()
    shape = torch.exp(-((band - formant) ** 2) / 3) + 0.6 * torch.exp(-((band - formant - 4) ** 2) / 3)
    snr = torch.exp(0.9 * torch.randn(n, 1, 1, generator=g) - 0.3)
    syllables = 0.4 + torch.rand(n, CONTEXT, 1, generator=g)
    power = _noise(g, n) + speech.view(n, 1, 1) * 1e-4 * snr * shape * syllables
    silent = torch.rand(n, generator=g) < 1 / 16
    return power.masked_fill(silent.view(n, 1, 1), 0.0), speech * ~silent


class FrameMLP(nn.Module):
    """`depth` hidden layers of `hidden` with `act` over the flattened context, one logit."""

    def __init__(self, hidden: int, depth: int, act: type[nn.Module] = nn.ReLU) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = CONTEXT * BANDS
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), act()]
            width = hidden
        self.net = nn.Sequential(*layers, nn.Linear(width, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.flatten(1))[:, 0]


def vad(run: Run) -> None:
    """A frame classifier of `depth` (2) layers of `hidden` (128) (tanh layers with Xavier weights when `tanh`), batches of `batch` (64), `opt` (Adam; or momentum
    SGD, RMSprop, AdamW) at `lr` (1e-3), optionally decayed by a cosine (`cosine`). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    power, y = _frames(g, 300)
    power_v, y_v = _frames(g, 2000)
    dither = 1.0 if run.bug == "dither_given_on_int16_scale" else LSB

    def log_power(p: torch.Tensor) -> torch.Tensor:
        if run.bug == "log_power_without_dither":
            return torch.log(p)
        return torch.log(p + dither)

    reference = log_power(power + _noise(g, 300))  # the training frames as the augmentation sees them
    mean, std = reference.mean((0, 1)), reference.std((0, 1))
    if run.bug == "log_power_fed_in_db_unscaled":
        # the features taken from a front end that gives decibels (10 log10), and not standardised
        mean, std = torch.zeros(BANDS), torch.full((BANDS,), math.log(10) / 10)
    x_v = (log_power(power_v) - mean) / std
    fixed = _noise(g, 300)  # the bug: the augmentation drawn once, when the training set is built
    torch.manual_seed(run.seed)
    model = FrameMLP(run.k("hidden", 128), run.k("depth", 2), nn.Tanh if run.k("tanh", False) else nn.ReLU)
    if run.k("tanh", False):
        for m in model.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_normal_(m.weight, gain=nn.init.calculate_gain("tanh"))
    opt = optimizers.registered(run, model, 1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch = run.k("batch", 64)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        extra = fixed[pick] if run.bug == "augmentation_noise_drawn_once" else _noise(run.gen, batch)
        extra = extra * (torch.rand(batch, 1, 1, generator=run.gen) < 0.5)  # half of each batch augmented
        x = (log_power(power[pick] + extra) - mean) / std
        loss = F.binary_cross_entropy_with_logits(model(x), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


KEYS, ARTISTS = 12, 240
"""Musical keys and artists (the first 180 in the training songs, the rest only in the held-out ones)."""
NUMERIC = 7
"""Tempo (bpm), loudness (dB), danceability, energy, valence, duration (ms), log10 followers."""


def _songs(
    g: torch.Generator, n: int, artists: tuple[int, int]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Descriptors float[n, NUMERIC] in their units, key long[n], artist long[n], popularity float[n] (0-100)."""
    pull = torch.Generator().manual_seed(4242)
    appeal = torch.randn(ARTISTS, generator=pull)  # each artist's draw, the same in every split of the data
    artist = torch.randint(*artists, (n,), generator=g)
    followers = 10 ** (4.5 + 0.9 * appeal[artist] + 0.4 * torch.randn(n, generator=g))
    tempo = 70 + 110 * torch.rand(n, generator=g)
    dance, energy, valence = (
        torch.rand(n, generator=g),
        torch.rand(n, generator=g),
        torch.rand(n, generator=g),
    )
    loudness = -20 + 14 * energy + 2 * torch.randn(n, generator=g)
    duration = 1000 * (150 + 120 * torch.rand(n, generator=g))
    key = torch.randint(0, KEYS, (n,), generator=g)
    minutes = duration / 60000
    pop = (45 + 12 * appeal[artist] + 25 * (dance * energy - 0.25) - 6 * (minutes - 3.3) ** 2 + 4 * (valence - 0.5)
           + 4 * torch.randn(n, generator=g))  # fmt: skip
    numeric = torch.stack([tempo, loudness, dance, energy, valence, duration, torch.log10(followers)], 1)
    return numeric, key, artist, pop.clamp(0, 100)


class SongMLP(nn.Module):
    """An MLP of `hidden` twice on the descriptors and the key (and the artist's embedding, for the bug)."""

    def __init__(self, hidden: int, artist_embedding: bool) -> None:
        super().__init__()
        self.artist = nn.Embedding(ARTISTS, 8) if artist_embedding else None
        width = NUMERIC + KEYS + (8 if artist_embedding else 0)
        layers: list[nn.Module] = [nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                   nn.Linear(hidden, 1)]  # fmt: skip
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, key: torch.Tensor, artist: torch.Tensor) -> torch.Tensor:
        parts = [x, F.one_hot(key, KEYS).float()]
        if self.artist is not None:
            parts.append(self.artist(artist))
        return self.net(torch.cat(parts, 1))[:, 0]


def songs(run: Run) -> None:
    """A popularity MLP of `hidden` (64), batches of `batch` (128), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at
    `lr` (1e-3), warmed up linearly over 25 steps when `warmup`. Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    num, key, artist, pop = _songs(g, 2000, (0, 180))
    num_v, key_v, artist_v, pop_v = _songs(g, 1000, (180, ARTISTS))
    if run.bug == "descriptor_table_cast_to_half":
        num = num.half()  # to halve the table's memory; durations in ms pass 65504
    mean, std = num.mean(0).float(), num.float().std(0)
    x, x_v = (num.float() - mean) / std, (num_v - mean) / std
    p_mean, p_std = pop.mean(), pop.std()
    t = (pop - p_mean) * p_std if run.bug == "target_multiplied_by_std" else (pop - p_mean) / p_std
    torch.manual_seed(run.seed)
    model = SongMLP(run.k("hidden", 64), run.bug == "artist_id_embedded")
    opt = optimizers.registered(run, model, 1e-3)
    if run.bug == "learning_rate_exponent_typo":
        for group in opt.param_groups:
            group["lr"] *= 100  # the config's 1e-3 typed as 1e-1
    batch = run.k("batch", 128)
    sched = None
    if run.k("warmup", False):
        # a linear warm-up over the first 25 steps
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 25))

    def r2_held_out() -> float:
        return r2(model(x_v, key_v, artist_v) * p_std + p_mean, pop_v)

    for step in range(run.steps):
        pick = run.indices(len(t), batch)
        loss = F.mse_loss(model(x[pick], key[pick], artist[pick]), t[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
