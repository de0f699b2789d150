"""The thirty-fourth blind split as `run.py --suite blind34` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind34 import earth, hazards, images

PREFIX = "blind34_"
SCRIPTS = {"lithology": earth.lithology, "floods": earth.floods, "crashes": hazards.crashes,
           "avalanche": hazards.avalanche, "leaves": images.leaves, "symbols": images.symbols}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind34Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind34Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind34Program, prefix=PREFIX)
    lit = h(
        "lithology_rnn_adam",
        "lithology",
        "a lithology classifier on well-log curves (a plain RNN down a window)",
    )
    flo = h("floods_mlp_adam", "floods", "a flood-peak regressor on catchment attributes (an MLP)")
    flo_sgd = h("floods_momentum", "floods", "a flood-peak MLP under momentum SGD", opt="momentum", lr=0.02)
    cra = h(
        "crashes_cnn_adam",
        "crashes",
        "a vehicle-crash severity classifier on telematics accelerometer windows",
    )
    cra_sgd = h(
        "crashes_momentum", "crashes", "a crash-severity CNN under momentum SGD", opt="momentum", lr=0.02
    )
    ava = h(
        "avalanche_mlp_adam", "avalanche", "an avalanche danger-level classifier on snow and weather readings"
    )
    ava_sgd = h("avalanche_momentum", "avalanche", "a danger MLP under momentum SGD", opt="momentum", lr=0.2)
    lea = h("leaves_cnn_adam", "leaves", "a leaf-count regressor on rosette photographs (a CNN)")
    lea_rms = h("leaves_rmsprop_batch64", "leaves", "a leaf CNN under RMSprop with batches of 64", opt="rmsprop",
                lr=1e-3, batch=64)  # fmt: skip
    sym = h(
        "symbols_cnn_adam", "symbols", "a handwritten mathematical-symbol classifier on tablet pen strokes"
    )
    sym_sgd = h("symbols_momentum", "symbols", "a symbol CNN under momentum SGD", opt="momentum", lr=0.1)
    healthy = [
        lit,
        h("lithology_rmsprop", "lithology", "a lithology RNN under RMSprop", opt="rmsprop", lr=2e-3),
        h("lithology_adamw_hidden64", "lithology", "a wider lithology RNN under AdamW", opt="adamw", hidden=64),
        h("lithology_momentum_batch128", "lithology", "a lithology RNN under momentum SGD with batches of 128",
          opt="momentum", lr=0.05, batch=128),
        flo,
        flo_sgd,
        h("floods_rmsprop_hidden128", "floods", "a wider flood MLP under RMSprop", opt="rmsprop", lr=1e-3,
          hidden=128),
        h("floods_nadam_batch64", "floods", "a flood MLP under NAdam with batches of 64", opt="nadam", batch=64),
        cra,
        cra_sgd,
        h("crashes_rmsprop_width16", "crashes", "a wider crash CNN under RMSprop", opt="rmsprop", lr=1e-3, width=16),
        h("crashes_adamw_batch64", "crashes", "a crash CNN under AdamW with batches of 64", opt="adamw", batch=64),
        ava,
        ava_sgd,
        h("avalanche_adagrad_hidden32", "avalanche", "a narrower danger MLP under Adagrad", opt="adagrad", lr=0.05,
          hidden=32),
        h("avalanche_radam_batch128", "avalanche", "a danger MLP under RAdam with batches of 128", opt="radam",
          lr=3e-3, batch=128),
        lea,
        h("leaves_adamax", "leaves", "a leaf-count CNN under Adamax", opt="adamax", lr=4e-3),
        h("leaves_adamw_width16", "leaves", "a wider leaf CNN under AdamW", opt="adamw", width=16),
        lea_rms,
        sym,
        sym_sgd,
        h("symbols_nadam_width16", "symbols", "a wider symbol CNN under NAdam", opt="nadam", width=16),
        h("symbols_adamax_batch64", "symbols", "a symbol CNN under Adamax with batches of 64", opt="adamax", lr=4e-3,
          batch=64),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("K01", "resistivity_nulls_logged_unfilled", lit, "resistivity_nulls_logged_unfilled", "NaN",
          "the resistivity's LAS nulls (-999.25) logged before they are filled, NaN for every failed reading"),
        b("K02", "debug_filter_left_on_first_well", lit, "debug_filter_left_on_first_well", "OF",
          "a debugging filter left on, keeping the first well's top 60 m (120 samples) as the training set"),
        b("K03", "window_fed_from_classified_sample_outward", lit, "window_fed_from_classified_sample_outward", "VG",
          "each window fed up the hole, so the sample classified comes first and the plain RNN's last state is 16 "
          "steps from it"),
        b("K04", "second_run_curves_not_depth_matched", lit, "second_run_curves_not_depth_matched", "SC",
          "the training wells' density, neutron and sonic curves, from a second logging run, left 2 m off the gamma "
          "ray and resistivity (not depth-matched), while the wells to classify are matched"),
        b("K05", "loss_weighted_by_raw_peak", flo_sgd, "loss_weighted_by_raw_peak", "EG",
          "each catchment's squared error weighted by its peak in m3/s (up to thousands), unnormalised, under momentum "
          "SGD"),
        b("K06", "runoff_coefficient_from_observed_floods", flo, "runoff_coefficient_from_observed_floods", "OF",
          "the runoff coefficient computed from each gauged catchment's own floods fed as a feature, while ungauged "
          "catchments carry the regional mean"),
        b("K07", "rain_volume_in_half_precision", flo, "rain_volume_in_half_precision", "NaN",
          "the attribute table loaded as float16, so the rain volume (km2 times mm) overflows to inf for large "
          "catchments"),
        b("K08", "momentum_added_at_plain_sgd_rate", cra_sgd, "momentum_added_at_plain_sgd_rate", "DR",
          "momentum 0.9 switched on while the learning rate stays at the plain-SGD recipe's 0.2"),
        b("K09", "sigmoid_after_every_convolution", cra, "sigmoid_after_every_convolution", "VG",
          "a sigmoid after each of the three convolutions, as in the LeNet the network was ported from"),
        b("K10", "training_windows_centred_on_labelled_peak", cra, "training_windows_centred_on_labelled_peak", "OF",
          "the training windows re-cut around the labelled pulse so every event starts at sample 24, while the "
          "logger's trigger places it anywhere"),
        b("K11", "cyclic_rate_with_sgd_recipe_bounds", cra, "cyclic_rate_with_sgd_recipe_bounds", "OL",
          "a cyclic learning rate between 1e-3 and 0.1, the SGD recipe's bounds, put on Adam", harmless=True),
        b("K12", "wind_load_added_after_scaling", ava_sgd, "wind_load_added_after_scaling", "EG",
          "the wind-load feature (wind speed squared times new snow, up to 1e5) appended after the standardisation, "
          "under momentum SGD"),
        b("K13", "gradient_over_zero_snow_depth", ava, "gradient_over_zero_snow_depth", "NaN",
          "the snowpack's temperature gradient divided by the snow depth unguarded, infinite on bare-ground days"),
        b("K14", "wind_direction_read_for_wind_speed", ava, "wind_direction_read_for_wind_speed", "SC",
          "the training season's station export, with the wind direction in the speed's column, read by position"),
        b("K15", "rate_scaled_by_batch_size", lea_rms, "rate_scaled_by_batch_size", "DR",
          "the learning rate multiplied by the batch size, as for the old summed loss, while the loss is the mean"),
        b("K16", "annotation_dots_left_on_training_images", lea, "annotation_dots_left_on_training_images", "OF",
          "the annotators' leaf-tip dots left on the training images, while the photographs to count carry none"),
        b("K17", "adam_given_adamw_decay", lea, "adam_given_adamw_decay", "SC",
          "Adam given the AdamW recipe's weight decay of 0.1, coupled into its gradient"),
        b("K18", "points_scaled_by_tablet_area", sym, "points_scaled_by_tablet_area", "SC",
          "the training strokes scaled by the tablet's writing area instead of the symbol's own box, so each symbol "
          "covers two or three cells, while the symbols to classify are boxed"),
        b("K19", "splats_summed_unclamped", sym_sgd, "splats_summed_unclamped", "SC",
          "the pen points' splats summed and not clamped, so dense strokes and crossings reach tens, under "
          "momentum SGD"),
        b("K20", "each_axis_scaled_by_its_own_extent", sym, "each_axis_scaled_by_its_own_extent", "NaN",
          "each axis of the pen points scaled by its own extent, 0/0 for a dot and for any stroke flat in one axis"),
    ]  # fmt: skip
    return healthy + bugs
