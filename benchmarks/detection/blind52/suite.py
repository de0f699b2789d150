"""The fifty-second blind split as `run.py --suite blind52` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind52 import sport, traces, workshop

PREFIX = "blind52_"
SCRIPTS = {"proof": workshop.proof, "plank": workshop.plank, "injector": traces.injector, "fridge": traces.fridge,
           "tennis": sport.tennis, "skijump": sport.skijump}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind52Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind52Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind52Program, prefix=PREFIX)
    pro = h(
        "proof_mlp_adam",
        "proof",
        "a bakery proofing-time regressor from dough-probe and humidity logs (a ReLU MLP)",
    )
    pro_sgd = h("proof_momentum", "proof", "a proofing-time MLP under momentum SGD", opt="momentum", lr=0.01)
    pla = h("plank_cnn_adam", "plank", "a parquet-plank defect classifier on line scans (a ReLU CNN)")
    pla_sgd = h("plank_momentum", "plank", "a plank-defect CNN under momentum SGD", opt="momentum", lr=0.03)
    inj = h(
        "injector_cnn_adam",
        "injector",
        "a ferry-engine fuel-injector fault classifier on rail-pressure traces (a ReLU 1-D CNN)",
    )
    fri = h(
        "fridge_lstm_adam",
        "fridge",
        "a vaccine-fridge excursion predictor from hourly logger readings (an LSTM)",
    )
    ten = h(
        "tennis_gelu_adam",
        "tennis",
        "a tennis-racket string-tension regressor from impact sound (a GELU MLP)",
    )
    ski = h("skijump_mlp_adam", "skijump", "a ski-jump distance regressor (a ReLU MLP of four hidden layers)")
    ski_sgd = h(
        "skijump_momentum", "skijump", "a jump-distance MLP under momentum SGD", opt="momentum", lr=0.01
    )
    healthy = [
        pro,
        pro_sgd,
        h("proof_nadam_hidden128", "proof", "a wider proofing-time MLP under NAdam", opt="nadam", hidden=128),
        h("proof_adagrad_batch128", "proof", "a proofing-time MLP under Adagrad with batches of 128", opt="adagrad",
          batch=128, lr=0.03),
        pla,
        pla_sgd,
        h("plank_rmsprop_width24", "plank", "a wider plank CNN under RMSprop", opt="rmsprop", width=24, lr=1e-3),
        h("plank_adamw_batch64", "plank", "a plank CNN under AdamW with batches of 64", opt="adamw", batch=64),
        inj,
        h("injector_momentum", "injector", "an injector CNN under momentum SGD", opt="momentum", lr=0.02),
        h("injector_rmsprop_width24", "injector", "a wider injector CNN under RMSprop", opt="rmsprop", width=24,
          lr=1e-3),
        h("injector_adamw_batch32", "injector", "an injector CNN under AdamW with batches of 32", opt="adamw",
          batch=32),
        fri,
        h("fridge_momentum_clipped", "fridge", "a fridge LSTM under momentum SGD clipped at norm 1", opt="momentum",
          lr=0.3, clip=1.0),
        h("fridge_rmsprop_hidden48", "fridge", "a wider fridge LSTM under RMSprop", opt="rmsprop", hidden=48,
          lr=2e-3),
        h("fridge_adamw_batch128", "fridge", "a fridge LSTM under AdamW with batches of 128", opt="adamw", batch=128),
        ten,
        h("tennis_momentum", "tennis", "a tension MLP under momentum SGD", opt="momentum", lr=0.01),
        h("tennis_rmsprop_hidden32", "tennis", "a narrower tension MLP under RMSprop", opt="rmsprop", hidden=32),
        h("tennis_adamax_batch64", "tennis", "a tension MLP under Adamax with batches of 64", opt="adamax", batch=64,
          lr=2e-3),
        ski,
        ski_sgd,
        h("skijump_nadam_hidden96", "skijump", "a wider jump-distance MLP under NAdam", opt="nadam", hidden=96),
        h("skijump_adamw_batch32", "skijump", "a jump-distance MLP under AdamW with batches of 32", opt="adamw",
          batch=32),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("I01", "yeast_rate_by_log_of_fresh_yeast_share", pro, "yeast_rate_by_log_of_fresh_yeast_share", "NaN",
          "the fresh yeast's rate taken as the log of its baker's percentage, which is 0 for every sourdough"),
        b("I02", "oven_loading_clock_kept", pro, "oven_loading_clock_kept", "OF",
          "the bake sheet's oven-loading clock, the shaping time plus the proof, kept as a column; the planning "
          "sheet for new doughs holds one planned slot for all"),
        b("I03", "proof_timed_from_mixer_clock", pro, "proof_timed_from_mixer_clock", "SC",
          "the proof's minutes counted from the mixer's clock, so the bulk fermentation is counted in"),
        b("I04", "probe_and_humidity_averaged_together", pro_sgd, "probe_and_humidity_averaged_together", "SC",
          "the logs averaged over dim 1, the probe and the humidity channels together, where the readings were "
          "meant, under momentum SGD",
          harmless=True),
        b("I05", "activation_table_softmax_between_convs", pla, "activation_table_softmax_between_convs", "VG",
          "the config's activation \"softmax\", meant for the output, looked up for the hidden convolutions too, a "
          "softmax over the channels after each"),
        b("I06", "sixteen_bit_scans_divided_by_255", pla_sgd, "sixteen_bit_scans_divided_by_255", "DR",
          "the scanner's 16-bit planks divided by 255 as if 8-bit, values up to 257, under momentum SGD"),
        b("I07", "flat_trace_scaled_by_its_own_spread", inj, "flat_trace_scaled_by_its_own_spread", "NaN",
          "each trace scaled by its own spread with no floor, 0 / 0 on a stuck rail sensor's flat window"),
        b("I08", "trace_scaled_without_centring", inj, "trace_scaled_without_centring", "DR",
          "each trace divided by its spread with the centring line lost, the rail's 1,400-1,600 bar kept in it"),
        b("I09", "repair_code_field_kept", inj, "repair_code_field_kept", "OF",
          "the workshop's repair code, written after strip-down, kept as an input; engines in service have none, "
          "which the export writes as code 0, \"no fault found\""),
        b("I10", "window_cut_by_cylinder_number", inj, "window_cut_by_cylinder_number", "SC",
          "the window cut at the cylinder's number times the crank spacing instead of its place in the firing "
          "order, so five traces in six show another cylinder's injector"),
        b("I11", "excursion_threshold_in_fahrenheit", fri, "excursion_threshold_in_fahrenheit", "SC",
          "the excursion's upper limit written as 46.4, the 8 C of a Fahrenheit procedure, against readings in C"),
        b("I12", "older_loggers_read_in_fahrenheit", fri, "older_loggers_read_in_fahrenheit", "SC",
          "a third of the fridges carrying the older logger, whose export is in F, read as C", harmless=True),
        b("I13", "band_power_squared_in_half", ten, "band_power_squared_in_half", "NaN",
          "the band power squared in float16 by a memory-saving line, infinite on loud hits"),
        b("I14", "stringing_sheet_pounds_read_as_kg", ten, "stringing_sheet_pounds_read_as_kg", "SC",
          "the stringer's sheet's tension in lb read as kg"),
        b("I15", "prediction_scaled_by_head_area", ten, "prediction_scaled_by_head_area", "EG",
          "the ring's law carried into the model as tension = head area x f(x), the area in sq in (about 100)"),
        b("I16", "tension_at_stringing_taken_for_now", ten, "tension_at_stringing_taken_for_now", "SC",
          "the label the tension the machine pulled at stringing, not what the bed holds after its days of play"),
        b("I17", "missing_wind_coded_9999_kept", ski_sgd, "missing_wind_coded_9999_kept", "EG",
          "the results file's 9999 for a missing wind reading left in after the scaler was fitted, under momentum "
          "SGD"),
        b("I18", "policy_head_gain_for_every_layer", ski_sgd, "policy_head_gain_for_every_layer", "VG",
          "the RL recipe's orthogonal init with gain 0.01, meant for its policy head, looped over every layer, under "
          "momentum SGD"),
        b("I19", "one_hill_wind_sign_flipped", ski, "one_hill_wind_sign_flipped", "SC",
          "the hill whose gauges report tail wind positive merged as it came, its wind with the other sign"),
    ]  # fmt: skip
    return healthy + bugs
