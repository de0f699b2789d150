"""The thirty-sixth blind split as `run.py --suite blind36` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind36 import accounts, farming, workshop

PREFIX = "blind36_"
SCRIPTS = {"toolwear": workshop.toolwear, "concrete": workshop.concrete, "queen": farming.queen,
           "rice": farming.rice, "utilisation": accounts.utilisation, "phishing": accounts.phishing}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind36Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind36Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind36Program, prefix=PREFIX)
    too = h(
        "toolwear_cnn_adam", "toolwear", "a CNC tool-wear regressor on spindle-current windows (a 1-D CNN)"
    )
    too_sgd = h(
        "toolwear_momentum", "toolwear", "a tool-wear CNN under momentum SGD", opt="momentum", lr=0.003
    )
    con = h(
        "concrete_mlp_adam",
        "concrete",
        "a concrete compressive-strength regressor on mix proportions (a ReLU MLP)",
    )
    con_sgd = h("concrete_momentum", "concrete", "a strength MLP under momentum SGD", opt="momentum", lr=0.01)
    que = h(
        "queen_mlp_adam",
        "queen",
        "a beehive queen-presence detector on hive-audio band energies (a ReLU MLP)",
    )
    ric = h(
        "rice_cnn_adam",
        "rice",
        "a rice-grain variety classifier on grain image patches (a CNN with batch norm)",
    )
    uti = h(
        "utilisation_gru_adam",
        "utilisation",
        "a credit-card limit-utilisation forecaster over monthly statements (a GRU)",
    )
    phi = h("phishing_trigrams_adam", "phishing", "a phishing-URL classifier on hashed character trigrams")
    phi_sgd = h(
        "phishing_momentum",
        "phishing",
        "a trigram phishing classifier under momentum SGD",
        opt="momentum",
        lr=0.1,
    )
    healthy = [
        too,
        too_sgd,
        h("toolwear_rmsprop_width16", "toolwear", "a narrower tool-wear CNN under RMSprop", opt="rmsprop", lr=1e-3,
          width=16),
        h("toolwear_adamw_batch128", "toolwear", "a tool-wear CNN under AdamW with batches of 128", opt="adamw",
          batch=128),
        con,
        con_sgd,
        h("concrete_nadam_hidden128", "concrete", "a wider strength MLP under NAdam", opt="nadam", hidden=128),
        h("concrete_adagrad_batch64", "concrete", "a strength MLP under Adagrad with batches of 64", opt="adagrad",
          lr=0.03, batch=64),
        que,
        h("queen_momentum", "queen", "a queen MLP under momentum SGD", opt="momentum", lr=0.02),
        h("queen_rmsprop_hidden32", "queen", "a narrower queen MLP under RMSprop", opt="rmsprop", lr=1e-3, hidden=32),
        h("queen_adamw_batch128", "queen", "a queen MLP under AdamW with batches of 128", opt="adamw", batch=128),
        ric,
        h("rice_momentum", "rice", "a grain CNN under momentum SGD", opt="momentum", lr=0.05),
        h("rice_rmsprop_width32", "rice", "a wider grain CNN under RMSprop", opt="rmsprop", lr=1e-3, width=32),
        h("rice_nadam_batch32", "rice", "a grain CNN under NAdam with batches of 32", opt="nadam", batch=32),
        uti,
        h("utilisation_momentum", "utilisation", "a utilisation GRU under momentum SGD", opt="momentum", lr=0.05),
        h("utilisation_rmsprop_hidden64", "utilisation", "a wider utilisation GRU under RMSprop", opt="rmsprop",
          lr=1e-3, hidden=64),
        h("utilisation_adamw_batch128", "utilisation", "a utilisation GRU under AdamW with batches of 128",
          opt="adamw", batch=128),
        phi,
        phi_sgd,
        h("phishing_rmsprop_dim16", "phishing", "a narrower trigram classifier under RMSprop", opt="rmsprop",
          lr=1e-3, dim=16),
        h("phishing_adagrad_hidden128", "phishing", "a wider trigram classifier under Adagrad", opt="adagrad",
          lr=0.03, hidden=128),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("H01", "crest_factor_over_standing_spindle", too, "crest_factor_over_standing_spindle", "NaN",
          "the spindle current's crest factor, peak over RMS, divided by the zero RMS of the windows logged while "
          "the spindle stands for a tool check"),
        b("H02", "wear_target_in_microns", too_sgd, "wear_target_in_microns", "EG",
          "the flank wear regressed in micrometres as the tool microscope logs it (0-300), not standardised, under "
          "momentum SGD"),
        b("H03", "each_window_standardised_alone", too, "each_window_standardised_alone", "SC",
          "each current window standardised by its own mean and spread, erasing the load level the wear raises"),
        b("H04", "paper_sigmoid_network_deepened", con, "paper_sigmoid_network_deepened", "VG",
          "the reference paper's sigmoid hidden layers kept and stacked six deep"),
        b("H05", "weights_reinitialised_by_bare_uniform", con, "weights_reinitialised_by_bare_uniform", "EG",
          "the linear weights reinitialised by `nn.init.uniform_` meant as Glorot's, its bounds left at [0, 1)"),
        b("H06", "split_fractions_swapped", con, "split_fractions_swapped", "OF",
          "the training and validation fractions swapped, so the network trains on a tenth of the mixes"),
        b("H07", "ridge_alpha_passed_as_weight_decay", con, "ridge_alpha_passed_as_weight_decay", "SC",
          "the ridge baseline's alpha of 1 passed to the network's optimizer as its weight decay"),
        b("H08", "logger_export_labels_queenright_as_one", que, "logger_export_labels_queenright_as_one", "SC",
          "the labels read from the new hive logger's export, which marks a queenright colony with 1"),
        b("H09", "features_and_labels_shuffled_apart", que, "features_and_labels_shuffled_apart", "SC",
          "the features and the labels shuffled by two separate permutations"),
        b("H10", "svm_labels_plus_minus_one_into_bce", que, "svm_labels_plus_minus_one_into_bce", "EG",
          "the labels coded -1 and 1 as for the SVM baseline and fed to BCE with logits, whose loss then falls "
          "without bound as the logits run off"),
        b("H13", "utilisation_over_suspended_zero_limit", uti, "utilisation_over_suspended_zero_limit", "NaN",
          "the utilisation divided by the limit without a guard, over the limit of 0 of a suspended card"),
        b("H15", "utilisation_against_opening_limit", uti, "utilisation_against_opening_limit", "SC",
          "the utilisation and the spending ratios taken against the limit at opening, not the month's limit"),
        b("H16", "positive_weight_given_negative_count", phi_sgd, "positive_weight_given_negative_count", "EG",
          "BCE's pos_weight given the count of negatives instead of their ratio to the positives, under momentum "
          "SGD"),
        b("H17", "url_stripped_to_alphanumerics", phi, "url_stripped_to_alphanumerics", "SC",
          "the URL stripped to letters and digits before hashing, dropping the dots, hyphens, '@' and slashes",
          harmless=True),
        b("H18", "training_phishing_urls_on_http", phi, "training_phishing_urls_on_http", "OF",
          "the training phishing URLs taken mostly on http and the benign ones on https, while both come on either"),
        b("H11", "output_bias_started_at_mean_strength_mpa", con, "output_bias_started_at_mean_strength_mpa",
          "DR", "the output bias started at the mean strength in MPa (about 38) while the network regresses the "
          "standardised strength"),
        b("H19", "log_of_zero_slag_and_ash", con, "log_of_zero_slag_and_ash", "NaN",
          "the skewed slag and fly-ash columns logged like the age, minus infinity on the mixes that use none"),
        b("H14", "tutorial_tanh_stack_for_signed_currents", too, "tutorial_tanh_stack_for_signed_currents", "VG",
          "a vibration tutorial's network taken for the signed currents: tanh activations, nine convolutions deep"),
        b("H20", "fasttext_rate_kept_under_adam", phi, "fasttext_rate_kept_under_adam", "DR",
          "the fastText baseline's learning rate of 1.0 (plain SGD) kept for the network's Adam"),
    ]  # fmt: skip
    return healthy + bugs
