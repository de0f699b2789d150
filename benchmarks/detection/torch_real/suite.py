"""The realistic PyTorch suite (`run.py --suite torch-real`): healthy programs, bugs from published studies and
reports, each bug beside its fixed twin, trained through the real hook at save_interval 10.

Ground truth comes from an oracle that sees what the hook does not: a validation score every 10 steps on
clean data (accuracy, AUC, R^2, a GAN's mode coverage, a policy's expected reward; 1 is best), the training
loss at every step, and the fixed twin run with the same seed. A bug *hurts* when its final score is clearly
below its twin's over all seeds, or its loss went non-finite; bugs that do not hurt are labelled "should not
stop" and count neither for recall nor as false alarms. A bug becomes *visible* at the first step where its
score fell `SEPARATION` below its twin's and stayed there for `SEPARATION_POINTS` oracle points, or at its
first non-finite loss, whichever is first; for overfitting (category OF) at the oracle's best score, the
point after which generalisation gets worse (Prechelt's E_opt). Delays are counted from there.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, replace

import numpy as np
import torch

from benchmarks.detection.programs import Truth
from benchmarks.detection.torch_real import loop, workloads

PREFIX = "real_"
SAVE_INTERVAL = 10
"""The hook's default save interval: what a job gets without configuring anything."""
SEPARATION = 0.05
"""Score gap (scores are in [0, 1]) below the twin that makes a bug visible."""
SEPARATION_POINTS = 3
"""Consecutive oracle points the gap must hold."""


@dataclass(frozen=True)
class RealProgram:
    """One program of the suite: a workload with knobs, and for a bug its id, twin and labels."""

    name: str
    workload: str
    knobs: tuple[tuple[str, object], ...] = ()
    steps: int = 400
    fault: str | None = None
    bug: str | None = None
    category: str | None = None
    intended_rules: tuple[str, ...] = ()
    affected_layer: str | None = None
    should_stop: bool = True
    twin: str | None = None
    source: str = ""
    """Where the bug is reported (bug study, report, thread), for a bug."""
    save_interval: int = SAVE_INTERVAL
    hard_negative: bool = False


HEAVY = frozenset({"conv", "images", "transformer", "lm", "rnn"})
"""Workloads whose steps cost several times an MLP's: they train 300 steps, the others 400."""


def _healthy(name: str, workload: str, steps: int | None = None, **knobs: object) -> RealProgram:
    steps = steps or (300 if workload in HEAVY else 400)
    return RealProgram(name=PREFIX + name, workload=workload, knobs=tuple(sorted(knobs.items())), steps=steps)


def _bug(fault: str, name: str, twin: RealProgram, bug: str, category: str, rules: tuple[str, ...], source: str,
         *, affected: str | None = None, steps: int | None = None, **knobs: object) -> RealProgram:  # fmt: skip
    merged = dict(twin.knobs) | knobs
    return replace(twin, name=f"{PREFIX}{fault}_{name}", knobs=tuple(sorted(merged.items())), fault=fault, bug=bug,
                   category=category, intended_rules=rules, affected_layer=affected, twin=twin.name,
                   steps=steps or twin.steps, source=source)  # fmt: skip


# rule groups the bug labels share
NOT_LEARNING = ("loss_not_decreasing", "weight_update_ratio")
DIVERGING = ("exploding_tensor", "exploding_gradient", "weight_update_ratio", "diverging_loss")
UNSTABLE = ("oscillating_loss", "loss_spike", "exploding_gradient", "exploding_tensor", "weight_update_ratio",
            "diverging_loss")  # fmt: skip
OVERFITTING = ("overfit", "overtraining")
INPUTS = ("input_scale", *NOT_LEARNING)


def catalogue() -> list[RealProgram]:
    """Every program: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = _healthy
    mlp_adam = h("mlp_adam", "mlp", opt="adam", lr=2e-3)
    mlp_momentum = h("mlp_momentum_step", "mlp", opt="momentum", lr=0.05, sched="step")
    rings = h("mlp_rings", "mlp", data="rings", opt="adam", lr=3e-3)
    deep_relu = h("mlp_deep_relu", "mlp", hidden=(64,) * 6, init="he", opt="adam", lr=1e-3)
    tanh = h("mlp_tanh", "mlp", act="tanh", init="glorot", opt="momentum", lr=0.05)
    dropout = h("mlp_dropout_heavy", "mlp", dropout=0.5, hidden=(128, 128), opt="adam", lr=2e-3)
    accumulation = h("mlp_accumulation", "mlp", accum=4, batch=16, opt="momentum", lr=0.05)
    cnn = h("cnn_momentum_step", "conv", opt="momentum", lr=0.02, sched="step")
    transformer = h("transformer_warmup_cosine_smoothing", "transformer")
    gpt = h("gpt_lm_warmup_cosine", "lm")
    gru = h("gru_clipping", "rnn", cell="gru")
    irnn = h("irnn_identity_recurrent", "rnn", cell="irnn", lr=1e-3)
    lstm_lm = h("lstm_lm_sgd_clipping", "lm", rnn=True, opt="sgd", lr=2.0, clip=0.5, sched="plateau")
    gan = h("gan_bce_two_optimizers", "gan", steps=500)
    finetune = h("finetune_discriminative_lr", "finetune", mode="discriminative")
    regression = h("regression_mse", "regression", opt="momentum", lr=0.01)
    binary_mlp = h("binary_mlp", "binary", linear=False, signal=4.0, opt="momentum", lr=0.05)
    frozen = h("finetune_frozen_backbone", "finetune", mode="frozen")
    warmup_sgd = h(
        "mlp_momentum_warmup_cosine", "mlp", opt="momentum", lr=0.05, sched="warmup_cosine", warmup=20
    )
    # noisy losses and objectives not meant to fall steadily (noisy_objectives.py)
    robust = h("robust_huber_heavy_tailed_targets", "robust_regression")
    dropout_b8 = h("dropout_half_batches_of_8_nesterov", "dropout_small_batch")
    noisy = [robust, dropout_b8, h("vae_kl_weight_annealed", "vae_kl_annealing", steps=600),
             h("simclr_projection_head_sgd", "simclr"), h("ppo_actor_critic_policy_loss", "ppo")]  # fmt: skip
    # float16 with a dynamic loss scale that skips a step on each overflow (a few in a row at the start)
    cnn_manual_scale = h("cnn_fp16_manual_loss_scale", "conv", amp="fp16_manual", scale_init=2.0**16,
                         scale_growth=25, opt="momentum", lr=0.02)  # fmt: skip
    transformer_manual_scale = h("transformer_fp16_manual_loss_scale", "transformer", amp="fp16_manual",
                                 scale_init=2.0**16, scale_growth=25)  # fmt: skip
    images_bn = h("images_uint8_jitter_after_warmup", "images")
    images_plain = h("images_plain_cnn_adam_b64", "images", norm=False, opt="adam", lr=1e-3, batch=64)
    images_resnet = h(
        "images_resnet_jitter_from_start_b16", "images", resnet=True, batch=16, aug_from=0, jitter=48
    )
    healthy = [
        mlp_momentum, mlp_adam,
        h("mlp_adamw_onecycle", "mlp", opt="adamw", lr=3e-3, wd=0.01, sched="onecycle"),
        h("mlp_rmsprop_exponential", "mlp", opt="rmsprop", lr=1e-3, sched="exp"),
        h("mlp_adagrad", "mlp", opt="adagrad", lr=0.05),
        h("mlp_nadam_linear_warmup", "mlp", opt="nadam", lr=2e-3, sched="linear_warmup"),
        h("mlp_radam_plateau", "mlp", opt="radam", lr=2e-3, sched="plateau"),
        dropout,
        h("mlp_layernorm_gelu_cosine", "mlp", norm="layer", act="gelu", opt="adamw", lr=2e-3, sched="cosine"),
        h("mlp_batchnorm_cyclic", "mlp", norm="batch", opt="momentum", lr=0.05, sched="cyclic"),
        rings,
        h("mlp_label_smoothing", "mlp", label_smoothing=0.1, opt="adam", lr=2e-3, sched="warmup_cosine"),
        accumulation,
        h("mlp_bf16_autocast", "mlp", amp="bf16", opt="adam", lr=2e-3),
        h("mlp_fp16_grad_scaler", "mlp", amp="fp16", opt="adam", lr=2e-3),
        h("curriculum_shift", "curriculum", steps=450),
        h("mlp_small_batch", "mlp", batch=8, opt="momentum", lr=0.01),
        h("mlp_full_batch", "mlp", batch=2048, opt="adamw", lr=2e-3, wd=0.05, steps=300),
        h("mlp_adamax_multistep", "mlp", opt="adamax", lr=4e-3, sched="multistep"),
        h("mlp_nesterov_warm_restarts", "mlp", opt="nesterov", lr=0.05, sched="warm_restarts"),
        deep_relu, tanh,
        h("mlp_sgd_polynomial", "mlp", opt="sgd", lr=0.2, sched="poly"),
        h("mlp_adadelta", "mlp", opt="adadelta", lr=1.0),
        cnn,
        h("cnn_adam_cosine", "conv", opt="adam", lr=2e-3, sched="cosine"),
        h("resnet_zero_init_onecycle", "conv", resnet=True, opt="nesterov", lr=0.05, wd=5e-4, sched="onecycle"),
        h("resnet_adamw_multistep", "conv", resnet=True, zero_init=False, opt="adamw", lr=2e-3, sched="multistep"),
        transformer, gpt,
        h("gpt_lm_tied_bf16", "lm", tie=True, amp="bf16"),
        gru,
        h("lstm_classifier_plateau", "rnn", cell="lstm", sched="plateau"),
        irnn, lstm_lm,
        h("mf_plain_sgd_sparse_usage", "recommender", model="mf", opt="sgd", lr=5.0),
        h("ncf_adam", "recommender", model="ncf", opt="adam", lr=1e-2),
        h("two_tower_embedding_bag_adagrad", "recommender", model="tower", opt="adagrad", lr=0.3),
        h("mf_sparse_embeddings_sparse_adam", "recommender", model="mf", sparse=True, opt="sparse_adam", lr=5e-3),
        gan,
        h("gan_hinge_two_optimizers", "gan", loss="hinge", lr=2e-4, d_ratio=4.0, steps=500),
        h("autoencoder", "autoencoder"),
        h("vae", "autoencoder", vae=True),
        h("reinforce_bandit", "policy"),
        h("actor_critic_bandit", "policy", critic=True),
        frozen, warmup_sgd,
        h("finetune_lora", "finetune", mode="lora"),
        finetune,
        h("multitask_cls_reg", "multitask"),
        regression,
        h("regression_huber_adam", "regression", loss="huber", opt="adam", lr=2e-3),
        h("binary_noisy_bayes_floor", "binary", opt="sgd", lr=0.1),
        binary_mlp,
        h("distillation", "distill"),
        h("contrastive_infonce", "contrastive"),
        *noisy,
        cnn_manual_scale, transformer_manual_scale,
        h("mlp_fp16_manual_loss_scale", "mlp", amp="fp16_manual", scale_init=2.0**14, scale_growth=25, opt="adam",
          lr=2e-3),
        h("gpt_lm_fp16_grad_scaler_short_growth", "lm", amp="fp16", scale_init=2.0**16, scale_growth=20),
        images_bn, images_plain, images_resnet,
    ]  # fmt: skip
    b = _bug
    bugs = [
        b("B01", "nll_loss_on_raw_logits", mlp_adam, "nll_raw_logits", "EG", ("diverging_loss", "exploding_gradient"),
          "StackOverflow: negative NLLLoss without log_softmax"),
        b("B02", "labels_shuffled_apart_from_inputs", mlp_adam, "shuffled_labels", "SC", NOT_LEARNING,
          "DeepCrime label mutation; StackOverflow: x and y shuffled separately"),
        b("B03", "softmax_before_cross_entropy", mlp_momentum, "softmax_before_ce", "SC", (*NOT_LEARNING, "saturated_activation"),
          "StackOverflow: CrossEntropyLoss after Softmax; DeepFD activation faults"),
        b("B04", "mlp_without_activations", rings, "no_activations", "SC", NOT_LEARNING,
          "DeepFD activation faults; StackOverflow: network without nonlinearity"),
        b("B05", "epoch_scheduler_stepped_per_batch", cnn, "sched_per_batch", "SC", NOT_LEARNING,
          "StackOverflow/PyTorch forums: scheduler.step() inside the batch loop"),
        b("B06", "inputs_not_normalised_x1000", mlp_adam, "x1000", "DR", ("poor_weight_initialization", "dead_relu", *DIVERGING),
          "AUTOTRAINER-TDSC abnormal data; UMLAUT input range"),
        b("B07", "missing_zero_grad", mlp_momentum, "no_zero_grad", "OL", UNSTABLE,
          "TrainCheck silent errors; StackOverflow: gradients accumulate without zero_grad"),
        b("B08", "new_head_left_out_of_optimizer", frozen, "stale_head", "SC", ("unchanged_tensor", *NOT_LEARNING),
          "TrainCheck: optimizer built before the model's last layer was replaced", affected="head"),
        b("B09", "backbone_features_detached", finetune, "detach_backbone", "SC", ("unchanged_tensor",),
          "TrainCheck silent errors: a stray .detach() freezes the layers before it", affected="backbone"),
        b("B10", "loss_summed_not_averaged", mlp_momentum, "sum_reduction", "NaN", DIVERGING,
          "DeepDiagnosis learning-rate advice; StackOverflow: reduction='sum' with SGD"),
        b("B11", "mse_target_broadcast", regression, "mse_broadcast", "SC", NOT_LEARNING,
          "StackOverflow: MSELoss with input [B, 1] and target [B]"),
        b("B12", "lm_lr_too_high", gpt, None, "OL", (*UNSTABLE, *NOT_LEARNING, "dead_relu"),
          "AUTOTRAINER/DeepFD learning-rate faults", lr=0.5, clip=None),
        b("B13", "cnn_lr_too_low", cnn, None, "SC", NOT_LEARNING, "DeepFD learning-rate faults", lr=2e-5),
        b("B14", "deep_mlp_with_sigmoid", deep_relu, None, "VG", ("vanishing_gradient",),
          "AUTOTRAINER vanishing gradient; DeepFD activation faults", act="sigmoid", init="glorot", opt="momentum",
          lr=0.05, affected="layers"),
        b("B15", "sgd_lr_too_high_kills_relus", mlp_momentum, None, "DR", ("dead_relu", *DIVERGING),
          "AUTOTRAINER dying ReLU", lr=1.0),
        b("B16", "tanh_init_too_large", tanh, None, "SC", ("saturated_activation", "poor_weight_initialization"),
          "DeepDiagnosis saturated activation", init_scale=6.0, affected="layers"),
        b("B17", "all_zero_init", mlp_adam, "zero_init", "SC",
          ("poor_weight_initialization", "unchanged_tensor", "all_zero"), "MindInsight weight initialisation"),
        b("B18", "lstm_without_gradient_clipping", lstm_lm, None, "EG", DIVERGING,
          "StackOverflow: exploding gradients in LSTM language models", clip=None, lr=40.0),
        b("B19", "same_batch_every_step", mlp_adam, "same_batch", "OF", OVERFITTING,
          "StackOverflow: next(iter(loader)) inside the training loop", steps=600),
        b("B20", "tiny_training_set", dropout, "tiny_trainset", "OF", OVERFITTING,
          "UMLAUT overfitting heuristics; DeepCrime training-data mutation", steps=600),
        b("B21", "zero_grad_between_backward_and_step", mlp_adam, "zero_grad_after_backward", "SC",
          ("unchanged_tensor", *NOT_LEARNING), "TrainCheck silent errors: calls in the wrong order"),
        b("B22", "clip_norm_typo", lstm_lm, None, "SC", NOT_LEARNING,
          "StackOverflow: clip_grad_norm_ max_norm far too small", clip=1e-4),
        b("B23", "sigmoid_then_bce_with_logits", binary_mlp, "double_sigmoid", "SC",
          (*NOT_LEARNING, "saturated_activation"), "StackOverflow: BCEWithLogitsLoss on sigmoid outputs"),
        b("B24", "weight_decay_far_too_large", mlp_adam, None, "SC", NOT_LEARNING,
          "DeepFD optimizer faults", wd=1.0),
        b("B25", "gan_discriminator_lr_x100", gan, "d_lr_x100", "OL", (*UNSTABLE, *NOT_LEARNING),
          "GAN training failures: discriminator overpowering the generator"),
        b("B26", "relu_on_output_logits", mlp_adam, "relu_on_logits", "DR", ("dead_relu", *NOT_LEARNING),
          "DeepFD/AUTOTRAINER-TDSC improper output activation"),
        b("B27", "warmup_never_capped", warmup_sgd, None, "EG", UNSTABLE,
          "StackOverflow: LambdaLR warmup without min(1, ...)", sched="warmup_uncapped"),
        b("B28", "irnn_lr_too_high", irnn, None, "EG", DIVERGING, "Le et al. 2015 IRNN: learning rate sensitivity",
          lr=0.2, clip=None),
        b("B29", "dropout_given_keep_probability", dropout, "dropout_keep_prob", "SC", NOT_LEARNING,
          "TensorFlow-to-PyTorch porting: keep_prob passed as p"),
        b("B30", "accumulation_without_dividing", accumulation, "accum_no_divide", "OL", UNSTABLE,
          "StackOverflow: gradient accumulation without scaling the loss", accum=8, lr=0.2),
        b("B31", "memorising_shuffled_small_set", mlp_adam, "tiny_shuffled", "OF", OVERFITTING,
          "Zhang et al. 2017 (random labels are memorised); a small set with misaligned labels", steps=600),
        b("L01", "robust_regression_lr_far_too_small", robust, None, "SC", NOT_LEARNING,
          "DeepFD learning-rate faults: a learning rate three orders of magnitude too small", lr=1e-6),
        b("L02", "hidden_biases_initialised_dead", dropout_b8, "dead_bias_init", "SC", (*NOT_LEARNING, "dead_relu"),
          "AUTOTRAINER dying ReLU: a negative constant bias init turns every unit off"),
        b("B35", "loss_scaler_never_recovers", cnn_manual_scale, "scaler_never_recovers", "SC",
          ("optimizer_not_stepping",),
          "apex/Megatron-style issues: 'Gradient overflow. Skipping step' on every step after the first overflow"),
        b("B36", "transformer_loss_scaler_never_recovers", transformer_manual_scale, "scaler_never_recovers", "SC",
          ("optimizer_not_stepping",),
          "hand-written loss scalers whose overflow flag is or-ed and never cleared (fairseq/apex-era code)"),
        b("B37", "uint8_brightness_wraps_around", images_bn, "uint8_overflow", "SC", INPUTS,
          "PyTorch forums/StackOverflow: uint8 image arithmetic overflows (cast back without clamping)"),
        b("B38", "pixels_normalised_twice", images_plain, "double_normalisation", "SC", INPUTS,
          "PyTorch forums: ToTensor and Normalize applied in the data set and again in the loop"),
        b("B39", "uint8_brightness_wraps_from_start", images_resnet, "uint8_overflow", "SC", INPUTS,
          "PyTorch forums/StackOverflow: uint8 image arithmetic overflows (cast back without clamping)"),
    ]  # fmt: skip
    return healthy + bugs + scale_programs()


def scale_programs() -> list[RealProgram]:
    """Healthy practice that reads like a fault to rules reasoning about scale (a loss below zero by design, a
    frozen encoder under a small head, embeddings before BatchNorm, a 1-D CNN with Nesterov SGD), and bugs
    beside three of them."""
    h, b = _healthy, _bug
    nll = h("gaussian_nll_heteroscedastic_adam", "gaussian_regression", opt="adam", lr=1e-3, batch=128)
    probe = h("linear_probe_frozen_cnn_momentum", "linear_probe", encoder="cnn", opt="momentum", lr=0.1, batch=128,
              steps=300)  # fmt: skip
    conv1d = h("cnn1d_nesterov_step", "cnn1d", opt="nesterov", lr=0.05, wd=5e-4, sched="step", steps=300)
    healthy = [
        nll,
        h("gaussian_nll_rmsprop_small_batch", "gaussian_regression", opt="rmsprop", lr=5e-4, batch=32),
        h("vae_gaussian_decoder_elbo", "gaussian_vae", opt="adamw", lr=1e-3, batch=32),
        probe,
        h("linear_probe_frozen_mlp_adam", "linear_probe", encoder="mlp", opt="adam", lr=1e-3, init_std=0.001,
          batch=256),
        h("tabular_embeddings_batchnorm_adam", "tabular", opt="adam", lr=1e-3, batch=256),
        h("tabular_embeddings_batchnorm_momentum", "tabular", opt="momentum", lr=0.05, batch=512, dim=16,
          cards=(20000, 3000, 40)),
        h("tabular_large_tables_batchnorm_first_adamw", "tabular", opt="adamw", lr=2e-3, wd=0.01, batch=256,
          cards=(200000, 8000, 30), bn_first=True),
        conv1d,
        h("cnn1d_nesterov_cosine_small_batch", "cnn1d", opt="nesterov", lr=0.02, wd=1e-4, sched="cosine", batch=16,
          steps=300),
    ]  # fmt: skip
    bugs = [
        b("B32", "gaussian_nll_plain_momentum_sgd", nll, None, "EG", DIVERGING,
          "Seitzer et al. 2022 (pitfalls of heteroscedastic regression): the NLL's gradients grow as 1/variance",
          opt="momentum", lr=0.05),
        b("B33", "probe_lr_too_low", probe, None, "SC", NOT_LEARNING,
          "DeepFD learning-rate faults, on a linear probe", lr=1e-5),
        b("B34", "cnn1d_missing_zero_grad", conv1d, "no_zero_grad", "OL", UNSTABLE,
          "StackOverflow: gradients accumulate without zero_grad, with Nesterov momentum on top"),
    ]  # fmt: skip
    return healthy + bugs


def train(p: RealProgram, seed: int, *, out: str) -> Truth:
    """Run `p` with `seed` through `trainguard.torch.Hook` into `out`; return what the oracle saw."""
    import trainguard.torch as tg

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    truth = Truth(program=p.name, seed=seed, fault=p.fault, category=p.category, should_stop=p.should_stop,
                  affected_layer=p.affected_layer, inject_step=0, manifest_step=None, steps=p.steps,
                  final_val_acc=0.0, diverged=False)  # fmt: skip
    with tg.Hook(
        out=out, save_interval=p.save_interval, flush_every_steps=1000, flush_interval_seconds=60
    ) as hook:
        ctx = loop.Ctx(seed=seed, steps=p.steps, knobs=dict(p.knobs), bug=p.bug, hook=hook,
                       gen=torch.Generator().manual_seed(1000 + seed))  # fmt: skip
        workloads.WORKLOADS[p.workload](ctx)
    truth.losses = ctx.losses
    truth.score_steps, truth.scores = ctx.score_steps, ctx.scores
    truth.diverged = ctx.nonfinite_step is not None
    truth.final_val_acc = float(np.mean(ctx.scores[-3:])) if ctx.scores else 0.0
    if truth.diverged:
        truth.final_val_acc = 0.0
    return truth


def label(truths: list[Truth], progs: list[RealProgram]) -> None:
    """Set each bug run's `should_stop` (does it hurt against its twin over all seeds?) and `manifest_step`
    (when it became visible)."""
    by_name = {p.name: p for p in progs}
    runs: dict[str, dict[int, Truth]] = defaultdict(dict)
    for t in truths:
        runs[t.program][t.seed] = t
    for name, by_seed in runs.items():
        p = by_name.get(name)
        if p is None or p.fault is None or p.twin not in runs:
            continue
        twins = runs[p.twin]
        fault_scores = [t.final_val_acc for t in by_seed.values()]
        twin_scores = [t.final_val_acc for t in twins.values()]
        diff = float(np.mean(twin_scores) - np.mean(fault_scores))
        spread = float(np.std(twin_scores + fault_scores)) / math.sqrt(len(fault_scores)) + 1e-9
        hurts = (diff > 0.02 and diff > 2 * spread) or any(t.diverged for t in by_seed.values())
        for seed, t in by_seed.items():
            t.should_stop = p.should_stop and hurts
            t.manifest_step = visible_step(t, twins.get(seed), overfitting=p.category == "OF")


def visible_step(t: Truth, twin: Truth | None, *, overfitting: bool) -> int:
    """The step at which an oracle could see the bug (see the module docstring)."""
    nonfinite = next((i for i, x in enumerate(t.losses) if not math.isfinite(x)), None)
    if overfitting and t.scores:
        best = t.score_steps[int(np.argmax(t.scores))]
        return best if nonfinite is None else min(best, nonfinite)
    seen: int | None = None
    if twin is not None and twin.scores:
        twin_at = dict(zip(twin.score_steps, twin.scores))
        below = [twin_at.get(s, math.nan) - x > SEPARATION for s, x in zip(t.score_steps, t.scores)]
        for i in range(len(below)):
            window = below[i : i + SEPARATION_POINTS]
            if window and all(window) and (len(window) == SEPARATION_POINTS or i + len(window) == len(below)):
                seen = t.score_steps[i]
                break
    steps = [s for s in (seen, nonfinite) if s is not None]
    return min(steps) if steps else 0
