"""The fifty-first blind split as `run.py --suite blind51` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind51 import land, sites, sound

PREFIX = "blind51_"
SCRIPTS = {"peat": land.peat, "potato": land.potato, "tram": sound.tram, "bell": sound.bell,
           "sludge": sites.sludge, "bowling": sites.bowling}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind51Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind51Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind51Program, prefix=PREFIX)
    pea = h(
        "peat_gru_adam",
        "peat",
        "a peat-bog water-table forecaster from daily weather and dipwell logs (a GRU)",
    )
    pea_sgd = h("peat_momentum_clipped", "peat", "a water-table GRU under momentum SGD clipped at norm 1",
                opt="momentum", lr=0.5, clip=1.0)  # fmt: skip
    pot = h(
        "potato_mlp_adam",
        "potato",
        "a potato-store sprouting classifier from CO2 and temperature logs (a ReLU MLP)",
    )
    pot_sgd = h("potato_momentum", "potato", "a sprouting MLP under momentum SGD", opt="momentum", lr=0.02)
    tra = h(
        "tram_cnn_adam",
        "tram",
        "a tram-rail corrugation classifier on axle-box sound (a 1-D CNN with batch norm)",
    )
    bel = h("bell_swish_adam", "bell", "a church-bell clapper-crack detector on strike spectra (a swish MLP)")
    bel_sgd = h("bell_momentum", "bell", "a crack-detector MLP under momentum SGD", opt="momentum", lr=0.02)
    slu = h(
        "sludge_tanh_adam",
        "sludge",
        "a wastewater sludge-volume-index regressor from process readings (a tanh MLP)",
    )
    slu_sgd = h("sludge_momentum", "sludge", "an SVI tanh MLP under momentum SGD", opt="momentum", lr=0.02)
    bow = h(
        "bowling_mlp_adam", "bowling", "a bowling first-ball pin-count model from lane sensors (a ReLU MLP)"
    )
    healthy = [
        pea,
        pea_sgd,
        h("peat_rmsprop_hidden48", "peat", "a wider water-table GRU under RMSprop", opt="rmsprop", hidden=48, lr=2e-3),
        h("peat_adamw_batch128", "peat", "a water-table GRU under AdamW with batches of 128", opt="adamw", batch=128),
        pot,
        pot_sgd,
        h("potato_nadam_hidden128", "potato", "a wider sprouting MLP under NAdam", opt="nadam", hidden=128),
        h("potato_adamax_batch32", "potato", "a sprouting MLP under Adamax with batches of 32", opt="adamax",
          batch=32, lr=2e-3),
        tra,
        h("tram_momentum", "tram", "a corrugation CNN under momentum SGD", opt="momentum", lr=0.05),
        h("tram_adamw_width24", "tram", "a wider corrugation CNN under AdamW", opt="adamw", width=24),
        h("tram_rmsprop_batch64", "tram", "a corrugation CNN under RMSprop with batches of 64", opt="rmsprop",
          batch=64, lr=1e-3),
        bel,
        bel_sgd,
        h("bell_rmsprop_hidden96", "bell", "a wider crack detector under RMSprop", opt="rmsprop", hidden=96,
          lr=5e-4),
        h("bell_nadam_batch64", "bell", "a crack detector under NAdam with batches of 64", opt="nadam", batch=64),
        slu,
        slu_sgd,
        h("sludge_adagrad_batch128", "sludge", "an SVI MLP under Adagrad with batches of 128", opt="adagrad",
          batch=128, lr=0.03),
        h("sludge_rmsprop_hidden32", "sludge", "a narrower SVI MLP under RMSprop", opt="rmsprop", hidden=32,
          lr=1e-3),
        bow,
        h("bowling_momentum", "bowling", "a pin-count MLP under momentum SGD", opt="momentum", lr=0.02),
        h("bowling_adamw_hidden128", "bowling", "a wider pin-count MLP under AdamW", opt="adamw", hidden=128),
        h("bowling_adamax_batch128", "bowling", "a pin-count MLP under Adamax with batches of 128", opt="adamax",
          batch=128, lr=2e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("Z01", "target_read_from_rain_column", pea_sgd, "target_read_from_rain_column", "SC",
          "next week's mean read from column 0 of the future block, which a reordered export made the rain, instead "
          "of the water table"),
        b("Z02", "forecast_week_rain_in_training_windows", pea, "forecast_week_rain_in_training_windows", "OF",
          "the training windows cut from the reanalysis with the forecast week's observed rain, which the live "
          "forecaster carries as zeros"),
        b("Z03", "hidden_state_detached_every_day", pea, "hidden_state_detached_every_day", "SC",
          "the GRU state detached after every day, a truncated-BPTT line kept from a streaming version, so no "
          "gradient reaches back past the last day"),
        b("Z04", "gap_fill_mean_over_nans", pot, "gap_fill_mean_over_nans", "NaN",
          "the logger's missing pile temperatures filled with `mean()` where `nanmean()` was meant, NaN for every "
          "store with a gap"),
        b("Z05", "suppressant_dose_left_in_ppm", pot_sgd, "suppressant_dose_left_in_ppm", "DR",
          "the sprout-suppressant dose appended after the scaler ran, in the applicator's ppm (up to 30), under "
          "momentum SGD", harmless=True),
        b("Z06", "days_to_sprout_column_kept", pot, "days_to_sprout_column_kept", "OF",
          "the inspection sheet's days-to-sprouting column, filled in after the season, left in the training "
          "table; this season's stores have it blank"),
        b("Z07", "co2_as_excess_over_outdoor_ppm", pot_sgd, "co2_as_excess_over_outdoor_ppm", "SC",
          "the store's CO2 columns taken as the controller shows them, the excess over outdoor air in hundreds of "
          "ppm, left out of the scaler, under momentum SGD", harmless=True),
        b("Z08", "batch_norm_scale_zeroed_everywhere", tra, "batch_norm_scale_zeroed_everywhere", "VG",
          "the zero-init of a residual block's last batch norm applied to every batch norm of a network with no "
          "residual connections"),
        b("Z09", "rms_by_one_pass_formula", tra, "rms_by_one_pass_formula", "NaN",
          "the window's RMS by E[x^2] - E[x]^2 on counts about the converter's mid-scale, which cancels in float32 "
          "and goes negative under the root on quiet windows"),
        b("Z10", "batches_in_recording_order", tra, "batches_in_recording_order", "OL",
          "the windows taken in the order the survey filed them, class by class, by a loader without shuffling"),
        b("Z11", "swish_mapped_to_sigmoid", bel_sgd, "swish_mapped_to_sigmoid", "VG",
          "the activation table's \"swish\" entry typed as `nn.Sigmoid`, four sigmoid layers deep"),
        b("Z12", "cracked_bells_recorded_in_foundry", bel, "cracked_bells_recorded_in_foundry", "OF",
          "the training's cracked bells recorded in the foundry's hall after they came down, its room mode in the "
          "low bands, while the bells surveyed hang in towers", harmless=True),
        b("Z13", "spectrum_cut_from_clapper_impact", bel, "spectrum_cut_from_clapper_impact", "SC",
          "the spectrum cut from the strike's first 10 ms, the clapper's broadband impact, before the partials "
          "form"),
        b("Z14", "filaments_rooted_after_scaling", slu, "filaments_rooted_after_scaling", "NaN",
          "the filament count's square root taken after the scaler, of negative standardised values"),
        b("Z15", "loss_weighted_by_flow_in_m3", slu_sgd, "loss_weighted_by_flow_in_m3", "EG",
          "the squared errors weighted by the day's influent flow in m3 (thousands) instead of its share of the "
          "mean flow, under momentum SGD"),
        b("Z16", "settled_volume_taken_as_svi", slu, "settled_volume_taken_as_svi", "SC",
          "the 30-minute settled volume (mL/L), the sheet's neighbouring column, read as the index (mL/g)"),
        b("Z17", "five_minute_volume_kept", slu, "five_minute_volume_kept", "OF",
          "the settling test's 5-minute volume, read in the same test the index comes from, kept as a column that "
          "the online plants fill with its mean"),
        b("Z18", "rev_rate_over_missed_sensor_gap", bow, "rev_rate_over_missed_sensor_gap", "NaN",
          "the rev rate divided by the sensor pair's gap with a missed sensor's 0 ms left in"),
        b("Z19", "weights_drawn_by_uniform_", bow, "weights_drawn_by_uniform_", "EG",
          "every linear layer's weights drawn by `nn.init.uniform_`, meant as a uniform init, which draws from "
          "[0, 1)"),
        b("Z20", "pins_standing_taken_as_count", bow, "pins_standing_taken_as_count", "SC",
          "the lane system's pins-standing field read as the count knocked down"),
        b("Z21", "activation_penalty_summed", bow, "activation_penalty_summed", "DR",
          "the L1 penalty on the hidden activations summed over units and throws where the recipe averages it, "
          "thousands of times its weight"),
    ]  # fmt: skip
    return healthy + bugs
