"""Nature scripts of the fortieth blind split: a dengue-case forecaster from weather and past counts, and a lake
chlorophyll-a regressor from satellite bands.

`dengue`: 26 weeks of a district's reported dengue cases, rainfall (mm), mean temperature (C) and humidity (%); the
mosquitoes breed some weeks after rain in warm weeks, so the cases follow the weather with a lag of 4-8 weeks on top
of their own momentum; each district its own population scale; the target the cases 4 weeks after the window; the
counts as log(1 + cases), the weather standardised; a GRU over the weeks and a linear layer on its last state giving
the log rate; Poisson NLL on the counts; scored by the held-out R^2 of log(1 + cases).
`lake`: match-ups of lake samples with a satellite overpass: eight surface reflectances (443-865 nm), the sun's
zenith and the scene's aerosol optical thickness; the chlorophyll-a (mg/m3, log-normal over oligotrophic to
hypertrophic lakes) deepens the 443 and 665 nm absorption and lifts the 705 nm peak, the sediment lifts the red and
near-infrared, the aerosol adds a haze; a cloud-masked tenth of the pixels read 0 in every band and are dropped; the
inputs the reflectances, the normalised difference chlorophyll index (705 against 665 nm), the sun and the haze,
standardised; a ReLU MLP of two hidden layers; MSE on log10 chlorophyll, standardised; scored by the held-out R^2.
Bugs: the Poisson loss given the log rate as a rate; the counts fed raw; the training windows' counts back-filled;
the cloud-masked pixels left in for the index; the product's fill value left in; the match-ups of the summer blooms only;
the green and red bands swapped.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

WEEKS, AHEAD = 26, 4
"""Weeks of a dengue window, and the weeks ahead its target lies."""


def _districts(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Weekly records float[n, WEEKS + AHEAD, 4] (cases, rainfall, temperature, humidity)."""
    total = WEEKS + AHEAD + 12
    t = torch.arange(total).float()
    phase = 52 * torch.rand(n, 1, generator=g)
    season = torch.sin(2 * torch.pi * (t + phase) / 52)
    rain = (40 + 60 * season + 30 * torch.randn(n, total, generator=g)).clamp(min=0)
    temp = 26 + 3 * torch.sin(2 * torch.pi * (t + phase - 4) / 52) + torch.randn(n, total, generator=g)
    humid = 70 + 0.15 * rain + 3 * torch.randn(n, total, generator=g)
    scale = torch.exp(1.5 + 2.5 * torch.rand(n, 1, generator=g))
    drive = torch.zeros(n, total)
    lag = 6
    drive[:, lag:] = 0.012 * rain[:, :-lag] + 0.25 * (temp[:, :-lag] - 26)
    log_rate = torch.zeros(n, total)
    level = torch.zeros(n)
    for i in range(total):
        level = 0.8 * level + 0.2 * drive[:, i] + 0.1 * torch.randn(n, generator=g)
        log_rate[:, i] = level
    cases = torch.poisson(scale * torch.exp(log_rate), generator=g)
    return torch.stack([cases, rain, temp, humid], -1)[:, 12:]


class DengueGRU(nn.Module):
    """A GRU over the weeks and a linear layer on its last state, giving the log of the expected cases."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.rnn = nn.GRU(4, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1]).squeeze(-1)


def _windows(records: torch.Tensor, as_of: bool, raw_counts: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The WEEKS-week inputs and the cases AHEAD weeks after the window; `as_of`: the counts as the surveillance
    system held them on the window's last day, its last three weeks still missing the late reports (20, 45, 70 %
    of the cases are reported within one, two, three weeks), rather than as back-filled since."""
    weather = records[:, :, 1:]
    weather = (weather - torch.tensor([40.0, 26.0, 76.0])) / torch.tensor([50.0, 2.5, 8.0])
    counts = records[:, :WEEKS, 0].clone()
    if as_of:
        counts[:, -3:] = torch.round(counts[:, -3:] * torch.tensor([0.7, 0.45, 0.2]))
    counts = counts if raw_counts else torch.log1p(counts)
    x = torch.cat([counts.unsqueeze(-1), weather[:, :WEEKS]], -1)
    return x, records[:, WEEKS + AHEAD - 1, 0]


def dengue(run: Run) -> None:
    """A dengue GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (3e-3), optionally decayed by a cosine (`cosine`). Scored by the held-out R^2 of log(1 + cases)."""
    g = torch.Generator().manual_seed(run.seed)
    records, records_v = _districts(g, 1000), _districts(g, 500)
    as_of = run.bug != "trained_on_backfilled_counts"  # the forecaster is served the counts as of the day
    x, cases = _windows(records, as_of, raw_counts=run.bug == "case_counts_fed_raw")
    x_v, cases_v = _windows(records_v, True, raw_counts=run.bug == "case_counts_fed_raw")
    torch.manual_seed(run.seed)
    model = DengueGRU(run.k("hidden", 32))
    opt = optimizers.registered(run, model, 3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch = run.k("batch", 64)
    as_rate = run.bug == "poisson_loss_told_log_rate_is_rate"

    def r2_held_out() -> float:
        out = model(x_v)
        expected = torch.log1p(out.clamp(min=0)) if as_rate else torch.log1p(torch.exp(out))
        return r2(expected, torch.log1p(cases_v))

    for step in range(run.steps):
        pick = run.indices(len(cases), batch)
        loss = F.poisson_nll_loss(model(x[pick]), cases[pick], log_input=not as_rate)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


BANDS = (443, 490, 560, 665, 705, 740, 783, 865)
"""The sensor's bands in nm, in the product's order."""


def _matchups(g: torch.Generator, n: int, summer_only: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Match-ups float[n, 10] (eight reflectances, the sun's zenith in degrees, the aerosol optical thickness) and
    log10 chlorophyll-a float[n], the cloud-masked pixels (every band 0) included; `summer_only`: the match-ups of the
    July-August bloom campaigns only."""
    log_chl = -0.5 + 2.5 * torch.rand(n, generator=g)
    if summer_only:
        log_chl = 1.2 + 0.8 * torch.rand(n, generator=g)
    chl = 10**log_chl
    sediment = 2 + 20 * torch.rand(n, generator=g)
    water = torch.tensor([0.012, 0.014, 0.018, 0.006, 0.004, 0.002, 0.0015, 0.001])
    absorb = torch.tensor([1.0, 0.7, 0.2, 0.6, 0.1, 0.0, 0.0, 0.0]) * 0.004
    peak = torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0, 0.4, 0.0, 0.0]) * 0.0025
    scatter = torch.tensor([0.3, 0.4, 0.6, 0.5, 0.5, 0.4, 0.35, 0.3]) * 0.0008
    c = torch.log1p(chl).unsqueeze(-1)
    refl = water - absorb * c + peak * c + scatter * sediment.unsqueeze(-1)
    aot = 0.05 + 0.3 * torch.rand(n, generator=g)
    haze = aot.unsqueeze(-1) * torch.tensor([0.01, 0.008, 0.006, 0.004, 0.0035, 0.003, 0.003, 0.0025])
    refl = refl + 0.7 * haze + 0.0004 * torch.randn(n, 8, generator=g)
    zenith = 25 + 40 * torch.rand(n, generator=g)
    refl = refl * (1 + 0.1 * (zenith.unsqueeze(-1) - 45) / 45)
    cloud = torch.rand(n, generator=g) < 0.1
    refl[cloud] = 0.0
    return torch.cat([refl, zenith.unsqueeze(-1), aot.unsqueeze(-1)], -1), log_chl


def _lake_inputs(m: torch.Tensor, bug: str | None) -> torch.Tensor:
    """The reflectances, the chlorophyll index (705 against 665 nm), the sun and the haze."""
    refl = m[:, :8]
    if bug == "green_and_red_bands_swapped":  # 560 and 665 nm read from each other's columns
        refl = refl[:, [0, 1, 3, 2, 4, 5, 6, 7]]
    ndci = (refl[:, 4] - refl[:, 3]) / (refl[:, 4] + refl[:, 3])
    return torch.cat([refl * 100, ndci.unsqueeze(-1), m[:, 8:]], -1)


class LakeMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden`."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(11, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                  nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).squeeze(-1)


def lake(run: Run) -> None:
    """A lake MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (2e-3). Scored by the held-out R^2 on log10 chlorophyll."""
    g = torch.Generator().manual_seed(run.seed)
    m, log_chl = _matchups(g, 1500, summer_only=run.bug == "matchups_from_summer_bloom_campaigns")
    m_v, log_chl_v = _matchups(g, 600, summer_only=False)
    if (
        run.bug == "fill_value_minus_9999_left_in_bands"
    ):  # the product's _FillValue where the cloud mask is set
        m[:, :8] = torch.where(
            m[:, :8].abs().sum(-1, keepdim=True) > 0, m[:, :8], torch.full_like(m[:, :8], -9999.0)
        )
    if run.bug not in ("cloud_masked_pixels_kept_for_index", "fill_value_minus_9999_left_in_bands"):
        # the cloud mask's pixels read 0 everywhere: dropped
        keep = m[:, :8].abs().sum(-1) > 0
        m, log_chl = m[keep], log_chl[keep]
    keep_v = m_v[:, :8].abs().sum(-1) > 0
    m_v, log_chl_v = m_v[keep_v], log_chl_v[keep_v]
    raw, raw_v = _lake_inputs(m, run.bug), _lake_inputs(m_v, None)
    mean, std = raw.mean(0), raw.std(0)
    x, x_v = (raw - mean) / std, (raw_v - mean) / std
    c_mean, c_std = log_chl.mean(), log_chl.std()
    y = (log_chl - c_mean) / c_std
    torch.manual_seed(run.seed)
    model = LakeMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * c_std + c_mean - log_chl_v.mean(), log_chl_v - log_chl_v.mean())

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
