"""The twenty-eighth blind split as `run.py --suite blind28` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind28 import arrivals, tables, traces

PREFIX = "blind28_"
SCRIPTS = {"stay": tables.stay, "gas": tables.gas, "aftershocks": arrivals.aftershocks, "eta": arrivals.eta,
           "strokes": traces.strokes, "roast": traces.roast}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind28Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind28Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind28Program, prefix=PREFIX)
    sta = h("stay_mlp_adam", "stay", "a hospital length-of-stay regressor on admission records (an MLP)")
    sta_deep = h("stay_deep_tanh_momentum", "stay", "a six-layer tanh length-of-stay MLP under momentum SGD",
                 opt="momentum", lr=0.05, depth=6, tanh=True)  # fmt: skip
    gas = h(
        "gas_mlp_adam", "gas", "a power-transformer fault classifier from dissolved-gas readings (an MLP)"
    )
    gas_sgd = h("gas_momentum", "gas", "a transformer fault MLP under momentum SGD", opt="momentum", lr=0.05)
    aft = h("aftershocks_mlp_adam", "aftershocks", "an aftershock-count model (a Poisson MLP with the observation "
            "window as an offset)")  # fmt: skip
    aft_clip = h("aftershocks_momentum_clipped", "aftershocks", "an aftershock-count MLP under momentum SGD clipped "
                 "at norm 1", opt="momentum", lr=0.05, clip=1.0)  # fmt: skip
    aft_deep = h("aftershocks_deep_momentum", "aftershocks", "a six-layer aftershock-count MLP under momentum SGD",
                 opt="momentum", lr=0.01, depth=6, clip=1.0)  # fmt: skip
    eta = h("eta_mlp_adam", "eta", "a shipping ETA regressor on voyage features (an MLP)")
    eta_warm = h("eta_momentum_warmup", "eta", "an ETA MLP under momentum SGD warmed up over 25 steps",
                 opt="momentum", lr=0.05, warmup=True)  # fmt: skip
    stk = h(
        "strokes_gru_adam", "strokes", "a handwriting stroke-direction classifier on pen trajectories (a GRU)"
    )
    roa = h(
        "roast_cnn_adam", "roast", "a coffee roast-degree classifier on near-infrared spectra (a 1-D CNN)"
    )
    healthy = [
        sta,
        sta_deep,
        h("stay_rmsprop_cosine", "stay", "a length-of-stay MLP under RMSprop decayed by a cosine", opt="rmsprop",
          lr=5e-4, cosine=True),
        h("stay_adamw_batch128", "stay", "a length-of-stay MLP under AdamW with batches of 128", opt="adamw",
          batch=128),
        gas,
        gas_sgd,
        h("gas_nadam_hidden128", "gas", "a wider fault MLP under NAdam", opt="nadam", hidden=128),
        h("gas_adagrad_batch32", "gas", "a fault MLP under Adagrad with batches of 32", opt="adagrad", lr=0.03,
          batch=32),
        aft,
        aft_clip,
        aft_deep,
        h("aftershocks_adamax_batch128", "aftershocks", "an aftershock-count MLP under Adamax with batches of 128",
          opt="adamax", batch=128, lr=4e-3),
        eta,
        eta_warm,
        h("eta_nadam_batch32", "eta", "an ETA MLP under NAdam with batches of 32", opt="nadam", batch=32),
        h("eta_adamw_hidden128", "eta", "a wider ETA MLP under AdamW", opt="adamw", hidden=128),
        stk,
        h("strokes_rmsprop", "strokes", "a stroke-direction GRU under RMSprop", opt="rmsprop", lr=2e-3),
        h("strokes_momentum_clipped", "strokes", "a stroke-direction GRU under momentum SGD clipped at norm 1",
          opt="momentum", lr=0.1, clip=1.0),
        h("strokes_adamw_hidden64", "strokes", "a wider stroke-direction GRU under AdamW", opt="adamw", hidden=64),
        roa,
        h("roast_momentum", "roast", "a roast-degree CNN under momentum SGD", opt="momentum", lr=0.05),
        h("roast_rmsprop_width16", "roast", "a wider roast-degree CNN under RMSprop", opt="rmsprop", width=16,
          lr=1e-3),
        h("roast_nadam_batch64", "roast", "a roast-degree CNN under NAdam with batches of 64", opt="nadam",
          batch=64),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("U01", "open_admissions_kept", sta, "open_admissions_kept", "NaN",
          "the admissions still open at the export kept, whose stay, discharge date minus admission date, is NaN"),
        b("U02", "discharge_disposition_left_in", sta, "discharge_disposition_left_in", "OF",
          "the discharge disposition (home, rehabilitation, nursing home) of the discharge table left among the "
          "inputs; the admissions to score have none yet and read as going home"),
        b("U03", "charges_estimate_in_dollars", sta, "charges_estimate_in_dollars", "DR",
          "the charges estimated at admission, joined from billing, left in dollars (some 3,000 to 50,000) while the "
          "other inputs are standardised"),
        b("U04", "prediction_rounded_to_whole_days", sta, "prediction_rounded_to_whole_days", "SC",
          "the predicted stay rounded to whole days, as the recorded stays are, before the loss, so no gradient "
          "passes the rounding"),
        b("U05", "uniform_init_default_bounds", sta_deep, "uniform_init_default_bounds", "EG",
          "every hidden layer of the six-layer tanh network initialised by `nn.init.uniform_` with its default "
          "bounds [0, 1), meant as a symmetric start, so the tanh units sit saturated, all of one sign, and the "
          "output layer's steps under momentum SGD blow up"),
        b("U06", "rogers_ratio_unguarded", gas, "rogers_ratio_unguarded", "NaN",
          "the Rogers gas ratios taken unguarded, 0/0 where both gases are below their detection limit"),
        b("U07", "inference_temperature_applied_in_training", gas_sgd, "inference_temperature_applied_in_training",
          "EG", "the sharpening temperature of 0.01 meant for the probabilities reported to the engineers also "
          "dividing the training logits, a hundred times the gradient under momentum SGD"),
        b("U08", "transformer_serial_embedded", gas, "transformer_serial_embedded", "OF",
          "an embedding of the transformer's serial number added to the inputs, learnt on the training units' "
          "repeated samples and a shared default row for the new units scored"),
        b("U09", "clip_given_exhausted_parameter_generator", aft_clip, "clip_given_exhausted_parameter_generator",
          "EG", "`model.parameters()` kept in a variable for the clipping after the optimizer's constructor ran "
          "through that generator, so `clip_grad_norm_` clips nothing"),
        b("U10", "leaky_relu_given_inplace_flag", gas, "leaky_relu_given_inplace_flag", "SC",
          "`nn.LeakyReLU(True)` written as `nn.ReLU(True)` is, whose first argument is the negative slope: a slope "
          "of 1 turns the network linear", harmless=True),
        b("U11", "sigmoid_units_in_deep_rate_net", aft_deep, "sigmoid_units_in_deep_rate_net", "VG",
          "the six hidden layers given sigmoid units, as in the textbook network the code was adapted from"),
        b("U12", "window_offset_dropped", aft, "window_offset_dropped", "SC",
          "the observation window's log(days) offset left out in training, so the counts of 1-30 days are fitted "
          "as daily rates"),
        b("U13", "warmup_given_to_multiplicative_lr", eta_warm, "warmup_given_to_multiplicative_lr", "SC",
          "the warm-up factor min(1, (step + 1) / 25) given to `MultiplicativeLR` instead of `LambdaLR`, so the "
          "factors compound and the rate collapses to about 1e-10 of its value"),
        b("U14", "relu_ported_as_threshold_one", eta, "relu_ported_as_threshold_one", "DR",
          "the ReLUs of a model ported from Lua Torch written as `nn.Threshold(1, 0)`, zero below 1 instead of "
          "below 0, so most hidden units never fire"),
        b("U15", "voyage_mean_speed_in_features", eta, "voyage_mean_speed_in_features", "OF",
          "the voyage's mean speed made good, from the tracking data after arrival, left among the inputs; before "
          "departure only the design speed fills it"),
        b("U16", "arrival_dates_parsed_month_first", eta, "arrival_dates_parsed_month_first", "SC",
          "the arrival timestamps of the ports that write the day first parsed month first, so the voyages arriving "
          "on a day of 12 or less are off by whole months"),
        b("U17", "screen_y_axis_for_tablet", stk, "screen_y_axis_for_tablet", "SC",
          "the training tablets' moves read with the screen's y axis (down), while the strokes scored point up"),
        b("U18", "tablet_pixels_fed_for_moves", stk, "tablet_pixels_fed_for_moves", "VG",
          "the tablet's absolute pen positions in pixels (around 1000) fed to the GRU in place of the standardised "
          "moves, so its gates sit saturated and pass back almost no gradient"),
        b("U19", "saturated_spectra_kept", roa, "saturated_spectra_kept", "NaN",
          "the saturated, flat spectra kept, whose standard normal variate is 0/0"),
        b("U20", "second_instrument_wavelengths_descending", roa, "second_instrument_wavelengths_descending", "SC",
          "half the training spectra, from a second spectrometer that stores its channels with the wavelengths "
          "descending, left unflipped", harmless=True),
    ]  # fmt: skip
    return healthy + bugs
