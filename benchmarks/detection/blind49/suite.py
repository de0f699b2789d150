"""The forty-ninth blind split as `run.py --suite blind49` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind49 import leisure, machinery, produce

PREFIX = "blind49_"
SCRIPTS = {"crane": machinery.crane, "binding": machinery.binding, "hay": produce.hay, "maple": produce.maple,
           "cinema": leisure.cinema, "dragon": leisure.dragon}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind49Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind49Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind49Program, prefix=PREFIX)
    cra = h(
        "crane_cnn_adam",
        "crane",
        "a harbour-crane spreader twist-lock fault classifier on hydraulic traces (a ReLU 1-D CNN)",
    )
    cra_sgd = h(
        "crane_momentum", "crane", "a twist-lock fault CNN under momentum SGD", opt="momentum", lr=0.02
    )
    bin_ = h(
        "binding_tanh_adam",
        "binding",
        "a ski-binding release-force regressor from test-rig readings (a tanh MLP)",
    )
    bin_sgd = h(
        "binding_momentum", "binding", "a release-torque tanh MLP under momentum SGD", opt="momentum", lr=0.02
    )
    hay = h("hay_mlp_adam", "hay", "a hay-bale moisture classifier from microwave readings (a ReLU MLP)")
    hay_sgd = h("hay_momentum", "hay", "a bale-moisture MLP under momentum SGD", opt="momentum", lr=0.02)
    map_ = h(
        "maple_tanh_adam",
        "maple",
        "a maple-syrup grade classifier from light-transmittance spectra (a tanh MLP)",
    )
    map_sgd = h(
        "maple_momentum", "maple", "a syrup-grade tanh MLP under momentum SGD", opt="momentum", lr=0.05
    )
    cin = h("cinema_mlp_adam", "cinema", "a cinema ticket-sales forecaster (a ReLU MLP over a week of sales)")
    cin_sgd = h("cinema_momentum", "cinema", "a ticket-sales MLP under momentum SGD", opt="momentum", lr=0.01)
    dra = h(
        "dragon_cnn_adam",
        "dragon",
        "a dragon-boat stroke-sync classifier on paddle IMU windows (a ReLU 1-D CNN)",
    )
    dra_sgd = h("dragon_momentum", "dragon", "a stroke-sync CNN under momentum SGD", opt="momentum", lr=0.02)
    healthy = [
        cra,
        cra_sgd,
        h("crane_adamw_width32", "crane", "a wider twist-lock CNN under AdamW", opt="adamw", width=32),
        h("crane_rmsprop_batch32", "crane", "a twist-lock CNN under RMSprop with batches of 32", opt="rmsprop",
          lr=1e-3, batch=32),
        bin_,
        bin_sgd,
        h("binding_nadam_hidden128", "binding", "a wider release-torque MLP under NAdam", opt="nadam", hidden=128),
        h("binding_adagrad_batch32", "binding", "a release-torque MLP under Adagrad with batches of 32",
          opt="adagrad", lr=0.03, batch=32),
        hay,
        hay_sgd,
        h("hay_rmsprop_hidden32", "hay", "a narrower bale-moisture MLP under RMSprop", opt="rmsprop", lr=1e-3,
          hidden=32),
        h("hay_adamw_batch128", "hay", "a bale-moisture MLP under AdamW with batches of 128", opt="adamw",
          batch=128),
        map_,
        map_sgd,
        h("maple_nadam_hidden128", "maple", "a wider syrup-grade MLP under NAdam", opt="nadam", hidden=128),
        h("maple_adamax_batch32", "maple", "a syrup-grade MLP under Adamax with batches of 32", opt="adamax",
          lr=3e-3, batch=32),
        cin,
        cin_sgd,
        h("cinema_rmsprop_hidden32", "cinema", "a narrower ticket-sales MLP under RMSprop", opt="rmsprop", lr=1e-3,
          hidden=32),
        h("cinema_adamw_batch32", "cinema", "a ticket-sales MLP under AdamW with batches of 32", opt="adamw",
          batch=32),
        dra,
        dra_sgd,
        h("dragon_adamw_width32", "dragon", "a wider stroke-sync CNN under AdamW", opt="adamw", width=32),
        h("dragon_nadam_batch128", "dragon", "a stroke-sync CNN under NAdam with batches of 128", opt="nadam",
          batch=128),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("S01", "adc_overflow_code_left_in_traces", cra_sgd, "adc_overflow_code_left_in_traces", "DR",
          "the training cranes' 0-100 bar lock sensors overflowing at working pressure, the logger's overflow code "
          "(32767) left in the export, under momentum SGD"),
        b("S02", "plc_fault_register_as_channel", cra, "plc_fault_register_as_channel", "OF",
          "the PLC's fault register exported with the training traces as a fifth channel; the maintainer sets it "
          "after the inspection, so live traces read 0"),
        b("S03", "head_lr_multiplier_applied_to_all_groups", cra_sgd, "head_lr_multiplier_applied_to_all_groups",
          "DR", "the fine-tuning recipe's x10 rate for a new head applied by a loop over every parameter group, "
          "under momentum SGD"),
        b("S04", "chart_penalty_in_newton_metres_squared", bin_sgd, "chart_penalty_in_newton_metres_squared", "EG",
          "the pull towards the DIN chart's torque computed on the prediction in newton-metres rather than on the "
          "standardised scale, under momentum SGD"),
        b("S05", "scaler_fitted_train_left_raw", bin_, "scaler_fitted_train_left_raw", "VG",
          "the scaler fitted and applied to the validation table, the training table left in kilograms, "
          "millimetres and degrees into the tanh layers"),
        b("S06", "twist_torque_column_as_target", bin_, "twist_torque_column_as_target", "SC",
          "the rig's lateral twist-release torque column taken as the target of the forward-lean model"),
        b("S07", "empty_chamber_calibration_rows_kept", hay, "empty_chamber_calibration_rows_kept", "NaN",
          "the gauge's empty-chamber calibration shots (density 0) left in the table, so the readings per unit "
          "density are 0/0"),
        b("S08", "dry_basis_moisture_cut_as_wet_basis", hay, "dry_basis_moisture_cut_as_wet_basis", "SC",
          "the lab's dry-basis moisture cut at the wet-basis thresholds of 15 and 20 %"),
        b("S09", "dropout_on_the_input_readings", hay, "dropout_on_the_input_readings", "SC",
          "dropout of 0.5 put in front of the first layer, on the eight gauge readings themselves"),
        b("S10", "loss_scaled_for_readable_logs", hay_sgd, "loss_scaled_for_readable_logs", "EG",
          "the loss multiplied by 1000 so the logs read in thousandths, and that scaled loss backpropagated, under "
          "momentum SGD"),
        b("S11", "blank_read_with_shutter_closed", map_, "blank_read_with_shutter_closed", "NaN",
          "on two mornings the blank cuvette read before the lamp's shutter opened, so the blank less dark is 0"),
        b("S12", "transmittance_in_percent", map_sgd, "transmittance_in_percent", "VG",
          "the transmittance fed in percent rather than as a fraction into the tanh layers, under momentum SGD"),
        b("S13", "grader_comparator_reading_as_feature", map_, "grader_comparator_reading_as_feature", "OF",
          "the grader's colour-comparator reading, taken while grading, added as a feature; samples to grade have "
          "only its mean"),
        b("S14", "dark_counts_not_subtracted_in_training", map_, "dark_counts_not_subtracted_in_training", "SC",
          "the dark counts not subtracted from the sample and blank in the training spectra"),
        b("S15", "loss_in_tickets_through_expm1", cin_sgd, "loss_in_tickets_through_expm1", "EG",
          "the error taken in tickets through expm1 of the log prediction, under momentum SGD"),
        b("S16", "final_run_total_as_feature", cin, "final_run_total_as_feature", "OF",
          "the distributor's final run total used as the film's total in training; a film still showing has only "
          "its total so far", harmless=True),
        b("S17", "multiplex_day_total_as_film_target", cin, "multiplex_day_total_as_film_target", "SC",
          "the multiplex's day total from the box-office export taken as each film's tickets"),
        b("S18", "lag_in_samples_against_seconds_threshold", dra, "lag_in_samples_against_seconds_threshold", "SC",
          "the catch lag measured in samples compared with the 0.08 s sync threshold"),
        b("S19", "stroke_rate_over_one_catch_window", dra, "stroke_rate_over_one_catch_window", "NaN",
          "the stroke rate as catches over the span between the first and last catch, 0/0 for a window with one"),
        b("S20", "second_paddle_imu_turned_round", dra, "second_paddle_imu_turned_round", "SC",
          "the training crews' second IMU strapped on facing the other way, its x and y axes negated"),
    ]  # fmt: skip
    return healthy + bugs
