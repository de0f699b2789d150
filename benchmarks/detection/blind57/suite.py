"""The fifty-seventh blind split as `run.py --suite blind57` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind57 import craft, mountain, rescue

PREFIX = "blind57_"
SCRIPTS = {"flashover": rescue.flashover, "potency": rescue.potency, "windhold": mountain.windhold,
           "footprints": mountain.footprints, "family": craft.family, "joints": craft.joints}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind57Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind57Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind57Program, prefix=PREFIX)
    fla = h(
        "flashover_cnn_adam",
        "flashover",
        "a flashover warning from a compartment's thermocouple tree (a 1-D CNN)",
    )
    fla_sgd = h(
        "flashover_momentum", "flashover", "a flashover CNN under momentum SGD", opt="momentum", lr=0.02
    )
    pot = h(
        "potency_mlp_adam",
        "potency",
        "a compounded suspension's potency-after-storage regressor (a ReLU MLP over embedded drug and vehicle)",
    )
    pot_sgd = h("potency_momentum", "potency", "a potency MLP under momentum SGD", opt="momentum", lr=0.01)
    win_sgd = h(
        "windhold_momentum", "windhold", "a wind-hold GRU under momentum SGD", opt="momentum", lr=0.05
    )
    win = h(
        "windhold_gru_adam", "windhold", "a chairlift's wind-hold forecaster (a GRU over ten-minute records)"
    )
    foo = h(
        "footprints_fcn_adam", "footprints", "a building-footprint segmenter on aerial tiles (a small FCN)"
    )
    fam = h(
        "family_encoder_adam",
        "family",
        "a perfume house's odour-family classifier (a small transformer encoder)",
    )
    fam_sgd = h(
        "family_momentum", "family", "an odour-family encoder under momentum SGD", opt="momentum", lr=0.02
    )
    joi = h("joints_mlp_adam", "joints", "a glued joint's breaking-load regressor (a ReLU MLP)")
    healthy = [
        fla,
        fla_sgd,
        h("flashover_adamw_width24", "flashover", "a wider flashover CNN under AdamW", opt="adamw", width=24),
        h("flashover_nadam_batch32", "flashover", "a flashover CNN under NAdam with batches of 32", opt="nadam",
          batch=32),
        pot,
        pot_sgd,
        h("potency_rmsprop_hidden128", "potency", "a wider potency MLP under RMSprop", opt="rmsprop", hidden=128,
          lr=1e-3),
        h("potency_adamax_batch128", "potency", "a potency MLP under Adamax with batches of 128", opt="adamax",
          batch=128, lr=4e-3),
        win,
        win_sgd,
        h("windhold_rmsprop_hidden32", "windhold", "a wider wind-hold GRU under RMSprop", opt="rmsprop", hidden=32,
          lr=2e-3),
        h("windhold_nadam_batch128", "windhold", "a wind-hold GRU under NAdam with batches of 128", opt="nadam",
          batch=128),
        foo,
        h("footprints_momentum", "footprints", "a footprint FCN under momentum SGD", opt="momentum", lr=0.05),
        h("footprints_adamw_width16", "footprints", "a wider footprint FCN under AdamW", opt="adamw", width=16),
        h("footprints_rmsprop_batch32", "footprints", "a footprint FCN under RMSprop with batches of 32",
          opt="rmsprop", batch=32, lr=1e-3),
        fam,
        fam_sgd,
        h("family_adamw_width32", "family", "a wider odour-family encoder under AdamW", opt="adamw", width=32),
        h("family_radam_batch16", "family", "an odour-family encoder under RAdam with batches of 16", opt="radam",
          batch=16),
        joi,
        h("joints_momentum", "joints", "a joint-strength MLP under momentum SGD", opt="momentum", lr=0.01),
        h("joints_adagrad_hidden128", "joints", "a wider joint-strength MLP under Adagrad", opt="adagrad",
          hidden=128, lr=0.02),
        h("joints_radam_batch32", "joints", "a joint-strength MLP under RAdam with batches of 32", opt="radam",
          batch=32),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("Y01", "rate_over_logged_timestamps", fla, "rate_over_logged_timestamps", "NaN",
          "each thermocouple's rate of rise divided by the differences of the logger's timestamps, written in whole "
          "seconds and now and then repeated, instead of by the logger's 2 s period"),
        b("Y02", "clip_norm_typed_5e_minus_4", fla_sgd, "clip_norm_typed_5e_minus_4", "VG",
          "the gradient clip's max_norm typed 5e-4 for 5, under momentum SGD"),
        b("Y03", "ambient_from_last_sample", fla, "ambient_from_last_sample", "SC",
          "the window's ambient read at index -1, its newest sample, instead of the lowest thermocouple's first",
          harmless=True),
        b("Y04", "log_ratio_of_undetected_assay", pot, "log_ratio_of_undetected_assay", "NaN",
          "the log of assay over initial concentration taken with the assays under the quantitation limit written "
          "0 (not detected) on the sheet, instead of the protocol's LOQ / 2"),
        b("Y05", "percent_label_claim_over_mg_per_ml", pot, "percent_label_claim_over_mg_per_ml", "SC",
          "the second lab's assays, reported in per cent of the label claim, divided by the initial concentration in "
          "mg/ml as the first lab's are"),
        b("Y06", "momentum_passed_as_lr", pot_sgd, "momentum_passed_as_lr", "DR",
          "torch.optim.SGD(params, 0.9) written for a momentum of 0.9, whose second positional argument is the "
          "learning rate"),
        b("Y07", "cubic_polynomial_features", pot, "cubic_polynomial_features", "OF",
          "the numeric columns expanded by a degree-3 polynomial step kept from an exploratory notebook (83 columns "
          "for 700 rows)"),
        b("Y08", "ph_fed_as_hydrogen_ion_concentration", pot, "ph_fed_as_hydrogen_ion_concentration", "SC",
          "the pH column turned into [H+] = 10 ** -pH before the scaler, a column of a few huge values and many "
          "near zero"),
        b("Y09", "gust_resampled_with_mean", win, "gust_resampled_with_mean", "SC",
          "the next 30 minutes' gust target resampled with the mean, as the other columns are, instead of the max"),
        b("Y10", "gust_factor_over_calm_speed", win, "gust_factor_over_calm_speed", "NaN",
          "the gust factor taken as gust / mean speed, 0 / 0 for a calm record whose cups stalled"),
        b("Y11", "target_read_from_speed_column", win, "target_read_from_speed_column", "SC",
          "the target read from the one-minute table's column 0, the mean speed, instead of column 1, the gust"),
        b("Y12", "std_mean_unpacked_as_mean_std", win, "std_mean_unpacked_as_mean_std", "SC",
          "torch.std_mean's result, (std, mean), unpacked as mean, std for the inputs' scaler"),
        b("Y13", "mask_rasterised_bottom_up", foo, "mask_rasterised_bottom_up", "SC",
          "the training footprints rasterised with the row origin at the bottom (a positive y pixel size), each mask "
          "upside down against its tile"),
        b("Y14", "softmax_over_single_logit", foo, "softmax_over_single_logit", "VG",
          "the multi-class segmenter's Softmax(dim=1) kept on the one logit channel and BCE taken on its output, "
          "which is 1 everywhere"),
        b("Y15", "formula_cut_to_four_materials", fam, "formula_cut_to_four_materials", "SC",
          "the collate function's max length of 4 kept from a debugging run, each formula cut to its first four "
          "materials in the house's code order"),
        b("Y16", "contrastive_temperature_left_on_logits", fam_sgd, "contrastive_temperature_left_on_logits", "EG",
          "the 0.02 temperature of the house's contrastive pretraining left dividing the classifier's logits, under "
          "momentum SGD"),
        b("Y17", "position_added_to_unordered_formula", fam, "position_added_to_unordered_formula", "OF",
          "a learned position added to each material's slot, as to a sentence's tokens, in a formula listed by "
          "material code", harmless=True),
        b("Y18", "hardwood_thickness_in_quarters", joi, "hardwood_thickness_in_quarters", "SC",
          "the hardwood stock's thickness written in quarters (4/4 for an inch) in the mm column"),
        b("Y19", "cure_minutes_logged_as_hours", joi, "cure_minutes_logged_as_hours", "SC",
          "the new test sheet's clamp-to-test time in minutes read as the hours column, on half the training rows"),
    ]  # fmt: skip
    return healthy + bugs
