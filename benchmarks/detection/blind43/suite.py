"""The forty-third blind split as `run.py --suite blind43` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind43 import field, goods, water

PREFIX = "blind43_"
SCRIPTS = {"mooring": water.mooring, "tanks": water.tanks, "cocoa": goods.cocoa, "tonewood": goods.tonewood,
           "races": field.races, "pollen": field.pollen}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind43Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind43Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind43Program, prefix=PREFIX)
    moo = h(
        "mooring_lstm_adam",
        "mooring",
        "an offshore mooring-line tension forecaster (an LSTM over 10-minute records)",
    )
    moo_sgd = h(
        "mooring_momentum", "mooring", "a mooring-tension LSTM under momentum SGD", opt="momentum", lr=0.05
    )
    tan = h(
        "tanks_mlp_adam", "tanks", "a rooftop rainwater-tank level forecaster (an MLP over the last week)"
    )
    tan_w = h("tanks_adamw_hidden128", "tanks", "a wider tank-level MLP under AdamW", opt="adamw", hidden=128)
    coc = h(
        "cocoa_mlp_adam", "cocoa", "a cocoa-bean fermentation-grade classifier on cut-test colour histograms"
    )
    coc_sgd = h("cocoa_momentum", "cocoa", "a cocoa-grade MLP under momentum SGD", opt="momentum", lr=0.05)
    ton = h(
        "tonewood_tanh_adam", "tonewood", "a tonewood stiffness regressor from tap-tone spectra (a tanh MLP)"
    )
    rac = h(
        "races_mlp_adam", "races", "a horse-race win-probability model (a softmax over each race's runners)"
    )
    pol = h("pollen_softplus_adam", "pollen", "a grass-pollen count forecaster (a Softplus MLP)")
    healthy = [
        moo,
        moo_sgd,
        h("mooring_rmsprop_hidden48", "mooring", "a wider mooring-tension LSTM under RMSprop", opt="rmsprop",
          lr=2e-3, hidden=48),
        h("mooring_adamw_batch32", "mooring", "a mooring-tension LSTM under AdamW with batches of 32", opt="adamw",
          batch=32),
        tan,
        h("tanks_momentum", "tanks", "a tank-level MLP under momentum SGD", opt="momentum", lr=0.02),
        tan_w,
        h("tanks_nadam_batch32", "tanks", "a tank-level MLP under NAdam with batches of 32", opt="nadam", batch=32),
        coc,
        coc_sgd,
        h("cocoa_rmsprop_hidden32", "cocoa", "a narrower cocoa-grade MLP under RMSprop", opt="rmsprop", lr=1e-3,
          hidden=32),
        h("cocoa_adamax_batch32", "cocoa", "a cocoa-grade MLP under Adamax with batches of 32", opt="adamax",
          lr=4e-3, batch=32),
        ton,
        h("tonewood_momentum", "tonewood", "a stiffness tanh MLP under momentum SGD", opt="momentum", lr=0.02),
        h("tonewood_adamw_hidden128", "tonewood", "a wider stiffness tanh MLP under AdamW", opt="adamw", hidden=128),
        h("tonewood_radam_batch32", "tonewood", "a stiffness tanh MLP under RAdam with batches of 32", opt="radam",
          lr=2e-3, batch=32),
        rac,
        h("races_momentum", "races", "a race win-probability model under momentum SGD", opt="momentum", lr=0.05),
        h("races_nadam_hidden32", "races", "a narrower race model under NAdam", opt="nadam", hidden=32),
        h("races_rmsprop_batch16", "races", "a race model under RMSprop with batches of 16 races", opt="rmsprop",
          lr=1e-3, batch=16),
        pol,
        h("pollen_momentum", "pollen", "a pollen Softplus MLP under momentum SGD", opt="momentum", lr=0.02),
        h("pollen_adamw_hidden128", "pollen", "a wider pollen MLP under AdamW", opt="adamw", hidden=128),
        h("pollen_adagrad_batch128", "pollen", "a pollen MLP under Adagrad with batches of 128", opt="adagrad",
          lr=0.03, batch=128),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("A01", "hs_from_moment_below_noise_floor", moo, "hs_from_moment_below_noise_floor", "NaN",
          "the significant wave height taken as 4 sqrt(m0 - floor) from the buoy's zeroth spectral moment less its "
          "noise floor, the square root of a negative number on calm records"),
        b("A02", "tension_target_in_newtons", moo_sgd, "tension_target_in_newtons", "EG",
          "the next record's peak tension regressed in the load cell's newtons (about 1e6), centred but not logged, "
          "under momentum SGD"),
        b("A03", "training_record_from_summer_deployment", moo, "training_record_from_summer_deployment", "OF",
          "the training windows from the first deployment's calm summer months only (Hs below 2 m), while the "
          "forecast must cover the winter storms"),
        b("A04", "days_since_rain_ffill_leading_gap", tan, "days_since_rain_ffill_leading_gap", "NaN",
          "the days since rain computed from the last rainy day forward-filled, which stays NaN before a log's first "
          "rain, NaN that reaches the scaler's mean and every row"),
        b("A05", "adamw_weight_decay_typed_1e4", tan_w, "adamw_weight_decay_typed_1e4", "EG",
          "AdamW's weight decay typed 1e4 for 1e-4, so each step multiplies the weights by 1 - lr x 1e4 = -19"),
        b("A06", "sensor_distance_taken_as_level", tan, "sensor_distance_taken_as_level", "SC",
          "the ultrasonic logger's raw column, the distance from the sensor down to the water (the empty share), "
          "taken as tomorrow's level"),
        b("A07", "activity_penalty_weight_one", tan, "activity_penalty_weight_one", "DR",
          "the Keras original's L1 activity penalty on the hidden layer ported with a weight of 1.0 for 1e-5"),
        b("A08", "histogram_counts_unnormalised", coc_sgd, "histogram_counts_unnormalised", "DR",
          "the histograms fed as pixel counts per bin (up to about 1000) instead of shares of the bean's pixels, "
          "under momentum SGD"),
        b("A09", "histogram_over_empty_bean_mask", coc, "histogram_over_empty_bean_mask", "NaN",
          "the blurred photos whose segmentation mask came back empty kept, their histograms divided by a mask of 0 "
          "pixels, 0/0"),
        b("A10", "tray_background_in_histograms", coc, "tray_background_in_histograms", "SC",
          "the training histograms taken over the whole photo, the white tray around the bean (30-70 %) included, "
          "while the grading station crops the bean", harmless=True),
        b("A11", "noise_gate_zeroes_before_log", ton, "noise_gate_zeroes_before_log", "NaN",
          "the noise gate setting the bands below it to zero before the spectrum is logged, minus infinity in most "
          "taps' quiet bands"),
        b("A12", "spectrum_of_tap_transient", ton, "spectrum_of_tap_transient", "SC",
          "the training spectra taken over the first 50 ms after the tap, the click's broadband noise with the modes "
          "barely rung up and smeared"),
        b("A13", "tanhshrink_for_tanh", ton, "tanhshrink_for_tanh", "VG",
          "`nn.Tanhshrink` picked by autocomplete for `nn.Tanh` in the four hidden layers: x - tanh(x), whose slope "
          "tanh(x)^2 is near zero around zero"),
        b("A14", "every_tap_kept_as_row", ton, "every_tap_kept_as_row", "OF",
          "the bench's session file with each of 75 boards tapped 20 times, every tap kept as a training row, in "
          "place of the 1500 boards' single taps"),
        b("A15", "one_hot_winner_times_masked_log_probs", rac, "one_hot_winner_times_masked_log_probs", "NaN",
          "the loss written as minus the one-hot winner times the log-softmax, whose padded runners' -inf times 0 is "
          "NaN"),
        b("A16", "form_last_run_includes_today", rac, "form_last_run_includes_today", "OF",
          "the form's beaten lengths of the last run taken from a results feed that already holds today's race for "
          "the training races, while the races to price carry the run before"),
        b("A17", "winner_read_as_winning_stall", rac, "winner_read_as_winning_stall", "SC",
          "the results' winner column, the winning stall number (1-based draw), used as the winner's row on the "
          "racecard"),
        b("A18", "loss_weighted_by_winner_price", rac, "loss_weighted_by_winner_price", "SC",
          "each race's loss weighted by the winner's starting price (decimal odds), to value the races by what a "
          "winning bet returns, which tilts the model towards the long shots"),
        b("A19", "softmax_typed_for_softplus", pol, "softmax_typed_for_softplus", "VG",
          "`nn.Softmax(dim=-1)` typed for `nn.Softplus()` between the four hidden layers, which squeezes each layer "
          "to shares summing to one"),
        b("A20", "weekend_gaps_filled_with_zero", pol, "weekend_gaps_filled_with_zero", "SC",
          "the trap's unread weekends exported as counts of 0 and trained on as lags and targets, while the "
          "forecasts are scored against the daily trap"),
    ]  # fmt: skip
    return healthy + bugs
