"""The fourteenth blind split as `run.py --suite blind14` sees it: which script trains each workload, the healthy
programs and bugs with their labels, and the runner and oracle they go through.

Nothing here is this split's own machinery. Training is `blind.suite.train` over `SCRIPTS`, the harm labels are
`blind.suite.label`'s (each bug against its fixed twin, seed by seed), the declarations come from
`blind2.suite.declare_healthy` and `declare_bug`, and seeds split by parity (`blind.suite.split_of`: even ones
calibrate, odd ones report). The programs were written from one-line briefs with the rules, their documents and
every score left unread, and were committed before anything scored them. Each bug says which twin it breaks, its
category and the step it acts from; a bug the smoke runs found harmless is declared `harmless` (README.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from benchmarks.detection.blind import suite as blind
from benchmarks.detection.blind2 import suite as second
from benchmarks.detection.blind14 import behaviour, perception, tabular

PREFIX = "blind14_"
SCRIPTS = {"capsules": perception.capsules, "pitch": perception.pitch, "evidential": tabular.evidential,
           "additive": tabular.additive, "cloning": behaviour.cloning, "next_basket": behaviour.next_basket}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind14Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind14Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind14Program, prefix=PREFIX)
    caps = h("capsules_routing_adam", "capsules", "a capsule network with routing by agreement")
    crepe = h("pitch_crepe_adam", "pitch", "a CREPE-style pitch estimator on raw waveform frames")
    edl = h("evidential_nig_adam", "evidential", "deep evidential regression (normal-inverse-gamma)")
    nam = h("additive_nam_adam", "additive", "a neural additive model for credit risk")
    bc = h(
        "cloning_gaussian_adam", "cloning", "behaviour cloning of an expert controller with a Gaussian policy"
    )
    nb = h("next_basket_gru_adam", "next_basket", "a next-basket recommender (a GRU over basket embeddings)")
    healthy = [
        caps,
        h("capsules_adamw_dim16", "capsules", "a capsule network with wider class capsules under AdamW",
          opt="adamw", dim=16),
        h("capsules_rmsprop_routing2", "capsules", "a capsule network with two routing rounds under RMSprop",
          opt="rmsprop", routing=2, lr=1e-3),
        h("capsules_nadam_batch32", "capsules", "a capsule network under NAdam with smaller batches",
          opt="nadam", batch=32, lr=2e-3),
        crepe,
        h("pitch_adamw_cosine", "pitch", "a pitch estimator under AdamW with cosine decay", opt="adamw",
          cosine=True, lr=2e-3),
        h("pitch_adamax_channels16", "pitch", "a narrower pitch estimator under Adamax", opt="adamax",
          channels=16, lr=2e-3),
        h("pitch_nesterov_batch128", "pitch", "a pitch estimator under Nesterov SGD with larger batches",
          opt="nesterov", batch=128, lr=0.02),
        edl,
        h("evidential_adamw_width128", "evidential", "a wider evidential regressor under AdamW", opt="adamw",
          width=128),
        h("evidential_rmsprop_warmup", "evidential", "an evidential regressor under RMSprop with linear warm-up",
          opt="rmsprop", warmup=30, lr=5e-4),
        h("evidential_radam_batch64", "evidential", "an evidential regressor under RAdam with smaller batches",
          opt="radam", batch=64, lr=2e-3),
        nam,
        h("additive_adagrad_width16", "additive", "a narrower additive model under Adagrad", opt="adagrad",
          width=16, lr=0.03),
        h("additive_adamw_batch128", "additive", "an additive model under AdamW with smaller batches",
          opt="adamw", batch=128),
        h("additive_nadam_width64", "additive", "a wider additive model under NAdam", opt="nadam", width=64,
          lr=2e-3),
        bc,
        h("cloning_adamw_width128", "cloning", "a wider cloned policy under AdamW", opt="adamw", width=128),
        h("cloning_rmsprop_batch64", "cloning", "a cloned policy under RMSprop with smaller batches",
          opt="rmsprop", batch=64, lr=5e-4),
        h("cloning_adamax_width32", "cloning", "a narrower cloned policy under Adamax", opt="adamax", width=32,
          lr=3e-3),
        nb,
        h("next_basket_adamw_dim64", "next_basket", "a wider next-basket GRU under AdamW", opt="adamw", dim=64),
        h("next_basket_adagrad_batch128", "next_basket", "a next-basket GRU under Adagrad with larger batches",
          opt="adagrad", batch=128, lr=0.05),
        h("next_basket_nadam_batch32", "next_basket", "a next-basket GRU under NAdam with smaller batches",
          opt="nadam", batch=32),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("H01", "squash_over_capsules", caps, "squash_over_capsules", "SC",
          "the primary capsules squashed over the capsules axis instead of each capsule's own vector", harmless=True),
        b("H02", "coupling_softmax_over_inputs", caps, "coupling_softmax_over_inputs", "SC",
          "the routing couplings softmaxed over the input capsules instead of over the class capsules"),
        b("H03", "margins_swapped", caps, "margins_swapped", "SC",
          "the margin loss's m+ (0.9) and m- (0.1) swapped"),
        b("H04", "routing_logits_carried_over", caps, "routing_logits_carried_over", "SC",
          "the routing logits kept from the previous batch instead of starting from zero for each input"),
        b("H05", "labelled_by_strongest_harmonic", crepe, "labelled_by_strongest_harmonic", "SC",
          "the pitch labels taken from the strongest harmonic (a spectral peak picker) instead of the fundamental"),
        b("H06", "labels_for_8khz", crepe, "labels_for_8khz", "SC",
          "the pitch labels computed for an 8 kHz recording while the frames are at 4 kHz (an octave off)"),
        b("H07", "speed_perturbed_label_unchanged", crepe, "speed_perturbed_label_unchanged", "SC",
          "speed perturbation applied to the audio with the pitch label left unchanged"),
        b("H08", "pitch_bin_truncated", crepe, "pitch_bin_truncated", "SC",
          "the label's pitch bin truncated by int() instead of kept fractional, half a semitone flat on average"),
        b("H09", "softplus_on_every_head", edl, "softplus_on_every_head", "SC",
          "the softplus applied to all four outputs, so the predicted mean cannot go below zero"),
        b("H10", "evidence_heads_raw", edl, "evidence_heads_raw", "NaN",
          "nu, alpha - 1 and beta taken from the raw outputs with no softplus, so they can go negative"),
        b("H11", "omega_without_nu", edl, "omega_without_nu", "SC",
          "the NIG likelihood's Omega written 2 beta instead of 2 beta (1 + nu)", harmless=True),
        b("H12", "targets_sorted_in_place", edl, "targets_sorted_in_place", "SC",
          "the targets sorted in place (ndarray.sort() on the tensor's shared memory) to read off winsorising bounds"),
        b("H13", "feature_nets_one_module_repeated", nam, "feature_nets_one_module_repeated", "SC",
          "the feature networks built as [FeatureNet()] * 6, one module shared by every field"),
        b("H14", "last_field_left_out", nam, "last_field_left_out", "SC",
          "the last field (late payments) left out of the sum by an off-by-one range"),
        b("H15", "labels_coded_minus_one_and_one", nam, "labels_coded_minus_one_and_one", "SC",
          "the default labels coded -1 and +1 (an SVM habit) and fed to the BCE"),
        b("H16", "log_std_used_as_std", bc, "log_std_used_as_std", "NaN",
          "the policy's log standard deviation used as the standard deviation"),
        b("H17", "goal_not_in_observation", bc, "goal_not_in_observation", "SC",
          "the observation built from position and velocity only, without the goal"),
        b("H18", "observations_paired_with_next_actions", bc, "observations_paired_with_next_actions", "SC",
          "each observation paired with the next step's action by an off-by-one zip", harmless=True),
        b("H19", "target_basket_in_history", nb, "target_basket_in_history", "SC",
          "the history window shifted by one, so the basket to predict is the history's last basket", harmless=True),
        b("H20", "histories_and_targets_shuffled_apart", nb, "histories_and_targets_shuffled_apart", "SC",
          "the histories and the target baskets drawn by two separately shuffled loaders"),
        b("H21", "history_fed_newest_first", nb, "history_fed_newest_first", "SC",
          "the baskets sorted newest first before the GRU reads them", harmless=True),
        b("H22", "target_item_ids_off_by_one", nb, "target_item_ids_off_by_one", "SC",
          "the target baskets' item ids read 1-based while the histories' are 0-based, so every target is the next id"),
        b("H23", "actions_minmax_scaled", bc, "actions_minmax_scaled", "SC",
          "the recorded actions min-max scaled to [0, 1] for training and the policy's output never scaled back"),
    ]  # fmt: skip
    return healthy + bugs
