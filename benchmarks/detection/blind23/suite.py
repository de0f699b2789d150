"""The twenty-third blind split as `run.py --suite blind23` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind23 import clinic, outcomes, roads

PREFIX = "blind23_"
SCRIPTS = {"glucose": clinic.glucose, "genes": clinic.genes, "turbine": outcomes.turbine,
           "tictactoe": outcomes.tictactoe, "signs": roads.signs, "fares": roads.fares}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind23Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind23Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind23Program, prefix=PREFIX)
    glu = h(
        "glucose_gru_adam", "glucose", "a glucose forecaster (a GRU over monitor readings, insulin and meals)"
    )
    glu_wide = h(
        "glucose_adamw_hidden64", "glucose", "a wider glucose GRU under AdamW", opt="adamw", hidden=64
    )
    gen = h(
        "genes_mlp_adamw",
        "genes",
        "a tumour-subtype classifier on gene-expression counts from two labs (an MLP)",
    )
    far = h(
        "fares_mlp_adam",
        "fares",
        "a taxi-fare regressor on trip records (an MLP with hour and weekday embeddings)",
    )
    far_sgd = h("fares_momentum", "fares", "a fare MLP under momentum SGD", opt="momentum", lr=0.02)
    tic = h(
        "tictactoe_mlp_adam", "tictactoe", "a tic-tac-toe position evaluator (an MLP over the mover's planes)"
    )
    tur = h("turbine_mlp_adam", "turbine", "a wind-turbine power-curve model on SCADA records (a tanh MLP)")
    sig = h("signs_cnn_adam", "signs", "a traffic-sign classifier on 16x16 colour crops (a CNN)")
    sig_cycle = h("signs_momentum_one_cycle", "signs", "a sign CNN under momentum SGD on a one-cycle schedule",
                  opt="momentum", lr=0.1, one_cycle=True)  # fmt: skip
    sig_acc = h("signs_adamw_accum4", "signs", "a sign CNN under AdamW accumulating four batches a step",
                opt="adamw", accum=4)  # fmt: skip
    healthy = [
        glu,
        glu_wide,
        h("glucose_rmsprop_clipped", "glucose", "a glucose GRU under RMSprop clipped at norm 1", opt="rmsprop",
          lr=1e-3, clip=1.0),
        h("glucose_nadam_batch128", "glucose", "a glucose GRU under NAdam with batches of 128", opt="nadam",
          batch=128),
        gen,
        h("genes_adam_hidden256", "genes", "a wider subtype MLP under Adam", opt="adam", hidden=256),
        h("genes_momentum", "genes", "a subtype MLP under momentum SGD", opt="momentum", lr=0.02),
        h("genes_rmsprop_batch16", "genes", "a subtype MLP under RMSprop with batches of 16", opt="rmsprop",
          lr=5e-4, batch=16),
        far,
        far_sgd,
        h("fares_adamw_hidden128", "fares", "a wider fare MLP under AdamW", opt="adamw", hidden=128),
        h("fares_adamax_batch256", "fares", "a fare MLP under Adamax with batches of 256", opt="adamax", lr=4e-3,
          batch=256),
        tur,
        h("turbine_momentum", "turbine", "a power-curve MLP under momentum SGD", opt="momentum", lr=0.02),
        h("turbine_adamw_hidden32", "turbine", "a narrower power-curve MLP under AdamW", opt="adamw", hidden=32),
        h("turbine_adamax_batch256", "turbine", "a power-curve MLP under Adamax with batches of 256", opt="adamax",
          lr=5e-3, batch=256),
        sig,
        sig_cycle,
        sig_acc,
        h("signs_nadam_width24", "signs", "a wider sign CNN under NAdam", opt="nadam", width=24),
        tic,
        h("tictactoe_adamw_hidden256", "tictactoe", "a wider position evaluator under AdamW", opt="adamw",
          hidden=256),
        h("tictactoe_rmsprop_batch32", "tictactoe", "a position evaluator under RMSprop with batches of 32",
          opt="rmsprop", lr=1e-3, batch=32),
        h("tictactoe_nadam", "tictactoe", "a position evaluator under NAdam", opt="nadam"),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("L01", "gaps_filled_after_log", glu, "gaps_filled_after_log", "NaN",
          "the monitor's lost readings (exported as 0) filled by the last good reading after the log was taken, so "
          "the fill finds no zeros and their log of 0 stays"),
        b("L02", "glucose_exported_in_mmol", glu, "glucose_exported_in_mmol", "DR",
          "the clinic's monitors exporting mmol/L while the log-standardisation expects mg/dL, so every reading "
          "enters the GRU about 10.7 below 0 and its gates sit at their limits"),
        b("L03", "horizon_given_in_minutes_as_samples", glu, "horizon_given_in_minutes_as_samples", "SC",
          "the forecast horizon of 30 minutes passed where the window function takes samples, so the model learns "
          "the reading 150 minutes ahead"),
        b("L04", "covariates_sliced_at_target_time", glu, "covariates_sliced_at_target_time", "OF",
          "the training windows' insulin and meal channels sliced up to the target's time instead of the window's "
          "end, so the next half hour's meals and boluses leak into training and are missing when forecasting",
          harmless=True),
        b("L05", "lab_offsets_not_removed", gen, "lab_offsets_not_removed", "OF",
          "each lab's mean expression profile not removed, so the classifier learns the two labs' protocol shifts, "
          "which go with their patients' subtypes, and meets a new shift at the third lab"),
        b("L06", "failed_library_kept_in_cpm", gen, "failed_library_kept_in_cpm", "NaN",
          "the quality filter on library size skipped, so a failed library of zero reads enters the counts per "
          "million as 0/0"),
        b("L07", "cpm_taken_over_patients", gen, "cpm_taken_over_patients", "SC",
          "the counts per million summed over axis 0, each count divided by its gene's total over the patients "
          "instead of by the patient's library size, so the sequencing depth is never removed"),
        b("L08", "curtailed_records_kept", tur, "curtailed_records_kept", "SC",
          "the records curtailed by the grid operator (capped at 30% of rated power on windy days) kept, so the "
          "curve learnt sags above 9 m/s"),
        b("L09", "density_from_celsius", tur, "density_from_celsius", "NaN",
          "the air density computed as p / (R T) with the temperature in degrees Celsius, infinite at 0 C and "
          "negative below"),
        b("L10", "features_multiplied_by_spread", tur, "features_multiplied_by_spread", "DR",
          "the standardisation written (x - centre) * spread instead of / spread, so the wind speed reaches about "
          "+-80 and the tanh units it feeds sit at +-1", harmless=True),
        b("L11", "shift_rolled_over_batch_axis", sig, "shift_rolled_over_batch_axis", "SC",
          "the shift augmentation's `torch.roll` given the dims (0, 2) instead of (2, 3), so two batches in three "
          "hand each crop its neighbour's label"),
        b("L12", "accumulation_sized_for_paper_batch", sig_acc, "accumulation_sized_for_paper_batch", "VG",
          "the accumulation steps computed for the paper's batch of 4096 (128 mini-batches), so the optimizer "
          "steps twice in the run"),
        b("L13", "one_cycle_div_factor_inverted", sig_cycle, "one_cycle_div_factor_inverted", "EG",
          "the one-cycle schedule's `div_factor` given as 1/25 instead of 25, so momentum SGD starts at 25 times "
          "the peak rate of 0.1 and anneals from there"),
        b("L14", "haversine_fed_degrees", far, "haversine_fed_degrees", "SC",
          "the training trips' haversine fed the coordinates in degrees without converting them to radians, so the "
          "distance feature is a distorted function of the trip"),
        b("L15", "earth_radius_in_metres", far_sgd, "earth_radius_in_metres", "EG",
          "the haversine helper copied from a script working in metres (radius 6,371,000), so the distance feature "
          "is a thousand times its scale under momentum SGD"),
        b("L16", "optimizer_step_under_validation", far, "optimizer_step_under_validation", "VG",
          "`optimizer.step()` indented one level too deep, into the every-25-steps validation block, so the model "
          "takes 12 steps in the run"),
        b("L17", "plateau_scheduler_fed_batch_loss", far, "plateau_scheduler_fed_batch_loss", "VG",
          "`ReduceLROnPlateau` stepped every step on the training batch's noisy loss instead of the check fold's "
          "loss every 25 steps, so it halves the rate every few steps towards 0", effect_step=3),
        b("L18", "outcomes_kept_from_x_side", tic, "outcomes_kept_from_x_side", "SC",
          "the outcome table written from X's side while the boards are encoded from the mover's, so every position "
          "with O to move is trained on the opposite outcome"),
        b("L19", "symmetry_augmentation_left_out", tic, "symmetry_augmentation_left_out", "OF",
          "the random symmetry of the board left out, so the evaluator fits the 1506 training positions as they are "
          "and not their eight equivalent views"),
        b("L20", "target_logged_base_ten", glu_wide, "target_logged_base_ten", "SC",
          "the training target's log taken in base ten by its helper while the features take the natural log, so "
          "the standardised target sits about 10 below the readings it continues"),
    ]  # fmt: skip
    return healthy + bugs
