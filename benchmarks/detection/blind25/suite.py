"""The twenty-fifth blind split as `run.py --suite blind25` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind25 import chemistry, markets, recognition

PREFIX = "blind25_"
SCRIPTS = {"orderbook": markets.orderbook, "parking": markets.parking, "yields": chemistry.yields,
           "alloys": chemistry.alloys, "phonemes": recognition.phonemes, "leaves": recognition.leaves}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind25Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind25Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind25Program, prefix=PREFIX)
    book = h("orderbook_mlp_adam", "orderbook", "a limit-order-book mid-price direction classifier (an MLP)")
    book_sgd = h(
        "orderbook_momentum", "orderbook", "an order-book MLP under momentum SGD", opt="momentum", lr=0.02
    )
    book_clip = h("orderbook_nesterov_clipped", "orderbook", "an order-book MLP under Nesterov SGD clipped at norm 1",
                  opt="nesterov", lr=0.1, clip=1.0)  # fmt: skip
    park = h(
        "parking_mlp_adam", "parking", "a parking-occupancy forecaster (an MLP over the last day's hours)"
    )
    park_warm = h("parking_momentum_warmup", "parking", "a parking MLP under momentum SGD warmed up over 50 steps",
                  opt="momentum", lr=0.1, warmup=50)  # fmt: skip
    yld = h("yields_mlp_adam", "yields", "a reaction-yield regressor on molecular fingerprints (an MLP)")
    yld_sgd = h("yields_momentum", "yields", "a yield MLP under momentum SGD", opt="momentum", lr=0.05)
    alloy = h("alloys_tanh_adam", "alloys", "an alloy hardness regressor (a six-layer tanh MLP)")
    alloy_sgd = h("alloys_momentum", "alloys", "a hardness MLP under momentum SGD", opt="momentum", lr=0.02)
    alloy_cyc = h("alloys_adam_cyclic", "alloys", "a hardness MLP under Adam on a triangular cyclic schedule",
                  cyclic=True)  # fmt: skip
    g2p = h(
        "phonemes_window_adam", "phonemes", "a grapheme-to-phoneme model (an MLP over a window of letters)"
    )
    leaf = h("leaves_cnn_adam", "leaves", "a leaf-disease image classifier (a three-block CNN)")
    leaf_scaled = h(
        "leaves_momentum_loss_scaled",
        "leaves",
        "a leaf CNN under momentum SGD with a static loss "
        "scale of 1024 taken off the gradients before each step",
        opt="momentum",
        lr=0.05,
        loss_scale=1024,
    )
    leaf_sgd = h("leaves_momentum", "leaves", "a leaf CNN under momentum SGD", opt="momentum", lr=0.05)
    healthy = [
        book,
        book_sgd,
        book_clip,
        h("orderbook_adamw_cosine_batch256", "orderbook", "an order-book MLP under AdamW decayed by a cosine with "
          "batches of 256", opt="adamw", cosine=True, batch=256, lr=2e-3),
        park,
        park_warm,
        h("parking_adamw_hidden128", "parking", "a wider parking MLP under AdamW", opt="adamw", hidden=128),
        h("parking_radam_step_decay", "parking", "a parking MLP under RAdam halved every 100 steps", opt="radam",
          step_decay=True, lr=3e-3),
        yld,
        yld_sgd,
        h("yields_adamw_hidden128", "yields", "a narrower yield MLP under AdamW", opt="adamw", hidden=128),
        h("yields_nadam_batch32", "yields", "a yield MLP under NAdam with batches of 32", opt="nadam", batch=32,
          lr=5e-4),
        alloy,
        alloy_sgd,
        alloy_cyc,
        h("alloys_rmsprop_width96", "alloys", "a wider hardness MLP under RMSprop", opt="rmsprop", width=96, lr=5e-4),
        g2p,
        h("phonemes_adamw_dim32", "phonemes", "a grapheme-to-phoneme tagger under AdamW with embeddings of 32",
          opt="adamw", dim=32),
        h("phonemes_momentum", "phonemes", "a grapheme-to-phoneme tagger under momentum SGD", opt="momentum",
          lr=0.1),
        h("phonemes_rmsprop_batch128", "phonemes", "a grapheme-to-phoneme tagger under RMSprop with batches of 128",
          opt="rmsprop", batch=128, lr=1e-3),
        leaf,
        leaf_sgd,
        h("leaves_adamw_width12", "leaves", "a wider leaf CNN under AdamW", opt="adamw", width=12),
        leaf_scaled,
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("X01", "prices_fed_in_cents", book_sgd, "prices_fed_in_cents", "DR",
          "the twenty level prices fed as the feed quotes them, in cents near 10,000, instead of as ticks from the mid"),
        b("X02", "imbalance_of_empty_levels", book, "imbalance_of_empty_levels", "NaN",
          "each level's imbalance (b - a) / (b + a) left unguarded, 0/0 where a thin book is empty on both sides"),
        b("X03", "lag_window_ends_at_label", book, "lag_window_ends_at_label", "OF",
          "the training set's window of past mid changes sliced one snapshot late, so its last change is the one the "
          "label is drawn from, while the live window ends at the snapshot"),
        b("X04", "clip_called_before_backward", book_clip, "clip_called_before_backward", "EG",
          "the gradient clipped between `zero_grad` and `backward`, where it clips nothing, under Nesterov SGD at 0.1",
          harmless=True),
        b("X05", "occupancy_over_zero_capacity", park, "occupancy_over_zero_capacity", "NaN",
          "the occupancy taken as cars over spaces for every hour, 0/0 for the lots closed for works that week"),
        b("X06", "window_minmax_scaled_per_sample", park, "window_minmax_scaled_per_sample", "SC",
          "each window of 24 hours min-max scaled on its own, which throws away the lot's level of occupancy"),
        b("X07", "warmup_written_upside_down", park_warm, "warmup_written_upside_down", "EG",
          "the linear warmup's factor written as warmup / step instead of step / warmup, so momentum SGD starts at "
          "fifty times its rate of 0.1",
          harmless=True),
        b("X08", "yield_regressed_in_percent", yld_sgd, "yield_regressed_in_percent", "EG",
          "the yield regressed in percent (0-100) instead of as a fraction, under momentum SGD at 0.05"),
        b("X09", "combination_mean_with_own_yield", yld, "combination_mean_with_own_yield", "OF",
          "the catalyst-ligand-base combination's mean yield feature computed with the reaction's own yield in it, "
          "on combinations of about four training reactions",
          harmless=True),
        b("X10", "additive_logged_without_one", yld, "additive_logged_without_one", "NaN",
          "the additive's equivalents logged with `log` instead of `log1p`, -inf for the fifth of reactions without one"),
        b("X11", "normal_init_left_at_unit_std", alloy_sgd, "normal_init_left_at_unit_std", "VG",
          "the six tanh layers initialised by `nn.init.normal_` without a std, which leaves it at 1 instead of "
          "Xavier's, so every layer's tanh starts saturated"),
        b("X12", "anneal_temperature_fed_in_degrees", alloy, "anneal_temperature_fed_in_degrees", "SC",
          "the annealing temperature fed in degrees (200-900) beside the standardised fields, saturating the first "
          "tanh layer"),
        b("X13", "cyclic_peak_from_sgd_recipe", alloy_cyc, "cyclic_peak_from_sgd_recipe", "EG",
          "the triangular cyclic schedule's peak of 0.5 copied from an SGD recipe into the Adam run"),
        b("X14", "reentrant_checkpoint_on_plain_inputs", alloy, "reentrant_checkpoint_on_plain_inputs", "VG",
          "the first three layers run under the reentrant activation checkpoint, whose input (the features) needs no "
          "gradient, so no gradient reaches those layers"),
        b("X15", "phonemes_aligned_one_letter_late", g2p, "phonemes_aligned_one_letter_late", "SC",
          "the training pronunciations aligned to the spelling one letter late, the first letter taken as silent"),
        b("X16", "letters_numbered_from_zero", g2p, "letters_numbered_from_zero", "SC",
          "the letters numbered from 0, the padding's id, so an 'a' and the space past the word's end look the same",
          harmless=True),
        b("X17", "padding_targets_ignored_as_zero", g2p, "padding_targets_ignored_as_zero", "SC",
          "the padding targets set to 0 and the loss told to ignore 0, which is the silent letter's phoneme"),
        b("X18", "every_batchnorm_gamma_zeroed", leaf, "every_batchnorm_gamma_zeroed", "DR",
          "every batch norm's gamma zeroed, as the residual-network recipe does for each block's last one only, so "
          "every ReLU sees 0"),
        b("X19", "hwc_arrays_viewed_as_chw", leaf_sgd, "hwc_arrays_viewed_as_chw", "SC",
          "the decoded HWC arrays reshaped to CHW with `view` instead of `permute`, scrambling pixels and channels"),
        b("X20", "debug_subset_of_words_left_in", g2p, "debug_subset_of_words_left_in", "OF",
          "the training words sliced to the first 64 (one batch), a subset kept from a quick check of the loop, instead of 1,600"),
        b("X21", "loss_scale_never_unscaled", leaf_scaled, "loss_scale_never_unscaled", "EG",
          "the static loss scale of 1024 of the mixed-precision recipe never divided out of the gradients before "
          "momentum SGD steps"),
    ]  # fmt: skip
    return healthy + bugs
