"""The fifty-sixth blind split as `run.py --suite blind56` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind56 import arena, cellar, rails

PREFIX = "blind56_"
SCRIPTS = {"points": rails.points, "quakes": rails.quakes, "ripeness": cellar.ripeness, "dyebath": cellar.dyebath,
           "aligner": arena.aligner, "draft": arena.draft}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind56Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind56Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind56Program, prefix=PREFIX)
    poi = h(
        "points_cnn_adam",
        "points",
        "a railway point-machine fault classifier on a throw's motor current (a 1-D CNN)",
    )
    poi_sgd = h(
        "points_momentum", "points", "a point-machine throw CNN under momentum SGD", opt="momentum", lr=0.02
    )
    qua = h(
        "quakes_pool_adam",
        "quakes",
        "a quarry-blast discriminator over a seismic network's stations (attention pooling)",
    )
    qua_sgd = h(
        "quakes_momentum", "quakes", "a blast discriminator under momentum SGD", opt="momentum", lr=0.02
    )
    rip = h(
        "ripeness_gru_adam",
        "ripeness",
        "a grape-ripeness forecaster over a vineyard block's weekly samples (a GRU)",
    )
    rip_sgd = h("ripeness_momentum", "ripeness", "a ripeness GRU under momentum SGD", opt="momentum", lr=0.05)
    dye = h(
        "dyebath_gelu_adam", "dyebath", "a reactive-dye shade predictor for a cotton dyehouse (a GELU MLP)"
    )
    dye_sgd = h("dyebath_momentum", "dyebath", "a dye-shade MLP under momentum SGD", opt="momentum", lr=0.02)
    ali = h(
        "aligner_tanh_adam",
        "aligner",
        "a clear-aligner treatment-length model for an orthodontic practice (a tanh MLP)",
    )
    ali_sgd = h(
        "aligner_momentum", "aligner", "an aligner stages MLP under momentum SGD", opt="momentum", lr=0.01
    )
    dra = h(
        "draft_encoder_adam",
        "draft",
        "a match-outcome model on a team game's hero draft (hero embeddings, a transformer encoder layer)",
    )
    healthy = [
        poi,
        poi_sgd,
        h("points_adamw_width24", "points", "a wider throw CNN under AdamW", opt="adamw", width=24),
        h("points_nadam_batch32", "points", "a throw CNN under NAdam with batches of 32", opt="nadam", batch=32),
        qua,
        qua_sgd,
        h("quakes_rmsprop_width32", "quakes", "a wider blast discriminator under RMSprop", opt="rmsprop", width=32,
          lr=1e-3),
        h("quakes_adagrad_batch128", "quakes", "a blast discriminator under Adagrad with batches of 128",
          opt="adagrad", batch=128, lr=0.02),
        rip,
        rip_sgd,
        h("ripeness_rmsprop_hidden40", "ripeness", "a wider ripeness GRU under RMSprop", opt="rmsprop", hidden=40,
          lr=2e-3),
        h("ripeness_adamax_batch128", "ripeness", "a ripeness GRU under Adamax with batches of 128", opt="adamax",
          batch=128, lr=3e-3),
        dye,
        dye_sgd,
        h("dyebath_nadam_hidden96", "dyebath", "a wider dye-shade MLP under NAdam", opt="nadam", hidden=96),
        h("dyebath_radam_batch32", "dyebath", "a dye-shade MLP under RAdam with batches of 32", opt="radam",
          batch=32),
        ali,
        ali_sgd,
        h("aligner_adamw_hidden128", "aligner", "a wider aligner stages MLP under AdamW", opt="adamw", hidden=128),
        h("aligner_rmsprop_batch32", "aligner", "an aligner stages MLP under RMSprop with batches of 32",
          opt="rmsprop", batch=32, lr=1e-3),
        dra,
        h("draft_adamw_width32", "draft", "a wider draft encoder under AdamW", opt="adamw", width=32),
        h("draft_radam_batch16", "draft", "a draft encoder under RAdam with batches of 16", opt="radam", batch=16,
          lr=2e-3),
        h("draft_rmsprop", "draft", "a draft encoder under RMSprop", opt="rmsprop", lr=3e-4),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("H01", "truncated_not_decimated", poi, "truncated_not_decimated", "SC",
          "the 20 Hz loggers' traces cut to their first 48 samples, the first half of the throw, where every second "
          "sample was meant"),
        b("H02", "steplr_gamma_given_as_divisor", poi_sgd, "steplr_gamma_given_as_divisor", "EG",
          "\"halve the rate every 60 steps\" written StepLR(step_size=60, gamma=2.0), gamma read as the number to "
          "divide by, so the rate doubles, under momentum SGD"),
        b("H03", "key_padding_mask_inverted", qua, "key_padding_mask_inverted", "NaN",
          "the present stations passed as MultiheadAttention's key_padding_mask, whose True means ignore: only the "
          "padding is attended to, and an event picked at all eight stations has every key masked"),
        b("H04", "probable_blast_flag_as_label", qua, "probable_blast_flag_as_label", "SC",
          "the catalogue's automatic \"probable blast\" flag (a daytime event located shallow) taken as the label "
          "instead of the analysts' reviewed event type"),
        b("H05", "distance_degrees_read_as_km", qua_sgd, "distance_degrees_read_as_km", "SC",
          "the second network's epicentral distances, reported in degrees, read as kilometres, under momentum SGD", harmless=True),
        b("H06", "samples_in_lab_id_order", rip, "samples_in_lab_id_order", "SC",
          "each block's weekly samples ordered by the lab's sample id, handed out as the samples arrive, instead of "
          "by the sampling date, before the GRU", harmless=True),
        b("H07", "one_pass_variance_under_sqrt", rip, "one_pass_variance_under_sqrt", "NaN",
          "the berries' spread as sqrt(mean(w ** 2) - mean(w) ** 2) in float32, below zero for the samples a lab "
          "typed in as 100 equal weights"),
        b("H08", "linear_scaling_by_rows_not_batch", rip_sgd, "linear_scaling_by_rows_not_batch", "EG",
          "the linear scaling rule written lr * len(train) / 64 instead of lr * batch / 64, under momentum SGD"),
        b("H09", "shade_read_off_wet_swatch", dye, "shade_read_off_wet_swatch", "SC",
          "the training dips' shade measured on the swatch straight from the bath, darker than after rinsing and "
          "drying, while the dyehouse matches dry shades"),
        b("H10", "cube_root_of_negative_xyz", dye, "cube_root_of_negative_xyz", "NaN",
          "CIELAB's f(t) simplified to t ** (1/3) for every t, NaN for the deep blacks' slightly negative readings "
          "after the black-trap correction"),
        b("H11", "polynomial_features_degree_four", dye, "polynomial_features_degree_four", "OF",
          "PolynomialFeatures(degree=4) of the eight recipe columns, 494 inputs for 700 dips"),
        b("H12", "sigmoid_on_standardised_output", dye_sgd, "sigmoid_on_standardised_output", "VG",
          "a sigmoid left on the output from a reflectance model, the targets standardised L*, a*, b*, under "
          "momentum SGD"),
        b("H13", "universal_numbers_read_as_fdi", ali, "universal_numbers_read_as_fdi", "SC",
          "the clinics whose planning software writes Universal tooth numbers read by the FDI table: 11, 22 and 23 "
          "land on other teeth, the rest read as no movement"),
        b("H14", "translations_in_micrometres", ali, "translations_in_micrometres", "VG",
          "the new export's translations in micrometres fed to the tanh layers as they come, hundreds to thousands "
          "where millimetres were meant"),
        b("H15", "loss_on_exponentiated_prediction", ali_sgd, "loss_on_exponentiated_prediction", "EG",
          "the loss taken in stages on exp of the log-stage prediction, under momentum SGD"),
        b("H16", "winner_not_flipped_with_sides", dra, "winner_not_flipped_with_sides", "SC",
          "the matches exported with the second side first put back in order, their winner column left unflipped"),
        b("H17", "adam_given_momentum_sgd_rate", dra, "adam_given_momentum_sgd_rate", "DR",
          "the momentum-SGD baseline's rate of 0.1 kept when the optimizer was switched to Adam, before a ReLU "
          "head"),
        b("H18", "hero_pair_crosses_one_hot", dra, "hero_pair_crosses_one_hot", "OF",
          "every pair of heroes on a side one-hot beside the encoder, 3600 columns for 2400 matches", harmless=True),
        b("H19", "bans_taken_as_picks", dra, "bans_taken_as_picks", "SC",
          "the draft's first ten entries taken as the picks; in captain's mode they are the bans"),
        b("H20", "target_from_next_sample_column", rip, "target_from_next_sample_column", "SC",
          "the lab sheet's \"next sample\" column, the Brix a week after the last sample, taken as the target the "
          "harvest plan needs two weeks on"),
    ]  # fmt: skip
    return healthy + bugs
