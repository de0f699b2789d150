"""The sixty-fourth blind split as `run.py --suite blind64` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind64 import fields, mills, rooms

PREFIX = "blind64_"
SCRIPTS = {"drip": fields.drip, "crossing": fields.crossing, "web": mills.web, "tonnage": mills.tonnage,
           "tunnel": rooms.tunnel, "chord": rooms.chord}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind64Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind64Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind64Program, prefix=PREFIX)
    dri = h(
        "drip_lstm_adam",
        "drip",
        "a vineyard's root-zone water three days ahead from its blocks' probe and weather log (an LSTM)",
    )
    dri_sgd = h("drip_momentum", "drip", "a vineyard water LSTM under momentum SGD", opt="momentum", lr=0.05)
    cro = h(
        "crossing_mlp_adam",
        "crossing",
        "an estuary car ferry's crossing minutes from the tide, the wind and the load (a ReLU MLP, vessel embedded)",
    )
    cro_sgd = h(
        "crossing_momentum", "crossing", "a ferry crossing MLP under momentum SGD", opt="momentum", lr=0.02
    )
    web = h(
        "web_cnn_adam",
        "web",
        "a paper mill's web-inspection defect classifier on transmitted and reflected views (a 2-D CNN)",
    )
    web_sgd = h("web_momentum", "web", "a web-defect CNN under momentum SGD", opt="momentum", lr=0.05)
    web_rms = h("web_rmsprop_batch64", "web", "a web-defect CNN under RMSprop with batches of 64", opt="rmsprop",
                batch=64, lr=1e-3)  # fmt: skip
    ton = h(
        "tonnage_autoencoder_adam",
        "tonnage",
        "a stamping press's tonnage-signature anomaly detector trained on good strokes (an autoencoder)",
    )
    ton_sgd = h(
        "tonnage_momentum", "tonnage", "a tonnage autoencoder under momentum SGD", opt="momentum", lr=0.1
    )
    tun = h(
        "tunnel_cnn_adam",
        "tunnel",
        "a hospital laundry's tunnel-washer batch verdict from the PLC's batch traces (a 1-D CNN)",
    )
    tun_sgd = h(
        "tunnel_momentum", "tunnel", "a tunnel-washer CNN under momentum SGD", opt="momentum", lr=0.02
    )
    cho = h(
        "chord_attention_adam",
        "chord",
        "a room's reverberation time from the cut-off of a choir's final chord (a small self-attention encoder)",
    )
    cho_sgd = h("chord_momentum", "chord", "a chord reverberation encoder under momentum SGD", opt="momentum",
                lr=0.02)  # fmt: skip
    healthy = [
        dri, dri_sgd,
        h("drip_adamw_hidden32", "drip", "a wider vineyard water LSTM under AdamW", opt="adamw", hidden=32),
        h("drip_rmsprop_batch64", "drip", "a vineyard water LSTM under RMSprop with batches of 64", opt="rmsprop",
          batch=64, lr=1e-3),
        cro, cro_sgd,
        h("crossing_adamax_hidden64", "crossing", "a wider ferry crossing MLP under Adamax", opt="adamax",
          hidden=64, lr=4e-3),
        h("crossing_radam_batch64", "crossing", "a ferry crossing MLP under RAdam with batches of 64", opt="radam",
          batch=64),
        web, web_sgd,
        h("web_adamw_width12", "web", "a wider web-defect CNN under AdamW", opt="adamw", width=12),
        web_rms,
        ton, ton_sgd,
        h("tonnage_nadam_hidden64", "tonnage", "a wider tonnage autoencoder under NAdam", opt="nadam", hidden=64),
        h("tonnage_adagrad_batch64", "tonnage", "a tonnage autoencoder under Adagrad with batches of 64",
          opt="adagrad", batch=64, lr=0.03),
        tun, tun_sgd,
        h("tunnel_adamw_width12", "tunnel", "a wider tunnel-washer CNN under AdamW", opt="adamw", width=12),
        h("tunnel_rmsprop_batch64", "tunnel", "a tunnel-washer CNN under RMSprop with batches of 64",
          opt="rmsprop", batch=64, lr=1e-3),
        cho, cho_sgd,
        h("chord_nadam_width12", "chord", "a wider chord reverberation encoder under NAdam", opt="nadam", width=12),
        h("chord_adamax_batch64", "chord", "a chord reverberation encoder under Adamax with batches of 64",
          opt="adamax", batch=64, lr=4e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("P01", "probe_calibration_powered_on_air_gap_reading", dri, "probe_calibration_powered_on_air_gap_reading",
          "NaN",
          "the capacitance probes' calibration inverted as written, ((SF - C) / A)^(1/B), on the readings of tubes "
          "that lost contact in the cracking clay, whose scaled frequency, nearly air's, falls below C: a "
          "fractional power of a negative number"),
        b("P02", "season_sorted_by_date_across_blocks", dri, "season_sorted_by_date_across_blocks", "SC",
          "the season's long table sorted by date alone before the 10-day windows are cut, so each window runs "
          "through the blocks of a few days rather than one block's ten days"),
        b("P03", "huber_delta_set_in_volumetric_units", dri_sgd, "huber_delta_set_in_volumetric_units", "VG",
          "the Huber loss's delta of 0.01, set when the water content was regressed in m^3/m^3, kept on the "
          "standardised content, so every gradient is clipped to a hundredth, under momentum SGD"),
        b("P04", "headwind_against_one_bearing_both_ways", cro, "headwind_against_one_bearing_both_ways", "SC",
          "the wind's component against the crossing taken against the route's bearing from the south slip for "
          "the crossings both ways, its sign wrong for every crossing from the north slip"),
        b("P05", "tide_current_joined_in_utc", cro, "tide_current_joined_in_utc", "SC",
          "the tide gauge's current, logged in UTC, joined to the summer's crossings logged in local time, an hour "
          "ahead, so each crossing carries the current of an hour before"),
        b("P06", "fuel_burnt_kept_as_input", cro, "fuel_burnt_kept_as_input", "OF",
          "the litres the engine log says the crossing burnt kept as an input; the crossings to plan have not burnt "
          "theirs, and the held-out season's column carries the training mean"),
        b("P07", "quarter_turns_as_augmentation", web, "quarter_turns_as_augmentation", "SC",
          "random quarter turns added as augmentation (\"a defect looks the same any way up\"), which turn the "
          "machine-direction streaks into cross-direction wrinkles and back under their old labels"),
        b("P08", "defects_from_contrast_stretched_alarms", web, "defects_from_contrast_stretched_alarms", "OF",
          "the defects' patches cut from the alarm viewer's saved images, each stretched to fill the range, while "
          "the clean patches come from the raw frames; the other line's patches are all raw"),
        b("P09", "tensorflow_epsilon_given_to_rmsprop", web_rms, "tensorflow_epsilon_given_to_rmsprop", "VG",
          "RMSprop given the TensorFlow recipe's epsilon of 1.0, which sits inside the square root there and "
          "outside it here, so the steps shrink to the rate times a small gradient"),
        b("P10", "reconstruction_against_raw_tonnes", ton_sgd, "reconstruction_against_raw_tonnes", "EG",
          "the autoencoder's reconstruction of the standardised signature compared with the batch as loaded, in "
          "tonnes, under momentum SGD"),
        b("P11", "scrap_strokes_left_in_training", ton, "scrap_strokes_left_in_training", "SC",
          "the quality check's scrap flags not joined, so the shift's splits, double blanks and misfeeds, one "
          "stroke in four, are learnt as normal strokes"),
        b("P12", "traces_cut_by_wall_clock", tun, "traces_cut_by_wall_clock", "SC",
          "each batch's samples cut from the tunnel's log at the nominal cycle by the wall clock, which the "
          "tunnel's real cycle runs ahead of, instead of from the batch tracking's entry: up to 20 samples of the "
          "batch ahead in, as many of the batch's own sour zone out"),
        b("P13", "dilution_over_drained_rinse", tun, "dilution_over_drained_rinse", "NaN",
          "the rinse's dilution taken as log10 of the main wash's conductivity over the rinse's, with no floor "
          "for the drained rinse compartment that reads 0: log10(x / 0)"),
        b("P14", "disinfection_judged_by_peak_temperature", tun, "disinfection_judged_by_peak_temperature", "SC",
          "the disinfection passed when the zone's peak temperature reached 71 C instead of when it held 71 C for "
          "3 minutes, so the batches whose hold was broken by a dip are labelled passed",
          harmless=True),
        b("P15", "plc_tenths_of_degree_read_as_degrees", tun_sgd, "plc_tenths_of_degree_read_as_degrees", "EG",
          "the PLC's temperature register, in tenths of a degree (715 for 71.5 C), read as degrees and scaled by "
          "the maker's range in degrees, under momentum SGD"),
        b("P16", "t30_from_decay_short_of_minus_35", cho, "t30_from_decay_short_of_minus_35", "NaN",
          "the reference's T30 taken for every room, its -35 dB crossing found by the argmax of a mask that a "
          "decay stopped short by a noisy day never fills, so the time is 0, the T30 negative and its log NaN"),
        b("P17", "t30_extrapolated_with_t20_factor", cho, "t30_extrapolated_with_t20_factor", "SC",
          "the T30's decay time from -5 to -35 dB extrapolated to 60 dB with the T20's factor of 3 instead of 2, "
          "so the rooms measured over the full range read half as long again"),
        b("P18", "band_power_in_amplitude_decibels", cho, "band_power_in_amplitude_decibels", "SC",
          "the older recorder's band powers written in dB by the amplitude formula, 20 log10, so half the rooms' "
          "decays fall twice as steeply and their noise floors sit twice as low"),
        b("P19", "reference_edt_kept_as_input", cho, "reference_edt_kept_as_input", "OF",
          "the reference's early decay time kept as an input; the rooms the model is for have no reference "
          "measured, and the held-out rooms carry the training mean"),
        b("P20", "relu_after_the_code_layer", ton_sgd, "relu_after_the_code_layer", "DR",
          "a ReLU after the six-unit code layer as after every other layer of the encoder, so a code unit pushed "
          "negative for every stroke stops passing anything, under momentum SGD",
          harmless=True),
    ]  # fmt: skip
    return healthy + bugs
