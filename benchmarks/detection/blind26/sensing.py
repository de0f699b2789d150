"""Sensing scripts of the twenty-sixth blind split: a Wi-Fi indoor-localisation regressor on received signal
strengths and a keystroke-dynamics authenticator on typing timings.

`wifi`: a 40 m x 40 m floor with 24 access points; each fingerprint the strengths (dBm) a phone reads at a spot, by a
log-distance path loss with a wall term and shadowing, an access point below -95 dBm reported as +100 (the public
fingerprint sets' code for "not detected"); the code replaced by -105, the strengths scaled to [0, 1]; an MLP of two
hidden layers regresses the position, standardised, by MSE; 1500 training fingerprints, 600 held out; scored by the
held-out R^2 of the position. `keystrokes`: 16 users typing a ten-key password in eight sessions each, every user with
own hold times and key-to-key latencies, a session drift and a tenth of the flights rolled over (the next key pressed
before the last released, a negative up-down time); the hold times, down-down and up-down times in seconds, each
column standardised; an MLP of three hidden layers names the user, cross-entropy; sessions 1-6 train, 7-8 are held
out; scored by the held-out accuracy. Bugs: a slice of the first six access points' columns left in from debugging; the survey's coordinate
columns read in swapped order; the accumulated gradients of micro-batches not divided by their number; the hidden biases started
negative by an init copied from a sparse autoencoder; the training set cut to each user's first session; the log
taken of the up-down times, some of them negative; the repetitions fed in file order, user after user.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

APS, SIDE, NOT_DETECTED = 24, 40.0, 100.0
"""Access points, the floor's side in metres, the strength the fingerprint sets write for an unheard access point."""


def _fingerprints(g: torch.Generator, n: int, aps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Strengths float[n, APS] in dBm (NOT_DETECTED for an unheard one) and positions float[n, 2] in metres."""
    pos = SIDE * torch.rand(n, 2, generator=g)
    dist = torch.cdist(pos, aps).clamp(min=1.0)
    walls = (pos[:, None, 0] // 10 - aps[None, :, 0] // 10).abs()
    rssi = -38 - 25 * torch.log10(dist) - 3.0 * walls + 3.0 * torch.randn(n, APS, generator=g)
    return torch.where(rssi < -95, torch.full_like(rssi, NOT_DETECTED), rssi), pos


def wifi(run: Run) -> None:
    """A localisation MLP of `hidden` (128), batches of `batch` (64) with gradients accumulated over `accum` (1)
    of them, `opt` (Adam; or momentum SGD, RMSprop, Adamax) at `lr` (2e-3). Scored by the held-out R^2 of the
    position."""
    g = torch.Generator().manual_seed(run.seed)
    aps = SIDE * torch.rand(APS, 2, generator=g)
    rssi, pos = _fingerprints(g, 1500, aps)
    rssi_v, pos_v = _fingerprints(g, 600, aps)

    def scaled(r: torch.Tensor) -> torch.Tensor:
        r = torch.where(r == NOT_DETECTED, torch.full_like(r, -105.0), r)
        return (r + 105) / 70

    x, x_v = scaled(rssi), scaled(rssi_v)
    if run.bug == "debug_slice_of_access_points_left_in":
        x, x_v = x[:, :6], x_v[:, :6]  # a slice from a debugging print of the first access points, left in
    if run.bug == "longitude_latitude_columns_swapped":
        pos = pos.flip(1)  # the survey's columns read as (y, x) where the held-out set's are (x, y)
    mu, sd = pos.mean(0), pos.std(0)
    y, y_v = (pos - mu) / sd, (pos_v - mu) / sd
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 128)
    model = nn.Sequential(nn.Linear(x.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 2))  # fmt: skip
    opt = optimizers.registered(run, model, 2e-3)
    batch, accum = run.k("batch", 64), run.k("accum", 1)

    def r2_position() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        opt.zero_grad()
        total = torch.zeros(())
        for _ in range(accum):  # gradients accumulated over micro-batches to the recipe's batch
            pick = run.indices(len(x), batch)
            loss = F.mse_loss(model(x[pick]), y[pick])
            if run.bug != "accumulated_grads_not_divided":
                loss = loss / accum
            loss.backward()
            total = total + loss.detach()
        opt.step()
        if not close_step(run, step, total, model, "val_r2", r2_position):
            break


USERS, KEYS, SESSIONS, PER_SESSION = 16, 10, 8, 12
"""Users, keys of the password, sessions per user, repetitions per session."""


def _typing(
    g: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Hold times float[n, KEYS], down-down and up-down times float[n, KEYS - 1] (seconds), users long[n] and
    sessions long[n], for n = USERS * SESSIONS * PER_SESSION repetitions."""
    hold_mu = 0.06 + 0.08 * torch.rand(USERS, KEYS, generator=g)
    gap_mu = 0.02 + 0.25 * torch.rand(USERS, KEYS - 1, generator=g)
    user = torch.arange(USERS).repeat_interleave(SESSIONS * PER_SESSION)
    session = torch.arange(SESSIONS).repeat_interleave(PER_SESSION).repeat(USERS)
    n = len(user)
    drift = torch.exp(0.08 * torch.randn(USERS, SESSIONS, 1, generator=g))[user, session]
    hold = hold_mu[user] * drift * torch.exp(0.15 * torch.randn(n, KEYS, generator=g))
    gap = gap_mu[user] * drift * torch.exp(0.2 * torch.randn(n, KEYS - 1, generator=g))
    rolled = torch.rand(n, KEYS - 1, generator=g) < 0.1
    up_down = torch.where(rolled, -0.5 * hold[:, :-1] * torch.rand(n, KEYS - 1, generator=g), gap)
    down_down = hold[:, :-1] + up_down
    return hold, down_down, up_down, user, session


def keystrokes(run: Run) -> None:
    """A keystroke authenticator MLP of `hidden` (64) per layer, batches of `batch` (32), `opt` (Adam; or momentum
    SGD, NAdam, AdamW) at `lr` (2e-3), optionally decayed by a cosine (`cosine`). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    hold, down_down, up_down, user, session = _typing(g)
    if run.bug == "log_of_up_down_times":
        up_down = torch.log(up_down)  # timings are skewed: logged, as the hold times could be
    features = torch.cat([hold, down_down, up_down], 1)
    train = session < (1 if run.bug == "training_cut_to_first_session" else 6)
    held = session >= 6
    mu, sd = features[train].mean(0), features[train].std(0)
    features = (features - mu) / sd
    x, y, x_v, y_v = features[train], user[train], features[held], user[held]
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 64)
    act = nn.ReLU
    model = nn.Sequential(nn.Linear(features.shape[1], hidden), act(), nn.Linear(hidden, hidden), act(),
                          nn.Linear(hidden, hidden), act(), nn.Linear(hidden, hidden), act(),
                          nn.Linear(hidden, USERS))  # fmt: skip
    if run.bug == "hidden_bias_init_from_sparse_autoencoder":
        for layer in list(model)[:-1]:
            if isinstance(layer, nn.Linear):
                nn.init.constant_(layer.bias, -2.0)  # the sparse autoencoder's init: units start mostly off
    opt = optimizers.registered(run, model, 2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        if run.bug == "loader_without_shuffle":
            pick = (step * batch + torch.arange(batch)) % len(x)  # the rows in file order, user after user
        else:
            pick = run.indices(len(x), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
