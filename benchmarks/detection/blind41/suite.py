"""The forty-first blind split as `run.py --suite blind41` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind41 import daily, industry, wild

PREFIX = "blind41_"
SCRIPTS = {"rail": industry.rail, "coil": industry.coil, "seabird": wild.seabird, "smoke": wild.smoke,
           "loans": daily.loans, "sourdough": daily.sourdough}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind41Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind41Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind41Program, prefix=PREFIX)
    rai = h(
        "rail_cnn_adam",
        "rail",
        "a rail-track geometry fault classifier on axle-box accelerations (a 1-D CNN)",
    )
    coi = h("coil_cnn_adam", "coil", "a steel-coil surface-defect CNN on camera patches")
    coi_sgd = h("coil_momentum", "coil", "a coil-defect CNN under momentum SGD", opt="momentum", lr=0.05)
    sea = h("seabird_gru_adam", "seabird", "a seabird dive classifier on biologger depth traces (a GRU)")
    smo = h(
        "smoke_mlp_adam", "smoke", "a wildfire-smoke PM2.5 regressor from satellite aerosol depth (an MLP)"
    )
    smo_sgd = h("smoke_momentum", "smoke", "a smoke PM2.5 MLP under momentum SGD", opt="momentum", lr=0.02)
    loa = h("loans_mlp_adam", "loans", "a library-loan demand forecaster (an MLP over the past weeks)")
    loa_sgd = h("loans_momentum", "loans", "a library-loan MLP under momentum SGD", opt="momentum", lr=0.02)
    sou = h("sourdough_mlp_adam", "sourdough", "a sourdough rise-time regressor (an MLP)")
    sou_one = h("sourdough_onecycle", "sourdough", "a rise-time MLP under Adam with a OneCycle schedule",
                max_lr=0.01)  # fmt: skip
    healthy = [
        rai,
        h("rail_momentum", "rail", "a rail-fault CNN under momentum SGD", opt="momentum", lr=0.02),
        h("rail_adamw_width16", "rail", "a narrower rail-fault CNN under AdamW", opt="adamw", width=16),
        h("rail_rmsprop_batch128", "rail", "a rail-fault CNN under RMSprop with batches of 128", opt="rmsprop",
          lr=1e-3, batch=128),
        coi,
        coi_sgd,
        h("coil_rmsprop_width8", "coil", "a narrower coil-defect CNN under RMSprop", opt="rmsprop", lr=1e-3, width=8),
        h("coil_adamax_batch32", "coil", "a coil-defect CNN under Adamax with batches of 32", opt="adamax", lr=4e-3,
          batch=32),
        sea,
        h("seabird_rmsprop", "seabird", "a dive GRU under RMSprop", opt="rmsprop", lr=2e-3),
        h("seabird_adamw_hidden16", "seabird", "a narrower dive GRU under AdamW", opt="adamw", hidden=16),
        h("seabird_nadam_batch32", "seabird", "a dive GRU under NAdam with batches of 32", opt="nadam", batch=32),
        smo,
        smo_sgd,
        h("smoke_nadam_hidden32", "smoke", "a narrower smoke MLP under NAdam", opt="nadam", hidden=32),
        h("smoke_adagrad_batch256", "smoke", "a smoke MLP under Adagrad with batches of 256", opt="adagrad",
          lr=0.03, batch=256),
        loa,
        loa_sgd,
        h("loans_adamw_hidden128", "loans", "a wider library-loan MLP under AdamW", opt="adamw", hidden=128),
        h("loans_rmsprop_batch32", "loans", "a library-loan MLP under RMSprop with batches of 32", opt="rmsprop",
          lr=5e-4, batch=32),
        sou,
        sou_one,
        h("sourdough_adamw_hidden128", "sourdough", "a wider rise-time MLP under AdamW", opt="adamw", hidden=128),
        h("sourdough_momentum", "sourdough", "a rise-time MLP under momentum SGD", opt="momentum", lr=0.02),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("C01", "accel_over_speed_at_standstill", rai, "accel_over_speed_at_standstill", "NaN",
          "the accelerations brought to the reference speed by (20 / speed) squared with the windows the car logged "
          "standing at signals kept, speed 0"),
        b("C02", "windows_from_one_track_section", rai, "windows_from_one_track_section", "OF",
          "the training windows from the one test section the car ran twenty-five times over, 48 distinct windows"),
        b("C03", "defect_log_joined_without_antenna_offset", rai, "defect_log_joined_without_antenna_offset", "SC",
          "the track-defect log joined on the GPS chainage without the antenna's 40 m offset ahead of the axle box, "
          "so each window carries the next window's label"),
        b("C04", "frames_over_255", coi_sgd, "frames_over_255", "EG",
          "the 12-bit camera's counts divided by 255 as in the 8-bit line's preprocessing, patches of about 9 "
          "under momentum SGD"),
        b("C05", "sigmoid_after_every_conv", coi_sgd, "sigmoid_after_every_conv", "VG",
          "the CNN deepened to eight convolutions each followed by a sigmoid, no normalisation, under momentum SGD"),
        b("C06", "defects_cropped_centred", coi, "defects_cropped_centred", "OF",
          "the training defects cropped by the annotators centred in their patches while the line's patches "
          "catch them anywhere"),
        b("C07", "weights_drawn_from_unit_normal", coi_sgd, "weights_drawn_from_unit_normal", "DR",
          "every convolution's and the linear layer's weights re-initialised by `normal_(0, 1)`, under momentum SGD"),
        b("C08", "plain_rnn_over_full_rate_trace", sea, "plain_rnn_over_full_rate_trace", "VG",
          "a plain tanh RNN over the logger's full 4 Hz record (128 steps) in place of the GRU over the 1 Hz means"),
        b("C09", "dive_labels_from_wet_dry_sensor", sea, "dive_labels_from_wet_dry_sensor", "SC",
          "the traces labelled dives wherever the wet-dry sensor read wet, so the birds resting on the water count "
          "as travel dives"),
        b("C10", "vertical_speed_over_duplicate_timestamps", sea, "vertical_speed_over_duplicate_timestamps", "NaN",
          "the vertical speed taken as the depth's change over the timestamps' change, which is zero where the "
          "logger wrote a second twice"),
        b("C11", "aod_scale_factor_not_applied", smo_sgd, "aod_scale_factor_not_applied", "EG",
          "the AOD's int16 values used without the product's scale factor of 0.001 and left out of the scaler as "
          "\"already optical depth\", under momentum SGD"),
        b("C12", "angstrom_from_negative_aod", smo, "angstrom_from_negative_aod", "NaN",
          "the Angstrom exponent taken as the log of the two bands' AOD ratio over every retrieval, the slightly "
          "negative and zero ones included"),
        b("C13", "matched_overpass_days_only", smo, "matched_overpass_days_only", "OF",
          "only the 60 days with an overpass within the hour of the monitor's reading kept for training"),
        b("C14", "pm25_merged_from_next_day", smo, "pm25_merged_from_next_day", "SC",
          "the monitors' daily PM2.5 joined on a date column shifted by the UTC conversion, so each day's target is "
          "the next day's"),
        b("C15", "trailing_mean_includes_target_week", loa, "trailing_mean_includes_target_week", "OF",
          "the trailing four-week mean computed as a window ending at the label's week, so in training it holds the "
          "target while the forecast can only have the past"),
        b("C16", "growth_over_closed_weeks", loa, "growth_over_closed_weeks", "NaN",
          "the week-on-week growth taken as this week's loans over last week's, infinite or 0/0 after a closure"),
        b("C17", "loader_batch_size_left_at_one", loa_sgd, "loader_batch_size_left_at_one", "EG",
          "the data loader's batch size left at its default of one, under momentum SGD at the rate for batches of 64"),
        b("C18", "onecycle_peak_rate_of_one", sou_one, "onecycle_peak_rate_of_one", "DR",
          "OneCycle's `max_lr` set to 1.0, read off the right edge of the learning-rate finder's plot"),
        b("C19", "kitchen_thermometer_for_dough_temperature", sou, "kitchen_thermometer_for_dough_temperature", "SC",
          "the home bakers' logs' temperature column, the kitchen's, taken for the dough's, which the mixing water "
          "warms by up to 5 C"),
        b("C20", "time_to_peak_read_as_time_to_double", sou, "time_to_peak_read_as_time_to_double", "SC",
          "the bake log's time to the dough's peak read as the target while the model is meant to give the time to "
          "double"),
    ]  # fmt: skip
    return healthy + bugs
