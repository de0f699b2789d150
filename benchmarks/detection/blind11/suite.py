"""The eleventh blind split as `run.py --suite blind11` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind11 import generative, series, speech

PREFIX = "blind11_"
SCRIPTS = {"ge2e": speech.ge2e, "separation": speech.separation, "wgan_gp": generative.wgan_gp,
           "gumbel_vae": generative.gumbel_vae, "grud": series.grud, "tabnet": series.tabnet}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind11Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind11Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind11Program, prefix=PREFIX)
    spk = h("ge2e_speaker_adam", "ge2e", "speaker verification with a GE2E loss")
    sep = h("separation_mask_adam", "separation", "a source-separation mask network on spectrograms")
    gp = h("wgan_gp_ring_adam", "wgan_gp", "WGAN-GP on a 2-D mixture of eight Gaussians")
    gvae = h("gumbel_vae_bars_adam", "gumbel_vae", "a Gumbel-softmax VAE with discrete latents")
    grud = h("grud_irregular_adam", "grud", "a GRU-D classifier of irregular series with missing values")
    tab = h("tabnet_sparsemax_adam", "tabnet", "a TabNet-like classifier with sparsemax feature attention")
    healthy = [
        spk,
        h("ge2e_speaker_adamw_width96", "ge2e", "a wider GE2E speaker encoder under AdamW", opt="adamw", width=96),
        h("ge2e_speaker_nadam_12x4", "ge2e", "GE2E with 12 speakers of 4 utterances under NAdam", opt="nadam",
          speakers=12, per=4),
        h("ge2e_speaker_sgd", "ge2e", "GE2E under plain SGD", opt="sgd", lr=0.05),
        sep,
        h("separation_mask_radam_width16", "separation", "a wider separation network under RAdam", opt="radam",
          width=16),
        h("separation_mask_adamax_batch32", "separation", "separation under Adamax with larger batches",
          opt="adamax", batch=32, lr=4e-3),
        h("separation_mask_nesterov", "separation", "separation under Nesterov SGD", opt="nesterov", lr=0.02),
        gp,
        h("wgan_gp_rmsprop_three_critic_steps", "wgan_gp", "WGAN-GP under RMSprop with three critic steps",
          opt="rmsprop", lr=5e-4, n_critic=3),
        h("wgan_gp_adamw_width96", "wgan_gp", "a wider WGAN-GP under AdamW", opt="adamw", width=96),
        h("wgan_gp_radam_batch64", "wgan_gp", "WGAN-GP under RAdam with smaller batches", opt="radam", batch=64,
          lr=2e-3),
        gvae,
        h("gumbel_vae_adamw_width192", "gumbel_vae", "a wider Gumbel-softmax VAE under AdamW", opt="adamw",
          width=192),
        h("gumbel_vae_nadam_fast_anneal", "gumbel_vae", "a Gumbel-softmax VAE under NAdam, annealed faster",
          opt="nadam", anneal=4e-2),
        h("gumbel_vae_adadelta_batch128", "gumbel_vae", "a Gumbel-softmax VAE under Adadelta with larger batches",
          opt="adadelta", lr=1.0, batch=128),
        grud,
        h("grud_irregular_adamw_hidden24", "grud", "a wider GRU-D under AdamW", opt="adamw", hidden=24),
        h("grud_irregular_rmsprop_batch64", "grud", "GRU-D under RMSprop with larger batches", opt="rmsprop",
          batch=64, lr=2e-3),
        h("grud_irregular_asgd", "grud", "GRU-D under averaged SGD", opt="asgd", lr=0.1),
        tab,
        h("tabnet_sparsemax_nadam_width24", "tabnet", "a wider TabNet-like model under NAdam", opt="nadam",
          width=24),
        h("tabnet_sparsemax_adamax_batch256", "tabnet", "a TabNet-like model under Adamax with larger batches",
          opt="adamax", batch=256),
        h("tabnet_sparsemax_adamw_batch64", "tabnet", "a TabNet-like model under AdamW with smaller batches",
          opt="adamw", batch=64, lr=5e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("S01", "centroid_includes_own_utterance", spk, "centroid_includes_own_utterance", "SC",
          "each utterance compared with its own speaker's centroid taken with that utterance in it"),
        b("S02", "batch_reshaped_utterance_major", spk, "batch_reshaped_utterance_major", "SC",
          "the speaker-major batch of embeddings reshaped as [utterances, speakers]: the speaker groups mix"),
        b("S03", "mask_applied_to_log_magnitude", sep, "mask_applied_to_log_magnitude", "SC",
          "the separation mask multiplied onto the log-magnitude features instead of the mixture's magnitude"),
        b("S04", "mask_softmax_over_frequency", sep, "mask_softmax_over_frequency", "SC",
          "the mask normalised by a softmax over the frequency bins instead of a sigmoid per bin"),
        b("S05", "gradient_penalty_on_real_only", gp, "gradient_penalty_on_real_only", "SC",
          "the gradient penalty taken at the real points only instead of at interpolates of real and fake", harmless=True),
        b("S06", "gradient_penalty_subtracted", gp, "gradient_penalty_subtracted", "EG",
          "the gradient penalty subtracted from the critic's loss instead of added"),
        b("S07", "generator_loss_sign_flipped", gp, "generator_loss_sign_flipped", "SC",
          "the generator's loss written as +E[D(fake)]: the generator runs from the critic's real side"),
        b("S08", "temperature_annealed_to_zero", gvae, "temperature_annealed_to_zero", "EG",
          "the Gumbel-softmax temperature annealed by exp(-rt) without its floor, towards zero", effect_step=None),
        b("S09", "hard_sample_without_straight_through", gvae, "hard_sample_without_straight_through", "VG",
          "the hard one-hot sample fed to the decoder without the straight-through estimator: no gradient reaches "
          "the encoder"),
        b("S10", "kl_weight_on_reconstruction", gvae, "kl_weight_on_reconstruction", "SC",
          "the KL weight beta multiplied onto the reconstruction term instead of the KL term"),
        b("S11", "decay_applied_to_mask", grud, "decay_applied_to_mask", "SC",
          "GRU-D's input decay applied to the observation mask instead of to the last observed values", harmless=True),
        b("S12", "observation_mask_inverted", grud, "observation_mask_inverted", "SC",
          "the observation mask built as isnan(values): observed values are treated as missing and vice versa"),
        b("S13", "nan_values_not_filled", grud, "nan_values_not_filled", "NaN",
          "the missing values left as NaN (no nan_to_num) on the assumption that the mask zeroes them"),
        b("S14", "sparsemax_over_batch", tab, "sparsemax_over_batch", "SC",
          "the attentive transformer's sparsemax taken over the batch dimension instead of the features"),
        b("S15", "sparsemax_sorted_ascending", tab, "sparsemax_sorted_ascending", "SC",
          "a hand-written sparsemax that sorts the scores ascending, so its threshold and support are wrong", harmless=True),
        b("S16", "separation_target_is_mixture", sep, "separation_target_is_mixture", "SC",
          "the mixture passed to the loss as the target instead of the source to separate"),
        b("S17", "time_gaps_in_milliseconds", grud, "time_gaps_in_milliseconds", "SC",
          "the time gaps fed to GRU-D's decays in milliseconds while the series' times are in seconds"),
        b("S18", "hidden_state_not_carried", grud, "hidden_state_not_carried", "SC",
          "the GRU cell called without the (decayed) hidden state, so it restarts from zeros at every observation"),
        b("S19", "critic_output_through_sigmoid", gp, "critic_output_through_sigmoid", "VG",
          "the WGAN critic ending in a sigmoid, as a standard GAN discriminator does"),
        b("S20", "cosine_logits_without_scale", spk, "cosine_logits_without_scale", "SC",
          "the cosine similarities fed to the cross-entropy without GE2E's learnt scale and bias"),
    ]  # fmt: skip
    return healthy + bugs
