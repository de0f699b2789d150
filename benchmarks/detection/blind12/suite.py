"""The twelfth blind split as `run.py --suite blind12` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind12 import estimation, language, science

PREFIX = "blind12_"
SCRIPTS = {"skipgram": language.skipgram, "crf": language.crf, "force_field": science.force_field,
           "deep_kernel": science.deep_kernel, "tarnet": estimation.tarnet, "tweedie": estimation.tweedie}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind12Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind12Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind12Program, prefix=PREFIX)
    sg = h(
        "skipgram_negative_sampling_adam", "skipgram", "word embeddings by skip-gram with negative sampling"
    )
    crf = h("crf_tagger_adam", "crf", "a sequence tagger with a linear-chain CRF")
    ff = h("force_field_morse_adam", "force_field", "an interatomic potential fitted to energies and forces")
    dk = h("deep_kernel_gp_adam", "deep_kernel", "a Gaussian process with a deep kernel")
    tar = h("tarnet_effects_adam", "tarnet", "TARNet for individual treatment effects")
    tw = h("tweedie_premium_adam", "tweedie", "an insurance pure-premium model with a Tweedie loss")
    healthy = [
        sg,
        h("skipgram_adagrad_dim64", "skipgram", "skip-gram under Adagrad with wider embeddings", opt="adagrad",
          lr=0.1, dim=64),
        h("skipgram_rmsprop_batch256", "skipgram", "skip-gram under RMSprop with smaller batches", opt="rmsprop",
          lr=3e-3, batch=256),
        h("skipgram_adamw_dim32", "skipgram", "skip-gram under AdamW with narrower embeddings", opt="adamw",
          dim=32, lr=0.02),
        crf,
        h("crf_tagger_nadam_width128", "crf", "a wider CRF tagger under NAdam", opt="nadam", width=128),
        h("crf_tagger_momentum_batch32", "crf", "a CRF tagger under momentum SGD with smaller batches",
          opt="momentum", lr=0.05, batch=32),
        h("crf_tagger_adamax_dim32", "crf", "a CRF tagger under Adamax with wider embeddings", opt="adamax",
          dim=32, lr=0.02),
        ff,
        h("force_field_adamw_cosine", "force_field", "an interatomic potential under AdamW with cosine decay",
          opt="adamw", cosine=True, lr=5e-3),
        h("force_field_radam_width32", "force_field", "a narrower potential under RAdam", opt="radam",
          width=32),
        h("force_field_adamax_forces_x10", "force_field", "a potential under Adamax weighting the forces 10x",
          opt="adamax", rho=10.0, batch=64),
        dk,
        h("deep_kernel_gp_adamw_width32", "deep_kernel", "a narrower deep kernel under AdamW", opt="adamw",
          width=32),
        h("deep_kernel_gp_rmsprop_batch64", "deep_kernel", "a deep kernel GP under RMSprop with smaller batches",
          opt="rmsprop", lr=3e-3, batch=64),
        h("deep_kernel_gp_nadam_batch256", "deep_kernel", "a deep kernel GP under NAdam with larger batches",
          opt="nadam", batch=256, lr=5e-3),
        tar,
        h("tarnet_effects_adamw_width128", "tarnet", "a wider TARNet under AdamW", opt="adamw", width=128),
        h("tarnet_effects_nadam_batch64", "tarnet", "TARNet under NAdam with smaller batches", opt="nadam",
          batch=64),
        h("tarnet_effects_nesterov", "tarnet", "TARNet under Nesterov SGD", opt="nesterov", lr=0.01),
        tw,
        h("tweedie_premium_adagrad", "tweedie", "a Tweedie premium model under Adagrad", opt="adagrad", lr=0.05),
        h("tweedie_premium_rmsprop_width64", "tweedie", "a wider Tweedie premium model under RMSprop",
          opt="rmsprop", width=64, lr=1e-3),
        h("tweedie_premium_adamw_batch512", "tweedie", "a Tweedie premium model under AdamW with larger batches",
          opt="adamw", batch=512, lr=5e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("K01", "negative_scores_not_negated", sg, "negative_scores_not_negated", "SC",
          "the negatives' scores put into log sigma without their minus sign: negatives are pulled in like contexts"),
        b("K02", "negatives_drawn_once", sg, "negatives_drawn_once", "SC",
          "the negative samples drawn once before the loop and reused at every step"),
        b("K03", "both_tables_initialised_at_zero", sg, "both_tables_initialised_at_zero", "VG",
          "the centre embeddings initialised at zero like the context table, so neither receives a gradient"),
        b("K04", "gold_transitions_transposed", crf, "gold_transitions_transposed", "SC",
          "the gold path's transition scores read as trans[to, from] while the forward algorithm uses [from, to]"),
        b("K05", "forward_logsumexp_over_next_tag", crf, "forward_logsumexp_over_next_tag", "EG",
          "the forward algorithm's log-sum-exp taken over the next tag instead of the previous one"),
        b("K06", "emissions_scored_against_next_tag", crf, "emissions_scored_against_next_tag", "SC",
          "the tags shifted by one position, as for a language model, so each token is scored against the next tag"),
        b("K07", "self_distance_under_sqrt", ff, "self_distance_under_sqrt", "NaN",
          "the square root taken over the full distance matrix, zero self-distances included, masked afterwards"),
        b("K08", "forces_as_plus_gradient", ff, "forces_as_plus_gradient", "SC",
          "the predicted forces taken as plus the energy's gradient instead of minus"),
        b("K09", "rotation_augmentation_forces_unrotated", ff, "rotation_augmentation_forces_unrotated", "SC",
          "the configurations rotated at random for augmentation while their target forces are left unrotated"),
        b("K10", "logdet_term_dropped", dk, "logdet_term_dropped", "SC",
          "the GP's negative log marginal likelihood without its log-determinant term"),
        b("K11", "single_triangular_solve", dk, "single_triangular_solve", "SC",
          "K^-1 y computed by one triangular solve with the Cholesky factor instead of cholesky_solve"),
        b("K12", "lengthscale_not_squared", dk, "lengthscale_not_squared", "SC",
          "the squared feature distance divided by the lengthscale instead of its square", harmless=True),
        b("K13", "targets_not_standardised", dk, "targets_not_standardised", "SC",
          "the targets (around 3) given to the zero-mean GP without standardising them", harmless=True),
        b("K14", "treatment_inverted_when_picking_head", tar, "treatment_inverted_when_picking_head", "SC",
          "the factual head picked with t == 0 for the treated head: each arm's outcomes fit the other arm's head"),
        b("K15", "both_heads_fit_every_row", tar, "both_heads_fit_every_row", "SC",
          "both outcome heads fitted to every row's factual outcome, whatever arm the row received"),
        b("K16", "claim_free_rows_dropped", tw, "claim_free_rows_dropped", "SC",
          "the policies without claims dropped from the training set"),
        b("K17", "exposure_offset_not_logged", tw, "exposure_offset_not_logged", "SC",
          "the exposure added to the log mean as an offset without taking its logarithm"),
        b("K18", "log_link_left_out", tw, "log_link_left_out", "NaN",
          "the network's output used as the mean without the exponential (log link): negative means under a "
          "fractional power"),
        b("K19", "deviance_powers_swapped", tw, "deviance_powers_swapped", "EG",
          "the Tweedie deviance written with its two powers 1-p and 2-p swapped"),
        b("K20", "context_looked_up_in_centre_table", sg, "context_looked_up_in_centre_table", "SC",
          "the positive pair's context looked up in the centre table while the negatives use the context table"),
        b("K21", "exposure_as_weight_and_offset", tw, "exposure_as_weight_and_offset", "SC",
          "the exposure used both as the log-offset and as a sample weight on the deviance", harmless=True),
    ]  # fmt: skip
    return healthy + bugs
