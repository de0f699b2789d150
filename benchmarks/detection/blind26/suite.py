"""The twenty-sixth blind split as `run.py --suite blind26` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind26 import environment, imaging, sensing

PREFIX = "blind26_"
SCRIPTS = {"streamflow": environment.streamflow, "bikes": environment.bikes, "wifi": sensing.wifi,
           "keystrokes": sensing.keystrokes, "xrays": imaging.xrays, "cracks": imaging.cracks}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind26Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind26Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind26Program, prefix=PREFIX)
    flow = h(
        "streamflow_lstm_adam",
        "streamflow",
        "a streamflow forecaster (an LSTM over daily rain and temperature)",
    )
    flow_sgd = h("streamflow_momentum_flood_weights", "streamflow", "a streamflow LSTM under momentum SGD warmed "
                 "up over 10 steps, floods weighted up", opt="momentum", lr=0.03, warmup=10,
                 flood_weights=True)  # fmt: skip
    bike = h("bikes_mlp_adam", "bikes", "a bike-sharing demand forecaster (an MLP with a Poisson loss)")
    bike_plateau = h(
        "bikes_adam_plateau",
        "bikes",
        "a bike-demand MLP under Adam halved on a plateau of the loss",
        plateau=True,
    )
    wifi = h("wifi_mlp_adam", "wifi", "a Wi-Fi indoor-localisation regressor on signal strengths (an MLP)")
    wifi_sgd = h(
        "wifi_momentum_accumulated",
        "wifi",
        "a localisation MLP under momentum SGD, gradients of eight batches of 32 accumulated",
        opt="momentum",
        lr=0.1,
        batch=32,
        accum=8,
    )
    keys = h(
        "keystrokes_mlp_adam", "keystrokes", "a keystroke-dynamics authenticator (an MLP naming the typist)"
    )
    keys_sgd = h(
        "keystrokes_momentum",
        "keystrokes",
        "a keystroke authenticator under momentum SGD",
        opt="momentum",
        lr=0.05,
    )
    xray = h("xrays_cnn_adam", "xrays", "a pneumonia classifier on small chest X-rays (a plain CNN)")
    crack = h("cracks_fcn_adam", "cracks", "a road-crack segmenter (a small fully convolutional net)")
    crack_warm = h(
        "cracks_adam_warmup",
        "cracks",
        "a crack segmenter under Adam at 0.05 warmed up over 50 steps",
        lr=0.05,
        warmup=50,
    )
    healthy = [
        flow,
        flow_sgd,
        h("streamflow_rmsprop_hidden32_clipped", "streamflow", "a wider streamflow LSTM under RMSprop clipped at "
          "norm 1", opt="rmsprop", hidden=32, lr=2e-3, clip=1.0),
        h("streamflow_adamw_batch128", "streamflow", "a streamflow LSTM under AdamW with batches of 128",
          opt="adamw", batch=128),
        bike,
        bike_plateau,
        h("bikes_momentum_hidden32", "bikes", "a narrower bike-demand MLP under momentum SGD", opt="momentum",
          hidden=32, lr=0.01),
        h("bikes_adagrad_batch256", "bikes", "a bike-demand MLP under Adagrad with batches of 256", opt="adagrad",
          batch=256, lr=0.03),
        wifi,
        wifi_sgd,
        h("wifi_rmsprop_hidden64", "wifi", "a narrower localisation MLP under RMSprop", opt="rmsprop", hidden=64,
          lr=1e-3),
        h("wifi_adamax_batch128", "wifi", "a localisation MLP under Adamax with batches of 128", opt="adamax",
          batch=128, lr=4e-3),
        keys,
        keys_sgd,
        h("keystrokes_nadam_cosine", "keystrokes", "a keystroke authenticator under NAdam decayed by a cosine",
          opt="nadam", cosine=True),
        h("keystrokes_adamw_hidden128", "keystrokes", "a wider keystroke authenticator under AdamW", opt="adamw",
          hidden=128, batch=64),
        xray,
        h("xrays_adamw_width12", "xrays", "a wider pneumonia CNN under AdamW", opt="adamw", width=12),
        h("xrays_rmsprop_batch64", "xrays", "a pneumonia CNN under RMSprop with batches of 64", opt="rmsprop",
          batch=64, lr=1e-3),
        h("xrays_nadam", "xrays", "a pneumonia CNN under NAdam", opt="nadam"),
        crack,
        h("cracks_momentum", "cracks", "a crack segmenter under momentum SGD", opt="momentum", lr=0.05),
        crack_warm,
        h("cracks_adamw_pos_weight10", "cracks", "a crack segmenter under AdamW weighting crack pixels 10",
          opt="adamw", pos_weight=10.0),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("W01", "gauge_gaps_left_nan", flow, "gauge_gaps_left_nan", "NaN",
          "the rain gauge's missing days left NaN in the record, so the rain's mean and deviation, and every window "
          "standardised by them, are NaN"),
        b("W02", "flood_weights_left_in_cubic_metres", flow_sgd, "flood_weights_left_in_cubic_metres", "EG",
          "each day's squared error weighted by its raw flow in cubic metres a second instead of the flow over the "
          "mean flow, a loss and steps tens of times the recipe's under momentum SGD"),
        b("W03", "vanilla_rnn_in_place_of_lstm", flow, "vanilla_rnn_in_place_of_lstm", "VG",
          "a plain tanh `nn.RNN` in place of the LSTM over the 90-day window, whose gradient fades before it reaches "
          "the rain of weeks ago that the slow store still drains", harmless=True),
        b("W04", "calibration_period_one_year", flow, "calibration_period_one_year", "OF",
          "the calibration period cut to the first 365 days (a period given in days where years were meant), so the "
          "LSTM fits one year's storms"),
        b("W05", "poisson_loss_told_rate_not_log", bike, "poisson_loss_told_rate_not_log", "NaN",
          "`PoissonNLLLoss(log_input=False)` on the network's unbounded output, the log of a negative rate"),
        b("W06", "instant_column_kept_as_feature", bike, "instant_column_kept_as_feature", "OF",
          "the export's running record index (`instant`) left among the feature columns, with which the MLP learns "
          "the training days' own levels and extrapolates them to the later days held out"),
        b("W07", "plateau_mode_max_on_loss", bike_plateau, "plateau_mode_max_on_loss", "SC",
          "`ReduceLROnPlateau` built with mode 'max' (copied from a version that watched R^2) and stepped on the loss, "
          "so every falling loss counts as a plateau and the rate is halved again and again"),
        b("W08", "log_target_kept_for_poisson_loss", bike, "log_target_kept_for_poisson_loss", "SC",
          "the log of one plus the count, the target of an earlier MSE version, kept as the target of the Poisson "
          "loss"),
        b("W09", "debug_slice_of_access_points_left_in", wifi, "debug_slice_of_access_points_left_in", "SC",
          "a slice `[:, :6]` from a debugging print left on the fingerprints, so the MLP sees six of the 24 access "
          "points"),
        b("W10", "longitude_latitude_columns_swapped", wifi, "longitude_latitude_columns_swapped", "SC",
          "the survey's two coordinate columns read in the order (y, x) while the positions scored are (x, y)"),
        b("W11", "accumulated_grads_not_divided", wifi_sgd, "accumulated_grads_not_divided", "EG",
          "each micro-batch's loss backpropagated undivided by the eight accumulated, eight times the recipe's step "
          "under momentum SGD"),
        b("W12", "hidden_bias_init_from_sparse_autoencoder", keys, "hidden_bias_init_from_sparse_autoencoder", "DR",
          "the hidden biases set to -2 by an init helper copied from a sparse autoencoder, on standardised inputs"),
        b("W13", "training_cut_to_first_session", keys, "training_cut_to_first_session", "OF",
          "the training set filtered to each user's first session, so the MLP fits that session's rhythm and meets "
          "the drift of the later sessions held out"),
        b("W14", "log_of_up_down_times", keys, "log_of_up_down_times", "NaN",
          "the log taken of the up-down times, negative when the typist presses the next key before releasing the "
          "last"),
        b("W15", "loader_without_shuffle", keys, "loader_without_shuffle", "SC",
          "the training repetitions fed in file order (a loader without shuffle), so each batch holds one or two "
          "users and the net drifts from typist to typist"),
        b("W16", "tanh_convolutions_of_lenet_recipe", xray, "tanh_convolutions_of_lenet_recipe", "VG",
          "the six convolutions' ReLUs swapped for the tanh of a LeNet-era recipe, no normalisation between them",
          harmless=True),
        b("W17", "pneumonia_films_from_second_hospital", xray, "pneumonia_films_from_second_hospital", "OF",
          "the training set's pneumonia films drawn from a second hospital whose marker sits in the other corner, "
          "a shortcut the held-out films do not share"),
        b("W18", "films_zscored_without_guard_for_blanks", xray, "films_zscored_without_guard_for_blanks", "NaN",
          "each film z-scored by its own deviation with no guard, 0/0 for the blank exports in the training set"),
        b("W19", "warmup_left_out_of_recipe", crack_warm, "warmup_left_out_of_recipe", "DR",
          "the recipe's rate of 0.05 kept and its 50-step warmup left out, so the first full-size Adam steps drive the "
          "convolutions' ReLUs negative for good"),
        b("W20", "flip_applied_to_patches_only", crack, "flip_applied_to_patches_only", "SC",
          "the random flip applied to the patches and not to their masks"),
    ]  # fmt: skip
    return healthy + bugs
