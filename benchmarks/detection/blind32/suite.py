"""The thirty-second blind split as `run.py --suite blind32` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind32 import biomed, grids, physics

PREFIX = "blind32_"
SCRIPTS = {"jets": physics.jets, "precipitation": physics.precipitation, "clock": biomed.clock,
           "murmur": biomed.murmur, "chess": grids.chess, "seaice": grids.seaice}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind32Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind32Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind32Program, prefix=PREFIX)
    jet = h("jets_deepsets_adam", "jets", "a boosted-top jet tagger (deep sets over the jet's constituents)")
    jet_sgd = h("jets_momentum", "jets", "a top tagger under momentum SGD", opt="momentum", lr=0.02)
    rain = h("precipitation_tanh_adam", "precipitation",
             "a precipitation-type classifier on dual-polarisation radar features (a tanh MLP)")  # fmt: skip
    rain_cyc = h("precipitation_momentum_cyclic", "precipitation",
                 "a precipitation-type MLP under momentum SGD on a cyclic schedule", opt="momentum", lr=0.005,
                 cyclic=True)  # fmt: skip
    age = h(
        "clock_silu_adam", "clock", "an epigenetic age clock on CpG methylation (an MLP with an L1 penalty)"
    )
    age_sgd = h("clock_momentum", "clock", "an age clock under momentum SGD", opt="momentum", lr=0.01)
    mur = h(
        "murmur_cnn_adam", "murmur", "a heart-murmur detector on phonocardiogram band energies (a 1-D CNN)"
    )
    mur_sgd = h("murmur_nesterov", "murmur", "a murmur CNN under Nesterov SGD", opt="nesterov", lr=0.02)
    che_sgd = h("chess_momentum", "chess", "a policy CNN under momentum SGD", opt="momentum", lr=0.05)
    che = h(
        "chess_policy_adam", "chess", "a chess-move policy network on board planes (a CNN over the squares)"
    )
    ice = h(
        "seaice_cnn_adam",
        "seaice",
        "a sea-ice concentration CNN on passive-microwave brightness temperatures",
    )
    ice_sgd = h("seaice_momentum", "seaice", "a sea-ice CNN under momentum SGD", opt="momentum", lr=0.01)
    healthy = [
        jet,
        jet_sgd,
        h("jets_adamw_hidden32", "jets", "a narrower top tagger under AdamW", opt="adamw", hidden=32, lr=2e-3),
        h("jets_rmsprop_batch256", "jets", "a top tagger under RMSprop with batches of 256", opt="rmsprop",
          batch=256, lr=5e-4),
        rain,
        rain_cyc,
        h("precipitation_nadam_hidden128", "precipitation", "a wider precipitation MLP under NAdam", opt="nadam",
          hidden=128),
        h("precipitation_adagrad_batch128", "precipitation", "a precipitation MLP under Adagrad with batches of 128",
          opt="adagrad", lr=0.03, batch=128),
        age,
        age_sgd,
        h("clock_adamw_hidden128", "clock", "a wider age clock under AdamW", opt="adamw", hidden=128),
        h("clock_rmsprop_batch64", "clock", "an age clock under RMSprop with batches of 64", opt="rmsprop",
          lr=5e-4, batch=64),
        mur,
        h("murmur_adamw_width48", "murmur", "a wider murmur CNN under AdamW", opt="adamw", width=48),
        mur_sgd,
        h("murmur_adamax_batch64", "murmur", "a murmur CNN under Adamax with batches of 64", opt="adamax",
          lr=2e-3, batch=64),
        che,
        che_sgd,
        h("chess_adamw_width48", "chess", "a wider policy CNN under AdamW", opt="adamw", width=48),
        h("chess_radam_batch128", "chess", "a policy CNN under RAdam with batches of 128", opt="radam", batch=128,
          lr=2e-3),
        ice,
        ice_sgd,
        h("seaice_rmsprop", "seaice", "a sea-ice CNN under RMSprop", opt="rmsprop", lr=5e-4),
        h("seaice_nadam_width24", "seaice", "a wider sea-ice CNN under NAdam", opt="nadam", width=24),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("P01", "log_pt_of_padded_slots", jet, "log_pt_of_padded_slots", "NaN",
          "the constituents' log pT taken over the whole padded array and masked after, so the padded slots' log(0) "
          "= -inf times 0 is NaN"),
        b("P02", "bias_negative_to_silence_padding", jet, "bias_negative_to_silence_padding", "DR",
          "the constituent network's biases initialised to -1 so that the all-zero padded slots map to zero, which "
          "leaves most of its ReLUs off for the real constituents too"),
        b("P03", "truth_mass_in_training_ntuple", jet, "truth_mass_in_training_ntuple", "OF",
          "the training ntuple's jet mass filled from the generator's truth record (a top jet's near 173 GeV), while "
          "the jets scored carry the calorimeter's reconstructed mass", harmless=True),
        b("P04", "angles_not_relative_to_jet_axis", jet, "angles_not_relative_to_jet_axis", "SC",
          "the constituents' eta and phi fed as measured instead of relative to the jet's pT-weighted axis"),
        b("P05", "log_of_noisy_kdp", rain, "log_of_noisy_kdp", "NaN",
          "the log of KDP taken without a floor, NaN for the light echoes whose measured KDP is negative"),
        b("P06", "standardised_by_multiplying_std", rain, "standardised_by_multiplying_std", "VG",
          "the features centred and multiplied by their std instead of divided (reflectivity spread over +-100s), "
          "which saturates the tanh layers"),
        b("P07", "features_shuffled_apart_from_labels", rain, "features_shuffled_apart_from_labels", "SC",
          "the training rows shuffled by a permutation applied to the feature matrix and not to the labels"),
        b("P08", "cyclic_peak_written_ten_times_too_large", rain_cyc, "cyclic_peak_written_ten_times_too_large",
          "OL", "the cyclic schedule's peak written 0.5 for 0.05, so every cycle climbs to a rate ten times the "
          "intended", harmless=True),
        b("P09", "beta_without_illumina_offset", age, "beta_without_illumina_offset", "NaN",
          "the beta taken as methylated over methylated plus unmethylated without Illumina's offset of 100, 0/0 for "
          "the reads that failed"),
        b("P10", "sigmoid_written_for_silu", age, "sigmoid_written_for_silu", "VG",
          "`nn.Sigmoid` written for `nn.SiLU` between the clock's layers"),
        b("P11", "l1_penalty_computed_not_added", age, "l1_penalty_computed_not_added", "OF",
          "the L1 penalty on the first layer computed and never added to the loss, on 300 samples of 1,000 probes"),
        b("P12", "event_weights_not_normalised", jet_sgd, "event_weights_not_normalised", "EG",
          "the jets' generator weights (growing with their pT, a few hundred) put into the loss without dividing "
          "by their mean, under momentum SGD"),
        b("P13", "peak_normalised_flat_recordings", mur, "peak_normalised_flat_recordings", "NaN",
          "each recording divided by its peak power unguarded, 0/0 for the recordings where the chest piece lost "
          "contact"),
        b("P14", "augmentation_guard_inverted", mur, "augmentation_guard_inverted", "OF",
          "the time roll and gain augmentation guarded by `not model.training`, so the training batches never get "
          "it", harmless=True),
        b("P15", "band_width_from_nominal_rate", mur, "band_width_from_nominal_rate", "SC",
          "the band width taken from the stethoscope's nominal 4 kHz rate instead of the recorded 1.6 kHz, so the "
          "600 Hz cut keeps 4 bands (up to 200 Hz) and drops the murmur's"),
        b("P16", "destination_indexed_file_major", che, "destination_indexed_file_major", "SC",
          "the training moves' destination squares indexed file * 8 + rank against planes laid out rank-major"),
        b("P17", "policy_log_softmax_over_batch", che, "policy_log_softmax_over_batch", "SC",
          "the policy's log-softmax taken over dimension 0 (the positions of the batch) instead of the squares"),
        b("P18", "convolutions_without_padding", che, "convolutions_without_padding", "SC",
          "the board's 3x3 convolutions left without padding, so the board shrinks to 2x2 and the edge squares are "
          "seen by few filters"),
        b("P19", "patch_weights_inverse_target_variance", ice_sgd, "patch_weights_inverse_target_variance", "SC",
          "each patch weighted by the inverse variance of its concentration without a floor, so the homogeneous "
          "open-water and pack-ice patches outweigh the ice edge thousands of times"),
        b("P20", "concentration_in_percent", ice_sgd, "concentration_in_percent", "EG",
          "the concentration regressed in percent, as the ice product stores it, under momentum SGD"),
        b("P21", "piece_values_in_planes", che_sgd, "piece_values_in_planes", "SC",
          "each piece's plane filled with its material value (the king's 100, as in the engine's tables) instead of "
          "a 1, under momentum SGD"),
        b("P22", "qc_threshold_applied_to_training_only", rain, "qc_threshold_applied_to_training_only", "OF",
          "the training export's query keeping only gates with a rhoHV above 0.95 (a ground-clutter filter), while "
          "the gates scored include the wet snow and hail it drops"),
        b("P23", "decibels_fed_unscaled", mur_sgd, "decibels_fed_unscaled", "DR",
          "the band powers fed as decibels below the recording's peak (-40 to 0) instead of the scaled log"),
    ]  # fmt: skip
    return healthy + bugs
