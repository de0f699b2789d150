"""The tenth blind split as `run.py --suite blind10` sees it: which script trains each workload, the 28 healthy
programs and 17 bugs with their labels, and the runner and oracle they go through.

Nothing here is this split's own machinery. Training is `blind.suite.train` over `SCRIPTS`, the harm labels are
`blind.suite.label`'s (each bug against its fixed twin, seed by seed), the declarations come from
`blind2.suite.declare_healthy` and `declare_bug`, and seeds split by parity (`blind.suite.split_of`: even ones
calibrate, odd ones report). The programs were written from one-line briefs with the rules, their documents and
every score left unread, and were committed before anything scored them. Each bug says which twin it breaks, its
category and the step it acts from; a bug found harmless in the smoke runs would be declared `harmless` (none was:
README.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from benchmarks.detection.blind import suite as blind
from benchmarks.detection.blind2 import suite as second
from benchmarks.detection.blind10 import learning, sequences, vision

PREFIX = "blind10_"
SCRIPTS = {"depth": vision.depth, "keypoints": vision.keypoints, "counting": vision.counting,
           "sasrec": sequences.sasrec, "tpp": sequences.tpp, "maml": learning.maml, "fedavg": learning.fedavg}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind10Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind10Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind10Program, prefix=PREFIX)
    dep = h("depth_silog_adam", "depth", "monocular depth with a scale-invariant log loss")
    kp = h("keypoint_heatmap_adam", "keypoints", "keypoint heatmap regression with Gaussian targets")
    cnt = h("crowd_density_adam", "counting", "crowd counting by density maps")
    rec = h(
        "sasrec_causal_adam", "sasrec", "SASRec-style sequential recommendation with causal self-attention"
    )
    tpp = h("neural_tpp_softplus_adam", "tpp", "a neural temporal point process with a softplus intensity")
    mml = h("maml_sine_adam", "maml", "MAML on few-shot sine regression")
    fed = h("fedavg_noniid_sgd", "fedavg", "federated averaging over non-IID clients", steps=200)
    healthy = [
        dep,
        h("depth_silog_adamw_width8", "depth", "a narrower depth network under AdamW", opt="adamw", width=8),
        h("depth_silog_nadam_batch48", "depth", "a depth network under NAdam with larger batches", opt="nadam",
          batch=48),
        h("depth_silog_adamax", "depth", "a depth network under Adamax", opt="adamax", lr=4e-3),
        kp,
        h("keypoint_heatmap_adamw_batch48", "keypoints", "heatmap regression under AdamW with larger batches",
          opt="adamw", batch=48),
        h("keypoint_heatmap_radam_width24", "keypoints", "a wider heatmap network under RAdam", opt="radam",
          width=24, steps=250),
        h("keypoint_heatmap_nesterov", "keypoints", "heatmap regression under Nesterov SGD", opt="nesterov"),
        cnt,
        h("crowd_density_adamax_batch32", "counting", "crowd counting under Adamax with larger batches",
          opt="adamax", batch=32, lr=2e-3),
        h("crowd_density_radam_width16", "counting", "a narrower counting network under RAdam", opt="radam",
          width=16, lr=2e-3),
        h("crowd_density_nadam", "counting", "crowd counting under NAdam", opt="nadam"),
        rec,
        h("sasrec_one_layer_adamw", "sasrec", "a one-layer SASRec under AdamW", opt="adamw", layers=1),
        h("sasrec_nadam_dim48", "sasrec", "a wider SASRec under NAdam", opt="nadam", dim=48),
        h("sasrec_adamax_batch96", "sasrec", "SASRec under Adamax with larger batches", opt="adamax", batch=96,
          lr=4e-3),
        tpp,
        h("neural_tpp_radam_hidden16", "tpp", "a smaller point-process GRU under RAdam", opt="radam", hidden=16),
        h("neural_tpp_adamw_batch64", "tpp", "a point-process GRU under AdamW with larger batches", opt="adamw",
          batch=64),
        h("neural_tpp_adamax", "tpp", "a point-process GRU under Adamax", opt="adamax", lr=6e-3),
        mml,
        h("maml_sine_nadam_two_inner_steps", "maml", "MAML with two inner steps under NAdam", opt="nadam",
          inner_steps=2),
        h("maml_sine_adamax_width64", "maml", "a wider MAML learner under Adamax", opt="adamax", width=64),
        h("maml_sine_radam", "maml", "MAML with a RAdam meta-optimizer", opt="radam"),
        fed,
        h("fedavg_server_momentum", "fedavg", "federated averaging with server momentum", opt="momentum",
          lr=0.5, steps=200),
        h("fedadam_server_adam", "fedavg", "federated learning with an Adam server optimizer", opt="adam",
          lr=0.01, steps=200),
        h("fedavg_local_lr_small_width128", "fedavg", "federated averaging of wider models at a smaller local rate",
          width=128, local_lr=0.02, steps=200),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("R01", "log_of_unclamped_prediction", dep, "log_of_unclamped_prediction", "NaN",
          "the log taken of the network's raw depth output, without the softplus that keeps it positive"),
        b("R02", "fully_scale_invariant_lambda", dep, "fully_scale_invariant_lambda", "SC",
          "the scale-invariant loss's lambda set to 1, so the absolute depth is never learnt"),
        b("R03", "flip_not_applied_to_depth", dep, "flip_not_applied_to_depth", "SC",
          "the random horizontal flip applied to the picture but not to its depth map"),
        b("R04", "sigma_zero_by_integer_division", kp, "sigma_zero_by_integer_division", "SC",
          "the heatmap's sigma computed as heatmap_size // 32, zero, so every target heatmap is empty"),
        b("R05", "keypoint_coordinates_transposed", kp, "keypoint_coordinates_transposed", "OL",
          "the target heatmaps drawn at (x, y) instead of (row, column): the keypoints' coordinates transposed"),
        b("R06", "density_normalised_per_image", cnt, "density_normalised_per_image", "SC",
          "each target density map normalised to sum to one, so the counts are lost"),
        b("R07", "density_averaged_when_downsampled", cnt, "density_averaged_when_downsampled", "SC",
          "the density maps downsampled to the output's size by averaging instead of summing: counts a quarter"),
        b("R08", "causal_mask_missing", rec, "causal_mask_missing", "SC",
          "the causal attention mask left out, so each position sees the next clicks while training"),
        b("R09", "targets_not_shifted", rec, "targets_not_shifted", "SC",
          "the targets not shifted by one: each position trained to predict its own item"),
        b("R10", "intensity_without_softplus", tpp, "intensity_without_softplus", "NaN",
          "the intensity written as a + b t without its softplus: negative intensities under the log"),
        b("R11", "integral_term_dropped", tpp, "integral_term_dropped", "SC",
          "the integral of the intensity left out of the likelihood, which then grows without bound"),
        b("R12", "log_gap_without_epsilon", tpp, "log_gap_without_epsilon", "NaN",
          "the GRU's log-gap input computed without its epsilon, so the first event's zero padding gives log 0"),
        b("R13", "inner_parameters_detached", mml, "inner_parameters_detached", "VG",
          "the inner step's parameters detached, so no meta-gradient reaches the initialisation"),
        b("R14", "query_loss_on_meta_parameters", mml, "query_loss_on_meta_parameters", "SC",
          "the query loss computed with the meta-parameters instead of the adapted ones: plain multi-task training"),
        b("R15", "pseudo_gradient_sign_reversed", fed, "pseudo_gradient_sign_reversed", "EG",
          "the server's pseudo-gradient written as new minus old, so the server steps away from the clients"),
        b("R16", "updates_taken_from_stale_global", fed, "updates_taken_from_stale_global", "OL",
          "the clients' changes measured from the previous round's global model, so old updates are applied again"),
        b("R17", "local_models_never_reset", fed, "local_models_never_reset", "SC",
          "each client's local model kept between rounds instead of reset to the global model"),
    ]  # fmt: skip
    return healthy + bugs
