"""The sixty-first blind split as `run.py --suite blind61` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind61 import crafts, field, machines

PREFIX = "blind61_"
SCRIPTS = {"roast": crafts.roast, "glaze": crafts.glaze, "rope": machines.rope, "tidal": machines.tidal,
           "mews": field.mews, "groups": field.groups}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind61Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind61Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind61Program, prefix=PREFIX)
    roa = h(
        "roast_gru_adam", "roast", "a coffee roastery's roast-colour predictor from the roaster's log (a GRU)"
    )
    roa_sgd = h("roast_momentum", "roast", "a roast-colour GRU under momentum SGD", opt="momentum", lr=0.02)
    gla = h(
        "glaze_mlp_adam",
        "glaze",
        "a pottery studio's glaze-surface classifier from the unity formula and the firing (a ReLU MLP)",
    )
    gla_sgd = h("glaze_momentum", "glaze", "a glaze MLP under momentum SGD", opt="momentum", lr=0.02)
    gla_ada = h("glaze_adagrad_batch64", "glaze", "a glaze MLP under Adagrad with batches of 64", opt="adagrad",
                batch=64, lr=0.03)  # fmt: skip
    rop = h(
        "rope_cnn_adam", "rope", "a ski area's haul-rope classifier on magnetic rope test traces (a 1-D CNN)"
    )
    rop_sgd = h("rope_momentum", "rope", "a haul-rope CNN under momentum SGD", opt="momentum", lr=0.02)
    tid = h(
        "tidal_encoder_adam",
        "tidal",
        "a tidal-stream turbine's next-hour power forecaster (a small transformer encoder)",
    )
    tid_sgd = h(
        "tidal_momentum", "tidal", "a tidal power encoder under momentum SGD", opt="momentum", lr=0.02
    )
    mew = h("mews_lstm_adam", "mews", "a falconry centre's next-morning weight model for its hawks (an LSTM)")
    mew_sgd = h("mews_momentum", "mews", "a hawk-weight LSTM under momentum SGD", opt="momentum", lr=0.05)
    gro = h(
        "groups_cnn_adam",
        "groups",
        "an archery club's form-fault classifier on practice rounds' hit maps (a 2-D CNN)",
    )
    healthy = [
        roa,
        roa_sgd,
        h("roast_adamw_hidden32", "roast", "a wider roast-colour GRU under AdamW", opt="adamw", hidden=32),
        h("roast_rmsprop_batch64", "roast", "a roast-colour GRU under RMSprop with batches of 64", opt="rmsprop",
          batch=64, lr=1e-3),
        gla,
        gla_sgd,
        gla_ada,
        h("glaze_nadam_hidden128", "glaze", "a wider glaze MLP under NAdam", opt="nadam", hidden=128),
        rop,
        rop_sgd,
        h("rope_radam_width16", "rope", "a wider haul-rope CNN under RAdam", opt="radam", width=16),
        h("rope_adamax_batch64", "rope", "a haul-rope CNN under Adamax with batches of 64", opt="adamax", batch=64,
          lr=4e-3),
        tid,
        tid_sgd,
        h("tidal_adamw_width24", "tidal", "a wider tidal power encoder under AdamW", opt="adamw", width=24),
        h("tidal_nadam_batch64", "tidal", "a tidal power encoder under NAdam with batches of 64", opt="nadam",
          batch=64),
        mew,
        mew_sgd,
        h("mews_rmsprop_hidden32", "mews", "a wider hawk-weight LSTM under RMSprop", opt="rmsprop", hidden=32,
          lr=3e-3),
        h("mews_adamax_batch64", "mews", "a hawk-weight LSTM under Adamax with batches of 64", opt="adamax",
          batch=64, lr=2e-2),
        gro,
        h("groups_momentum", "groups", "a form-fault CNN under momentum SGD", opt="momentum", lr=0.05),
        h("groups_adamw_width12", "groups", "a wider form-fault CNN under AdamW", opt="adamw", width=12),
        h("groups_adagrad_batch64", "groups", "a form-fault CNN under Adagrad with batches of 64", opt="adagrad",
          batch=64, lr=0.03),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("W01", "log_development_time_of_unmarked_first_crack", roa, "log_development_time_of_unmarked_first_crack",
          "NaN", "the development time after first crack on a log scale, taken from the export whose first crack is "
          "the drop time for the fifth of the roasts where nobody marked it: log(0)"),
        b("W02", "agtron_whole_bean_read_as_ground", roa, "agtron_whole_bean_read_as_ground", "SC",
          "half the batches' colours measured on whole beans, which read darker, and filed as ground readings"),
        b("W03", "post_roast_weight_loss_as_input", roa, "post_roast_weight_loss_as_input", "OF",
          "the weight loss from the scale after the roast kept as an input; the other roastery's live roasts have no "
          "weight yet and get the training mean"),
        b("W04", "log_exported_in_phase_view", roa_sgd, "log_exported_in_phase_view", "SC",
          "the training logs exported from the roasting software's phase view, whose points run from the charge to "
          "the first crack, the development and the drop cut off, under momentum SGD"),
        b("W05", "cone_06_read_as_cone_6", gla, "cone_06_read_as_cone_6", "SC",
          "the firing's cone stored as a number by the studio's spreadsheet, so the earthenware firings at cone 06 "
          "are read as stoneware's cone 6"),
        b("W06", "unity_over_fluxes_missing_from_materials", gla, "unity_over_fluxes_missing_from_materials", "NaN",
          "the unity formula computed with the older materials table, which has no Gerstley borate nor frit 3134, "
          "so a liner glaze's fluxes sum to 0 and every oxide is 0 / 0"),
        b("W07", "oxides_fed_as_floored_logs", gla_sgd, "oxides_fed_as_floored_logs", "DR",
          "the unity formula's oxides fed as their logs, floored at 1e-9 for the absent ones (about -21), without "
          "standardising, under momentum SGD"),
        b("W08", "adagrad_third_argument_taken_for_accumulator", gla_ada,
          "adagrad_third_argument_taken_for_accumulator", "SC",
          "`Adagrad(params, lr, 0.1)` written for an initial accumulator of 0.1; the third argument is the rate's "
          "decay, which divides the rate by 1 + 0.1 t"),
        b("W09", "traces_resampled_with_older_encoder_wheel", rop, "traces_resampled_with_older_encoder_wheel", "SC",
          "the training traces resampled to the rope's length with the older head's encoder wheel, every length "
          "along the rope 1.5 times too short, while the held-out traces come from the new head"),
        b("W10", "summed_loss_over_training_set_size", rop_sgd, "summed_loss_over_training_set_size", "VG",
          "the batch's summed cross-entropy divided by the training set's 1000 stretches, an epoch average's "
          "formula, under momentum SGD"),
        b("W11", "chainage_kept_as_channel", rop, "chainage_kept_as_channel", "OF",
          "the stretch's chainage kept as a channel while this rope's findings sit where its inspections keep "
          "finding them; another lift's rope has its findings anywhere"),
        b("W12", "power_coefficient_at_slack_water", tid, "power_coefficient_at_slack_water", "NaN",
          "the power coefficient P / (0.5 rho A v^3) added as an input, 0 / 0 at slack water where the ADCP reads 0"),
        b("W13", "power_target_left_in_kilowatts", tid_sgd, "power_target_left_in_kilowatts", "EG",
          "the SCADA's power in kW taken as the target as it is, without the inputs' standardisation, under "
          "momentum SGD"),
        b("W14", "direction_averaged_across_north", tid, "direction_averaged_across_north", "SC",
          "each record's flow direction the plain average of its 1 Hz samples in degrees, so a flood running about "
          "north averages to anywhere between", harmless=True),
        b("W15", "quail_logged_by_the_count", mew, "quail_logged_by_the_count", "SC",
          "one falconer's book, a third of the birds, writing the quail fed by the count instead of in grams"),
        b("W16", "change_put_back_in_grams_in_forward", mew_sgd, "change_put_back_in_grams_in_forward", "EG",
          "the model's output put back in grams by the target's mean and spread inside forward, for the weighing "
          "book, and the MSE taken in grams under momentum SGD"),
        b("W17", "adam_epsilon_of_inception_recipe", mew, "adam_epsilon_of_inception_recipe", "VG",
          "Adam's epsilon set to 1.0, the TensorFlow Inception recipe's, so each step is about the rate times the "
          "raw gradient"),
        b("W18", "old_app_fault_codes_read_in_new_order", gro, "old_app_fault_codes_read_in_new_order", "SC",
          "the old scoring app's rounds (two in five) keeping its fault codes, which number creeping before the "
          "dropped bow arm, read in the new app's order"),
        b("W19", "face_size_kept_as_channel", gro, "face_size_kept_as_channel", "OF",
          "the face size kept as a channel from a club whose indoor evenings were its plucking clinic's; another "
          "club's indoor rounds hold every fault"),
    ]  # fmt: skip
    return healthy + bugs
