"""The fifty-fourth blind split as `run.py --suite blind54` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind54 import bench, care, works

PREFIX = "blind54_"
SCRIPTS = {"charge": bench.charge, "buzz": bench.buzz, "kidney": care.kidney, "swarm": care.swarm,
           "sidewall": works.sidewall, "inkkeys": works.inkkeys}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind54Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind54Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind54Program, prefix=PREFIX)
    cha = h(
        "charge_gru_adam",
        "charge",
        "a home-battery cell's state-of-charge estimator (a GRU over the logger's samples)",
    )
    cha_sgd = h(
        "charge_momentum", "charge", "a state-of-charge GRU under momentum SGD", opt="momentum", lr=0.05
    )
    buz = h("buzz_cnn_adam", "buzz", "a guitar fret-buzz detector on pickup windows (a ReLU 1-D CNN)")
    buz_sgd = h("buzz_momentum", "buzz", "a fret-buzz CNN under momentum SGD", opt="momentum", lr=0.003)
    kid = h(
        "kidney_mlp_adam",
        "kidney",
        "a feline CKD stage classifier on a vet clinic's panels (an MLP with a breed embedding)",
    )
    kid_sgd = h("kidney_momentum", "kidney", "a CKD stage MLP under momentum SGD", opt="momentum", lr=0.01)
    swa = h("swarm_lstm_adam", "swarm", "a beehive swarm-warning LSTM on hive-scale and hive-sensor logs")
    sid = h(
        "sidewall_ae_adam",
        "sidewall",
        "a glass-container sidewall-defect autoencoder on inspection-camera profiles",
    )
    sid_sgd = h(
        "sidewall_momentum", "sidewall", "a sidewall autoencoder under momentum SGD", opt="momentum", lr=0.02
    )
    ink = h(
        "inkkeys_attention_adam",
        "inkkeys",
        "an offset press's ink-key presetting model (self-attention over the zones)",
    )
    ink_sgd = h(
        "inkkeys_momentum",
        "inkkeys",
        "an ink-key attention model under momentum SGD",
        opt="momentum",
        lr=0.01,
    )
    healthy = [
        cha,
        cha_sgd,
        h("charge_radam_hidden32", "charge", "a wider state-of-charge GRU under RAdam", opt="radam", hidden=32),
        h("charge_adamax_batch128", "charge", "a state-of-charge GRU under Adamax with batches of 128", opt="adamax",
          batch=128, lr=4e-3),
        buz,
        buz_sgd,
        h("buzz_adamw_width20", "buzz", "a wider fret-buzz CNN under AdamW", opt="adamw", width=20),
        h("buzz_rmsprop_batch32", "buzz", "a fret-buzz CNN under RMSprop with batches of 32", opt="rmsprop", batch=32,
          lr=5e-4),
        kid,
        kid_sgd,
        h("kidney_nadam_hidden128", "kidney", "a wider CKD stage MLP under NAdam", opt="nadam", hidden=128),
        h("kidney_adagrad_batch32", "kidney", "a CKD stage MLP under Adagrad with batches of 32", opt="adagrad",
          batch=32, lr=0.02),
        swa,
        h("swarm_rmsprop_hidden32", "swarm", "a wider swarm LSTM under RMSprop", opt="rmsprop", hidden=32, lr=1e-3),
        h("swarm_adamw_batch128", "swarm", "a swarm LSTM under AdamW with batches of 128", opt="adamw", batch=128),
        h("swarm_momentum_hidden16", "swarm", "a narrower swarm LSTM under momentum SGD", opt="momentum", hidden=16,
          lr=0.05),
        sid,
        sid_sgd,
        h("sidewall_nadam_hidden48", "sidewall", "a wider sidewall autoencoder under NAdam", opt="nadam", hidden=48),
        h("sidewall_rmsprop_batch128", "sidewall", "a sidewall autoencoder under RMSprop with batches of 128",
          opt="rmsprop", batch=128, lr=1e-3),
        ink,
        ink_sgd,
        h("inkkeys_adamw_width32", "inkkeys", "a wider ink-key attention model under AdamW", opt="adamw", width=32),
        h("inkkeys_adamax_batch64", "inkkeys", "an ink-key attention model under Adamax with batches of 64",
          opt="adamax", batch=64, lr=4e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("E01", "peukert_on_signed_current", cha, "peukert_on_signed_current", "NaN",
          "Peukert's law written on the signed current, a fractional power of the negative charging currents"),
        b("E02", "charge_counted_in_milliamp_hours", cha_sgd, "charge_counted_in_milliamp_hours", "EG",
          "the state-of-charge label computed from the coulomb count's mAh column over the capacity in Ah, under "
          "momentum SGD"),
        b("E03", "rested_ocv_after_window_kept", cha, "rested_ocv_after_window_kept", "OF",
          "the lab's rested voltage after the window kept as a channel; the live estimate fills it with the window's "
          "last voltage"),
        b("E04", "soc_label_from_bms_estimate", cha, "soc_label_from_bms_estimate", "SC",
          "the label read off the BMS's state of charge, counted against the nominal capacity of an aged cell"),
        b("E05", "wavenet_gate_on_shared_preactivation", buz_sgd, "wavenet_gate_on_shared_preactivation", "VG",
          "WaveNet's gated activation tanh(x) * sigmoid(x) written on each block's one pre-activation, under "
          "momentum SGD"),
        b("E06", "note_label_on_every_window", buz, "note_label_on_every_window", "SC",
          "the note's label (this fret buzzes) given to every window cut from it, the quiet sustain's with it"),
        b("E07", "hum_notch_at_60hz", buz, "hum_notch_at_60hz", "SC",
          "the American recipe's 60 Hz hum notch on recordings made on 50 Hz mains", harmless=True),
        b("E08", "preamp_gain_multiplied_not_removed", buz_sgd, "preamp_gain_multiplied_not_removed", "DR",
          "the preamp's +40 dB multiplied in where it was to be divided out, ten thousand times the scale, under "
          "momentum SGD"),
        b("E09", "creatinine_in_micromol_under_mg_table", kid_sgd, "creatinine_in_micromol_under_mg_table", "DR",
          "the reference lab's creatinine in umol/L standardised by the clinic's mg/dL table, under momentum SGD"),
        b("E10", "renal_diet_flag_kept", kid, "renal_diet_flag_kept", "OF",
          "the renal-diet flag, prescribed at staging, kept among the inputs; a first visit has none"),
        b("E11", "stage_from_latest_visit", kid, "stage_from_latest_visit", "SC",
          "the stage joined from the cat's latest visit, months on, to its first panel"),
        b("E12", "mould_std_over_single_bottles", sid, "mould_std_over_single_bottles", "NaN",
          "each mould's per-pixel std by torch.std whatever the mould's count, NaN for the moulds seen once"),
        b("E13", "bottleneck_sized_as_hidden", sid, "bottleneck_sized_as_hidden", "OF",
          "the autoencoder's code layer sized by the hidden width, so it can pass the defects through", harmless=True),
        b("E14", "good_set_from_flint_run_only", sid, "good_set_from_flint_run_only", "OF",
          "the good bottles pulled from the week's flint run only, the amber ones the line also makes left out"),
        b("E15", "chrono_init_gates_swapped", swa, "chrono_init_gates_swapped", "VG",
          "the chrono initialisation's forget and input slices swapped, the forget gates starting shut",
          harmless=True),
        b("E16", "swarm_date_from_next_inspection", swa, "swarm_date_from_next_inspection", "SC",
          "the swarm dated by the inspection at which the beekeeper found the colony gone"),
        b("E17", "piping_bins_for_44k_recorder", swa, "piping_bins_for_44k_recorder", "SC",
          "the queen-piping band's FFT bins computed for the old 44.1 kHz recorder on the new 16 kHz one"),
        b("E18", "plateau_scheduler_max_mode_on_loss", ink, "plateau_scheduler_max_mode_on_loss", "SC",
          "ReduceLROnPlateau left in the template's mode \"max\" and stepped on a loss"),
        b("E19", "black_plate_coverage_for_every_colour", ink, "black_plate_coverage_for_every_colour", "SC",
          "the job's plate files globbed and the first one, the black plate, read for every separation"),
        b("E20", "zone_position_in_mm_fed_raw", ink_sgd, "zone_position_in_mm_fed_raw", "EG",
          "the key's position along the ink fountain in mm, from the press's job file, appended as a feature as it "
          "is, under momentum SGD"),
    ]  # fmt: skip
    return healthy + bugs
