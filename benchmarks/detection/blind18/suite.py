"""The eighteenth blind split as `run.py --suite blind18` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind18 import grids, instruments, sequences

PREFIX = "blind18_"
SCRIPTS = {"traffic": grids.traffic, "nowcaster": grids.nowcaster, "ecg": instruments.ecg, "galaxies": instruments.galaxies,
           "protein": sequences.protein, "crop": sequences.crop}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind18Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind18Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind18Program, prefix=PREFIX)
    tr = h("traffic_gcn_adam", "traffic", "a traffic-flow forecaster over a road graph (graph convolutions)")
    tr_warm = h("traffic_momentum_warmup", "traffic", "a traffic forecaster under momentum SGD after a warm-up",
                opt="momentum", lr=0.05, warmup=30)  # fmt: skip
    now = h(
        "nowcaster_convlstm_adam", "nowcaster", "a precipitation nowcaster (a ConvLSTM over radar frames)"
    )
    ecg = h("ecg_cnn_adam", "ecg", "an ECG beat classifier under class imbalance (a 1-D CNN, weighted loss)")
    ecg_nag = h("ecg_nesterov_linear_decay", "ecg", "a beat classifier under Nesterov SGD decayed linearly to 0",
                opt="nesterov", lr=0.05, linear_decay=True)  # fmt: skip
    gen = h(
        "galaxies_cnn_adam",
        "galaxies",
        "a galaxy morphology classifier on telescope images (a CNN, augmented)",
    )
    gen_acc = h("galaxies_momentum_accumulate8", "galaxies",
                "a galaxy classifier under momentum SGD summing the gradient of eight batches", opt="momentum",
                lr=0.02, batch=8, accumulate=8)  # fmt: skip
    pro = h("protein_bilstm_adam", "protein", "a protein secondary-structure tagger (a bidirectional LSTM)")
    pro_sgd = h("protein_momentum_clipped", "protein", "a structure tagger under momentum SGD clipped at norm 1",
                clip=1.0, lr=0.5)  # fmt: skip
    crop = h(
        "crop_lstm_adam", "crop", "a crop-yield regressor over a season of satellite observations (an LSTM)"
    )
    crop_pl = h("crop_adam_plateau", "crop", "a crop-yield regressor halving its rate on a holdout plateau",
                plateau=True)  # fmt: skip
    healthy = [
        tr,
        h("traffic_adamw_width64", "traffic", "a wider traffic forecaster under AdamW", opt="adamw", width=64),
        tr_warm,
        h("traffic_rmsprop_batch128", "traffic", "a traffic forecaster under RMSprop with larger batches",
          opt="rmsprop", lr=1e-3, batch=128),
        now,
        h("nowcaster_adamw_hidden16", "nowcaster", "a wider nowcaster under AdamW", opt="adamw", hidden=16),
        h("nowcaster_adamax", "nowcaster", "a nowcaster under Adamax", opt="adamax", lr=4e-3),
        h("nowcaster_rmsprop_clipped", "nowcaster", "a nowcaster under RMSprop clipped at norm 1", opt="rmsprop",
          lr=1e-3, clip=1.0),
        ecg,
        ecg_nag,
        h("ecg_adamw_dropout", "ecg", "a beat classifier with dropout under AdamW", opt="adamw", dropout=0.3),
        h("ecg_radam_batch128", "ecg", "a beat classifier under RAdam with larger batches", opt="radam",
          batch=128),
        gen,
        gen_acc,
        h("galaxies_adamax", "galaxies", "a galaxy classifier under Adamax", opt="adamax", lr=4e-3),
        h("galaxies_adamw_channels16", "galaxies", "a wider galaxy classifier under AdamW", opt="adamw",
          channels=16),
        pro,
        h("protein_adamw_hidden64", "protein", "a wider structure tagger under AdamW", opt="adamw", hidden=64),
        h("protein_nadam", "protein", "a structure tagger under NAdam", opt="nadam"),
        pro_sgd,
        crop,
        crop_pl,
        h("crop_adagrad", "crop", "a crop-yield regressor under Adagrad", opt="adagrad", lr=3e-2),
        h("crop_rmsprop_hidden48", "crop", "a wider crop-yield regressor under RMSprop", opt="rmsprop", lr=1e-3,
          hidden=48),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("D01", "stuck_sensor_std_unguarded", tr, "stuck_sensor_std_unguarded", "NaN",
          "each detector's speeds divided by their training spread with a broken detector's spread of 0 left in"),
        b("D02", "warmup_fraction_upside_down", tr_warm, "warmup_fraction_upside_down", "EG",
          "the warm-up factor written warmup / (step + 1), so the run starts at 30 times its rate"),
        b("D03", "optimizer_bound_to_discarded_model", tr, "optimizer_bound_to_discarded_model", "VG",
          "the model rebuilt after the optimizer was made, so the optimizer updates a model nobody uses"),
        b("D04", "target_one_reading_late", tr, "target_one_reading_late", "SC",
          "the target sliced one reading late, so the model forecasts 30 minutes ahead instead of 15"),
        b("D05", "log_rain_rate_without_offset", now, "log_rain_rate_without_offset", "NaN",
          "the input frames' log taken of the rain rate without its offset, so dry pixels are -inf"),
        b("D06", "reflectivity_fed_unconverted", now, "reflectivity_fed_unconverted", "DR",
          "the radar's linear reflectivity (Z = 200 R^1.6, up to about 10^4) fed into the ConvLSTM's gates instead of "
          "the log rain rate"),
        b("D07", "output_squashed_by_sigmoid", now, "output_squashed_by_sigmoid", "SC",
          "the predicted frame passed through a sigmoid while the target is a log rate that goes below 0"),
        b("D08", "class_weights_from_frequencies", ecg, "class_weights_from_frequencies", "SC",
          "the loss's class weights set to the class frequencies instead of their inverse"),
        b("D09", "nesterov_given_adams_rate", ecg_nag, "nesterov_given_adams_rate", "VG",
          "the optimizer switched from Adam to Nesterov SGD with the rate left at Adam's 2e-3"),
        b("D10", "adc_counts_fed_unconverted", ecg, "adc_counts_fed_unconverted", "DR",
          "the beats fed as stored ADC counts (about 1024) instead of millivolts into tanh units"),
        b("D11", "counts_stored_in_half_precision", gen, "counts_stored_in_half_precision", "NaN",
          "the images kept in float16 to save memory, so counts above 65504 overflow to inf"),
        b("D12", "accumulated_loss_multiplied_not_divided", gen_acc, "accumulated_loss_multiplied_not_divided",
          "EG", "each accumulated batch's loss multiplied by the accumulation steps instead of divided"),
        b("D13", "training_set_given_eval_transform", gen, "training_set_given_eval_transform", "OF",
          "the 80 training images built with the evaluation transform, so the model never sees augmentation",
          harmless=True),
        b("D14", "padding_labelled_coil", pro, "padding_labelled_coil", "SC",
          "the padded positions labelled coil in the loss instead of ignored", harmless=True),
        b("D15", "forward_direction_only", pro, "forward_direction_only", "SC",
          "the bidirectional LSTM's forward half read twice where both directions were meant"),
        b("D16", "clip_over_spent_parameter_generator", pro_sgd, "clip_over_spent_parameter_generator", "EG",
          "the clip given the generator of parameters the optimizer already consumed, so it clips nothing",
          harmless=True),
        b("D17", "ndvi_of_masked_months_divided_by_zero", crop, "ndvi_of_masked_months_divided_by_zero", "NaN",
          "the NDVI computed over cloud-masked months whose bands are all 0, giving 0/0"),
        b("D18", "stored_integers_fed_as_reflectance", crop, "stored_integers_fed_as_reflectance", "DR",
          "the stored reflectance integers (up to thousands) fed unscaled into the LSTM"),
        b("D19", "plateau_scheduler_fed_r2", crop_pl, "plateau_scheduler_fed_r2", "VG",
          "the plateau scheduler in mode 'min' stepped on the holdout R^2, so each improvement halves the rate",
          harmless=True),
        b("D20", "train_and_holdout_indices_swapped", crop, "train_and_holdout_indices_swapped", "OF",
          "the training and holdout indices swapped, so the model trains on the 60 holdout fields"),
        b("D21", "cloudy_fields_dropped_whole", crop, "cloudy_fields_dropped_whole", "OF",
          "every field with a cloud-masked month dropped from training to keep clean observations, leaving a few "
          "dozen fields"),
    ]  # fmt: skip
    return healthy + bugs
