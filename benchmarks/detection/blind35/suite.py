"""The thirty-fifth blind split as `run.py --suite blind35` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind35 import sensing, tracks, yields

PREFIX = "blind35_"
SCRIPTS = {"milk": yields.milk, "etch": yields.etch, "crackles": sensing.crackles,
           "handshape": sensing.handshape, "conflicts": tracks.conflicts, "tennis": tracks.tennis}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind35Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind35Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind35Program, prefix=PREFIX)
    mil = h(
        "milk_gru_adam", "milk", "a dairy cow's next-day milk-yield forecaster (a GRU cell over four weeks)"
    )
    mil_sgd = h("milk_momentum", "milk", "a milk-yield GRU under momentum SGD", opt="momentum", lr=0.05)
    etc = h("etch_mlp_adam", "etch", "a plasma etch-rate regressor on process recipes (a ReLU MLP)")
    etc_sgd = h("etch_momentum", "etch", "an etch-rate MLP under momentum SGD", opt="momentum", lr=0.02)
    cra = h(
        "crackles_cnn_adam", "crackles", "a crackle detector on lung-sound spectrogram frames (a 1-D CNN)"
    )
    han = h("handshape_resmlp_adam", "handshape", "a sign-language handshape classifier on hand landmarks")
    han_sgd = h(
        "handshape_momentum",
        "handshape",
        "a handshape residual MLP under momentum SGD",
        opt="momentum",
        lr=0.02,
    )
    con = h("conflicts_mlp_adam", "conflicts", "an air-traffic conflict classifier on pairs of flight tracks")
    ten = h(
        "tennis_gru_adam", "tennis", "a tennis point-outcome model from the first shots of a rally (a GRU)"
    )
    healthy = [
        mil,
        mil_sgd,
        h("milk_rmsprop_hidden64", "milk", "a wider milk-yield GRU under RMSprop", opt="rmsprop", lr=1e-3, hidden=64),
        h("milk_adamw_batch128", "milk", "a milk-yield GRU under AdamW with batches of 128", opt="adamw",
          batch=128),
        etc,
        etc_sgd,
        h("etch_adagrad_hidden128", "etch", "a wider etch-rate MLP under Adagrad", opt="adagrad", lr=0.03,
          hidden=128),
        h("etch_nadam_batch32", "etch", "an etch-rate MLP under NAdam with batches of 32", opt="nadam", batch=32),
        cra,
        h("crackles_momentum", "crackles", "a crackle CNN under momentum SGD", opt="momentum", lr=0.05),
        h("crackles_rmsprop_width16", "crackles", "a narrower crackle CNN under RMSprop", opt="rmsprop", lr=1e-3,
          width=16),
        h("crackles_adamw_batch128", "crackles", "a crackle CNN under AdamW with batches of 128", opt="adamw",
          batch=128),
        han,
        han_sgd,
        h("handshape_rmsprop_depth4", "handshape", "a shallower handshape MLP under RMSprop", opt="rmsprop", lr=1e-3,
          depth=4),
        h("handshape_adamax_hidden128", "handshape", "a wider handshape MLP under Adamax", opt="adamax", lr=2e-3,
          hidden=128),
        con,
        h("conflicts_momentum", "conflicts", "a conflict MLP under momentum SGD", opt="momentum", lr=0.02),
        h("conflicts_adamw_hidden64", "conflicts", "a narrower conflict MLP under AdamW", opt="adamw", hidden=64),
        h("conflicts_rmsprop_batch256", "conflicts", "a conflict MLP under RMSprop with batches of 256",
          opt="rmsprop", lr=1e-3, batch=256),
        ten,
        h("tennis_momentum", "tennis", "a rally GRU under momentum SGD", opt="momentum", lr=0.1),
        h("tennis_nadam_hidden64", "tennis", "a wider rally GRU under NAdam", opt="nadam", hidden=64),
        h("tennis_rmsprop_batch32", "tennis", "a rally GRU under RMSprop with batches of 32", opt="rmsprop",
          lr=1e-3, batch=32),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("J01", "fat_protein_log_with_offline_analyser", mil, "fat_protein_log_with_offline_analyser", "NaN",
          "the log of the fat-to-protein ratio taken over the in-line analyser's protein of 0 on the days it was "
          "offline, instead of its last reading"),
        b("J02", "morning_milking_as_daily_target", mil, "morning_milking_as_daily_target", "SC",
          "the target read from the parlour export's first yield column, the morning milking, for the daily total"),
        b("J03", "days_in_milk_not_reset_at_calving", mil, "days_in_milk_not_reset_at_calving", "SC",
          "the days in milk counted on from the window's first day, not reset when the cow calves inside it",
          harmless=True),
        b("J04", "target_multiplied_by_std_not_divided", mil_sgd, "target_multiplied_by_std_not_divided", "EG",
          "the next day's yield scaled by the scaler's inverse transform, times its spread instead of over it, "
          "under momentum SGD"),
        b("J05", "o2_to_cf4_ratio_over_argon_recipes", etc, "o2_to_cf4_ratio_over_argon_recipes", "NaN",
          "the oxygen fed as its ratio to the CF4 flow, 0/0 for the argon-only recipes that run no CF4"),
        b("J06", "plateau_scheduler_mode_min_on_r2", etc, "plateau_scheduler_mode_min_on_r2", "SC",
          "the plateau scheduler left in mode='min' while it is stepped on the held-out R^2, so every rise counts "
          "as no improvement and the rate halves every third check"),
        b("J07", "lr_finder_rate_left_in_optimizer", etc_sgd, "lr_finder_rate_left_in_optimizer", "EG",
          "the learning-rate range test run on the training optimizer and not undone, leaving it at the sweep's "
          "top rate of 1"),
        b("J21", "hidden_biases_filled_like_highway_gates", etc, "hidden_biases_filled_like_highway_gates", "DR",
          "the hidden layers' biases filled with -1, the transform-gate bias of the highway layers the MLP "
          "replaced"),
        b("J08", "log_power_of_silence_padding", cra, "log_power_of_silence_padding", "NaN",
          "the log of the power taken without the power-to-dB floor, minus infinity on the silence that pads short "
          "clips"),
        b("J09", "ward_recordings_carry_mains_hum", cra, "ward_recordings_carry_mains_hum", "OF",
          "the training clips with crackles recorded mostly on the ward, whose stethoscope picks up the mains hum, "
          "while the clips to screen carry it either way", harmless=True),
        b("J10", "hidden_activation_from_output_key", cra, "hidden_activation_from_output_key", "VG",
          "the hidden layers' activation looked up under the config's output key, sigmoid, so four sigmoid "
          "convolutions stand between the loss and the input"),
        b("J11", "residual_skips_dropped_in_refactor", han, "residual_skips_dropped_in_refactor", "VG",
          "the residual blocks refactored to return `block(h)` instead of `h + block(h)`, leaving eight plain "
          "layers"),
        b("J12", "landmarks_fed_in_pixels", han_sgd, "landmarks_fed_in_pixels", "EG",
          "the tracker's landmarks fed in pixels of the frame, the wrist frame and palm scaling skipped, under "
          "momentum SGD"),
        b("J13", "labels_indexed_by_sorted_class_names", han, "labels_indexed_by_sorted_class_names", "SC",
          "the training labels indexed by the class folders' sorted names while the label file lists the "
          "handshapes in the course's order"),
        b("J14", "headings_fed_in_degrees", con, "headings_fed_in_degrees", "SC",
          "each aircraft's heading fed in degrees, 359 and 1 far apart, instead of by its sine and cosine"),
        b("J15", "flight_levels_left_in_feet", con, "flight_levels_left_in_feet", "DR",
          "the flight levels left in feet (29000-41000) by a scaler fitted on the kinematic columns only"),
        b("J16", "archived_alert_in_training_features", con, "archived_alert_in_training_features", "OF",
          "the ground system's archived short-term conflict alert left in the training features, while the pairs "
          "to forecast have none yet"),
        b("J17", "dropout_given_keep_probability", con, "dropout_given_keep_probability", "SC",
          "`nn.Dropout` given the ported TensorFlow model's keep probability of 0.9 as its drop probability"),
        b("J18", "training_rallies_not_cut", ten, "training_rallies_not_cut", "OF",
          "the training rallies fed whole with their end token, while the forecast reads the first four shots"),
        b("J19", "outcome_for_player_a_not_server", ten, "outcome_for_player_a_not_server", "SC",
          "the outcome read from player A's column of the match export instead of the server's"),
        b("J20", "gradient_clipped_before_backward", ten, "gradient_clipped_before_backward", "EG",
          "`clip_grad_norm_` called between `zero_grad` and `backward`, so it clips nothing", harmless=True),
    ]  # fmt: skip
    return healthy + bugs
