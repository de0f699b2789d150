"""The fifteenth blind split as `run.py --suite blind15` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind15 import records, sequences, vision

PREFIX = "blind15_"
SCRIPTS = {"displacement": vision.displacement, "change": vision.change, "world_model": sequences.world_model,
           "melody": sequences.melody, "hazard": records.hazard, "imputer": records.imputer}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind15Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind15Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind15Program, prefix=PREFIX)
    flow = h(
        "displacement_cnn_adam", "displacement", "a displacement (optical-flow-like) regressor on frame pairs"
    )
    chg = h("change_siamese_adam", "change", "a Siamese change detector on co-registered image pairs")
    wm = h(
        "world_model_pendulum_adam",
        "world_model",
        "a world model of a torque-driven pendulum for model-based RL",
    )
    mel = h("melody_gru_adam", "melody", "a next-note model of symbolic melodies (a GRU over pitches)")
    haz = h("hazard_monthly_adam", "hazard", "a discrete-time survival model of monthly hazards")
    imp = h("imputer_dae_adam", "imputer", "a denoising autoencoder imputing a table's missing values")
    healthy = [
        flow,
        h("displacement_adamw_cosine", "displacement", "a displacement regressor under AdamW with cosine decay",
          opt="adamw", cosine=True),
        h("displacement_rmsprop_channels8", "displacement", "a narrower displacement regressor under RMSprop",
          opt="rmsprop", channels=8, lr=1e-3),
        h("displacement_nesterov_batch128", "displacement",
          "a displacement regressor under Nesterov SGD with larger batches", opt="nesterov", batch=128, lr=0.01),
        chg,
        h("change_adamw_channels24", "change", "a wider change detector under AdamW", opt="adamw", channels=24),
        h("change_adamax_batch16", "change", "a change detector under Adamax with smaller batches", opt="adamax",
          batch=16, lr=5e-3),
        h("change_nadam_channels8", "change", "a narrower change detector under NAdam", opt="nadam", channels=8),
        wm,
        h("world_model_adamw_width128", "world_model", "a wider world model under AdamW", opt="adamw", width=128),
        h("world_model_rmsprop_step_decay", "world_model", "a world model under RMSprop halved every 100 steps",
          opt="rmsprop", step_decay=True, lr=1e-3),
        h("world_model_radam_batch32", "world_model", "a world model under RAdam with smaller batches",
          opt="radam", batch=32, lr=3e-3),
        mel,
        h("melody_adamw_dim48", "melody", "a wider next-note GRU under AdamW", opt="adamw", dim=48),
        h("melody_adamax_clipped", "melody", "a next-note GRU under Adamax clipped at norm 1", opt="adamax",
          clip=1.0, lr=5e-3),
        h("melody_rmsprop_batch32", "melody", "a next-note GRU under RMSprop with smaller batches",
          opt="rmsprop", batch=32, lr=2e-3),
        haz,
        h("hazard_adamw_dropout", "hazard", "a monthly-hazard MLP under AdamW with dropout 0.2", opt="adamw",
          dropout=0.2),
        h("hazard_adagrad_width32", "hazard", "a narrower monthly-hazard MLP under Adagrad", opt="adagrad",
          width=32, lr=0.03),
        h("hazard_nadam_batch64", "hazard", "a monthly-hazard MLP under NAdam with smaller batches", opt="nadam",
          batch=64, lr=1e-3),
        imp,
        h("imputer_adamw_width128", "imputer", "a wider imputer under AdamW", opt="adamw", width=128),
        h("imputer_rmsprop_hide30", "imputer", "an imputer under RMSprop hiding 30% of the observed values",
          opt="rmsprop", hide=0.3, lr=1e-3),
        h("imputer_adamax_batch64", "imputer", "an imputer under Adamax with smaller batches", opt="adamax",
          batch=64, lr=4e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("G01", "flow_not_rescaled_with_frames", flow, "flow_not_rescaled_with_frames", "SC",
          "the frames pooled 2x with the displacement label left in the rendered frames' pixels"),
        b("G02", "frames_in_reverse_order", flow, "frames_in_reverse_order", "SC",
          "the training pairs stacked (second, first) while the label is the motion from the first to the second"),
        b("G03", "crops_drawn_separately_per_frame", flow, "crops_drawn_separately_per_frame", "SC",
          "each frame of a pair cropped at its own random offset, the label left unchanged"),
        b("G04", "pair_flipped_independently", chg, "pair_flipped_independently", "SC",
          "the flip augmentation drawn separately for the two images of a pair, so they are no longer co-registered"),
        b("G05", "label_is_post_footprint", chg, "label_is_post_footprint", "SC",
          "the label taken as the second image's building footprints instead of the change between the two"),
        b("G06", "features_subtracted_with_sign", chg, "features_subtracted_with_sign", "SC",
          "the two images' features subtracted with their sign kept instead of the absolute difference", harmless=True),
        b("G07", "angle_change_not_wrapped", wm, "angle_change_not_wrapped", "SC",
          "the angle's change taken as a plain difference of wrapped angles, 2 pi off where the pendulum goes over"),
        b("G08", "transitions_across_episode_boundaries", wm, "transitions_across_episode_boundaries", "SC",
          "the transitions built by shifting the concatenated episodes, so each episode's end is paired with the "
          "next one's start"),
        b("G09", "changes_standardised_by_state_stats", wm, "changes_standardised_by_state_stats", "SC",
          "the state changes standardised by the states' mean and spread, the predictions by the changes'"),
        b("G10", "torque_left_out_of_input", wm, "torque_left_out_of_input", "SC",
          "the torque left out of the world model's input (a zeroed column)"),
        b("G11", "events_sorted_by_onset_as_text", mel, "events_sorted_by_onset_as_text", "SC",
          "the note events sorted by their onset ticks as text, so '1080' comes before '240'", harmless=True),
        b("G12", "note_on_velocity_zero_kept", mel, "note_on_velocity_zero_kept", "SC",
          "note-on events of velocity 0 (note-offs) kept as notes, so each note appears twice"),
        b("G13", "velocity_read_as_pitch", mel, "velocity_read_as_pitch", "SC",
          "the event's velocity field read as its pitch"),
        b("G14", "censored_counted_as_events", haz, "censored_counted_as_events", "SC",
          "every patient's last month counted as an event, the censored ones included"),
        b("G15", "months_after_event_kept", haz, "months_after_event_kept", "SC",
          "the months after a patient's event or censoring left in the likelihood as survived", harmless=True),
        b("G16", "logits_softmaxed_over_months", haz, "logits_softmaxed_over_months", "SC",
          "the monthly logits softmaxed over the months (a distribution of the event month) and used as hazards", harmless=True),
        b("G17", "inputs_never_corrupted", imp, "inputs_never_corrupted", "SC",
          "the values to restore left visible in the input, so the autoencoder learns to copy them"),
        b("G18", "stats_from_zero_filled_columns", imp, "stats_from_zero_filled_columns", "SC",
          "the standardising statistics computed from the columns with the missing values filled with 0"),
        b("G19", "mask_dropped_from_input", imp, "mask_dropped_from_input", "SC",
          "the missingness mask left out of the input, so a filled 0 looks like an observed mean", harmless=True),
        b("G20", "training_melodies_transposed_to_c", mel, "training_melodies_transposed_to_c", "SC",
          "the training melodies transposed to C major as preprocessing, the held-out ones left in their keys"),
        b("G21", "event_flag_copied_to_every_month", haz, "event_flag_copied_to_every_month", "SC",
          "the patient's event flag copied to every month of the person-period rows instead of only the last", harmless=True),
        b("G22", "mask_rows_out_of_step_with_values", imp, "mask_rows_out_of_step_with_values", "SC",
          "the table's rows shuffled after its missingness mask was taken, so each row carries another row's mask", harmless=True),
        b("G23", "trained_on_next_state_read_as_change", wm, "trained_on_next_state_read_as_change", "SC",
          "the world model trained to predict the standardised next state while its output is read as the change"),
        b("G24", "event_month_excluded_from_risk_set", haz, "event_month_excluded_from_risk_set", "SC",
          "the months at risk taken strictly before the observed month, so no event month enters the likelihood"),
        b("G25", "cos_sin_taken_of_degrees", wm, "cos_sin_taken_of_degrees", "SC",
          "the angle's cosine and sine taken of the angle in degrees (a logger's unit) as if it were in radians"),
    ]  # fmt: skip
    return healthy + bugs
