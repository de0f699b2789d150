"""The fortieth blind split as `run.py --suite blind40` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind40 import factory, leisure, nature

PREFIX = "blind40_"
SCRIPTS = {"furnace": factory.furnace, "tread": factory.tread, "dengue": nature.dengue, "lake": nature.lake,
           "drone": leisure.drone, "blunder": leisure.blunder}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind40Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind40Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind40Program, prefix=PREFIX)
    fur = h(
        "furnace_cnn_adam",
        "furnace",
        "a glass-furnace bubble-defect classifier on melt sensor windows (a 1-D CNN)",
    )
    fur_sgd = h("furnace_momentum", "furnace", "a furnace CNN under momentum SGD", opt="momentum", lr=0.02)
    tre = h("tread_mlp_adam", "tread", "a tyre-tread wear regressor (a ReLU MLP)")
    tre_sgd = h("tread_momentum", "tread", "a tread MLP under momentum SGD", opt="momentum", lr=0.01)
    den = h(
        "dengue_gru_adam",
        "dengue",
        "a dengue-case forecaster from weather and past counts (a GRU, Poisson loss)",
    )
    den_sgd = h("dengue_momentum", "dengue", "a dengue GRU under momentum SGD", opt="momentum", lr=5e-4)
    lak = h("lake_mlp_adam", "lake", "a lake chlorophyll-a regressor from satellite bands (a ReLU MLP)")
    lak_sgd = h("lake_momentum", "lake", "a lake MLP under momentum SGD", opt="momentum", lr=0.01)
    dro = h(
        "drone_cnn_adam", "drone", "a drone battery state-of-health regressor on discharge logs (a 1-D CNN)"
    )
    dro_sgd = h("drone_momentum", "drone", "a drone CNN under momentum SGD", opt="momentum", lr=0.02)
    blu = h(
        "blunder_mlp_adam",
        "blunder",
        "a chess-clock time-pressure blunder classifier (embeddings and an MLP)",
    )
    blu_sgd = h("blunder_momentum", "blunder", "a blunder MLP under momentum SGD", opt="momentum", lr=0.02)
    healthy = [
        fur,
        fur_sgd,
        h("furnace_adamw_width16", "furnace", "a narrower furnace CNN under AdamW", opt="adamw", width=16),
        h("furnace_rmsprop_batch128", "furnace", "a furnace CNN under RMSprop with batches of 128", opt="rmsprop",
          lr=1e-3, batch=128),
        tre,
        tre_sgd,
        h("tread_nadam_hidden128", "tread", "a wider tread MLP under NAdam", opt="nadam", hidden=128),
        h("tread_adagrad_batch32", "tread", "a tread MLP under Adagrad with batches of 32", opt="adagrad",
          lr=0.02, batch=32),
        den,
        den_sgd,
        h("dengue_rmsprop_hidden16", "dengue", "a narrower dengue GRU under RMSprop", opt="rmsprop", lr=2e-3,
          hidden=16),
        h("dengue_nadam_cosine", "dengue", "a dengue GRU under NAdam decayed by a cosine", opt="nadam", cosine=True),
        lak,
        lak_sgd,
        h("lake_adamw_hidden32", "lake", "a narrower lake MLP under AdamW", opt="adamw", hidden=32),
        h("lake_rmsprop_batch128", "lake", "a lake MLP under RMSprop with batches of 128", opt="rmsprop", lr=1e-3,
          batch=128),
        dro,
        dro_sgd,
        h("drone_rmsprop_width16", "drone", "a narrower drone CNN under RMSprop", opt="rmsprop", lr=1e-3, width=16),
        h("drone_adamw_batch64", "drone", "a drone CNN under AdamW with batches of 64", opt="adamw", batch=64),
        blu,
        blu_sgd,
        h("blunder_nadam_hidden128", "blunder", "a wider blunder MLP under NAdam", opt="nadam", hidden=128),
        h("blunder_adamax_batch256", "blunder", "a blunder MLP under Adamax with batches of 256", opt="adamax",
          lr=4e-3, batch=256),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("D01", "bubbler_pressure_logged_in_pascals", fur, "bubbler_pressure_logged_in_pascals", "DR",
          "the bubbler line's pressure logged in pascals by the new transmitter while the nominal swing it is "
          "divided by is in kPa, a channel a thousand times too wide"),
        b("D02", "few_defect_windows_copied_to_balance", fur, "few_defect_windows_copied_to_balance", "OF",
          "the defect windows of the camera's first week, twelve of them, copied over to balance the classes", harmless=True),
        b("D03", "oxygen_ratio_over_idle_burners", fur, "oxygen_ratio_over_idle_burners", "NaN",
          "the oxygen-to-gas ratio taken as it is, 0 / 0 in the windows where the burners idle for a reversal"),
        b("D04", "wear_target_in_micrometres", tre_sgd, "wear_target_in_micrometres", "EG",
          "the tread gauge's export in micrometres regressed as it came, a target of thousands, under momentum SGD"),
        b("D05", "spectral_norm_on_six_layers_for_smoothness", tre_sgd, "spectral_norm_on_six_layers_for_smoothness",
          "VG", "every layer of a six-layer ReLU MLP put under spectral normalisation for a wear curve smooth in its "
          "inputs, under momentum SGD"),
        b("D06", "load_and_pressure_columns_swapped", tre, "load_and_pressure_columns_swapped", "SC",
          "the second depot's export, which lists the axle load before the pressure, read in the first depot's "
          "column order"),
        b("D07", "poisson_loss_told_log_rate_is_rate", den, "poisson_loss_told_log_rate_is_rate", "NaN",
          "`poisson_nll_loss(..., log_input=False)` on the GRU's linear output, the log of a negative rate"),
        b("D08", "case_counts_fed_raw", den_sgd, "case_counts_fed_raw", "SC",
          "the weekly case counts fed to the GRU raw, hundreds in an outbreak, beside the standardised weather, "
          "under momentum SGD"),
        b("D09", "trained_on_backfilled_counts", den, "trained_on_backfilled_counts", "OF",
          "the training windows' counts taken from the back-filled archive, complete, while the forecaster is "
          "served the last weeks' counts still short of the late reports"),
        b("D10", "cloud_masked_pixels_kept_for_index", lak, "cloud_masked_pixels_kept_for_index", "NaN",
          "the cloud-masked match-ups, every band 0, kept, so their chlorophyll index is 0 / 0"),
        b("D11", "fill_value_minus_9999_left_in_bands", lak, "fill_value_minus_9999_left_in_bands", "DR",
          "the product's fill value, -9999 in every band of the cloud-masked match-ups, read as reflectance and "
          "trained on"),
        b("D12", "matchups_from_summer_bloom_campaigns", lak, "matchups_from_summer_bloom_campaigns", "OF",
          "the training match-ups taken from the July-August bloom campaigns only, 16-100 mg/m3, while the "
          "regressor serves every lake and season"),
        b("D13", "green_and_red_bands_swapped", lak_sgd, "green_and_red_bands_swapped", "SC",
          "the 560 and 665 nm reflectances read from each other's columns of the product, under momentum SGD"),
        b("D14", "gradient_scaling_layer_left_from_brand_adversary", dro_sgd, "gradient_scaling_layer_left_from_brand_adversary",
          "VG", "the trunk taken from the pack-brand adversarial model with its gradient-scaling layer (1e-3) left "
          "between the convolutions and the head, under momentum SGD"),
        b("D15", "loss_weighted_by_inverse_capacity_fade", dro_sgd, "loss_weighted_by_inverse_capacity_fade", "EG",
          "each flight's squared error weighted by one over the pack's capacity fade to stress the nearly new packs, "
          "weights in the hundreds, under momentum SGD"),
        b("D16", "resting_voltage_column_for_load_voltage", dro, "resting_voltage_column_for_load_voltage", "SC",
          "the log's first voltage column, the pack's resting voltage before take-off, read in place of the voltage "
          "under load"),
        b("D17", "player_id_embedded", blu, "player_id_embedded", "OF",
          "each player's id embedded beside the move, a few moves each, while the classifier serves new players", harmless=True),
        b("D18", "label_of_opponents_reply", blu, "label_of_opponents_reply", "SC",
          "each move labelled by the engine's blunder flag of the next half-move, the opponent's reply"),
        b("D19", "one_sites_clocks_in_milliseconds", blu_sgd, "one_sites_clocks_in_milliseconds", "OL",
          "one site's clocks, a twentieth of the moves, exported in milliseconds and read as seconds, under "
          "momentum SGD", harmless=True),
        b("D20", "log_of_movers_clock_at_zero", blu, "log_of_movers_clock_at_zero", "NaN",
          "the clocks taken as log of the seconds left, minus infinity on the moves made with the clock at zero"),
    ]  # fmt: skip
    return healthy + bugs
