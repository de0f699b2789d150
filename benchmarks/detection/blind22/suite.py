"""The twenty-second blind split as `run.py --suite blind22` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind22 import estimates, machines, sensing

PREFIX = "blind22_"
SCRIPTS = {"bearings": machines.bearings, "batteries": machines.batteries, "enose": sensing.enose,
           "seismic": sensing.seismic, "volatility": estimates.volatility, "gaze": estimates.gaze}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind22Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind22Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind22Program, prefix=PREFIX)
    brg = h(
        "bearings_cnn_adam", "bearings", "a rolling-bearing fault classifier on vibration windows (a 1-D CNN)"
    )
    brg_sgd = h("bearings_momentum_batch64", "bearings", "a bearing CNN under momentum SGD with batches of 64, its "
                "rate scaled from a reference batch of 256", opt="momentum", lr=0.2, batch=64)  # fmt: skip
    bat = h(
        "batteries_mlp_adam",
        "batteries",
        "a battery cycle-life regressor on early-cycle features (a tanh MLP)",
    )
    bat_sgd = h(
        "batteries_momentum", "batteries", "a cycle-life MLP under momentum SGD", opt="momentum", lr=0.05
    )
    nose = h(
        "enose_mlp_adam",
        "enose",
        "an electronic-nose gas classifier on a metal-oxide sensor array (a sigmoid MLP)",
    )
    pick = h("seismic_picker_adam", "seismic", "a seismic P-wave arrival picker (a dilated 1-D CNN)")
    pick_sgd = h("seismic_momentum", "seismic", "a P-wave picker under momentum SGD", opt="momentum", lr=0.02)
    vol = h(
        "volatility_mlp_adam",
        "volatility",
        "a volatility forecaster for daily returns (an MLP, Gaussian NLL)",
    )
    eye = h("gaze_cnn_adam", "gaze", "a gaze-direction regressor on eye images (a CNN)")
    eye_cyc = h(
        "gaze_adam_cyclic", "gaze", "a gaze CNN under Adam on a triangular cyclic rate", lr=3e-3, cyclic=True
    )
    healthy = [
        brg,
        h("bearings_adamw_width32", "bearings", "a wider bearing CNN under AdamW", opt="adamw", width=32),
        brg_sgd,
        h("bearings_rmsprop_cosine", "bearings", "a bearing CNN under RMSprop decayed by a cosine", opt="rmsprop",
          lr=2e-3, cosine=True),
        bat,
        bat_sgd,
        h("batteries_adamw_hidden128", "batteries", "a wider cycle-life MLP under AdamW", opt="adamw", hidden=128),
        h("batteries_adagrad", "batteries", "a cycle-life MLP under Adagrad", opt="adagrad", lr=0.05),
        nose,
        h("enose_rmsprop", "enose", "a gas classifier under RMSprop", opt="rmsprop", lr=3e-3),
        h("enose_nadam_batch64", "enose", "a gas classifier under NAdam with batches of 64", opt="nadam", batch=64,
          lr=5e-3),
        h("enose_momentum_hidden32", "enose", "a narrower gas classifier under momentum SGD", opt="momentum",
          hidden=32, lr=0.5),
        pick,
        h("seismic_adamw_width24", "seismic", "a wider P-wave picker under AdamW", opt="adamw", width=24),
        h("seismic_radam", "seismic", "a P-wave picker under RAdam", opt="radam", lr=3e-3),
        pick_sgd,
        vol,
        h("volatility_momentum", "volatility", "a volatility forecaster under momentum SGD", opt="momentum",
          lr=0.01),
        h("volatility_adamax_hidden32", "volatility", "a narrower volatility forecaster under Adamax",
          opt="adamax", hidden=32, lr=2e-3),
        h("volatility_rmsprop_batch128", "volatility", "a volatility forecaster under RMSprop with batches of 128",
          opt="rmsprop", batch=128, lr=5e-4),
        eye,
        eye_cyc,
        h("gaze_adamw_width16", "gaze", "a wider gaze CNN under AdamW", opt="adamw", width=16),
        h("gaze_nadam_batch64", "gaze", "a gaze CNN under NAdam with batches of 64", opt="nadam", batch=64),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("M01", "crop_offset_left_at_zero", brg, "crop_offset_left_at_zero", "OF",
          "the training windows' crop offset left at 0 from a check of the loader, so the CNN sees the same 96 "
          "windows again and again instead of a random crop of each recording", harmless=True),
        b("M02", "loss_divided_by_unused_accumulation", brg_sgd, "loss_divided_by_unused_accumulation", "VG",
          "the loss divided by the recipe's 8 accumulation steps while the loop steps the optimizer every batch, "
          "an eighth of the rate under momentum SGD"),
        b("M03", "linear_scaling_without_reference_batch", brg_sgd, "linear_scaling_without_reference_batch", "EG",
          "the linear scaling rule applied as rate x batch instead of rate x batch / 256, so momentum SGD runs at "
          "12.8 instead of 0.05"),
        b("M04", "leaky_relu_slope_given_true", brg, "leaky_relu_slope_given_true", "SC",
          "`nn.ReLU(True)` turned into `nn.LeakyReLU(True)`, whose first argument is the negative slope, so every "
          "activation has slope 1 and the CNN with its mean over time is linear"),
        b("M05", "kelvin_and_seconds_columns_left_unscaled", bat, "kelvin_and_seconds_columns_left_unscaled", "DR",
          "the standardisation written for the first six feature columns, so the temperature in kelvin (about 303) "
          "and the charge time in seconds (about 1600) reach the tanh layer raw and pin its units at +-1"),
        b("M06", "log_target_centred_by_cycles_mean", bat_sgd, "log_target_centred_by_cycles_mean", "EG",
          "the log cycle life centred by the mean cycle life in cycles (about 1000) instead of the mean of the logs, "
          "so the standardised targets sit near -2000 under momentum SGD"),
        b("M07", "step_called_before_backward", bat, "step_called_before_backward", "VG",
          "`optimizer.step()` called between `zero_grad()` and `loss.backward()`, so every step sees no gradient and "
          "the gradients computed after it are cleared before the next"),
        b("M08", "cells_listed_by_failure_taken_first", bat, "cells_listed_by_failure_taken_first", "OF",
          "the 240 training cells taken as the first rows of the lab's table, which lists the cells in the order "
          "they reached end of life, so only the shortest-lived cells are fitted"),
        b("M09", "baseline_from_unheated_first_reading", nose, "baseline_from_unheated_first_reading", "NaN",
          "R0 read from the first baseline reading instead of the median of five, 0 for a sensor still heating, "
          "so log(R0 / R) is -inf"),
        b("M10", "resistances_fed_in_kiloohms", nose, "resistances_fed_in_kiloohms", "DR",
          "the steady-state resistances fed in kilo-ohms (about 5-80) instead of standardised log ratios, pinning "
          "the sigmoid units"),
        b("M11", "session_time_kept_as_feature", nose, "session_time_kept_as_feature", "OF",
          "the recording time left in the feature table, which in the training sessions (one cylinder after another) "
          "tells the gas apart, and on held-out samples does not"),
        b("M12", "sta_lta_over_unfloored_lta", pick, "sta_lta_over_unfloored_lta", "NaN",
          "the STA/LTA channel computed with no floor under the LTA, 0/0 over the zeros of a trace that starts "
          "after a gap"),
        b("M13", "division_result_discarded", pick_sgd, "division_result_discarded", "EG",
          "`traces.div(peak)` written for the in-place `div_`, so the traces reach the CNN in counts (hundreds to "
          "thousands) under momentum SGD"),
        b("M14", "pick_not_shifted_with_crop", pick, "pick_not_shifted_with_crop", "SC",
          "the P pick left at its sample in the full trace when the training crop is cut, instead of moved by the "
          "crop's start"),
        b("M15", "halted_days_priced_zero", vol, "halted_days_priced_zero", "NaN",
          "the exchange file's 0 on a halted day kept as the close, so that day's log return and the next are "
          "infinite"),
        b("M16", "log_variance_clamped_for_percent_returns", vol, "log_variance_clamped_for_percent_returns", "VG",
          "the returns left in fractions while the guard clamping the log variance to [-6, 6] was written for "
          "percent returns, so the log variance sits at the clamp's floor, where it gets no gradient"),
        b("M17", "target_return_inside_window", vol, "target_return_inside_window", "SC",
          "the target read at the window's last day instead of the day after it, a return the model already sees"),
        b("M18", "pitch_negated_in_horizontal_flip", eye, "pitch_negated_in_horizontal_flip", "SC",
          "the horizontal flip negating the pitch instead of the yaw"),
        b("M19", "brightness_jitter_drawn_once_at_load", eye, "brightness_jitter_drawn_once_at_load", "OF",
          "the brightness jitter applied by the dataset when it loads the 160 images, once, instead of on each "
          "batch", harmless=True),
        b("M20", "cyclic_max_rate_from_sgd_recipe", eye_cyc, "cyclic_max_rate_from_sgd_recipe", "EG",
          "the cyclic schedule's peak rate of 0.1 copied from an SGD recipe into the Adam run, which swings "
          "between 0.01 and 0.1 every 50 steps"),
    ]  # fmt: skip
    return healthy + bugs
