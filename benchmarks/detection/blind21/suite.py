"""The twenty-first blind split as `run.py --suite blind21` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind21 import commerce, fields, travel

PREFIX = "blind21_"
SCRIPTS = {"hotels": travel.hotels, "flights": travel.flights, "soil": fields.soil, "stroke": fields.stroke,
           "prices": commerce.prices, "questions": commerce.questions}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind21Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind21Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind21Program, prefix=PREFIX)
    hot = h(
        "hotels_mlp_adam", "hotels", "a hotel-booking cancellation predictor (an MLP over embedded fields)"
    )
    fli = h("flights_mlp_adam", "flights", "a flight-delay regressor (an MLP) after a linear warmup")
    fli_sgd = h("flights_nesterov_hidden32", "flights", "a narrower delay MLP under Nesterov SGD", opt="nesterov",
                lr=0.02, hidden=32)  # fmt: skip
    soi = h("soil_sigmoid_mlp_adam", "soil", "a soil-moisture sensor regressor on 120 lab samples (MAPE)")
    stk = h(
        "stroke_tanh_mlp_adam", "stroke", "a stroke-risk classifier with temperature scaling (a tanh MLP)"
    )
    pri = h("prices_elasticity_momentum", "prices", "a retail price-elasticity model under momentum SGD")
    que = h(
        "questions_gru_momentum", "questions", "a question-duplicate detector (a GRU over pretrained vectors)"
    )
    healthy = [
        hot,
        h("hotels_adamw_hidden128", "hotels", "a wider cancellation MLP under AdamW", opt="adamw", hidden=128),
        h("hotels_rmsprop_batch256", "hotels", "a cancellation MLP under RMSprop with batches of 256",
          opt="rmsprop", lr=5e-4, batch=256),
        h("hotels_momentum", "hotels", "a cancellation MLP under momentum SGD", opt="momentum", lr=0.05),
        fli,
        fli_sgd,
        h("flights_rmsprop_batch64", "flights", "a delay MLP under RMSprop with batches of 64", opt="rmsprop",
          lr=1e-3, batch=64),
        h("flights_adagrad", "flights", "a delay MLP under Adagrad", opt="adagrad", lr=0.03),
        soi,
        h("soil_adamw_hidden32", "soil", "a narrower moisture MLP under AdamW", opt="adamw", hidden=32),
        h("soil_rmsprop_batch16", "soil", "a moisture MLP under RMSprop with batches of 16", opt="rmsprop",
          lr=2e-3, batch=16),
        h("soil_adamax", "soil", "a moisture MLP under Adamax", opt="adamax", lr=4e-3),
        stk,
        h("stroke_nadam_hidden64", "stroke", "a wider stroke MLP under NAdam", opt="nadam", hidden=64),
        h("stroke_momentum_batch128", "stroke", "a stroke MLP under momentum SGD with batches of 128",
          opt="momentum", lr=0.05, batch=128),
        h("stroke_adamax", "stroke", "a stroke MLP under Adamax", opt="adamax", lr=4e-3),
        pri,
        h("prices_adam_hidden64", "prices", "a wider elasticity model under Adam", opt="adam", lr=2e-3, hidden=64),
        h("prices_rmsprop_batch256", "prices", "an elasticity model under RMSprop with batches of 256",
          opt="rmsprop", lr=1e-3, batch=256),
        h("prices_adamw_batch1024", "prices", "an elasticity model under AdamW with batches of 1024", opt="adamw",
          lr=1e-3, batch=1024),
        que,
        h("questions_adam_hidden64", "questions", "a wider pair GRU under Adam", opt="adam", lr=2e-3, hidden=64),
        h("questions_rmsprop_batch64", "questions", "a pair GRU under RMSprop with batches of 64", opt="rmsprop",
          lr=1e-3, batch=64),
        h("questions_nadam_hidden32", "questions", "a narrower pair GRU under NAdam", opt="nadam", lr=3e-3,
          hidden=32),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("A01", "lead_time_logged_without_one", hot, "lead_time_logged_without_one", "NaN",
          "the lead time taken as log(days) instead of log(1 + days), minus infinity for same-day bookings"),
        b("A02", "reservation_status_left_in", hot, "reservation_status_left_in", "OF",
          "the export's reservation status (cancelled or checked out) left among the features, while the bookings "
          "to score have no status yet"),
        b("A03", "adam_given_sgd_rate", hot, "adam_given_sgd_rate", "EG",
          "Adam run at the rate 0.5 of the SGD recipe the script started from"),
        b("A04", "sequential_ends_in_relu", hot, "sequential_ends_in_relu", "DR",
          "the MLP's stack written as Linear + ReLU blocks down to the last, so the logit passes a ReLU before the "
          "BCE with logits"),
        b("A05", "adam_beta_given_as_sgd_momentum", fli_sgd, "adam_beta_given_as_sgd_momentum", "EG",
          "the config's beta of 0.999, written for the Adam run, read as the momentum of the Nesterov SGD run, so "
          "the step grows to a thousand times the gradient instead of ten"),
        b("A06", "delays_log1p_with_early_arrivals", fli, "delays_log1p_with_early_arrivals", "NaN",
          "the delays logged by log1p as they are, NaN for flights arriving more than a minute early"),
        b("A07", "init_fills_weights_with_zero", fli, "init_fills_weights_with_zero", "VG",
          "the init function meant to zero the biases also filling every linear layer's weights with zero"),
        b("A08", "int16_oversample_accumulator", soi, "int16_oversample_accumulator", "SC",
          "the probe's 16 readings summed into an accumulator of their own int16 dtype, which wraps past 32767"),
        b("A09", "raw_counts_fed_to_sigmoid_layer", soi, "raw_counts_fed_to_sigmoid_layer", "DR",
          "the raw ADC counts (about 1500-3600) skipped by the scaler and fed to the sigmoid layer as they are"),
        b("A10", "mape_without_floor_on_dry_samples", soi, "mape_without_floor_on_dry_samples", "NaN",
          "the MAPE's denominator left without its floor, zero for the oven-dry samples"),
        b("A11", "sample_number_left_in_features", soi, "sample_number_left_in_features", "OF",
          "the lab sheet's sample number left among the features; it follows the drying summer the 120 samples were "
          "cored in, and the samples scored carry later numbers"),
        b("A13", "training_forward_under_calibration_no_grad", stk, "training_forward_under_calibration_no_grad",
          "VG", "the training forward placed inside the calibration fold's `torch.no_grad` block, so only the "
          "temperature learns"),
        b("A14", "age_in_days_fed_raw_to_tanh", stk, "age_in_days_fed_raw_to_tanh", "DR",
          "the registry's age in days fed raw to the tanh layer in place of the standardised years"),
        b("A15", "log_units_without_one", pri, "log_units_without_one", "NaN",
          "the target taken as log(units), minus infinity on the many days a slow product sold nothing"),
        b("A16", "lr_scaled_by_batch_not_ratio", pri, "lr_scaled_by_batch_not_ratio", "EG",
          "the linear scaling rule applied as the rate times the batch of 512 instead of times 512 / 256"),
        b("A17", "pack_price_taken_as_unit_price", pri, "pack_price_taken_as_unit_price", "SC",
          "the price of multipacks taken per pack as the unit price, so the elasticity sees packs of six as dear", harmless=True),
        b("A18", "labels_shuffled_by_own_permutation", que, "labels_shuffled_by_own_permutation", "SC",
          "the label column shuffled by its own permutation apart from the question pairs"),
        b("A19", "pretrained_vectors_fine_tuned", que, "pretrained_vectors_fine_tuned", "OF",
          "the pretrained word vectors fine-tuned on the 800 training pairs, pulling the seen synonyms away from "
          "the unseen ones", harmless=True),
        b("A20", "gru_clipping_left_out", que, "gru_clipping_left_out", "EG",
          "the GRU's gradient clipping at norm 1 left out of the momentum-SGD recipe", harmless=True),
        b("A21", "mean_loss_divided_by_row_count", pri, "mean_loss_divided_by_row_count", "VG",
          "the mean squared error divided again by the 6000 training rows, a normalisation kept from the summed "
          "loss the loop started from"),
    ]  # fmt: skip
    return healthy + bugs
