"""The twenty-fourth blind split as `run.py --suite blind24` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind24 import driving, messages, signals

PREFIX = "blind24_"
SCRIPTS = {"sleep": signals.sleep, "gestures": signals.gestures, "steering": driving.steering, "fuel": driving.fuel,
           "spam": messages.spam, "malware": messages.malware}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind24Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind24Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind24Program, prefix=PREFIX)
    slp = h("sleep_cnn_adam", "sleep", "a sleep-stage classifier (a 1-D CNN over EEG epochs)")
    emg = h("gestures_mlp_momentum", "gestures", "a hand-gesture classifier on forearm EMG features (a residual MLP under "
            "momentum SGD, the rate scaled with the batch)")  # fmt: skip
    emg_deep = h("gestures_residual_momentum", "gestures", "a gesture net of eight residual blocks under momentum SGD",
                 blocks=8)  # fmt: skip
    steer = h(
        "steering_cnn_adam", "steering", "a lane-keeping steering regressor from road images (PilotNet)"
    )
    steer_sgd = h("steering_momentum", "steering", "a steering PilotNet under momentum SGD", opt="momentum",
                  lr=0.05)  # fmt: skip
    fue = h("fuel_mlp_adam", "fuel", "a fuel-consumption regressor on OBD-II trip segments (a ReLU MLP)")
    fue_deep = h("fuel_deep_momentum", "fuel", "a six-layer fuel MLP under momentum SGD", opt="momentum", lr=0.02,
                 depth=6)  # fmt: skip
    spa = h("spam_bag_adam", "spam", "an SMS spam filter (a mean bag of embeddings and an MLP)")
    spa_sgd = h("spam_bag_momentum", "spam", "a spam filter under momentum SGD", opt="momentum", lr=0.1)
    mal = h(
        "malware_conv_adam", "malware", "a malware detector on API-call traces (a convolution beside TF-IDF)"
    )
    healthy = [
        slp,
        h("sleep_momentum_cosine", "sleep", "a sleep CNN under momentum SGD decayed by a cosine", opt="momentum",
          lr=0.05, cosine=True),
        h("sleep_adamw_width24", "sleep", "a wider sleep CNN under AdamW", opt="adamw", width=24),
        h("sleep_rmsprop_batch32", "sleep", "a sleep CNN under RMSprop with batches of 32", opt="rmsprop", lr=1e-3,
          batch=32),
        emg,
        emg_deep,
        h("gestures_adam_batch64", "gestures", "a gesture MLP under Adam with batches of 64", opt="adam", lr=2e-3,
          batch=64),
        h("gestures_adagrad_hidden128", "gestures", "a wider gesture MLP under Adagrad", opt="adagrad", hidden=128),
        steer,
        steer_sgd,
        h("steering_adamw_width16", "steering", "a wider steering PilotNet under AdamW", opt="adamw", width=16),
        h("steering_adamax_step_decay", "steering", "a steering PilotNet under Adamax halved every 100 steps",
          opt="adamax", lr=2e-3, step_decay=True),
        fue,
        fue_deep,
        h("fuel_rmsprop_hidden128", "fuel", "a wider fuel MLP under RMSprop", opt="rmsprop", lr=1e-3, hidden=128),
        h("fuel_radam_batch256", "fuel", "a fuel MLP under RAdam with batches of 256", opt="radam", lr=3e-3,
          batch=256),
        spa,
        spa_sgd,
        h("spam_adagrad_dim64", "spam", "a wider spam bag under Adagrad", opt="adagrad", lr=0.05, dim=64),
        h("spam_nadam_batch128", "spam", "a spam bag under NAdam with batches of 128", opt="nadam", batch=128),
        mal,
        h("malware_rmsprop", "malware", "a malware trace net under RMSprop", opt="rmsprop", lr=1e-3),
        h("malware_adamw_filters64", "malware", "a malware trace net of 64 filters under AdamW", opt="adamw",
          filters=64),
        h("malware_momentum_batch128", "malware", "a malware trace net under momentum SGD with batches of 128",
          opt="momentum", lr=0.05, batch=128),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("X01", "flat_epochs_z_scored", slp, "flat_epochs_z_scored", "NaN",
          "each EEG epoch z-scored by its own standard deviation with no floor, which is 0/0 for the flat epochs "
          "recorded while an electrode was off"),
        b("X02", "only_first_recording_loaded", slp, "only_first_recording_loaded", "OF",
          "the `return` of the loader indented into the loop over recordings, so only the first night (one subject) "
          "is trained on"),
        b("X03", "smoothing_given_as_confidence", slp, "smoothing_given_as_confidence", "SC",
          "the label smoothing of cross-entropy given 0.9, the label confidence of the TensorFlow original, instead "
          "of 0.1", harmless=True),
        b("X04", "eeg_read_in_volts", slp, "eeg_read_in_volts", "SC",
          "the EEG kept in volts as the reader returns it, so the z-scoring floor of one microvolt leaves every "
          "epoch near 1e-5"),
        b("X05", "waveform_length_appended_after_scaling", emg, "waveform_length_appended_after_scaling", "DR",
          "the waveform length, in microvolts per window (thousands), appended to the features after they were "
          "standardised, under momentum SGD"),
        b("X06", "residual_sum_dropped", emg_deep, "residual_sum_dropped", "VG",
          "each residual block's output assigned over the running sum (h = block(h) for h = h + block(h)), leaving a "
          "plain stack of ten ReLU layers at PyTorch's default initialisation"),
        b("X07", "momentum_raised_at_same_rate", emg_deep, "momentum_raised_at_same_rate", "EG",
          "SGD's momentum raised from 0.9 to 0.99 for smoother steps while keeping the rate tuned for 0.9, ten times "
          "the effective step"),
        b("X08", "flip_without_negating_angle", steer, "flip_without_negating_angle", "SC",
          "frames flipped left to right for augmentation with their steering angle left as it was"),
        b("X09", "steering_read_in_degrees", steer_sgd, "steering_read_in_degrees", "EG",
          "the log's steering column read in degrees while the momentum-SGD rate was set for radians"),
        b("X10", "train_transform_given_to_validation", steer, "train_transform_given_to_validation", "OF",
          "the augmenting transform (flips, brightness and contrast jitter) passed to the validation dataset and the "
          "plain one to training, on daytime drives only"),
        b("X11", "idle_segments_per_distance", fue, "idle_segments_per_distance", "NaN",
          "the litres per 100 km of segments idling at the lights divided by their zero distance, an infinite target "
          "that makes the target's mean and spread NaN"),
        b("X12", "depth_and_width_swapped", fue_deep, "depth_and_width_swapped", "VG",
          "the MLP builder's hidden width and depth given in each other's place, so six layers of 64 become 64 "
          "layers of 6"),
        b("X13", "throttle_percent_clamped_to_unit", fue, "throttle_percent_clamped_to_unit", "SC",
          "the throttle position, in percent, clamped to [0, 1] as if it were a fraction, so every pressed pedal "
          "reads 1"),
        b("X14", "rpm_left_in_revolutions", fue, "rpm_left_in_revolutions", "DR",
          "the engine speed left out of the standardised columns, fed in revolutions per minute (750-4500)"),
        b("X15", "gateway_tag_left_in_training_text", spa, "gateway_tag_left_in_training_text", "OF",
          "the SMS gateway's [SPAM?] tag left in the training texts of the spam it had caught, absent from the "
          "messages to filter"),
        b("X16", "cased_words_looked_up_before_lowercasing", spa, "cased_words_looked_up_before_lowercasing", "SC",
          "the words looked up in the lowercase vocabulary before lowercasing, so capitalised words (spam's cue words "
          "often are) become unknown"),
        b("X17", "positive_weight_as_ham_count", spa_sgd, "positive_weight_as_ham_count", "EG",
          "BCE's pos_weight given the number of ham texts instead of the ratio of ham to spam, under momentum SGD"),
        b("X18", "idf_of_unseen_call_unsmoothed", mal, "idf_of_unseen_call_unsmoothed", "NaN",
          "the IDF taken as log(N / df) without smoothing, infinite for the newer calls no training trace makes, and "
          "0 * inf = NaN in every training histogram"),
        b("X19", "first_calls_kept", mal, "first_calls_kept", "SC",
          "traces cut to their first 64 calls (the loader's start-up) instead of their last, where the unpacked "
          "payload runs"),
        b("X20", "conv_over_embedding_axis", mal, "conv_over_embedding_axis", "OF",
          "the embedded calls, [batch, calls, dim], handed to the convolution without the transpose, its in-channels "
          "set to the 64 positions to make it run, so it slides along the embedding instead of the trace"),
    ]  # fmt: skip
    return healthy + bugs
