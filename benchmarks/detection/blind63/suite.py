"""The sixty-third blind split as `run.py --suite blind63` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind63 import benches, lines, stations

PREFIX = "blind63_"
SCRIPTS = {"lantern": stations.lantern, "ablation": stations.ablation, "spine": benches.spine,
           "granule": benches.granule, "rigging": lines.rigging, "symbols": lines.symbols}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind63Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind63Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind63Program, prefix=PREFIX)
    lan = h(
        "lantern_gru_adam",
        "lantern",
        "an unmanned lighthouse's next-dawn battery charge from its controller log (a GRU)",
    )
    lan_sgd = h(
        "lantern_momentum", "lantern", "a lighthouse battery GRU under momentum SGD", opt="momentum", lr=0.02
    )
    abl = h(
        "ablation_attention_adam",
        "ablation",
        "a glacier station's daily melt from its three-hourly records (a small self-attention encoder)",
    )
    abl_sgd = h(
        "ablation_momentum", "ablation", "a glacier melt encoder under momentum SGD", opt="momentum", lr=0.02
    )
    spi = h(
        "spine_mlp_adam",
        "spine",
        "a bindery's page-pull outcome of perfect-bound jobs (a ReLU MLP over the adhesive embedded)",
    )
    spi_sgd = h("spine_momentum", "spine", "a page-pull MLP under momentum SGD", opt="momentum", lr=0.02)
    gra = h(
        "granule_mlp_adam",
        "granule",
        "a honey packer's days to granulation of its lots (a SiLU MLP under the Huber loss)",
    )
    gra_sgd = h(
        "granule_momentum", "granule", "a granulation MLP under momentum SGD", opt="momentum", lr=0.02
    )
    rig = h(
        "rigging_cnn_adam",
        "rigging",
        "a circus's rigging-load event classifier on an aerial act's bridle legs (a 1-D CNN)",
    )
    rig_sgd = h(
        "rigging_momentum", "rigging", "a bridle-load CNN under momentum SGD", opt="momentum", lr=0.02
    )
    sym = h(
        "symbols_cnn_adam",
        "symbols",
        "a map library's symbol classifier on scanned topographic sheets (a 2-D CNN)",
    )
    sym_sgd = h("symbols_momentum", "symbols", "a map-symbol CNN under momentum SGD", opt="momentum", lr=0.05)
    healthy = [
        lan, lan_sgd,
        h("lantern_adamw_hidden32", "lantern", "a wider lighthouse battery GRU under AdamW", opt="adamw", hidden=32),
        h("lantern_rmsprop_batch64", "lantern", "a lighthouse battery GRU under RMSprop with batches of 64",
          opt="rmsprop", batch=64, lr=1e-3),
        abl, abl_sgd,
        h("ablation_nadam_width24", "ablation", "a wider glacier melt encoder under NAdam", opt="nadam", width=24),
        h("ablation_adamax_batch64", "ablation", "a glacier melt encoder under Adamax with batches of 64",
          opt="adamax", batch=64, lr=4e-3),
        spi, spi_sgd,
        h("spine_adamax_hidden96", "spine", "a wider page-pull MLP under Adamax", opt="adamax", hidden=96, lr=4e-3),
        h("spine_radam_batch64", "spine", "a page-pull MLP under RAdam with batches of 64", opt="radam", batch=64),
        gra, gra_sgd,
        h("granule_adamw_hidden64", "granule", "a wider granulation MLP under AdamW", opt="adamw", hidden=64),
        h("granule_adagrad_batch64", "granule", "a granulation MLP under Adagrad with batches of 64", opt="adagrad",
          batch=64, lr=0.03),
        rig, rig_sgd,
        h("rigging_nadam_width16", "rigging", "a wider bridle-load CNN under NAdam", opt="nadam", width=16),
        h("rigging_rmsprop_batch64", "rigging", "a bridle-load CNN under RMSprop with batches of 64", opt="rmsprop",
          batch=64, lr=1e-3),
        sym, sym_sgd,
        h("symbols_adamw_width12", "symbols", "a wider map-symbol CNN under AdamW", opt="adamw", width=12),
        h("symbols_adagrad_batch64", "symbols", "a map-symbol CNN under Adagrad with batches of 64", opt="adagrad",
          batch=64, lr=0.03),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("F01", "night_share_over_midnight_sun", lan, "night_share_over_midnight_sun", "NaN",
          "the lantern's night share taken as its lit hours over the almanac's hours of darkness, with no guard for "
          "the lights north of the Arctic circle, whose summer nights have none: 0 / 0"),
        b("F02", "fog_hours_scaled_by_zero_iqr", lan_sgd, "fog_hours_scaled_by_zero_iqr", "NaN",
          "every column robust-scaled by its median and interquartile range for the skewed fog hours, whose IQR is 0 "
          "since four days in five have no fog, under momentum SGD"),
        b("F03", "days_to_next_visit_from_callouts", lan, "days_to_next_visit_from_callouts", "OF",
          "the days to the next service visit kept as an input from a district whose visits are callouts when the "
          "charge runs low; another district's visits are a fixed round"),
        b("F04", "charge_read_at_dusk_for_target", lan, "charge_read_at_dusk_for_target", "SC",
          "the target read from the log's last charge reading of the day, the dusk one, before the night's "
          "discharge, instead of the next dawn's"),
        b("F05", "ranger_distance_without_sound_speed_correction", abl,
          "ranger_distance_without_sound_speed_correction", "SC",
          "the sonic ranger's distances, timed at the speed of sound at 0 C, used without the air temperature's "
          "correction, so a day that warms or cools reads a lowering that is not melt"),
        b("F06", "melt_target_in_metres_water_equivalent", abl_sgd, "melt_target_in_metres_water_equivalent", "VG",
          "the melt regressed in metres water equivalent as the mass-balance database holds it (0.01-0.1), not "
          "standardised, under momentum SGD"),
        b("F07", "ranger_lowering_kept_for_gap_filling", abl, "ranger_lowering_kept_for_gap_filling", "OF",
          "the ranger's lowering of the day kept as an input to a model meant to fill the ranger's gaps; on the days "
          "to fill, the held-out station's column holds the training mean"),
        b("F08", "grain_read_off_the_parent_sheet", spi, "grain_read_off_the_parent_sheet", "SC",
          "the grain column filled from the mill's spec of the parent sheet, so for the half of the jobs imposed "
          "broadside the grain against the spine is the wrong way round"),
        b("F09", "humidity_from_building_setpoint", spi, "humidity_from_building_setpoint", "SC",
          "the humidity column taken from the building's climate control, its setpoint of 45 %, instead of the "
          "press room's logger",
          harmless=True),
        b("F10", "minmax_written_from_the_maximum", spi_sgd, "minmax_written_from_the_maximum", "DR",
          "min-max scaling typed (x - max) / (max - min), every input in [-1, 0] before the ReLU layers, under "
          "momentum SGD",
          harmless=True),
        b("F11", "granulation_counted_from_packing", gra, "granulation_counted_from_packing", "SC",
          "the days to granulation of one packer's lots, two in five, counted from packing instead of from "
          "extraction, 10-90 days later"),
        b("F12", "crystal_count_from_thirty_day_check", gra, "crystal_count_from_thirty_day_check", "OF",
          "the crystal count of the 30-day microscope check kept as an input; the new lots to forecast have not "
          "been checked and read 0"),
        b("F13", "columns_l2_normalised_over_lots", gra_sgd, "columns_l2_normalised_over_lots", "VG",
          "each column divided by its L2 norm over the 900 lots, taken for a standardisation, so the inputs sit "
          "near 0.03 and uncentred, under momentum SGD"),
        b("F14", "dynamic_factor_over_slack_line_start", rig, "dynamic_factor_over_slack_line_start", "NaN",
          "the dynamic factor taken as the load over the static load read off the trace's first 0.1 s, which a "
          "drop starts from a slack line: 0 / 0 and x / 0"),
        b("F15", "decimated_by_slicing", rig, "decimated_by_slicing", "SC",
          "the new logger's 200 Hz traces brought to 50 Hz by keeping every fourth sample with no low-pass, so the "
          "truss's hum aliases into the band and the shocks' peaks fall between the samples"),
        b("F16", "scaler_from_kilonewton_config_on_decanewtons", rig_sgd,
          "scaler_from_kilonewton_config_on_decanewtons", "EG",
          "the new logger's legs in daN standardised by the show config's statistics in kN, so the loads reach the "
          "CNN at ten times their scale, under momentum SGD"),
        b("F17", "scans_converted_to_grey", sym, "scans_converted_to_grey", "SC",
          "the scans read in grey (\"symbols are shapes\"), which loses the blue that tells a spring from a well "
          "and a marsh from heath"),
        b("F18", "microfilm_negatives_kept", sym, "microfilm_negatives_kept", "SC",
          "the microfilm scanner's patches, two in five, kept as the negatives they come as instead of inverted"),
        b("F19", "loss_times_world_size_on_one_process", sym_sgd, "loss_times_world_size_on_one_process", "EG",
          "the loss multiplied by the cluster recipe's world size of 8 kept in a one-process run, eight times the "
          "steps under momentum SGD"),
    ]  # fmt: skip
    return healthy + bugs
