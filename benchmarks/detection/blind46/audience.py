"""Audience scripts of the forty-sixth blind split: a podcast listener drop-off forecaster, and a public pool's
chlorine-demand regressor.

`podcast`: episodes of a network's shows (trailers of 3 to 9 minutes among them): the retention over the first 10
minutes (the share of starts still listening at each minute, its log with an offset of 0.01) and the episode's own
columns (its length, the intro's length, the minute of the first ad break, the number of breaks, the host count and
the show's genre); the retention at minutes 15, 20, 30 and 40 (0 past the episode's end) from each listener's
exponential patience, dented at each ad break; a GRU over the 10 minutes with the episode's columns at every step and
a linear head; MSE on the four retentions; scored by the held-out R^2 on other shows' episodes. `pool`: days of a
city's outdoor pools: the water temperature, the UV index, the bathers, the stabiliser (cyanuric acid), the pH, the
volume, whether the cover went on overnight and the rain; the day's chlorine demand in ppm from sunlight's photolysis
damped by the stabiliser, the bathers' load over the volume and the warm water; standardised; a ReLU MLP of two
hidden layers under a cosine schedule; MSE on the standardised demand; scored by the held-out R^2 on other pools.
Bugs: the trailers' log retention past their end; the head's layers repeated by list multiplication; the retention over
the downloads; the rows filtered to the pools with a pH probe; the demand read from
pump strokes at 1 ml; the dosing log joined a day late; a head optimizer built over every parameter; the cosine schedule's floor typed as 1.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

MINUTES, LATER = 10, (15.0, 20.0, 30.0, 40.0)


def _episodes(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Episodes' retention over the first MINUTES float[n, MINUTES], their columns float[n, 9], the retention at
    LATER float[n, 4] and the show's download-to-start ratio float[n]."""
    genre = torch.randint(0, 4, (n,), generator=g)
    trailer = torch.rand(n, generator=g) < 0.12
    length = torch.where(trailer, 3 + 6 * torch.rand(n, generator=g), 25 + 40 * torch.rand(n, generator=g))
    intro = 0.5 + 2.5 * torch.rand(n, generator=g)
    first_ad = 4 + 10 * torch.rand(n, generator=g)
    breaks = torch.randint(1, 4, (n,), generator=g).float()
    hosts = torch.randint(1, 4, (n,), generator=g).float()
    patience = (torch.tensor([35.0, 20.0, 50.0, 28.0])[genre] * (1 + 0.25 * torch.randn(n, generator=g))).clamp(
        min=5
    ) * (1 - 0.04 * intro)  # fmt: skip
    ad_loss = 0.06 + 0.04 * torch.rand(n, generator=g)

    def retention(t: torch.Tensor) -> torch.Tensor:
        kept = torch.exp(-t / patience.unsqueeze(1)) * (1 - 0.12 * torch.exp(-t / 2))
        for k in range(3):  # each break taken loses a share of those still listening
            at = (first_ad + 12 * k).unsqueeze(1)
            kept = kept * torch.where((t >= at) & (k < breaks).unsqueeze(1), 1 - ad_loss.unsqueeze(1), 1.0)
        return torch.where(t < length.unsqueeze(1), kept, 0.0)

    early = retention(torch.arange(1, MINUTES + 1).float().repeat(n, 1))
    early = (early + 0.01 * torch.randn(n, MINUTES, generator=g)).clamp(0, 1)
    early = torch.where(torch.arange(1, MINUTES + 1).float() < length.unsqueeze(1), early, 0.0)
    later = retention(torch.tensor(LATER).repeat(n, 1))
    cols = torch.cat(
        [torch.stack([length, intro, first_ad, breaks, hosts], 1), F.one_hot(genre, 4).float()], 1
    )
    downloads = 1.3 + 1.7 * torch.rand(4, generator=g)
    return early, cols, later, downloads[genre]


class DropOffGRU(nn.Module):
    """A GRU of `hidden` units over the minutes and a head of four tanh layers for the LATER retentions (the bug's
    head repeats one layer four times)."""

    def __init__(self, inputs: int, hidden: int, *, repeated: bool = False) -> None:
        super().__init__()
        self.gru = nn.GRU(inputs, hidden, batch_first=True)
        if repeated:  # list multiplication repeats the same Linear object
            body: list[nn.Module] = [nn.Linear(hidden, hidden), nn.Tanh()] * 4
        else:
            body = [m for _ in range(4) for m in (nn.Linear(hidden, hidden), nn.Tanh())]
        self.head = nn.Sequential(*body, nn.Linear(hidden, len(LATER)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, -1])


def _podcast_inputs(early: torch.Tensor, cols: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, *,
                    bug: str | None) -> torch.Tensor:  # fmt: skip
    """Each minute's log retention beside the episode's standardised columns float[n, MINUTES, 10]."""
    logged = torch.log(early) if bug == "log_retention_of_ended_trailers" else torch.log(early + 0.01)
    cols = ((cols - mean) / std).unsqueeze(1).expand(-1, MINUTES, -1)
    return torch.cat([logged.unsqueeze(2) / 3, cols], 2)


def podcast(run: Run) -> None:
    """A drop-off GRU of `hidden` (32), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, AdamW) at
    `lr` (3e-3). Scored by the held-out R^2 of the four later retentions on other shows' episodes."""
    g = torch.Generator().manual_seed(run.seed)
    early, cols, later, downloads = _episodes(g, 1500)
    early_v, cols_v, later_v, _ = _episodes(g, 600)
    if run.bug == "retention_over_downloads":  # the host's export divides listeners by downloads, not starts
        later = later / downloads.unsqueeze(1)
    mean, std = cols.mean(0), cols.std(0).clamp(min=1e-6)
    x = _podcast_inputs(early, cols, mean, std, bug=run.bug)
    x_v = _podcast_inputs(early_v, cols_v, mean, std, bug=run.bug)
    torch.manual_seed(run.seed)
    repeated = run.bug == "head_layers_repeated_by_list_multiplication"
    model = DropOffGRU(x.shape[2], run.k("hidden", 32), repeated=repeated)
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v).flatten(), later_v.flatten())

    for step in range(run.steps):
        pick = run.indices(len(later), batch)
        loss = F.mse_loss(model(x[pick]), later[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


def _pool_days(g: torch.Generator, pools: int, days: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                                  torch.Tensor]:  # fmt: skip
    """Pool days float[n, 8] (water in C, UV index, bathers, cyanuric acid in ppm, pH, volume in m3, covered, rain in
    mm), the demand in ppm float[n], each pool's dosing pump's ml per stroke float[n] and whether the pool has a pH
    probe bool[n]."""
    pool = torch.arange(pools).repeat_interleave(days)
    n = len(pool)
    volume = (300 + 900 * torch.rand(pools, generator=g))[pool]
    cya = (10 + 60 * torch.rand(pools, generator=g))[pool]
    covered = (torch.rand(pools, generator=g) < 0.4).float()[pool]
    stroke = (0.5 + 2.5 * torch.rand(pools, generator=g))[pool]
    probe = (torch.arange(pools) < 2)[pool]
    day = torch.arange(days).repeat(pools).float()
    water = 22 + 5 * torch.sin(day / 30) + 1.5 * torch.randn(n, generator=g)
    uv = (6 + 3 * torch.randn(n, generator=g)).clamp(0, 11)
    bathers = (250 + 200 * torch.rand(pools, generator=g))[pool] * (0.4 + uv / 11) * torch.exp(
        0.3 * torch.randn(n, generator=g)
    )  # fmt: skip
    ph = 7.4 + 0.15 * torch.randn(n, generator=g)
    rain = torch.where(torch.rand(n, generator=g) < 0.2, 15 * torch.rand(n, generator=g), 0.0)
    demand = (
        0.9 * uv / (1 + cya / 25) * (1 - 0.3 * covered)
        + 1.6 * bathers / volume
        + 0.04 * (water - 22).clamp(min=0) ** 1.5
        + 0.03 * rain
        + 0.3 * (ph - 7.4)
        + 0.1 * torch.randn(n, generator=g)
    )
    x = torch.stack([water, uv, bathers, cya, ph, volume, covered, rain], 1)
    return x, demand, stroke, probe


class PoolMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def pool(run: Run) -> None:
    """A demand MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at `lr`
    (2e-3) under a cosine schedule. Scored by the held-out R^2 of the daily demand on other pools."""
    g = torch.Generator().manual_seed(run.seed)
    x, demand, stroke, probe = _pool_days(g, 40, 40)
    x_v, demand_v, _, _ = _pool_days(g, 20, 40)
    if run.bug == "demand_from_pump_strokes_at_one_ml":
        # the demand worked back from the pump's stroke count, every pump taken to give 1 ml a stroke
        demand = demand / stroke
    if run.bug == "dose_log_joined_a_day_late":
        # the dosing log stamps each day's chlorine the morning after; joined on its date, shifted with no grouping
        demand = torch.roll(demand, -1)
    if run.bug == "rows_filtered_to_probe_pools":  # the notebook's filter for the pH-probe study left on
        x, demand = x[probe], demand[probe]
    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = demand.mean(), demand.std()
    torch.manual_seed(run.seed)
    model = PoolMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    head_opt = None
    if run.bug == "head_optimizer_built_over_all_parameters":
        # a second optimizer meant to train the output layer ten times faster, built over model.parameters()
        head_opt = torch.optim.SGD(model.parameters(), lr=10 * run.k("lr", 2e-3), momentum=0.9)
        run.hook.register_optimizer(head_opt)
    floor = 1.0 if run.bug == "cosine_floor_typed_as_one" else 1e-5
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=run.steps, eta_min=floor)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, demand_v)

    for step in range(run.steps):
        pick = run.indices(len(demand), batch)
        loss = F.mse_loss(model(x[pick]), (demand[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if head_opt is not None:
            head_opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
