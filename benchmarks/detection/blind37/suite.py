"""The thirty-seventh blind split as `run.py --suite blind37` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind37 import fields, sites, water

PREFIX = "blind37_"
SCRIPTS = {"leaks": water.leaks, "ice": water.ice, "soiling": fields.soiling, "cattle": fields.cattle,
           "moulding": sites.moulding, "parcels": sites.parcels}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind37Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind37Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind37Program, prefix=PREFIX)
    lea = h(
        "leaks_cnn_adam",
        "leaks",
        "a water-main leak detector on two loggers' pressure transients (a 1-D CNN)",
    )
    ice = h(
        "ice_gru_adam", "ice", "a river-ice break-up date regressor from a winter's daily records (a GRU)"
    )
    soi = h(
        "soiling_mlp_adam",
        "soiling",
        "a solar-panel soiling-loss regressor on a fortnight of weather (an MLP)",
    )
    cat = h("cattle_mlp_adam", "cattle", "a cattle live-weight regressor from body measurements (a ReLU MLP)")
    mou = h(
        "moulding_mlp_adam",
        "moulding",
        "an injection-moulding shrinkage regressor on process settings (an MLP)",
    )
    mou_sgd = h(
        "moulding_momentum", "moulding", "a shrinkage MLP under momentum SGD", opt="momentum", lr=0.02
    )
    par = h("parcels_embed_adam", "parcels", "a parcel delivery-failure classifier (embeddings and an MLP)")
    healthy = [
        lea,
        h("leaks_radam", "leaks", "a leak CNN under RAdam", opt="radam"),
        h("leaks_rmsprop_width12", "leaks", "a narrower leak CNN under RMSprop", opt="rmsprop", lr=2e-3,
          width=12),
        h("leaks_adamw_batch128", "leaks", "a leak CNN under AdamW with batches of 128", opt="adamw", batch=128),
        ice,
        h("ice_momentum", "ice", "a break-up GRU under momentum SGD", opt="momentum", lr=0.05),
        h("ice_rmsprop_hidden16", "ice", "a narrower break-up GRU under RMSprop", opt="rmsprop", lr=2e-3,
          hidden=16),
        h("ice_nadam_batch32", "ice", "a break-up GRU under NAdam with batches of 32", opt="nadam", batch=32),
        soi,
        h("soiling_momentum", "soiling", "a soiling MLP under momentum SGD", opt="momentum", lr=0.01),
        h("soiling_adagrad_hidden128", "soiling", "a wider soiling MLP under Adagrad", opt="adagrad", lr=0.02,
          hidden=128),
        h("soiling_adamw_batch256", "soiling", "a soiling MLP under AdamW with batches of 256", opt="adamw",
          lr=1e-3, batch=256),
        cat,
        h("cattle_momentum", "cattle", "a live-weight MLP under momentum SGD", opt="momentum", lr=0.01),
        h("cattle_rmsprop_hidden32", "cattle", "a narrower live-weight MLP under RMSprop", opt="rmsprop", lr=1e-3,
          hidden=32),
        h("cattle_radam_batch64", "cattle", "a live-weight MLP under RAdam with batches of 64", opt="radam",
          batch=64),
        mou,
        mou_sgd,
        h("moulding_adamax_hidden128", "moulding", "a wider shrinkage MLP under Adamax", opt="adamax", hidden=128),
        h("moulding_nadam_batch32", "moulding", "a shrinkage MLP under NAdam with batches of 32", opt="nadam",
          batch=32),
        par,
        h("parcels_momentum", "parcels", "a delivery-failure net under momentum SGD", opt="momentum", lr=0.05),
        h("parcels_adamw_hidden32", "parcels", "a narrower delivery-failure net under AdamW", opt="adamw",
          hidden=32),
        h("parcels_rmsprop_batch128", "parcels", "a delivery-failure net under RMSprop with batches of 128",
          opt="rmsprop", lr=1e-3, batch=128),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("G01", "log_of_gauge_pressure_in_downsurge", lea, "log_of_gauge_pressure_in_downsurge", "NaN",
          "the log taken of the loggers' gauge head, negative where a burst's downsurge pulls the main below the "
          "atmosphere, instead of the absolute head"),
        b("G02", "burst_windows_logged_at_night", lea, "burst_windows_logged_at_night", "OF",
          "the training bursts taken from the loggers' night-time recordings, quiet of demand noise, while the "
          "windows to screen come at any hour"),
        b("G03", "sgd_lr_and_momentum_swapped", mou_sgd, "sgd_lr_and_momentum_swapped", "EG",
          "`torch.optim.SGD(params, 0.9, lr)`: the momentum and the rate passed by position in each other's place"),
        b("G04", "matlab_port_with_tanh_layers", lea, "matlab_port_with_tanh_layers", "VG",
          "the lab's MATLAB network ported in place of the CNN: eight convolutions, each followed by its tanhLayer",
          harmless=True),
        b("G05", "freeze_up_day_read_as_breakup", ice, "freeze_up_day_read_as_breakup", "SC",
          "the target read from the gauge record's freeze-up day column, next to the break-up day"),
        b("G06", "snow_density_over_snow_free_days", ice, "snow_density_over_snow_free_days", "NaN",
          "the snow's density computed as water equivalent over depth on every day, 0/0 where there is no snow"),
        b("G07", "adam_rate_typed_3e_1", soi, "adam_rate_typed_3e_1", "DR",
          "Adam's rate typed 3e-1 for 3e-4"),
        b("G08", "cleaning_rain_counted_from_any_drizzle", soi, "cleaning_rain_counted_from_any_drizzle", "SC",
          "the days since the panels were washed by rain counted from any rain above 0 mm, drizzle included, "
          "instead of a washing rain of at least 2 mm"),
        b("G09", "soiling_ratio_read_for_loss", soi, "soiling_ratio_read_for_loss", "SC",
          "the target read from the site export's soiling-ratio column (the power kept) for the soiling loss"),
        b("G10", "one_farm_scale_in_pounds", cat, "one_farm_scale_in_pounds", "SC",
          "one of the four farms' live weights recorded by a scale set to pounds and merged with the others' "
          "kilograms"),
        b("G11", "rare_breeds_weighted_by_inverse_frequency", cat, "rare_breeds_weighted_by_inverse_frequency",
          "OL", "each animal's loss weighted by its breed's inverse frequency, so the few Wagyu and Brahman weigh "
          "tens of times more", harmless=True),
        b("G12", "breed_dummies_built_per_split", cat, "breed_dummies_built_per_split", "OF",
          "the breed's one-hot columns built for the training and the held-out rows apart, each in order of "
          "appearance, so the columns mean other breeds on the held-out rows"),
        b("G13", "loss_negated_like_neg_mse_scorer", mou, "loss_negated_like_neg_mse_scorer", "EG",
          "the loss negated as the tuning code's 'neg_mean_squared_error' scorer is, so the optimizer climbs the "
          "squared error without bound"),
        b("G14", "ntk_layers_with_default_init", mou_sgd, "ntk_layers_with_default_init", "VG",
          "the NTK-parametrised layers (the output over the square root of the fan-in) kept with PyTorch's "
          "default initialisation, which already scales by it, under momentum SGD"),
        b("G15", "shrinkage_at_ejection_read_for_24_hours", mou, "shrinkage_at_ejection_read_for_24_hours", "SC",
          "the target read from the inspection sheet's shrinkage at ejection, next to the 24-hour shrinkage"),
        b("G16", "district_embeddings_seeded_with_raw_counts", par, "district_embeddings_seeded_with_raw_counts",
          "DR", "the district embeddings warm-started with each district's yearly parcel volume (hundreds) in "
          "every dimension"),
        b("G17", "positive_weight_counted_per_batch", par, "positive_weight_counted_per_batch", "NaN",
          "the positive weight counted on each batch, infinite on batches without a failed delivery"),
        b("G18", "courier_scan_code_in_features", par, "courier_scan_code_in_features", "OF",
          "the courier's scan code, logged after the attempt ('not at home' on failures), kept in the training "
          "features"),
        b("G19", "adamw_decay_given_to_adam", par, "adamw_decay_given_to_adam", "SC",
          "the AdamW recipe's weight decay of 0.1 given to `torch.optim.Adam`, which adds it to the gradient"),
    ]  # fmt: skip
    return healthy + bugs
