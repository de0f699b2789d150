"""What `run.py --suite blind6` trains: the sixth blind split's 30 healthy programs and 20 bugs, and how the
ground truth is set.

The programs come from one-line briefs (a typical training script for a setting the five earlier splits left out; a
mistake people report that none of them used), written without the rules, their documents or any score, and
frozen before the split is scored. Nothing of the mechanics is this split's own: `train` is the first split's
(`blind.suite.train`: the real hook at save_interval 10, an oracle that sees a clean score in [0, 1] every 10 steps
and the loss at every step) given `SCRIPTS`; `label` is the first split's too (a bug hurts when its final score
falls clearly below its fixed twin's, same seed, at every seed, or its loss goes non-finite); the declarations
are the second split's (`declare_healthy`, `declare_bug`); even seeds calibrate, odd seeds report (`split_of`).
A bug carries its twin, its category (AUTOTRAINER's VG, EG, DR, OL, SC, NaN, plus OF) and the step it acts from;
those the smoke runs found harmless against their twins (README.md) are `harmless`: `should_stop=False`, counted
neither as misses nor as false alarms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from benchmarks.detection.blind import suite as blind
from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind2 import suite as second
from benchmarks.detection.blind6 import classifiers, generative, structured

SCRIPTS: dict[str, Callable[[Run], None]] = {
    "denoiser": generative.denoiser, "pixelcnn": generative.pixelcnn,
    "distill": classifiers.distill, "tab_resnet": classifiers.tab_resnet, "lbfgs": classifiers.lbfgs,
    "accumulation": classifiers.accumulation,
    "moe": structured.moe, "link_gnn": structured.link_gnn, "tokens": structured.tokens,
    "segmentation": structured.segmentation,
}  # fmt: skip
"""The script of each workload."""
PREFIX, CATEGORIES, split_of = "blind6_", blind.CATEGORIES, blind.split_of
train = partial(blind.train, scripts=SCRIPTS)
"""`blind.suite.train` with this split's scripts: one program and seed through the hook into `out` (None: inert)."""
label = blind.label
"""The oracle's harm label and visible step of each bug run (`blind.suite.label`)."""


@dataclass(frozen=True)
class Blind6Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind6Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind6Program, prefix=PREFIX)
    den = h("denoiser_cosine_noise_prediction", "denoiser",
            "a diffusion-style denoiser trained on noise prediction under a cosine schedule")  # fmt: skip
    pix = h(
        "pixelcnn_masked_conv", "pixelcnn", "a PixelCNN-style autoregressive model with masked convolutions"
    )
    kd = h("distill_student_t4", "distill", "a knowledge-distillation student with temperature-scaled KL")
    kd_cycle = h("distill_onecycle_momentum", "distill",
                 "a distillation student under SGD with OneCycle cycling the momentum", opt="onecycle")  # fmt: skip
    swa = h("tab_resnet_swa", "tab_resnet", "a tabular ResNet with stochastic weight averaging at the end")
    ema = h("tab_resnet_ema_rmsprop_centered", "tab_resnet",
            "a tabular ResNet evaluated through an EMA of its weights, centred RMSprop", opt="ema")  # fmt: skip
    ada = h("tab_resnet_adagrad", "tab_resnet", "a tabular ResNet trained with Adagrad", opt="adagrad")
    lbf = h("lbfgs_logistic_quadratic", "lbfgs", "L-BFGS on a small logistic regression", steps=200)
    acc = h("accumulation_4_of_10_sgd", "accumulation",
            "gradient accumulation over an epoch whose micro-batches the accumulation does not divide")  # fmt: skip
    moe = h("moe_top2_load_balancing", "moe", "a top-2 mixture-of-experts MLP with a load-balancing loss")
    gnn = h("link_gcn_negative_sampling", "link_gnn", "a GNN for link prediction with negative sampling")
    tok = h("transformer_layerwise_lr_decay", "tokens",
            "a weight-decayed transformer with layer-wise learning-rate decay")  # fmt: skip
    plat = h("transformer_plateau_val_loss", "tokens",
             "a transformer classifier with ReduceLROnPlateau on the validation loss", plateau=True)  # fmt: skip
    seg = h("segmentation_ce_dice", "segmentation", "a segmentation CNN with cross-entropy plus Dice loss")
    healthy = [
        den,
        h("denoiser_linear_schedule", "denoiser", "a noise-prediction denoiser under a linear schedule",
          schedule="linear"),
        h("denoiser_batch64_lr_1e-3", "denoiser", "a noise-prediction denoiser with smaller batches and rate",
          batch=64, lr=1e-3),
        pix,
        h("pixelcnn_rmsprop_centered", "pixelcnn", "a PixelCNN-style model under centred RMSprop", opt="rmsprop"),
        h("pixelcnn_width48_batch32", "pixelcnn", "a wider PixelCNN-style model with small batches",
          width=48, batch=32),
        kd,
        kd_cycle,
        h("distill_rmsprop_t2", "distill", "a distillation student at temperature 2 under RMSprop",
          opt="rmsprop", temp=2.0, alpha=0.5),
        swa,
        ema,
        ada,
        lbf,
        h("lbfgs_tanh_mlp", "lbfgs", "L-BFGS fitting a small tanh MLP", steps=200, model="mlp"),
        acc,
        h("accumulation_3_of_10_nesterov", "accumulation", "gradient accumulation by 3 under Nesterov SGD",
          accum=3, nesterov=True),
        h("accumulation_onecycle_momentum", "accumulation",
          "gradient accumulation under OneCycle cycling the momentum", onecycle=True),
        moe,
        h("moe_top1", "moe", "a top-1 mixture-of-experts MLP with a load-balancing loss", k=1),
        h("moe_adamw_batch64", "moe", "a top-2 mixture of experts under AdamW with small batches",
          opt="adamw", batch=64, lr=1e-3, coef=0.05),
        gnn,
        h("link_gcn_adagrad", "link_gnn", "a GNN for link prediction trained with Adagrad", opt="adagrad"),
        h("link_gcn_hidden64_lr_5e-3", "link_gnn", "a wider GNN for link prediction with a smaller rate",
          hidden=64, lr=5e-3),
        tok,
        plat,
        h("transformer_no_lr_decay_lr_1e-3", "tokens", "a weight-decayed transformer with one learning rate",
          decay=1.0, lr=1e-3),
        h("transformer_decay_0.65_lr_3e-3", "tokens", "a transformer with steeper layer-wise decay",
          decay=0.65, lr=3e-3),
        seg,
        h("segmentation_sgd_poly", "segmentation", "a segmentation CNN under Nesterov SGD with polynomial decay",
          opt="sgd"),
        h("segmentation_adamw_batch16", "segmentation", "a segmentation CNN under AdamW with small batches",
          opt="adamw", batch=16),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("U01", "denoiser_target_is_clean_signal", den, "target_is_clean_signal", "SC",
          "the denoiser trained against the clean signal while its sampler reads the output as noise"),
        b("U02", "alphas_cumprod_taken_twice", den, "alphas_cumprod_taken_twice", "SC",
          "the noise schedule's cumulative product of the alphas taken twice"),
        b("U03", "timestep_unscaled_at_sampling", den, "timestep_unscaled_at_sampling", "SC",
          "the timestep fed as t / T in training but as t at sampling"),
        b("U04", "pixelcnn_first_mask_type_b", pix, "first_mask_type_b", "OF",
          "the first masked convolution built with mask type B: each pixel sees itself"),
        b("U05", "kl_arguments_swapped", kd, "kl_arguments_swapped", "SC",
          "the distillation KL called with the teacher's log-probabilities as input and the student's as target", harmless=True),
        b("U06", "temperature_not_squared", kd, "temperature_not_squared", "VG",
          "the distillation KL at temperature T not scaled by T^2", harmless=True),
        b("U07", "student_logits_not_tempered", kd_cycle, "student_logits_not_tempered", "SC",
          "the teacher's logits divided by T but the student's not", harmless=True),
        b("U08", "swa_bn_never_updated", swa, "swa_bn_never_updated", "SC",
          "the SWA model's BatchNorm statistics never recomputed after averaging", effect_step=209, harmless=True),
        b("U09", "ema_decay_one", ema, "ema_decay_one", "SC",
          "the evaluation EMA built with decay 1.0: it keeps the weights of the first step"),
        b("U10", "adagrad_initial_accumulator_huge", ada, "adagrad_initial_accumulator_huge", "VG",
          "Adagrad given initial_accumulator_value=1e4"),
        b("U11", "lbfgs_closure_never_zeroes_grad", lbf, "closure_never_zeroes_grad", "SC",
          "an L-BFGS closure that never zeroes the gradients", harmless=True),
        b("U12", "accumulation_divided_by_samples", acc, "accumulation_divided_by_samples", "VG",
          "accumulated mean losses divided by the number of samples in the step instead of micro-batches", harmless=True),
        b("U13", "balance_loss_sign_flipped", moe, "balance_loss_sign_flipped", "SC",
          "the mixture of experts' load-balancing term subtracted instead of added", harmless=True),
        b("U14", "negatives_labelled_positive", gnn, "negatives_labelled_positive", "SC",
          "link prediction labels built as ones for the sampled negatives too"),
        b("U15", "validation_edges_in_message_graph", gnn, "validation_edges_in_message_graph", "OF",
          "the held-out edges left in the graph the GNN passes messages over", harmless=True),
        b("U16", "layerwise_decay_inverted", tok, "layerwise_decay_inverted", "SC",
          "layer-wise learning-rate decay inverted: the head gets the smallest rate", harmless=True),
        b("U17", "plateau_max_on_training_loss", plat, "plateau_max_on_training_loss", "SC",
          "ReduceLROnPlateau in mode 'max' stepped with the training loss", effect_step=None, harmless=True),
        b("U18", "positional_embedding_never_added", tok, "positional_embedding_never_added", "SC",
          "the learned positional embedding created but never added to the tokens", harmless=True),
        b("U19", "one_hot_reshaped_not_permuted", seg, "one_hot_reshaped_not_permuted", "SC",
          "the Dice loss's one-hot masks reshaped to (batch, classes, H, W) instead of permuted", harmless=True),
        b("U20", "mask_downsampled_bilinear", seg, "mask_downsampled_bilinear", "SC",
          "the label masks resized with bilinear interpolation and truncated to integers"),
    ]  # fmt: skip
    return healthy + bugs
