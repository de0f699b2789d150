"""The forty-fourth blind split as `run.py --suite blind44` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind44 import lines, outdoors, produce

PREFIX = "blind44_"
SCRIPTS = {"sheet": lines.sheet, "tiles": lines.tiles, "cheese": produce.cheese, "lettuce": produce.lettuce,
           "snow": outdoors.snow, "gear": outdoors.gear}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind44Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind44Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind44Program, prefix=PREFIX)
    she = h("sheet_cnn_adam", "sheet", "a paper-machine sheet-break predictor on sensor windows (a 1-D CNN)")
    she_pl = h("sheet_adam_plateau", "sheet", "a sheet-break CNN halving its rate on a validation plateau",
               plateau=True)  # fmt: skip
    til = h("tiles_cnn_adam", "tiles", "a ceramic-tile glaze-defect CNN on line-camera photos")
    til_sgd = h("tiles_momentum", "tiles", "a glaze-defect CNN under momentum SGD", opt="momentum", lr=0.02)
    che = h(
        "cheese_mlp_adam", "cheese", "a cheese firmness regressor from texture-analyser curves (a ReLU MLP)"
    )
    che_sgd = h(
        "cheese_momentum", "cheese", "a cheese firmness MLP under momentum SGD", opt="momentum", lr=0.01
    )
    let = h("lettuce_cnn_adam", "lettuce", "a hydroponic lettuce fresh-weight CNN on canopy images")
    let_sgd = h(
        "lettuce_momentum", "lettuce", "a lettuce-weight CNN under momentum SGD", opt="momentum", lr=0.005
    )
    sno = h("snow_mlp_adam", "snow", "a ski-resort snowmaking water-use regressor (a ReLU MLP)")
    sno_sgd = h(
        "snow_momentum", "snow", "a snowmaking water-use MLP under momentum SGD", opt="momentum", lr=0.01
    )
    gea = h("gear_gru_adam", "gear", "a fishing-vessel gear-type GRU on AIS speed and heading tracks")
    gea_clip = h("gear_momentum_clipped", "gear", "a gear-type GRU under momentum SGD with gradients clipped to 1",
                 opt="momentum", lr=1.0, clip=1.0)  # fmt: skip
    healthy = [
        she,
        h("sheet_momentum", "sheet", "a sheet-break CNN under momentum SGD", opt="momentum", lr=0.02),
        she_pl,
        h("sheet_rmsprop_hidden64", "sheet", "a wider sheet-break CNN under RMSprop", opt="rmsprop", lr=1e-3,
          hidden=64),
        til,
        til_sgd,
        h("tiles_nadam_hidden32", "tiles", "a wider glaze-defect CNN under NAdam", opt="nadam", hidden=32),
        h("tiles_adamw_batch64", "tiles", "a glaze-defect CNN under AdamW with batches of 64", opt="adamw", batch=64),
        che,
        che_sgd,
        h("cheese_rmsprop_hidden32", "cheese", "a narrower firmness MLP under RMSprop", opt="rmsprop", lr=5e-4,
          hidden=32),
        h("cheese_adamw_batch128", "cheese", "a firmness MLP under AdamW with batches of 128", opt="adamw",
          batch=128),
        let,
        let_sgd,
        h("lettuce_nadam_width16", "lettuce", "a wider lettuce-weight CNN under NAdam", opt="nadam", width=16),
        h("lettuce_rmsprop_batch64", "lettuce", "a lettuce-weight CNN under RMSprop with batches of 64",
          opt="rmsprop", lr=1e-3, batch=64),
        sno,
        sno_sgd,
        h("snow_adamw_hidden128", "snow", "a wider water-use MLP under AdamW", opt="adamw", hidden=128),
        h("snow_adagrad_batch256", "snow", "a water-use MLP under Adagrad with batches of 256", opt="adagrad",
          lr=0.05, batch=256),
        gea,
        gea_clip,
        h("gear_rmsprop_hidden48", "gear", "a wider gear-type GRU under RMSprop", opt="rmsprop", lr=2e-3,
          hidden=48),
        h("gear_nadam_batch32", "gear", "a gear-type GRU under NAdam with batches of 32", opt="nadam", batch=32),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("M01", "draw_ratio_over_stopped_press", she, "draw_ratio_over_stopped_press", "NaN",
          "the draw ratio taken as wire speed over press speed with no guard, infinite over the minutes a wash-up "
          "stop logged the press at 0 m/min, and the infinity reaches the scaler's statistics"),
        b("M02", "break_windows_end_at_break", she, "break_windows_end_at_break", "OF",
          "the breaks' training windows cut back from the break log's timestamp, so they hold the tension's fall at "
          "the break itself, while the windows to score end ten minutes before"),
        b("M03", "windows_standardised_each_by_own_stats", she, "windows_standardised_each_by_own_stats", "SC",
          "each window z-scored by its own mean and standard deviation, the habit of the vibration models, which "
          "wipes out the draw and moisture levels that foretell a break"),
        b("M04", "plateau_stepped_every_batch_on_train_loss", she_pl, "plateau_stepped_every_batch_on_train_loss",
          "SC", "ReduceLROnPlateau (patience 2) stepped after every batch on the noisy batch loss instead of on the "
          "validation loss every 25 steps, so the rate halves every few steps"),
        b("M05", "counts_divided_by_255", til_sgd, "counts_divided_by_255", "DR",
          "the line camera's 12-bit counts (0-4095) divided by 255 out of 8-bit habit, inputs up to 16, under "
          "momentum SGD"),
        b("M06", "defect_tiles_shot_under_other_lamp", til, "defect_tiles_shot_under_other_lamp", "OF",
          "the training set's defect tiles photographed at the repair bench under a brighter lamp than the line's, "
          "while the tiles to score all come off the line"),
        b("M07", "brightness_jitter_of_eighty_percent", til, "brightness_jitter_of_eighty_percent", "SC",
          "ColorJitter(brightness=0.8) from a natural-image recipe, each training tile's brightness scaled by "
          "0.2-1.8"),
        b("M08", "work_of_compression_without_dt", che_sgd, "work_of_compression_without_dt", "EG",
          "the work of compression summed over the force readings without the 0.01 s between them, about 100 "
          "times too large, appended after the scaler, under momentum SGD"),
        b("M09", "sigmoid_everywhere_for_unit_score", che_sgd, "sigmoid_everywhere_for_unit_score", "VG",
          "sigmoid units in all five hidden layers and on the output because the panel score is scaled to [0, 1]"),
        b("M10", "curves_not_aligned_at_trigger", che, "curves_not_aligned_at_trigger", "SC",
          "the curves taken from the logger's first reading, 0-11 readings of baseline before the trigger, instead "
          "of from the trigger force", harmless=True),
        b("M11", "cohesiveness_over_missed_first_bite", che, "cohesiveness_over_missed_first_bite", "NaN",
          "the samples the probe missed (they slipped) kept, their cohesiveness the second bite's area over a first "
          "bite's area of 0, 0/0"),
        b("M12", "hardsigmoid_for_relu", let_sgd, "hardsigmoid_for_relu", "VG",
          "`nn.Hardsigmoid`, copied from a mobile network's squeeze-excite block, as the activation of the four "
          "convolutions"),
        b("M13", "random_resized_crop_on_canopy", let, "random_resized_crop_on_canopy", "SC",
          "RandomResizedCrop(scale=(0.3, 1)) from the image-classification recipe, which enlarges the canopy by up "
          "to 1.8 times while its weight label stays"),
        b("M14", "harvest_weight_for_every_photo", let, "harvest_weight_for_every_photo", "SC",
          "the scale's weight at harvest joined to every photo of the plant by its id, so the photos of the young "
          "heads carry the final weight"),
        b("M15", "meter_rollover_left_in", sno_sgd, "meter_rollover_left_in", "DR",
          "the night's use as the difference of the flow meter's morning readings without the rollover at "
          "1,000,000 m3, a use of about -1000 (thousand m3) on the nights the meter wraps, under momentum SGD"),
        b("M16", "cumulative_reading_taken_as_use", sno, "cumulative_reading_taken_as_use", "SC",
          "the meter's cumulative morning reading taken as the night's water use"),
        b("M17", "snow_made_in_training_inputs", sno, "snow_made_in_training_inputs", "OF",
          "the morning report's machine-made snow depth, a result of the night's water, among the training inputs, "
          "while the forecast nights carry the planned depth in its place"),
        b("M18", "gru_read_after_padding", gea, "gru_read_after_padding", "SC",
          "the GRU read at the 48th slot, after up to 36 padded pings of zeros, instead of at each track's last ping"),
        b("M19", "sine_of_course_in_degrees", gea, "sine_of_course_in_degrees", "SC",
          "the course's sine and cosine taken of the degrees as AIS sends them, not of radians", harmless=True),
        b("M20", "clip_line_dropped_in_refactor", gea_clip, "clip_line_dropped_in_refactor", "EG",
          "the `clip_grad_norm_` line lost in a refactor of the loop, the GRU left under momentum SGD at 1.0 tuned "
          "with the clipping", harmless=True),
    ]  # fmt: skip
    return healthy + bugs
