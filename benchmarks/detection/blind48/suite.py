"""The forty-eighth blind split as `run.py --suite blind48` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind48 import boards, plant, roads

PREFIX = "blind48_"
SCRIPTS = {"varroa": boards.varroa, "seeds": boards.seeds, "tunnel": roads.tunnel, "cycling": roads.cycling,
           "pulp": plant.pulp, "pig": plant.pig}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind48Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind48Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind48Program, prefix=PREFIX)
    var = h(
        "varroa_cnn_adam", "varroa", "a varroa-mite count regressor from hive-board images (a Poisson CNN)"
    )
    var_sgd = h("varroa_momentum", "varroa", "a mite-count CNN under momentum SGD", opt="momentum", lr=1e-3)
    see = h("seeds_cnn_adam", "seeds", "a seed-germination classifier on petri-dish images (a CNN)")
    see_sgd = h("seeds_momentum", "seeds", "a germination CNN under momentum SGD", opt="momentum", lr=0.02)
    tun = h(
        "tunnel_gru_adam",
        "tunnel",
        "a motorway tunnel CO-level forecaster (a GRU over half an hour of readings)",
    )
    tun_sgd = h("tunnel_momentum", "tunnel", "a tunnel CO GRU under momentum SGD", opt="momentum", lr=0.05)
    cyc = h(
        "cycling_mlp_adam",
        "cycling",
        "a cycling power-output estimator from bike-computer streams (a ReLU MLP)",
    )
    cyc_sgd = h("cycling_momentum", "cycling", "a power MLP under momentum SGD", opt="momentum", lr=0.01)
    pul = h(
        "pulp_mlp_adam",
        "pulp",
        "a pulp-consistency regressor from mill sensors (a sigmoid MLP with BatchNorm)",
    )
    pul_sgd = h("pulp_momentum", "pulp", "a consistency MLP under momentum SGD", opt="momentum", lr=0.02)
    pig = h(
        "pig_cnn_adam", "pig", "a pipeline pig-run anomaly classifier on magnetic flux traces (a 1-D CNN)"
    )
    pig_sgd = h("pig_momentum", "pig", "a flux CNN under momentum SGD", opt="momentum", lr=0.1)
    healthy = [
        var,
        var_sgd,
        h("varroa_adamw_width32", "varroa", "a wider mite-count CNN under AdamW", opt="adamw", width=32),
        h("varroa_rmsprop_batch16", "varroa", "a mite-count CNN under RMSprop with batches of 16", opt="rmsprop",
          lr=1e-3, batch=16),
        see,
        see_sgd,
        h("seeds_adamw_width8", "seeds", "a narrower germination CNN under AdamW", opt="adamw", width=8),
        h("seeds_rmsprop_batch128", "seeds", "a germination CNN under RMSprop with batches of 128", opt="rmsprop",
          lr=1e-3, batch=128),
        tun,
        tun_sgd,
        h("tunnel_rmsprop_hidden16", "tunnel", "a narrower tunnel GRU under RMSprop", opt="rmsprop", lr=2e-3,
          hidden=16),
        h("tunnel_adamw_batch128", "tunnel", "a tunnel GRU under AdamW with batches of 128", opt="adamw", batch=128),
        cyc,
        cyc_sgd,
        h("cycling_nadam_hidden128", "cycling", "a wider power MLP under NAdam", opt="nadam", hidden=128),
        h("cycling_adagrad_batch256", "cycling", "a power MLP under Adagrad with batches of 256", opt="adagrad",
          lr=0.03, batch=256),
        pul,
        pul_sgd,
        h("pulp_adamw_hidden32", "pulp", "a narrower consistency MLP under AdamW", opt="adamw", hidden=32),
        h("pulp_rmsprop_batch32", "pulp", "a consistency MLP under RMSprop with batches of 32", opt="rmsprop",
          lr=1e-3, batch=32),
        pig,
        pig_sgd,
        h("pig_adamw_width32", "pig", "a wider flux CNN under AdamW", opt="adamw", width=32),
        h("pig_nadam_batch64", "pig", "a flux CNN under NAdam with batches of 64", opt="nadam", batch=64),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("N01", "mites_per_day_over_days_in_hive", var, "mites_per_day_over_days_in_hive", "NaN",
          "the target taken as the daily mite drop, the board's count over the days it was in, 0/0 or x/0 for a "
          "board pulled the day it went in"),
        b("N02", "board_photos_downscaled_by_striding", var, "board_photos_downscaled_by_striding", "SC",
          "the board photos halved by taking every other pixel, so most one-pixel mites fall between the samples"),
        b("N03", "sgd_told_to_maximise", var_sgd, "sgd_told_to_maximise", "EG",
          "`maximize=True` kept on the momentum SGD from an earlier version that climbed an agreement score, so it "
          "now climbs the Poisson loss"),
        b("N04", "learning_rate_read_as_percent", see_sgd, "learning_rate_read_as_percent", "DR",
          "the config's learning rate of 2 (meant as 2 %) read as a fraction, a hundred times the rate, under "
          "momentum SGD"),
        b("N05", "treatment_sticker_in_training_crops", see, "treatment_sticker_in_training_crops", "OF",
          "the training crops cut to the dish's edge, taking in the lid's treatment sticker (primed seeds "
          "germinate more), while another trial's dishes have no such stickers"),
        b("N06", "germination_read_at_day_three", see, "germination_read_at_day_three", "SC",
          "the labels taken from the day-three count sheet while the photos are of day seven, so the slow seeds "
          "that germinated since read as ungerminated"),
        b("N07", "extinction_of_dark_opacity_meter", tun, "extinction_of_dark_opacity_meter", "NaN",
          "the visibility's extinction coefficient taken as -log of the opacity meter's transmittance without the "
          "twin's floor, infinite in the minutes its lamp is cleaned"),
        b("N08", "fan_log_from_after_the_window", tun, "fan_log_from_after_the_window", "OF",
          "the fans' column at the window's last reading taken from the ventilation log at the forecast's time, "
          "when the controller was already answering the CO to forecast", harmless=True),
        b("N09", "co_sensor_at_entry_portal_as_target", tun, "co_sensor_at_entry_portal_as_target", "SC",
          "the CO of the entry portal's sensor joined as the target instead of the mid-tunnel one"),
        b("N10", "gru_output_read_at_first_step", tun, "gru_output_read_at_first_step", "SC",
          "the GRU's output read at `out[:, 0]`, the window's first reading, instead of its last"),
        b("N11", "window_passed_as_gru_layers", tun, "window_passed_as_gru_layers", "VG",
          "the window's 16 readings passed as nn.GRU's third positional argument, its number of layers, stacking "
          "16 GRU layers"),
        b("N12", "sgd_momentum_typed_as_one", tun_sgd, "sgd_momentum_typed_as_one", "EG",
          "the SGD momentum typed as 1.0 instead of 0.9, so the velocity never decays"),
        b("N13", "weights_kept_from_lr_range_test", cyc, "weights_kept_from_lr_range_test", "DR",
          "an LR range test (SGD, the rate rising towards 10, stopped when the loss diverged) run on the model "
          "itself and its weights not restored before training", harmless=True),
        b("N14", "torque_column_from_power_meter", cyc, "torque_column_from_power_meter", "OF",
          "the power meter's torque left in the training table, while the riders to score have no power meter"),
        b("N15", "power_joined_by_elapsed_time_across_pauses", cyc, "power_joined_by_elapsed_time_across_pauses",
          "SC", "the power file, which skips the auto-paused seconds, joined to the GPS stream second by second, so "
          "after the first stop the power belongs to later seconds"),
        b("N16", "batchnorm_dropped_for_controller_export", pul_sgd, "batchnorm_dropped_for_controller_export", "VG",
          "the BatchNorm layers of the five-layer sigmoid net left out so it could run on the mill's controller, under "
          "momentum SGD"),
        b("N17", "dilution_ratio_over_tripped_pump", pul, "dilution_ratio_over_tripped_pump", "NaN",
          "the dilution ratio taken as dilution flow over stock flow, 0/0 while the stock pump has tripped"),
        b("N18", "lab_result_interpolated_between_tests", pul, "lab_result_interpolated_between_tests", "OF",
          "the lab's consistency resampled onto the readings by interpolating between the tests on either side, so "
          "a training row sees the next test, while the readings to estimate have only the last", harmless=True),
        b("N19", "rate_multiplied_by_batch_size", pul_sgd, "rate_multiplied_by_batch_size", "EG",
          "the linear scaling rule written as lr x batch, the reference batch of 256 left out, under momentum SGD"),
        b("N20", "loss_divided_by_anomalies_in_batch", pig_sgd, "loss_divided_by_anomalies_in_batch", "OL",
          "the batch's summed cross-entropy divided by the number of anomalies in it, under momentum SGD"),
    ]  # fmt: skip
    return healthy + bugs
