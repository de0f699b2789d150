"""The thirty-first blind split as `run.py --suite blind31` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind31 import environment, records, screening

PREFIX = "blind31_"
SCRIPTS = {"dropout": records.dropout, "claims": records.claims, "wildfire": environment.wildfire,
           "oxygen": environment.oxygen, "affinity": screening.affinity, "ships": screening.ships}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind31Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind31Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind31Program, prefix=PREFIX)
    drop = h("dropout_gru_adam", "dropout", "a student-dropout predictor (a GRU over weekly course logs)")
    drop_cyc = h("dropout_momentum_cyclic", "dropout", "a dropout GRU under momentum SGD on a triangular cyclic rate",
                 opt="momentum", lr=0.02, cyclic=True)  # fmt: skip
    clm = h(
        "claims_mlp_adam", "claims", "an insurance claim-severity regressor (an MLP with a gamma deviance)"
    )
    clm_sgd = h(
        "claims_momentum", "claims", "a claim-severity MLP under momentum SGD", opt="momentum", lr=0.01
    )
    fire = h("wildfire_cnn_adam", "wildfire", "a wildfire-spread CNN on gridded weather and fuel")
    fire_warm = h("wildfire_nesterov_warmup", "wildfire", "a spread CNN under Nesterov SGD after a linear warm-up",
                  opt="nesterov", lr=0.1, warmup=True)  # fmt: skip
    fire_sgd = h("wildfire_momentum", "wildfire", "a spread CNN under momentum SGD", opt="momentum", lr=0.05)
    oxy = h(
        "oxygen_lstm_adam", "oxygen", "a river dissolved-oxygen forecaster (an LSTM over hourly readings)"
    )
    aff = h("affinity_mlp_adam", "affinity", "a protein-ligand binding-affinity regressor on fingerprints")
    aff_sgd = h("affinity_momentum", "affinity", "an affinity regressor under momentum SGD", opt="momentum",
                lr=0.02)  # fmt: skip
    shp = h("ships_cnn_adam", "ships", "a ship detector on SAR image chips (a CNN with batch norm)")
    shp_scaled = h("ships_momentum_scaled_batch128", "ships",
                   "a ship CNN under momentum SGD at the linearly scaled rate for batches of 128", batch=128,
                   scaled=True)  # fmt: skip
    healthy = [
        drop,
        drop_cyc,
        h("dropout_rmsprop_hidden64", "dropout", "a wider dropout GRU under RMSprop", opt="rmsprop", hidden=64,
          lr=1e-3),
        h("dropout_adamw_batch128", "dropout", "a dropout GRU under AdamW with batches of 128", opt="adamw",
          batch=128),
        clm,
        clm_sgd,
        h("claims_adagrad_hidden32", "claims", "a narrower severity MLP under Adagrad", opt="adagrad", hidden=32,
          lr=0.03),
        h("claims_nadam_batch512", "claims", "a severity MLP under NAdam with batches of 512", opt="nadam",
          batch=512),
        fire,
        fire_warm,
        fire_sgd,
        h("wildfire_adamw_width32", "wildfire", "a wider spread CNN under AdamW", opt="adamw", width=32, lr=1e-3),
        oxy,
        h("oxygen_rmsprop", "oxygen", "an oxygen LSTM under RMSprop", opt="rmsprop", lr=1e-3),
        h("oxygen_adamw_hidden64", "oxygen", "a wider oxygen LSTM under AdamW", opt="adamw", hidden=64, lr=2e-3),
        h("oxygen_radam_batch32", "oxygen", "an oxygen LSTM under RAdam with batches of 32", opt="radam", batch=32),
        aff,
        aff_sgd,
        h("affinity_adamw_width256", "affinity", "a wider affinity regressor under AdamW", opt="adamw", width=256),
        h("affinity_adamax_depth2", "affinity", "a shallower affinity regressor under Adamax", opt="adamax",
          depth=2, lr=2e-3),
        shp,
        shp_scaled,
        h("ships_rmsprop_width16", "ships", "a wider ship CNN under RMSprop", opt="rmsprop", width=16, lr=5e-4),
        h("ships_nadam_batch32", "ships", "a ship CNN under NAdam with batches of 32", opt="nadam", batch=32),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("Q01", "activity_counted_past_prediction_week", drop, "activity_counted_past_prediction_week", "OF",
          "the training logs exported for the whole course, so the students who left show their silent last weeks, "
          "while the students scored at the end of week 6 have no later weeks yet"),
        b("Q02", "standardised_per_student_over_weeks", drop, "standardised_per_student_over_weeks", "SC",
          "each student's fields standardised by their own mean and spread over the weeks instead of the cohort's, "
          "which erases how active a student is"),
        b("Q03", "label_taken_at_prediction_week", drop, "label_taken_at_prediction_week", "SC",
          "the training label read from the enrolment status as of week 6, the prediction week, instead of at the "
          "course's end"),
        b("Q04", "zero_payment_claims_kept", clm, "zero_payment_claims_kept", "NaN",
          "the claims closed without payment kept in the severity data, whose gamma deviance takes the log of 0"),
        b("Q05", "output_bias_not_started_at_log_mean", clm_sgd, "output_bias_not_started_at_log_mean", "EG",
          "the line starting the output bias at the log of the mean amount left out, so the first predictions are "
          "about 1 against amounts in the thousands and momentum SGD's first steps blow up"),
        b("Q06", "final_reserve_left_in_features", clm, "final_reserve_left_in_features", "OF",
          "the case reserve taken from the training extract, where it has been set to the amount paid at "
          "settlement, while the claims scored carry the adjuster's first reserve"),
        b("Q07", "sgd_rate_and_momentum_swapped_positionally", fire_sgd, "sgd_rate_and_momentum_swapped_positionally",
          "DR", "`SGD(params, 0.9, 0.05)` written for a momentum of 0.9 at 0.05, which gives a rate of 0.9 with a "
          "momentum of 0.05, whose large steps turn many of the convolutions' ReLUs off for good"),
        b("Q08", "target_cropped_from_corner", fire, "target_cropped_from_corner", "SC",
          "the target mask cropped to the unpadded convolutions' output from the top-left corner instead of the "
          "centre"),
        b("Q09", "missing_code_minus_9999_left_in", oxy, "missing_code_minus_9999_left_in", "OL",
          "the logger's -9999 for a missed reading left in the oxygen inputs and targets"),
        b("Q10", "target_indexed_from_window_start", oxy, "target_indexed_from_window_start", "SC",
          "the target's index counted six hours from the window's start instead of from its end"),
        b("Q11", "kd_below_detection_logged_as_zero", aff, "kd_below_detection_logged_as_zero", "NaN",
          "the Kds the export wrote as 0 below the assay's floor taken into -log10, an infinite pKd"),
        b("Q12", "fingerprint_string_read_as_ascii_codes", aff, "fingerprint_string_read_as_ascii_codes", "DR",
          "the fingerprints' bit strings read character by character as their codes, 48 and 49 instead of 0 and 1"),
        b("Q13", "assay_units_mixed_nm_and_um", aff, "assay_units_mixed_nm_and_um", "SC",
          "one assay's results, reported in µM, read as nM like the others"),
        b("Q14", "weights_given_amount_column", clm_sgd, "weights_given_amount_column", "EG",
          "the deviance weighted by the amount column next to the claim count, thousands of times the loss, under "
          "momentum SGD"),
        b("Q15", "batchnorm_eps_typed_1e3", shp, "batchnorm_eps_typed_1e3", "VG",
          "batch norm's eps of 1e-3 typed as 1e3, so each normalisation divides by about 32 instead of the spread"),
        b("Q16", "training_chips_centred_on_ais_positions", shp, "training_chips_centred_on_ais_positions", "OF",
          "the training chips cut around the ships' reported AIS positions, so every training ship sits at the "
          "centre, while the scenes scored are tiled with the ships anywhere"),
        b("Q17", "land_chips_dropped_from_images_only", shp, "land_chips_dropped_from_images_only", "SC",
          "the land chips masked out of the images but not out of the labels, which then belong to other chips"),
        b("Q18", "speckle_filter_applied_to_training_only", shp, "speckle_filter_applied_to_training_only", "OF",
          "a 3x3 boxcar speckle filter run over the training chips in the preparation notebook but not in the scoring "
          "code"),
        b("Q19", "fields_fed_raw_to_gru", drop_cyc, "fields_fed_raw_to_gru", "VG",
          "the weekly counts, minutes (up to hundreds) and quiz scores (up to 100) fed to the GRU without their log "
          "and standardisation, which saturates its gates"),
    ]  # fmt: skip
    return healthy + bugs
