"""The forty-seventh blind split as `run.py --suite blind47` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind47 import processes, sensing, services

PREFIX = "blind47_"
SCRIPTS = {"ferry": services.ferry, "shots": services.shots, "compost": processes.compost, "kiln": processes.kiln,
           "violin": sensing.violin, "tea": sensing.tea}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind47Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind47Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind47Program, prefix=PREFIX)
    fer = h(
        "ferry_mlp_adam",
        "ferry",
        "a ferry passenger-count forecaster (a Poisson MLP over two weeks of sailings)",
    )
    fer_sgd = h(
        "ferry_momentum", "ferry", "a passenger-count MLP under momentum SGD", opt="momentum", lr=4e-5
    )
    sho = h(
        "shots_mlp_adam", "shots", "a basketball shot-make probability model from tracking features (an MLP)"
    )
    sho_sgd = h("shots_momentum", "shots", "a shot-make MLP under momentum SGD", opt="momentum", lr=0.05)
    com = h(
        "compost_gru_adam", "compost", "a compost-pile temperature forecaster (a GRU over a day of readings)"
    )
    com_sgd = h(
        "compost_momentum", "compost", "a pile-temperature GRU under momentum SGD", opt="momentum", lr=0.05
    )
    kil = h(
        "kiln_tanh_adam",
        "kiln",
        "a cement-kiln clinker free-lime regressor from process readings (a tanh MLP)",
    )
    kil_sgd = h("kiln_momentum", "kiln", "a free-lime tanh MLP under momentum SGD", opt="momentum", lr=0.02)
    vio = h(
        "violin_cnn_adam",
        "violin",
        "a violin bow-stroke classifier on bow-sensor IMU windows (a tanh 1-D CNN)",
    )
    tea = h("tea_cnn_adam", "tea", "a tea-leaf grade CNN on conveyor-camera patches")
    tea_sgd = h("tea_momentum", "tea", "a tea-grade CNN under momentum SGD", opt="momentum", lr=0.02)
    healthy = [
        fer,
        fer_sgd,
        h("ferry_adamw_hidden128", "ferry", "a wider passenger-count MLP under AdamW", opt="adamw", hidden=128),
        h("ferry_rmsprop_batch32", "ferry", "a passenger-count MLP under RMSprop with batches of 32", opt="rmsprop",
          batch=32),
        sho,
        sho_sgd,
        h("shots_nadam_hidden32", "shots", "a narrower shot-make MLP under NAdam", opt="nadam", hidden=32),
        h("shots_adagrad_batch256", "shots", "a shot-make MLP under Adagrad with batches of 256", opt="adagrad",
          lr=0.03, batch=256),
        com,
        com_sgd,
        h("compost_rmsprop_hidden16", "compost", "a narrower pile GRU under RMSprop", opt="rmsprop", lr=1e-3,
          hidden=16),
        h("compost_adamw_batch128", "compost", "a pile GRU under AdamW with batches of 128", opt="adamw", batch=128),
        kil,
        kil_sgd,
        h("kiln_nadam_hidden128", "kiln", "a wider free-lime MLP under NAdam", opt="nadam", hidden=128),
        h("kiln_adamax_batch32", "kiln", "a free-lime MLP under Adamax with batches of 32", opt="adamax", lr=2e-3,
          batch=32),
        vio,
        h("violin_adamw_batch32", "violin", "a bow-stroke CNN under AdamW with batches of 32", opt="adamw", batch=32),
        h("violin_rmsprop_width16", "violin", "a narrower bow-stroke CNN under RMSprop", opt="rmsprop", lr=1e-3,
          width=16),
        h("violin_nadam_batch128", "violin", "a bow-stroke CNN under NAdam with batches of 128", opt="nadam",
          batch=128),
        tea,
        tea_sgd,
        h("tea_adamw_width32", "tea", "a wider tea-grade CNN under AdamW", opt="adamw", width=32),
        h("tea_rmsprop_batch128", "tea", "a tea-grade CNN under RMSprop with batches of 128", opt="rmsprop",
          lr=1e-3, batch=128),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("J01", "cancelled_sailings_load_factor", fer, "cancelled_sailings_load_factor", "NaN",
          "each past day's load factor taken as passengers over seats offered, 0/0 on the days a gale cancelled the "
          "sailings"),
        b("J02", "bookings_snapshot_taken_at_departure", fer, "bookings_snapshot_taken_at_departure", "OF",
          "the booking system's snapshot taken as the ship sailed used for the bookings two days ahead in the "
          "training table, while the days to forecast have only the advance bookings"),
        b("J03", "route_level_offset_left_out", fer_sgd, "route_level_offset_left_out", "SC",
          "the route's recent level left out of the log rate in training, so the net starts at a rate of 1 against "
          "counts of hundreds, under momentum SGD"),
        b("J04", "return_sailing_counts_as_target", fer, "return_sailing_counts_as_target", "SC",
          "the day's return-sailing counts joined as the target of the outbound route's windows"),
        b("J05", "lr_from_range_test_loss_minimum", sho_sgd, "lr_from_range_test_loss_minimum", "EG",
          "the momentum SGD rate read off a learning-rate range test at the loss's minimum (2.0), where it was "
          "already diverging, rather than where it fell fastest"),
        b("J06", "game_fg_pct_counts_this_shot", sho, "game_fg_pct_counts_this_shot", "OF",
          "the shooter's percentage in the game so far taken over the shots up to and including this one"),
        b("J07", "fouled_misses_recorded_as_makes", sho, "fouled_misses_recorded_as_makes", "SC",
          "the make taken from the play-by-play's points, so a miss on which the shooter was fouled reads as made",
          harmless=True),
        b("J08", "second_half_distance_to_wrong_basket", sho, "second_half_distance_to_wrong_basket", "SC",
          "the shot distance computed from the court x without mirroring it after half time, so second-half shots "
          "are measured to the other basket"),
        b("J09", "log_of_core_over_ambient_excess", com, "log_of_core_over_ambient_excess", "NaN",
          "the log of the core's excess over the ambient taken without the twin's floor, NaN where a new or turned "
          "pile sits at or below the air's temperature"),
        b("J10", "hand_rolled_momentum_into_sgd_momentum", com_sgd, "hand_rolled_momentum_into_sgd_momentum", "EG",
          "the heavy-ball buffer of the script's hand-written SGD kept when it moved to torch's momentum SGD, so the "
          "gradients are accumulated twice"),
        b("J11", "turning_column_dropped", com, "turning_column_dropped", "OL",
          "the 'turned' flag and the turning schedule left out of the exported columns, so the sudden drops at a "
          "turning are unforeseeable"),
        b("J12", "scaler_built_with_std_false", kil, "scaler_built_with_std_false", "VG",
          "the readings' scaler built with `with_std=False`, so temperatures and NOx reach the first tanh layer "
          "centred but in degrees and ppm"),
        b("J13", "lab_sample_joined_to_hour_it_was_taken", kil, "lab_sample_joined_to_hour_it_was_taken", "SC",
          "each lab sample's free lime joined to the readings of the hour it was taken rather than the hour its "
          "clinker was burnt"),
        b("J14", "scaler_fitted_on_steady_test_day", kil_sgd, "scaler_fitted_on_steady_test_day", "VG",
          "the scaler fitted on the performance-test day, when feed, coal and speed were held steady, so the "
          "normal run's readings come out tens of standard deviations wide into the tanh layers, under momentum SGD"),
        b("J15", "gyro_driver_mdps_taken_as_dps", vio, "gyro_driver_mdps_taken_as_dps", "SC",
          "the IMU driver's gyroscope in millidegrees per second divided by the 500 deg/s full scale as if in "
          "degrees, so the training windows' rotation reaches the tanh convolutions a thousand times too large"),
        b("J16", "recordings_at_400hz_windowed_as_100hz", vio, "recordings_at_400hz_windowed_as_100hz", "SC",
          "the new bow sensor's 400 Hz training recordings cut into 64-sample windows as if at 100 Hz, a quarter of "
          "a stroke each", harmless=True),
        b("J17", "normalised_per_single_stroke_take", vio, "normalised_per_single_stroke_take", "OF",
          "each recording standardised over itself, which in training is a take of one stroke exercise, so a "
          "window's level says its stroke, while a piece to recognise mixes strokes"),
        b("J18", "batchnorm_recipe_rate_on_plain_cnn", tea_sgd, "batchnorm_recipe_rate_on_plain_cnn", "DR",
          "the ResNet recipe's learning rate of 0.4 kept for the plain CNN without its BatchNorm layers"),
        b("J19", "hand_written_hue_on_grey_pixels", tea, "hand_written_hue_on_grey_pixels", "NaN",
          "the hue channel computed by the hexcone formula by hand, dividing by a grey belt pixel's zero chroma"),
        b("J20", "imagenet_stats_on_0_255_pixels", tea_sgd, "imagenet_stats_on_0_255_pixels", "DR",
          "the ImageNet mean and standard deviation applied to the loader's 0-255 bytes in training, the scaling to "
          "[0, 1] left out, under momentum SGD"),
    ]  # fmt: skip
    return healthy + bugs
