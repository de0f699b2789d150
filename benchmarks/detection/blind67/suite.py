"""The sixty-seventh blind split as `run.py --suite blind67` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind67 import lofts, stores, yards

PREFIX = "blind67_"
SCRIPTS = {"cabinet": stores.cabinet, "flush": stores.flush, "laminate": lofts.laminate,
           "varnish": lofts.varnish, "depot": yards.depot, "profile": yards.profile}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind67Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind67Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind67Program, prefix=PREFIX)
    cab = h(
        "cabinet_mlp_adam",
        "cabinet",
        "a hospital pharmacy's stock-out forecast for its ward cabinets' pockets (a ReLU MLP)",
    )
    cab_sgd = h("cabinet_momentum", "cabinet", "a cabinet stock-out MLP under momentum SGD", opt="momentum",
                lr=0.02)  # fmt: skip
    fl = h(
        "flush_cnn_adam",
        "flush",
        "a mushroom farm's first-flush yield from its rooms' daily climate records (a 1-D CNN)",
    )
    fl_sgd = h(
        "flush_momentum", "flush", "a first-flush yield CNN under momentum SGD", opt="momentum", lr=0.02
    )
    lam = h(
        "laminate_autoencoder_adam",
        "laminate",
        "a sail loft's defect detector on the gauge scans of its laminated sailcloth (a tanh autoencoder)",
    )
    lam_sgd = h("laminate_momentum", "laminate", "a sailcloth scan autoencoder under momentum SGD", opt="momentum",
                lr=0.05)  # fmt: skip
    var = h(
        "varnish_mlp_adam",
        "varnish",
        "a violin maker's hours until a coat of oil varnish can be rubbed out (a tanh MLP, L1 loss)",
    )
    var_sgd = h(
        "varnish_momentum", "varnish", "a varnish drying MLP under momentum SGD", opt="momentum", lr=0.02
    )
    dep = h(
        "depot_lstm_adam",
        "depot",
        "an electric bus depot's overnight charging need of each bus from its telematics (an LSTM)",
    )
    dep_sgd = h(
        "depot_momentum", "depot", "a bus charging-need LSTM under momentum SGD", opt="momentum", lr=0.05
    )
    pro = h(
        "profile_attention_adam",
        "profile",
        "an avalanche service's extended-column-test result of its snow profiles (a self-attention encoder)",
    )
    pro_sgd = h(
        "profile_momentum", "profile", "a snow-profile encoder under momentum SGD", opt="momentum", lr=0.02
    )
    healthy = [
        cab, cab_sgd,
        h("cabinet_adamw_hidden64", "cabinet", "a wider cabinet stock-out MLP under AdamW", opt="adamw", hidden=64),
        h("cabinet_adagrad_batch64", "cabinet", "a cabinet stock-out MLP under Adagrad with batches of 64",
          opt="adagrad", batch=64, lr=0.03),
        fl, fl_sgd,
        h("flush_rmsprop_width16", "flush", "a wider first-flush yield CNN under RMSprop", opt="rmsprop", width=16,
          lr=1e-3),
        h("flush_nadam_batch64", "flush", "a first-flush yield CNN under NAdam with batches of 64", opt="nadam",
          batch=64),
        lam, lam_sgd,
        h("laminate_rmsprop_hidden24", "laminate", "a wider sailcloth scan autoencoder under RMSprop", opt="rmsprop",
          hidden=24, lr=1e-3),
        h("laminate_adamax_batch64", "laminate", "a sailcloth scan autoencoder under Adamax with batches of 64",
          opt="adamax", batch=64, lr=4e-3),
        var, var_sgd,
        h("varnish_nadam_hidden48", "varnish", "a wider varnish drying MLP under NAdam", opt="nadam", hidden=48),
        h("varnish_radam_batch64", "varnish", "a varnish drying MLP under RAdam with batches of 64", opt="radam",
          batch=64),
        dep, dep_sgd,
        h("depot_rmsprop_hidden24", "depot", "a wider bus charging-need LSTM under RMSprop", opt="rmsprop", hidden=24,
          lr=1e-3),
        h("depot_adamw_batch64", "depot", "a bus charging-need LSTM under AdamW with batches of 64", opt="adamw",
          batch=64),
        pro, pro_sgd,
        h("profile_adamax_width16", "profile", "a wider snow-profile encoder under Adamax", opt="adamax", width=16,
          lr=4e-3),
        h("profile_radam_batch64", "profile", "a snow-profile encoder under RAdam with batches of 64", opt="radam",
          batch=64),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("K01", "days_of_cover_over_undispensed_items", cab, "days_of_cover_over_undispensed_items", "NaN",
          "the days of cover taken as the units on hand over the week's mean daily issues, with no guard for the "
          "items kept for the odd patient and not issued all week: x / 0 and 0 / 0"),
        b("K02", "overrides_in_the_interval_kept", cab, "overrides_in_the_interval_kept", "OF",
          "the nurses' overrides logged for the pocket over the interval to the restock kept as an input; for the "
          "live cabinets to forecast the interval is still ahead and the column reads 0"),
        b("K03", "on_hand_from_the_restock_report", cab, "on_hand_from_the_restock_report", "SC",
          "the on-hand joined from the restock report, the count the technician left at the last fill (the par), "
          "instead of the cabinet's live count"),
        b("K04", "log_co2_over_sensor_dropouts", fl, "log_co2_over_sensor_dropouts", "NaN",
          "the log of the rooms' CO2 taken as logged, the sensor's dropout days read 0 left in (the fixed script "
          "fills them from the day before): log 0"),
        b("K05", "climate_joined_on_reused_room_numbers", fl, "climate_joined_on_reused_room_numbers", "SC",
          "the climate logs joined to the crops on the room number, which the new block (two crops in five) numbers "
          "from 1 again, so those crops carry an old room's log"),
        b("K06", "watering_in_litres_per_room", fl, "watering_in_litres_per_room", "DR",
          "the new irrigation controller's litres per room (rooms of 180-220 m2) put in the watering channel whose "
          "statistics were fitted on the grower's litres per m2, before the ReLU convolutions"),
        b("K07", "yield_in_kilograms_per_tonne_unscaled", fl_sgd, "yield_in_kilograms_per_tonne_unscaled", "EG",
          "the yield regressed as the farm's books hold it, kg per tonne of compost (some 100-300), neither centred "
          "nor scaled, under momentum SGD"),
        b("K08", "rejected_rolls_left_in_training_scans", lam, "rejected_rolls_left_in_training_scans", "SC",
          "the training scans taken from every roll of the campaign, the rolls QC rejected (three scans in ten "
          "with a defect) included, so the autoencoder learns to rebuild the defects it should flag",
          harmless=True),
        b("K09", "scans_fed_in_kilograms_per_square_metre", lam_sgd, "scans_fed_in_kilograms_per_square_metre",
          "VG",
          "the gauge's newer export in kg/m2 fed as it comes, with no scaler since the values are 'already small' "
          "(0.18, the defects a few thousandths), under momentum SGD"),
        b("K10", "return_traverses_not_flipped", lam, "return_traverses_not_flipped", "SC",
          "the traversing gauge's return scans, recorded from the far side, left reversed, so half the training "
          "scans carry the drive side's heavy edge at the wrong end",
          harmless=True),
        b("K11", "uv_dose_in_joules_after_scaler", var_sgd, "uv_dose_in_joules_after_scaler", "VG",
          "the radiometer's UV dose of a day in J/m2 (up to some 500,000) put beside the columns after the scaler "
          "ran, saturating the tanh layer, under momentum SGD"),
        b("K12", "touch_dry_hours_for_target", var, "touch_dry_hours_for_target", "SC",
          "the maker's log's hours to touch-dry, next to the hours to rubbing out, read as the target"),
        b("K13", "cooking_batch_embedded", var, "cooking_batch_embedded", "OF",
          "the varnish's cooking batch (150 of them, five coats or so each) embedded; the other workshop's batches "
          "hash onto this one's rows"),
        b("K14", "energy_from_soc_with_the_standard_pack", dep, "energy_from_soc_with_the_standard_pack", "SC",
          "the energy to put back taken as the state of charge used times the standard bus's 350 kWh pack, the "
          "articulated buses' 560 kWh packs included"),
        b("K15", "hvac_watts_scaled_by_kilowatt_stats", dep_sgd, "hvac_watts_scaled_by_kilowatt_stats", "EG",
          "this depot's new telematics reporting the heating and air conditioning in W, standardised by the old "
          "fleet's statistics in kW, a thousand times the scale, under momentum SGD"),
        b("K16", "charger_delivered_energy_kept", dep, "charger_delivered_energy_kept", "OF",
          "the charger's delivered energy of the coming night joined as an input; for the buses to plan, whose night "
          "is still ahead, it reads 0"),
        b("K17", "stability_index_over_study_plot_shear", pro, "stability_index_over_study_plot_shear", "NaN",
          "the skier stability index taken as the weak layer's strength over the slab's shear stress on the pit's "
          "slope, the flat study plots' (three pits in ten) included: x / 0"),
        b("K18", "profiles_cut_to_the_forms_five_rows", pro, "profiles_cut_to_the_forms_five_rows", "SC",
          "the training profiles exported from the old database, whose profile form has five layer rows, so the "
          "deeper layers (and a weak layer among them) come back as empty rows"),
        b("K19", "density_in_kg_per_m3_for_ice_fraction", pro_sgd, "density_in_kg_per_m3_for_ice_fraction", "EG",
          "the new app's layer densities in kg/m3 (50-500) put where the ice's volume fraction goes, under momentum "
          "SGD"),
    ]  # fmt: skip
    return healthy + bugs
