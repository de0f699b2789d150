"""The fifty-eighth blind split as `run.py --suite blind58` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind58 import growers, makers, passage

PREFIX = "blind58_"
SCRIPTS = {"pollen": growers.pollen, "stress": growers.stress, "anneal": makers.anneal, "truing": makers.truing,
           "drift": passage.drift, "choir": passage.choir}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind58Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind58Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind58Program, prefix=PREFIX)
    pol = h(
        "pollen_cnn_adam",
        "pollen",
        "a beekeeper's pollen-forager classifier on entrance-tunnel crops (a 2-D CNN)",
    )
    str_ = h(
        "stress_mlp_adam",
        "stress",
        "an orchard's midday stem-water-potential regressor (a ReLU MLP over embedded block and rootstock)",
    )
    str_sgd = h("stress_momentum", "stress", "a stem-water-potential MLP under momentum SGD", opt="momentum",
                lr=0.01)  # fmt: skip
    ann = h(
        "anneal_cnn_adam",
        "anneal",
        "a glass studio's annealing-crack warning from the annealer's log (a 1-D CNN)",
    )
    ann_sgd = h(
        "anneal_momentum", "anneal", "an annealing-crack CNN under momentum SGD", opt="momentum", lr=0.01
    )
    tru = h(
        "truing_ae_adam", "truing", "a bicycle factory's wheel-truing check (a 1-D convolutional autoencoder)"
    )
    dri = h("drift_gru_adam", "drift", "a yacht's set-and-drift forecaster (a GRU over the log's records)")
    dri_sgd = h("drift_momentum", "drift", "a set-and-drift GRU under momentum SGD", opt="momentum", lr=0.05)
    cho = h(
        "choir_encoder_adam",
        "choir",
        "a choir's voice-part classifier over a sung excerpt (a transformer encoder)",
    )
    cho_sgd = h("choir_momentum", "choir", "a voice-part encoder under momentum SGD", opt="momentum", lr=0.02)
    healthy = [
        pol,
        h("pollen_momentum", "pollen", "a pollen-forager CNN under momentum SGD", opt="momentum", lr=0.02),
        h("pollen_adamw_width16", "pollen", "a wider pollen-forager CNN under AdamW", opt="adamw", width=16),
        h("pollen_rmsprop_batch64", "pollen", "a pollen-forager CNN under RMSprop with batches of 64", opt="rmsprop",
          batch=64, lr=1e-3),
        str_,
        str_sgd,
        h("stress_nadam_hidden128", "stress", "a wider stem-water-potential MLP under NAdam", opt="nadam",
          hidden=128),
        h("stress_adagrad_batch128", "stress", "a stem-water-potential MLP under Adagrad with batches of 128",
          opt="adagrad", batch=128, lr=0.02),
        ann,
        ann_sgd,
        h("anneal_adamw_width24", "anneal", "a wider annealing-crack CNN under AdamW", opt="adamw", width=24),
        h("anneal_nadam_batch64", "anneal", "an annealing-crack CNN under NAdam with batches of 64", opt="nadam",
          batch=64),
        tru,
        h("truing_momentum", "truing", "a wheel-truing autoencoder under momentum SGD", opt="momentum", lr=0.05),
        h("truing_rmsprop_width16", "truing", "a wider wheel-truing autoencoder under RMSprop", opt="rmsprop",
          width=16, lr=1e-3),
        h("truing_adamax_batch64", "truing", "a wheel-truing autoencoder under Adamax with batches of 64",
          opt="adamax", batch=64, lr=4e-3),
        dri,
        dri_sgd,
        h("drift_rmsprop_hidden32", "drift", "a wider set-and-drift GRU under RMSprop", opt="rmsprop", hidden=32,
          lr=2e-3),
        h("drift_nadam_batch128", "drift", "a set-and-drift GRU under NAdam with batches of 128", opt="nadam",
          batch=128),
        cho,
        cho_sgd,
        h("choir_adamax_width32", "choir", "a wider voice-part encoder under Adamax", opt="adamax", width=32, lr=4e-3),
        h("choir_nadam_batch64", "choir", "a voice-part encoder under NAdam with batches of 64", opt="nadam",
          batch=64),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("R01", "center_crop_cuts_off_pollen_baskets", pol, "center_crop_cuts_off_pollen_baskets", "SC",
          "the species classifier's CenterCrop(8) kept in the loader, cutting off the crop's lower rows where the "
          "hind legs carry the pollen loads"),
        b("R02", "tracked_bee_frames_kept_as_crops", pol, "tracked_bee_frames_kept_as_crops", "OF",
          "every frame of a tracked bee's walk through the tunnel saved as its own crop: 1200 crops of 50 bees"),
        b("R03", "labels_from_yellow_threshold_script", pol, "labels_from_yellow_threshold_script", "SC",
          "the training labels from a helper script counting yellow pixels, so orange, grey and white loads are "
          "labelled as bees without pollen"),
        b("R04", "log_vpd_of_supersaturated_humidity", str_, "log_vpd_of_supersaturated_humidity", "NaN",
          "the log of the vapour-pressure deficit taken from the canopy sensor's RH as logged, a little over 100 % "
          "on a wet morning"),
        b("R05", "stem_potential_left_in_kilopascals", str_sgd, "stem_potential_left_in_kilopascals", "DR",
          "this season's pressure-chamber sheet in kPa, scaled by the agronomist's fixed MPa figures, under "
          "momentum SGD"),
        b("R06", "eto_lag_for_every_day_since_bloom", str_, "eto_lag_for_every_day_since_bloom", "OF",
          "a column for each day's reference evapotranspiration since bloom (120) kept from the water-balance "
          "spreadsheet, for 400 rows"),
        b("R07", "colour_coefficient_in_ppm_from_second_supplier", ann,
          "colour_coefficient_in_ppm_from_second_supplier", "SC",
          "the second colour supplier's expansion coefficients entered as printed in 1e-6/K (9.6 for 96) beside "
          "the studio's 1e-7/K"),
        b("R08", "controller_export_cut_after_soak", ann, "controller_export_cut_after_soak", "SC",
          "the annealer controller's export holding only the program's first segments, up to the end of the soak"),
        b("R09", "momentum_given_as_dampening", ann_sgd, "momentum_given_as_dampening", "VG",
          "torch.optim.SGD given the config's momentum of 0.9 as its dampening as well"),
        b("R10", "loss_weighted_by_piece_price", ann_sgd, "loss_weighted_by_piece_price", "EG",
          "each piece's BCE weighted by its price in euros (80-1300), unnormalised, under momentum SGD"),
        b("R11", "rim_profile_zero_padded", tru, "rim_profile_zero_padded", "SC",
          "the encoder's convolutions zero-padded at the valve hole on a profile that goes round the rim",
          harmless=True),
        b("R12", "second_stand_profiles_in_micrometres", tru, "second_stand_profiles_in_micrometres", "SC",
          "the second truing stand's profiles exported in micrometres and read as the first stand's mm"),
        b("R13", "drift_speed_by_pythagoras_of_speeds", dri, "drift_speed_by_pythagoras_of_speeds", "NaN",
          "the drift taken as sqrt(SOG^2 - STW^2), set square to the heading, the root of a negative number "
          "whenever the boat makes less over the ground than through the water"),
        b("R14", "atlas_set_read_as_direction_from", dri, "atlas_set_read_as_direction_from", "SC",
          "the tidal atlas's set, where the stream runs to, converted as a wind's direction, where it comes from"),
        b("R15", "adcp_current_in_cm_per_s", dri_sgd, "adcp_current_in_cm_per_s", "EG",
          "the harbour ADCP's currents exported in cm/s, taken as knots like the atlas's rows, under momentum SGD"),
        b("R16", "unvoiced_notes_logged_at_zero_hz", cho, "unvoiced_notes_logged_at_zero_hz", "NaN",
          "the cents from A4 taken of every note, the pitch tracker's 0 Hz for an unvoiced one included"),
        b("R17", "speech_tracker_ceiling_of_400_hz", cho, "speech_tracker_ceiling_of_400_hz", "SC",
          "the pitch tracker's fmax left at its speech preset's 400 Hz: higher notes found an octave down"),
        b("R18", "part_codes_reversed_in_new_roster", cho, "part_codes_reversed_in_new_roster", "SC",
          "the new app's roster coding the parts from the bottom up (0 bass ... 3 soprano), merged with the old "
          "roster's codes as they are"),
        b("R19", "layer_norm_eps_typed_1e5", cho_sgd, "layer_norm_eps_typed_1e5", "VG",
          "the encoder layer's layer_norm_eps typed 1e5 for 1e-5, under momentum SGD"),
    ]  # fmt: skip
    return healthy + bugs
