"""The thirty-third blind split as `run.py --suite blind33` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind33 import labs, monitors, regions

PREFIX = "blind33_"
SCRIPTS = {"apnoea": monitors.apnoea, "greenhouse": monitors.greenhouse, "peptides": labs.peptides,
           "solder": labs.solder, "roads": regions.roads, "dialects": regions.dialects}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind33Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind33Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind33Program, prefix=PREFIX)
    apn = h("apnoea_cnn_adam", "apnoea", "a sleep-apnoea detector on SpO2 and airflow windows (a 1-D CNN)")
    gre = h(
        "greenhouse_gru_adam",
        "greenhouse",
        "a greenhouse inside-temperature forecaster (a GRU cell over hours)",
    )
    pep = h(
        "peptides_mlp_adam", "peptides", "a precursor-charge classifier for peptides from mass spectrometry"
    )
    sol = h(
        "solder_cnn_adam",
        "solder",
        "a solder-joint defect classifier on X-ray crops of circuit boards (a CNN)",
    )
    sol_sgd = h("solder_momentum", "solder", "a solder-joint CNN under momentum SGD", opt="momentum", lr=0.05)
    roa = h("roads_mlp_adam", "roads", "a road-noise level regressor from traffic counts (an MLP)")
    roa_sgd = h("roads_momentum", "roads", "a road-noise MLP under momentum SGD", opt="momentum", lr=0.01)
    dia = h("dialects_bag_adam", "dialects", "an Arabic-dialect classifier on hashed character trigrams")
    dia_sgd = h(
        "dialects_momentum", "dialects", "a dialect trigram bag under momentum SGD", opt="momentum", lr=0.5
    )
    healthy = [
        apn,
        h("apnoea_momentum", "apnoea", "an apnoea CNN under momentum SGD", opt="momentum", lr=0.02),
        h("apnoea_rmsprop_width32", "apnoea", "a wider apnoea CNN under RMSprop", opt="rmsprop", lr=1e-3, width=32),
        h("apnoea_adamw_batch128", "apnoea", "an apnoea CNN under AdamW with batches of 128", opt="adamw",
          batch=128),
        gre,
        h("greenhouse_rmsprop", "greenhouse", "a greenhouse GRU under RMSprop", opt="rmsprop", lr=1e-3),
        h("greenhouse_adamw_hidden64", "greenhouse", "a wider greenhouse GRU under AdamW", opt="adamw", hidden=64),
        h("greenhouse_nadam_batch32", "greenhouse", "a greenhouse GRU under NAdam with batches of 32", opt="nadam",
          batch=32),
        pep,
        h("peptides_momentum", "peptides", "a charge MLP under momentum SGD", opt="momentum", lr=0.05),
        h("peptides_adagrad_hidden64", "peptides", "a narrower charge MLP under Adagrad", opt="adagrad", lr=0.05,
          hidden=64),
        h("peptides_nadam_batch128", "peptides", "a charge MLP under NAdam with batches of 128", opt="nadam",
          batch=128),
        sol,
        sol_sgd,
        h("solder_rmsprop_width16", "solder", "a wider joint CNN under RMSprop", opt="rmsprop", lr=1e-3, width=16),
        h("solder_adamax_batch64", "solder", "a joint CNN under Adamax with batches of 64", opt="adamax", lr=4e-3,
          batch=64),
        roa,
        roa_sgd,
        h("roads_rmsprop_hidden128", "roads", "a wider road-noise MLP under RMSprop", opt="rmsprop", lr=1e-3,
          hidden=128),
        h("roads_adamw_batch256", "roads", "a road-noise MLP under AdamW with batches of 256", opt="adamw",
          batch=256),
        dia,
        dia_sgd,
        h("dialects_adagrad_dim64", "dialects", "a wider dialect bag under Adagrad", opt="adagrad", lr=0.1, dim=64),
        h("dialects_rmsprop_batch64", "dialects", "a dialect bag under RMSprop with batches of 64", opt="rmsprop",
          lr=2e-3, batch=64),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("N01", "spo2_logit_at_full_saturation", apn, "spo2_logit_at_full_saturation", "NaN",
          "the SpO2's log-odds taken without clipping the saturation, infinite for the readings of 100 %"),
        b("N02", "annotation_channel_left_in_export", apn, "annotation_channel_left_in_export", "OF",
          "the technician's scored-events channel left in the training export as a third input, while the nights "
          "to score carry none"),
        b("N03", "conv_features_under_no_grad", apn, "conv_features_under_no_grad", "VG",
          "the convolutions run under `torch.no_grad()`, pasted from the snippet that exports window embeddings, so "
          "only the linear layer learns"),
        b("N04", "spo2_probe_off_zeros_left_in", apn, "spo2_probe_off_zeros_left_in", "SC",
          "the pulse oximeter's probe-off readings (SpO2 0 for 4-15 s) left in instead of carried forward",
          harmless=True),
        b("N05", "hidden_state_detached_every_hour", gre, "hidden_state_detached_every_hour", "VG",
          "the GRU cell's state detached before every hour, kept from a stateful version, so no gradient reaches "
          "back past the last hour"),
        b("N06", "vpd_sqrt_of_supersaturated_reading", gre, "vpd_sqrt_of_supersaturated_reading", "NaN",
          "the square root of the vapour-pressure deficit taken unclamped, negative when the humidity sensor reads "
          "over 100 % under condensation"),
        b("N07", "target_column_outside_temperature", gre, "target_column_outside_temperature", "SC",
          "the target read from the outside temperature's column of the hourly table instead of the inside one's"),
        b("N08", "adam_given_sgd_recipe_rate", pep, "adam_given_sgd_recipe_rate", "EG",
          "Adam given the SGD recipe's learning rate of 0.5, its key looked up for the wrong optimizer"),
        b("N09", "weights_init_uniform_zero_one", pep, "weights_init_uniform_zero_one", "OL",
          "every linear layer started by `nn.init.uniform_(w)`, which draws from [0, 1), meant with -bound, bound"),
        b("N10", "neutral_mass_from_assigned_charge", pep, "neutral_mass_from_assigned_charge", "OF",
          "the training export's neutral mass computed at each identified precursor's charge, while new spectra "
          "carry the mass at an assumed 2+"),
        b("N11", "composition_as_fractions_losing_length", pep, "composition_as_fractions_losing_length", "SC",
          "the residue counts turned into fractions of the peptide's length, which drops the length and the mass"),
        b("N12", "xray_counts_not_scaled", sol_sgd, "xray_counts_not_scaled", "DR",
          "the X-ray station's 12-bit counts fed unscaled to the CNN under momentum SGD"),
        b("N13", "momentum_099_from_other_recipe", sol_sgd, "momentum_099_from_other_recipe", "DR",
          "momentum SGD's momentum set to 0.99 from another recipe while the rate stays at 0.05"),
        b("N14", "camera_frames_transposed_in_training", sol, "camera_frames_transposed_in_training", "SC",
          "the training crops written column-major by the station's exporter, so they arrive transposed while the "
          "crops inspected do not"),
        b("N15", "decibel_target_left_uncentred", roa_sgd, "decibel_target_left_uncentred", "EG",
          "the level regressed in raw dB(A), around 60, under momentum SGD instead of standardised"),
        b("N16", "truck_counts_joined_by_row_order", roa, "truck_counts_joined_by_row_order", "SC",
          "the truck counts from the classifier's own table, sorted differently, pasted beside the hours by position"),
        b("N17", "country_hashtags_left_in_training_text", dia, "country_hashtags_left_in_training_text", "OF",
          "the country hashtags the training posts were collected by left in their text, while the posts to "
          "classify carry none"),
        b("N18", "posts_stored_in_display_order", dia, "posts_stored_in_display_order", "SC",
          "the training posts scraped in their visual left-to-right order, so each Arabic post arrives reversed"),
        b("N19", "trigram_bag_summed_not_averaged", dia_sgd, "trigram_bag_summed_not_averaged", "EG",
          "the `EmbeddingBag` built with mode='sum' where the recipe averages, under momentum SGD at the averaged "
          "bag's rate", harmless=True),
    ]  # fmt: skip
    return healthy + bugs
