"""The sixteenth blind split as `run.py --suite blind16` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind16 import markets, sensors, spatial

PREFIX = "blind16_"
SCRIPTS = {"activity": sensors.activity, "disaggregation": sensors.disaggregation, "trajectory": spatial.trajectory,
           "colouriser": spatial.colouriser, "houses": markets.houses, "fraud": markets.fraud}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind16Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind16Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind16Program, prefix=PREFIX)
    act = h(
        "activity_cnn_adam", "activity", "a human-activity recogniser (a 1-D CNN) on accelerometer windows"
    )
    nilm = h("disaggregation_seq2point_adam", "disaggregation",
             "a seq2point energy disaggregator of a heater from a house's mains")  # fmt: skip
    traj = h(
        "trajectory_gru_momentum",
        "trajectory",
        "a pedestrian trajectory predictor (a GRU over observed steps)",
    )
    col = h("colouriser_dilated_adam", "colouriser", "an image colouriser from grey pictures (a dilated CNN)")
    hou = h(
        "houses_tanh_mlp_momentum",
        "houses",
        "a house-price regressor on the log price with a target encoding",
    )
    frd = h(
        "fraud_mlp_adam", "fraud", "a card-fraud detector on transactions (an MLP with a category embedding)"
    )
    healthy = [
        act,
        h("activity_adamw_channels32", "activity", "a wider activity recogniser under AdamW", opt="adamw",
          channels=32),
        h("activity_rmsprop_batch32", "activity", "an activity recogniser under RMSprop with smaller batches",
          opt="rmsprop", batch=32, lr=1e-3),
        h("activity_nesterov_channels8", "activity", "a narrower activity recogniser under Nesterov SGD",
          opt="nesterov", channels=8, lr=0.05),
        nilm,
        h("disaggregation_adamw_hidden48", "disaggregation", "a wider disaggregator under AdamW", opt="adamw",
          hidden=48),
        h("disaggregation_rmsprop_batch32", "disaggregation", "a disaggregator under RMSprop with smaller batches",
          opt="rmsprop", batch=32, lr=1e-3),
        h("disaggregation_nadam_hidden16", "disaggregation", "a narrower disaggregator under NAdam", opt="nadam",
          hidden=16),
        traj,
        h("trajectory_adam_hidden32", "trajectory", "a narrower trajectory predictor under Adam", opt="adam",
          hidden=32, lr=3e-3),
        h("trajectory_nesterov_batch256", "trajectory", "a trajectory predictor under Nesterov SGD with larger "
          "batches", opt="nesterov", batch=256),
        h("trajectory_rmsprop_hidden96", "trajectory", "a wider trajectory predictor under RMSprop", opt="rmsprop",
          hidden=96, lr=1e-3),
        col,
        h("colouriser_adamw_channels24", "colouriser", "a wider colouriser under AdamW", opt="adamw", channels=24),
        h("colouriser_adamax_batch64", "colouriser", "a colouriser under Adamax with larger batches", opt="adamax",
          batch=64, lr=4e-3),
        h("colouriser_nadam_channels8", "colouriser", "a narrower colouriser under NAdam", opt="nadam", channels=8),
        hou,
        h("houses_adam_width32", "houses", "a narrower house-price MLP under Adam", opt="adam", width=32, lr=3e-3),
        h("houses_nesterov_batch32", "houses", "a house-price MLP under Nesterov SGD with smaller batches",
          opt="nesterov", batch=32, lr=0.02),
        h("houses_rmsprop_width128", "houses", "a wider house-price MLP under RMSprop", opt="rmsprop", width=128,
          lr=1e-3),
        frd,
        h("fraud_adamw_width128", "fraud", "a wider fraud MLP under AdamW", opt="adamw", width=128),
        h("fraud_adagrad_batch128", "fraud", "a fraud MLP under Adagrad with smaller batches", opt="adagrad",
          batch=128, lr=0.03),
        h("fraud_rmsprop_width32", "fraud", "a narrower fraud MLP under RMSprop", opt="rmsprop", width=32, lr=1e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("F01", "rotation_augmentation_left_out", act, "rotation_augmentation_left_out", "OF",
          "the random rotation of the windows left out, so the recogniser learns the 8 training pockets' orientations"),
        b("F02", "adam_given_sgd_learning_rate", act, "adam_given_sgd_learning_rate", "EG",
          "Adam given the learning rate of 0.5 from an SGD recipe"),
        b("F03", "zero_grad_between_backward_and_step", act, "zero_grad_between_backward_and_step", "VG",
          "optimizer.zero_grad() called after loss.backward() and before optimizer.step(), so every step is empty"),
        b("F04", "mains_fed_in_watts", nilm, "mains_fed_in_watts", "DR",
          "the meter's channels fed in watts and volts, the standardisation left out, so the GRU's gates saturate",
          harmless=True),
        b("F05", "constant_column_divided_by_zero_std", nilm, "constant_column_divided_by_zero_std", "NaN",
          "the meter's reactive-power column (always 0) standardised by its zero spread, giving 0/0"),
        b("F06", "epoch_decay_stepped_every_batch", nilm, "epoch_decay_stepped_every_batch", "VG",
          "the learning rate meant to halve every 100 steps halved every step, so it is 0 within a few dozen"),
        b("F07", "submeter_out_of_step_with_mains", nilm, "submeter_out_of_step_with_mains", "SC",
          "the heater's sub-meter trace 40 samples out of step with the mains (its clock offset left uncorrected)"),
        b("F08", "loss_summed_over_batch_and_horizon", traj, "loss_summed_over_batch_and_horizon", "EG",
          "the squared errors summed over the batch and the 12 future steps instead of averaged, under momentum SGD"),
        b("F09", "futures_taken_one_frame_late", traj, "futures_taken_one_frame_late", "SC",
          "the future positions sliced from one frame after the first future frame (an off-by-one in the slicing)"),
        b("F10", "heading_of_standing_pedestrian_divided_by_zero", traj,
          "heading_of_standing_pedestrian_divided_by_zero", "NaN",
          "the heading taken as the last step over its length with no floor, 0/0 for standing pedestrians"),
        b("F11", "channels_read_as_bgr", col, "channels_read_as_bgr", "SC",
          "the colour targets' channels taken in BGR order (as an OpenCV decoder gives them) and trained as RGB"),
        b("F12", "grey_summed_in_uint8", col, "grey_summed_in_uint8", "SC",
          "the grey input computed by adding the uint8 channels, which wraps around at 256, before dividing"),
        b("F13", "every_weight_initialised_to_zero", col, "every_weight_initialised_to_zero", "VG",
          "an init loop zeroing every parameter (weights too, not only the biases)"),
        b("F14", "zero_prices_left_in", hou, "zero_prices_left_in", "NaN",
          "the listings with a price of 0 (price on request) left in, so their log price is -inf"),
        b("F15", "hood_mean_includes_own_price", hou, "hood_mean_includes_own_price", "OF",
          "the neighbourhood's target encoding averaged over its training listings with the listing's own price in",
          harmless=True),
        b("F16", "warmup_factor_never_capped", hou, "warmup_factor_never_capped", "EG",
          "the warmup factor (step + 1) / 10 never capped at 1, so the learning rate keeps growing after the warmup",
          effect_step=10),
        b("F17", "log_of_negative_refund_amounts", frd, "log_of_negative_refund_amounts", "NaN",
          "the amount's plain log taken, NaN for the refunds' negative amounts"),
        b("F18", "card_id_embedded_as_feature", frd, "card_id_embedded_as_feature", "OF",
          "the card id embedded as a feature, so the model memorises the training cards and meets new ones"),
        b("F19", "area_and_year_fed_raw", hou, "area_and_year_fed_raw", "DR",
          "the floor area and the year built fed raw (thousands) into the tanh layers, the other fields standardised"),
        b("F20", "labels_joined_by_row_order_after_sort", frd, "labels_joined_by_row_order_after_sort", "SC",
          "the transactions sorted by time and the fraud labels joined back by row order, so they belong to others"),
    ]  # fmt: skip
    return healthy + bugs
