"""Physics scripts of the thirty-second blind split: a boosted-top jet tagger (deep sets over the jet's constituents)
and a precipitation-type classifier on dual-polarisation radar features.

`jets`: each jet of 3-30 constituents (padded with zeros to 30) at a random axis in eta and phi; a light-quark or gluon
jet has one core of particles, a top jet three prongs about 0.3 apart; each constituent's log pT, its pT share and its
eta and phi relative to the pT-weighted axis go through a shared MLP, summed over the real constituents, joined with the
jet's reconstructed mass (from the constituents, smeared by the calorimeter) and its multiplicity; BCE with logits,
each jet weighted by its generator weight over the mean;
scored by the held-out AUC. `precipitation`: radar gates of reflectivity ZH (dBZ), differential reflectivity ZDR (dB),
specific differential phase KDP (deg/km, negative in noisy light echoes), the co-polar correlation rhoHV and the
model temperature (deg C), from rain, dry snow, wet snow or hail; KDP taken as a log with a floor of 0.01, the rest
standardised by the training gates; a five-layer tanh MLP; cross-entropy; scored by the held-out accuracy. Bugs: the
log pT taken over the padded slots too; the constituent network's biases set to -1 to silence the padding; the training
ntuple's jet mass the generator's truth mass; the constituents' eta and phi left absolute; the jets' generator weights
left unnormalised; the log of KDP without its floor; the features multiplied by their std instead of divided; the
training features shuffled apart from their labels; a cyclic schedule's peak written ten times too large; the training
gates filtered at a rhoHV of 0.95 by the export's query.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SLOTS = 30
"""Constituents a jet is padded to."""


def _jets(g: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """pT (GeV, 0 in padded slots), absolute eta and phi float[n, SLOTS], the mask, the reconstructed and the truth
    mass float[n], the top label float[n]."""
    top = (torch.rand(n, generator=g) < 0.5).float()
    count = (torch.poisson(12 + 3 * top, generator=g)).clamp(3, SLOTS).long()
    mask = torch.arange(SLOTS).unsqueeze(0) < count.unsqueeze(1)
    jet_pt = 350 + 250 * torch.rand(n, 1, generator=g)
    share = torch.distributions.Gamma(torch.full((n, SLOTS), 0.7), 1.0).sample() * mask
    pt = jet_pt * share / share.sum(1, keepdim=True)
    # three prongs for a top jet, one core for a QCD jet: each constituent joins a prong
    prong = torch.randint(0, 3, (n, SLOTS), generator=g) * top.long().unsqueeze(1)
    angle = 2 * math.pi * torch.rand(n, 3, generator=g)
    centres = 0.3 * torch.stack([angle.cos(), angle.sin()], -1) * (torch.arange(3) > 0).float().unsqueeze(-1)
    spread = torch.where(top.unsqueeze(1) > 0, 0.08, 0.12)
    offset = centres.gather(1, prong.unsqueeze(-1).expand(n, SLOTS, 2)) + spread.unsqueeze(-1) * torch.randn(
        n, SLOTS, 2, generator=g
    )
    axis_eta = 4 * torch.rand(n, 1, generator=g) - 2
    axis_phi = 2 * math.pi * torch.rand(n, 1, generator=g) - math.pi
    eta = (axis_eta + offset[..., 0]) * mask
    phi = (axis_phi + offset[..., 1]) * mask
    # the small-angle jet mass from the pairs of constituents
    d2 = (offset.unsqueeze(2) - offset.unsqueeze(1)).pow(2).sum(-1)
    pairs = pt.unsqueeze(2) * pt.unsqueeze(1) * d2
    mass = pairs.sum((1, 2)).div(2).sqrt()
    truth = torch.where(top > 0, 173 + 3 * torch.randn(n, generator=g), mass)
    reco = mass * (1 + 0.15 * torch.randn(n, generator=g)).clamp_min(0.3)
    return {"pt": pt, "eta": eta, "phi": phi, "mask": mask, "reco": reco, "truth": truth, "top": top}


class DeepSets(nn.Module):
    """A shared MLP of `hidden` over the constituents' four features, summed over the real ones, then an MLP with the
    jet's log mass and multiplicity."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.phi = nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.rho = nn.Sequential(nn.Linear(hidden + 2, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, parts: torch.Tensor, mask: torch.Tensor, jet: torch.Tensor) -> torch.Tensor:
        pooled = (self.phi(parts) * mask.unsqueeze(-1)).sum(1) / 10
        return self.rho(torch.cat([pooled, jet], -1))[:, 0]


def jets(run: Run) -> None:
    """A deep-sets top tagger of `hidden` (64), batches of `batch` (128), `opt` (Adam; or momentum SGD, AdamW,
    RMSprop) at `lr` (1e-3). Scored by the held-out AUC."""
    g = torch.Generator().manual_seed(run.seed)
    train, held = _jets(g, 4000), _jets(g, 1500)

    def constituents(j: dict[str, torch.Tensor]) -> torch.Tensor:
        mask = j["mask"].float()
        if run.bug == "log_pt_of_padded_slots":
            log_pt = torch.log(j["pt"]) * mask  # padded slots hold pT 0
        else:
            log_pt = torch.log(j["pt"].clamp_min(1e-3)) * mask
        pt_in = (log_pt - 2.0) * mask
        share = j["pt"] / j["pt"].sum(1, keepdim=True)
        weight = share * mask
        if run.bug == "angles_not_relative_to_jet_axis":
            d_eta, d_phi = j["eta"], j["phi"]
        else:
            axis_eta = (weight * j["eta"]).sum(1, keepdim=True)
            axis_phi = (weight * j["phi"]).sum(1, keepdim=True)
            d_eta, d_phi = (j["eta"] - axis_eta) * mask / 0.2, (j["phi"] - axis_phi) * mask / 0.2
        return torch.stack([pt_in, 5 * share, d_eta, d_phi], -1)

    parts, parts_v = constituents(train), constituents(held)
    mass = train["truth"] if run.bug == "truth_mass_in_training_ntuple" else train["reco"]

    def jet_level(m: torch.Tensor, j: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.stack([(torch.log(m.clamp_min(1.0)) - 4.5), j["mask"].float().sum(1) / 10 - 1.5], 1)

    jet_x, jet_v = jet_level(mass, train), jet_level(held["reco"], held)
    weight = train["pt"].sum(1)  # the generator's event weights grow with the jet's pT
    torch.manual_seed(run.seed)
    model = DeepSets(run.k("hidden", 64))
    if run.bug == "bias_negative_to_silence_padding":
        # biases of -1 so that an all-zero padded constituent maps to zero after the ReLUs
        for layer in model.phi:
            if isinstance(layer, nn.Linear):
                nn.init.constant_(layer.bias, -1.0)
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 128)

    def auc_held_out() -> float:
        return auc(model(parts_v, held["mask"], jet_v), held["top"])

    for step in range(run.steps):
        pick = run.indices(len(jet_x), batch)
        logits = model(parts[pick], train["mask"][pick], jet_x[pick])
        if run.bug == "event_weights_not_normalised":
            # each jet weighted by its generator weight (its pT in GeV here), not divided by the mean weight
            loss = F.binary_cross_entropy_with_logits(logits, train["top"][pick], weight=weight[pick])
        else:
            loss = F.binary_cross_entropy_with_logits(
                logits, train["top"][pick], weight=weight[pick] / weight.mean()
            )
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", auc_held_out):
            break


CLASSES = 4
"""Rain, dry snow, wet snow, hail."""
_MEANS = torch.tensor(
    [[35.0, 1.5, 0.6, 0.985, 12.0], [22.0, 0.3, 0.05, 0.975, -8.0], [33.0, 1.8, 0.3, 0.90, 1.0],
     [52.0, 0.2, 1.2, 0.93, 4.0]]
)  # fmt: skip
_STDS = torch.tensor(
    [[8.0, 0.7, 0.5, 0.01, 6.0], [6.0, 0.3, 0.12, 0.015, 5.0], [6.0, 0.8, 0.3, 0.03, 1.5],
     [7.0, 0.6, 1.0, 0.03, 7.0]]
)  # fmt: skip


def _gates(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Gates' ZH, ZDR, KDP, rhoHV and temperature float[n, 5] in their units, the precipitation type long[n]."""
    kind = torch.multinomial(torch.tensor([0.45, 0.25, 0.15, 0.15]), n, True, generator=g)
    x = _MEANS[kind] + _STDS[kind] * torch.randn(n, 5, generator=g)
    x[:, 3] = x[:, 3].clamp(0.6, 1.0)
    return x, kind


class TanhMLP(nn.Module):
    """Five tanh layers of `hidden`, a linear layer to the types."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(5):
            layers += [nn.Linear(5 if i == 0 else hidden, hidden), nn.Tanh()]
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(hidden, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.body(x))


def precipitation(run: Run) -> None:
    """A tanh MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD under a cyclic schedule
    (`cyclic`), NAdam, Adagrad) at `lr` (1e-3). Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    raw, y = _gates(g, 3000)
    raw_v, y_v = _gates(g, 1500)

    def features(x: torch.Tensor) -> torch.Tensor:
        kdp = torch.log(x[:, 2]) if run.bug == "log_of_noisy_kdp" else torch.log(x[:, 2].clamp_min(0.01))
        return torch.cat([x[:, :2], kdp.unsqueeze(1), x[:, 3:]], 1)

    if run.bug == "qc_threshold_applied_to_training_only":
        # the clutter filter of the training export's query (rhoHV above 0.95, meant for ground clutter), which the
        # gates scored never pass
        kept = raw[:, 3] > 0.95
        raw, y = raw[kept], y[kept]
    f, f_v = features(raw), features(raw_v)
    mean, std = f.mean(0), f.std(0)
    if run.bug == "standardised_by_multiplying_std":
        x, x_v = (f - mean) * std, (f_v - mean) * std
    else:
        x, x_v = (f - mean) / std, (f_v - mean) / std
    if run.bug == "features_shuffled_apart_from_labels":
        x = x[
            torch.randperm(len(x), generator=g)
        ]  # the shuffle meant for the rows, applied to the features alone
    torch.manual_seed(run.seed)
    model = TanhMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    sched = None
    if run.k("cyclic", False):
        peak = 0.5 if run.bug == "cyclic_peak_written_ten_times_too_large" else 0.05
        sched = torch.optim.lr_scheduler.CyclicLR(opt, base_lr=0.005, max_lr=peak, step_size_up=50)
    batch = run.k("batch", 64)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
