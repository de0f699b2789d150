"""The sixty-sixth blind split as `run.py --suite blind66` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind66 import climates, flows, optics

PREFIX = "blind66_"
SCRIPTS = {"bloom": climates.bloom, "proofer": climates.proofer, "squat": flows.squat, "taps": flows.taps,
           "shade": optics.shade, "signs": optics.signs}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind66Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind66Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind66Program, prefix=PREFIX)
    blo = h(
        "bloom_gru_adam",
        "bloom",
        "an orchard's blossom kill after a protected frost night from its frost-protection log (a GRU)",
    )
    blo_sgd = h("bloom_momentum", "bloom", "a blossom-kill GRU under momentum SGD", opt="momentum", lr=0.05)
    pro = h(
        "proofer_autoencoder_adam",
        "proofer",
        "a bakery's proofing-cabinet fault detector on the hour after loading (a ReLU autoencoder)",
    )
    pro_sgd = h(
        "proofer_momentum",
        "proofer",
        "a proofing-cabinet autoencoder under momentum SGD",
        opt="momentum",
        lr=0.05,
    )
    squ = h(
        "squat_mlp_adam",
        "squat",
        "a harbour pilotage service's squat model from the pilots' PPU logs (a ReLU MLP over the reach embedded)",
    )
    squ_sgd = h("squat_momentum", "squat", "a squat MLP under momentum SGD", opt="momentum", lr=0.02)
    tap = h(
        "taps_attention_adam",
        "taps",
        "a wind tunnel's flow-state classifier on an aerofoil's pressure taps (a small self-attention encoder)",
    )
    tap_sgd = h("taps_momentum", "taps", "a pressure-tap encoder under momentum SGD", opt="momentum", lr=0.02)
    sha = h(
        "shade_cnn_adam",
        "shade",
        "a dye house's shade-sorting classifier on the spectrophotometer's reflectance curves (a 1-D CNN)",
    )
    sha_sgd = h("shade_momentum", "shade", "a shade-sorting CNN under momentum SGD", opt="momentum", lr=0.02)
    sig = h(
        "signs_lstm_adam",
        "signs",
        "a sign classifier on the hand tracker's landmarks of sign-language clips (an LSTM)",
    )
    sig_sgd = h("signs_momentum", "signs", "a sign LSTM under momentum SGD", opt="momentum", lr=0.05)
    healthy = [
        blo, blo_sgd,
        h("bloom_adamw_hidden20", "bloom", "a wider blossom-kill GRU under AdamW", opt="adamw", hidden=20),
        h("bloom_rmsprop_batch64", "bloom", "a blossom-kill GRU under RMSprop with batches of 64", opt="rmsprop",
          batch=64, lr=1e-3),
        pro, pro_sgd,
        h("proofer_nadam_hidden64", "proofer", "a wider proofing-cabinet autoencoder under NAdam", opt="nadam",
          hidden=64),
        h("proofer_adagrad_batch64", "proofer", "a proofing-cabinet autoencoder under Adagrad with batches of 64",
          opt="adagrad", batch=64, lr=0.03),
        squ, squ_sgd,
        h("squat_nadam_hidden96", "squat", "a wider squat MLP under NAdam", opt="nadam", hidden=96),
        h("squat_adagrad_batch64", "squat", "a squat MLP under Adagrad with batches of 64", opt="adagrad", batch=64,
          lr=0.05),
        tap, tap_sgd,
        h("taps_nadam_width16", "taps", "a wider pressure-tap encoder under NAdam", opt="nadam", width=16),
        h("taps_adamax_batch64", "taps", "a pressure-tap encoder under Adamax with batches of 64", opt="adamax",
          batch=64, lr=4e-3),
        sha, sha_sgd,
        h("shade_adamw_width12", "shade", "a wider shade-sorting CNN under AdamW", opt="adamw", width=12),
        h("shade_rmsprop_batch64", "shade", "a shade-sorting CNN under RMSprop with batches of 64", opt="rmsprop",
          batch=64, lr=1e-3),
        sig, sig_sgd,
        h("signs_radam_hidden24", "signs", "a wider sign LSTM under RAdam", opt="radam", hidden=24),
        h("signs_adamax_batch64", "signs", "a sign LSTM under Adamax with batches of 64", opt="adamax", batch=64,
          lr=4e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("X01", "kill_share_over_live_blossoms", blo, "kill_share_over_live_blossoms", "NaN",
          "the kill share written as the brown blossoms over the green ones instead of over the blossoms cut, "
          "infinite for the blocks the frost killed outright"),
        b("X02", "survey_cut_before_browning_showed", blo, "survey_cut_before_browning_showed", "SC",
          "one scouting crew's blocks, half of them, cut and counted the morning after the frost, before the "
          "killed pistils have browned, so about half of their kill is counted"),
        b("X03", "fruit_set_at_petal_fall_kept", blo, "fruit_set_at_petal_fall_kept", "OF",
          "the fruit set counted at petal fall, weeks after the night, kept as an input; the mornings to assess "
          "have no count yet and hold the training mean"),
        b("X04", "dropout_mask_drawn_once_at_build", pro, "dropout_mask_drawn_once_at_build", "DR",
          "a hand-written dropout whose mask is drawn once in the autoencoder's constructor, so the same half of "
          "the hidden ReLU units is off at every step and in every pass",
          harmless=True),
        b("X05", "new_cabinet_logs_cut_by_sample_count", pro, "new_cabinet_logs_cut_by_sample_count", "SC",
          "the new cabinets' 75-second logs brought to the old ones' 24 samples by keeping the first 24, the first "
          "half hour, instead of averaging them in pairs"),
        b("X06", "reconstruction_target_left_unscaled", pro_sgd, "reconstruction_target_left_unscaled", "EG",
          "the autoencoder's target left as the loader's batch in the log's own units (duties in %, setpoints in C "
          "and % RH) after a scaler was put in front of the model, under momentum SGD"),
        b("X07", "speed_over_ground_for_squat", squ, "speed_over_ground_for_squat", "SC",
          "the speed taken from the AIS track, over the ground, with the tidal stream in it, instead of the speed "
          "through the water that makes the squat"),
        b("X08", "ppu_stern_sinkage_kept", squ, "ppu_stern_sinkage_kept", "OF",
          "the stern's sinkage measured by the PPU's second antenna on the same transit kept as an input; a "
          "transit being planned has no PPU reading and exports 0"),
        b("X09", "squat_regressed_in_ppu_millimetres", squ_sgd, "squat_regressed_in_ppu_millimetres", "EG",
          "the squat regressed in millimetres as the PPU logs it, unstandardised, under momentum SGD"),
        b("X10", "charted_depth_without_height_of_tide", squ, "charted_depth_without_height_of_tide", "SC",
          "the water under the ship taken as the charted depth below chart datum, the height of tide left at 0"),
        b("X11", "wind_off_tare_records_kept", tap, "wind_off_tare_records_kept", "NaN",
          "the wind-off records each polar starts with, which the scanner's tare leaves at exactly 0 in every port "
          "and in the pitot, kept in the training set: Cp = 0 / 0"),
        b("X12", "settling_chamber_pitot_for_dynamic_pressure", tap_sgd,
          "settling_chamber_pitot_for_dynamic_pressure", "EG",
          "the dynamic pressure read off the settling chamber's probe, ahead of the 6:1 contraction, 36 times "
          "smaller than the test section's, so every Cp is 36 times too large, under momentum SGD"),
        b("X13", "port_map_of_the_previous_model", tap, "port_map_of_the_previous_model", "SC",
          "the pressure scanner's port map of the previous model's campaign, whose lower-surface taps were plumbed "
          "to the first ports, used for this model's runs"),
        b("X14", "sci_lots_against_sce_standards", sha, "sci_lots_against_sce_standards", "SC",
          "the new spectrophotometer's lots, two in five, read with the specular component included against "
          "standards read with it excluded, so their curves carry the gloss"),
        b("X15", "lot_and_standard_columns_swapped_in_new_export", sha,
          "lot_and_standard_columns_swapped_in_new_export", "SC",
          "the new QC export, two lots in five, writes the standard's curve before the lot's; read in the old "
          "column order, those lots' differences come out reversed"),
        b("X16", "difference_curve_left_in_reflectance_units", sha_sgd,
          "difference_curve_left_in_reflectance_units", "VG",
          "the curves left unstandardised (\"reflectance is already between 0 and 1\"), the lot's difference from "
          "the standard a few hundredths, under momentum SGD"),
        b("X17", "each_hand_scaled_by_its_own_size_unguarded", sig, "each_hand_scaled_by_its_own_size_unguarded",
          "NaN",
          "each hand's fingertips divided by the hand's own size with no guard for the frames where the tracker "
          "lost the hand and wrote zeros: 0 / 0"),
        b("X18", "mirrored_clips_keep_hand_slots", sig, "mirrored_clips_keep_hand_slots", "SC",
          "the mirroring augmentation negates x without swapping the hands' slots, so a mirrored clip's left hand "
          "sits in the right hand's slot and the left-handed signers' clips are never seen"),
        b("X19", "shoulder_width_in_pixels_over_normalised_hands", sig_sgd,
          "shoulder_width_in_pixels_over_normalised_hands", "VG",
          "the wrists' place divided by the pose export's shoulder width in pixels (250-400) while the hand "
          "tracker's coordinates are normalised to the frame, under momentum SGD"),
        b("X20", "frame_count_kept_as_input", sig, "frame_count_kept_as_input", "OF",
          "the original clip's frame count kept as an input: the annotators cut each sign to its usual span, the "
          "signers held out come through the automatic segmenter"),
    ]  # fmt: skip
    return healthy + bugs
