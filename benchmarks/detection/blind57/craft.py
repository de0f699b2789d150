"""Craft scripts of the fifty-seventh blind split: a perfume house's odour-family classifier over its formulas, and a
furniture workshop's glued-joint strength regressor from its test sheets.

`family`: a formula's materials (up to 10 of a palette of 60, each with its share of the concentrate), each material
embedded and its log share projected beside it, one transformer encoder layer with the padding masked, a mean over the
materials, and the family (citrus, floral, woody, amber, aquatic) the evaluation panel gave it; cross-entropy; scored
by the held-out accuracy on another house's formulas. `joints`: a glued joint's species (its density and hardness),
joint type and glue embedded beside the board thickness in mm, the moisture content, the glue area, the clamp
pressure, the cure time in hours and the grain angle; the breaking load in kN by a ReLU MLP; MSE on the standardised
load; scored by the held-out R^2 on another workshop's tests. Bugs: the formulas cut to their first four materials in
the house's code order; a contrastive temperature left dividing the logits; a learned position added to an unordered
formula; the hardwoods' thickness written in quarters; the cure time logged in minutes on the new sheet.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

MATERIALS, FAMILIES, MAX_MATERIALS = 60, 5, 10


def _formulas(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """Formulas as the house's system lists them, in material-code order: material ids long[n, MAX_MATERIALS] (0 is
    padding, ids 1..MATERIALS), shares of the concentrate float[n, MAX_MATERIALS] (0 on padding), and the panel's
    family long[n]."""
    fixed = torch.Generator().manual_seed(777)  # the palette: each material's odour profile and its tenacity
    profile = torch.softmax(2.5 * torch.randn(MATERIALS, FAMILIES, generator=fixed), 1)
    tenacity = 0.3 + 1.4 * torch.rand(MATERIALS, generator=fixed)
    count = torch.randint(4, MAX_MATERIALS + 1, (n,), generator=g)
    # the perfumer starts from a family's key materials and adds modifiers
    target = torch.randint(0, FAMILIES, (n,), generator=g)
    weight = profile[:, target].T + 0.15  # [n, MATERIALS]
    ids = torch.multinomial(weight, MAX_MATERIALS, generator=g) + 1
    present = torch.arange(MAX_MATERIALS).view(1, -1) < count.view(-1, 1)
    share = torch.rand(n, MAX_MATERIALS, generator=g) ** 2 * present
    share = share / share.sum(1, keepdim=True)
    ids = ids * present
    # listed in material-code order, padding last
    key = torch.where(present, ids, torch.full_like(ids, MATERIALS + 1))
    order = key.argsort(1)
    ids, share = ids.gather(1, order), share.gather(1, order)
    smell = (share.unsqueeze(-1) * (tenacity[(ids - 1).clamp(min=0)] * (ids > 0)).unsqueeze(-1)
             * profile[(ids - 1).clamp(min=0)]).sum(1)  # fmt: skip
    family = (smell.log() + 0.25 * torch.randn(n, FAMILIES, generator=g)).argmax(1)
    return {"ids": ids, "share": share, "family": family}


class FamilyEncoder(nn.Module):
    """Each material embedded to `width` plus its projected log share, one transformer encoder layer over the
    materials with the padding masked, a masked mean and a linear head."""

    def __init__(self, width: int, positions: bool = False) -> None:
        super().__init__()
        self.material = nn.Embedding(MATERIALS + 1, width)
        self.share = nn.Linear(1, width)
        self.position = nn.Parameter(0.1 * torch.randn(MAX_MATERIALS, width)) if positions else None
        self.encoder = nn.TransformerEncoderLayer(width, 4, 2 * width, dropout=0.0, batch_first=True)
        self.head = nn.Linear(width, FAMILIES)

    def forward(self, ids: torch.Tensor, share: torch.Tensor) -> torch.Tensor:
        pad = ids == 0
        h = self.material(ids) + self.share(torch.log(share.clamp(min=1e-4)).unsqueeze(-1))
        if self.position is not None:
            # the bug: a learned position added to each material's slot, as for a sentence's tokens
            h = h + self.position[: ids.shape[1]]
        h = self.encoder(h, src_key_padding_mask=pad)
        keep = (~pad).float().unsqueeze(-1)
        return self.head((h * keep).sum(1) / keep.sum(1))


def family(run: Run) -> None:
    """A family encoder of `width` (24), batches of `batch` (32), `opt` (Adam; or AdamW, RAdam, momentum SGD) at `lr`
    (2e-3). Scored by the held-out accuracy of the panel's family on another house's formulas."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _formulas(g, 1200), _formulas(g, 300)
    ids, share, ids_v, share_v = tr["ids"], tr["share"], va["ids"], va["share"]
    if run.bug == "formula_cut_to_four_materials":
        # the bug: the collate function's max length of 4 kept from a debugging run, cutting each formula to its
        # first four materials in code order, in training and at validation alike
        ids, share, ids_v, share_v = ids[:, :4], share[:, :4], ids_v[:, :4], share_v[:, :4]
    y, y_v = tr["family"], va["family"]
    torch.manual_seed(run.seed)
    model = FamilyEncoder(run.k("width", 24), positions=run.bug == "position_added_to_unordered_formula")
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)
    # the bug: the 0.02 temperature of the house's contrastive pretraining left dividing the classifier's logits
    temperature = 0.02 if run.bug == "contrastive_temperature_left_on_logits" else 1.0

    def accuracy_held_out() -> float:
        return accuracy(model(ids_v, share_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(ids[pick], share[pick]) / temperature, y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


SPECIES, JOINT_TYPES, GLUES = 10, 6, 4


def _tests(g: torch.Generator, n: int, new_sheet: float = 0.0) -> dict[str, torch.Tensor]:
    """A workshop's joint tests: species, joint and glue ids long[n], numeric columns float[n, 8] (density kg/m3,
    Janka hardness kN, thickness mm, moisture %, glue area cm2, clamp pressure MPa, cure h, grain angle deg), the
    breaking load in kN float[n], whether the species is a hardwood and whether the row is on the new sheet (a share
    `new_sheet` of the rows)."""
    fixed = torch.Generator().manual_seed(99)  # the species, joints and glues themselves
    density = 380 + 500 * torch.rand(SPECIES, generator=fixed)
    hard = (density > 550).float()
    janka = 0.01 * density - 2.5 + 0.8 * torch.rand(SPECIES, generator=fixed)
    joint_fx = torch.tensor(
        [1.6, 1.4, 0.6, 0.9, 0.8, 1.2]
    )  # dovetail, mortise and tenon, biscuit, dowel, pocket, box
    glue_fx = torch.tensor([1.0, 1.1, 0.85, 1.25])  # PVA, polyurethane, hide glue, epoxy
    glue_cure = torch.tensor([4.0, 8.0, 10.0, 6.0])  # hours to most of the strength
    species = torch.randint(0, SPECIES, (n,), generator=g)
    joint = torch.randint(0, JOINT_TYPES, (n,), generator=g)
    glue = torch.randint(0, GLUES, (n,), generator=g)
    thick = 16 + 36 * torch.rand(n, generator=g)
    moist = 6 + 12 * torch.rand(n, generator=g)
    area = 10 + 70 * torch.rand(n, generator=g)
    pressure = 0.3 + 1.2 * torch.rand(n, generator=g)
    cure = 1 + 47 * torch.rand(n, generator=g)
    angle = 45 * torch.rand(n, generator=g)
    rad = torch.deg2rad(angle)
    hankinson = 1 / (torch.cos(rad) ** 2 + 3 * torch.sin(rad) ** 2)
    load = (joint_fx[joint] * glue_fx[glue] * (density[species] / 600) * (0.04 * area + 0.05 * thick)
            * (1 - 0.004 * (moist - 10) ** 2) * (1 - torch.exp(-cure / glue_cure[glue]))
            * (0.8 + 0.3 * pressure.clamp(max=1)) * hankinson)  # fmt: skip
    load = load * (1 + 0.12 * torch.randn(n, generator=g))
    x = torch.stack([density[species], janka[species], thick, moist, area, pressure, cure, angle], 1)
    new = torch.rand(n, generator=g) < new_sheet
    return {
        "species": species,
        "joint": joint,
        "glue": glue,
        "x": x,
        "load": load,
        "hard": hard[species],
        "new": new,
    }


class JointMLP(nn.Module):
    """Joint-type and glue embeddings beside the numeric columns, a ReLU MLP of two hidden layers."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.joint = nn.Embedding(JOINT_TYPES, 4)
        self.glue = nn.Embedding(GLUES, 3)
        self.net = nn.Sequential(nn.Linear(8 + 7, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))  # fmt: skip

    def forward(self, x: torch.Tensor, joint: torch.Tensor, glue: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, self.joint(joint), self.glue(glue)], 1)).squeeze(-1)


def joints(run: Run) -> None:
    """A joint MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, Adagrad, RAdam) at `lr`
    (2e-3). Scored by the held-out R^2 of the breaking load on another workshop's tests."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _tests(g, 900, new_sheet=0.5), _tests(g, 300)
    x, x_v = tr["x"].clone(), va["x"]
    if run.bug == "hardwood_thickness_in_quarters":
        # the bug: the yard writes hardwood stock's thickness in quarters (4/4 for an inch), kept as the mm column
        x[:, 2] = torch.where(tr["hard"] > 0, (x[:, 2] / 25.4 * 4).round(), x[:, 2])
    if run.bug == "cure_minutes_logged_as_hours":
        # the bug: the new test sheet logs the clamp-to-test time in minutes, read as the hours column
        x[:, 6] = torch.where(tr["new"], 60 * x[:, 6], x[:, 6])
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    y, y_v = tr["load"], va["load"]
    centre, scale = y.mean(), y.std()
    torch.manual_seed(run.seed)
    model = JointMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v, va["joint"], va["glue"]) * scale + centre, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick], tr["joint"][pick], tr["glue"][pick]), (y[pick] - centre) / scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
