"""What `run.py --suite blind7` trains: the seventh blind split's 28 healthy programs and 19 bugs, and how the
ground truth is set.

Each program was written from a one-line brief (a typical training script in a setting the six earlier splits did
not cover; a reported mistake none of them used) without the rules, their documents or any score, and the split
was frozen before it was scored. The mechanics are all imported: `train` binds this split's `SCRIPTS` to the first
split's runner (`blind.suite.train`), `label` is the first split's oracle label, the declarations are the second
split's, and `split_of` gives even seeds to calibration and odd ones to the report. A bug names its twin, its
category and the step it acts from; the bugs the smoke runs found harmless against their twins (README.md) are
declared `harmless` (`should_stop=False`), so they count neither as misses nor as false alarms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from benchmarks.detection.blind import suite as blind
from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind2 import suite as second
from benchmarks.detection.blind7 import decisions, latent, sequences

SCRIPTS: dict[str, Callable[[Run], None]] = {
    "vqvae": latent.vqvae, "sparse_ae": latent.sparse_ae, "fourier": latent.fourier,
    "bayes": latent.bayes_by_backprop,
    "ssm": sequences.ssm, "rotary_lm": sequences.rotary_lm,
    "cox": decisions.cox, "bpr": decisions.bpr, "bandit": decisions.bandit,
}  # fmt: skip
"""The script of each workload."""
PREFIX, CATEGORIES, split_of = "blind7_", blind.CATEGORIES, blind.split_of
train = partial(blind.train, scripts=SCRIPTS)
"""`blind.suite.train` with this split's scripts: one program and seed through the hook into `out` (None: inert)."""
label = blind.label
"""The oracle's harm label and visible step of each bug run (`blind.suite.label`)."""


@dataclass(frozen=True)
class Blind7Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind7Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind7Program, prefix=PREFIX)
    vq = h("vqvae_commitment", "vqvae", "a VQ-VAE with a codebook and commitment loss")
    sae = h("sparse_autoencoder_l1", "sparse_ae", "a sparse autoencoder with an L1 penalty on its codes")
    ff = h("fourier_features_mlp", "fourier", "a coordinate MLP with Fourier features fitting an image")
    ssm = h("diagonal_ssm_adam", "ssm", "a state-space model with a learned diagonal linear recurrence")
    lm = h("rotary_lm_warmup_cosine", "rotary_lm",
           "a small transformer LM with rotary embeddings, warm-up + cosine and gradient clipping")  # fmt: skip
    cox = h("cox_survival_adam", "cox", "a Cox proportional-hazards network on censored survival data")
    bpr = h("bpr_matrix_factorisation", "bpr", "a BPR matrix-factorisation recommender on implicit feedback")
    bnn = h(
        "bayes_by_backprop_adam", "bayes", "a Bayes-by-backprop MLP regression (variational weights, ELBO)"
    )
    rl = h("reinforce_baseline_bandit", "bandit", "REINFORCE with a learned baseline on a contextual bandit")
    healthy = [
        vq,
        h("vqvae_adamw_batch64", "vqvae", "a VQ-VAE under AdamW with small batches", opt="adamw", batch=64),
        h("vqvae_adamax", "vqvae", "a VQ-VAE trained with Adamax", opt="adamax", lr=4e-3),
        sae,
        h("sparse_autoencoder_nadam", "sparse_ae", "a sparse autoencoder under NAdam with a lighter penalty",
          opt="nadam", l1=1e-3),
        h("sparse_autoencoder_adadelta", "sparse_ae", "a sparse autoencoder trained with Adadelta", opt="adadelta"),
        ff,
        h("fourier_features_radam_cosine", "fourier", "a Fourier-feature MLP under RAdam with cosine annealing",
          opt="radam", cosine=True),
        h("fourier_features_sigma4_lr_3e-3", "fourier", "a Fourier-feature MLP with smaller frequencies",
          sigma=4.0, lr=3e-3, batch=128),
        bnn,
        h("bayes_by_backprop_adamw_batch50", "bayes", "a Bayes-by-backprop MLP under AdamW with small batches",
          opt="adamw", batch=50),
        h("bayes_by_backprop_nesterov", "bayes", "a Bayes-by-backprop MLP under Nesterov SGD", opt="nesterov"),
        ssm,
        h("diagonal_ssm_adamw", "ssm", "a state-space model under AdamW with small batches", opt="adamw",
          batch=32),
        h("diagonal_ssm_adamax", "ssm", "a state-space model trained with Adamax", opt="adamax", lr=5e-3),
        lm,
        h("rotary_lm_short_warmup_batch64", "rotary_lm", "a rotary LM with a short warm-up and larger batches",
          warmup=10, batch=64),
        h("rotary_lm_lr_1e-3", "rotary_lm", "a rotary LM at a smaller rate", lr=1e-3, warmup=50),
        cox,
        h("cox_survival_radam_wide", "cox", "a wider Cox network under RAdam", opt="radam", hidden=64),
        h("cox_survival_batch256_lr_3e-3", "cox", "a Cox network with larger batches and rate", batch=256, lr=3e-3),
        h("cox_survival_nesterov_step_decay", "cox", "a Cox network under Nesterov SGD with step decay",
          opt="nesterov"),
        bpr,
        h("bpr_asgd", "bpr", "a BPR recommender trained with averaged SGD", opt="asgd"),
        h("bpr_nesterov_dim16", "bpr", "a smaller BPR recommender under Nesterov SGD", opt="nesterov", dim=16),
        rl,
        h("reinforce_rmsprop_noisy", "bandit", "REINFORCE with a baseline under RMSprop with noisier rewards",
          opt="rmsprop", noise=1.0),
        h("reinforce_nadam_batch128", "bandit", "REINFORCE with a baseline under NAdam with larger batches",
          opt="nadam", batch=128),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("T01", "codebook_loss_fully_detached", vq, "codebook_loss_fully_detached", "SC",
          "the VQ-VAE's codebook term computed with both sides detached: the codebook never moves"),
        b("T02", "nearest_code_by_argmax", vq, "nearest_code_by_argmax", "SC",
          "the VQ-VAE's code chosen by argmax of the distance instead of argmin"),
        b("T03", "l1_summed_over_batch", sae, "l1_summed_over_batch", "DR",
          "the sparse autoencoder's L1 penalty summed over the batch as well as the codes"),
        b("T04", "coordinates_in_pixel_units", ff, "coordinates_in_pixel_units", "OF",
          "the Fourier-feature MLP fed pixel indices instead of coordinates in [0, 1]"),
        b("T05", "fourier_matrix_redrawn_each_forward", ff, "fourier_matrix_redrawn_each_forward", "SC",
          "the random Fourier matrix drawn inside forward(), anew at every call"),
        b("T06", "decay_exponent_sign_flipped", ssm, "decay_exponent_sign_flipped", "EG",
          "the recurrence's decay written exp(exp(x)) instead of exp(-exp(x)): every state grows"),
        b("T07", "state_detached_every_step", ssm, "state_detached_every_step", "VG",
          "the recurrent state detached at every time step"),
        b("T08", "causal_mask_inverted", lm, "causal_mask_inverted", "OF",
          "the causal attention mask inverted: each token attends to itself and the future"),
        b("T09", "attention_scaled_by_sqrt_d", lm, "attention_scaled_by_sqrt_d", "VG",
          "the attention logits multiplied by sqrt(d_head) instead of divided", harmless=True),
        b("T10", "attention_softmax_over_queries", lm, "attention_softmax_over_queries", "SC",
          "the attention softmax taken over the queries (dim -2) instead of the keys"),
        b("T11", "times_sorted_ascending", cox, "times_sorted_ascending", "SC",
          "the Cox partial likelihood's batch sorted by ascending time: each risk set holds the earlier times"),
        b("T12", "event_read_as_censoring", cox, "event_read_as_censoring", "SC",
          "the status column read as a censoring indicator: events and censorings swapped"),
        b("T13", "seen_and_unseen_swapped", bpr, "seen_and_unseen_swapped", "SC",
          "BPR with the seen and the sampled unseen item swapped"),
        b("T14", "negatives_drawn_from_user_range", bpr, "negatives_drawn_from_user_range", "SC",
          "BPR's unseen items drawn from range(number of users), fewer than the items"),
        b("T15", "advantage_not_detached", rl, "advantage_not_detached", "SC",
          "the REINFORCE advantage not detached from the baseline network", harmless=True),
        b("T16", "log_prob_of_greedy_arm", rl, "log_prob_of_greedy_arm", "SC",
          "the policy gradient taken on the log-probability of the greedy arm instead of the sampled one"),
        b("T17", "kl_scaled_by_dataset_size", bnn, "kl_scaled_by_dataset_size", "SC",
          "the ELBO's KL term multiplied by the number of examples instead of divided by it"),
        b("T18", "log_sigma_used_as_sigma", bnn, "log_sigma_used_as_sigma", "NaN",
          "the unconstrained rho (initialised at -5) used as the weights' standard deviation, without softplus"),
        b("T19", "hazard_used_as_log_risk", cox, "hazard_used_as_log_risk", "SC",
          "the Cox network's output exponentiated (a hazard) before the partial likelihood, which takes log-risks",
          harmless=True),
    ]  # fmt: skip
    return healthy + bugs
