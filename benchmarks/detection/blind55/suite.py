"""The fifty-fifth blind split as `run.py --suite blind55` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind55 import handling, show, water

PREFIX = "blind55_"
SCRIPTS = {"turnaround": handling.turnaround, "bales": handling.bales, "oxygen": water.oxygen,
           "crevasse": water.crevasse, "fixture": show.fixture, "release": show.release}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind55Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind55Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind55Program, prefix=PREFIX)
    tur = h(
        "turnaround_mlp_adam",
        "turnaround",
        "an aircraft turnaround-time regressor for apron planning (a ReLU MLP over embedded airline, stand and crew)",
    )
    tur_sgd = h(
        "turnaround_momentum", "turnaround", "a turnaround MLP under momentum SGD", opt="momentum", lr=0.02
    )
    bal = h("bales_cnn_adam", "bales", "a recovered-paper bale grader on near-infrared spectra (a 1-D CNN)")
    bal_sgd = h("bales_momentum", "bales", "a bale-grade CNN under momentum SGD", opt="momentum", lr=0.02)
    oxy = h("oxygen_lstm_adam", "oxygen", "a fish-farm dissolved-oxygen forecaster (an LSTM over the hours)")
    oxy_sgd = h("oxygen_momentum", "oxygen", "an oxygen LSTM under momentum SGD", opt="momentum", lr=0.05)
    cre = h("crevasse_cnn_adam", "crevasse", "a crevasse detector on ground-penetrating radar (a 2-D CNN)")
    cre_sgd = h("crevasse_momentum", "crevasse", "a crevasse CNN under momentum SGD", opt="momentum", lr=0.01)
    fix = h("fixture_silu_adam", "fixture", "a stage LED fixture's colour calibration model (a SiLU MLP)")
    fix_sgd = h(
        "fixture_momentum", "fixture", "a fixture colour MLP under momentum SGD", opt="momentum", lr=0.01
    )
    rel = h(
        "release_encoder_adam",
        "release",
        "an archery release classifier on a bow-mounted motion sensor (a small transformer encoder)",
    )
    healthy = [
        tur,
        tur_sgd,
        h("turnaround_adamw_hidden128", "turnaround", "a wider turnaround MLP under AdamW", opt="adamw", hidden=128),
        h("turnaround_radam_batch32", "turnaround", "a turnaround MLP under RAdam with batches of 32", opt="radam",
          batch=32),
        bal,
        bal_sgd,
        h("bales_adamw_width24", "bales", "a wider bale-grade CNN under AdamW", opt="adamw", width=24),
        h("bales_nadam_batch32", "bales", "a bale-grade CNN under NAdam with batches of 32", opt="nadam", batch=32),
        oxy,
        h("oxygen_rmsprop_hidden40", "oxygen", "a wider oxygen LSTM under RMSprop", opt="rmsprop", hidden=40,
          lr=2e-3),
        h("oxygen_adamax_batch128", "oxygen", "an oxygen LSTM under Adamax with batches of 128", opt="adamax",
          batch=128, lr=4e-3),
        oxy_sgd,
        cre,
        cre_sgd,
        h("crevasse_rmsprop_width12", "crevasse", "a wider crevasse CNN under RMSprop", opt="rmsprop", width=12,
          lr=5e-4),
        h("crevasse_adagrad_batch64", "crevasse", "a crevasse CNN under Adagrad with batches of 64", opt="adagrad",
          batch=64, lr=0.02),
        fix,
        fix_sgd,
        h("fixture_nadam_hidden96", "fixture", "a wider fixture colour MLP under NAdam", opt="nadam", hidden=96),
        h("fixture_adamax_batch128", "fixture", "a fixture colour MLP under Adamax with batches of 128",
          opt="adamax", batch=128, lr=4e-3),
        rel,
        h("release_adamw_width32", "release", "a wider release encoder under AdamW", opt="adamw", width=32),
        h("release_radam_batch16", "release", "a release encoder under RAdam with batches of 16", opt="radam",
          batch=16, lr=2e-3),
        h("release_rmsprop", "release", "a release encoder under RMSprop", opt="rmsprop", lr=3e-4),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("T01", "hhmm_clock_times_subtracted", tur, "hhmm_clock_times_subtracted", "SC",
          "the turn time taken as off-block minus on-block in the movement messages' HHMM integers, 40 minutes too "
          "many for every hour boundary the turn crosses"),
        b("T02", "stand_codes_factorised_per_frame", tur, "stand_codes_factorised_per_frame", "SC",
          "the airline, stand and crew ids factorised separately in each frame, so a code names one stand in "
          "training and another in the next season's frame"),
        b("T03", "warmup_lambda_without_cap", tur_sgd, "warmup_lambda_without_cap", "EG",
          "the warm-up's LambdaLR factor written (step + 1) / warmup without min(1, ...), so the rate keeps "
          "climbing past its peak, under momentum SGD"),
        b("T04", "embeddings_scaled_by_sqrt_dim", tur_sgd, "embeddings_scaled_by_sqrt_dim", "DR",
          "the airline, stand and crew embeddings multiplied by the root of the model width (8), as a transformer "
          "scales its token embeddings by the root of d_model, before a ReLU MLP under momentum SGD"),
        b("T05", "flight_number_embedded", tur, "flight_number_embedded", "OF",
          "the flight number embedded beside the airline and stand, a few turns per number, while the next season's "
          "timetable brings new numbers"),
        b("T06", "grade_from_delivery_note", bal, "grade_from_delivery_note", "SC",
          "the grade column joined from the supplier's delivery note, which declares mixed bales as better grades, "
          "instead of the yard's inspection"),
        b("T07", "fisher_z_of_library_match_unclipped", bal, "fisher_z_of_library_match_unclipped", "NaN",
          "the library match's correlation Fisher z-transformed after a clip to [-1, 1] only, infinite for the "
          "training bales the library was picked from"),
        b("T08", "batchnorm_momentum_passed_as_eps", bal_sgd, "batchnorm_momentum_passed_as_eps", "VG",
          "BatchNorm1d(width, 0.9) written for a momentum of 0.9, whose second positional argument is eps, under "
          "momentum SGD", harmless=True),
        b("T09", "interp_on_descending_wavelengths", bal, "interp_on_descending_wavelengths", "SC",
          "the new spectrometer's wavelengths, written from 1700 nm down, handed to np.interp as they come, which "
          "wants them increasing and does not check"),
        b("T10", "horizon_passed_as_lstm_num_layers", oxy_sgd, "horizon_passed_as_lstm_num_layers", "VG",
          "the forecast horizon (6) passed on as nn.LSTM's third positional argument, its num_layers, a six-layer "
          "LSTM under momentum SGD"),
        b("T11", "target_sliced_from_input_window", oxy, "target_sliced_from_input_window", "SC",
          "the target sliced as window[:, -6:] from the input window instead of the six hours after it, so the "
          "forecaster learns to repeat the last hours"),
        b("T12", "gain_db_applied_as_power_of_ten", cre_sgd, "gain_db_applied_as_power_of_ten", "EG",
          "the depth gain in dB applied as 10 ** dB where 10 ** (dB / 20) is the amplitude factor, under momentum "
          "SGD"),
        b("T13", "gps_antenna_offset_ignored", cre, "gps_antenna_offset_ignored", "SC",
          "the crevasse flags matched to the patches at the GPS fix, three patches behind the antenna on the sled"),
        b("T14", "probe_column_kept", cre_sgd, "probe_column_kept", "OF",
          "the survey table's hand-probe column left among the inputs, probed where the operator saw a suspect, "
          "while nothing on a new route is probed yet, under momentum SGD"),
        b("T15", "dmx_coarse_fine_bytes_swapped", fix, "dmx_coarse_fine_bytes_swapped", "SC",
          "each emitter's 16-bit DMX pair read fine byte first, as the fixture's manual lists its channels"),
        b("T16", "chromaticity_of_blackout_rows", fix, "chromaticity_of_blackout_rows", "NaN",
          "the calibration plan's blackout rows kept, whose x = X / (X + Y + Z) is 0 / 0 and log illuminance -inf"),
        b("T17", "window_cut_from_recording_start", rel, "window_cut_from_recording_start", "SC",
          "the window cut from the recording's first sample instead of around the clicker's click"),
        b("T18", "coach_note_kept", rel, "coach_note_kept", "OF",
          "the coach's call on the sheet, from which the release labels were typed, left among the inputs one-hot "
          "beside the pooled motion, while the live classifier runs before any coach has seen the shot and the form "
          "says clean", harmless=True),
        b("T19", "archer_spread_across_one_shot", rel, "archer_spread_across_one_shot", "NaN",
          "each archer's spread taken across their shots sample by sample, NaN for a guest archer with one shot"),
    ]  # fmt: skip
    return healthy + bugs
