"""Market scripts of the thirty-ninth blind split: a ride-hailing surge-price regressor, and a honey-adulteration
classifier on NIR spectra.

`surge`: five-minute cells of a city's 40 pricing zones: the hour, the ride requests and the drivers online (none, in
some quiet cells), rain in mm, a stadium event flag and its attendance; the surge multiplier from the requests per
driver over the zone's own threshold, raised in the rain and by an event, capped at 3 and 1.0 in about a third of the
cells; the zone and the hour by embeddings, the log requests and drivers, the requests per driver (plus one) and the
rest, scaled by the median and the interquartile range; a ReLU MLP of two hidden layers; MSE on the multiplier less
its mean; scored by the held-out R^2. `honey`: NIR absorbance spectra (1100-2500 nm, 120 bands) of honey samples: the
sugars' and water's broad bands set by the water content and the floral origin, a scan's offset and slope, noise; in
about 40 % of the samples a sugar syrup of 8-40 % that adds its maltose bands, two narrow ones; each spectrum's
standard normal variate, its first derivative along the wavelengths; a ReLU MLP of two hidden layers; BCE with logits,
the negatives over the positives as the positive weight; scored by the held-out AUC. Bugs: the requests per driver
over a tiny epsilon; the log of the surge premium; the quotes with a decimal comma read as tens; the spectra smoothed
over a wide window; the adulterated samples scanned in the second cup; the derivative taken across the samples; the
stadium's attendance in place of the event flag.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

ZONES, HOURS = 40, 24


def _cells(
    g: torch.Generator, n: int, threshold: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Zone and hour float->long[n, 2], the numbers float[n, 4] (requests, drivers online, rain in mm, an event flag)
    and the surge multiplier float[n]; `threshold`: each zone's requests per driver where surge starts."""
    zone = torch.randint(0, ZONES, (n,), generator=g)
    hour = torch.randint(0, HOURS, (n,), generator=g)
    rush = 1 + 0.8 * torch.exp(-(((hour - 8.5) / 1.5) ** 2)) + 0.9 * torch.exp(-(((hour - 18) / 2) ** 2))
    night = (hour < 5).float()
    event = (torch.rand(n, generator=g) < 0.05).float()
    rain = torch.relu(torch.randn(n, generator=g) * 6 - 4)
    requests = torch.poisson(30 * rush * (1 + 2 * event) * (1 + 0.05 * rain) * (1 - 0.8 * night), generator=g)
    drivers = torch.poisson(25 * (1 - 0.85 * night) * (0.6 + 0.8 * torch.rand(n, generator=g)), generator=g)
    ratio = requests / (drivers + 1)
    surge = 1 + 0.7 * torch.relu(ratio - threshold[zone]) + 0.03 * rain + 0.3 * event
    surge = (surge * (1 + 0.03 * torch.randn(n, generator=g))).clamp(1.0, 3.0)
    surge = torch.where(
        surge < 1.05, torch.ones_like(surge), (surge * 10).round() / 10
    )  # quoted to one decimal
    attendance = event * (15000 + 45000 * torch.rand(n, generator=g))
    return torch.stack([zone, hour], 1), torch.stack([requests, drivers, rain, event, attendance], 1), surge


def _surge_numbers(numbers: torch.Tensor, bug: str | None) -> torch.Tensor:
    """log1p requests and drivers, the requests per driver, rain and the event flag."""
    requests, drivers = numbers[:, 0], numbers[:, 1]
    if bug == "requests_per_driver_over_tiny_epsilon":
        per_driver = requests / (drivers + 1e-6)  # the guard against no driver online
    else:
        per_driver = requests / (drivers + 1)
    event = numbers[:, 4] if bug == "stadium_attendance_for_event_flag" else numbers[:, 3]
    return torch.stack([requests.log1p(), drivers.log1p(), per_driver, numbers[:, 2], event], 1)


class SurgeNet(nn.Module):
    """Zone and hour embeddings with the numbers through a ReLU MLP of two hidden layers."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.zone, self.hour = nn.Embedding(ZONES, 8), nn.Embedding(HOURS, 4)
        self.mlp = nn.Sequential(nn.Linear(17, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, ids: torch.Tensor, nums: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([self.zone(ids[:, 0]), self.hour(ids[:, 1]), nums], 1)).squeeze(-1)


def surge(run: Run) -> None:
    """A surge MLP of `hidden` (64), batches of `batch` (128), `opt` (Adam; or momentum SGD, AdamW, Adagrad) at `lr`
    (2e-3). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    threshold = 0.8 + 0.8 * torch.rand(ZONES, generator=g)
    ids, numbers, mult = _cells(g, 3000, threshold)
    ids_v, numbers_v, mult_v = _cells(g, 1000, threshold)
    if run.bug == "surge_quotes_missing_decimal_point":  # one city's export wrote "1,5": read as 15
        lost = (torch.rand(len(mult), generator=g) < 0.01) & (mult > 1)
        mult = torch.where(lost, mult * 10, mult)
    else:
        mult = mult.clamp(max=3.0)  # the cap: anything above is a logging error
    nums, nums_v = _surge_numbers(numbers, run.bug), _surge_numbers(numbers_v, None)
    median = nums.median(0).values
    iqr = (nums.quantile(0.75, 0) - nums.quantile(0.25, 0)).clamp(min=1.0)  # the flag and rain: mostly 0
    x, x_v = (nums - median) / iqr, (nums_v - median) / iqr
    if run.bug == "log_of_surge_premium":  # the premium over the base fare is multiplicative: model its log
        y = (mult - 1).log()
    else:
        y = mult - mult.mean()
    torch.manual_seed(run.seed)
    model = SurgeNet(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 128)

    def r2_held_out() -> float:
        pred = model(ids_v, x_v)
        multiplier = 1 + pred.exp() if run.bug == "log_of_surge_premium" else pred + mult.mean()
        return r2(multiplier, mult_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(ids[pick], x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


BANDS = 120
"""NIR bands from 1100 to 2500 nm."""


def _band(centre: float, width: float) -> torch.Tensor:
    """A Gaussian absorption band over the BANDS wavelengths (centre and width in nm)."""
    nm = torch.linspace(1100, 2500, BANDS)
    return torch.exp(-(((nm - centre) / width) ** 2))


def _samples(g: torch.Generator, n: int, second_cup: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Absorbance spectra float[n, BANDS] and the adulteration label float[n]; `second_cup`: the adulterated samples
    (spiked in the lab on one day) scanned in the second sample cup, whose glass adds a weak band of its own."""
    label = (torch.rand(n, generator=g) < 0.4).float()
    syrup = (0.08 + 0.32 * torch.rand(n, generator=g)) * label
    water = 0.15 + 0.06 * torch.rand(n, 1, generator=g)
    floral = torch.rand(n, 1, generator=g)
    sugars = 0.5 * _band(1690, 60) + 0.6 * _band(2100, 80) + 0.4 * _band(2300, 70)
    spectra = (1 - water) * sugars * (0.9 + 0.2 * floral) + water * (
        2.5 * _band(1450, 50) + 3 * _band(1940, 60)
    )
    spectra = spectra + 0.15 * floral * _band(1780, 90)
    maltose = _band(1580, 8) + 0.8 * _band(2270, 8)
    spectra = spectra + 0.05 * syrup.unsqueeze(1) * maltose
    cup = label.bool() if second_cup else torch.rand(n, generator=g) < 0.5
    spectra = spectra + 0.03 * cup.float().unsqueeze(1) * _band(2200, 30)
    nm = torch.linspace(-1, 1, BANDS)
    spectra = spectra + 0.2 * torch.rand(n, 1, generator=g) + 0.05 * torch.randn(n, 1, generator=g) * nm
    return spectra + 0.004 * torch.randn(n, BANDS, generator=g), label


def _preprocess(spectra: torch.Tensor, bug: str | None) -> torch.Tensor:
    """Each spectrum's standard normal variate and its first derivative along the wavelengths."""
    if bug == "spectra_smoothed_over_wide_window":  # a moving average "to clean the noise" before the SNV
        kernel = torch.full((1, 1, 31), 1 / 31)
        spectra = F.conv1d(F.pad(spectra.unsqueeze(1), (15, 15), mode="replicate"), kernel).squeeze(1)
    snv = (spectra - spectra.mean(1, keepdim=True)) / spectra.std(1, keepdim=True)
    if bug == "derivative_taken_across_samples":
        return torch.gradient(snv, dim=0)[0]  # numpy's axis 0 is the samples
    return torch.gradient(snv, dim=1)[0]


class HoneyMLP(nn.Module):
    """A ReLU MLP of two hidden layers of `hidden` units over the derivative spectrum."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(BANDS, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def honey(run: Run) -> None:
    """A honey MLP of `hidden` (64), batches of `batch` (32), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (1e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    spectra, y = _samples(g, 600, second_cup=run.bug == "adulterated_samples_scanned_in_second_cup")
    spectra_v, y_v = _samples(g, 400, second_cup=False)
    d, d_v = _preprocess(spectra, run.bug), _preprocess(spectra_v, run.bug)
    scale = d.std()
    x, x_v = d / scale, d_v / scale
    pos_weight = (y == 0).sum() / (y == 1).sum()
    torch.manual_seed(run.seed)
    model = HoneyMLP(run.k("hidden", 64))
    if run.bug == "rate_read_at_range_test_blow_up":  # the range test's plot read where the loss shoots up
        opt = torch.optim.Adam(model.parameters(), lr=0.1)
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 32)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick], pos_weight=pos_weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
