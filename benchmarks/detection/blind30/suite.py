"""The thirtieth blind split as `run.py --suite blind30` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind30 import power, records, sequences

PREFIX = "blind30_"
SCRIPTS = {"engines": power.engines, "prices": power.prices, "promoters": sequences.promoters,
           "transits": sequences.transits, "cuisines": records.cuisines, "fetal": records.fetal}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind30Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind30Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind30Program, prefix=PREFIX)
    eng = h(
        "engines_cnn_adam",
        "engines",
        "a turbofan remaining-useful-life regressor (a 1-D CNN over sensor windows)",
    )
    eng_sgd = h("engines_momentum_decay", "engines", "a RUL CNN under momentum SGD decayed by 0.995 a step",
                opt="momentum", lr=0.01, decay=0.995)  # fmt: skip
    price = h("prices_mlp_adam", "prices", "an electricity spot-price forecaster (an MLP, Huber loss)")
    price_sgd = h("prices_momentum", "prices", "a spot-price MLP under momentum SGD", opt="momentum", lr=0.01)
    prom = h("promoters_cnn_adam", "promoters", "a bacterial promoter classifier on DNA (a 1-D CNN)")
    tra = h("transits_cnn_adam", "transits", "an exoplanet transit detector on light curves (a 1-D CNN)")
    cui = h("cuisines_mlp_adam", "cuisines", "a recipe cuisine classifier on TF-IDF ingredient rows (an MLP)")
    cui_sgd = h("cuisines_momentum", "cuisines", "a cuisine MLP under momentum SGD", opt="momentum", lr=0.2)
    fet = h(
        "fetal_mlp_adam", "fetal", "a fetal-health classifier on cardiotocography features (a deep ReLU MLP)"
    )
    fet_sgd = h("fetal_momentum", "fetal", "a fetal-health MLP under momentum SGD", opt="momentum", lr=0.01)
    healthy = [
        eng,
        eng_sgd,
        h("engines_rmsprop_width32", "engines", "a wider RUL CNN under RMSprop", opt="rmsprop", width=32, lr=1e-3),
        h("engines_adamw_batch128", "engines", "a RUL CNN under AdamW with batches of 128", opt="adamw", batch=128),
        price,
        price_sgd,
        h("prices_nadam_hidden128", "prices", "a wider spot-price MLP under NAdam", opt="nadam", hidden=128),
        h("prices_adamw_batch256", "prices", "a spot-price MLP under AdamW with batches of 256", opt="adamw",
          batch=256, lr=2e-3),
        prom,
        h("promoters_momentum", "promoters", "a promoter CNN under momentum SGD", opt="momentum", lr=0.02),
        h("promoters_rmsprop_width48", "promoters", "a wider promoter CNN under RMSprop", opt="rmsprop", width=48,
          lr=1e-3),
        h("promoters_adamw_batch128", "promoters", "a promoter CNN under AdamW with batches of 128", opt="adamw",
          batch=128),
        tra,
        h("transits_nadam_width24", "transits", "a wider transit CNN under NAdam", opt="nadam", width=24),
        h("transits_momentum", "transits", "a transit CNN under momentum SGD", opt="momentum", lr=0.02),
        h("transits_adam_batch128", "transits", "a transit CNN under Adam with batches of 128", batch=128),
        cui,
        cui_sgd,
        h("cuisines_adagrad", "cuisines", "a cuisine MLP under Adagrad", opt="adagrad", lr=0.05),
        h("cuisines_adamw_hidden256", "cuisines", "a wider cuisine MLP under AdamW", opt="adamw", hidden=256),
        fet,
        fet_sgd,
        h("fetal_radam_hidden128", "fetal", "a wider fetal-health MLP under RAdam", opt="radam", hidden=128,
          lr=2e-3),
        h("fetal_adamax_depth3", "fetal", "a three-layer fetal-health MLP under Adamax", opt="adamax", depth=3,
          lr=2e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("R01", "exponential_gamma_above_one", eng_sgd, "exponential_gamma_above_one", "EG",
          "the exponential decay's gamma typed as 1.05 instead of 0.995, so the momentum SGD rate grows by 5% a step"),
        b("R02", "cycles_to_record_end_as_feature", eng, "cycles_to_record_end_as_feature", "OF",
          "the cycles left to the end of the engine's record added as a channel, which is the RUL itself for the "
          "run-to-failure training engines and a count from the cut for the engines in service"),
        b("R03", "head_bias_set_to_mean_rul_in_cycles", eng, "head_bias_set_to_mean_rul_in_cycles", "SC",
          "the head's bias started at the fleet's mean RUL in cycles (about 90), though the head predicts RUL / 125"),
        b("R04", "initializer_range_on_every_layer", eng_sgd, "initializer_range_on_every_layer", "VG",
          "every convolution and linear weight started from a normal of std 0.02, a transformer codebase's "
          "initializer_range, instead of He's, under momentum SGD, so the signal and its gradient shrink through "
          "the five layers"),
        b("R05", "dst_hour_left_as_nan", price, "dst_hour_left_as_nan", "NaN",
          "the hour that the spring change to summer time skips left as NaN in the reindexed hourly prices instead of "
          "interpolated"),
        b("R06", "load_forecast_fed_in_megawatts", price_sgd, "load_forecast_fed_in_megawatts", "DR",
          "the load forecast fed as the operator publishes it, in megawatts (tens of thousands), beside the "
          "standardised columns, under momentum SGD, whose first steps blow the loss up and leave the first "
          "layer's ReLUs off"),
        b("R07", "actual_wind_in_place_of_forecast", price, "actual_wind_in_place_of_forecast", "OF",
          "the training rows given the wind generation the hour had instead of the day-ahead forecast the market had, "
          "which is all the live forecasts can see", harmless=True),
        b("R08", "series_shuffled_before_lags", price, "series_shuffled_before_lags", "SC",
          "the training hours shuffled, as one does with a table, before the lagged prices were taken from the "
          "series, so each row's 24 lags are random hours"),
        b("R09", "negatives_not_gc_matched", prom, "negatives_not_gc_matched", "OF",
          "the training non-promoters drawn from the genome's background (42% GC) instead of GC-matched to the "
          "promoters, as the held-out ones are"),
        b("R10", "training_strand_not_reverse_complemented", prom, "training_strand_not_reverse_complemented", "SC",
          "the training sequences exported from the opposite strand and used without reverse-complementing"),
        b("R11", "conv_bias_set_to_motif_threshold", prom, "conv_bias_set_to_motif_threshold", "DR",
          "the motif convolution's bias set to -4.5, a position weight matrix's log-odds threshold from a motif "
          "scanner, so its ReLUs never fire on one-hot input"),
        b("R12", "median_taken_over_gaps", tra, "median_taken_over_gaps", "NaN",
          "each light curve divided by `median` instead of `nanmedian`, which is NaN for every curve with a data gap"),
        b("R13", "detrend_hours_times_cadence", tra, "detrend_hours_times_cadence", "SC",
          "the 12-hour detrending window multiplied by the 0.5-hour cadence instead of divided, 7 cadences instead "
          "of 25, so the moving median follows the transits and takes them out"),
        b("R14", "median_subtracted_not_divided", tra, "median_subtracted_not_divided", "SC",
          "each light curve's median subtracted instead of divided, so the curves stay in electrons per second and "
          "a faint star's transits are a thousandth of a bright star's wiggles"),
        b("R15", "empty_recipe_row_divided_by_its_norm", cui, "empty_recipe_row_divided_by_its_norm", "NaN",
          "each TF-IDF row divided by its norm unguarded, 0/0 for a recipe of staples only"),
        b("R16", "label_file_header_read_as_row", cui, "label_file_header_read_as_row", "SC",
          "the cuisines, kept in a separate label file, read with its header line taken for the first recipe's "
          "label, so every recipe is trained on the previous recipe's cuisine"),
        b("R17", "min_df_given_as_fraction", cui, "min_df_given_as_fraction", "SC",
          "the minimum document frequency of five recipes given as 0.05, a fraction of the recipes, which drops "
          "every ingredient in fewer than 125"),
        b("R18", "he_std_without_square_root", fet_sgd, "he_std_without_square_root", "VG",
          "He initialisation's standard deviation written as 2 / fan_in without the square root, under momentum SGD, "
          "so the signal shrinks about six-fold through each of the five layers"),
        b("R19", "logistic_regression_rate_kept", fet_sgd, "logistic_regression_rate_kept", "EG",
          "the rate of 0.5 of the logistic-regression baseline kept for the deep MLP under momentum SGD, whose "
          "steps throw the loss up and on to NaN"),
        b("R20", "sampler_weights_are_class_counts", fet, "sampler_weights_are_class_counts", "SC",
          "the sampler's per-recording weights set to the class counts instead of their inverse, so the batches hold "
          "the normal recordings even more than the data do"),
    ]  # fmt: skip
    return healthy + bugs
