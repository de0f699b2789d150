"""Sequence scripts of the eighteenth blind split: a protein secondary-structure tagger (a bidirectional LSTM over
residues), and a crop-yield regressor reading a season of satellite observations.

`protein`: chains of 20-40 residues of 20 kinds padded to 40; each residue's state (helix, strand, coil) follows the
helix and strand propensities of the residues within three places on either side; a residue embedding, a
bidirectional LSTM, a linear layer on both directions' outputs, cross-entropy over the real residues; scored by the
held-out per-residue accuracy. `crop`: fields observed monthly over a 12-month season in four bands (blue, red, near
infrared, short-wave infrared) as stored surface reflectance (integers, 10,000 for full reflectance), cloudy months
masked to 0 in every band; the yield (t/ha) follows the peak and length of the green season and a drought month,
standardised; the bands scaled to reflectance with the NDVI of each clear month as a fifth input, an LSTM and an MLP on
its last state, mean squared error; 540 fields train and 60 are held out for the script's own checks; scored by the R^2
of held-out fields' yields.
Bugs: the padding labelled coil; the forward direction's outputs only; a clip over a spent generator of parameters;
the NDVI of masked months divided by zero; the stored integers fed as reflectance; a plateau scheduler fed the R^2; the
training and holdout indices swapped; every field with a cloudy month dropped from training.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

RESIDUES, CHAIN, COIL = 20, 40, 2
"""Residue kinds (index 20 pads), padded chain length, the coil state (0 helix, 1 strand)."""
HELIX = torch.tensor([1.0] * 7 + [0.0] * 13)
STRAND = torch.tensor([0.0] * 7 + [1.0] * 6 + [0.0] * 7)


def _chains(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Residues long[n, CHAIN] (RESIDUES pads), states long[n, CHAIN] (COIL on padding), lengths long[n]."""
    lengths = torch.randint(20, CHAIN + 1, (n,), generator=g)
    # runs of helix-formers and strand-formers: a residue repeats its neighbour's family 60% of the time
    family = torch.randint(0, 3, (n, CHAIN), generator=g)
    keep = torch.rand(n, CHAIN, generator=g) < 0.6
    for i in range(1, CHAIN):
        family[:, i] = torch.where(keep[:, i], family[:, i - 1], family[:, i])
    offset = torch.tensor([0, 7, 13])[family]
    size = torch.tensor([7, 6, 7])[family]
    res = offset + (torch.rand(n, CHAIN, generator=g) * size).long()
    pad = torch.arange(CHAIN).unsqueeze(0) >= lengths.unsqueeze(1)
    res = res.masked_fill(pad, RESIDUES)
    h = F.pad(HELIX, (0, 1))[res]
    e = F.pad(STRAND, (0, 1))[res]
    window = torch.ones(1, 1, 7)
    hs = F.conv1d(h.unsqueeze(1), window, padding=3).squeeze(1)
    es = F.conv1d(e.unsqueeze(1), window, padding=3).squeeze(1)
    state = torch.full((n, CHAIN), COIL)
    state = torch.where((hs >= 4) & (hs > es), torch.zeros_like(state), state)
    state = torch.where((es >= 3) & (es >= hs), torch.ones_like(state), state)
    return res, state.masked_fill(pad, COIL), lengths


class Tagger(nn.Module):
    """A residue embedding of 24, a bidirectional LSTM of `hidden`, a linear layer to the three states."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Embedding(RESIDUES + 1, 24, padding_idx=RESIDUES)
        self.lstm = nn.LSTM(24, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, 3)

    def forward(self, res: torch.Tensor, forward_only: bool = False) -> torch.Tensor:
        seq, _ = self.lstm(self.embed(res))
        if forward_only:
            # the forward direction's half read twice where both halves were meant
            seq = torch.cat([seq[..., : self.hidden], seq[..., : self.hidden]], -1)
        return self.out(seq)


def protein(run: Run) -> None:
    """A tagger of `hidden` (32), batches of `batch` (32), `opt` (Adam; or AdamW, NAdam, momentum SGD) at `lr` (3e-3),
    optionally clipped by global norm (`clip`). Scored by the held-out per-residue accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    res, states, _ = _chains(g, 2000)
    res_v, states_v, _ = _chains(g, 400)
    real_v = res_v != RESIDUES
    torch.manual_seed(run.seed)
    model = Tagger(run.k("hidden", 32))
    clip = run.k("clip", None)
    if clip is not None:
        params = (
            model.parameters()
            if run.bug == "clip_over_spent_parameter_generator"
            else list(model.parameters())
        )
        opt = torch.optim.SGD(params, lr=run.k("lr", 0.5), momentum=0.9)
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        params = []
        opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)
    forward_only = run.bug == "forward_direction_only"

    def residues_right() -> float:
        pred = model(res_v, forward_only).argmax(-1)
        return float((pred == states_v)[real_v].float().mean())

    for step in range(run.steps):
        pick = run.indices(len(res), batch)
        r, s = res[pick], states[pick]
        if run.bug != "padding_labelled_coil":
            s = s.masked_fill(r == RESIDUES, -100)
        loss = F.cross_entropy(model(r, forward_only).reshape(-1, 3), s.reshape(-1))
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        if not close_step(run, step, loss, model, "val_residue_accuracy", residues_right):
            break


MONTHS, BANDS = 12, 4
"""Observations a season; bands (blue, red, near infrared, short-wave infrared)."""


def _fields(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Stored reflectance float[n, MONTHS, BANDS] (integers, cloudy months all 0) and yields float[n] in t/ha."""
    month = torch.arange(MONTHS).float().unsqueeze(0)
    green_up = 2 + 3 * torch.rand(n, 1, generator=g)
    length = 3 + 4 * torch.rand(n, 1, generator=g)
    peak = 0.4 + 0.5 * torch.rand(n, 1, generator=g)
    drought = torch.randint(0, MONTHS, (n, 1), generator=g).float()
    severity = 0.6 * torch.rand(n, 1, generator=g) * (torch.rand(n, 1, generator=g) < 0.5).float()
    season = torch.sigmoid(2 * (month - green_up)) * torch.sigmoid(2 * (green_up + length - month))
    dry = 1 - severity * torch.exp(-((month - drought) ** 2))
    ndvi = 0.15 + peak * season * dry + 0.02 * torch.randn(n, MONTHS, generator=g)
    red = 0.08 + 0.06 * (1 - ndvi) + 0.01 * torch.rand(n, MONTHS, generator=g)
    nir = red * (1 + ndvi) / (1 - ndvi)
    blue = 0.6 * red + 0.01 * torch.rand(n, MONTHS, generator=g)
    swir = 0.25 - 0.1 * ndvi * dry + 0.01 * torch.rand(n, MONTHS, generator=g)
    bands = torch.stack([blue, red, nir, swir], -1)
    cloudy = torch.rand(n, MONTHS, 1, generator=g) < 0.2
    stored = (10000 * bands).round().masked_fill(cloudy, 0.0)
    in_season = (season * dry * peak).sum(1)
    dry_in_season = (severity * torch.exp(-((drought - green_up - length / 2) ** 2) / 4)).squeeze(1)
    yields = 1.5 + 1.6 * in_season - 4 * dry_in_season + 0.2 * torch.randn(n, generator=g)
    return stored, yields


class YieldLSTM(nn.Module):
    """An LSTM of `hidden` over the monthly inputs, an MLP on its last state to the standardised yield."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(BANDS + 1, hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, (h, _) = self.lstm(x)
        return self.head(h[-1]).squeeze(-1)


def crop(run: Run) -> None:
    """A yield LSTM of `hidden` (32), batches of `batch` (32), `opt` (Adam; or AdamW, Adagrad, RMSprop) at `lr`
    (3e-3), optionally halved by a plateau scheduler on the holdout loss every 25 steps (`plateau`). Scored by the R^2
    of held-out fields' yields."""
    g = torch.Generator().manual_seed(run.seed)
    stored, yields = _fields(g, 600)
    stored_v, yields_v = _fields(g, 400)

    def inputs(s: torch.Tensor) -> torch.Tensor:
        refl = s if run.bug == "stored_integers_fed_as_reflectance" else s / 10000
        red, nir = refl[..., 1], refl[..., 2]
        if run.bug == "ndvi_of_masked_months_divided_by_zero":
            ndvi = (nir - red) / (nir + red)
        else:
            total = nir + red
            ndvi = torch.where(total > 0, (nir - red) / total.clamp(min=1e-6), torch.zeros_like(total))
        return torch.cat([refl, ndvi.unsqueeze(-1)], -1)

    x, x_v = inputs(stored), inputs(stored_v)
    mean, std = yields[:540].mean(), yields[:540].std()
    z = (yields - mean) / std
    train, holdout = torch.arange(540), torch.arange(540, 600)
    if run.bug == "cloudy_fields_dropped_whole":
        # fields with any cloud-masked month left out of training, meant to keep only clean observations
        train = train[(stored[train] > 0).any(-1).all(-1)]
    if run.bug == "train_and_holdout_indices_swapped":
        train, holdout = holdout, train
    torch.manual_seed(run.seed)
    model = YieldLSTM(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    sched = None
    if run.k("plateau", False):
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
    batch = run.k("batch", 32)

    def yields_r2() -> float:
        return r2(model(x_v) * std + mean, yields_v)

    for step in range(run.steps):
        pick = train[run.indices(len(train), batch)]
        loss = F.mse_loss(model(x[pick]), z[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None and run.validating(step):
            with torch.no_grad():
                check = model(x[holdout])
                if run.bug == "plateau_scheduler_fed_r2":
                    sched.step(r2(check, z[holdout]))
                else:
                    sched.step(float(F.mse_loss(check, z[holdout])))
        if not close_step(run, step, loss, model, "val_r2", yields_r2):
            break
