"""The third blind split's programs, their labels and ground truth (`run.py --suite blind3`).

Written from one-line briefs ("a typical training script for X" in settings neither earlier split covered; "a
realistic mistake people report") without reading the rules, their documentation, their tuning notes or any
score, and frozen before it is scored. The mechanics are the earlier splits': the first split's run context and
oracle (`blind.harness`, `blind.suite.train` with this split's script table: a clean validation score in [0, 1]
every 10 steps, the loss at every step, the fixed twin with the same seed), the realistic suite's harm labels
(a bug hurts when its final score is clearly below its twin's over all seeds or its loss went non-finite), seeds
split by parity (even: calibration, odd: report). Each bug names its twin, its fault category in AUTOTRAINER's
layout plus OF (VG, EG, DR, OL, SC, NaN, OF) and the step at which it takes effect (`effect_step`; None where the
script measures it). The mistakes that turned out harmless against their twins in the smoke runs (README.md) are
declared `should_stop=False`: they count neither for recall nor as false alarms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from benchmarks.detection.blind import suite as blind
from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind2 import suite as second
from benchmarks.detection.blind3 import perception, relational, signals, tabular

PREFIX = "blind3_"
CATEGORIES = blind.CATEGORIES
split_of = blind.split_of

SCRIPTS: dict[str, Callable[[Run], None]] = {
    "wavenet": signals.wavenet, "quantile": signals.quantile, "pinn": signals.pinn, "mdn": signals.mdn,
    "ft_transformer": tabular.ft_transformer, "multilabel": tabular.multilabel, "ordinal": tabular.ordinal,
    "moe": tabular.moe,
    "transe": relational.transe, "gru4rec": relational.gru4rec, "pointnet": relational.pointnet,
    "se_cnn": perception.se_cnn, "simsiam": perception.simsiam, "transformer_accum": perception.transformer_accum,
}  # fmt: skip
"""The scripts by workload name."""


@dataclass(frozen=True)
class Blind3Program(blind.BlindProgram):
    """A program of the third blind split (the first split's declaration; its own class so that the runner
    dispatches it to this split's scripts)."""


_healthy = partial(second.declare_healthy, kind=Blind3Program, prefix=PREFIX)
_bug = partial(second.declare_bug, prefix=PREFIX)


def catalogue() -> list[Blind3Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = _healthy
    wavenet = h(
        "wavenet_dilated_causal", "wavenet", "a WaveNet-style dilated causal conv model of audio samples"
    )
    quantile = h("quantile_forecaster_pinball", "quantile", "a quantile regression forecaster (pinball loss)")
    quantile_sgd = h("quantile_forecaster_sgd_onecycle", "quantile",
                     "a quantile forecaster trained with SGD and a one-cycle schedule", opt="sgd")  # fmt: skip
    pinn = h(
        "pinn_oscillator_rprop",
        "pinn",
        "a physics-informed residual MLP (PINN) for an ODE, Rprop",
        opt="rprop",
    )
    mdn = h("mdn_inverse_problem", "mdn", "a mixture density network on a multi-valued inverse problem")
    ft = h(
        "ft_transformer_plateau", "ft_transformer", "an FT-Transformer on tabular data with ReduceLROnPlateau"
    )
    tagger = h("multilabel_pos_weight", "multilabel", "a multi-label classifier with BCE and pos_weight")
    ordinal = h(
        "ordinal_coral_lamb", "ordinal", "an ordinal regression (cumulative logits) with a hand-written LAMB"
    )
    moe = h(
        "moe_switch_load_balancing", "moe", "a mixture-of-experts layer with a load-balancing auxiliary loss"
    )
    transe = h(
        "transe_margin_ranking", "transe", "a knowledge-graph embedding model (TransE, margin ranking)"
    )
    gru4rec = h(
        "gru4rec_sampled_softmax", "gru4rec", "a GRU4Rec-like session recommender with sampled softmax"
    )
    pointnet = h("pointnet_masked_max_pool", "pointnet", "a PointNet / Deep Sets classifier on point clouds")
    se_cnn = h(
        "se_cnn_nesterov_warm_restarts", "se_cnn", "a squeeze-and-excitation CNN with SGD and warm restarts"
    )
    simsiam = h("simsiam_stop_gradient", "simsiam", "a SimSiam self-supervised model with a predictor")
    accum = h("transformer_accum_bf16_adamw", "transformer_accum",
              "a transformer with gradient accumulation and bf16 autocast on CPU", steps=150)  # fmt: skip
    accum_sgd = h("transformer_accum_bf16_sgd", "transformer_accum",
                  "a transformer with gradient accumulation, bf16 autocast and SGD", steps=150, opt="sgd")  # fmt: skip
    healthy = [
        wavenet,
        h("wavenet_kernel3", "wavenet", "a WaveNet-style model with kernel size 3", kernel=3),
        h("wavenet_lr_1e-3", "wavenet", "a WaveNet-style model with a smaller learning rate", lr=1e-3),
        quantile, quantile_sgd, pinn,
        h("pinn_oscillator_adam", "pinn", "a physics-informed network for an ODE trained with Adam"),
        mdn,
        h("mdn_no_dropout_lr_2e-3", "mdn", "a mixture density network without dropout", dropout=0.0, lr=2e-3),
        ft,
        h("ft_transformer_batch32", "ft_transformer", "an FT-Transformer with small batches", batch=32, lr=5e-4),
        tagger,
        h("multilabel_plain_bce", "multilabel", "a multi-label classifier with plain BCE", pos_weight=False),
        ordinal,
        h("ordinal_coral_adagrad", "ordinal", "an ordinal regression trained with Adagrad", opt="adagrad"),
        moe,
        h("moe_aux_weight_0.1", "moe", "a mixture of experts with a strong balancing loss", aux_weight=0.1),
        transe,
        h("transe_lr_0.3", "transe", "TransE with a smaller learning rate", lr=0.3),
        gru4rec,
        h("gru4rec_lr_1e-3", "gru4rec", "a session recommender with a smaller learning rate", lr=1e-3),
        pointnet,
        h("pointnet_batch64", "pointnet", "a point-cloud classifier with larger batches", batch=64),
        se_cnn,
        h("se_cnn_asgd", "se_cnn", "a squeeze-and-excitation CNN trained with ASGD", opt="asgd"),
        simsiam, accum, accum_sgd,
    ]  # fmt: skip
    b = _bug
    bugs = [
        b("Z01", "causal_padding_trimmed_at_wrong_end", wavenet, "causal_trim_wrong_end", "OF",
          "the causal convolution's padding trimmed on the left: each output sees the samples it must predict"),
        b("Z02", "pinball_residual_sign_flipped", quantile, "pinball_residual_flipped", "SC",
          "the pinball loss written with pred - y: the 10% and 90% quantiles swap"),
        b("Z03", "sum_reduction_under_mean_tuned_sgd", quantile_sgd, "sum_reduction_sgd_rate", "EG",
          "the loss summed over a batch of 256 under an SGD rate tuned for the mean"),
        b("Z04", "second_derivative_without_create_graph", pinn, "second_derivative_without_graph", "SC",
          "autograd.grad without create_graph for u_tt (retain_graph added to silence the error)"),
        b("Z05", "mixture_weights_normalised_over_batch", mdn, "mixture_weights_over_batch", "SC",
          "log_softmax of the mixture logits over dim 0 (the batch) instead of the components"),
        b("Z06", "functional_dropout_left_on_at_eval", mdn, "functional_dropout_at_eval", "SC",
          "F.dropout(..., training=True) in forward(): dropout also at evaluation", harmless=True),
        b("Z07", "plateau_scheduler_fed_accuracy", ft, "plateau_fed_accuracy", "SC",
          "ReduceLROnPlateau (mode 'min') stepped with the validation accuracy", effect_step=None, harmless=True),
        b("Z08", "head_replaced_after_optimizer_built", ft, "head_replaced_after_optimizer", "SC",
          "the classifier head replaced after the optimizer was created: the new head is never updated", harmless=True),
        b("Z09", "pos_weight_in_wrong_label_order", tagger, "pos_weight_wrong_label_order", "SC",
          "pos_weight listed rarest label first while the label columns go commonest first"),
        b("Z10", "logits_clamped_at_zero", tagger, "logits_clamped_at_zero", "DR",
          "clamp(min=0) on the logits: no label can be predicted absent, and its gradient dies"),
        b("Z11", "l2_penalty_subtracted", ordinal, "l2_penalty_subtracted", "EG",
          "a hand-written L2 penalty added with the wrong sign", harmless=True),
        b("Z12", "gate_probability_not_applied", moe, "gate_probability_not_applied", "SC",
          "the top-1 expert's output not multiplied by its gate: the router learns only from the auxiliary loss"),
        b("Z13", "warmup_lambda_returns_the_rate", moe, "warmup_lambda_returns_the_rate", "VG",
          "a LambdaLR warmup whose lambda returns the learning rate instead of a factor (rate squared)"),
        b("Z14", "margin_ranking_target_sign_reversed", transe, "margin_target_sign_reversed", "SC",
          "MarginRankingLoss with target +1 on distances (lower is better): positives pushed away"),
        b("Z15", "padding_idx_on_a_real_item", gru4rec, "padding_idx_on_real_item", "DR",
          "padding_idx=0 while item ids start at 0: the most frequent item's embedding is frozen at zero", harmless=True),
        b("Z16", "tied_output_embeddings_broken_by_copy", gru4rec, "tied_weights_broken_by_copy", "SC",
          "weight tying written as a copy into a new Parameter: the two tables train apart", harmless=True),
        b("Z17", "first_cloud_mask_broadcast_over_batch", pointnet, "first_cloud_mask_broadcast", "SC",
          "the padding mask of the batch's first cloud broadcast over the whole batch", harmless=True),
        b("Z18", "batchnorm_batches_of_two", pointnet, "batchnorm_batches_of_two", "OL",
          "a BatchNorm network trained with batches of 2"),
        b("Z19", "backward_twice_retain_graph", se_cnn, "backward_twice_retain_graph", "EG",
          "loss.backward(retain_graph=True) then loss.backward(): the gradients are doubled"),
        b("Z20", "lr_string_falls_back_to_default", se_cnn, "lr_string_falls_back_to_default", "OL",
          "the learning rate read from YAML as the string '5e-2' and replaced by a default of 1.0"),
        b("Z21", "stop_gradient_on_predictor_branch", simsiam, "stop_gradient_on_predictor_branch", "SC",
          "SimSiam's stop-gradient put on the predictor's output instead of the target projection"),
        b("Z22", "accumulated_gradients_never_zeroed", accum, "accumulation_never_zeroed", "EG",
          "gradient accumulation with zero_grad() only before the loop: gradients add up across steps", effect_step=1),
    ]  # fmt: skip
    return healthy + bugs


train = partial(blind.train, scripts=SCRIPTS)
"""Run a program with a seed through `trainguard.torch.Hook` into `out` (None: an inert hook); what the oracle saw."""
label = blind.label
"""Set each bug run's `should_stop` and `manifest_step` with the realistic suite's oracle."""
