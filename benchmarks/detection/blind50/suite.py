"""The fiftieth blind split as `run.py --suite blind50` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind50 import care, industry, transport

PREFIX = "blind50_"
SCRIPTS = {"sawmill": industry.sawmill, "loom": industry.loom, "ropeway": transport.ropeway, "bus": transport.bus,
           "tomato": care.tomato, "dialysis": care.dialysis}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind50Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind50Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind50Program, prefix=PREFIX)
    saw = h(
        "sawmill_mlp_adam", "sawmill", "a sawmill log-diameter regressor from laser profiles (a ReLU MLP)"
    )
    saw_sgd = h(
        "sawmill_momentum", "sawmill", "a log-diameter MLP under momentum SGD", opt="momentum", lr=0.01
    )
    loo = h("loom_cnn_adam", "loom", "a carpet-loom yarn-break classifier on tension traces (a ReLU 1-D CNN)")
    loo_sgd = h("loom_momentum", "loom", "a yarn-break CNN under momentum SGD", opt="momentum", lr=0.02)
    rop = h("ropeway_tanh_adam", "ropeway",
            "a ropeway cabin-swing forecaster from anemometer and cable sensors (a tanh MLP)")  # fmt: skip
    rop_sgd = h(
        "ropeway_momentum", "ropeway", "a cabin-swing tanh MLP under momentum SGD", opt="momentum", lr=0.02
    )
    bus = h("bus_mlp_adam", "bus", "a school-bus arrival-delay regressor (a ReLU MLP)")
    bus_sgd = h("bus_momentum", "bus", "a bus-delay MLP under momentum SGD", opt="momentum", lr=0.01)
    tom = h(
        "tomato_cnn_adam",
        "tomato",
        "a greenhouse tomato truss-ripeness classifier on canopy photos (a ReLU CNN)",
    )
    tom_sgd = h(
        "tomato_momentum", "tomato", "a truss-ripeness CNN under momentum SGD", opt="momentum", lr=0.02
    )
    dia = h("dialysis_gru_adam", "dialysis", "a dialysis-session hypotension early-warning GRU")
    dia_sgd = h(
        "dialysis_momentum", "dialysis", "a hypotension GRU under momentum SGD", opt="momentum", lr=0.05
    )
    healthy = [
        saw,
        saw_sgd,
        h("sawmill_nadam_hidden128", "sawmill", "a wider log-diameter MLP under NAdam", opt="nadam", hidden=128),
        h("sawmill_adagrad_batch32", "sawmill", "a log-diameter MLP under Adagrad with batches of 32",
          opt="adagrad", lr=0.03, batch=32),
        loo,
        loo_sgd,
        h("loom_adamw_width32", "loom", "a wider yarn-break CNN under AdamW", opt="adamw", width=32),
        h("loom_rmsprop_batch32", "loom", "a yarn-break CNN under RMSprop with batches of 32", opt="rmsprop",
          lr=1e-3, batch=32),
        rop,
        rop_sgd,
        h("ropeway_rmsprop_hidden32", "ropeway", "a narrower cabin-swing MLP under RMSprop", opt="rmsprop",
          lr=1e-3, hidden=32),
        h("ropeway_adamw_batch128", "ropeway", "a cabin-swing MLP under AdamW with batches of 128", opt="adamw",
          batch=128),
        bus,
        bus_sgd,
        h("bus_nadam_hidden128", "bus", "a wider bus-delay MLP under NAdam", opt="nadam", hidden=128),
        h("bus_adamax_batch32", "bus", "a bus-delay MLP under Adamax with batches of 32", opt="adamax", lr=3e-3,
          batch=32),
        tom,
        tom_sgd,
        h("tomato_adamw_width32", "tomato", "a wider truss-ripeness CNN under AdamW", opt="adamw", width=32),
        h("tomato_rmsprop_batch32", "tomato", "a truss-ripeness CNN under RMSprop with batches of 32",
          opt="rmsprop", lr=1e-3, batch=32),
        dia,
        dia_sgd,
        h("dialysis_nadam_hidden64", "dialysis", "a wider hypotension GRU under NAdam", opt="nadam", hidden=64),
        h("dialysis_rmsprop_batch128", "dialysis", "a hypotension GRU under RMSprop with batches of 128",
          opt="rmsprop", lr=2e-3, batch=128),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("Y01", "diameter_over_bark_as_target", saw, "diameter_over_bark_as_target", "SC",
          "the mill records' diameter over bark taken as the target of the under-bark model"),
        b("Y02", "sawn_grade_stamp_as_feature", saw, "sawn_grade_stamp_as_feature", "OF",
          "the grader's sawn-grade stamp, put on after sawing, kept as a feature; logs at the scanner read 0"),
        b("Y03", "distances_scaled_not_centred", saw_sgd, "distances_scaled_not_centred", "DR",
          "the scaler's centring switched off, so the laser distances (about 450 mm) enter at some 30 standard "
          "deviations, under momentum SGD"),
        b("Y04", "variation_over_stopped_windows", loo, "variation_over_stopped_windows", "NaN",
          "the tension's coefficient of variation taken as std over mean on windows of a stopped loom, 0/0"),
        b("Y05", "convolutions_summed_over_time", loo_sgd, "convolutions_summed_over_time", "DR",
          "the last convolution's output summed over the 48 time steps rather than averaged, under momentum SGD"),
        b("Y06", "any_stop_counted_as_yarn_break", loo, "any_stop_counted_as_yarn_break", "SC",
          "every stop in the loom's stop log (doffings, operators' stops) counted as a yarn break"),
        b("Y07", "one_mean_and_std_for_the_whole_table", rop, "one_mean_and_std_for_the_whole_table", "SC",
          "the window standardised by one mean and std over the whole table rather than column by column"),
        b("Y08", "tanh_stack_deepened_for_longer_horizon", rop_sgd, "tanh_stack_deepened_for_longer_horizon", "VG",
          "the tanh stack deepened to twenty layers when the horizon was stretched, under momentum SGD"),
        b("Y09", "valley_anemometer_in_training", rop, "valley_anemometer_in_training", "SC",
          "the first season's log of the valley station's anemometer used to train a model run on the tower's", harmless=True),
        b("Y10", "operator_slowdown_command_as_feature", rop, "operator_slowdown_command_as_feature", "OF",
          "the operator's slow-down command, given when the cabins swing, kept as a feature; live it reads 0"),
        b("Y11", "headway_over_gap_with_bunched_buses", bus, "headway_over_gap_with_bunched_buses", "NaN",
          "the headway ratio written as the scheduled headway over the gap to the bus ahead, infinite for bunched "
          "buses"),
        b("Y12", "delay_against_last_terms_timetable", bus, "delay_against_last_terms_timetable", "SC",
          "the delay computed against last term's timetable from the stale export"),
        b("Y13", "learning_rate_from_the_tree_baseline_config", bus_sgd,
          "learning_rate_from_the_tree_baseline_config", "EG",
          "the config file's one learning_rate (0.3, the boosted-tree baseline's) read for the network, under "
          "momentum SGD"),
        b("Y14", "grading_tray_border_in_training_photos", tom, "grading_tray_border_in_training_photos", "OF",
          "the training photos taken of picked trusses on the packhouse's grading trays, a tray colour a stage at "
          "the border"),
        b("Y15", "log_red_over_green_on_shadow_pixels", tom, "log_red_over_green_on_shadow_pixels", "NaN",
          "the chroma channel as the log of red over green with no floor, on pixels the shade clipped to 0"),
        b("Y16", "auto_white_balance_on_training_camera", tom, "auto_white_balance_on_training_camera", "SC",
          "the training photos from a camera that balanced every shot to grey; the robot's camera does not"),
        b("Y17", "logits_over_contrastive_temperature", tom_sgd, "logits_over_contrastive_temperature", "EG",
          "the logits divided by a contrastive recipe's temperature of 0.01 in the loss, under momentum SGD"),
        b("Y18", "saline_bolus_flag_as_input", dia, "saline_bolus_flag_as_input", "OF",
          "the charting system's saline-bolus column, filled in after the bolus, kept as an input", harmless=True),
        b("Y19", "alarm_from_mean_pressure", dia, "alarm_from_mean_pressure", "SC",
          "the alarm labelled from the mean arterial pressure under 90 rather than the systolic"),
        b("Y20", "first_minute_output_as_summary", dia, "first_minute_output_as_summary", "SC",
          "the GRU's output at the window's first minute taken as its summary"),
        b("Y21", "relu_stack_sixteen_deep_on_default_init", saw_sgd, "relu_stack_sixteen_deep_on_default_init", "VG",
          "the log MLP made sixteen ReLU layers deep in PyTorch's default initialisation, under momentum SGD"),
    ]  # fmt: skip
    return healthy + bugs
