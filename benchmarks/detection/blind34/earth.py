"""Subsurface and catchment scripts of the thirty-fourth blind split: a lithology classifier on well-log curves, and a
flood-peak regressor on catchment attributes.

`lithology`: wells of beds 2-8 samples thick, each of sandstone, shale, limestone, dolomite or coal, logged every half
metre by gamma ray (API), deep resistivity (ohm-m), bulk density (g/cc), neutron porosity and sonic slowness (us/ft),
the resistivity tool writing the LAS null -999.25 where it failed; the nulls filled by the curve's median, the
resistivity logged, every curve standardised; a plain RNN reads a window of 16 samples down to the sample classified
and a linear layer reads its last state; cross-entropy; scored by the held-out accuracy. `floods`: gauged catchments'
area, median annual maximum daily rainfall, baseflow index, urban and forest fractions and mean slope, the median
annual flood a power law of them with lognormal scatter; the logged area, the logged rain volume (area times rain) and
the rest standardised; a ReLU MLP; MSE on the standardised log peak; scored by the held-out R^2 on ungauged
catchments. Bugs: the resistivity's nulls logged unfilled; a debugging filter keeping one well's first metres; the
window fed from the classified sample outward; the second logging run's curves not depth-matched; the loss weighted
by the raw peak; the observed runoff coefficient fed for gauged catchments; the rain volume computed in half precision.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

NULL, WINDOW = -999.25, 16
"""The LAS null value, and the depth samples an RNN reads down to the sample it classifies."""
ROCKS = torch.tensor([
    # gamma ray API, log10 resistivity, density g/cc, neutron porosity, sonic us/ft
    [45.0, 1.3, 2.33, 0.20, 88.0],  # sandstone
    [105.0, 0.6, 2.50, 0.32, 100.0],  # shale
    [28.0, 1.9, 2.66, 0.07, 56.0],  # limestone
    [35.0, 2.1, 2.80, 0.10, 50.0],  # dolomite
    [60.0, 2.4, 1.55, 0.42, 118.0],  # coal
])  # fmt: skip
NOISE = torch.tensor([16.0, 0.35, 0.08, 0.05, 9.0])


def _well(g: torch.Generator, samples: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw log curves float[samples, 5] (resistivity in ohm-m with LAS nulls) and the lithology long[samples]."""
    rocks, depth = [], 0
    while depth < samples:
        rock = int(torch.multinomial(torch.tensor([0.3, 0.35, 0.15, 0.12, 0.08]), 1, generator=g))
        thick = int(torch.randint(2, 9, (1,), generator=g))
        rocks += [rock] * thick
        depth += thick
    litho = torch.tensor(rocks[:samples])
    curves = ROCKS[litho] + NOISE * torch.randn(samples, 5, generator=g)
    curves[:, 0] = curves[:, 0].clamp(min=5)
    curves[:, 1] = 10 ** curves[:, 1]
    failed = torch.rand(samples, generator=g) < 0.02
    curves[:, 1] = torch.where(failed, torch.full_like(curves[:, 1], NULL), curves[:, 1])
    return curves, litho


def _windows(curves: torch.Tensor, litho: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows float[n, WINDOW, 5] in depth order ending at the sample classified, and its lithology long[n]."""
    return curves.unfold(0, WINDOW, 1).transpose(1, 2), litho[WINDOW - 1 :]


class LogRNN(nn.Module):
    """A plain tanh RNN of `hidden` over the window's curves, a linear layer on its last state."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.rnn = nn.RNN(5, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def lithology(run: Run) -> None:
    """A log RNN of `hidden` (32), batches of `batch` (64), `opt` (Adam; or RMSprop, momentum SGD, AdamW) at `lr`
    (3e-3). Scored by the held-out accuracy on two more wells."""
    g = torch.Generator().manual_seed(run.seed)
    wells = [_well(g, 400) for _ in range(6)]
    held = [_well(g, 400) for _ in range(2)]
    if run.bug == "debug_filter_left_on_first_well":
        wells = [(wells[0][0][:120], wells[0][1][:120])]  # the quick look at the first well's top 60 m
    if run.bug == "second_run_curves_not_depth_matched":
        # density, neutron and sonic come from a second logging run, 2 m deeper on the cable; held-out wells are matched
        wells = [(torch.cat([c[:, :2], c[:, 2:].roll(4, 0)], 1), lit) for c, lit in wells]

    def prepared(curves: torch.Tensor) -> torch.Tensor:
        curves = curves.clone()
        res = curves[:, 1]
        if run.bug != "resistivity_nulls_logged_unfilled":
            res = torch.where(res == NULL, res[res != NULL].median(), res)
        curves[:, 1] = torch.log10(res)
        return curves

    pairs = [_windows(prepared(c), lit) for c, lit in wells]
    pairs_v = [_windows(prepared(c), lit) for c, lit in held]
    raw, y = torch.cat([p[0] for p in pairs]), torch.cat([p[1] for p in pairs])
    raw_v, y_v = torch.cat([p[0] for p in pairs_v]), torch.cat([p[1] for p in pairs_v])
    flat = raw.reshape(-1, 5)
    mean, std = flat.mean(0), flat.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    if run.bug == "window_fed_from_classified_sample_outward":
        x = x.flip(1)  # read up the hole: the classified sample first, the RNN's last state 16 samples away
        x_v = x_v.flip(1)
    torch.manual_seed(run.seed)
    model = LogRNN(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
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


def _catchments(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Attributes float[n, 6] (area km2, rain mm, baseflow index, urban, forest, slope %) and the median annual flood
    in m3/s float[n]."""
    area = 10 ** (0.7 + 2.8 * torch.rand(n, generator=g))
    rain = 25 + 70 * torch.rand(n, generator=g)
    bfi = 0.2 + 0.75 * torch.rand(n, generator=g)
    urban = 0.4 * torch.rand(n, generator=g) ** 2
    forest = 0.6 * torch.rand(n, generator=g)
    slope = 0.5 + 15 * torch.rand(n, generator=g) ** 2
    log_q = (-2.6 + 0.82 * area.log() + 1.2 * rain.log() + 1.6 * (1 - bfi).log() + 1.4 * urban - 0.6 * forest
             + 0.12 * slope.log() + 0.25 * torch.randn(n, generator=g))  # fmt: skip
    return torch.stack([area, rain, bfi, urban, forest, slope], 1), log_q.exp()


class FloodMLP(nn.Module):
    """A ReLU MLP of `hidden` twice over the catchment's features, the standardised log peak out."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def floods(run: Run) -> None:
    """A flood MLP of `hidden` (64), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (2e-3). Scored by the held-out R^2 of the log peak on ungauged catchments."""
    g = torch.Generator().manual_seed(run.seed)
    attrs, peak = _catchments(g, 600)
    attrs_v, peak_v = _catchments(g, 400)

    def features(a: torch.Tensor) -> torch.Tensor:
        if run.bug == "rain_volume_in_half_precision":
            a = a.half()  # the attribute table loaded as float16 to save memory
        volume = a[:, 0] * a[:, 1]  # km2 times mm: the storm's rain volume, up to 5e5
        return torch.cat([a[:, :2].log(), volume.log()[:, None], a[:, 2:]], 1).float()

    raw, raw_v = features(attrs), features(attrs_v)
    if run.bug == "runoff_coefficient_from_observed_floods":
        # gauged catchments carry the coefficient from their own floods, ungauged ones the regional mean
        coeff = peak / (attrs[:, 0] * attrs[:, 1])
        raw = torch.cat([raw, coeff.log()[:, None]], 1)
        raw_v = torch.cat([raw_v, torch.full((len(raw_v), 1), float(coeff.log().mean()))], 1)
    mean, std = raw.mean(0), raw.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    t_mean, t_std = peak.log().mean(), peak.log().std()
    y, y_v = (peak.log() - t_mean) / t_std, (peak_v.log() - t_mean) / t_std
    torch.manual_seed(run.seed)
    model = FloodMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        err = (model(x[pick]) - y[pick]) ** 2
        if run.bug == "loss_weighted_by_raw_peak":
            loss = (peak[pick] * err).mean()  # big floods matter most: weighted by the peak in m3/s
        else:
            loss = err.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
