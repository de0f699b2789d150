"""Growing scripts of the fifty-third blind split: a vineyard canopy-vigour regressor from drone multispectral bands,
and a cheese-cave humidity model for the cave's controller.

`canopy`: a vine panel's mean drone reflectances (green, red, red-edge, NIR, delivered as the camera's digital numbers
scaled by 10000), its canopy cover in percent, the block's soil depth and the slope; the winter pruning weight in kg per
vine by a smooth law of them; standardised; a ReLU MLP of three hidden layers; MSE on the standardised weight; scored
by the held-out R^2 on other vineyards' panels. `cave`: the cave's last 12 readings (relative humidity in %, air
temperature in C, the humidifier's duty in %, the door-open minutes) and the controller's setpoint; the humidity at
the next reading by a tanh MLP; MSE on the standardised humidity; scored by the held-out R^2 on other caves. Bugs: the
cover's arcsine-root taken in percent; the pruning weight left in grams; the block's mean vigour target-encoded in sample;
the bands clipped to [0, 1] before the scale factor; a six-deep MLP with sklearn's "logistic" activation; the setpoint
column read as the reading; the humidifier log joined a reading ahead.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers


def _panels(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Panel features float[n, 7] (four bands in DN, cover in %, soil depth m, slope degrees), the
    pruning weight in kg per vine float[n] and the panel's block id long[n] (blocks of about two panels)."""
    u = lambda lo, hi: lo + (hi - lo) * torch.rand(n, generator=g)
    block = torch.randint(0, n // 2, (n,), generator=g)
    block_vigour = 0.6 * torch.randn(n // 2, generator=g)[block]
    vigour = torch.randn(n, generator=g)  # shoot vigour the cover does not show: denser, greener leaves
    lai = (1.2 + 0.8 * block_vigour + 0.5 * torch.randn(n, generator=g)).clamp(0.1, 4)
    cover = 1 - torch.exp(-0.7 * lai)
    soil, slope = u(0.3, 2.0), u(0, 15)
    green = 0.06 + 0.03 * cover + 0.01 * torch.randn(n, generator=g)
    red = 0.10 - 0.06 * cover + 0.01 * torch.randn(n, generator=g)
    edge = 0.18 + 0.08 * cover + 0.02 * vigour + 0.01 * torch.randn(n, generator=g)
    nir = 0.22 + 0.25 * cover * (0.8 + 0.2 * lai) + 0.05 * vigour + 0.02 * torch.randn(n, generator=g)
    bands = (torch.stack([green, red, edge, nir], 1).clamp(0.005, 0.9) * 10000).round()
    weight = (
        0.6 + 0.3 * lai + 0.25 * vigour + 0.25 * soil - 0.015 * slope + 0.2 * torch.randn(n, generator=g)
    ).clamp(min=0.05)
    return torch.cat([bands, torch.stack([100 * cover, soil, slope], 1)], 1), weight, block


class VigourMLP(nn.Module):
    """A ReLU MLP of three hidden layers of `hidden` units."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def _canopy_features(raw: torch.Tensor, bug: str | None) -> torch.Tensor:
    """Reflectances from the DN, and the cover's arcsine-square-root in place of the cover."""
    bands = raw[:, :4]
    if bug == "bands_clipped_before_scale_factor":
        # the bug: the reflectance clip to [0, 1] run on the digital numbers, before the 1/10000 scale factor
        bands = bands.clamp(0, 1) / 10000
    else:
        bands = bands / 10000
    # the cover comes from the classifier in percent; the arcsine-square-root transform wants a fraction
    cover = raw[:, 4] if bug == "asin_sqrt_of_cover_in_percent" else raw[:, 4] / 100
    # the bug (in percent): asin of a root above 1, NaN for every panel over 1 % cover
    return torch.cat([bands, torch.asin(cover.sqrt()).unsqueeze(1), raw[:, 5:]], 1)


def canopy(run: Run) -> None:
    """A vigour MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (1e-3). Scored by the held-out R^2 of the pruning weight on other vineyards' panels."""
    g = torch.Generator().manual_seed(run.seed)
    raw, y, block = _panels(g, 1600)
    raw_v, y_v, _ = _panels(g, 600)
    x, x_v = _canopy_features(raw, run.bug), _canopy_features(raw_v, None)
    if run.bug == "block_vigour_target_encoded_in_sample":
        # the bug: each block's mean pruning weight taken over its own panels, the panel's own weight included; the
        # new vineyards' blocks have no weights yet and get the overall mean
        sums = torch.zeros(int(block.max()) + 1).index_add_(0, block, y)
        counts = torch.zeros(int(block.max()) + 1).index_add_(0, block, torch.ones_like(y))
        x = torch.cat([x, (sums / counts.clamp(min=1))[block].unsqueeze(1)], 1)
        x_v = torch.cat([x_v, y.mean().expand(len(x_v), 1)], 1)
    # a scaler as sklearn's: a constant column is left unscaled
    mean, std = x.mean(0), x.std(0)
    std = torch.where(std > 0, std, torch.ones_like(std))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    if run.bug == "pruning_weight_left_in_grams":
        # the bug: the weight regressed in the grams the pruning sheet gives, neither centred nor scaled
        centre, scale = torch.tensor(0.0), torch.tensor(1e-3)
    torch.manual_seed(run.seed)
    model = VigourMLP(x.shape[1], run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


READINGS = 12


def _caves(g: torch.Generator, n: int, caves: int = 40) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Windows float[n, READINGS * 4 + 1] (RH %, air C, humidifier duty %, door-open minutes per reading, then the
    setpoint %), the next reading's RH float[n] and the duty the controller set on seeing it float[n]."""
    cave = torch.randint(0, caves, (n,), generator=g)
    leak = (0.02 + 0.06 * torch.rand(caves, generator=g))[cave].unsqueeze(1)  # how fast the cave dries
    gain = (0.08 + 0.1 * torch.rand(caves, generator=g))[cave].unsqueeze(
        1
    )  # the humidifier's effect per % duty
    setpoint = 85 + 8 * torch.rand(n, 1, generator=g)
    rh = setpoint + 4 * torch.randn(n, 1, generator=g)
    temp = 10 + 3 * torch.rand(n, 1, generator=g)
    rows = []
    for _ in range(READINGS + 1):
        duty = (5 * (setpoint - rh) + 30 + 2 * torch.randn(n, 1, generator=g)).clamp(0, 100)
        door = torch.where(
            torch.rand(n, 1, generator=g) < 0.15, 5 * torch.rand(n, 1, generator=g), torch.zeros(n, 1)
        )
        t = temp + 0.3 * torch.randn(n, 1, generator=g)
        rows.append(torch.cat([rh, t, duty, door], 1))
        rh = (rh - leak * (rh - 70) + gain * duty * 0.1 - 1.2 * door - 0.3 * (t - 11)
              + 1.5 * torch.randn(n, 1, generator=g)).clamp(50, 100)  # fmt: skip
    x = torch.cat([torch.stack(rows[:READINGS], 1).flatten(1), setpoint], 1)
    return x, rows[READINGS][:, 0], rows[READINGS][:, 2]


ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "logistic": nn.Sigmoid}
"""The activation names the controller's old sklearn MLPRegressor used, mapped to torch's."""


class CaveMLP(nn.Module):
    """An MLP of `depth` hidden layers of `hidden` units and the activation named `act`."""

    def __init__(self, inputs: int, hidden: int, depth: int = 2, act: str = "tanh") -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(depth):
            layers += [nn.Linear(inputs if i == 0 else hidden, hidden), ACTIVATIONS[act]()]
        self.net = nn.Sequential(*layers, nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def cave(run: Run) -> None:
    """A cave MLP of `hidden` (48), batches of `batch` (64), `opt` (Adam; or momentum SGD, NAdam, Adagrad) at `lr`
    (2e-3). Scored by the held-out R^2 of the next reading's humidity on other caves."""
    g = torch.Generator().manual_seed(run.seed)
    x, y, nxt_duty = _caves(g, 1500)
    x_v, y_v, _ = _caves(g, 600)
    if run.bug == "duty_log_joined_forward":
        # the bug: the humidifier log joined to the readings by an as-of merge looking forward, so the last window's
        # duty is the one the controller set on seeing the reading to be predicted; live, only the last set duty is
        # known, as the twin has it
        x = x.clone()
        x[:, (READINGS - 1) * 4 + 2] = nxt_duty
    if run.bug == "setpoint_column_taken_as_reading":
        # the bug: the target read from the log's setpoint column, next to the humidity in the export
        y = x[:, -1].clone()
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    deep = run.bug == "sklearn_logistic_activation_six_deep"
    # the bug: the old model's settings ported as they were, activation="logistic" and six hidden layers
    model = CaveMLP(
        x.shape[1], run.k("hidden", 48), depth=6 if deep else 2, act="logistic" if deep else "tanh"
    )
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
