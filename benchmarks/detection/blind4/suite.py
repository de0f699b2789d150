"""The fourth blind split's programs, their labels and ground truth (`run.py --suite blind4`).

Written from one-line briefs ("a typical training script for X" in settings no earlier split covered; "a realistic
mistake people report", none of the earlier splits' mistakes) without reading the rules, their documentation, their
tuning notes or any score, and frozen before it is scored. The mechanics are the earlier splits': the first split's
run context and oracle (`blind.harness`, `blind.suite.train` with this split's script table: a clean validation
score in [0, 1] every 10 steps, the loss at every step, the fixed twin with the same seed), the realistic suite's
harm labels (a bug hurts when its final score is clearly below its twin's over all seeds or its loss went
non-finite), seeds split by parity (even: calibration, odd: report), the second split's declarations. Each bug
names its twin, its fault category in AUTOTRAINER's layout plus OF (VG, EG, DR, OL, SC, NaN, OF) and the step at
which it takes effect. The mistakes that turned out harmless against their twins in the smoke runs (README.md) are
declared `should_stop=False`: they count neither for recall nor as false alarms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from benchmarks.detection.blind import suite as blind
from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind2 import suite as second
from benchmarks.detection.blind4 import fields, retrieval, sequences, structures

PREFIX = "blind4_"
CATEGORIES = blind.CATEGORIES
split_of = blind.split_of


@dataclass(frozen=True)
class Blind4Program(blind.BlindProgram):
    """A program of the fourth blind split: the first split's declaration, in a class of its own so that the runner
    hands it to this split's scripts."""


SCRIPTS: dict[str, Callable[[Run], None]] = {
    "lstm_tbptt": sequences.lstm_tbptt, "tagger": sequences.tagger, "nbeats": sequences.nbeats,
    "clip": retrieval.clip, "ncf": retrieval.ncf, "ranker": retrieval.ranker, "arcface": retrieval.arcface,
    "gin": structures.gin, "attention_pool": structures.attention_pool, "hypernet": structures.hypernet,
    "siren": fields.siren, "unet1d": fields.unet1d, "tied_autoencoder": fields.tied_autoencoder,
    "mean_teacher": fields.mean_teacher,
}  # fmt: skip
"""Each workload's script."""


def catalogue() -> list[Blind4Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind4Program, prefix=PREFIX)
    lstm = h(
        "char_lstm_tbptt_adam",
        "lstm_tbptt",
        "a character LSTM language model with truncated BPTT and clipping",
    )
    lstm_sgd = h("char_lstm_tbptt_sgd_clip", "lstm_tbptt",
                 "a character LSTM language model with truncated BPTT, SGD at lr 1 and clipping 0.25", opt="sgd")  # fmt: skip
    tagger = h("bigru_entity_tagger", "tagger", "a bidirectional GRU entity tagger on padded sentences")
    nbeats = h("nbeats_forecaster", "nbeats", "an N-BEATS-style forecaster with backcast residuals")
    clip = h("clip_learned_temperature", "clip", "a CLIP-style dual encoder with a learned temperature")
    ncf = h("ncf_neumf_warmup", "ncf", "neural collaborative filtering (NeuMF) with negative sampling")
    listnet = h("listnet_ranker", "ranker", "a listwise learning-to-rank model (ListNet)")
    arcface = h("arcface_sgd_nesterov", "arcface", "an ArcFace metric-learning head with Nesterov SGD")
    gin = h("gin_graph_classifier", "gin", "a graph isomorphism network classifying graphs (dense adjacency)")
    pool = h("attention_pooling_sets", "attention_pool", "a multi-head attention-pooling set classifier")
    hyper = h("hypernet_sine_tasks", "hypernet", "a hypernetwork generating a regression network's weights")
    siren = h(
        "siren_image_fit", "siren", "a SIREN (sine activations) fitting an image from pixel coordinates"
    )
    unet = h("unet1d_denoiser", "unet1d", "a 1-D U-Net denoising signals")
    tied = h("tied_denoising_autoencoder", "tied_autoencoder", "a weight-tied denoising autoencoder")
    teacher = h("mean_teacher_channels_last", "mean_teacher",
                "a mean-teacher semi-supervised CNN with an EMA teacher, channels-last")  # fmt: skip
    healthy = [
        lstm, lstm_sgd,
        h("char_lstm_tbptt_bptt10", "lstm_tbptt", "a character LSTM language model with shorter BPTT chunks", bptt=10),
        tagger,
        h("bigru_entity_tagger_nadam", "tagger", "a BiGRU entity tagger trained with NAdam", opt="nadam"),
        nbeats,
        h("nbeats_huber_radam", "nbeats", "an N-BEATS-style forecaster with a Huber loss and RAdam", opt="radam",
          loss="huber"),
        h("nbeats_adamax", "nbeats", "an N-BEATS-style forecaster trained with Adamax", opt="adamax", lr=2e-3),
        clip,
        h("clip_batch128", "clip", "a CLIP-style dual encoder with larger batches", batch=128),
        ncf,
        h("ncf_batch512_lr_1e-3", "ncf", "NeuMF with larger batches and a smaller rate", batch=512, lr=1e-3),
        listnet,
        h("ranknet_pairwise", "ranker", "a pairwise learning-to-rank model (RankNet)", loss="ranknet"),
        arcface,
        h("arcface_adamw", "arcface", "an ArcFace head trained with AdamW", opt="adamw"),
        gin,
        h("gin_batch64_lr_2e-3", "gin", "a graph isomorphism network with larger batches", batch=64, lr=2e-3),
        pool,
        h("attention_pooling_one_head", "attention_pool", "an attention-pooling set classifier, one head", heads=1),
        hyper,
        h("hypernet_rmsprop", "hypernet", "a hypernetwork trained with RMSprop", opt="rmsprop"),
        siren,
        h("siren_lr_5e-4", "siren", "a SIREN fitting an image with a larger rate", lr=5e-4),
        unet,
        h("unet1d_clip_by_value", "unet1d", "a 1-D U-Net denoiser with gradient clipping by value", clip_value=0.1),
        h("unet1d_sgd_nesterov", "unet1d", "a 1-D U-Net denoiser trained with Nesterov SGD", opt="nesterov"),
        tied,
        h("tied_autoencoder_bf16", "tied_autoencoder", "a weight-tied denoising autoencoder under bf16 autocast",
          bf16=True),
        teacher,
        h("mean_teacher_weight_norm", "mean_teacher", "a mean-teacher CNN with weight-normalised convolutions",
          weight_norm=True),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("W01", "clip_grad_norm_before_backward", lstm_sgd, "clip_before_backward", "EG",
          "clip_grad_norm_ called between zero_grad() and backward(): it clips nothing", harmless=True),
        b("W02", "lm_targets_not_shifted", lstm, "target_not_shifted", "OF",
          "the language model's targets are the input chunk itself, not the next tokens"),
        b("W03", "hidden_state_reset_every_chunk", lstm, "carried_state_dropped", "SC",
          "truncated BPTT with the hidden state reset to zeros at every chunk", harmless=True),
        b("W04", "padding_counted_in_loss", tagger, "padding_counted_in_loss", "SC",
          "padding positions (tag 0, 'outside') averaged into the tagging loss"),
        b("W05", "backcast_added_not_subtracted", nbeats, "backcast_added", "SC",
          "each N-BEATS block's backcast added to the residual instead of subtracted", harmless=True),
        b("W06", "standardised_with_validation_stats", nbeats, "standardised_with_validation_stats", "SC",
          "the standardisation statistics taken from the validation windows", harmless=True),
        b("W07", "temperature_divides_logits", clip, "temperature_divides_logits", "VG",
          "the similarities divided by the learned inverse temperature instead of multiplied"),
        b("W08", "warmup_counted_in_samples", ncf, "warmup_counted_in_samples", "SC",
          "a warm-up given in samples read as steps: the rate ramps for 5120 steps of a 300-step run"),
        b("W09", "relu_after_final_score", listnet, "relu_after_score", "DR",
          "a ReLU after the ranker's final linear layer ('scores are non-negative')", harmless=True),
        b("W10", "arcface_scale_applied_twice", arcface, "scale_applied_twice", "EG",
          "the ArcFace scale s applied by the head and again before the loss"),
        b("W11", "arcface_embeddings_not_normalised", arcface, "embeddings_not_normalised", "SC",
          "ArcFace with normalised class weights but unnormalised embeddings (cosines clamped)"),
        b("W12", "padded_nodes_in_readout", gin, "padded_nodes_in_readout", "SC",
          "the GIN's sum readout over every node slot, the padding ones included", harmless=True),
        b("W13", "optimizer_on_checkpoint_copy", pool, "optimizer_on_best_copy", "SC",
          "the optimizer built over the best-model copy's parameters instead of the model's"),
        b("W14", "attention_query_not_a_parameter", pool, "query_not_a_parameter", "SC",
          "the pooling query stored as a plain tensor: it is never trained", harmless=True),
        b("W15", "generated_weights_detached", hyper, "generated_weights_detached", "VG",
          "the hypernetwork's generated weights detached before use: only the output bias learns"),
        b("W16", "siren_omega_applied_twice", siren, "omega_applied_twice", "OF",
          "SIREN's omega_0 applied twice in the first layer (sin(900 Wx))"),
        b("W17", "relu_on_denoiser_output", unet, "relu_on_output", "DR",
          "a ReLU after the U-Net's output convolution of a signed signal"),
        b("W18", "denoising_target_is_corrupted_input", tied, "target_is_corrupted_input", "SC",
          "the denoising autoencoder's loss taken against its corrupted input"),
        b("W19", "ema_loop_rebinds_variable", teacher, "ema_loop_rebinds_variable", "SC",
          "the EMA update written as t = d * t + (1 - d) * s in a loop: the teacher is never updated"),
        b("W20", "ema_decay_inverted", teacher, "ema_decay_inverted", "SC",
          "the EMA update with the decay and 1 - decay swapped: the teacher copies the student", harmless=True),
        b("W21", "siren_default_init", siren, "default_init", "OF",
          "a SIREN built with nn.Linear's default initialisation under omega_0 = 30"),
        b("W22", "image_and_caption_loaders_shuffled_apart", clip, "views_shuffled_separately", "SC",
          "images and captions loaded by two DataLoaders with shuffle=True: the pairs no longer match"),
    ]  # fmt: skip
    return healthy + bugs


train = partial(blind.train, scripts=SCRIPTS)
"""Run a program with a seed through `trainguard.torch.Hook` into `out` (None: an inert hook); what the oracle saw."""
label = blind.label
"""Set each bug run's `should_stop` and `manifest_step` with the realistic suite's oracle."""
