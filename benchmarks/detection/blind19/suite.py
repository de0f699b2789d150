"""The nineteenth blind split as `run.py --suite blind19` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind19 import inspections, records, texts

PREFIX = "blind19_"
SCRIPTS = {"emotions": texts.emotions, "intents": texts.intents, "churn": records.churn,
           "intrusion": records.intrusion, "wafers": inspections.wafers, "plates": inspections.plates}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind19Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind19Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind19Program, prefix=PREFIX)
    emo = h("emotions_cnn_adam", "emotions", "a text emotion classifier (a CNN over word embeddings)")
    intent = h(
        "intents_bag_adam", "intents", "a dialogue-intent classifier with class weights (a bag of embeddings)"
    )
    intent_sgd = h("intents_bag_momentum", "intents", "an intent classifier under momentum SGD", opt="momentum",
                   lr=0.1)  # fmt: skip
    chu = h("churn_lstm_adam", "churn", "a churn predictor (an LSTM over customer event logs)")
    chu_sgd = h("churn_lstm_momentum_batch256", "churn", "a churn LSTM under momentum SGD with batches of 256",
                opt="momentum", lr=0.1, batch=256)  # fmt: skip
    ids = h("intrusion_mlp_adam", "intrusion", "a network-intrusion detector on flow records (an MLP)")
    ids_sgd = h("intrusion_nesterov_hidden64", "intrusion", "a narrower intrusion MLP under Nesterov SGD",
                opt="nesterov", lr=0.05, hidden=64)  # fmt: skip
    ids_cycle = h("intrusion_adamw_one_cycle", "intrusion", "an intrusion MLP under AdamW on a one-cycle schedule",
                  opt="adamw", lr=3e-3, one_cycle=True)  # fmt: skip
    waf = h("wafers_cnn_adam", "wafers", "a wafer-map defect classifier with heavy class imbalance (a CNN)")
    pla = h(
        "plates_cnn_adam", "plates", "a licence-plate character recogniser (a CNN with a head per position)"
    )
    pla_step = h("plates_nadam_step_decay", "plates", "a plate reader under NAdam divided by ten every 100 steps",
                 opt="nadam", batch=32, lr=3e-3, step_decay=True)  # fmt: skip
    healthy = [
        emo,
        h("emotions_adamw_dim64", "emotions", "a wider emotion CNN under AdamW", opt="adamw", dim=64, width=96),
        h("emotions_rmsprop_cosine", "emotions", "an emotion CNN under RMSprop decayed by a cosine", opt="rmsprop",
          lr=1e-3, cosine=True),
        h("emotions_momentum_batch64", "emotions", "an emotion CNN under momentum SGD with batches of 64",
          opt="momentum", lr=0.1, batch=64),
        intent,
        intent_sgd,
        h("intents_adagrad_dim32", "intents", "a narrower intent classifier under Adagrad", opt="adagrad", dim=32,
          lr=0.05),
        h("intents_nadam_batch128", "intents", "an intent classifier under NAdam with batches of 128", opt="nadam",
          batch=128),
        chu,
        chu_sgd,
        h("churn_rmsprop_hidden64", "churn", "a wider churn LSTM under RMSprop", opt="rmsprop", hidden=64, lr=1e-3),
        h("churn_adamw_clipped", "churn", "a churn LSTM under AdamW clipped at norm 1", opt="adamw", clip=1.0),
        ids,
        ids_cycle,
        ids_sgd,
        h("intrusion_radam_batch256", "intrusion", "an intrusion MLP under RAdam with batches of 256", opt="radam",
          batch=256, lr=2e-3),
        waf,
        h("wafers_adamw_width16", "wafers", "a wider wafer CNN under AdamW", opt="adamw", width=16),
        h("wafers_rmsprop_milestones", "wafers", "a wafer CNN under RMSprop halved at two milestones",
          opt="rmsprop", lr=1e-3, milestones=True),
        h("wafers_adamax_batch64", "wafers", "a wafer CNN under Adamax with batches of 64", opt="adamax", batch=64,
          lr=4e-3),
        pla,
        h("plates_rmsprop_width12", "plates", "a wider plate reader under RMSprop", opt="rmsprop", width=12,
          lr=5e-4),
        pla_step,
        h("plates_adamax", "plates", "a plate reader under Adamax", opt="adamax", lr=2e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("C01", "optimizer_given_head_parameters", emo, "optimizer_given_head_parameters", "VG",
          "the optimizer built over the classifier layer's parameters only, as in a recipe fine-tuning the head of a "
          "pretrained encoder, so the embeddings and filters stay at their random start"),
        b("C02", "dropout_defined_but_never_applied", emo, "dropout_defined_but_never_applied", "OF",
          "the dropout layer defined in the constructor but never called in forward, on 600 training sentences",
          harmless=True),
        b("C03", "label_ids_by_first_appearance", emo, "label_ids_by_first_appearance", "SC",
          "the training labels numbered in the order the emotions first appear in the training file, while the "
          "held-out labels keep the fixed numbering"),
        b("C04", "class_weights_raw_inverse_frequency", intent_sgd, "class_weights_raw_inverse_frequency", "EG",
          "the per-example class weights left as n / count instead of n / (classes * count), ten times the loss "
          "under momentum SGD"),
        b("C05", "batch_trimmed_to_shortest_utterance", intent, "batch_trimmed_to_shortest_utterance", "SC",
          "every utterance of a batch cut to the batch's shortest before the bag, dropping the cue words of the "
          "longer ones"),
        b("C06", "prior_bias_applied_to_every_layer", intent, "prior_bias_applied_to_every_layer", "DR",
          "the loop that starts the output bias at the intents' log prior also reaching the hidden layer, whose "
          "ReLUs start at a bias of about -2.6"),
        b("C07", "embeddings_loaded_with_from_pretrained", intent, "embeddings_loaded_with_from_pretrained", "VG",
          "the embedding table set by `EmbeddingBag.from_pretrained` from its own random start, which freezes it"),
        b("C08", "average_basket_of_non_buyers", chu, "average_basket_of_non_buyers", "NaN",
          "each purchase divided by the customer's average basket, which is 0/0 for a customer who never bought"),
        b("C09", "output_read_at_first_event", chu, "output_read_at_first_event", "SC",
          "the LSTM's padded outputs read at index 0 of the time axis (the first event) instead of its final state"),
        b("C10", "logs_cut_after_churn_date", chu, "logs_cut_after_churn_date", "OF",
          "the training logs exported up to today, so nine in ten churners' logs end with the account's closing "
          "downgrade, while the customers scored are cut at the prediction date"),
        b("C11", "rate_over_zero_duration", ids, "rate_over_zero_duration", "NaN",
          "the bytes per second divided by the flow's duration unguarded, which is zero for one-packet flows"),
        b("C12", "port_fed_as_number", ids, "port_fed_as_number", "SC",
          "the destination port fed as a standardised number instead of an embedded category"),
        b("C13", "keep_probability_given_as_dropout", ids, "keep_probability_given_as_dropout", "DR",
          "the TensorFlow original's keep probability of 0.9 given to `nn.Dropout`, which takes the share dropped"),
        b("C14", "class_weights_from_batch_counts", waf, "class_weights_from_batch_counts", "NaN",
          "the class weights computed from each batch's counts, infinite for a pattern the batch lacks and then "
          "normalised to NaN"),
        b("C15", "range_test_rate_left_in", waf, "range_test_rate_left_in", "EG",
          "a learning-rate range test that swept the rate up to 10 in place left in, so training goes on at 10"),
        b("C16", "epoch_counted_in_rows", waf, "epoch_counted_in_rows", "VG",
          "the epoch counted as the step over the number of training maps instead of batches, so the convolutions "
          "held still for the first two epochs are never released"),
        b("C17", "position_labels_stacked_position_major", pla, "position_labels_stacked_position_major", "SC",
          "the six positions' labels, yielded by the loader as a list, stacked into [positions, batch] and flattened "
          "against logits flattened batch-major"),
        b("C18", "step_gamma_written_as_divisor", pla_step, "step_gamma_written_as_divisor", "EG",
          "the step decay's gamma written as the divisor 10 instead of 0.1, so the rate grows tenfold at steps 100 and "
          "200", effect_step=100),
        b("C19", "heads_kept_in_plain_list", pla, "heads_kept_in_plain_list", "VG",
          "the six position heads kept in a plain Python list instead of an `nn.ModuleList`, so the optimizer never "
          "sees them and they stay at their random start"),
        b("C20", "one_cycle_stepped_per_epoch", ids_cycle, "one_cycle_stepped_per_epoch", "VG",
          "the one-cycle schedule, built for every batch of the run, stepped once an epoch, so the rate stays near its "
          "starting 1/25 of the peak"),
    ]  # fmt: skip
    return healthy + bugs
