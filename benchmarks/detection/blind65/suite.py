"""The sixty-fifth blind split as `run.py --suite blind65` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind65 import furnaces, halls, ropes

PREFIX = "blind65_"
SCRIPTS = {"longline": ropes.longline, "sheave": ropes.sheave, "firing": furnaces.firing,
           "partials": furnaces.partials, "pursuit": halls.pursuit, "blend": halls.blend}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind65Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind65Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind65Program, prefix=PREFIX)
    lng = h(
        "longline_lstm_adam",
        "longline",
        "a kelp farm's next-day peak tension on a longline's headline from its last seven days (an LSTM)",
    )
    lng_sgd = h(
        "longline_momentum", "longline", "a longline tension LSTM under momentum SGD", opt="momentum", lr=0.02
    )
    shv = h(
        "sheave_autoencoder_adam",
        "sheave",
        "a chairlift's sheave-train vibration spectra checked by an autoencoder's reconstruction error",
    )
    shv_sgd = h(
        "sheave_momentum", "sheave", "a sheave-train autoencoder under momentum SGD", opt="momentum", lr=0.02
    )
    fir = h(
        "firing_cnn_adam",
        "firing",
        "a brickworks' fired-brick grade from its tunnel kiln's firing trace (a 1-D CNN)",
    )
    fir_sgd = h("firing_momentum", "firing", "a firing-trace CNN under momentum SGD", opt="momentum", lr=0.02)
    prt = h(
        "partials_mlp_adam",
        "partials",
        "a bell foundry's strike-note partials of a bell from its profile (a GELU MLP)",
    )
    prt_sgd = h(
        "partials_momentum", "partials", "a bell-partials MLP under momentum SGD", opt="momentum", lr=0.02
    )
    pur = h(
        "pursuit_attention_adam",
        "pursuit",
        "a velodrome's team-pursuit finishing time from the ride's first eight laps (a small self-attention encoder)",
    )
    pur_sgd = h(
        "pursuit_momentum", "pursuit", "a team-pursuit encoder under momentum SGD", opt="momentum", lr=0.02
    )
    bln = h(
        "blend_deepset_adam",
        "blend",
        "a tea blender's tasting-panel score of a blend from its component lots (a deep-set MLP)",
    )
    bln_sgd = h("blend_momentum", "blend", "a tea-blend deep set under momentum SGD", opt="momentum", lr=0.02)
    healthy = [
        lng, lng_sgd,
        h("longline_adamw_hidden24", "longline", "a wider longline tension LSTM under AdamW", opt="adamw", hidden=24),
        h("longline_rmsprop_batch64", "longline", "a longline tension LSTM under RMSprop with batches of 64",
          opt="rmsprop", batch=64, lr=1e-3),
        shv, shv_sgd,
        h("sheave_nadam_code6", "sheave", "a sheave-train autoencoder with a code of 6 under NAdam", opt="nadam",
          code=6),
        h("sheave_rmsprop_batch64", "sheave", "a sheave-train autoencoder under RMSprop with batches of 64",
          opt="rmsprop", batch=64, lr=1e-3),
        fir, fir_sgd,
        h("firing_radam_width12", "firing", "a wider firing-trace CNN under RAdam", opt="radam", width=12,
          lr=1e-2),
        h("firing_adagrad_batch64", "firing", "a firing-trace CNN under Adagrad with batches of 64", opt="adagrad",
          batch=64, lr=0.03),
        prt, prt_sgd,
        h("partials_adamax_hidden64", "partials", "a wider bell-partials MLP under Adamax", opt="adamax", hidden=64,
          lr=4e-3),
        h("partials_radam_batch64", "partials", "a bell-partials MLP under RAdam with batches of 64", opt="radam",
          batch=64, lr=6e-3),
        pur, pur_sgd,
        h("pursuit_nadam_width16", "pursuit", "a wider team-pursuit encoder under NAdam", opt="nadam", width=16),
        h("pursuit_adamax_batch64", "pursuit", "a team-pursuit encoder under Adamax with batches of 64",
          opt="adamax", batch=64, lr=4e-3),
        bln, bln_sgd,
        h("blend_adamw_hidden48", "blend", "a wider tea-blend deep set under AdamW", opt="adamw", hidden=48),
        h("blend_adagrad_batch64", "blend", "a tea-blend deep set under Adagrad with batches of 64", opt="adagrad",
          batch=64, lr=0.03),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("Q01", "tension_per_kilo_of_unseeded_lines", lng, "tension_per_kilo_of_unseeded_lines", "NaN",
          "the headline's tension per kilo of kelp taken over the line's biomass with no guard for the lines seeded "
          "days ago, whose kelp does not show yet: x / 0"),
        b("Q02", "storm_flag_from_next_day_load_alarm", lng, "storm_flag_from_next_day_load_alarm", "OF",
          "a storm flag kept beside the forecast, in training the load cell's alarm filed under the day it fired, "
          "the forecast day; on the other farm the met office's warning",
          harmless=True),
        b("Q03", "daily_mean_tension_taken_for_peak", lng, "daily_mean_tension_taken_for_peak", "SC",
          "the target read from the load log's daily mean column, next to the peak the moorings are sized for"),
        b("Q04", "spectra_divided_by_fleet_total_power", shv_sgd, "spectra_divided_by_fleet_total_power", "VG",
          "each spectrum divided by the fleet's total power over the training round as its normalisation, the "
          "bands near 1e-5, under momentum SGD"),
        b("Q05", "input_skip_added_to_reconstruction", shv, "input_skip_added_to_reconstruction", "SC",
          "the input added back onto the decoder's output, a skip connection \"to help it train\", so the "
          "autoencoder reconstructs every spectrum, faulty ones too",
          harmless=True),
        b("Q06", "training_spectra_recorded_with_empty_chairs", shv, "training_spectra_recorded_with_empty_chairs",
          "SC",
          "the sound towers' spectra for training recorded on the crew's round before opening, the chairs empty "
          "and the rope's loads low; the towers to check run loaded"),
        b("Q07", "firing_trace_fed_in_degrees", fir, "firing_trace_fed_in_degrees", "DR",
          "the firing trace fed as logged, the temperatures in C (20-1200) and the oxygen in %, to the ReLU CNN "
          "(\"it will learn the scale\")"),
        b("Q08", "pallet_chip_count_from_unloading", fir, "pallet_chip_count_from_unloading", "OF",
          "the chips counted as the car is unloaded kept as a channel; the cars to grade are not unloaded yet and "
          "read 0"),
        b("Q09", "black_cores_graded_by_surface_camera", fir, "black_cores_graded_by_surface_camera", "SC",
          "the training grades taken from the sorting line's camera, which sees the bricks' faces and calls a "
          "black-cored brick sound"),
        b("Q10", "logger_full_before_cooling_held_last_reading", fir_sgd,
          "logger_full_before_cooling_held_last_reading", "SC",
          "this works' logger fills its memory at the fifteenth hour and repeats its last reading through the "
          "cooling, kept as it is, under momentum SGD"),
        b("Q11", "cents_of_unread_partials", prt, "cents_of_unread_partials", "NaN",
          "the cents taken of every partial on the tuning sheet, the ones the tuner could not read entered as 0 Hz "
          "among them: log2(0)"),
        b("Q12", "he_init_written_with_fan_in_on_top", prt_sgd, "he_init_written_with_fan_in_on_top", "EG",
          "He's initialisation written by hand with the standard deviation sqrt(2 * fan_in) instead of "
          "sqrt(2 / fan_in), under momentum SGD"),
        b("Q13", "profile_read_from_the_crown_in_new_templates", prt, "profile_read_from_the_crown_in_new_templates",
          "SC",
          "the thickness stations of the new template files, two in five, listed from the crown down, read as the "
          "old files' from the lip up"),
        b("Q14", "as_cast_partials_kept_for_tuned_bells", prt, "as_cast_partials_kept_for_tuned_bells", "SC",
          "the partials of two bells in five taken from the as-cast reading on their sheet instead of the reading "
          "after tuning"),
        b("Q15", "race_clock_kept_unscaled_as_position", pur_sgd, "race_clock_kept_unscaled_as_position", "EG",
          "the race clock at each lap's end (15-125 s) kept as a column unscaled (\"it only says where the lap "
          "is\"), under momentum SGD"),
        b("Q16", "heat_placing_from_results_sheet", pur, "heat_placing_from_results_sheet", "OF",
          "the ride's placing in its round kept from the results sheet the rides were exported from; the rides to "
          "forecast are under way and the live feed sends 0"),
        b("Q17", "log_tf_over_tr_of_green_lots", bln, "log_tf_over_tr_of_green_lots", "NaN",
          "the blending guide's log of the theaflavins over the thearubigins taken as written, the green lots "
          "having neither: log(0 / 0)"),
        b("Q18", "blend_percentages_divided_by_hundred_twice", bln_sgd, "blend_percentages_divided_by_hundred_twice",
          "VG",
          "the lots' percentages divided by 100 a second time, the sheet's loader having made fractions of them "
          "already, the codes summed at a hundredth of their weight, under momentum SGD"),
        b("Q19", "panel_scores_out_of_ten_and_hundred_mixed", bln, "panel_scores_out_of_ten_and_hundred_mixed", "SC",
          "the other tasting panel's scores, two blends in five, kept out of 100 beside this panel's out of 10"),
    ]  # fmt: skip
    return healthy + bugs
