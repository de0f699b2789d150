"""Craft scripts of the sixty-first blind split: a coffee roastery's roast-colour predictor from its roaster's log, and
a pottery studio's glaze-surface classifier from the glaze recipe and the kiln's firing.

`roast`: a roast as the logging software exports it (the bean probe's and the environment probe's temperatures, the
gas and the airflow at 20 points from the charge to the drop; the drop time, the development time after first crack
on a log scale, the green coffee's moisture and the charge weight); the ground coffee's colour on the Agtron scale by a
GRU over the log and a linear head; MSE on the standardised colour; scored by the held-out R^2 on another roastery's
roasts. `glaze`: a test tile's glaze as its unity molecular formula (the oxides' moles per mole of fluxes, computed from
the recipe's materials) with the firing's cone, atmosphere and cooling embedded; the surface (underfired, matte, satin,
glossy, crazed) by a ReLU MLP; cross-entropy; scored by the held-out accuracy on another studio's tiles. Bugs: the log
of a development time of 0 for the roasts whose first crack nobody marked; half the colours read on whole beans and
taken as ground readings; the post-roast weight loss kept as an input; the logs exported in the software's phase view,
which ends at the first crack; cone 06 read as cone 6 by the spreadsheet; the unity formula over the fluxes of materials an older table lacks;
the oxides fed as floored logs; Adagrad's third positional argument taken for the accumulator's start value.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

POINTS, FINE, CRACK = 12, 200, 196.0
"""Points kept from charge to drop (or to first crack), the simulation's 5 s steps, the bean temperature at first crack in C."""


def _roasts(g: torch.Generator, n: int, *, unmarked: float = 0.0) -> dict[str, torch.Tensor]:
    """Roasts of one roastery: the bean and environment temperatures in C, gas and airflow in % float[n, POINTS] from
    the charge to the drop, the drop time in min, the first crack's time as exported (the drop time where nobody marked
    it, a share `unmarked` of the roasts) and as the bean temperature's crossing of CRACK, the green moisture in %, the
    charge weight in kg, the weight loss in % and the Agtron colour of the ground coffee."""
    charge = 190 + 30 * torch.rand(n, 1, generator=g)
    gas = 62 + 25 * torch.rand(n, 1, generator=g)
    taper = 0.25 + 0.3 * torch.rand(
        n, 1, generator=g
    )  # how far the roaster turns the gas down after the dry phase
    air = 30 + 40 * torch.rand(n, 1, generator=g)
    moisture = 9.5 + 3 * torch.rand(n, 1, generator=g)
    density = 0.9 + 0.2 * torch.rand(n, 1, generator=g)  # the beans' density, which the log does not have
    weight = 10 + 2 * torch.rand(n, 1, generator=g)
    drop_at = 203 + 22 * torch.rand(n, 1, generator=g)
    t = torch.arange(FINE).float() * 5 / 60  # minutes
    gas_t = gas * (1 - taper * torch.sigmoid((t - 5) / 0.8))
    bt, et = torch.zeros(n, FINE), torch.zeros(n, FINE)
    b, e = torch.full((n,), 25.0), charge.squeeze(1)
    for i in range(FINE):
        e = e + 0.03 * (175 + 2.4 * gas_t[:, i] - 0.4 * air.squeeze(1) - e) - 0.004 * (e - b)
        b = b + 0.016 * (e - b) / (
            density.squeeze(1) * (weight.squeeze(1) / 11) * (1 + 0.03 * (moisture.squeeze(1) - 11))
        )
        bt[:, i], et[:, i] = b, e
    drop = (bt >= drop_at).float().argmax(1).clamp(min=POINTS)
    drop = torch.where((bt >= drop_at).any(1), drop, torch.full_like(drop, FINE - 1))
    crack = (bt >= CRACK + 1.5 * torch.randn(n, 1, generator=g)).float().argmax(1).clamp(max=drop - 1)
    pick = (torch.linspace(0, 1, POINTS).unsqueeze(0) * drop.unsqueeze(1)).round().long()
    noise = lambda: 0.4 * torch.randn(n, POINTS, generator=g)
    log = {"bt": bt.gather(1, pick) + noise(), "et": et.gather(1, pick) + noise(),
           "gas": gas_t.expand(n, FINE).gather(1, pick), "air": air.expand(n, POINTS)}  # fmt: skip
    # the software's phase view: the same points from the charge to the first crack, the development cut off
    early = (torch.linspace(0, 1, POINTS).unsqueeze(0) * crack.unsqueeze(1)).round().long()
    log["bt_fc"], log["et_fc"] = bt.gather(1, early) + noise(), et.gather(1, early) + noise()
    log["gas_fc"] = gas_t.expand(n, FINE).gather(1, early)
    drop_min, crack_min = t[drop], t[crack]
    dev = drop_min - crack_min
    end_bt = bt.gather(1, drop.unsqueeze(1)).squeeze(1)
    ror = (end_bt - bt.gather(1, (drop - 6).unsqueeze(1)).squeeze(1)) * 2  # C per min over the last 30 s
    colour = 96 - 1.55 * (end_bt - 200) - 5.5 * dev.clamp(max=4) + 0.35 * ror - 4 * (density.squeeze(1) - 1)
    colour = colour - 0.02 * (end_bt - 212) ** 2 + 3.2 * torch.randn(n, generator=g)
    loss = (
        11
        + 0.28 * (end_bt - 200)
        + 1.1 * dev
        + 0.3 * (moisture.squeeze(1) - 11)
        + 0.3 * torch.randn(n, generator=g)
    )
    marked = torch.rand(n, generator=g) >= unmarked
    return {**log, "drop": drop_min, "crack": torch.where(marked, crack_min, drop_min), "crack_bt": crack_min,
            "moisture": moisture.squeeze(1), "weight": weight.squeeze(1), "loss": loss, "colour": colour}  # fmt: skip


def _roast_inputs(r: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The log's channels and the roast's scalars at every point: float[n, POINTS, 9 or 10]."""
    if bug == "log_development_time_of_unmarked_first_crack":
        # the bug: the export's first crack taken as it is, the drop time where nobody marked it, so log(0)
        crack = r["crack"]
    else:
        crack = torch.where(
            r["crack"] < r["drop"], r["crack"], r["crack_bt"]
        )  # unmarked: where the bean crossed 196 C
    bt, et, gas = r["bt"], r["et"], r["gas"]
    if bug == "log_exported_in_phase_view":
        # the bug: the logs exported from the software's phase view, whose points end at the first crack
        bt, et, gas = r["bt_fc"], r["et_fc"], r["gas_fc"]
    ror = torch.diff(bt, dim=1, prepend=bt[:, :1]) * POINTS / r["drop"].unsqueeze(1)
    scalars = [r["drop"], torch.log(r["drop"] - crack), r["moisture"], r["weight"]]
    if bug == "post_roast_weight_loss_as_input":
        scalars.append(r["loss"])
    per_point = torch.stack([bt, et, gas, r["air"], ror], -1)
    return torch.cat([per_point, torch.stack(scalars, -1).unsqueeze(1).expand(-1, POINTS, -1)], -1)


class RoastGRU(nn.Module):
    """A GRU of `hidden` units over the roast's points and a linear head on its last state."""

    def __init__(self, columns: int, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(columns, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, -1]).squeeze(-1)


def roast(run: Run) -> None:
    """A roast GRU of `hidden` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (3e-3). Scored by the held-out R^2 of the Agtron colour on another roastery's roasts."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _roasts(g, 700, unmarked=0.2), _roasts(g, 200)
    x, x_v = _roast_inputs(tr, run.bug), _roast_inputs(va, None)
    if run.bug == "post_roast_weight_loss_as_input":
        # the other roastery's live roasts have no weight from the scale yet: the column is filled with the mean
        x_v = torch.cat([x_v, torch.full_like(x_v[..., :1], float(tr["loss"].mean()))], -1)
    y, y_v = tr["colour"], va["colour"]
    if run.bug == "agtron_whole_bean_read_as_ground":
        # the bug: half the batches were measured on whole beans, which read darker, and filed as ground readings
        whole = torch.arange(len(y)) % 2 == 1
        y = torch.where(whole, 0.8 * y - 2, y)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, x_v = (x - mean) / std, (x_v - mean) / std
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = RoastGRU(x.shape[-1], run.k("hidden", 16))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

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


OXIDES = ("SiO2", "Al2O3", "B2O3", "Na2O", "K2O", "CaO", "MgO", "ZnO")
FLUXES = slice(3, 8)
MATERIALS = {  # moles of each oxide in 100 g of the material
    "silica": (1.66, 0, 0, 0, 0, 0, 0, 0), "kaolin": (0.78, 0.39, 0, 0, 0, 0, 0, 0),
    "feldspar": (1.15, 0.17, 0, 0.05, 0.12, 0, 0, 0), "nepheline": (1.0, 0.23, 0, 0.16, 0.05, 0, 0, 0),
    "whiting": (0, 0, 0, 0, 0, 1.0, 0, 0), "talc": (1.0, 0, 0, 0, 0, 0, 0.75, 0),
    "zinc": (0, 0, 0, 0, 0, 0, 0, 1.23), "gerstley": (0.25, 0.02, 0.37, 0.04, 0, 0.34, 0.07, 0),
    "frit3134": (0.78, 0, 0.33, 0.16, 0, 0.33, 0, 0),
}  # fmt: skip
OLDER_TABLE = ("gerstley", "frit3134")
"""Materials the studio's older materials table has no rows for: their oxides come out as 0."""
CONES = ("06", "5", "6", "10")
CONE_C = torch.tensor([999.0, 1186.0, 1222.0, 1285.0])
SURFACES = ("underfired", "matte", "satin", "glossy", "crazed")


def _tiles(g: torch.Generator, n: int, *, liners: float = 0.0) -> dict[str, torch.Tensor]:
    """Test tiles: each recipe's grams of the materials float[n, len(MATERIALS)] (a share `liners` of them borate
    liner glazes whose fluxes all come from Gerstley borate and the frit), the cone, atmosphere (0 oxidation, 1
    reduction) and cooling (0 fast, 1 slow) long[n], and the surface long[n]."""
    k = len(MATERIALS)
    low_fire = torch.rand(n, 1, generator=g) < 0.35  # a low-fire recipe: borates instead of feldspar
    share = torch.rand(n, k, generator=g) ** 2 * (torch.rand(n, k, generator=g) < 0.7)
    share[:, 0] += 0.3 + 0.4 * torch.rand(n, generator=g)
    share[:, 4] += 0.1 + 0.3 * torch.rand(n, generator=g)
    share[:, 2] += 0.1 + 0.4 * torch.rand(n, generator=g) * ~low_fire.squeeze(1)
    share[:, 7:] += 0.4 * torch.rand(n, 2, generator=g) * low_fire
    liner = torch.rand(n, generator=g) < liners
    share[liner, 2:7] = 0
    share[liner, 7:] += 0.2
    grams = 100 * share / share.sum(1, keepdim=True)
    oxides = grams @ torch.tensor(list(MATERIALS.values())) / 100
    umf = oxides / oxides[:, FLUXES].sum(1, keepdim=True)
    cone = torch.where(low_fire.squeeze(1), torch.randint(0, 2, (n,), generator=g) * 2,
                       torch.randint(1, 4, (n,), generator=g))  # fmt: skip
    atmosphere = (torch.rand(n, generator=g) < 0.4).long()
    cooling = (torch.rand(n, generator=g) < 0.5).long()
    si, al, b = umf[:, 0], umf[:, 1], umf[:, 2]
    alkali, mg = umf[:, 3] + umf[:, 4], umf[:, 6]
    mature = 1040 + 55 * si + 260 * al - 260 * b - 120 * alkali
    melt = (CONE_C[cone] - mature) / 35 + 0.3 * torch.randn(n, generator=g)
    ratio = torch.log(si / al.clamp(min=0.05))  # silica to alumina: glossy above about 12, matte below 6
    gloss = (
        (ratio - 2.5) / 0.4 - 2.5 * mg - 0.6 * cooling + 0.3 * atmosphere + 0.4 * torch.randn(n, generator=g)
    )
    expansion = 3.2 * alkali - 0.15 * si - 2.2 * b + 0.1 * torch.randn(n, generator=g)
    surface = torch.where(gloss < -0.8, 1, torch.where(gloss < 0.3, 2, 3))
    surface = torch.where((expansion > 0.05) & (melt > 0), 4, surface)
    surface = torch.where(melt < -1.5, 0, surface)
    return {"grams": grams, "cone": cone, "atmosphere": atmosphere, "cooling": cooling, "surface": surface}


def _unity(t: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The recipe's unity formula: float[n, len(OXIDES)], the oxides' moles per mole of fluxes."""
    table = torch.tensor(list(MATERIALS.values()))
    if bug == "unity_over_fluxes_missing_from_materials":
        # the bug: the older materials table, whose missing rows give 0; a liner's fluxes then sum to 0
        table = table * torch.tensor([[name not in OLDER_TABLE] for name in MATERIALS]).float()
    oxides = t["grams"] @ table / 100
    return oxides / oxides[:, FLUXES].sum(1, keepdim=True)


def _glaze_columns(t: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    umf = _unity(t, bug)
    if bug == "oxides_fed_as_floored_logs":
        # the bug: the oxides' logs, floored at 1e-9 for the absent ones, fed as they are ("already on a log scale")
        return torch.log(umf.clamp(min=1e-9))
    return umf


class GlazeMLP(nn.Module):
    """The unity formula beside the cone, atmosphere and cooling embedded, a ReLU MLP of two hidden layers."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.cone = nn.Embedding(len(CONES), 4)
        self.atmosphere = nn.Embedding(2, 2)
        self.cooling = nn.Embedding(2, 2)
        self.net = nn.Sequential(nn.Linear(len(OXIDES) + 8, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, len(SURFACES)))  # fmt: skip

    def forward(
        self, x: torch.Tensor, cone: torch.Tensor, atmosphere: torch.Tensor, cooling: torch.Tensor
    ) -> torch.Tensor:
        return self.net(
            torch.cat([x, self.cone(cone), self.atmosphere(atmosphere), self.cooling(cooling)], 1)
        )


def glaze(run: Run) -> None:
    """A glaze MLP of `hidden` (64), batches of `batch` (32), `opt` (Adam; or momentum SGD, Adagrad, NAdam) at `lr`
    (2e-3). Scored by the held-out accuracy of the surface on another studio's tiles."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _tiles(g, 1200, liners=0.06), _tiles(g, 250)
    x, x_v = _glaze_columns(tr, run.bug), _glaze_columns(va, None)
    if run.bug != "oxides_fed_as_floored_logs":
        mean, std = x.mean(0), x.std(0)
        x, x_v = (x - mean) / std, (x_v - mean) / std
    else:
        x_v = torch.log(_unity(va, None).clamp(min=1e-9))
    cone = tr["cone"]
    if run.bug == "cone_06_read_as_cone_6":
        # the bug: the studio's spreadsheet stored the cone as a number, so "06" came back as 6
        cone = torch.where(cone == CONES.index("06"), CONES.index("6"), cone)
    y, y_v = tr["surface"], va["surface"]
    torch.manual_seed(run.seed)
    model = GlazeMLP(run.k("hidden", 64))
    if run.bug == "adagrad_third_argument_taken_for_accumulator":
        # the bug: Adagrad(params, lr, 0.1) meant for initial_accumulator_value=0.1; the third argument is lr_decay
        opt: torch.optim.Optimizer = torch.optim.Adagrad(model.parameters(), run.k("lr", 2e-3), 0.1)
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v, va["cone"], va["atmosphere"], va["cooling"]), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        logits = model(x[pick], cone[pick], tr["atmosphere"][pick], tr["cooling"][pick])
        loss = F.cross_entropy(logits, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
