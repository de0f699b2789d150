"""The forty-sixth blind split as `run.py --suite blind46` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind46 import audience, farms, machines

PREFIX = "blind46_"
SCRIPTS = {"frost": farms.frost, "kelp": farms.kelp, "door": machines.door, "spin": machines.spin,
           "podcast": audience.podcast, "pool": audience.pool}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind46Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind46Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind46Program, prefix=PREFIX)
    fro = h("frost_mlp_adam", "frost", "a cranberry-bog frost-protection trigger classifier (a ReLU MLP)")
    kel = h("kelp_tanh_adam", "kelp", "a kelp-farm growth-rate regressor (a tanh MLP of four hidden layers)")
    dor = h("door_cnn_adam", "door", "an elevator door-fault classifier on motor-current windows (a 1-D CNN)")
    dor_sgd = h("door_momentum", "door", "a door-fault CNN under momentum SGD", opt="momentum", lr=0.01)
    spn = h(
        "spin_cnn_adam", "spin", "a washing machine's unbalance detector on drum-speed traces (a 1-D BN CNN)"
    )
    pod = h(
        "podcast_gru_adam", "podcast", "a podcast listener drop-off forecaster (a GRU over the first minutes)"
    )
    pod_sgd = h("podcast_momentum", "podcast", "a drop-off GRU under momentum SGD", opt="momentum", lr=0.05)
    poo_sgd = h("pool_momentum", "pool", "a chlorine-demand MLP under momentum SGD", opt="momentum", lr=0.02)
    poo = h(
        "pool_mlp_adam", "pool", "a public pool's chlorine-demand regressor (a ReLU MLP, cosine schedule)"
    )
    healthy = [
        fro,
        h("frost_momentum", "frost", "a frost MLP under momentum SGD", opt="momentum", lr=0.02),
        h("frost_adamw_hidden128", "frost", "a wider frost MLP under AdamW", opt="adamw", hidden=128),
        h("frost_rmsprop_batch32", "frost", "a frost MLP under RMSprop with batches of 32", opt="rmsprop", batch=32),
        kel,
        h("kelp_momentum", "kelp", "a growth tanh MLP under momentum SGD", opt="momentum", lr=0.02),
        h("kelp_nadam_hidden32", "kelp", "a narrower growth MLP under NAdam", opt="nadam", hidden=32),
        h("kelp_adamax_batch128", "kelp", "a growth MLP under Adamax with batches of 128", opt="adamax", lr=3e-3,
          batch=128),
        dor,
        dor_sgd,
        h("door_rmsprop_width16", "door", "a narrower door CNN under RMSprop", opt="rmsprop", width=16),
        h("door_nadam_batch32", "door", "a door CNN under NAdam with batches of 32", opt="nadam", batch=32),
        spn,
        h("spin_momentum", "spin", "an unbalance CNN under momentum SGD", opt="momentum", lr=0.02),
        h("spin_adamw_width32", "spin", "a wider unbalance CNN under AdamW", opt="adamw", width=32),
        h("spin_adagrad_batch128", "spin", "an unbalance CNN under Adagrad with batches of 128", opt="adagrad",
          lr=0.02, batch=128),
        pod,
        pod_sgd,
        h("podcast_rmsprop_hidden64", "podcast", "a wider drop-off GRU under RMSprop", opt="rmsprop", lr=1e-3,
          hidden=64),
        h("podcast_adamw_batch32", "podcast", "a drop-off GRU under AdamW with batches of 32", opt="adamw", batch=32),
        poo,
        poo_sgd,
        h("pool_nadam_hidden128", "pool", "a wider demand MLP under NAdam", opt="nadam", hidden=128),
        h("pool_adagrad_batch128", "pool", "a demand MLP under Adagrad with batches of 128", opt="adagrad",
          lr=0.03, batch=128),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("K01", "cooling_rate_over_single_evening_reading", fro, "cooling_rate_over_single_evening_reading", "NaN",
          "the evening cooling rate divided by the hours between the 18:00 and 21:00 readings, 0 for the bogs whose "
          "loggers report once and copy the 18:00 reading, so the rate is 0/0"),
        b("K02", "sprinkler_run_hours_kept", fro, "sprinkler_run_hours_kept", "OF",
          "the night's sprinkler run hours kept among the columns, which growers run on the frost nights, while the "
          "nights to alert on come before any sprinkler has run", harmless=True),
        b("K03", "frost_labelled_at_screen_height", fro, "frost_labelled_at_screen_height", "SC",
          "the frost label taken from the weather station's screen minimum below 0 C instead of the canopy minimum "
          "below the buds' hardiness"),
        b("K04", "scaled_tanh_constants_inverted", kel, "scaled_tanh_constants_inverted", "VG",
          "LeCun's scaled tanh 1.7159 tanh(2x/3) written 2/3 tanh(x/1.7159) between the four hidden layers, a slope of "
          "0.39 at most at each, so the signal back to the first layers shrinks layer by layer"),
        b("K05", "batches_one_longline_each", kel, "batches_one_longline_each", "OL",
          "a loader grouped by longline in the survey sheets' order, each batch the twelve surveys of one line"),
        b("K06", "growth_over_days_since_deployment", kel, "growth_over_days_since_deployment", "SC",
          "the growth rate worked out over the days since the line was deployed instead of since the last survey"),
        b("K07", "head_optimizer_built_over_all_parameters", poo_sgd, "head_optimizer_built_over_all_parameters",
          "EG", "a second optimizer meant to train the output layer at ten times the rate (momentum SGD at 0.2) "
          "built over `model.parameters()`, so every weight takes both optimizers' steps", harmless=True),
        b("K08", "cycles_windowed_with_hop_of_one", dor, "cycles_windowed_with_hop_of_one", "OF",
          "the training windows cut with a hop of one sample from 40 logged strokes instead of one window from each "
          "of 1280 strokes"),
        b("K09", "no_start_cycles_logged_as_nan_kept", dor, "no_start_cycles_logged_as_nan_kept", "NaN",
          "the strokes where the drive never started kept with the controller's NaN currents, not filled with 0 A"),
        b("K10", "stepped_every_micro_batch_zeroed_every_fourth", dor_sgd, "stepped_every_micro_batch_zeroed_every_fourth",
          "EG", "gradient accumulation over four micro-batches written with `opt.step()` after every backward and "
          "`zero_grad` every fourth, so each step applies the sum of up to four batches' gradients, under momentum "
          "SGD"),
        b("K11", "unbalance_limit_applied_in_kilograms", spn, "unbalance_limit_applied_in_kilograms", "SC",
          "the service manual's 0.3 kg unbalance limit compared with the log's grams, so every load with any "
          "unbalance is labelled over the limit"),
        b("K12", "windows_cut_from_tumble_phase", spn, "windows_cut_from_tumble_phase", "SC",
          "the 128-sample windows cut from the cycle's start (the tumble at 50 rpm and the ramp's first third) "
          "instead of the ramp's second half, where the ripple grows with the speed"),
        b("K13", "log_retention_of_ended_trailers", pod, "log_retention_of_ended_trailers", "NaN",
          "the early retention's log taken without the offset, minus infinity for the trailers' minutes past their "
          "end"),
        b("K14", "head_layers_repeated_by_list_multiplication", pod, "head_layers_repeated_by_list_multiplication",
          "VG", "the head's four tanh layers written `[nn.Linear(h, h), nn.Tanh()] * 4`, the same Linear object "
          "four times, one small weight matrix chained through four tanh layers", harmless=True),
        b("K15", "retention_over_downloads", pod, "retention_over_downloads", "SC",
          "the later retention taken from the host's export, listeners over downloads rather than over starts, "
          "a ratio that differs by show"),
        b("K16", "no_start_filled_with_logger_sentinel", dor_sgd, "no_start_filled_with_logger_sentinel", "DR",
          "the strokes where the drive never started read from the logger's raw export, 65535 (0xFFFF) for its "
          "missing readings, fed as amps under momentum SGD"),
        b("K17", "rows_filtered_to_probe_pools", poo, "rows_filtered_to_probe_pools", "OF",
          "the notebook's filter for the pH-probe study left on, so the model is fitted to the two pools that have "
          "a probe"),
        b("K18", "demand_from_pump_strokes_at_one_ml", poo, "demand_from_pump_strokes_at_one_ml", "SC",
          "the demand worked back from the dosing pump's stroke count taking every pump to give 1 ml a stroke "
          "(they give 0.5 to 3)"),
        b("K19", "dose_log_joined_a_day_late", poo, "dose_log_joined_a_day_late", "SC",
          "the dosing log, which stamps each day's chlorine the morning after, joined on its date, so each day's "
          "readings are trained on the next day's demand"),
        b("K20", "cosine_floor_typed_as_one", poo, "cosine_floor_typed_as_one", "DR",
          "the cosine schedule's `eta_min` typed 1 (the exponent of 1e-5 lost), so the rate climbs from 2e-3 to 1 "
          "over the run"),
    ]  # fmt: skip
    return healthy + bugs
