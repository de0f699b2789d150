"""The twenty-seventh blind split as `run.py --suite blind27` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind27 import audio, fields, outcomes

PREFIX = "blind27_"
SCRIPTS = {"vad": audio.vad, "songs": audio.songs, "species": fields.species, "wine": fields.wine,
           "football": outcomes.football, "salary": outcomes.salary}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind27Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind27Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind27Program, prefix=PREFIX)
    vad = h("vad_mlp_adam", "vad", "a voice-activity detector on audio frames (an MLP over band log-powers)")
    vad_deep = h("vad_deep_tanh_momentum", "vad", "a five-layer tanh frame classifier under momentum SGD",
                 opt="momentum", lr=0.05, depth=5, hidden=64, tanh=True)  # fmt: skip
    song = h("songs_mlp_adam", "songs", "a song-popularity regressor on audio descriptors (an MLP)")
    song_warm = h("songs_momentum_warmup", "songs", "a popularity MLP under momentum SGD warmed up over 25 steps",
                  opt="momentum", lr=0.02, warmup=True)  # fmt: skip
    spe = h(
        "species_mlp_adam", "species", "a species-distribution model from environmental covariates (an MLP)"
    )
    spe_w = h("species_weighted_momentum", "species", "a species-distribution MLP under momentum SGD, the sites "
              "weighted by their inverse survey chance", opt="momentum", lr=0.1, weighted=True)  # fmt: skip
    spe_deep = h("species_deep_momentum", "species", "a six-layer species-distribution MLP under momentum SGD",
                 opt="momentum", lr=0.05, depth=6)  # fmt: skip
    win = h("wine_mlp_adam", "wine", "a wine-quality regressor on physicochemical measurements (an MLP)")
    win_sgd = h("wine_momentum", "wine", "a wine-quality MLP under momentum SGD", opt="momentum", lr=0.01)
    foot = h(
        "football_mlp_adam", "football", "a football-match outcome model (team embeddings and form, an MLP)"
    )
    foot_cyc = h("football_momentum_cyclic", "football", "a match-outcome MLP under momentum SGD on a triangular "
                 "cyclic rate", opt="momentum", lr=0.1, cyclic=True)  # fmt: skip
    sal = h(
        "salary_bag_adam", "salary", "a job-posting salary regressor on text features (a bag of embeddings)"
    )
    sal_sgd = h("salary_momentum", "salary", "a salary regressor under momentum SGD", opt="momentum", lr=0.2)
    healthy = [
        vad,
        vad_deep,
        h("vad_rmsprop_cosine", "vad", "a frame classifier under RMSprop decayed by a cosine", opt="rmsprop",
          lr=5e-4, cosine=True),
        h("vad_adamw_hidden64_batch32", "vad", "a narrower frame classifier under AdamW with batches of 32",
          opt="adamw", hidden=64, batch=32),
        song,
        song_warm,
        h("songs_nadam_batch256", "songs", "a popularity MLP under NAdam with batches of 256", opt="nadam",
          batch=256, lr=2e-3),
        h("songs_adagrad_hidden128", "songs", "a wider popularity MLP under Adagrad", opt="adagrad", hidden=128,
          lr=0.03),
        spe,
        spe_w,
        spe_deep,
        h("species_radam_batch128", "species", "a species-distribution MLP under RAdam with batches of 128",
          opt="radam", batch=128, lr=3e-3),
        win,
        win_sgd,
        h("wine_rmsprop_milestones", "wine", "a wine-quality MLP under RMSprop halved at two milestones",
          opt="rmsprop", lr=1e-3, milestones=True),
        h("wine_adamax_batch64", "wine", "a wine-quality MLP under Adamax with batches of 64", opt="adamax",
          batch=64, lr=2e-3),
        foot,
        foot_cyc,
        h("football_rmsprop", "football", "a match-outcome MLP under RMSprop", opt="rmsprop", lr=5e-4),
        h("football_nadam_hidden32", "football", "a narrower match-outcome MLP under NAdam", opt="nadam",
          hidden=32, lr=2e-3),
        sal,
        sal_sgd,
        h("salary_adagrad_dim64", "salary", "a salary regressor with wider embeddings under Adagrad", opt="adagrad",
          dim=64, lr=0.05),
        h("salary_adamw_batch128", "salary", "a salary regressor under AdamW with batches of 128", opt="adamw",
          batch=128),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("V01", "log_power_without_dither", vad, "log_power_without_dither", "NaN",
          "the band powers logged without the dither, so the frames of digital silence give log(0) = -inf"),
        b("V02", "dither_given_on_int16_scale", vad, "dither_given_on_int16_scale", "SC",
          "the dither of one 16-bit step given as 1.0 on float samples in [-1, 1], a floor that buries every "
          "frame's power"),
        b("V03", "augmentation_noise_drawn_once", vad, "augmentation_noise_drawn_once", "OF",
          "the background-noise augmentation of the 300 labelled frames drawn once when the dataset is built "
          "instead of afresh for every batch", harmless=True),
        b("V04", "log_power_fed_in_db_unscaled", vad_deep, "log_power_fed_in_db_unscaled", "VG",
          "the band powers fed to the five-layer tanh classifier in decibels (about -40 to -100) and not "
          "standardised, so the first layer's units sit saturated and pass back almost no gradient"),
        b("V05", "target_multiplied_by_std", song_warm, "target_multiplied_by_std", "EG",
          "the popularity standardised as (p - mean) * std instead of / std, targets some 300 times too large under "
          "momentum SGD"),
        b("V06", "descriptor_table_cast_to_half", song, "descriptor_table_cast_to_half", "NaN",
          "the descriptor table cast to float16 to save memory before it is standardised, so durations in "
          "milliseconds overflow to inf"),
        b("V07", "learning_rate_exponent_typo", song, "learning_rate_exponent_typo", "DR",
          "Adam's rate typed as 1e-1 instead of 1e-3, whose first steps push many hidden ReLUs below zero for "
          "every song"),
        b("V08", "artist_id_embedded", song, "artist_id_embedded", "OF",
          "an embedding of the artist's id added to the inputs, learnt on the training artists and random for the "
          "new artists the model is scored on"),
        b("V09", "nodata_temperature_kept", spe, "nodata_temperature_kept", "SC",
          "the training sites on cells where the temperature layer has no data kept, their -9999 standardised with "
          "the rest, which squeezes every real temperature to about the same value"),
        b("V10", "survey_weights_left_unnormalised", spe_w, "survey_weights_left_unnormalised", "EG",
          "the sites' weights of one over their chance of a survey left raw instead of scaled to a mean of 1, "
          "some thirty times the loss under momentum SGD"),
        b("V11", "zero_init_meant_for_head_applied_to_all", spe_deep, "zero_init_meant_for_head_applied_to_all",
          "VG", "the zero initialisation meant for the output layer applied to every linear layer of the six"),
        b("V12", "quality_left_in_features", win, "quality_left_in_features", "OF",
          "the tasters' quality column left among the inputs; for the wines to score it is unknown and filled with "
          "its mean"),
        b("V13", "sulfur_dioxide_left_in_mg", win, "sulfur_dioxide_left_in_mg", "DR",
          "the free and total sulfur dioxide columns, joined from a later export, left in mg/L (up to 290) while the "
          "other measurements are standardised"),
        b("V14", "prediction_column_against_flat_target", win, "prediction_column_against_flat_target", "SC",
          "the [batch, 1] predictions compared with the [batch] qualities, which MSE broadcasts to [batch, batch]"),
        b("V15", "goals_per_match_over_zero_played", foot, "goals_per_match_over_zero_played", "NaN",
          "each side's goals per match divided by its matches played unguarded, 0/0 for a side on the opening day"),
        b("V16", "home_and_away_goals_swapped", foot, "home_and_away_goals_swapped", "SC",
          "the training results derived from the score columns in the order (away, home)"),
        b("V17", "cyclic_rate_peaks_at_one", foot_cyc, "cyclic_rate_peaks_at_one", "OL",
          "the triangular cyclic rate given a peak of 1.0 instead of 0.1", harmless=True),
        b("V18", "salary_regressed_in_dollars", sal_sgd, "salary_regressed_in_dollars", "EG",
          "the salary regressed in dollars instead of its standardised log"),
        b("V19", "pay_band_tokens_left_in_text", sal, "pay_band_tokens_left_in_text", "OF",
          "the pay-band tag of the training board left in the postings' text, while the postings to score come "
          "without it"),
        b("V20", "monthly_pay_not_annualised", sal, "monthly_pay_not_annualised", "SC",
          "the three postings in ten that state a monthly figure taken as annual salaries"),
    ]  # fmt: skip
    return healthy + bugs
