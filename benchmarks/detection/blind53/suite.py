"""The fifty-third blind split as `run.py --suite blind53` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind53 import facilities, gear, growing

PREFIX = "blind53_"
SCRIPTS = {"canopy": growing.canopy, "cave": growing.cave, "lanes": facilities.lanes, "linen": facilities.linen,
           "grip": gear.grip, "chain": gear.chain}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind53Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind53Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind53Program, prefix=PREFIX)
    can = h(
        "canopy_mlp_adam",
        "canopy",
        "a vineyard canopy-vigour regressor from drone multispectral bands (a ReLU MLP)",
    )
    can_sgd = h(
        "canopy_momentum", "canopy", "a pruning-weight MLP under momentum SGD", opt="momentum", lr=0.01
    )
    cav = h("cave_tanh_adam", "cave", "a cheese-cave humidity model for the cave's controller (a tanh MLP)")
    cav_sgd = h("cave_momentum", "cave", "a cave humidity MLP under momentum SGD", opt="momentum", lr=0.01)
    lan = h("lanes_gru_adam", "lanes", "a swimming-pool lane-occupancy forecaster (a GRU over the days)")
    lin = h("linen_poisson_adam", "linen", "a hospital-laundry linen-demand forecaster (a Poisson ReLU MLP)")
    lin_sgd = h("linen_momentum", "linen", "a linen-demand MLP under momentum SGD", opt="momentum", lr=0.005)
    gri = h(
        "grip_cnn_adam", "grip", "a rock-climbing hold-grip classifier on force-plate windows (a 1-D CNN)"
    )
    gri_sgd = h("grip_momentum", "grip", "a grip CNN under momentum SGD", opt="momentum", lr=0.02)
    cha = h(
        "chain_cnn_adam", "chain", "a bicycle-chain wear classifier on drivetrain vibration (a ReLU 1-D CNN)"
    )
    cha_sgd = h("chain_momentum", "chain", "a chain-wear CNN under momentum SGD", opt="momentum", lr=0.02)
    healthy = [
        can,
        can_sgd,
        h("canopy_adamw_hidden128", "canopy", "a wider pruning-weight MLP under AdamW", opt="adamw", hidden=128),
        h("canopy_rmsprop_batch32", "canopy", "a pruning-weight MLP under RMSprop with batches of 32", opt="rmsprop",
          batch=32, lr=5e-4),
        cav,
        cav_sgd,
        h("cave_nadam_hidden96", "cave", "a wider cave humidity MLP under NAdam", opt="nadam", hidden=96),
        h("cave_adagrad_batch128", "cave", "a cave humidity MLP under Adagrad with batches of 128", opt="adagrad",
          batch=128, lr=0.03),
        lan,
        h("lanes_rmsprop_hidden48", "lanes", "a wider lane GRU under RMSprop", opt="rmsprop", hidden=48, lr=2e-3),
        h("lanes_adamw_batch128", "lanes", "a lane GRU under AdamW with batches of 128", opt="adamw", batch=128),
        h("lanes_momentum_hidden24", "lanes", "a narrower lane GRU under momentum SGD", opt="momentum", hidden=24,
          lr=0.05),
        lin,
        lin_sgd,
        h("linen_nadam_hidden32", "linen", "a narrower linen MLP under NAdam", opt="nadam", hidden=32),
        h("linen_adamax_batch128", "linen", "a linen MLP under Adamax with batches of 128", opt="adamax", batch=128,
          lr=4e-3),
        gri,
        gri_sgd,
        h("grip_adamw_width32", "grip", "a wider grip CNN under AdamW", opt="adamw", width=32),
        h("grip_nadam_batch32", "grip", "a grip CNN under NAdam with batches of 32", opt="nadam", batch=32),
        cha,
        cha_sgd,
        h("chain_rmsprop_width24", "chain", "a wider chain-wear CNN under RMSprop", opt="rmsprop", width=24, lr=1e-3),
        h("chain_adamax_batch128", "chain", "a chain-wear CNN under Adamax with batches of 128", opt="adamax",
          batch=128, lr=3e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("O01", "asin_sqrt_of_cover_in_percent", can, "asin_sqrt_of_cover_in_percent", "NaN",
          "the arcsine-square-root transform of the canopy cover applied to the classifier's percent, not a fraction, "
          "so asin of a root above 1"),
        b("O02", "pruning_weight_left_in_grams", can_sgd, "pruning_weight_left_in_grams", "EG",
          "the pruning weight regressed in the grams of the pruning sheet, neither centred nor scaled, under "
          "momentum SGD"),
        b("O03", "block_vigour_target_encoded_in_sample", can, "block_vigour_target_encoded_in_sample", "OF",
          "each block's mean pruning weight, taken over its own panels with the panel's own weight in it, added as a "
          "column; the new vineyards get the overall mean", harmless=True),
        b("O04", "bands_clipped_before_scale_factor", can, "bands_clipped_before_scale_factor", "SC",
          "the reflectance clip to [0, 1] run on the camera's digital numbers, before the 1/10000 scale factor"),
        b("O05", "boxcox_negative_lambda_over_empty_hours", lan, "boxcox_negative_lambda_over_empty_hours", "NaN",
          "the Box-Cox lambda of -0.5 fitted on the open hours applied to every hour's count, 0 ** -0.5 on the "
          "closed ones"),
        b("O06", "day_turnstile_total_kept", lan, "day_turnstile_total_kept", "OF",
          "the forecast day's turnstile total, counted at closing time, kept among the inputs; the live forecast "
          "made the evening before carries last week's"),
        b("O07", "target_hours_in_utc", lan, "target_hours_in_utc", "SC",
          "the next day's hours read off the export's UTC index, two hours ahead of the pool's clock"),
        b("O08", "offset_given_unlogged", lin, "offset_given_unlogged", "EG",
          "the Poisson model's offset given as the mean demand in kg where its log was meant, the log-rate starting "
          "at about 60"),
        b("O09", "rows_deduplicated_on_ward_id", lin, "rows_deduplicated_on_ward_id", "OF",
          "the table deduplicated on the ward id, meant to drop re-sent rows, keeping one day of each ward"),
        b("O10", "soiled_returns_taken_as_demand", lin_sgd, "soiled_returns_taken_as_demand", "SC",
          "the soiled linen weighed at the chute taken as the next day's clean-linen demand, under momentum SGD"),
        b("O11", "sklearn_logistic_activation_six_deep", cav_sgd, "sklearn_logistic_activation_six_deep", "VG",
          "the old sklearn model's settings ported as they were: activation \"logistic\" (a sigmoid) and six hidden "
          "layers, under momentum SGD"),
        b("O12", "setpoint_column_taken_as_reading", cav_sgd, "setpoint_column_taken_as_reading", "SC",
          "the target read from the log's setpoint column, next to the humidity in the export, under momentum SGD"),
        b("O13", "duty_log_joined_forward", cav, "duty_log_joined_forward", "OF",
          "the humidifier log joined to the readings by an as-of merge looking forward, so the last duty is the one "
          "set on seeing the reading to be predicted"),
        b("O14", "plate_force_fed_in_newtons", gri_sgd, "plate_force_fed_in_newtons", "DR",
          "the plate's forces fed in newtons, hundreds, the scaler written for the old plate's normalised output, "
          "under momentum SGD", harmless=True),
        b("O15", "tare_from_window_mean", gri, "tare_from_window_mean", "SC",
          "each window tared by its own mean, meant to drop the plate's zero offset, which takes out the static load "
          "and its direction"),
        b("O16", "keras_bn_momentum_ported", gri, "keras_bn_momentum_ported", "SC",
          "Keras's BatchNormalization(momentum=0.99) ported as PyTorch's momentum=0.99, which keeps only the last "
          "batch in the running statistics", harmless=True),
        b("O17", "accelerometer_in_milli_g", cha_sgd, "accelerometer_in_milli_g", "DR",
          "the new logger's milli-g taken as the old one's g, a thousand times the scale, under momentum SGD"),
        b("O18", "se_gate_sigmoid_as_conv_activation", cha_sgd, "se_gate_sigmoid_as_conv_activation", "VG",
          "the squeeze-excitation gate's nn.Sigmoid passed as the activation of all four conv blocks, under momentum SGD"),
        b("O19", "axes_summed_to_one_channel", cha, "axes_summed_to_one_channel", "SC",
          "the three axes summed into one vibration channel, as a single-axis sensor's recipe has it"),
        b("O20", "wear_label_from_previous_service", cha, "wear_label_from_previous_service", "SC",
          "the wear column joined from the bike's previous service record instead of this service's checker "
          "reading"),
    ]  # fmt: skip
    return healthy + bugs
