"""Structured-data scripts of the seventeenth blind split: a molecular property regressor by message passing over small
random molecules, and a neural oblivious decision ensemble (NODE) scoring loan applications.

`molecules`: molecules of 5-12 atoms of four elements, a random spanning tree of bonds plus an occasional ring closure,
padded to 12 atoms; the property is a sum of per-element and per-bond-pair contributions with a term for branching atoms
and one for bonded heteroatoms growing with the branching, standardised by the training molecules; an element embedding,
three rounds of messages over the symmetrically degree-normalised adjacency (the padding's degree set to 0), a masked
sum over the atoms and an MLP; mean squared error; scored by the held-out R^2. `oblivious`: 8 applicant fields in their
own units (age, income, balance, ...), standardised by the training rows; default drawn from a logistic model of
thresholded fields and their interactions; an ensemble of soft oblivious trees (a softmax choosing each level's feature,
a learnt threshold (initialised at a random training row's value) and temperature, a sigmoid split, a response per
leaf), averaged with a bias; BCE; scored by the held-out AUC. Bugs: the padded atoms' infinite inverse degree left in
the adjacency; the sampler re-seeded every step; bonds stored one way only; every linear layer drawn with a standard
deviation of 1; the loss taken against the property in its units while predictions are read as standardised; the
thresholds' data-aware initialisation run on the raw fields; the loss wrapped back into a new tensor; the first batch of
an unshuffled loader taken every step; a debugging subset of the first 200 rows left in.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

ATOMS, ELEMENTS = 12, 4
"""Padded molecule size and the number of elements."""


def _molecules(
    g: torch.Generator, n: int, coef: tuple[torch.Tensor, torch.Tensor], one_way: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Elements long[n, ATOMS], adjacency float[n, ATOMS, ATOMS], the atom mask bool[n, ATOMS] and the property
    float[n] (`coef`: per-element and per-pair contributions)."""
    size = torch.randint(5, ATOMS + 1, (n,), generator=g)
    mask = torch.arange(ATOMS).unsqueeze(0) < size.unsqueeze(1)
    elem = torch.multinomial(torch.tensor([0.5, 0.2, 0.2, 0.1]), n * ATOMS, True, generator=g).view(n, ATOMS)
    elem = elem.masked_fill(~mask, 0)
    adj = torch.zeros(n, ATOMS, ATOMS)
    for i in range(n):
        m = int(size[i])
        for a in range(1, m):
            b = int(torch.randint(0, a, (1,), generator=g))
            adj[i, a, b] = 1
        if m > 5 and float(torch.rand(1, generator=g)) < 0.4:
            adj[i, m - 1, 0] = 1
    sym = ((adj + adj.transpose(1, 2)) > 0).float()
    per_elem, per_pair = coef
    onehot = F.one_hot(elem, ELEMENTS).float() * mask.unsqueeze(-1)
    pairs = torch.einsum("nae,nab,nbf,ef->n", onehot, sym, onehot, per_pair) / 2
    branching = ((sym.sum(-1) >= 3) & mask).float().sum(-1)
    # heteroatoms next to each other and branching interact: the property is not additive over atoms
    hetero = onehot[..., 1:].sum(-1)
    hetero_pairs = torch.einsum("na,nab,nb->n", hetero, sym, hetero) / 2
    prop = (onehot.sum(1) * per_elem).sum(-1) + pairs + 0.8 * branching - 0.3 * branching**2
    prop = prop + 1.5 * torch.tanh(hetero_pairs - 1.0) * (1 + branching)
    return elem, (adj if one_way else sym), mask, prop


class MessagePassing(nn.Module):
    """An element embedding of `width`, `rounds` rounds of h <- ReLU(W [h, A_hat h]), a masked sum, an MLP."""

    def __init__(self, width: int, rounds: int, zero_padding_degree: bool = True) -> None:
        super().__init__()
        self.embed = nn.Embedding(ELEMENTS, width)
        self.rounds = nn.ModuleList(nn.Linear(2 * width, width) for _ in range(rounds))
        self.head = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1))
        self.zero_padding_degree = zero_padding_degree

    def forward(self, elem: torch.Tensor, adj: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        deg = adj.sum(-1)
        inv = deg.pow(-0.5)
        if self.zero_padding_degree:
            inv = inv.masked_fill(deg == 0, 0.0)
        norm = inv.unsqueeze(-1) * adj * inv.unsqueeze(-2)
        keep = mask.unsqueeze(-1).float()
        h = self.embed(elem) * keep
        for layer in self.rounds:
            h = F.relu(layer(torch.cat([h, norm @ h], -1))) * keep
        return self.head(h.sum(1))[:, 0]


def molecules(run: Run) -> None:
    """A message-passing regressor of `width` (64) and `rounds` (3), batches of `batch` (64), `opt` (Adam; or AdamW,
    RMSprop, Adamax) at `lr` (2e-3), optionally halved every 3 epochs (`epoch_decay`). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    coef = (torch.randn(ELEMENTS, generator=g), torch.randn(ELEMENTS, ELEMENTS, generator=g))
    coef = (coef[0], (coef[1] + coef[1].T) / 2)
    one_way = run.bug == "bonds_stored_one_way"
    elem, adj, mask, prop = _molecules(g, 2000, coef, one_way)
    elem_v, adj_v, mask_v, prop_v = _molecules(g, 500, coef, one_way)
    mean, std = prop.mean(), prop.std()
    y = (prop - mean) / std
    torch.manual_seed(run.seed)
    model = MessagePassing(
        run.k("width", 64), run.k("rounds", 3), run.bug != "padding_inverse_degree_left_infinite"
    )
    if run.bug == "weights_drawn_with_std_one":
        for module in model.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)
    per_epoch = len(elem) // batch
    sched = (
        torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5) if run.k("epoch_decay", False) else None
    )

    def r2_held_out() -> float:
        return r2(model(elem_v, adj_v, mask_v) * std + mean, prop_v)

    for step in range(run.steps):
        if run.bug == "sampler_reseeded_every_step":
            pick = torch.randint(0, len(elem), (batch,), generator=torch.Generator().manual_seed(run.seed))
        else:
            pick = run.indices(len(elem), batch)
        target = prop[pick] if run.bug == "loss_against_unstandardised_property" else y[pick]
        loss = F.mse_loss(model(elem[pick], adj[pick], mask[pick]), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None and (step + 1) % per_epoch == 0:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


FIELDS = 8
"""Applicant fields: age, income, balance, accounts, tenure, utilisation, inquiries, late payments."""


def _applicants(g: torch.Generator, n: int, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Fields float[n, FIELDS] in their own units and the default label float[n] (`w`: the teacher's weights)."""
    age = 20 + 60 * torch.rand(n, generator=g)
    income = torch.exp(10.5 + 0.6 * torch.randn(n, generator=g))
    balance = income * 0.3 * torch.rand(n, generator=g)
    accounts = torch.poisson(torch.full((n,), 3.0), generator=g)
    tenure = 30 * torch.rand(n, generator=g)
    util = torch.rand(n, generator=g)
    inquiries = torch.poisson(torch.full((n,), 1.5), generator=g)
    late = torch.poisson(torch.full((n,), 0.5), generator=g)
    x = torch.stack([age, income, balance, accounts, tenure, util, inquiries, late], 1)
    logit = (w[0] * (util > 0.7) + w[1] * (income < 25000) * (balance > 4000) + w[2] * (late >= 2)
             + w[3] * (age < 30) * (inquiries >= 2) - w[4] * (tenure > 15) - 1.0)  # fmt: skip
    y = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    return x, y


class ObliviousEnsemble(nn.Module):
    """`trees` soft oblivious trees of `depth`: per level a softmax over the fields, a threshold and a temperature,
    a sigmoid split; a response per leaf; the trees' mean plus a bias is the default logit."""

    def __init__(self, trees: int, depth: int) -> None:
        super().__init__()
        self.depth = depth
        self.select = nn.Parameter(torch.randn(trees, depth, FIELDS))
        self.threshold = nn.Parameter(torch.zeros(trees, depth))
        self.log_temp = nn.Parameter(torch.zeros(trees, depth))
        self.response = nn.Parameter(torch.randn(trees, 2**depth))
        self.bias = nn.Parameter(torch.zeros(()))
        bits = torch.tensor([[(leaf >> d) & 1 for d in range(depth)] for leaf in range(2**depth)]).float()
        self.register_buffer("bits", bits)

    @torch.no_grad()
    def init_thresholds(self, x: torch.Tensor) -> None:
        """Each split's threshold at its chosen value of a random row of `x`."""
        rows = x[torch.randint(0, len(x), self.threshold.shape)]  # [t, d, fields]
        self.threshold.copy_((rows * self.select.softmax(-1)).sum(-1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        value = torch.einsum("bf,tdf->btd", x, self.select.softmax(-1))
        right = torch.sigmoid((value - self.threshold) * torch.exp(-self.log_temp))  # [b, t, d]
        # probability of each leaf: the product over levels of the split taken (right where the leaf's bit is 1)
        taken = right.unsqueeze(2) * self.bits + (1 - right.unsqueeze(2)) * (
            1 - self.bits
        )  # [b, t, leaves, d]
        leaf = taken.prod(-1)
        return (leaf * self.response).sum(-1).mean(-1) + self.bias


def oblivious(run: Run) -> None:
    """A NODE-style ensemble of `trees` (32) of `depth` (4), batches of `batch` (128), `opt` (Adam; or AdamW, NAdam,
    RAdam) at `lr` (1e-2). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    w = 1.0 + torch.rand(5, generator=g) * 1.5
    x, y = _applicants(g, 3000, w)
    x_v, y_v = _applicants(g, 1000, w)
    raw = x
    mean, std = x.mean(0), x.std(0)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = ObliviousEnsemble(run.k("trees", 32), run.k("depth", 4))
    # data-aware initialisation: each split's threshold at the chosen value of a random training row
    model.init_thresholds(raw if run.bug == "thresholds_initialised_from_raw_fields" else x)
    opt = optimizers.registered(run, model, 1e-2)
    batch = run.k("batch", 128)
    per_epoch = len(x) // batch
    order = torch.randperm(len(x), generator=run.gen)

    def auc_held_out() -> float:
        return auc(model(x_v), y_v)

    for step in range(run.steps):
        if step % per_epoch == 0:
            order = torch.randperm(len(x), generator=run.gen)
        if run.bug == "first_batch_every_step":
            # a loader over the rows in file order, a fresh iterator each step
            pick = torch.arange(batch)
        elif run.bug == "debug_subset_left_in":
            # a subset for a quick check while debugging, left in
            pick = order[order < 200][:batch]
        else:
            pick = order[(step % per_epoch) * batch : (step % per_epoch + 1) * batch]
        loss = F.binary_cross_entropy_with_logits(model(x[pick]), y[pick])
        if run.bug == "loss_rewrapped_as_new_tensor":
            # the loss taken out as a float for the running average and wrapped back for backward
            loss = torch.tensor(loss.item(), requires_grad=True)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break
