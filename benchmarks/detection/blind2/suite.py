"""The second blind split's programs, their labels and ground truth (`run.py --suite blind2`).

Written from one-line briefs ("a typical training script for X" in domains the first blind split did not
cover; "a realistic mistake people report") without reading the rules, their documentation, their tuning
notes or any score, and frozen before it is scored: the split is scored once, at the end of the rule work.
The mechanics are the first blind split's (`blind.suite`): the run context and the oracle (a clean
validation score in [0, 1] every 10 steps, the loss at every step, the fixed twin with the same seed), the
harm labels of the realistic suite (`torch_real.suite.label`: a bug hurts when its final score is clearly
below its twin's over all seeds or its loss went non-finite), seeds split by parity (even: calibration, odd:
report). Each bug names its twin, its fault category in AUTOTRAINER's layout plus OF (VG, EG, DR, OL, SC,
NaN, OF) and the step at which it takes effect (`effect_step`; None where the script measures it). Six
mistakes turned out harmless against their twins in these scripts (the smoke runs in README.md: softmax
before the cross-entropy, the huge decay on the no-decay group, model.train() not restored, the inverted
padding mask, the LoRA base left trainable, the overlapping validation set): they are declared
`should_stop=False`, count neither for recall nor as false alarms, and show whether a rule would stop a job
for nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

import torch

from benchmarks.detection.blind import suite as blind
from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind2 import generative, representation, rl, sequence, structured, vision
from benchmarks.detection.programs import Truth

PREFIX = "blind2_"
CATEGORIES = blind.CATEGORIES
split_of = blind.split_of

SCRIPTS: dict[str, Callable[[Run], None]] = {
    "diffusion": generative.diffusion, "flow": generative.flow, "autoencoder": generative.autoencoder,
    "translator": sequence.translator, "lstm_forecaster": sequence.lstm_forecaster,
    "tcn_forecaster": sequence.tcn_forecaster, "ctc": sequence.ctc, "finetune_mlm": sequence.finetune_mlm,
    "text_early_stopping": sequence.text_early_stopping,
    "vit": vision.vit, "boxes": vision.boxes, "cutmix": vision.cutmix, "audio": vision.audio, "ema": vision.ema,
    "swa": vision.swa,
    "two_tower": representation.two_tower, "siamese": representation.siamese,
    "distillation": representation.distillation, "lora": representation.lora,
    "multitask": representation.multitask,
    "dlrm": structured.dlrm, "gat": structured.gat, "poisson": structured.poisson,
    "dqn": rl.dqn, "actor_critic": rl.actor_critic,
}  # fmt: skip
"""The scripts by workload name."""


@dataclass(frozen=True)
class Blind2Program(blind.BlindProgram):
    """A program of the second blind split (the first split's declaration; its own class so that the runner
    dispatches it to this split's scripts)."""


P = TypeVar("P", bound=blind.BlindProgram)


def declare_healthy(name: str, workload: str, brief: str, *, steps: int = 300, kind: type[P] = Blind2Program,  # type: ignore[assignment]
                    prefix: str = PREFIX, **knobs: object) -> P:  # fmt: skip
    """A healthy program of the split whose programs are `kind`, named `prefix` + `name` (the third split declares
    its own through here)."""
    return kind(name=prefix + name, workload=workload, knobs=tuple(sorted(knobs.items())), steps=steps, brief=brief,
                effect_step=None)  # fmt: skip


def declare_bug(fault: str, name: str, twin: P, bug: str, category: str, brief: str, *, effect_step: int | None = 0,
                affected: str | None = None, harmless: bool = False, prefix: str = PREFIX) -> P:  # fmt: skip
    """`twin` with the mistake `bug` (fault id, category, brief, the step it takes effect; `harmless` when the oracle
    found it did no harm), named `prefix` + fault + `name`."""
    return replace(twin, name=f"{prefix}{fault}_{name}", fault=fault, bug=bug, category=category, twin=twin.name,
                   affected_layer=affected, source=brief, brief=brief, effect_step=effect_step,
                   should_stop=not harmless, hard_negative=harmless)  # fmt: skip


def catalogue() -> list[Blind2Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = declare_healthy
    flow = h("realnvp_moons", "flow", "a normalising flow (RealNVP couplings) on 2-D data")
    autoencoder = h(
        "autoencoder_anomaly_detector", "autoencoder", "an autoencoder anomaly detector on sensor data"
    )
    translator = h(
        "gru_seq2seq_teacher_forcing", "translator", "a seq2seq GRU translator with teacher forcing"
    )
    lstm = h("lstm_forecaster_mae", "lstm_forecaster", "an LSTM time-series forecaster with MAE loss")
    tcn = h(
        "tcn_forecaster_revin", "tcn_forecaster", "a temporal conv forecaster with instance normalisation"
    )
    ctc = h("ctc_recogniser", "ctc", "a CTC speech-recognition toy")
    mlm = h(
        "mlm_finetune_llrd",
        "finetune_mlm",
        "a BERT-like masked-LM encoder fine-tuned with layer-wise LR decay",
    )
    early = h(
        "text_bag_early_stopping",
        "text_early_stopping",
        "a small text classifier with early stopping",
        steps=400,
    )
    vit = h("vit_adamw_warmup_cosine", "vit", "a small ViT with patch embeddings and AdamW + cosine warmup")
    boxes = h(
        "box_regressor_smooth_l1", "boxes", "an object-detection-like box regressor with smooth L1 + classes"
    )
    audio = h("audio_specaugment_mixup", "audio", "an audio classifier with SpecAugment and mixup")
    two_tower = h(
        "two_tower_in_batch_negatives", "two_tower", "a two-tower retrieval model with in-batch negatives"
    )
    siamese = h(
        "siamese_triplet_lion", "siamese", "a Siamese network with a triplet margin loss (Lion optimizer)"
    )
    lora = h("lora_adapters_frozen_base", "lora", "LoRA-style adapters on a frozen pretrained network")
    multitask = h(
        "multitask_two_heads", "multitask", "multi-task learning with two heads and weighted losses"
    )
    dlrm = h("dlrm_embeddingbag_adagrad", "dlrm", "a DLRM-style recommender with EmbeddingBag, per-group LRs")
    gat = h("gat_citation_graph", "gat", "a graph attention network", steps=200)
    poisson = h("poisson_checkpointed_resmlp", "poisson", "a count model with gradient checkpointing")
    dqn = h("dqn_target_network_replay", "dqn", "a DQN with a target network and a replay buffer")
    a2c = h("actor_critic_a2c", "actor_critic", "an advantage actor-critic")
    healthy = [
        h("ddpm_ring_of_gaussians", "diffusion", "a denoising diffusion model on 2-D points"),
        flow, autoencoder, translator, lstm, tcn, ctc, mlm, early, vit,
        h("vit_label_smoothing_batch16", "vit", "a small ViT with label smoothing and small batches", batch=16,
          smoothing=0.1, lr=1e-3),
        boxes,
        h("cnn_cutmix_nadam", "cutmix", "a CNN with CutMix augmentation"),
        audio,
        h("cnn_ema_weights", "ema", "a CNN whose EMA weights are the ones kept"),
        h("cnn_swa", "swa", "stochastic weight averaging after a cosine phase"),
        two_tower, siamese,
        h("distillation_label_smoothing", "distillation", "label-smoothed knowledge distillation"),
        lora, multitask,
        h("multitask_uncertainty_weights", "multitask", "multi-task learning with learned uncertainty weights",
          uncertainty=True),
        dlrm, gat,
        h("gat_dropout_0.6", "gat", "a graph attention network with the paper's heavy dropout", steps=200,
          dropout=0.6),
        poisson, dqn,
        h("double_dqn", "dqn", "a double DQN", double=True),
        a2c,
        h("realnvp_moons_lr_5e-4", "flow", "a normalising flow trained with a small learning rate", lr=5e-4),
    ]  # fmt: skip
    b = declare_bug
    bugs = [
        b("Y01", "softmax_before_cross_entropy", vit, "softmax_before_cross_entropy", "SC",
          "softmax applied to the logits before nn.CrossEntropyLoss",
          harmless=True),
        b("Y02", "sigmoid_then_bce_with_logits", dlrm, "sigmoid_then_bce_with_logits", "SC",
          "a model whose forward() ends in a sigmoid trained with BCEWithLogitsLoss"),
        b("Y03", "ctc_labels_not_shifted_past_blank", ctc, "ctc_labels_not_shifted", "SC",
          "CTC transcripts not shifted past the blank: token 0 written as the blank"),
        b("Y04", "train_mode_not_restored", boxes, "train_mode_not_restored", "SC",
          "model.eval() for validation and no model.train() after it (BatchNorm and dropout frozen)", effect_step=25,
          harmless=True),
        b("Y05", "no_decay_group_huge_weight_decay", vit, "no_decay_group_huge_wd", "SC",
          "LayerNorm weights and biases given a huge weight decay (5.0) in their parameter group",
          harmless=True),
        b("Y06", "dqn_target_network_never_updated", dqn, "target_never_updated", "SC",
          "the DQN's target network never refreshed from the online network", effect_step=19),
        b("Y07", "decoder_input_is_the_target", translator, "decoder_input_is_target", "OF",
          "teacher forcing without the shift: the decoder reads the token it must predict"),
        b("Y08", "padding_mask_inverted", mlm, "padding_mask_inverted", "SC",
          "src_key_padding_mask inverted: attention ignores the tokens and reads the padding", affected="layers",
          harmless=True),
        b("Y09", "warmup_scheduler_never_stepped", two_tower, "scheduler_never_stepped", "SC",
          "a warmup LambdaLR created and never stepped: the rate stays at its first warmup value", effect_step=1),
        b("Y10", "grad_clip_1e-6", lstm, "clip_norm_typo", "VG",
          "clip_grad_norm_ with max_norm 1e-6 (typed for 1e0)"),
        b("Y11", "triplet_distance_over_batch_dim", siamese, "distance_over_batch_dim", "SC",
          "a hand-written triplet distance summed over dim 0 (the batch) instead of dim 1"),
        b("Y12", "normalised_with_stats_1000x_off", autoencoder, "stats_unit_mismatch", "SC",
          "inputs standardised with a stored mean in millivolts subtracted from volts (off by 1000x)"),
        b("Y13", "lora_base_left_trainable", lora, "lora_base_left_trainable", "OL",
          "the pretrained base never frozen: it trains with the adapters' high learning rate",
          harmless=True),
        b("Y14", "zero_grad_after_backward", gat, "zero_grad_after_backward", "VG",
          "optimizer.zero_grad() between loss.backward() and optimizer.step()"),
        b("Y15", "trunk_output_detached", multitask, "trunk_detached", "SC",
          "a .detach() left in the middle of the network: the shared trunk never learns", affected="trunk"),
        b("Y16", "actor_critic_reward_sign_flipped", a2c, "reward_sign_flipped", "SC",
          "the actor-critic's rewards negated (read as costs)"),
        b("Y17", "flow_logdet_sign_flipped", flow, "flow_logdet_sign_flipped", "EG",
          "a normalising flow's log-determinant subtracted instead of added"),
        b("Y18", "lr_decay_factor_above_one", poisson, "decay_factor_above_one", "EG",
          "ExponentialLR with gamma 1.05 (typed for 0.995): the rate grows every step", effect_step=1),
        b("Y19", "validation_overlaps_training_set", early, "validation_overlaps_train", "OF",
          "a validation set drawn from the training rows, driving early stopping",
          harmless=True),
        b("Y20", "variance_negative_under_sqrt", tcn, "naive_variance", "NaN",
          "instance normalisation with var = E[x^2] - E[x]^2 under a square root: negative on flat windows",
          effect_step=None),
        b("Y21", "lr_integer_division", audio, "lr_integer_division", "SC",
          "the linear scaling rule written with // : a learning rate of 0"),
        b("Y22", "labels_off_by_one", multitask, "labels_off_by_one", "SC",
          "targets joined one row off: each row trained on its neighbour's churn label", affected="churn"),
        b("Y23", "poisson_nll_log_input_false", poisson, "poisson_log_input_false", "NaN",
          "PoissonNLLLoss(log_input=False) fed the network's log-rate: the log of a negative rate"),
    ]  # fmt: skip
    return healthy + bugs


def train(p: Blind2Program, seed: int, *, out: str | None) -> Truth:
    """Run `p` with `seed` through `trainguard.torch.Hook` into `out` (None: an inert hook); what the oracle saw."""
    torch.set_num_threads(1)
    return blind.train(p, seed, out=out, scripts=SCRIPTS)


def label(truths: list[Truth], progs: list[Blind2Program]) -> None:
    """Set each bug run's `should_stop` and `manifest_step` with the realistic suite's oracle."""
    blind.label(truths, list(progs))
