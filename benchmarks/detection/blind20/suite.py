"""The twentieth blind split as `run.py --suite blind20` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind20 import atmosphere, imagery, people

PREFIX = "blind20_"
SCRIPTS = {"air": atmosphere.air, "sst": atmosphere.sst, "solar": imagery.solar, "birds": imagery.birds,
           "reviews": people.reviews, "signatures": people.signatures}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind20Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind20Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind20Program, prefix=PREFIX)
    air = h("air_mlp_adam", "air", "an air-quality (PM2.5) forecaster with weather covariates (an MLP)")
    air_warm = h("air_momentum_warmup", "air", "a PM2.5 MLP under momentum SGD warmed up over 10 steps",
                 opt="momentum", lr=0.02, warmup=True)  # fmt: skip
    sst = h("sst_cnn_adam", "sst", "a sea-surface temperature anomaly regressor (a tanh CNN)")
    sst_sgd = h("sst_momentum_batch64", "sst", "an SST anomaly CNN under momentum SGD with batches of 64",
                opt="momentum", lr=0.05, batch=64)  # fmt: skip
    sol = h(
        "solar_cnn_adam", "solar", "a solar-power nowcaster from small sky images (a CNN and an MLP head)"
    )
    bird = h("birds_cnn_adam", "birds", "a bird-call detector on spectrogram clips (a CNN)")
    bird_nag = h("birds_nesterov_batch128", "birds", "a bird-call CNN under Nesterov SGD with batches of 128",
                 opt="nesterov", lr=0.05, batch=128)  # fmt: skip
    rev = h(
        "reviews_cumulative_adam", "reviews", "an ordinal regression of review stars by cumulative logits"
    )
    rev_sgd = h(
        "reviews_momentum", "reviews", "a star-rating model under momentum SGD", opt="momentum", lr=0.1
    )
    sig = h("signatures_siamese_adam", "signatures", "a signature verification network (a Siamese MLP)")
    sig_exp = h("signatures_adam_exponential", "signatures", "a signature verifier under Adam decayed by 0.995 a step",
                exp_decay=True)  # fmt: skip
    healthy = [
        air,
        air_warm,
        h("air_rmsprop_cosine", "air", "a PM2.5 MLP under RMSprop decayed by a cosine", opt="rmsprop", lr=5e-4,
          cosine=True),
        h("air_adamw_batch256_hidden64", "air", "a narrower PM2.5 MLP under AdamW with batches of 256", opt="adamw",
          batch=256, hidden=64, lr=2e-3),
        sst,
        h("sst_adamw_width32", "sst", "a wider SST anomaly CNN under AdamW", opt="adamw", width=32),
        h("sst_nadam_step_decay", "sst", "an SST anomaly CNN under NAdam divided by ten every 100 steps",
          opt="nadam", step_decay=True),
        sst_sgd,
        sol,
        h("solar_rmsprop_width12", "solar", "a wider solar nowcaster under RMSprop", opt="rmsprop", width=12,
          lr=1e-3),
        h("solar_momentum_batch32", "solar", "a solar nowcaster under momentum SGD with batches of 32",
          opt="momentum", lr=0.05, batch=32),
        h("solar_adamw", "solar", "a solar nowcaster under AdamW", opt="adamw", lr=3e-3),
        bird,
        bird_nag,
        h("birds_adamw_width12", "birds", "a wider bird-call CNN under AdamW", opt="adamw", width=12),
        h("birds_rmsprop_batch32", "birds", "a bird-call CNN under RMSprop with batches of 32", opt="rmsprop",
          lr=1e-3, batch=32),
        rev,
        rev_sgd,
        h("reviews_adagrad_dim64", "reviews", "a wider star-rating model under Adagrad", opt="adagrad", dim=64,
          lr=0.02),
        h("reviews_adamw_batch128", "reviews", "a star-rating model under AdamW with batches of 128", opt="adamw",
          batch=128),
        sig,
        sig_exp,
        h("signatures_rmsprop_dim64", "signatures", "a wider signature verifier under RMSprop", opt="rmsprop",
          dim=64, lr=5e-4),
        h("signatures_adamax_batch128", "signatures", "a signature verifier under Adamax with batches of 128",
          opt="adamax", batch=128, lr=2e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("B01", "missing_readings_left_nan", air, "missing_readings_left_nan", "NaN",
          "the hours lost to sensor dropouts left as NaN in the feature table, the forward fill of the gaps skipped"),
        b("B02", "rolling_mean_centred", air, "rolling_mean_centred", "OF",
          "the six-hour smoothed PM2.5 of the training table computed by a centred window over the archive, which "
          "reaches three hours past the forecast time, while live features can only trail"),
        b("B03", "warmup_lambda_without_min", air_warm, "warmup_lambda_without_min", "EG",
          "the linear warmup's factor written as (step + 1) / 10 without the min(1, ...), so the rate keeps growing "
          "to thirty times its value", effect_step=10),
        b("B04", "sst_fed_in_kelvin", sst, "sst_fed_in_kelvin", "DR",
          "the two past months fed as sea-surface temperatures in kelvin (about 300) instead of anomalies, "
          "saturating the first tanh layer"),
        b("B05", "small_init_std_on_every_layer", sst_sgd, "small_init_std_on_every_layer", "VG",
          "the init loop that starts the output layer at a spread of 1e-3 reaching every convolution, so under momentum "
          "SGD the signal through three layers starts about a millionth of the twin's and the first steps barely move"),
        b("B06", "fields_stored_lon_lat", sst, "fields_stored_lon_lat", "SC",
          "the target fields saved longitude-first and read back latitude-first, so each target is transposed"),
        b("B07", "land_fill_value_kept", sst, "land_fill_value_kept", "SC",
          "the product's fill value of -999 over land left in the input fields instead of 0"),
        b("B08", "irradiance_fed_in_watts", sol, "irradiance_fed_in_watts", "DR",
          "the clear-sky irradiance fed to the tanh head in W/m^2 (up to 1000) instead of per 1000 W/m^2"),
        b("B09", "cloud_difference_in_uint8", sol, "cloud_difference_in_uint8", "SC",
          "the clear-sky background subtracted from the frame while both are still uint8, so every pixel darker "
          "than the background wraps round to near 255"),
        b("B10", "clear_sky_index_at_night", sol, "clear_sky_index_at_night", "NaN",
          "the clear-sky index target computed as power over clear-sky output unguarded, 0/0 for night frames"),
        b("B11", "log_spectrogram_without_floor", bird, "log_spectrogram_without_floor", "NaN",
          "the log spectrogram taken without a floor, -inf in the zero padding of the short clips"),
        b("B12", "negatives_from_other_recorder", bird, "negatives_from_other_recorder", "OF",
          "the training clips without a call taken from a second recorder at half the gain, so loudness alone "
          "separates the training classes"),
        b("B13", "clip_losses_summed_under_nesterov", bird_nag, "clip_losses_summed_under_nesterov", "EG",
          "the clip losses summed over batches of 128 under Nesterov SGD at a rate tuned for the mean"),
        b("B14", "trunk_under_no_grad", bird, "trunk_under_no_grad", "VG",
          "the convolutional trunk run under `torch.no_grad()`, kept from a recipe that precomputed embeddings, so "
          "only the linear layer learns"),
        b("B15", "stars_clamped_from_one_based", rev, "stars_clamped_from_one_based", "SC",
          "the stars used as class ids as the file stores them (1-5), clamped into 0-4 to silence the index error, so "
          "every star is read one too high and four and five merge"),
        b("B16", "thresholds_initialised_at_zero", rev, "thresholds_initialised_at_zero", "NaN",
          "the four cumulative-logit thresholds a free parameter started at zero with no ordering, so the middle "
          "stars' probabilities are 0 and their log -inf"),
        b("B17", "bag_summed_over_long_reviews", rev_sgd, "bag_summed_over_long_reviews", "EG",
          "the bag of embeddings summing the words of reviews up to 40 long instead of averaging them, under "
          "momentum SGD"),
        b("B18", "forgery_coded_as_one", sig, "forgery_coded_as_one", "SC",
          "the dataset's labels, which mark forgeries with 1, used as if 1 meant genuine"),
        b("B19", "pairs_read_in_file_order", sig, "pairs_read_in_file_order", "OL",
          "the training pairs read in the file's order (writer by writer, genuine pairs before forgeries) by a loader "
          "built without shuffling, so each batch holds a handful of neighbouring writers", harmless=True),
        b("B20", "exponential_gamma_tuned_per_epoch", sig_exp, "exponential_gamma_tuned_per_epoch", "VG",
          "the exponential decay's gamma of 0.9, tuned for a step per epoch, applied every batch, so the rate is near "
          "zero after fifty steps"),
    ]  # fmt: skip
    return healthy + bugs
