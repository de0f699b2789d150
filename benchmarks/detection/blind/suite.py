"""The blind split's programs, their labels and ground truth (`run.py --suite blind`).

Written from one-line briefs ("a typical training script for X"; "a realistic mistake applied to one of
them") without reading the rules, their documentation or their scores, and frozen before any rule
change: the split is scored once, at the end of the rule work. Each bug names its fixed twin (the same
program without the mistake), its fault category in AUTOTRAINER's layout plus OF (VG, EG, DR, OL, SC,
NaN, OF), and the step at which it takes effect (`effect_step`; None where the script measures it: the
first overflow, the first non-finite loss, the early stop). The oracle and the harm labels are the
realistic suite's (`torch_real.suite.label`): a bug hurts when its final validation score is clearly
below its twin's over all seeds or its loss went non-finite; it is visible where its score fell below
the twin's. Two mistakes turned out harmless in these scripts (the smoke runs in README.md): they are
declared `should_stop=False`, count neither for recall nor as false alarms, and show whether a rule would
stop a job for nothing. Seeds are split as in the realistic suite: even seeds calibrate, odd seeds report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import torch

from benchmarks.detection.blind import generative, recipes, representation, rl, sequence, tabular, vision
from benchmarks.detection.blind.harness import Run
from benchmarks.detection.programs import Truth
from benchmarks.detection.torch_real import suite as torch_real

PREFIX = "blind_"
CATEGORIES = ("VG", "EG", "DR", "OL", "SC", "NaN", "OF")
SPLITS = {0: "calibration", 1: "report"}
"""A run's split by the parity of its seed, as `run.py` splits every suite."""

SCRIPTS: dict[str, Callable[[Run], None]] = {
    "vae": generative.vae, "gan": generative.gan,
    "contrastive": representation.contrastive, "finetune": representation.finetune,
    "distillation": representation.distillation,
    "keyword": sequence.keyword_spotting, "lm": sequence.language_model, "irnn_lm": sequence.irnn_lm,
    "tabular": tabular.tabular_bn, "gaussian_nll": tabular.gaussian_nll, "robust": tabular.robust_regression,
    "recommender": tabular.recommender, "graph": tabular.graph,
    "classifier": recipes.classifier, "focal": recipes.focal_detector,
    "cnn": vision.cnn_classifier, "segmentation": vision.segmentation,
    "reinforce": rl.reinforce, "ppo": rl.ppo,
}  # fmt: skip
"""The scripts by workload name."""


@dataclass(frozen=True)
class BlindProgram(torch_real.RealProgram):
    """A blind program: the realistic suite's declaration (no intended rules: they were not known) plus the
    brief it was written from and, for a bug, the step at which the bug takes effect."""

    brief: str = ""
    effect_step: int | None = 0


def split_of(seed: int) -> str:
    """The split a run with `seed` belongs to."""
    return SPLITS[seed % 2]


def _healthy(name: str, workload: str, brief: str, *, steps: int = 300, **knobs: object) -> BlindProgram:
    return BlindProgram(name=PREFIX + name, workload=workload, knobs=tuple(sorted(knobs.items())), steps=steps,
                        brief=brief, effect_step=None)  # fmt: skip


def _bug(fault: str, name: str, twin: BlindProgram, bug: str, category: str, brief: str, *,
         effect_step: int | None, affected: str | None = None, harmless: bool = False) -> BlindProgram:  # fmt: skip
    return replace(twin, name=f"{PREFIX}{fault}_{name}", fault=fault, bug=bug, category=category, twin=twin.name,
                   affected_layer=affected, source=brief, brief=brief, effect_step=effect_step,
                   should_stop=not harmless, hard_negative=harmless)  # fmt: skip


def catalogue() -> list[BlindProgram]:
    """Every blind program: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = _healthy
    vae = h("vae_kl_annealing", "vae", "a VAE with KL annealing")
    gan = h("gan_moons_two_optimizers", "gan", "a small GAN with two optimizers")
    reinforce = h("reinforce_corridor", "reinforce", "a REINFORCE policy on a toy environment")
    unfreeze = h("finetune_gradual_unfreeze", "finetune", "fine-tuning a pretrained encoder, unfrozen after 100 steps",
                 unfreeze_at=100, lr=2e-3)  # fmt: skip
    keyword = h("keyword_conv_gru", "keyword", "a speech-like 1-D conv + GRU keyword classifier")
    gpt = h("tiny_gpt_tied_embeddings", "lm", "a transformer language model with tied embeddings")
    gnll = h(
        "gaussian_nll_heteroscedastic", "gaussian_nll", "a regression with Gaussian NLL (negative losses)"
    )
    fp16 = h("mlp_fp16_loss_scaler", "classifier", "mixed precision with a hand-written dynamic loss scale",
             amp="fp16", opt="adam", lr=1e-3)  # fmt: skip
    sgd = h("mlp_sgd_momentum", "classifier", "a plain classifier with SGD and momentum", opt="sgd", lr=0.05)
    dropout = h("mlp_heavy_dropout_batch8", "classifier", "heavy dropout with small batches on a small set",
                dropout=0.5, width=256, batch=8, opt="sgd", lr=0.01, n_train=300, spread=2.0)  # fmt: skip
    early = h("mlp_early_stopping", "classifier", "early stopping on the validation loss", patience=3,
              width=256, n_train=1000, opt="sgd", lr=0.005, steps=400)  # fmt: skip
    onecycle = h("cnn_onecycle_nesterov", "cnn", "a CNN with a one-cycle schedule", sched="onecycle", lr=0.1)
    smoothing = h("cnn_label_smoothing_adam", "cnn", "a CNN with label smoothing", smoothing=0.1, lr=2e-3)
    robust = h("robust_regression_huber", "robust", "a regression with a heavy-tailed robust loss")
    tab = h("tabular_batchnorm_steplr", "tabular", "a tabular MLP with BatchNorm and categorical embeddings")
    gcn = h("gcn_community_graph", "graph", "a graph message-passing net (GCN)")
    unet = h("unet_shapes", "segmentation", "a U-Net-ish segmentation toy", steps=250)
    focal = h("focal_loss_imbalanced", "focal", "an imbalanced detector with a focal loss")
    irnn = h(
        "irnn_lm_clipped", "irnn_lm", "an RNN language model (identity-initialised ReLU RNN) with clipping"
    )
    early_flipped_twin = early
    healthy = [
        vae, gan,
        h("contrastive_infonce", "contrastive", "contrastive learning (InfoNCE)"),
        reinforce,
        h("ppo_corridor", "ppo", "a PPO-style policy on a toy environment"),
        h("linear_probe_frozen_encoder", "finetune", "a linear probe on a frozen pretrained encoder", lr=0.1),
        unfreeze,
        h("recommender_mf_dense_adam", "recommender", "a recommender with dense embeddings"),
        h("recommender_mf_sparse_adam", "recommender", "a recommender with sparse embeddings", sparse=True),
        keyword, gpt, gnll,
        h("mlp_bf16_autocast", "classifier", "mixed precision with bf16 autocast", amp="bf16", opt="adam", lr=2e-3),
        fp16, sgd,
        h("mlp_grad_accumulation", "classifier", "gradient accumulation over 4 micro-batches", accum=4, batch=16,
          opt="sgd", lr=0.05),
        onecycle,
        h("mlp_warm_restarts_adamw", "classifier", "cosine warm restarts", sched="warm_restarts", opt="adamw",
          lr=3e-3, wd=0.01),
        smoothing, dropout, early,
        h("mlp_curriculum", "classifier", "curriculum learning, easiest rows first", curriculum=True, opt="sgd",
          lr=0.05),
        h("mlp_wd_sweep_0", "classifier", "a weight decay sweep (no decay)", opt="adamw", lr=2e-3, wd=0.0),
        h("mlp_wd_sweep_1e-2", "classifier", "a weight decay sweep (0.01)", opt="adamw", lr=2e-3, wd=0.01),
        h("mlp_wd_sweep_1e-1", "classifier", "a weight decay sweep (0.1)", opt="adamw", lr=2e-3, wd=0.1),
        h("mlp_magnitude_pruning", "classifier", "pruning masks at 50% then 75% sparsity", prune=True, opt="sgd",
          lr=0.05),
        h("mlp_rmsprop_deep", "classifier", "a deeper MLP with RMSprop", depth=4, opt="rmsprop", lr=1e-3),
        robust, tab, gcn, unet,
        h("distillation_wide_to_narrow", "distillation", "knowledge distillation"),
        focal, irnn,
    ]  # fmt: skip
    b = _bug
    bugs = [
        b("X01", "loss_scaler_never_recovers", fp16, "scaler_never_recovers", "SC",
          "a loss scaler whose overflow flag is never cleared: every step after the first overflow is skipped",
          effect_step=None),
        b("X02", "eval_mode_left_on", tab, "eval_mode_left_on", "SC",
          "model.eval() for validation and no model.train() after it: BatchNorm frozen from the first validation",
          effect_step=25, harmless=True),
        b("X03", "zero_grad_once_per_epoch", sgd, "zero_grad_per_epoch", "OL",
          "optimizer.zero_grad() in the epoch loop instead of the batch loop", effect_step=1),
        b("X04", "epoch_scheduler_stepped_per_batch", tab, "epoch_scheduler_per_batch", "SC",
          "StepLR(step_size=2 epochs) stepped every batch", effect_step=2),
        b("X05", "label_sorted_without_shuffle", smoothing, "label_sorted_without_shuffle", "OL",
          "a data set stored class by class, batched in order without shuffling", effect_step=0),
        b("X06", "adam_eps_one", gcn, "adam_eps_one", "SC", "Adam(eps=1.0), a TensorFlow habit taken too far",
          effect_step=0),
        b("X07", "pixels_divided_by_255_twice", unet, "pixels_divided_by_255_twice", "SC",
          "ToTensor() already scaled to [0, 1] and the script divides by 255 again", effect_step=0),
        b("X08", "uint8_brightness_overflow", onecycle, "uint8_brightness_overflow", "SC",
          "brightness jitter added to uint8 pixels: bright pixels wrap around to dark", effect_step=0,
          harmless=True),
        b("X09", "focal_loss_batch_class_weight", focal, "focal_batch_class_weight", "NaN",
          "a focal loss weighting positives by log(1 + n_neg / n_pos) of each batch: a batch without positives "
          "divides by zero", effect_step=None),
        b("X10", "prediction_target_broadcast", robust, "prediction_target_broadcast", "SC",
          "a [B, 1] prediction against a [B] target: the loss broadcasts to [B, B]", effect_step=0),
        b("X11", "gru_without_batch_first", keyword, "gru_not_batch_first", "SC",
          "nn.GRU without batch_first=True fed [batch, time, feature]", effect_step=0, affected="gru"),
        b("X12", "keyword_lr_x100", keyword, "lr_x100", "OL", "Adam's learning rate typed 100 times too high",
          effect_step=0),
        b("X13", "unfrozen_layers_not_in_optimizer", unfreeze, "unfrozen_layers_not_in_optimizer", "SC",
          "the optimizer built over the trainable parameters before the encoder was unfrozen", effect_step=100,
          affected="encoder"),
        b("X14", "generator_loss_detached", gan, "generator_loss_detached", "SC",
          "the generator's loss computed on the detached fake batch of the discriminator step", effect_step=0,
          affected="G"),
        b("X15", "kl_term_sign_flipped", vae, "kl_sign_flipped", "EG",
          "the VAE's KL term written without its minus sign", effect_step=0),
        b("X16", "policy_gradient_sign_flipped", reinforce, "policy_gradient_sign_flipped", "SC",
          "REINFORCE's loss with the wrong sign (the return is minimised)", effect_step=0),
        b("X17", "rnn_clipping_removed", irnn, "rnn_clipping_removed", "EG",
          "an IRNN trained without the gradient clipping it needs", effect_step=0),
        b("X18", "variance_head_not_positive", gnll, "variance_head_not_positive", "NaN",
          "the variance head's raw output used as a variance (no exp or softplus)", effect_step=0),
        b("X19", "early_stopping_comparison_flipped", early_flipped_twin, "early_stop_flipped", "SC",
          "early stopping that counts an improvement as a bad epoch (comparison flipped)", effect_step=None),
    ]  # fmt: skip
    return healthy + bugs


def train(
    p: BlindProgram, seed: int, *, out: str | None, scripts: Mapping[str, Callable[[Run], None]] = SCRIPTS
) -> Truth:
    """Run `p` with `seed` through `trainguard.torch.Hook` into `out` (None: an inert hook, nothing recorded);
    return what the oracle saw. `scripts` maps workload names to scripts (the second blind split passes its own)."""
    import trainguard.torch as tg

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    truth = Truth(program=p.name, seed=seed, fault=p.fault, category=p.category, should_stop=p.should_stop,
                  affected_layer=p.affected_layer, inject_step=0, manifest_step=None, steps=p.steps,
                  final_val_acc=0.0, diverged=False)  # fmt: skip
    settings = {"save_interval": p.save_interval, "flush_every_steps": 1000, "flush_interval_seconds": 60}
    hook = tg.Hook(out=out, **settings) if out else tg.Hook(config=None, environ={})
    with hook:
        run = Run(seed=seed, steps=p.steps, knobs=dict(p.knobs), bug=p.bug, hook=hook,
                  gen=torch.Generator().manual_seed(2000 + seed))  # fmt: skip
        scripts[p.workload](run)
    truth.losses = run.losses
    truth.score_steps, truth.scores = run.score_steps, run.scores
    truth.diverged = run.nonfinite_step is not None
    truth.final_val_acc = 0.0 if truth.diverged else float(np.mean(run.scores[-3:])) if run.scores else 0.0
    if p.fault is not None:
        truth.inject_step = run.effect_step if run.effect_step is not None else (p.effect_step or 0)
    return truth


def label(truths: list[Truth], progs: list[BlindProgram]) -> None:
    """Set each bug run's `should_stop` and `manifest_step` with the realistic suite's oracle."""
    torch_real.label(truths, list(progs))
