"""The forty-second blind split as `run.py --suite blind42` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind42 import farm, lab, site

PREFIX = "blind42_"
SCRIPTS = {"shrimp": farm.shrimp, "mushroom": farm.mushroom, "airfoil": lab.airfoil, "howl": lab.howl,
           "rack": site.rack, "frost": site.frost}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind42Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind42Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind42Program, prefix=PREFIX)
    shr = h(
        "shrimp_gru_adam", "shrimp", "a shrimp-pond dissolved-ammonia forecaster (a GRU over hourly readings)"
    )
    mus = h("mushroom_mlp_adam", "mushroom", "a mushroom-farm growing-room CO2 regressor (an MLP)")
    mus_sgd = h(
        "mushroom_momentum", "mushroom", "a growing-room CO2 MLP under momentum SGD", opt="momentum", lr=0.02
    )
    mus_plateau = h("mushroom_plateau", "mushroom", "a growing-room CO2 MLP under Adam with a plateau schedule",
                    lr=3e-3, plateau=1)  # fmt: skip
    air = h(
        "airfoil_mlp_adam", "airfoil", "a wind-tunnel drag-coefficient regressor on airfoil shape parameters"
    )
    air_sgd = h(
        "airfoil_momentum", "airfoil", "an airfoil drag MLP under momentum SGD", opt="momentum", lr=0.02
    )
    how = h("howl_mlp_adam", "howl", "a hearing-aid feedback-howl detector on audio band energies (an MLP)")
    how_sgd = h("howl_momentum", "howl", "a feedback-howl MLP under momentum SGD", opt="momentum", lr=0.01)
    rac = h("rack_cnn_adam", "rack", "a pallet-rack impact detector on accelerometer bursts (a 1-D CNN)")
    fro = h("frost_mlp_adam", "frost", "a vineyard frost-night classifier from weather-station readings")
    fro_sgd = h("frost_momentum", "frost", "a frost-night MLP under momentum SGD", opt="momentum", lr=0.02)
    healthy = [
        shr,
        h("shrimp_rmsprop", "shrimp", "an ammonia GRU under RMSprop", opt="rmsprop", lr=1e-3),
        h("shrimp_adamw_hidden16", "shrimp", "a narrower ammonia GRU under AdamW", opt="adamw", hidden=16),
        h("shrimp_nadam_batch32", "shrimp", "an ammonia GRU under NAdam with batches of 32", opt="nadam", batch=32),
        mus,
        mus_sgd,
        mus_plateau,
        h("mushroom_rmsprop_batch128", "mushroom", "a CO2 MLP under RMSprop with batches of 128", opt="rmsprop",
          lr=1e-3, batch=128),
        air,
        air_sgd,
        h("airfoil_adamw_hidden128", "airfoil", "a wider drag MLP under AdamW", opt="adamw", hidden=128),
        h("airfoil_adamax_batch32", "airfoil", "a drag MLP under Adamax with batches of 32", opt="adamax", lr=4e-3,
          batch=32),
        how,
        how_sgd,
        h("howl_nadam_hidden32", "howl", "a narrower howl MLP under NAdam", opt="nadam", hidden=32),
        h("howl_rmsprop_batch128", "howl", "a howl MLP under RMSprop with batches of 128", opt="rmsprop", lr=5e-4,
          batch=128),
        rac,
        h("rack_momentum", "rack", "a rack-impact CNN under momentum SGD", opt="momentum", lr=0.02),
        h("rack_adamw_width32", "rack", "a wider rack-impact CNN under AdamW", opt="adamw", width=32),
        h("rack_rmsprop_batch32", "rack", "a rack-impact CNN under RMSprop with batches of 32", opt="rmsprop",
          lr=1e-3, batch=32),
        fro,
        fro_sgd,
        h("frost_nadam_hidden32", "frost", "a narrower frost MLP under NAdam", opt="nadam", hidden=32),
        h("frost_adagrad_batch256", "frost", "a frost MLP under Adagrad with batches of 256", opt="adagrad",
          lr=0.03, batch=256),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("B01", "electrode_slope_from_failed_calibration", shr, "electrode_slope_from_failed_calibration", "NaN",
          "the ammonium electrode's mV turned into TAN by the slope of the sonde's last two-point calibration, "
          "recorded as 0 mV per decade where the second standard was never read"),
        b("B02", "lab_tan_joined_by_calendar_day", shr, "lab_tan_joined_by_calendar_day", "OF",
          "the lab's daily 08:00 ammonia joined to each window by the forecast's calendar day, so in training it is "
          "often a sample still ahead of the window, which the forecast cannot have"),
        b("B03", "free_ammonia_read_as_total", shr, "free_ammonia_read_as_total", "SC",
          "the lab sheet's \"NH3\" column, the un-ionised ammonia, read as the total ammonia nitrogen the model "
          "forecasts"),
        b("B04", "scaled_by_variance_not_std", mus_sgd, "scaled_by_variance_not_std", "EG",
          "the room readings divided by their variance in place of their standard deviation, so the humidity, "
          "fan and door shares grow tens of times, under momentum SGD"),
        b("B05", "plateau_started_at_high_rate", mus_plateau, "plateau_started_at_high_rate", "DR",
          "Adam started at 0.1 since \"the plateau schedule brings it down\""),
        b("B06", "co2_read_in_exhaust_duct", mus, "co2_read_in_exhaust_duct", "SC",
          "the target read off the CO2 sensor in the exhaust duct, which the fresh-air intake's leak dilutes, in "
          "place of the room's"),
        b("B07", "residual_blocks_without_normalisation", air_sgd, "residual_blocks_without_normalisation", "EG",
          "the drag MLP deepened by twelve residual blocks initialised by Kaiming's normal rule, with no "
          "normalisation and no down-scaled branch, under momentum SGD"),
        b("B08", "bias_lr_multiplier_written_as_rate", air, "bias_lr_multiplier_written_as_rate", "DR",
          "the old solver's learning-rate multiplier of 2 for the biases ported as their rate, biases under Adam at "
          "2.0"),
        b("B09", "measured_lift_as_input", air, "measured_lift_as_input", "OF",
          "the balance's measured lift coefficient as an input in training, while at use the design tool supplies "
          "thin-airfoil theory's, which knows no stall"),
        b("B10", "levels_normalised_per_clip", how, "levels_normalised_per_clip", "NaN",
          "each clip's band levels standardised by its own mean and spread for loudness, 0/0 on the clips the noise "
          "gate zeroed whole"),
        b("B11", "band_powers_fed_linear", how_sgd, "band_powers_fed_linear", "SC",
          "the band powers fed linear in place of in dB, a howl's peak a million times the other bands', under "
          "momentum SGD", harmless=True),
        b("B12", "training_clips_tapped_after_notch", how, "training_clips_tapped_after_notch", "SC",
          "the training clips recorded after the aid's notch filter, which pulls a growing peak down, while the "
          "detector is to run before it"),
        b("B13", "howl_labels_from_canceller_flag", how, "howl_labels_from_canceller_flag", "SC",
          "the howl labels taken from the feedback canceller's flag, which fires on any peak 15 dB over its "
          "neighbours"),
        b("B14", "plain_rnn_over_raw_samples", rac, "plain_rnn_over_raw_samples", "VG",
          "a plain tanh RNN over the 128 raw samples of each burst in place of the CNN"),
        b("B15", "forklift_camera_flag_in_inputs", rac, "forklift_camera_flag_in_inputs", "OF",
          "the depot camera's forklift-nearby flag left in the training inputs, though the racks on site have no "
          "camera"),
        b("B16", "accelerometer_range_left_at_2g", rac, "accelerometer_range_left_at_2g", "SC",
          "the training bursts recorded with the accelerometer at its power-on range of 2 g, the impacts clipped",
          harmless=True),
        b("B17", "shear_exponent_over_calm_nights", fro, "shear_exponent_over_calm_nights", "NaN",
          "the wind-shear exponent as the log of the 10 m over the 2 m wind, the anemometers reading zero below "
          "their stall speed on calm nights"),
        b("B18", "sigmoid_stack_from_vendor_model", fro_sgd, "sigmoid_stack_from_vendor_model", "VG",
          "the station vendor's old model, eight sigmoid layers, under momentum SGD"),
        b("B19", "frost_nights_oversampled", fro, "frost_nights_oversampled", "OF",
          "one season's 12 frost nights copied forty times each to balance 480 mild nights"),
        b("B20", "frost_label_from_screen_minimum", fro, "frost_label_from_screen_minimum", "SC",
          "the frost label taken from the screen's minimum at 1.5 m below 0 C, not the canopy's below -0.5 C"),
    ]  # fmt: skip
    return healthy + bugs
