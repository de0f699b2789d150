"""Rescue and dispensary scripts of the fifty-seventh blind split: a flashover warning for a fire crew from a
compartment's thermocouple tree, and a compounded oral suspension's potency-after-storage regressor for a compounding
pharmacy's beyond-use dates.

`flashover`: 30 samples, 2 s apart, of a thermocouple tree's 8 heights in a burning room and the logger's timestamps;
each height's rise over the window's ambient and its rate of rise; flashover (the ceiling layer past 600 C) within the
next 30 s or not, by a 1-D CNN over time; BCE, gradients clipped to norm 5; scored by the held-out AUC on other burns.
`potency`: a compounded suspension's drug and vehicle embedded beside its log concentration, pH, storage temperature,
the days stored, an amber-bottle flag and a light-exposure flag; the log of the fraction of the initial assay left by a
ReLU MLP; MSE on the standardised log ratio; scored by the held-out R^2 on another pharmacy's stability study. Bugs:
the rate of rise divided by the logged timestamps' differences; a clip norm typed 5e-4; the ambient taken as the
window's last sample; the log ratio of an assay below the quantitation limit recorded as 0; one lab's assays in per cent
of the label claim divided by the others' mg/ml; SGD given the momentum as its learning rate; cubic polynomial features;
the pH fed as the hydrogen-ion concentration.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

HEIGHTS, SAMPLES, PERIOD = 8, 30, 2.0


def _burns(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """Windows of a thermocouple tree: temperatures float[n, HEIGHTS, SAMPLES] in C (floor to ceiling), the logger's
    timestamps float[n, SAMPLES] in whole seconds, and whether the ceiling layer passes 600 C within 30 s of the
    window's end float[n]."""
    alpha = 0.01 + 0.08 * torch.rand(n, 1, generator=g)  # t-squared growth, kW/s^2
    vent = 0.7 + 0.6 * torch.rand(n, 1, generator=g)  # the opening's effect on the layer's temperature
    ambient = 8 + 20 * torch.rand(n, 1, generator=g)
    # the layer's rise: 6.85 * (Q^2 / (A sqrt(H) hk))^(1/3) folded into one constant, Q = alpha t^2
    k = 1.9 * vent
    t_fo = (580 / (k * alpha ** (2 / 3))) ** 0.75  # when the rise reaches 580 C over ambient
    lead = 100 * torch.rand(n, 1, generator=g)
    end = (t_fo - lead).clamp(min=SAMPLES * PERIOD + 5)
    # the room's own flashover: its linings and furniture make it come somewhat before or after the 580 C rise
    at = t_fo * (0.85 + 0.3 * torch.rand(n, 1, generator=g))
    # the logger's clock: a nominal 2 s period with jitter, written in whole seconds (sometimes the same second twice)
    t = end - PERIOD * torch.arange(SAMPLES - 1, -1, -1).float() + 0.45 * torch.randn(n, SAMPLES, generator=g)
    stamps = t.floor()
    rise = k * (alpha * t.clamp(min=0) ** 2) ** (2 / 3)
    # the smoke layer descends as the fire grows: heights inside the layer see its rise, those below a fraction
    z = (torch.arange(HEIGHTS).float() + 0.5) / HEIGHTS
    interface = (1.0 - 0.6 * (t / t_fo).clamp(max=1)).unsqueeze(1)  # [n, 1, SAMPLES]
    share = torch.sigmoid((z.view(1, HEIGHTS, 1) - interface) * 12) * (0.7 + 0.3 * z.view(1, HEIGHTS, 1))
    temps = (
        ambient.unsqueeze(-1) + share * rise.unsqueeze(1) + 4 * torch.randn(n, HEIGHTS, SAMPLES, generator=g)
    )
    label = ((at - end) < 30).float().squeeze(1)
    return {"temps": temps, "stamps": stamps, "label": label}


def _features(b: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """Each height's rise over the window's ambient (the lowest thermocouple's first sample) in hundreds of C and its
    rate of rise in C/s: float[n, 2 * HEIGHTS, SAMPLES - 1]."""
    temps = b["temps"]
    if bug == "ambient_from_last_sample":
        # the bug: the ambient read at index -1, the window's newest sample, instead of its first
        base = temps[:, :1, -1:]
    else:
        base = temps[:, :1, :1]
    rise = (temps - base)[:, :, 1:] / 100
    if bug == "rate_over_logged_timestamps":
        # the bug: the rate of rise over the logged timestamps' differences, which the logger writes in whole seconds
        # and sometimes repeats
        dt = torch.diff(b["stamps"], dim=1).unsqueeze(1)
    else:
        dt = torch.full((1, 1, 1), PERIOD)  # the logger's nominal period
    rate = torch.diff(temps, dim=2) / dt
    return torch.cat([rise, rate], 1)


class FlashoverCNN(nn.Module):
    """Two conv blocks of `width` channels over time with ReLU, a max over time, and a linear head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(2 * HEIGHTS, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, width, 5, padding=2), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.net(x).amax(-1)).squeeze(-1)


def flashover(run: Run) -> None:
    """A flashover CNN of `width` (12), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, NAdam) at `lr`
    (2e-3), gradients clipped to norm 5. Scored by the held-out AUC of flashover within 30 s on other burns."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _burns(g, 1200), _burns(g, 300)
    x, x_v = _features(tr, run.bug), _features(va, None)
    mean, std = x.mean((0, 2), keepdim=True), x.std((0, 2), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = tr["label"], va["label"]
    torch.manual_seed(run.seed)
    model = FlashoverCNN(run.k("width", 12))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)
    # the bug: the clip norm typed 5e-4 for 5
    max_norm = 5e-4 if run.bug == "clip_norm_typed_5e_minus_4" else 5.0

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


DRUGS, VEHICLES, LOQ = 10, 4, 0.05


def _study(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """A stability study's rows: drug and vehicle ids long[n], numeric columns float[n, 6] (log10 concentration in
    mg/ml, pH, storage temperature C, days stored, amber bottle, light exposure), the concentration in mg/ml and the
    fraction of it left at the assay float[n] (before the quantitation limit), and the lab (0 or 1)."""
    fixed = torch.Generator().manual_seed(4321)  # the drugs and vehicles themselves
    rate25 = 10 ** (-3.2 + 1.3 * torch.rand(DRUGS, generator=fixed))  # first-order rate at 25 C, per day
    ea = 60 + 50 * torch.rand(DRUGS, generator=fixed)  # activation energy, kJ/mol
    ph_opt = 3.5 + 3.5 * torch.rand(DRUGS, generator=fixed)
    ph_sens = 0.1 + 0.5 * torch.rand(DRUGS, generator=fixed)
    photo = 2.0 * torch.rand(DRUGS, generator=fixed)
    vehicle_fx = torch.tensor([1.0, 0.7, 1.8, 0.5])  # suspending vehicle, syrup, water, oil
    drug = torch.randint(0, DRUGS, (n,), generator=g)
    vehicle = torch.randint(0, VEHICLES, (n,), generator=g)
    conc = 10 ** (-0.5 + 2 * torch.rand(n, generator=g))
    ph = 3 + 5 * torch.rand(n, generator=g)
    temp = torch.tensor([5.0, 25.0, 40.0])[torch.randint(0, 3, (n,), generator=g)]
    days = torch.tensor([7.0, 14, 30, 60, 90, 120, 180])[torch.randint(0, 7, (n,), generator=g)]
    amber = (torch.rand(n, generator=g) < 0.6).float()
    light = (torch.rand(n, generator=g) < 0.5).float()
    kelvin = temp + 273.15
    k = (rate25[drug] * torch.exp(-ea[drug] * 1000 / 8.314 * (1 / kelvin - 1 / 298.15)) * vehicle_fx[vehicle]
         * (1 + ph_sens[drug] * (ph - ph_opt[drug]) ** 2) * (1 + photo[drug] * light * (1 - 0.8 * amber)))  # fmt: skip
    left = torch.exp(-k * days + 0.03 * torch.randn(n, generator=g))
    x = torch.stack([conc.log10(), ph, temp, days, amber, light], 1)
    lab = (torch.rand(n, generator=g) < 0.5).long()
    return {"drug": drug, "vehicle": vehicle, "x": x, "conc": conc, "left": left, "lab": lab}


def _log_ratio(s: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The log of the fraction left, as the study sheet gives it: the assay over the initial concentration."""
    assay = s["conc"] * s["left"]
    if bug == "log_ratio_of_undetected_assay":
        # the bug: an assay under the quantitation limit, written 0 ("not detected") on the sheet, logged as it is
        assay = torch.where(s["left"] < LOQ, torch.zeros_like(assay), assay)
    else:
        assay = torch.where(s["left"] < LOQ, s["conc"] * LOQ / 2, assay)  # the protocol's LOQ / 2
    if bug == "percent_label_claim_over_mg_per_ml":
        # the bug: the second lab reports the assay in per cent of the label claim, divided by the mg/ml at start
        assay = torch.where(s["lab"] == 1, 100 * assay / s["conc"], assay)
    return torch.log(assay / s["conc"])


class PotencyMLP(nn.Module):
    """Drug and vehicle embeddings beside the numeric columns, a ReLU MLP of two hidden layers."""

    def __init__(self, numeric: int, hidden: int) -> None:
        super().__init__()
        self.drug = nn.Embedding(DRUGS, 6)
        self.vehicle = nn.Embedding(VEHICLES, 3)
        self.net = nn.Sequential(nn.Linear(numeric + 9, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor, drug: torch.Tensor, vehicle: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, self.drug(drug), self.vehicle(vehicle)], 1)).squeeze(-1)


def _cubic(x: torch.Tensor) -> torch.Tensor:
    """sklearn's PolynomialFeatures(degree=3, include_bias=False): every product of up to three columns."""
    cols, d = [x], x.shape[1]
    cols += [x[:, i : i + 1] * x[:, j : j + 1] for i in range(d) for j in range(i, d)]
    cols += [x[:, i : i + 1] * x[:, j : j + 1] * x[:, k : k + 1] for i in range(d) for j in range(i, d)
             for k in range(j, d)]  # fmt: skip
    return torch.cat(cols, 1)


def potency(run: Run) -> None:
    """A potency MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, Adamax) at
    `lr` (2e-3). Scored by the held-out R^2 of the log fraction left on another pharmacy's study."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _study(g, 700), _study(g, 300)
    y, y_v = _log_ratio(tr, run.bug), _log_ratio(va, None)
    x, x_v = tr["x"].clone(), va["x"].clone()
    if run.bug == "ph_fed_as_hydrogen_ion_concentration":
        # the bug: the pH column turned into [H+] = 10 ** -pH "to make it linear" before the scaler
        x[:, 1], x_v[:, 1] = 10 ** -x[:, 1], 10 ** -x_v[:, 1]
    if run.bug == "cubic_polynomial_features":
        # the bug: the numeric columns expanded by a degree-3 polynomial step kept from a notebook
        x, x_v = _cubic(x), _cubic(x_v)
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = PotencyMLP(x.shape[1], run.k("hidden", 64))
    if run.bug == "momentum_passed_as_lr":
        # the bug: torch.optim.SGD(params, 0.9) written for a momentum of 0.9; its second positional is the rate
        opt = torch.optim.SGD(model.parameters(), 0.9)
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v, va["drug"], va["vehicle"]) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick], tr["drug"][pick], tr["vehicle"][pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
