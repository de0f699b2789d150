"""The sixtieth blind split as `run.py --suite blind60` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind60 import monitors, seasons, studios

PREFIX = "blind60_"
SCRIPTS = {"unrest": monitors.unrest, "delays": monitors.delays, "levelness": studios.levelness,
           "lots": studios.lots, "shots": seasons.shots, "heats": seasons.heats}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind60Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind60Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind60Program, prefix=PREFIX)
    unr = h(
        "unrest_gru_adam",
        "unrest",
        "a volcano observatory's unrest classifier over ten days of monitoring (a GRU)",
    )
    unr_sgd = h("unrest_momentum", "unrest", "an unrest GRU under momentum SGD", opt="momentum", lr=0.05)
    dly = h(
        "delays_encoder_adam",
        "delays",
        "a railway signalling centre's delay forecaster over a train's last timing points (a transformer encoder)",
    )
    dly_sgd = h("delays_momentum", "delays", "a delay encoder under momentum SGD", opt="momentum", lr=0.02)
    lev = h(
        "levelness_cnn_adam", "levelness", "a dyehouse's levelness grader on scans of dyed fabric (a 2-D CNN)"
    )
    lev_sgd = h(
        "levelness_momentum", "levelness", "a levelness CNN under momentum SGD", opt="momentum", lr=0.05
    )
    lot = h(
        "lots_autoencoder_adam",
        "lots",
        "a perfume house's quality check of lavender oil lots by their chromatograms (an autoencoder)",
    )
    lot_sgd = h("lots_momentum", "lots", "a lot autoencoder under momentum SGD", opt="momentum", lr=0.05)
    sho = h(
        "shots_mlp_adam", "shots", "an ice hockey group's expected-goals model on play-by-play shots (an MLP)"
    )
    sho_sgd = h(
        "shots_momentum", "shots", "an expected-goals MLP under momentum SGD", opt="momentum", lr=0.05
    )
    hea = h(
        "heats_cnn_adam",
        "heats",
        "a dairy farm's heat detector on collar activity and rumination (a 1-D CNN)",
    )
    hea_sgd = h("heats_momentum", "heats", "a heat CNN under momentum SGD", opt="momentum", lr=0.02)
    healthy = [
        unr, unr_sgd,
        h("unrest_adamw_hidden48", "unrest", "a wider unrest GRU under AdamW", opt="adamw", hidden=48),
        h("unrest_adamax_batch64", "unrest", "an unrest GRU under Adamax with batches of 64", opt="adamax", batch=64,
          lr=4e-3),
        dly, dly_sgd,
        h("delays_rmsprop_width24", "delays", "a wider delay encoder under RMSprop", opt="rmsprop", width=24, lr=1e-3),
        h("delays_nadam_batch64", "delays", "a delay encoder under NAdam with batches of 64", opt="nadam", batch=64),
        lev, lev_sgd,
        h("levelness_adamw_width12", "levelness", "a wider levelness CNN under AdamW", opt="adamw", width=12),
        h("levelness_adagrad_batch64", "levelness", "a levelness CNN under Adagrad with batches of 64", opt="adagrad",
          batch=64, lr=0.02),
        lot, lot_sgd,
        h("lots_adamw_hidden64", "lots", "a wider lot autoencoder under AdamW", opt="adamw", hidden=64),
        h("lots_adamax_batch64", "lots", "a lot autoencoder under Adamax with batches of 64", opt="adamax", batch=64,
          lr=4e-3),
        sho, sho_sgd,
        h("shots_rmsprop_hidden64", "shots", "a wider expected-goals MLP under RMSprop", opt="rmsprop", hidden=64,
          lr=1e-3),
        h("shots_nadam_batch128", "shots", "an expected-goals MLP under NAdam with batches of 128", opt="nadam",
          batch=128),
        hea, hea_sgd,
        h("heats_adamw_width16", "heats", "a wider heat CNN under AdamW", opt="adamw", width=16),
        h("heats_adagrad_batch64", "heats", "a heat CNN under Adagrad with batches of 64", opt="adagrad", batch=64,
          lr=0.02),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("V01", "b_value_over_quiet_days", unr, "b_value_over_quiet_days", "NaN",
          "each day's b-value taken by Aki's estimator, log10(e) over the mean magnitude above completeness, on every "
          "day, 0 / 0 on the quiet days with no earthquake above the completeness magnitude"),
        b("V02", "east_axis_for_every_tiltmeter", unr, "east_axis_for_every_tiltmeter", "SC",
          "the network's mean tilt taken over every tiltmeter's east axis instead of its radial axis towards the vent, "
          "so the east and west flanks' inflation cancel and the north and south stations give their tangential noise"),
        b("V03", "linear_decay_length_of_older_config", unr_sgd, "linear_decay_length_of_older_config", "EG",
          "the linear decay's LambdaLR written 1 - step / 120, the length of an older, shorter configuration, so the "
          "rate of the 300-step momentum SGD run crosses zero at step 120 and the optimizer climbs the loss after it"),
        b("V04", "aspect_logged_at_berth_step", dly, "aspect_logged_at_berth_step", "SC",
          "the aspect each driver saw read from the interlocking's log at the berth step, when the train has passed "
          "the signal and it has gone back to red, so every training aspect is red"),
        b("V05", "rezero_gate_as_plain_tensor", dly, "rezero_gate_as_plain_tensor", "VG",
          "ReZero's gate on the residual blocks made with torch.zeros(1) instead of nn.Parameter, so it stays at 0 "
          "and the attention and feed-forward blocks get no gradient"),
        b("V06", "destination_delay_from_performance_report", dly, "destination_delay_from_performance_report", "OF",
          "the day's performance report's delay at the destination joined as an input; a live train has none yet"),
        b("V07", "quarter_turn_augmentation", lev, "quarter_turn_augmentation", "SC",
          "random quarter turns from the defect-inspection recipe for augmentation, which turn barre across the "
          "width into lines along the length, the streaks' look, under their own label"),
        b("V08", "box_filter_frozen_with_finetuning_snippet", lev, "box_filter_frozen_with_finetuning_snippet", "VG",
          "the fixed weave filter frozen with the fine-tuning snippet model.requires_grad_(False); "
          "model.head.requires_grad_(True), so the convolutions never get a gradient and only the head learns"),
        b("V09", "flat_field_over_dead_pixels", lev, "flat_field_over_dead_pixels", "NaN",
          "the training scans flat-fielded by dividing by the lamp's reference frame without filling the camera's two "
          "dead pixels first, 0 / 0 there in every scan"),
        b("V10", "log_ratios_of_unreported_traces", lot, "log_ratios_of_unreported_traces", "NaN",
          "the centred log-ratios taken of the area percents as the integrator reports them, log 0 for the traces "
          "under its threshold, without putting them back at half the threshold"),
        b("V11", "spiked_reference_lots_in_training", lot, "spiked_reference_lots_in_training", "SC",
          "the method's reference lots, cut on purpose to check it, left in the folder of genuine lots the "
          "autoencoder learns from (a fifth of the training lots)"),
        b("V12", "net_fixed_across_periods", sho, "net_fixed_across_periods", "SC",
          "every shot's distance and angle taken to the right-hand net, though the teams change ends for the second "
          "period"),
        b("V13", "empty_net_shots_kept", sho, "empty_net_shots_kept", "SC",
          "the empty-net shots kept in the training shots, with nothing to mark them, while the model is meant for "
          "shots at a goalie"),
        b("V14", "strength_read_from_home_bench", sho_sgd, "strength_read_from_home_bench", "SC",
          "the feed's strength state, written from the home bench, taken as the shooting team's for the away team's "
          "shots too, so their power plays read as short-handed, under momentum SGD", harmless=True),
        b("V15", "shot_angle_by_atan_of_ratio", sho, "shot_angle_by_atan_of_ratio", "NaN",
          "the shot's angle taken as atan(dy / dx) instead of atan2, 0 / 0 for the tips the scorer logs at the "
          "crease's centre, on the net itself"),
        b("V16", "heats_from_insemination_records", hea, "heats_from_insemination_records", "SC",
          "the training heats taken from the insemination records, which miss every heat before the voluntary "
          "waiting period ends and the heats of the cows not to be bred"),
        b("V17", "inline_progesterone_kept", hea, "inline_progesterone_kept", "OF",
          "the training farm's milking robot's in-line milk progesterone at the window's last milking kept as an "
          "input; the other farm has no in-line analyser and gives the monthly milk recording's, weeks old"),
        b("V18", "rumination_seconds_under_minute_norms", hea_sgd, "rumination_seconds_under_minute_norms", "DR",
          "the collar's rumination exported in seconds per block standardised by the maker's herd norms in minutes, "
          "inputs in the hundreds, under momentum SGD"),
    ]  # fmt: skip
    return healthy + bugs
