"""The thirty-ninth blind split as `run.py --suite blind39` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind39 import markets, people, plant

PREFIX = "blind39_"
SCRIPTS = {"kiln": plant.kiln, "strain": plant.strain, "marathon": people.marathon, "gait": people.gait,
           "surge": markets.surge, "honey": markets.honey}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind39Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind39Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind39Program, prefix=PREFIX)
    kil = h("kiln_gru_adam", "kiln", "a kiln temperature-profile forecaster (a GRU over the thermocouples)")
    kil_sgd = h("kiln_momentum", "kiln", "a kiln GRU under momentum SGD", opt="momentum", lr=0.05)
    stra = h("strain_cnn_adam", "strain", "a bridge strain-gauge anomaly detector (a 1-D CNN)")
    stra_sgd = h("strain_momentum", "strain", "a strain CNN under momentum SGD", opt="momentum", lr=0.1)
    mar = h("marathon_mlp_adam", "marathon", "a marathon finish-time regressor from split times (a ReLU MLP)")
    mar_sgd = h(
        "marathon_momentum", "marathon", "a finish-time MLP under momentum SGD", opt="momentum", lr=0.01
    )
    gai = h("gait_cnn_adam", "gait", "a gait-phase classifier on shank IMU windows (a 1-D CNN)")
    gai_sgd = h("gait_nesterov", "gait", "a gait-phase CNN under Nesterov SGD", opt="nesterov", lr=0.02)
    sur = h("surge_mlp_adam", "surge", "a ride-hailing surge-price regressor (embeddings and an MLP)")
    sur_sgd = h("surge_momentum", "surge", "a surge MLP under momentum SGD", opt="momentum", lr=0.01)
    hon = h("honey_mlp_adam", "honey", "a honey-adulteration classifier on NIR spectra (an MLP)")
    hon_sgd = h("honey_momentum", "honey", "a honey MLP under momentum SGD", opt="momentum", lr=0.01)
    healthy = [
        kil,
        kil_sgd,
        h("kiln_rmsprop_hidden16", "kiln", "a narrower kiln GRU under RMSprop", opt="rmsprop", lr=2e-3, hidden=16),
        h("kiln_nadam_cosine", "kiln", "a kiln GRU under NAdam decayed by a cosine", opt="nadam", cosine=True),
        stra,
        stra_sgd,
        h("strain_adamw_width16", "strain", "a narrower strain CNN under AdamW", opt="adamw", width=16),
        h("strain_rmsprop_batch128", "strain", "a strain CNN under RMSprop with batches of 128", opt="rmsprop",
          lr=1e-3, batch=128),
        mar,
        mar_sgd,
        h("marathon_adamw_hidden128", "marathon", "a wider finish-time MLP under AdamW", opt="adamw", hidden=128),
        h("marathon_rmsprop_batch32", "marathon", "a finish-time MLP under RMSprop with batches of 32",
          opt="rmsprop", lr=5e-4, batch=32),
        gai,
        gai_sgd,
        h("gait_rmsprop_width16", "gait", "a narrower gait-phase CNN under RMSprop", opt="rmsprop", lr=1e-3,
          width=16),
        h("gait_adamax_step_decay", "gait", "a gait-phase CNN under Adamax halved every 100 steps", opt="adamax",
          lr=4e-3, step_decay=True),
        sur,
        sur_sgd,
        h("surge_adamw_hidden32", "surge", "a narrower surge MLP under AdamW", opt="adamw", hidden=32),
        h("surge_adagrad_batch256", "surge", "a surge MLP under Adagrad with batches of 256", opt="adagrad",
          lr=0.02, batch=256),
        hon,
        hon_sgd,
        h("honey_rmsprop_hidden128", "honey", "a wider honey MLP under RMSprop", opt="rmsprop", lr=5e-4,
          hidden=128),
        h("honey_nadam_batch64", "honey", "a honey MLP under NAdam with batches of 64", opt="nadam", batch=64),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("E01", "windows_from_a_single_firing", kil, "windows_from_a_single_firing", "OF",
          "every training window cut from the one firing the kiln's logger kept, one program and one load, while the "
          "forecaster serves every program"),
        b("E02", "forecast_loss_in_degrees", kil_sgd, "forecast_loss_in_degrees", "EG",
          "the standardised forecast turned back into degrees before the MSE, so the loss and its gradients are in "
          "squared degrees, under momentum SGD"),
        b("E03", "thermocouple_columns_sorted_alphabetically", kil, "thermocouple_columns_sorted_alphabetically",
          "SC", "the crown's column looked up in the zone names sorted alphabetically while the export keeps the "
          "logger's order, so the floor thermocouple's rise is the target"),
        b("E04", "lightning_spikes_left_in", stra_sgd, "lightning_spikes_left_in", "DR",
          "the windows the logger's QA flags for lightning spikes (the logger's input saturating at tens of "
          "thousands of microstrain) kept in training, under momentum SGD"),
        b("E05", "faults_injected_on_one_gauge_only", stra, "faults_injected_on_one_gauge_only", "OF",
          "the faulty windows to train on made on the lab's rig, which debonds gauge 3 only, while a bridge's "
          "faulty gauge can be any of the eight"),
        b("E06", "single_gauge_prototype_input_kept", stra, "single_gauge_prototype_input_kept", "SC",
          "the single-gauge prototype's `Conv1d(1, ...)` kept and the windows sliced to their first gauge to fit"),
        b("E07", "results_scraped_from_fastest_pages", mar, "results_scraped_from_fastest_pages", "OF",
          "the training runners scraped from the results site's first ten pages, which list by finish time, so only "
          "the fastest third is learnt from"),
        b("E08", "target_scaled_by_last_feature_std", mar_sgd, "target_scaled_by_last_feature_std", "EG",
          "the finish divided by the scaler's last standard deviation, the 30 km pace's (half a minute a km) "
          "instead of the finish's (half an hour), a target of spread about 70, under momentum SGD"),
        b("E09", "finish_clock_parsed_as_decimal_hours", mar, "finish_clock_parsed_as_decimal_hours", "SC",
          "the results' \"h:mm\" finish clock parsed as decimal hours, \"3:45\" read as 3.45 hours"),
        b("E10", "critic_weight_clipping_left_in", mar_sgd, "critic_weight_clipping_left_in", "VG",
          "the loop copied from a Wasserstein GAN's critic, its clamp of every weight to [-0.01, 0.01] after each "
          "step left in, under momentum SGD"),
        b("E11", "twelve_plain_convs_for_receptive_field", gai_sgd, "twelve_plain_convs_for_receptive_field", "VG",
          "the CNN deepened to twelve plain convolutions, no normalisation nor skip, to see a whole stride, under "
          "Nesterov SGD"),
        b("E12", "shank_tilt_by_acos_of_vertical_accel", gai, "shank_tilt_by_acos_of_vertical_accel", "NaN",
          "the shank's tilt taken as the arccosine of the long-axis acceleration over g, the static formula, which "
          "the heel strike's shock pushes past 1"),
        b("E13", "phase_labels_from_other_leg_switch", gai, "phase_labels_from_other_leg_switch", "SC",
          "the gait phases labelled from the left foot switch while the IMU is strapped to the right shank"),
        b("E14", "label_read_at_window_start", gai, "label_read_at_window_start", "SC",
          "each window's phase label read at its first sample while the model is meant to name the phase at its "
          "last"),
        b("E15", "requests_per_driver_over_tiny_epsilon", sur, "requests_per_driver_over_tiny_epsilon", "EG",
          "the requests per driver guarded by adding 1e-6 to the drivers online, millions of requests per driver in "
          "the cells without one"),
        b("E16", "log_of_surge_premium", sur, "log_of_surge_premium", "NaN",
          "the target taken as the log of the surge premium (the multiplier less one), minus infinity in the cells "
          "without surge"),
        b("E17", "spectra_smoothed_over_wide_window", hon, "spectra_smoothed_over_wide_window", "SC",
          "each spectrum smoothed by a moving average over 31 bands to clean the noise, which flattens the syrup's "
          "narrow maltose bands"),
        b("E18", "adulterated_samples_scanned_in_second_cup", hon, "adulterated_samples_scanned_in_second_cup",
          "OF", "the adulterated samples, spiked in the lab on one day, all scanned in the second sample cup, whose "
          "glass adds a weak band of its own"),
        b("E19", "derivative_taken_across_samples", hon, "derivative_taken_across_samples", "SC",
          "the first derivative taken along axis 0, across the samples, instead of along the wavelengths"),
        b("E20", "surge_quotes_missing_decimal_point", sur_sgd, "surge_quotes_missing_decimal_point", "OL",
          "one city's export writing the multiplier with a decimal comma, so one quote in a hundred reads 15 for "
          "1,5, kept in training under momentum SGD"),
        b("E21", "stadium_attendance_for_event_flag", sur, "stadium_attendance_for_event_flag", "SC",
          "the stadium's attendance (tens of thousands) put in place of the event flag, left unscaled by the "
          "robust scaler because the column's interquartile range is zero"),
    ]  # fmt: skip
    return healthy + bugs
