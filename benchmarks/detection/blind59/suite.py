"""The fifty-ninth blind split as `run.py --suite blind59` sees it: which script trains each workload, the healthy
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
from benchmarks.detection.blind59 import atelier, site, trades

PREFIX = "blind59_"
SCRIPTS = {"kerning": atelier.kerning, "pigments": atelier.pigments, "penetration": site.penetration,
           "manoeuvres": site.manoeuvres, "crumb": trades.crumb, "fitting": trades.fitting}  # fmt: skip
"""Workload name -> the script that trains it."""
CATEGORIES, split_of, label = blind.CATEGORIES, blind.split_of, blind.label
train = partial(blind.train, scripts=SCRIPTS)
"""One program and seed through the hook into `out` (None: an inert hook), by the first split's runner."""


@dataclass(frozen=True)
class Blind59Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind59Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind59Program, prefix=PREFIX)
    ker = h(
        "kerning_mlp_adam", "kerning", "a type foundry's kerning-pair model (a ReLU MLP over side profiles)"
    )
    ker_sgd = h("kerning_momentum", "kerning", "a kerning MLP under momentum SGD", opt="momentum", lr=0.02)
    pig = h(
        "pigments_cnn_adam",
        "pigments",
        "a museum conservation lab's pigment identifier on handheld XRF spectra (a 1-D CNN)",
    )
    pig_sgd = h("pigments_momentum", "pigments", "a pigment CNN under momentum SGD", opt="momentum", lr=0.02)
    pen = h(
        "penetration_lstm_adam",
        "penetration",
        "a tunnel boring machine's next-ring penetration forecaster (an LSTM over the last rings)",
    )
    pen_sgd = h(
        "penetration_momentum",
        "penetration",
        "a penetration LSTM under momentum SGD",
        opt="momentum",
        lr=0.05,
    )
    man = h(
        "manoeuvres_encoder_adam",
        "manoeuvres",
        "a windsurfing club's manoeuvre classifier on GPS watch tracks (a small transformer encoder)",
    )
    man_sgd = h(
        "manoeuvres_momentum", "manoeuvres", "a manoeuvre encoder under momentum SGD", opt="momentum", lr=0.02
    )
    cru = h("crumb_cnn_adam", "crumb", "a bakery's proofing grader on crumb scans (a small 2-D CNN)")
    fit = h(
        "fitting_mlp_adam", "fitting", "a hearing-aid clinic's fitting model from audiograms (a GELU MLP)"
    )
    fit_sgd = h("fitting_momentum", "fitting", "a fitting MLP under momentum SGD", opt="momentum", lr=0.02)
    healthy = [
        ker,
        ker_sgd,
        h("kerning_adamw_hidden128", "kerning", "a wider kerning MLP under AdamW", opt="adamw", hidden=128),
        h("kerning_adamax_batch128", "kerning", "a kerning MLP under Adamax with batches of 128", opt="adamax",
          batch=128, lr=4e-3),
        pig,
        pig_sgd,
        h("pigments_rmsprop_width16", "pigments", "a wider pigment CNN under RMSprop", opt="rmsprop", width=16,
          lr=2e-3),
        h("pigments_nadam_batch64", "pigments", "a pigment CNN under NAdam with batches of 64", opt="nadam",
          batch=64),
        pen,
        pen_sgd,
        h("penetration_rmsprop_hidden32", "penetration", "a wider penetration LSTM under RMSprop", opt="rmsprop",
          hidden=32, lr=2e-3),
        h("penetration_nadam_batch64", "penetration", "a penetration LSTM under NAdam with batches of 64",
          opt="nadam", batch=64),
        man,
        man_sgd,
        h("manoeuvres_adamw_width24", "manoeuvres", "a wider manoeuvre encoder under AdamW", opt="adamw", width=24),
        h("manoeuvres_radam_batch16", "manoeuvres", "a manoeuvre encoder under RAdam with batches of 16",
          opt="radam", batch=16),
        cru,
        h("crumb_momentum", "crumb", "a crumb CNN under momentum SGD", opt="momentum", lr=0.05),
        h("crumb_adamw_width12", "crumb", "a wider crumb CNN under AdamW", opt="adamw", width=12),
        h("crumb_adagrad_batch64", "crumb", "a crumb CNN under Adagrad with batches of 64", opt="adagrad",
          batch=64, lr=0.02),
        fit,
        fit_sgd,
        h("fitting_rmsprop_hidden128", "fitting", "a wider fitting MLP under RMSprop", opt="rmsprop", hidden=128,
          lr=1e-3),
        h("fitting_radam_batch64", "fitting", "a fitting MLP under RAdam with batches of 64", opt="radam",
          batch=64),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("U01", "cap_height_from_version_one_os2", ker, "cap_height_from_version_one_os2", "NaN",
          "the side profiles divided by the cap height read from the font's OS/2 table, whose version-1 tables "
          "(a fifth of the training fonts) have no sCapHeight and give 0"),
        b("U02", "truetype_kerns_read_per_thousand_em", ker, "truetype_kerns_read_per_thousand_em", "SC",
          "every kern read as thousandths of an em, the TrueType fonts' kerns in their 2048 units per em included"),
        b("U03", "regular_master_kern_as_feature", ker, "regular_master_kern_as_feature", "OF",
          "the same pair's kern in the family's Regular master kept as an input column, which a new family does not "
          "have yet"),
        b("U04", "huber_beta_left_in_font_units", ker_sgd, "huber_beta_left_in_font_units", "VG",
          "smooth L1's beta of 20, the designers' tolerance in font units, kept on the standardised kern under "
          "momentum SGD"),
        b("U05", "sqrt_of_background_subtracted_counts", pig, "sqrt_of_background_subtracted_counts", "NaN",
          "a smoothed continuum subtracted from the counts before the square root that stabilises their variance, "
          "leaving negative channels between the peaks"),
        b("U06", "pigment_keyed_by_principal_element", pig, "pigment_keyed_by_principal_element", "SC",
          "the training labels looked up through the XRF database's key, the principal element, so lead-tin yellow "
          "(Pb) is labelled lead white"),
        b("U07", "sixty_points_resampled_to_nine_hundred", pig, "sixty_points_resampled_to_nine_hundred", "OF",
          "the lab's first sixty measured points each re-drawn 15 times with Poisson noise to make up 900 training "
          "spectra, in place of the other points' own measurements"),
        b("U08", "penetration_head_scaled_to_metres", pen, "penetration_head_scaled_to_metres", "VG",
          "the head's output divided by 1000 inside forward, to report metres per revolution, while the loss "
          "compares it with the standardised target"),
        b("U09", "penetration_as_mean_of_sample_ratios", pen, "penetration_as_mean_of_sample_ratios", "NaN",
          "each ring's penetration taken as the mean of the PLC samples' advance / rpm, 0 / 0 for the samples "
          "logged during the ring build, instead of the total advance over the total revolutions"),
        b("U10", "hand_clipping_ratio_inverted", pen_sgd, "hand_clipping_ratio_inverted", "EG",
          "a hand-written clipping to norm 0.5 whose ratio is upside down, the gradients multiplied by their norm over "
          "the limit instead of divided, under momentum SGD"),
        b("U11", "logits_bounded_by_tanh", man_sgd, "logits_bounded_by_tanh", "VG",
          "the classifier's logits passed through a tanh to keep the softmax stable, each at most 1 in size, under "
          "momentum SGD", harmless=True),
        b("U12", "video_marks_on_camera_clock_ahead", man, "video_marks_on_camera_clock_ahead", "SC",
          "the training windows cut at the annotators' video marks on a camera clock 7 s ahead of the watches'"),
        b("U13", "watch_manoeuvre_flag_as_input", man, "watch_manoeuvre_flag_as_input", "OF",
          "the brand-A watches' own manoeuvre flag kept as an input channel; the other club's watches have none"),
        b("U14", "proof_offset_sign_inverted", cru, "proof_offset_sign_inverted", "SC",
          "the baker's proof offset, logged as target minus actual minutes, read as actual minus target: under- and "
          "over-proofed loaves trade labels"),
        b("U15", "training_slices_from_loaf_heels", cru, "training_slices_from_loaf_heels", "SC",
          "the training scans cut from each loaf's heel (the slicer's first slice, crust along an edge and a "
          "compressed crumb) while the held-out scans are mid-loaf"),
        b("U16", "nll_of_softmax_probabilities", cru, "nll_of_softmax_probabilities", "VG",
          "F.nll_loss given the softmax's probabilities instead of their log: the loss is minus the probability",
          harmless=True),
        b("U17", "right_aid_given_left_audiogram", fit, "right_aid_given_left_audiogram", "SC",
          "the export's first audiogram columns, the left ear's, taken as the fitted ear for every aid, the right "
          "aids included"),
        b("U18", "audiogram_reduced_to_four_frequency_average", fit_sgd,
          "audiogram_reduced_to_four_frequency_average", "SC",
          "each ear's audiogram reduced to the intake form's four-frequency average (0.5, 1, 2 and 4 kHz) before the "
          "model, under momentum SGD"),
        b("U19", "datalogged_volume_offset_as_input", fit, "datalogged_volume_offset_as_input", "OF",
          "the aid's datalogged volume offset after the trial period kept as an input, which a newly fitted patient "
          "does not have"),
    ]  # fmt: skip
    return healthy + bugs
