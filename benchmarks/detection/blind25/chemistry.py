"""Chemistry scripts of the twenty-fifth blind split: a reaction-yield regressor on molecular fingerprints and an alloy
hardness regressor.

`yields`: cross-coupling reactions of an aryl halide and a partner, each a 128-bit fingerprint (substructure bits drawn
from a sparse vocabulary), run with one of 12 catalysts, 8 ligands and 4 bases, an additive at 0-3 equivalents (none in a
fifth of the reactions) and a temperature of 25-120 C; the yield (0-100%) a sigmoid of fingerprint effects, a
catalyst-ligand interaction, the base, the additive's log equivalents and an optimum temperature; 1,500 training
reactions; the fingerprints, the catalyst-ligand-base combination's mean training yield (out of fold, by the
other four fifths), the log of one plus the equivalents and the standardised temperature, an MLP of two ReLU layers with dropout 0.1,
the yield as a fraction, mean squared error; scored by the held-out R^2. `alloys`: compositions of eight elements (a
Dirichlet draw around a base metal), an annealing temperature of 200-900 C and a time of 0.5-24 h; the Vickers hardness
(100-600 HV) from solid-solution terms, pair interactions and a precipitation peak near 500 C that grows with the log of
the time; the fractions, the standardised temperature and log time, a six-layer tanh MLP with Xavier initialisation,
its first three layers under activation checkpointing, the standardised hardness, mean squared error; scored by the held-out R^2. Bugs: the yield regressed in percent; the
combination's mean yield taken with the reaction's own yield in it; the additive logged without the one; the hardness
MLP's weights initialised by `nn.init.normal_` left at its unit standard deviation; the temperature fed in degrees; a cyclic schedule's peak copied
from an SGD recipe; the checkpointed layers run by the reentrant checkpoint on inputs that need no gradient.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

BITS, CATALYSTS, LIGANDS, BASES = 128, 12, 8, 4
"""Fingerprint length and the reaction conditions' choices."""


def _reactions(g: torch.Generator, n: int, effects: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Fingerprints float[n, 2 * BITS], catalyst/ligand/base long[n], equivalents and temperature float[n], yield in
    percent float[n], drawn with the chemistry `effects` shared by the training and held-out reactions."""
    density = effects["density"]
    fp = (torch.rand(n, 2 * BITS, generator=g) < density).float()
    cat = torch.randint(0, CATALYSTS, (n,), generator=g)
    lig = torch.randint(0, LIGANDS, (n,), generator=g)
    base = torch.randint(0, BASES, (n,), generator=g)
    equiv = torch.where(torch.rand(n, generator=g) < 0.2, 0.0, 0.25 + 2.75 * torch.rand(n, generator=g))
    temp = 25 + 95 * torch.rand(n, generator=g)
    logit = (
        fp @ effects["bits"]
        + effects["pair"][cat, lig]
        + effects["base"][base]
        + 0.4 * torch.log1p(equiv)
        - ((temp - 80) / 30) ** 2
        - 0.3
        + 0.25 * torch.randn(n, generator=g)
    )
    return {"fp": fp, "cat": cat, "lig": lig, "base": base, "equiv": equiv, "temp": temp,
            "yield": 100 * torch.sigmoid(logit)}  # fmt: skip


def _effects(g: torch.Generator) -> dict[str, torch.Tensor]:
    """The chemistry behind the yields: bit densities and effects, catalyst-ligand pairs, bases."""
    return {"density": 0.03 + 0.2 * torch.rand(2 * BITS, generator=g),
            "bits": 0.35 * torch.randn(2 * BITS, generator=g) * (torch.rand(2 * BITS, generator=g) < 0.3),
            "pair": 1.2 * torch.randn(CATALYSTS, LIGANDS, generator=g), "base": 0.5 * torch.randn(BASES, generator=g)}  # fmt: skip


def yields(run: Run) -> None:
    """A yield MLP of `hidden` (256), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, NAdam) at `lr`
    (1e-3). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    effects = _effects(g)
    train, held = _reactions(g, 1500, effects), _reactions(g, 1000, effects)
    combo = (train["cat"] * LIGANDS + train["lig"]) * BASES + train["base"]
    combo_v = (held["cat"] * LIGANDS + held["lig"]) * BASES + held["base"]
    combos = CATALYSTS * LIGANDS * BASES
    total = torch.zeros(combos).index_add_(0, combo, train["yield"])
    count = torch.zeros(combos).index_add_(0, combo, torch.ones(len(combo)))
    prior = train["yield"].mean()
    # the combination's mean training yield as a feature (smoothed towards the overall mean with one reaction's weight)
    if run.bug == "combination_mean_with_own_yield":
        enc = total[combo] / count[combo]
    else:  # out of fold: each fifth of the reactions encoded by the other four fifths' yields
        fold = torch.arange(len(combo)) % 5
        enc = torch.empty(len(combo))
        for k in range(5):
            rest = fold != k
            t = torch.zeros(combos).index_add_(0, combo[rest], train["yield"][rest])
            c = torch.zeros(combos).index_add_(0, combo[rest], torch.ones(int(rest.sum())))
            enc[~rest] = ((t + prior) / (c + 1))[combo[~rest]]
    enc_v = (total[combo_v] + prior) / (count[combo_v] + 1)
    log_eq = torch.log if run.bug == "additive_logged_without_one" else torch.log1p
    t_mean, t_std = train["temp"].mean(), train["temp"].std()

    def features(r: dict[str, torch.Tensor], e: torch.Tensor) -> torch.Tensor:
        return torch.cat(
            [r["fp"], torch.stack([e / 100, log_eq(r["equiv"]), (r["temp"] - t_mean) / t_std], 1)], 1
        )

    x, x_v = features(train, enc), features(held, enc_v)
    scale = 1.0 if run.bug == "yield_regressed_in_percent" else 100.0
    y, y_v = train["yield"] / scale, held["yield"] / 100
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 256)
    model = nn.Sequential(nn.Linear(x.shape[1], hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, hidden),
                          nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, 1))  # fmt: skip
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v)[:, 0] * 100 / scale, y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick])[:, 0], y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break


ELEMENTS = 8
"""Alloying elements (the first the base metal)."""


def _alloys(g: torch.Generator, n: int, effects: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """Fractions float[n, ELEMENTS], annealing temperature in C and time in h float[n], hardness in HV float[n]."""
    conc = torch.full((ELEMENTS,), 0.6)
    conc[0] = 6.0
    frac = _dirichlet(g, conc, n)
    temp = 200 + 700 * torch.rand(n, generator=g)
    hours = torch.exp(
        torch.log(torch.tensor(0.5)) + torch.rand(n, generator=g) * torch.log(torch.tensor(48.0))
    )
    solid = frac @ effects["solid"]
    pairs = ((frac @ effects["pairs"]) * frac).sum(1)
    former = frac[:, 1:4].sum(1)
    peak = 180 * former * torch.exp(-(((temp - 500) / 110) ** 2)) * (0.5 + 0.25 * torch.log(hours))
    soften = -60 * ((temp - 200) / 700) ** 2
    hv = 120 + solid + pairs + peak + soften + 8 * torch.randn(n, generator=g)
    return frac, temp, hours, hv


def _dirichlet(g: torch.Generator, conc: torch.Tensor, n: int) -> torch.Tensor:
    """Dirichlet draws from the generator (normalised gamma draws by Marsaglia-Tsang's method through torch's
    `_standard_gamma`, which takes no generator: the seed comes from a draw of `g`)."""
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=g))
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        gam = torch._standard_gamma(conc.expand(n, -1).contiguous())
    return gam / gam.sum(1, keepdim=True)


class HardnessMLP(nn.Module):
    """A tanh MLP of `depth` hidden layers of `width` (the first half run under activation checkpointing, which the
    larger model this one was cut down from needed for memory), Xavier-initialised by `init_weights`."""

    def __init__(self, inputs: int, width: int, depth: int, reentrant: bool) -> None:
        super().__init__()
        self.reentrant = reentrant
        layers = [
            nn.Sequential(nn.Linear(inputs if i == 0 else width, width), nn.Tanh()) for i in range(depth)
        ]
        self.early = nn.Sequential(*layers[: depth // 2])
        self.late = nn.Sequential(*layers[depth // 2 :], nn.Linear(width, 1))

    def init_weights(self, unit_normal: bool = False) -> None:
        """Xavier for tanh (the bug: `nn.init.normal_` called without a std, which leaves it at 1)."""
        for m in self.modules():
            if isinstance(m, nn.Linear):
                if unit_normal:
                    nn.init.normal_(m.weight)
                else:
                    nn.init.xavier_uniform_(m.weight, gain=5 / 3)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = checkpoint(self.early, x, use_reentrant=self.reentrant)
        return self.late(h)[:, 0]


def alloys(run: Run) -> None:
    """A hardness MLP of `width` (64), batches of `batch` (64), `opt` (Adam; or RMSprop, momentum SGD, Adam under a
    triangular cyclic schedule) at `lr` (1e-3). Scored by the held-out R^2."""
    g = torch.Generator().manual_seed(run.seed)
    effects = {"solid": torch.cat([torch.zeros(1), 40 + 160 * torch.rand(ELEMENTS - 1, generator=g)]),
               "pairs": 300 * torch.randn(ELEMENTS, ELEMENTS, generator=g).triu(1)}  # fmt: skip
    frac, temp, hours, hv = _alloys(g, 1200, effects)
    frac_v, temp_v, hours_v, hv_v = _alloys(g, 800, effects)
    t_mean, t_std = temp.mean(), temp.std()
    h_mean, h_std = hours.log().mean(), hours.log().std()
    y_mean, y_std = hv.mean(), hv.std()

    def features(f: torch.Tensor, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        degrees = t if run.bug == "anneal_temperature_fed_in_degrees" else (t - t_mean) / t_std
        return torch.cat([f, torch.stack([degrees, (h.log() - h_mean) / h_std], 1)], 1)

    x, x_v = features(frac, temp, hours), features(frac_v, temp_v, hours_v)
    y, y_v = (hv - y_mean) / y_std, (hv_v - y_mean) / y_std
    torch.manual_seed(run.seed)
    model = HardnessMLP(x.shape[1], run.k("width", 64), 6, run.bug == "reentrant_checkpoint_on_plain_inputs")
    model.init_weights(unit_normal=run.bug == "normal_init_left_at_unit_std")
    opt = optimizers.registered(run, model, 1e-3)
    sched = None
    if run.k("cyclic", False):
        peak = 0.5 if run.bug == "cyclic_peak_from_sgd_recipe" else 3e-3
        sched = torch.optim.lr_scheduler.CyclicLR(opt, base_lr=1e-4, max_lr=peak, step_size_up=25,
                                                  cycle_momentum=False)  # fmt: skip
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        return r2(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.mse_loss(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
