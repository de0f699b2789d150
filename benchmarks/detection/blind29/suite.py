"""The twenty-ninth blind split as `run.py --suite blind29` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind29 import monitoring, operations, surveys

PREFIX = "blind29_"
SCRIPTS = {"picks": operations.picks, "calls": operations.calls, "birds": surveys.birds, "pixels": surveys.pixels,
           "sepsis": monitoring.sepsis, "flares": monitoring.flares}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind29Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind29Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind29Program, prefix=PREFIX)
    pick = h(
        "picks_mlp_adam", "picks", "a warehouse pick-time regressor (an MLP on order fields and the zone)"
    )
    pick_sgd = h("picks_mlp_momentum", "picks", "a pick-time MLP under momentum SGD", opt="momentum", lr=0.02)
    call = h("calls_mlp_adam", "calls", "a call-centre volume forecaster (an MLP on 48 hours, Poisson NLL)")
    call_rms = h("calls_rmsprop", "calls", "a volume forecaster under RMSprop", opt="rmsprop", lr=1e-3)
    bird = h(
        "birds_mlp_adam",
        "birds",
        "a bird-species classifier on field traits (six linear, batch-norm, ReLU blocks)",
    )
    bird_sgd = h("birds_nesterov", "birds", "a bird-species MLP under Nesterov SGD", opt="nesterov", lr=0.05)
    pix = h("pixels_cnn_adam", "pixels", "a hyperspectral pixel classifier (a 1-D CNN over 64 bands)")
    pix_sgd = h("pixels_momentum", "pixels", "a band CNN under momentum SGD", opt="momentum", lr=0.02)
    sep = h("sepsis_gru_adam", "sepsis", "a sepsis early-warning GRU over 24 hours of vital signs")
    flare = h("flares_mlp_adam", "flares", "a solar-flare classifier on magnetogram features (an MLP)")
    flare_sgd = h("flares_momentum", "flares", "a flare MLP under momentum SGD", opt="momentum", lr=0.01)
    healthy = [
        pick,
        pick_sgd,
        h("picks_rmsprop_hidden128", "picks", "a wider pick-time MLP under RMSprop", opt="rmsprop", hidden=128,
          lr=1e-3),
        h("picks_adamw_batch256", "picks", "a pick-time MLP under AdamW with batches of 256", opt="adamw",
          batch=256, lr=3e-3),
        call,
        call_rms,
        h("calls_nadam_hidden128", "calls", "a wider volume forecaster under NAdam", opt="nadam", hidden=128),
        h("calls_adam_cosine", "calls", "a volume forecaster under Adam decayed by a cosine", lr=2e-3,
          cosine=True),
        bird,
        bird_sgd,
        h("birds_adamw_hidden128", "birds", "a wider bird MLP under AdamW", opt="adamw", hidden=128),
        h("birds_adamax_depth3", "birds", "a three-layer bird MLP under Adamax", opt="adamax", depth=3, lr=2e-3),
        pix,
        pix_sgd,
        h("pixels_rmsprop_width24", "pixels", "a wider band CNN under RMSprop", opt="rmsprop", width=24, lr=5e-4),
        h("pixels_adam_step_decay", "pixels", "a band CNN under Adam divided by ten at step 150", lr=2e-3,
          step_decay=True),
        sep,
        h("sepsis_adamw_clipped", "sepsis", "a sepsis GRU under AdamW clipped at norm 1", opt="adamw", clip=1.0),
        h("sepsis_rmsprop_hidden64", "sepsis", "a wider sepsis GRU under RMSprop", opt="rmsprop", hidden=64,
          lr=1e-3),
        h("sepsis_adam_batch128", "sepsis", "a sepsis GRU under Adam with batches of 128", batch=128),
        flare,
        flare_sgd,
        h("flares_adamw_batch256", "flares", "a flare MLP under AdamW with batches of 256", opt="adamw",
          batch=256, lr=2e-3),
        h("flares_radam_hidden32", "flares", "a narrower flare MLP under RAdam", opt="radam", hidden=32, lr=2e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("T01", "pick_seconds_left_unscaled", pick_sgd, "pick_seconds_left_unscaled", "EG",
          "the pick time regressed in raw seconds (hundreds) instead of its standardised log under momentum SGD, "
          "whose squared errors of tens of thousands throw the weights far on the first steps"),
        b("T02", "picker_mean_time_includes_own_order", pick, "picker_mean_time_includes_own_order", "OF",
          "each picker's mean log pick time added as a feature, taken over all their training orders with the order "
          "being predicted among them (about five an order), so the training rows see their own target"),
        b("T03", "relu_left_after_output_layer", pick, "relu_left_after_output_layer", "SC",
          "the hidden block's ReLU copied once more after the output layer, so the head regressing the standardised "
          "log time cannot go below zero and gets no gradient where it would"),
        b("T04", "log_of_zero_call_hours", call, "log_of_zero_call_hours", "NaN",
          "the history taken as the plain log of the counts, which is -inf for the night hours without a call"),
        b("T05", "history_fed_as_raw_counts", call_rms, "history_fed_as_raw_counts", "SC",
          "the 48 hours of history fed as raw call counts (tens) instead of their log1p, into a network whose "
          "output is exponentiated as the Poisson rate"),
        b("T06", "next_hour_target_read_at_current_hour", call, "next_hour_target_read_at_current_hour", "SC",
          "the target read at the window's last hour (already in the input) instead of the hour ahead"),
        b("T07", "rolling_level_centred_in_training", call, "rolling_level_centred_in_training", "OF",
          "the recent-level feature computed in training by a 24-hour rolling mean centred on the hour ahead (so "
          "holding it and the hours after it), while the live forecasts can only have the trailing mean",
          harmless=True),
        b("T08", "every_batchnorm_scale_zeroed", bird_sgd, "every_batchnorm_scale_zeroed", "VG",
          "the residual nets' trick of starting a block's last batch-norm scale at zero applied to all six blocks "
          "of the plain trait MLP, so no signal or gradient crosses them at the start, under Nesterov SGD"),
        b("T09", "missing_mass_logged_as_zero", bird, "missing_mass_logged_as_zero", "NaN",
          "the birds that were not weighed given a mass of 0 and then logged, -inf that the standardisation "
          "turns into NaN"),
        b("T10", "record_number_left_in_traits", bird, "record_number_left_in_traits", "OF",
          "the record number left among the features; the training sheet was typed in species by species, the "
          "held-out survey's records come after it"),
        b("T11", "wing_and_tail_columns_swapped", bird, "wing_and_tail_columns_swapped", "SC",
          "the training sheet listing tail before wing, read by column position, while the held-out sheet has "
          "wing first"),
        b("T12", "reflectance_left_as_raw_digital_numbers", pix_sgd, "reflectance_left_as_raw_digital_numbers", "DR",
          "the cube's digital numbers (reflectance times 10000, all positive) fed to the CNN without scaling or "
          "centring, under momentum SGD, whose first steps leave the first convolution's ReLUs off for every pixel"),
        b("T13", "caffe_gaussian_init_std_001", pix_sgd, "caffe_gaussian_init_std_001", "VG",
          "every convolution and the linear layer started from a Gaussian of std 0.01 (a Caffe prototxt's filler) "
          "under momentum SGD, so the signal and its gradient shrink through the five layers"),
        b("T14", "unlabelled_pixels_kept_as_class_zero", pix, "unlabelled_pixels_kept_as_class_zero", "SC",
          "the ground-truth map's 0 (unlabelled) kept as a class, so two pixels in five of every cover are taught "
          "'no cover'"),
        b("T15", "cube_read_band_sequential", pix, "cube_read_band_sequential", "SC",
          "the training cube, stored band-interleaved by pixel, read as band-sequential, so every training spectrum "
          "is a run of one band over many pixels"),
        b("T16", "unmeasured_lactate_left_as_nan", sep, "unmeasured_lactate_left_as_nan", "NaN",
          "the hours without a lactate draw left as NaN instead of carrying the last draw forward"),
        b("T17", "training_windows_run_to_onset", sep, "training_windows_run_to_onset", "OF",
          "the training windows cut at the onset of sepsis, where the vitals are plainly deranged and the sepsis "
          "bundle has drawn a lactate, while the warnings are scored on windows ending six hours before"),
        b("T18", "hidden_state_detached_each_hour", sep, "hidden_state_detached_each_hour", "SC",
          "the GRU cell's state detached every hour, kept from a truncated-backprop recipe for long streams, so "
          "only the last hour's input is learnt from"),
        b("T19", "pos_weight_as_negatives_count", flare_sgd, "pos_weight_as_negatives_count", "DR",
          "the positive weight given as the count of non-flaring regions (thousands) instead of their ratio to "
          "the flaring ones, under momentum SGD, whose first flaring batches throw most of the second layer's "
          "ReLUs below zero for every region"),
        b("T20", "class_weight_given_as_weight", flare_sgd, "class_weight_given_as_weight", "EG",
          "the class ratio passed as `weight` instead of `pos_weight`, which scales every example's loss (and so "
          "the step) by it under momentum SGD", harmless=True),
    ]  # fmt: skip
    return healthy + bugs
