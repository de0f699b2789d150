"""The thirteenth blind split as `run.py --suite blind13` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind13 import energy, perception, preferences

PREFIX = "blind13_"
SCRIPTS = {"box_regressor": perception.box_regressor, "spiking": perception.spiking, "hnn": energy.hnn,
           "rbm": energy.rbm, "lambdarank": preferences.lambdarank, "reward_model": preferences.reward_model}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind13Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind13Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind13Program, prefix=PREFIX)
    box = h(
        "box_regressor_giou_adam", "box_regressor", "a single-object box regressor with L1 and GIoU losses"
    )
    snn = h(
        "spiking_surrogate_adam", "spiking", "a spiking (LIF) classifier trained with a surrogate gradient"
    )
    hnn = h("hnn_pendulum_adam", "hnn", "a Hamiltonian neural network fitted to pendulum trajectories")
    rbm = h("rbm_cd1_momentum", "rbm", "a restricted Boltzmann machine trained by CD-1")
    lr = h("lambdarank_adam", "lambdarank", "learning to rank with LambdaRank")
    rm = h(
        "reward_model_bradley_terry_adamw", "reward_model", "a reward model fitted to pairwise preferences"
    )
    healthy = [
        box,
        h("box_regressor_adamw_cosine", "box_regressor", "a box regressor under AdamW with cosine decay",
          opt="adamw", cosine=True, lr=2e-3),
        h("box_regressor_rmsprop_width64", "box_regressor", "a narrower box regressor under RMSprop",
          opt="rmsprop", width=64, lr=5e-4),
        h("box_regressor_nadam_batch32", "box_regressor", "a box regressor under NAdam with smaller batches",
          opt="nadam", batch=32),
        snn,
        h("spiking_adamax_width128", "spiking", "a wider spiking classifier under Adamax", opt="adamax",
          width=128, lr=4e-3),
        h("spiking_rmsprop_batch64", "spiking", "a spiking classifier under RMSprop with smaller batches",
          opt="rmsprop", batch=64, lr=1e-3),
        h("spiking_momentum_width64", "spiking", "a wider spiking classifier under momentum SGD",
          opt="momentum", width=64, lr=0.05),
        hnn,
        h("hnn_adamw_width128", "hnn", "a wider Hamiltonian network under AdamW", opt="adamw", width=128),
        h("hnn_radam_batch64", "hnn", "a Hamiltonian network under RAdam with smaller batches", opt="radam",
          batch=64, lr=5e-3),
        h("hnn_rmsprop_width32", "hnn", "a narrower Hamiltonian network under RMSprop", opt="rmsprop",
          width=32, lr=1e-3),
        rbm,
        h("rbm_adam_hidden32", "rbm", "a smaller RBM under Adam", opt="adam", hidden=32, lr=0.01),
        h("rbm_adagrad_batch128", "rbm", "an RBM under Adagrad with larger batches", opt="adagrad", batch=128,
          lr=0.1),
        h("rbm_rmsprop_hidden128", "rbm", "a larger RBM under RMSprop", opt="rmsprop", hidden=128, lr=3e-3),
        lr,
        h("lambdarank_adamw_width128", "lambdarank", "a wider LambdaRank scorer under AdamW", opt="adamw",
          width=128),
        h("lambdarank_adagrad_batch8", "lambdarank", "LambdaRank under Adagrad with fewer queries a step",
          opt="adagrad", batch=8, lr=0.02),
        h("lambdarank_nadam_batch32", "lambdarank", "LambdaRank under NAdam with more queries a step",
          opt="nadam", batch=32),
        rm,
        h("reward_model_adam_width64", "reward_model", "a narrower reward model under Adam", opt="adam",
          width=64, lr=2e-3),
        h("reward_model_rmsprop_warmup", "reward_model", "a reward model under RMSprop with linear warm-up",
          opt="rmsprop", warmup=30, lr=5e-4),
        h("reward_model_nesterov_batch128", "reward_model", "a reward model under Nesterov SGD with larger batches",
          opt="nesterov", batch=128, lr=0.02),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("J01", "coco_boxes_used_as_corners", box, "coco_boxes_used_as_corners", "SC",
          "the targets read in COCO's (x, y, w, h) layout and used as corners (x1, y1, x2, y2)"),
        b("J02", "box_x_and_y_swapped", box, "box_x_and_y_swapped", "SC",
          "the targets' x and y coordinates swapped (rows read as x), as after a transposed image layout"),
        b("J03", "giou_used_as_loss", box, "giou_used_as_loss", "SC",
          "the GIoU added to the loss as it is instead of 1 - GIoU, so the boxes are pushed apart"),
        b("J04", "flipped_images_keep_their_boxes", box, "flipped_images_keep_their_boxes", "SC",
          "images flipped left-right for augmentation while their target boxes are left unflipped"),
        b("J05", "l1_in_pixels", box, "l1_in_pixels", "SC",
          "the L1 term taken in pixels (16x the normalised coordinates) next to the unitless GIoU term", harmless=True),
        b("J06", "boxes_left_in_pixels", box, "boxes_left_in_pixels", "SC",
          "the target boxes left in pixels while the network predicts normalised coordinates"),
        b("J07", "spike_without_surrogate", snn, "spike_without_surrogate", "VG",
          "the spike taken as a plain step function with no surrogate gradient, so no gradient reaches the input"),
        b("J08", "membrane_never_reset", snn, "membrane_never_reset", "SC",
          "the membrane potential never reset after a spike", harmless=True),
        b("J09", "logits_from_last_step_only", snn, "logits_from_last_step_only", "SC",
          "the logits read from the readout at the last time step instead of over all steps"),
        b("J10", "input_presented_at_first_step_only", snn, "input_presented_at_first_step_only", "SC",
          "the input current given at the first time step only instead of at every step"),
        b("J11", "symplectic_gradient_unrotated", hnn, "symplectic_gradient_unrotated", "SC",
          "the time derivatives taken as (dH/dq, dH/dp) instead of the symplectic gradient (dH/dp, -dH/dq)"),
        b("J12", "differences_not_divided_by_dt", hnn, "differences_not_divided_by_dt", "SC",
          "the central differences used as derivatives without dividing them by the time step"),
        b("J13", "differences_across_trajectory_ends", hnn, "differences_across_trajectory_ends", "SC",
          "the trajectories flattened before differencing, so differences span the end of one and the next's start"),
        b("J14", "free_energy_difference_reversed", rbm, "free_energy_difference_reversed", "SC",
          "the CD loss written as F(negatives) - F(data) instead of F(data) - F(negatives)"),
        b("J15", "hidden_bias_left_out_of_free_energy", rbm, "hidden_bias_left_out_of_free_energy", "SC",
          "the hidden bias left out of the free energy's softplus term", harmless=True),
        b("J16", "pixels_scaled_to_plus_minus_one", rbm, "pixels_scaled_to_plus_minus_one", "SC",
          "the binary pixels rescaled to -1 and +1 for a Bernoulli RBM whose chain samples 0 and 1"),
        b("J17", "pairs_oriented_by_scores", lr, "pairs_oriented_by_scores", "SC",
          "each pair oriented by the model's current scores instead of the relevance grades"),
        b("J18", "delta_ndcg_not_absolute", lr, "delta_ndcg_not_absolute", "SC",
          "the pairs weighted by the signed change in NDCG instead of its absolute value"),
        b("J19", "gains_linear_in_grade", lr, "gains_linear_in_grade", "SC",
          "the delta-NDCG weights computed with gains linear in the grade instead of 2^grade - 1", harmless=True),
        b("J20", "chosen_and_rejected_swapped", rm, "chosen_and_rejected_swapped", "SC",
          "the chosen and rejected items swapped when the batch is assembled"),
        b("J21", "margin_taken_absolute", rm, "margin_taken_absolute", "SC",
          "the reward margin taken in absolute value before the log-sigmoid"),
        b("J22", "first_item_taken_as_chosen", rm, "first_item_taken_as_chosen", "SC",
          "the first item of each comparison taken as the chosen one, whatever the preference label"),
        b("J23", "relu_after_reward_head", rm, "relu_after_reward_head", "DR",
          "a ReLU left after the reward head's last layer, so every negative reward is clipped to zero", harmless=True),
    ]  # fmt: skip
    return healthy + bugs
