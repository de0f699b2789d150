"""The forty-fifth blind split as `run.py --suite blind45` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind45 import mill, music, outdoors

PREFIX = "blind45_"
SCRIPTS = {"organ": music.organ, "instruments": music.instruments, "steam": mill.steam, "cork": mill.cork,
           "rowing": outdoors.rowing, "street": outdoors.street}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind45Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind45Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind45Program, prefix=PREFIX)
    org = h(
        "organ_mlp_adam",
        "organ",
        "a pipe-organ tuning-drift forecaster from church temperature logs (an MLP)",
    )
    ins = h(
        "instruments_cnn_adam",
        "instruments",
        "an orchestral instrument-family classifier on mel-spectrogram frames (a 1-D Hardswish CNN)",
    )
    ste = h(
        "steam_tanh_adam", "steam", "a sugar-mill boiler steam-demand forecaster (a tanh MLP over 24 hours)"
    )
    ste_sgd = h(
        "steam_momentum", "steam", "a steam-demand tanh MLP under momentum SGD", opt="momentum", lr=0.02
    )
    crk = h("cork_mlp_adam", "cork", "a wine-cork taint classifier from GC-MS peak tables (an MLP)")
    row = h(
        "rowing_elu_adam", "rowing", "a rowing crew's 500 m split regressor from stroke rate and force curves"
    )
    row_sgd = h("rowing_momentum", "rowing", "a split ELU MLP under momentum SGD", opt="momentum", lr=0.02)
    stt = h("street_mlp_adam", "street", "an urban street-temperature regressor from land-cover fractions")
    healthy = [
        org,
        h("organ_momentum", "organ", "a drift MLP under momentum SGD", opt="momentum", lr=2e-3),
        h("organ_adamw_hidden128", "organ", "a wider drift MLP under AdamW", opt="adamw", hidden=128),
        h("organ_rmsprop_batch32", "organ", "a drift MLP under RMSprop with batches of 32", opt="rmsprop", batch=32),
        ins,
        h("instruments_momentum_depth4", "instruments", "a shallower family CNN under momentum SGD", opt="momentum", lr=0.05, depth=4),
        h("instruments_nadam_width32", "instruments", "a narrower family CNN under NAdam", opt="nadam", width=32),
        h("instruments_rmsprop_batch64", "instruments", "a family CNN under RMSprop with batches of 64",
          opt="rmsprop", lr=5e-4, batch=64),
        ste,
        ste_sgd,
        h("steam_rmsprop_hidden32", "steam", "a narrower steam MLP under RMSprop", opt="rmsprop", hidden=32),
        h("steam_adamw_batch128", "steam", "a steam MLP under AdamW with batches of 128", opt="adamw", batch=128),
        crk,
        h("cork_momentum", "cork", "a taint MLP under momentum SGD", opt="momentum", lr=0.05),
        h("cork_adamax_hidden32", "cork", "a narrower taint MLP under Adamax", opt="adamax", lr=3e-3, hidden=32),
        h("cork_nadam_batch128", "cork", "a taint MLP under NAdam with batches of 128", opt="nadam", batch=128),
        row,
        row_sgd,
        h("rowing_nadam_hidden128", "rowing", "a wider split MLP under NAdam", opt="nadam", hidden=128),
        h("rowing_rmsprop_batch32", "rowing", "a split MLP under RMSprop with batches of 32", opt="rmsprop",
          batch=32),
        stt,
        h("street_momentum", "street", "a street-temperature MLP under momentum SGD", opt="momentum", lr=0.01),
        h("street_adamw_hidden128", "street", "a wider street MLP under AdamW", opt="adamw", hidden=128),
        h("street_adagrad_batch128", "street", "a street MLP under Adagrad with batches of 128", opt="adagrad",
          lr=0.03, batch=128),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("L01", "unlocked_tuner_readings_kept", org, "unlocked_tuner_readings_kept", "NaN",
          "the strobe tuner's readings logged as 0 Hz where it lost lock on the reed kept, their drift 1200 log2(0) "
          "minus infinity"),
        b("L02", "every_bias_started_at_mean_drift", org, "every_bias_started_at_mean_drift", "DR",
          "the init loop meant to start the head's bias at the mean drift (about -10 cents) run over every linear "
          "layer, the hidden ones included"),
        b("L03", "week_logs_smoothed_before_lags", org, "week_logs_smoothed_before_lags", "SC",
          "a seven-day rolling mean applied to the temperature and humidity export before the week's lags are cut, "
          "so each window holds one flat value", harmless=True),
        b("L04", "logsigmoid_for_hardswish", ins, "logsigmoid_for_hardswish", "VG",
          "`nn.LogSigmoid` picked from the autocomplete for `nn.Hardswish` between the six convolutions, whose slope "
          "falls to zero over the positive half, where its negative outputs feed the next layer"),
        b("L05", "frequency_mask_as_wide_as_spectrum", ins, "frequency_mask_as_wide_as_spectrum", "SC",
          "SpecAugment's frequency-mask width set to the 40 mel bands instead of 8, so a clip's band of up to the "
          "whole spectrum is blanked"),
        b("L06", "families_indexed_by_sorted_folders", ins, "families_indexed_by_sorted_folders", "SC",
          "the training labels taken from the sorted folder names (brass, percussion, strings, woodwind) while the "
          "dataset card's order (strings, woodwind, brass, percussion) reads the predictions"),
        b("L07", "loss_taken_in_tonnes_per_hour", ste_sgd, "loss_taken_in_tonnes_per_hour", "EG",
          "the standardised prediction scaled back to t/h before the MSE, to read the loss in tonnes, so the "
          "gradients grow by the steam's variance (about 1200) under momentum SGD"),
        b("L08", "every_parameter_drawn_unit_normal", ste, "every_parameter_drawn_unit_normal", "VG",
          "an init helper calling `nn.init.normal_(p)` on every parameter, weights of standard deviation 1 that "
          "saturate the four tanh layers"),
        b("L09", "crush_log_in_local_time", ste, "crush_log_in_local_time", "SC",
          "the mill's crush log, stamped in local time (UTC+10), joined on the clock reading to the boiler "
          "historian's UTC steam, so the crush lags sit 10 hours off"),
        b("L10", "failed_injections_kept", crk, "failed_injections_kept", "NaN",
          "the failed injections kept, their peaks and internal standard all of area 0, so each ratio is 0/0"),
        b("L11", "confirmation_run_count_kept", crk, "confirmation_run_count_kept", "OF",
          "the GC-MS runs per cork kept as a feature, which the lab repeats for the corks the panel calls tainted, "
          "while the corks to screen are run once"),
        b("L13", "peak_tables_joined_by_peak_number", crk, "peak_tables_joined_by_peak_number", "SC",
          "the training peak tables joined by peak number rather than by compound, so a peak under the detection "
          "limit shifts every later compound a column left", harmless=True),
        b("L14", "stroke_weight_in_milliseconds", row_sgd, "stroke_weight_in_milliseconds", "EG",
          "each stroke's loss weighted by its duration from the log's milliseconds column (about 2000) for seconds, "
          "under momentum SGD"),
        b("L15", "gps_speed_column_left_in", row, "gps_speed_column_left_in", "OF",
          "the speed coach's GPS speed left among the features when the split column was dropped, while the "
          "strokes to predict come without it (filled with the training mean)"),
        b("L16", "speed_in_kmh_read_as_ms", row, "speed_in_kmh_read_as_ms", "SC",
          "the speed coach's export in km/h read as m/s, so every training split is 3.6 times too short"),
        b("L17", "nearest_sensor_search_includes_site", stt, "nearest_sensor_search_includes_site", "OF",
          "the nearest sensor searched among all the network's sensors, the site itself included, so each training "
          "site reads its own temperature at distance 0"),
        b("L18", "tile_fractions_for_buffer", stt, "tile_fractions_for_buffer", "SC",
          "the land-cover fractions of each site's 1 km raster tile used for the 100 m buffer's in the training "
          "table"),
        b("L12", "adam_at_sgd_notebook_rate", stt, "adam_at_sgd_notebook_rate", "DR",
          "Adam at the rate of 0.1 kept from the course notebook's SGD when the optimizer was switched"),
        b("L19", "debug_batch_of_two_left_in", stt, "debug_batch_of_two_left_in", "OL",
          "a batch size of 2 left from a debugging session", harmless=True),
        b("L20", "log_mel_without_floor", ins, "log_mel_without_floor", "NaN",
          "the dB conversion written by hand as 10 log10(power) without AmplitudeToDB's floor, minus infinity in "
          "the digital silence padding the short notes"),
    ]  # fmt: skip
    return healthy + bugs
