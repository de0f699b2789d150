"""The seventeenth blind split as `run.py --suite blind17` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind17 import drawings, sequences, structures

PREFIX = "blind17_"
SCRIPTS = {"captioner": sequences.captioner, "reverser": sequences.reverser, "molecules": structures.molecules,
           "oblivious": structures.oblivious, "automaton": drawings.automaton, "sketches": drawings.sketches}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind17Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind17Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind17Program, prefix=PREFIX)
    cap = h("captioner_gru_adam", "captioner", "an image captioner (a small CNN encoder and a GRU decoder)")
    cap_sgd = h(
        "captioner_momentum_scaled",
        "captioner",
        "a captioner under momentum SGD at a rate scaled from batches of 256",
        opt="momentum",
    )
    cap_exp = h(
        "captioner_adamw_exp_decay",
        "captioner",
        "a captioner under AdamW decayed exponentially to 1%",
        opt="adamw",
        exp_decay=True,
    )
    rev = h("reverser_transformer_adam", "reverser", "an algorithmic transformer reversing digit strings")
    mol = h("molecules_mpnn_adam", "molecules", "a molecular property regressor by message passing")
    node = h(
        "oblivious_node_adam", "oblivious", "a neural oblivious decision ensemble scoring loan applications"
    )
    nca = h("automaton_nca_adam", "automaton", "a neural cellular automaton grown to a target pattern")
    sk = h("sketches_gru_adam", "sketches", "a sketch classifier reading pen strokes (a GRU over offsets)")
    sk_sgd = h(
        "sketches_nesterov_warmup",
        "sketches",
        "a sketch classifier under Nesterov SGD after a warm-up",
        opt="nesterov",
        lr=0.3,
        warmup=50,
    )
    healthy = [
        cap,
        cap_sgd,
        cap_exp,
        h("captioner_rmsprop_clipped", "captioner", "a wider captioner under RMSprop clipped at norm 1",
          opt="rmsprop", clip=1.0, lr=1e-3, width=96),
        rev,
        h("reverser_adamw_dim64", "reverser", "a wider digit reverser under AdamW", opt="adamw", dim=64),
        h("reverser_nadam_warmup60", "reverser", "a digit reverser under NAdam with a longer warm-up", opt="nadam",
          warmup=60),
        h("reverser_radam_batch128", "reverser", "a digit reverser under RAdam with larger batches", opt="radam",
          batch=128, lr=5e-3),
        mol,
        h("molecules_adamw_width96", "molecules", "a wider molecular regressor under AdamW", opt="adamw", width=96),
        h("molecules_rmsprop_epoch_decay", "molecules", "a molecular regressor under RMSprop halved every 3 epochs",
          opt="rmsprop", epoch_decay=True, lr=1e-3),
        h("molecules_adamax_rounds2", "molecules", "a molecular regressor of two rounds under Adamax", opt="adamax",
          rounds=2, lr=4e-3),
        node,
        h("oblivious_adamw_trees64", "oblivious", "a larger oblivious ensemble under AdamW", opt="adamw", trees=64),
        h("oblivious_nadam_depth3", "oblivious", "an oblivious ensemble of shallower trees under NAdam",
          opt="nadam", depth=3),
        h("oblivious_radam_batch256", "oblivious", "an oblivious ensemble under RAdam with larger batches",
          opt="radam", batch=256),
        nca,
        h("automaton_adamw_hidden64", "automaton", "a wider cellular automaton under AdamW", opt="adamw",
          hidden=64),
        h("automaton_adamax", "automaton", "a cellular automaton under Adamax", opt="adamax", lr=4e-3),
        h("automaton_rmsprop_batch8", "automaton", "a cellular automaton under RMSprop with more rollouts a step",
          opt="rmsprop", batch=8, lr=1e-3),
        sk,
        sk_sgd,
        h("sketches_rmsprop_hidden32", "sketches", "a narrower sketch classifier under RMSprop", opt="rmsprop",
          hidden=32, lr=2e-3),
        h("sketches_adamax_batch32", "sketches", "a sketch classifier under Adamax with smaller batches",
          opt="adamax", batch=32),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("E01", "lr_scaled_by_batch_not_by_ratio", cap_sgd, "lr_scaled_by_batch_not_by_ratio", "EG",
          "the linear scaling rule applied as the base rate times the batch size instead of times batch / 256"),
        b("E02", "exponential_gamma_given_as_final_factor", cap_exp, "exponential_gamma_given_as_final_factor", "VG",
          "ExponentialLR's per-step gamma given the decay meant for the whole run (0.01), so the rate is gone in a few "
          "steps"),
        b("E03", "encoder_state_never_passed", cap, "encoder_state_never_passed", "SC",
          "the encoder's features never passed to the GRU as its first state, so the decoder captions blind"),
        b("E04", "adam_betas_swapped", rev, "adam_betas_swapped", "OL",
          "Adam's betas written the wrong way round, (0.999, 0.9)"),
        b("E05", "padded_query_rows_masked", rev, "padded_query_rows_masked", "NaN",
          "the padding mask applied to the padded queries' rows as well as the keys, so those rows are all -inf"),
        b("E06", "padded_string_flipped_whole", rev, "padded_string_flipped_whole", "SC",
          "the target made by flipping the padded string whole, so shorter strings are reversed out of place"),
        b("E07", "padding_inverse_degree_left_infinite", mol, "padding_inverse_degree_left_infinite", "NaN",
          "the padded atoms' inverse square-root degree (1/0) left infinite in the normalised adjacency"),
        b("E08", "sampler_reseeded_every_step", mol, "sampler_reseeded_every_step", "OF",
          "the sampler's generator seeded anew every step, so every step trains on the same batch"),
        b("E09", "bonds_stored_one_way", mol, "bonds_stored_one_way", "SC",
          "each bond stored once (from the later atom to the earlier) instead of in both directions"),
        b("E10", "weights_drawn_with_std_one", mol, "weights_drawn_with_std_one", "EG",
          "every linear layer re-initialised by nn.init.normal_ with its default standard deviation of 1"),
        b("E11", "thresholds_initialised_from_raw_fields", node, "thresholds_initialised_from_raw_fields", "DR",
          "the data-aware threshold initialisation run on the raw fields (income in the tens of thousands) while the "
          "model reads standardised ones, saturating the sigmoid splits"),
        b("E12", "loss_rewrapped_as_new_tensor", node, "loss_rewrapped_as_new_tensor", "VG",
          "the loss taken out as a float and wrapped back into a new tensor for backward, cut from the model"),
        b("E13", "first_batch_every_step", node, "first_batch_every_step", "OF",
          "a fresh iterator of an unshuffled loader taken every step, so training sees its first batch only"),
        b("E14", "alive_mask_from_red_channel", nca, "alive_mask_from_red_channel", "DR",
          "the alive mask read from the red channel instead of alpha, so every cell dies at the first step"),
        b("E15", "fire_mask_drawn_once_per_rollout", nca, "fire_mask_drawn_once_per_rollout", "SC",
          "the random cells to update drawn once a rollout instead of every step"),
        b("E16", "loss_on_every_channel", nca, "loss_on_every_channel", "SC",
          "the loss taken over all twelve channels against a target padded with zeros, pinning the hidden channels",
          harmless=True),
        b("E17", "state_carried_across_batches", sk, "state_carried_across_batches", "SC",
          "the GRU's final state kept (detached) as the next batch's initial state, as a stateful language model "
          "keeps it, while held-out drawings start from zero", harmless=True),
        b("E18", "state_read_at_padded_end", sk, "state_read_at_padded_end", "SC",
          "the GRU's output read at the last padded step instead of at each drawing's last point", harmless=True),
        b("E19", "warmup_left_out", sk_sgd, "warmup_left_out", "DR",
          "the warm-up of the Nesterov SGD run left out, so it starts at its full rate", harmless=True),
        b("E20", "perception_of_detached_state", nca, "perception_of_detached_state", "VG",
          "the fixed Sobel filters applied to a detached copy of the state, cutting the gradient through neighbours"),
        b("E21", "debug_subset_left_in", node, "debug_subset_left_in", "OF",
          "training drawn from the first 200 rows only, a subset for a quick check left in"),
        b("E22", "loss_against_unstandardised_property", mol, "loss_against_unstandardised_property", "SC",
          "the loss taken against the property in its own units while the predictions are read as standardised"),
    ]  # fmt: skip
    return healthy + bugs
