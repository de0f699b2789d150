"""The fifth blind split's programs, their labels and ground truth (`run.py --suite blind5`).

Written from one-line briefs ("a typical training script for X" in settings no earlier split covered; "a realistic
mistake people report", none of the earlier splits' mistakes) without reading the rules, their documentation, their
tuning notes or any score, and frozen before it is scored. The mechanics are the earlier splits', imported: the first
split's run context and oracle (`blind.harness`, `blind.suite.train` with this split's script table: a clean
validation score in [0, 1] every 10 steps, the loss at every step, the fixed twin with the same seed), the realistic
suite's harm labels (a bug hurts when its final score is clearly below its twin's over all seeds or its loss went
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
from benchmarks.detection.blind5 import compact, robust, selfsup, sequences

PREFIX = "blind5_"
CATEGORIES = blind.CATEGORIES
split_of = blind.split_of


@dataclass(frozen=True)
class Blind5Program(blind.BlindProgram):
    """A program of the fifth blind split: the first split's declaration, in a class of its own so that the runner
    hands it to this split's scripts."""


SCRIPTS: dict[str, Callable[[Run], None]] = {
    "dino": selfsup.dino, "barlow": selfsup.barlow, "mae": selfsup.mae,
    "coteaching": robust.coteaching, "multitask_uncertainty": robust.multitask,
    "neural_process": robust.neural_process, "wide_deep": robust.ctr,
    "fakequant": compact.fakequant, "pruned_cnn": compact.pruned_cnn, "perceiver": compact.perceiver,
    "segment_lm": sequences.segment_lm, "glu_text": sequences.glu_text, "conformer": sequences.conformer,
}  # fmt: skip
"""Each workload's script."""


def catalogue() -> list[Blind5Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind5Program, prefix=PREFIX)
    dino = h("dino_self_distillation", "dino", "a DINO-style self-distillation model with centring")
    barlow = h("barlow_twins", "barlow", "a Barlow Twins self-supervised model")
    mae = h("masked_autoencoder_patches", "mae", "a masked autoencoder on image patches")
    cot = h(
        "coteaching_label_noise", "coteaching", "a label-noise-robust classifier (co-teaching, two networks)"
    )
    mtl = h("multitask_uncertainty_weights", "multitask_uncertainty",
            "a multi-task model with uncertainty weighting")  # fmt: skip
    np_ = h("neural_process_1d", "neural_process", "a conditional neural process on 1-D functions")
    wd = h("wide_deep_hashed_ctr", "wide_deep", "a wide-and-deep CTR model with hashed features")
    fq = h(
        "fakequant_mlp_lion", "fakequant", "a quantisation-aware (fake-quant) MLP with a hand-written Lion"
    )
    prune = h(
        "pruned_resnet_cnn_poly",
        "pruned_cnn",
        "a pruning-with-masks small residual CNN, SGD polynomial decay",
    )
    perc = h("perceiver_fp16_loss_scale", "perceiver",
             "a Perceiver-style latent cross-attention classifier under fp16 autocast with loss scaling")  # fmt: skip
    seg = h("segment_recurrence_lm", "segment_lm", "a Transformer-XL-style segment-recurrence language model")
    glu = h(
        "glu_cnn_text_cyclic", "glu_text", "a gated linear unit CNN for text under a cyclic learning rate"
    )
    conf = h("conformer_adafactor_restarts", "conformer",
             "a Conformer-style speech encoder with a hand-written Adafactor and warm restarts")  # fmt: skip
    healthy = [
        dino,
        h("dino_momentum_0996_batch128", "dino", "a DINO-style model with a slower teacher and larger batches",
          momentum=0.996, batch=128),
        barlow,
        h("barlow_twins_batch256_lr_1e-3", "barlow", "Barlow Twins with larger batches and a smaller rate",
          batch=256, lr=1e-3),
        mae,
        h("masked_autoencoder_ratio_half", "mae", "a masked autoencoder hiding half of the patches", ratio=0.5),
        cot,
        h("coteaching_noise_02", "coteaching", "co-teaching on labels with 20% noise", noise=0.2),
        h("coteaching_batch64_lr_2e-3", "coteaching", "co-teaching with smaller batches and a larger rate",
          batch=64, lr=2e-3),
        mtl,
        h("multitask_uncertainty_clipped", "multitask_uncertainty",
          "a multi-task model with uncertainty weighting and global-norm clipping", clip=1.0),
        np_,
        h("neural_process_lr_3e-4", "neural_process", "a conditional neural process with a smaller rate", lr=3e-4),
        wd,
        h("wide_deep_adam_4096_buckets", "wide_deep", "a wide-and-deep CTR model with Adam and more buckets",
          opt="adam", buckets=4096),
        h("wide_deep_batch1024", "wide_deep", "a wide-and-deep CTR model with large batches", batch=1024, lr=0.1),
        fq,
        h("fakequant_mlp_adamw", "fakequant", "a quantisation-aware MLP trained with AdamW", opt="adamw"),
        h("fakequant_mlp_lion_batch32", "fakequant", "a quantisation-aware MLP with Lion and small batches",
          batch=32, lr=1e-4),
        prune,
        h("pruned_cnn_lr_0.02", "pruned_cnn", "a pruned residual CNN with a smaller rate", lr=0.02),
        perc,
        h("perceiver_fp16_clip_global_norm", "perceiver",
          "a Perceiver-style classifier under fp16 autocast with clipping by global norm", clip=1.0),
        seg,
        h("segment_recurrence_lm_rows64", "segment_lm", "a segment-recurrence LM reading 64 streams at once",
          rows=64, lr=5e-3),
        glu,
        h("glu_cnn_text_max_lr_0.03", "glu_text", "a GLU CNN for text with a lower cyclic peak", max_lr=0.03),
        conf,
        h("conformer_adam", "conformer", "a Conformer-style speech encoder trained with Adam", opt="adam"),
        h("conformer_adafactor_lr_3e-2", "conformer", "a Conformer-style encoder with Adafactor at a larger rate",
          lr=3e-2),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("V01", "dino_centre_never_updated", dino, "centre_never_updated", "SC",
          "DINO's centre initialised to zero and never updated"),
        b("V02", "dino_teacher_temperature_above_student", dino, "teacher_temperature_above_student", "SC",
          "the teacher's temperature (0.2) set above the student's (0.1)"),
        b("V03", "dino_teacher_dropout_left_on", dino, "teacher_dropout_left_on", "SC",
          "the EMA teacher left in train mode: its dropout is on"),
        b("V04", "barlow_standardised_over_features", barlow, "standardised_over_features", "SC",
          "Barlow Twins' projections standardised over the feature axis instead of the batch", harmless=True),
        b("V05", "mae_loss_on_visible_patches", mae, "loss_on_visible_patches", "OF",
          "the masked autoencoder's loss taken over the visible patches instead of the masked ones"),
        b("V06", "coteaching_large_loss_samples_exchanged", cot, "large_loss_samples_exchanged", "SC",
          "co-teaching sorting the losses in descending order: the networks exchange the large-loss samples"),
        b("V07", "uncertainty_weight_exp_plus", mtl, "uncertainty_weight_exp_plus", "OL",
          "the uncertainty weight written exp(s) L + s where exp(-s) L + s is meant", harmless=True),
        b("V08", "np_variance_without_softplus", np_, "variance_without_softplus", "NaN",
          "the neural process's variance head used raw, without a softplus"),
        b("V09", "hash_modulo_one", wd, "hash_modulo_one", "SC",
          "the hashed feature ids taken modulo 1: every id collides into one bucket"),
        b("V10", "standardised_per_batch_at_inference", wd, "standardised_per_batch_at_inference", "SC",
          "numeric features standardised with each serving batch's statistics at inference", harmless=True),
        b("V11", "quant_scale_frozen_at_step_0", fq, "quant_scale_frozen_at_step_0", "SC",
          "the fake-quant scales computed on the first batch and never updated"),
        b("V12", "lion_update_magnitude", fq, "lion_update_magnitude", "VG",
          "a hand-written Lion stepping by the interpolated gradient instead of its sign"),
        b("V13", "mask_on_gradients_only", prune, "mask_on_gradients_only", "SC",
          "pruning masks applied to the gradients but never to the weights", effect_step=100, harmless=True),
        b("V14", "gradients_never_unscaled", perc, "gradients_never_unscaled", "EG",
          "a hand-written loss scale whose gradients are never divided back before the step"),
        b("V15", "memory_never_carried", seg, "memory_never_carried", "SC",
          "the segment-recurrence memory computed but never carried to the next segment"),
        b("V16", "cyclic_base_and_max_swapped", glu, "cyclic_base_and_max_swapped", "SC",
          "CyclicLR given base_lr and max_lr swapped", harmless=True),
        b("V17", "loss_clamped_instead_of_gradients", glu, "loss_clamped_instead_of_gradients", "SC",
          "'clipping' written as loss.clamp(max=1.0) in place of clipping the gradients"),
        b("V18", "restart_period_in_epochs", conf, "restart_period_in_epochs", "SC",
          "warm restarts' T_0 given in epochs (1) while the scheduler is stepped per batch", harmless=True),
        b("V19", "fakequant_without_straight_through", fq, "no_straight_through", "VG",
          "fake quantisation written as round(x / s) * s without a straight-through estimator"),
        b("V20", "barlow_same_view_for_both_branches", barlow, "same_view_for_both_branches", "SC",
          "both Barlow Twins branches fed the same augmented batch (one augmentation call reused)"),
    ]  # fmt: skip
    return healthy + bugs


train = partial(blind.train, scripts=SCRIPTS)
"""Run a program with a seed through `trainguard.torch.Hook` into `out` (None: an inert hook); what the oracle saw."""
label = blind.label
"""Set each bug run's `should_stop` and `manifest_step` with the realistic suite's oracle."""
