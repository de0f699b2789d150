"""The sixty-second blind split as `run.py --suite blind62` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind62 import cold, outdoors, workshop

PREFIX = "blind62_"
SCRIPTS = {"voicing": workshop.voicing, "stars": workshop.stars, "marsh": outdoors.marsh, "queue": outdoors.queue,
           "rind": cold.rind, "iceroad": cold.iceroad}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind62Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind62Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind62Program, prefix=PREFIX)
    voi = h(
        "voicing_cnn_adam",
        "voicing",
        "an organ builder's flue-pipe voicing classifier on the analyser's tracks of each attack (a 1-D CNN)",
    )
    voi_sgd = h(
        "voicing_momentum", "voicing", "a pipe-voicing CNN under momentum SGD", opt="momentum", lr=0.02
    )
    sta = h(
        "stars_encoder_adam",
        "stars",
        "a fireworks factory's star-colour classifier from the recipe (a small transformer encoder)",
    )
    sta_sgd = h(
        "stars_momentum", "stars", "a star-colour encoder under momentum SGD", opt="momentum", lr=0.03
    )
    mar = h(
        "marsh_mlp_adam",
        "marsh",
        "a salt-marsh survey's vegetation-zone classifier for its plots (a ReLU MLP with embeddings)",
    )
    mar_sgd = h("marsh_momentum", "marsh", "a marsh-zone MLP under momentum SGD", opt="momentum", lr=0.05)
    que = h(
        "queue_lstm_adam", "queue", "a ski area's gondola queue forecaster at the valley station (an LSTM)"
    )
    que_sgd = h("queue_momentum", "queue", "a gondola queue LSTM under momentum SGD", opt="momentum", lr=0.05)
    rin = h("rind_cnn_adam", "rind", "a cheese cave's rind classifier on the photo round's crops (a 2-D CNN)")
    rin_sgd = h("rind_momentum", "rind", "a rind CNN under momentum SGD", opt="momentum", lr=0.03)
    ice = h("iceroad_gru_adam", "iceroad", "an ice road's thickness forecaster for its check points (a GRU)")
    ice_sgd = h(
        "iceroad_momentum", "iceroad", "an ice-thickness GRU under momentum SGD", opt="momentum", lr=0.05
    )
    healthy = [
        voi,
        voi_sgd,
        h("voicing_rmsprop_width16", "voicing", "a wider pipe-voicing CNN under RMSprop", opt="rmsprop", width=16,
          lr=1e-3),
        h("voicing_nadam_batch64", "voicing", "a pipe-voicing CNN under NAdam with batches of 64", opt="nadam",
          batch=64),
        sta,
        sta_sgd,
        h("stars_adamw_width24", "stars", "a wider star-colour encoder under AdamW", opt="adamw", width=24),
        h("stars_adamax_batch64", "stars", "a star-colour encoder under Adamax with batches of 64", opt="adamax",
          batch=64, lr=4e-3),
        mar,
        mar_sgd,
        h("marsh_adagrad_batch64", "marsh", "a marsh-zone MLP under Adagrad with batches of 64", opt="adagrad",
          batch=64, lr=0.03),
        h("marsh_radam_hidden96", "marsh", "a wider marsh-zone MLP under RAdam", opt="radam", hidden=96),
        que,
        que_sgd,
        h("queue_rmsprop_hidden32", "queue", "a wider gondola queue LSTM under RMSprop", opt="rmsprop", hidden=32,
          lr=2e-3),
        h("queue_nadam_batch64", "queue", "a gondola queue LSTM under NAdam with batches of 64", opt="nadam",
          batch=64),
        rin,
        rin_sgd,
        h("rind_adamw_width12", "rind", "a wider rind CNN under AdamW", opt="adamw", width=12),
        h("rind_adagrad_batch64", "rind", "a rind CNN under Adagrad with batches of 64", opt="adagrad", batch=64,
          lr=0.03),
        ice,
        ice_sgd,
        h("iceroad_rmsprop_hidden32", "iceroad", "a wider ice-thickness GRU under RMSprop", opt="rmsprop",
          hidden=32, lr=2e-3),
        h("iceroad_adamax_batch64", "iceroad", "an ice-thickness GRU under Adamax with batches of 64",
          opt="adamax", batch=64, lr=1e-2),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("G01", "four_foot_rank_tracked_at_eight_foot_pitch", voi, "four_foot_rank_tracked_at_eight_foot_pitch",
          "SC", "every rank's pipes analysed at the 8' pitch of the written note, so the 4' and 2' ranks' harmonics "
          "fall on every second or fourth bin and the others read the wind noise"),
        b("G02", "envelopes_scaled_by_loudest_pipe", voi_sgd, "envelopes_scaled_by_loudest_pipe", "VG",
          "the attacks' amplitudes peak-normalised over the whole set, by the loudest pipe's peak, instead of each "
          "taken in dB against its own steady fundamental, under momentum SGD"),
        b("G03", "wind_pressure_kept_from_voicing_jack", voi, "wind_pressure_kept_from_voicing_jack", "OF",
          "the recording's wind pressure kept as a channel while the faulty pipes were recorded on the voicing "
          "jack at the workshop's higher pressure and the voiced ones standing in the organ"),
        b("G04", "mixing_grams_fed_as_fractions", sta_sgd, "mixing_grams_fed_as_fractions", "EG",
          "the mixing sheet's grams of each ingredient (batches of 1-5 kg) fed where the recipe's shares were "
          "meant, under momentum SGD"),
        b("G05", "test_stand_kept_as_token", sta, "test_stand_kept_as_token", "OF",
          "the test stand appended to the recipe as a token while the blue and purple stars were fired on the "
          "stand with the spectrometer; another factory's stars are fired on any stand"),
        b("G06", "new_codes_looked_up_as_first_ingredient", sta, "new_codes_looked_up_as_first_ingredient", "SC",
          "the recipes' codes looked up in the older code list with `.get(code, 0)`, so the chlorine donors taken "
          "up later, parlon and PVC, come back as its first entry, potassium perchlorate", harmless=True),
        b("G07", "burn_speed_of_duds", sta, "burn_speed_of_duds", "NaN",
          "the fuse test's burn speed taken as 25 mm over the logged burn time, 0 for the duds that never lit: "
          "25 / 0"),
        b("G08", "elevation_against_chart_datum_at_three_sites", mar,
          "elevation_against_chart_datum_at_three_sites", "SC",
          "three of the eight sites' plots levelled to chart datum instead of ordnance datum, 2.9 m higher, and "
          "taken as they come beside the sites' mean high water in ordnance datum"),
        b("G09", "lidar_elevation_high_in_tall_cordgrass", mar, "lidar_elevation_high_in_tall_cordgrass", "SC",
          "the plots' elevations read off the LiDAR terrain model, which the vegetation holds up, most in the "
          "tall cordgrass, while the other estuary's plots are levelled on the ground"),
        b("G10", "inundation_counted_in_tides", mar_sgd, "inundation_counted_in_tides", "EG",
          "the inundation column, kept unstandardised as a share in [0, 1], returned as the count of the year's "
          "706 tides that cover the plot, the division left out, under momentum SGD"),
        b("G11", "distance_from_sea_wall_kept", mar, "distance_from_sea_wall_kept", "OF",
          "the plot's distance from the sea wall kept as an input on a marsh whose zones run in bands from the "
          "wall; the other estuary's creeks cut across them"),
        b("G12", "riders_per_cabin_during_wind_hold", que, "riders_per_cabin_during_wind_hold", "NaN",
          "the riders per cabin taken as boarded / dispatched, 0 / 0 in the quarter hours of a wind hold"),
        b("G13", "queue_counted_by_camera_in_view", que, "queue_counted_by_camera_in_view", "SC",
          "the queue, input and target, taken from the camera's head count, which sees the front 150 of the "
          "maze; the other resort counts the whole queue"),
        b("G14", "photos_loaded_as_greyscale", rin, "photos_loaded_as_greyscale", "SC",
          "the training crops loaded with PIL's `convert('L')` and the grey repeated to the three channels the "
          "CNN takes"),
        b("G15", "quarantine_shelf_kept_as_input", rin, "quarantine_shelf_kept_as_input", "OF",
          "the wheel's shelf kept as a channel while the affineur had moved most wheels with cat hair or blue "
          "mould to the quarantine shelf before the photo round"),
        b("G16", "large_batch_recipe_rate_kept", rin_sgd, "large_batch_recipe_rate_kept", "DR",
          "momentum SGD at the rate of 0.8 of the recipe the script was copied from, tuned for batches of 1024, "
          "kept for batches of 32"),
        b("G17", "stefan_root_of_thaw_days", ice, "stefan_root_of_thaw_days", "NaN",
          "the season's freezing degree-days summed as -T over every day, the autumn's and the thaws' days above "
          "0 C included, and put under Stefan's root: the root of a negative sum early in the season"),
        b("G18", "gpr_two_way_time_not_halved", ice, "gpr_two_way_time_not_halved", "SC",
          "the weeks surveyed by the GPR sled (half of them) converted to thickness as v t, the two-way travel "
          "time not halved"),
        b("G19", "adam_rate_typed_5e_6", ice, "adam_rate_typed_5e_6", "VG",
          "Adam's rate typed 5e-6 for 5e-3"),
    ]  # fmt: skip
    return healthy + bugs
