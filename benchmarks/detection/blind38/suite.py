"""The thirty-eighth blind split as `run.py --suite blind38` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind38 import ledgers, produce, sensors

PREFIX = "blind38_"
SCRIPTS = {"icing": sensors.icing, "hull": sensors.hull, "grapes": produce.grapes, "ferment": produce.ferment,
           "pharmacy": ledgers.pharmacy, "lbw": ledgers.lbw}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind38Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind38Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind38Program, prefix=PREFIX)
    ice = h("icing_cnn_adam", "icing", "a wind-turbine blade-icing detector on SCADA windows (a 1-D CNN)")
    hul = h("hull_mlp_adam", "hull", "a ship-hull fouling speed-loss regressor on noon reports (a ReLU MLP)")
    hul_sgd = h("hull_momentum", "hull", "a speed-loss MLP under momentum SGD", opt="momentum", lr=0.01)
    gra = h(
        "grapes_mlp_adam",
        "grapes",
        "a grape-ripeness (Brix) regressor from hyperspectral band means (an MLP)",
    )
    gra_sgd = h("grapes_momentum", "grapes", "a Brix MLP under momentum SGD", opt="momentum", lr=0.01)
    fer = h("ferment_lstm_adam", "ferment",
            "a beer-fermentation final-gravity regressor from a hydrometer's first four days (an LSTM)")  # fmt: skip
    pha = h(
        "pharmacy_mlp_adam", "pharmacy", "a pharmacy prescription-demand forecaster (embeddings and an MLP)"
    )
    pha_sgd = h("pharmacy_momentum", "pharmacy", "a demand MLP under momentum SGD", opt="momentum", lr=0.01)
    lbw = h("lbw_mlp_adam", "lbw", "a cricket ball-tracking LBW classifier (a ReLU MLP)")
    lbw_sgd = h("lbw_momentum", "lbw", "an LBW MLP under momentum SGD", opt="momentum", lr=0.02)
    healthy = [
        ice,
        h("icing_nadam", "icing", "an icing CNN under NAdam", opt="nadam"),
        h("icing_rmsprop_width16", "icing", "a narrower icing CNN under RMSprop", opt="rmsprop", lr=1e-3, width=16),
        h("icing_adamw_batch128", "icing", "an icing CNN under AdamW with batches of 128", opt="adamw", batch=128),
        hul,
        hul_sgd,
        h("hull_adamax_hidden128", "hull", "a wider speed-loss MLP under Adamax", opt="adamax", hidden=128),
        h("hull_radam_batch32", "hull", "a speed-loss MLP under RAdam with batches of 32", opt="radam", batch=32),
        gra,
        gra_sgd,
        h("grapes_rmsprop_hidden32", "grapes", "a narrower Brix MLP under RMSprop", opt="rmsprop", lr=1e-3,
          hidden=32),
        h("grapes_adamw_batch64", "grapes", "a Brix MLP under AdamW with batches of 64", opt="adamw", batch=64),
        fer,
        h("ferment_rmsprop", "ferment", "a final-gravity LSTM under RMSprop", opt="rmsprop", lr=2e-3),
        h("ferment_nadam_hidden16", "ferment", "a narrower final-gravity LSTM under NAdam", opt="nadam", hidden=16),
        h("ferment_adamax_batch64", "ferment", "a final-gravity LSTM under Adamax with batches of 64", opt="adamax",
          batch=64),
        pha,
        pha_sgd,
        h("pharmacy_adagrad_hidden128", "pharmacy", "a wider demand MLP under Adagrad", opt="adagrad", lr=0.02,
          hidden=128),
        h("pharmacy_radam_batch64", "pharmacy", "a demand MLP under RAdam with batches of 64", opt="radam", batch=64),
        lbw,
        lbw_sgd,
        h("lbw_adamw_hidden32", "lbw", "a narrower LBW MLP under AdamW", opt="adamw", hidden=32),
        h("lbw_nadam_batch128", "lbw", "an LBW MLP under NAdam with batches of 128", opt="nadam", batch=128),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("F01", "dew_point_of_zero_humidity", ice, "dew_point_of_zero_humidity", "NaN",
          "the dew point taken by the Magnus formula from the hygrometer's raw reading, log(0) where its failed "
          "heater leaves it at 0 %"),
        b("F02", "unix_timestamp_left_in_channels", ice, "unix_timestamp_left_in_channels", "DR",
          "the SCADA export's first column, the record's Unix time in seconds, left among the channels after the "
          "standardisation"),
        b("F03", "stop_log_read_as_icing_label", ice, "stop_log_read_as_icing_label", "SC",
          "the label taken from the operator's stop log (the turbine stopped for ice), so windows of iced blades "
          "still turning are labelled clean"),
        b("F04", "anchored_reports_in_speed_loss", hul_sgd, "anchored_reports_in_speed_loss", "EG",
          "the noon reports under 5 kn (at anchor, drifting) left in, their speed loss over a logged speed near "
          "zero in the thousands of per cent, under momentum SGD"),
        b("F05", "cleaning_counter_reset_at_port_calls", hul, "cleaning_counter_reset_at_port_calls", "SC",
          "the days since the hull was cleaned read from a counter the voyage system resets at every port call"),
        b("F07", "single_scan_line_for_bunch_means", gra, "single_scan_line_for_bunch_means", "OF",
          "the bunch's features taken from one scan line's 120 raw bands instead of the means over its pixels in "
          "24 bins"),
        b("F08", "brix_from_previous_sampling_round", gra, "brix_from_previous_sampling_round", "SC",
          "the refractometer's Brix joined from the previous week's sampling round of the block"),
        b("F09", "absorbance_of_dead_pixels", gra, "absorbance_of_dead_pixels", "NaN",
          "the absorbance log(1/R) taken of every pixel before averaging, infinite at the dead pixels that read 0"),
        b("F10", "attenuation_of_water_calibration_logs", fer, "attenuation_of_water_calibration_logs", "NaN",
          "the hydrometer's calibration logs in water (1.000 throughout) kept, their apparent attenuation 0/0"),
        b("F11", "forget_gate_bias_sign_lost", fer, "forget_gate_bias_sign_lost", "VG",
          "the LSTM's forget-gate bias started at -1 instead of +1, so the cell forgets most of itself every hour "
          "of the 96", harmless=True),
        b("F06", "lstm_stacked_six_layers_deep", fer, "lstm_stacked_six_layers_deep", "VG",
          "the final-gravity LSTM built with num_layers=6 from a speech model's config, six recurrent layers "
          "stacked with no skip between them"),
        b("F12", "recipe_final_gravity_read_as_measured", fer, "recipe_final_gravity_read_as_measured", "SC",
          "the target read from the brew log's expected final gravity (the recipe's) next to the measured one"),
        b("F13", "series_level_with_forecast_week", pha, "series_level_with_forecast_week", "OF",
          "each training window's level (the scale of its inputs and target) taken over its history and the "
          "forecast week, which the held-out windows cannot see"),
        b("F20", "day_counters_appended_after_scaling", hul, "day_counters_appended_after_scaling", "DR",
          "the days since the hull cleaning and since the port call (hundreds) appended to the features after the "
          "scaler"),
        b("F14", "log_link_under_squared_error_on_counts", pha_sgd, "log_link_under_squared_error_on_counts",
          "EG", "the network's log rate exponentiated and fitted by squared error to the week's raw count, under "
          "momentum SGD"),
        b("F15", "scaler_mean_and_std_swapped", lbw_sgd, "scaler_mean_and_std_swapped", "SC",
          "the standardisation written (x - std) / mean, dividing the lines (means near 0) by almost nothing"),
        b("F16", "drift_per_metre_over_full_tosses", lbw, "drift_per_metre_over_full_tosses", "NaN",
          "the line's drift per metre from the bounce to the pad divided by that distance, zero for a full toss "
          "the tracking puts the bounce at the pad for"),
        b("F17", "left_handers_lines_left_unmirrored", lbw, "left_handers_lines_left_unmirrored", "SC",
          "the left-handers' lines left in the ground's frame, so 'outside leg' means the other side for them",
          harmless=True),
        b("F18", "umpires_call_read_as_label", lbw, "umpires_call_read_as_label", "SC",
          "the on-field umpire's decision read as the label, close calls given not out"),
    ]  # fmt: skip
    return healthy + bugs
