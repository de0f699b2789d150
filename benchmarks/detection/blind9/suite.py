"""What `run.py --suite blind9` trains: the ninth blind split's healthy programs and bugs, and how the ground
truth is set.

Each program was written from a one-line brief (a typical training script in a setting the eight earlier splits did
not cover; a reported mistake none of them used) without the rules, their documents or any score, and the split
was frozen before it was scored. The mechanics are all imported: `train` binds this split's `SCRIPTS` to the first
split's runner (`blind.suite.train`), `label` is the first split's oracle label, the declarations are the second
split's, and `split_of` gives even seeds to calibration and odd ones to the report. A bug names its twin, its
category and the step it acts from; the bugs the smoke runs found harmless against their twins (README.md) are
declared `harmless` (`should_stop=False`), so they count neither as misses nor as false alarms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from benchmarks.detection.blind import suite as blind
from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind2 import suite as second
from benchmarks.detection.blind9 import learning, science, sequences

SCRIPTS: dict[str, Callable[[Run], None]] = {
    "deepar": sequences.deepar, "reader": sequences.reader,
    "protonet": learning.protonet, "fgsm": learning.fgsm, "fixmatch": learning.fixmatch,
    "ewc": science.ewc, "fno": science.fno,
}  # fmt: skip
"""The script of each workload."""
PREFIX, CATEGORIES, split_of = "blind9_", blind.CATEGORIES, blind.split_of
train = partial(blind.train, scripts=SCRIPTS)
"""`blind.suite.train` with this split's scripts: one program and seed through the hook into `out` (None: inert)."""
label = blind.label
"""The oracle's harm label and visible step of each bug run (`blind.suite.label`)."""


@dataclass(frozen=True)
class Blind9Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind9Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind9Program, prefix=PREFIX)
    ar = h("deepar_gaussian_adam", "deepar", "a DeepAR-style GRU forecaster with a Gaussian likelihood on series "
           "with missing values")  # fmt: skip
    qa = h(
        "extractive_qa_bigru_adam",
        "reader",
        "an extractive QA reader with start and end pointers over passages",
        steps=200,
    )
    pn = h("protonet_5way_adam", "protonet", "a prototypical network on 5-way 5-shot episodes")
    adv = h("fgsm_adversarial_adam", "fgsm", "FGSM adversarial training of an MLP image classifier")
    fm = h("fixmatch_spirals_adam", "fixmatch", "FixMatch-style pseudo-labelling with 20 labelled points")
    ewc = h(
        "ewc_two_tasks_adam", "ewc", "elastic weight consolidation over two permuted tasks, one head each"
    )
    fno = h("fno_diffusion_adam", "fno", "a Fourier neural operator for a 1-D viscous diffusion equation")
    healthy = [
        ar,
        h("deepar_gaussian_adamw_hidden16", "deepar", "a smaller DeepAR-style forecaster under AdamW", opt="adamw",
          hidden=16),
        h("deepar_gaussian_adamax_batch128", "deepar", "a DeepAR-style forecaster under Adamax with larger batches",
          opt="adamax", batch=128),
        h("deepar_gaussian_nadam", "deepar", "a DeepAR-style forecaster under NAdam", opt="nadam", lr=2e-3),
        qa,
        h("extractive_qa_adamw_batch64", "reader", "an extractive QA reader under AdamW with larger batches",
          opt="adamw", batch=64, steps=200),
        h("extractive_qa_radam_hidden32", "reader", "a smaller extractive QA reader under RAdam", opt="radam",
          hidden=32, steps=200),
        h("extractive_qa_nadam", "reader", "an extractive QA reader under NAdam", opt="nadam", lr=2e-3, steps=200),
        pn,
        h("protonet_momentum_sgd", "protonet", "a prototypical network under momentum SGD", opt="momentum"),
        h("protonet_radam_width32", "protonet", "a narrower prototypical network under RAdam", opt="radam",
          width=32, lr=3e-3),
        h("protonet_10way_adamax", "protonet", "a prototypical network on 10-way episodes under Adamax",
          opt="adamax", way=10, lr=2e-3),
        adv,
        h("fgsm_adversarial_adamw_batch128", "fgsm", "FGSM adversarial training under AdamW with larger batches",
          opt="adamw", batch=128),
        h("fgsm_adversarial_nesterov", "fgsm", "FGSM adversarial training under Nesterov SGD", opt="nesterov"),
        h("fgsm_adversarial_nadam_batch32", "fgsm", "FGSM adversarial training under NAdam with small batches",
          opt="nadam", batch=32),
        fm,
        h("fixmatch_spirals_adamw", "fixmatch", "FixMatch-style pseudo-labelling under AdamW with weight decay", opt="adamw"),
        h("fixmatch_spirals_nadam_width128", "fixmatch", "a wider FixMatch-style learner under NAdam", opt="nadam",
          width=128),
        h("fixmatch_spirals_radam", "fixmatch", "FixMatch-style pseudo-labelling under RAdam", opt="radam"),
        ewc,
        h("ewc_two_tasks_momentum_sgd", "ewc", "EWC over two permuted tasks under momentum SGD", opt="momentum"),
        h("ewc_two_tasks_adamax_width128", "ewc", "a wider EWC learner under Adamax", opt="adamax", width=128),
        h("ewc_two_tasks_rmsprop_lam1000", "ewc", "EWC under RMSprop with a weaker penalty", opt="rmsprop", lr=1e-3,
          lam=1000.0),
        fno,
        h("fno_diffusion_adamw_width32", "fno", "a wider Fourier neural operator under AdamW", opt="adamw",
          width=32),
        h("fno_diffusion_adamax_batch16", "fno", "a Fourier neural operator under Adamax with small batches",
          opt="adamax", batch=16),
        h("fno_diffusion_radam", "fno", "a Fourier neural operator under RAdam", opt="radam"),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    half = ewc.steps // 2
    bugs = [
        b("Q01", "variance_passed_as_log_variance", ar, "variance_passed_as_log_variance", "SC",
          "the predicted variance exp(s) passed to a negative log-likelihood that expects the log-variance"),
        b("Q02", "missing_values_counted_in_loss", ar, "missing_values_counted_in_loss", "SC",
          "the missing values (filled with zeros) counted in the likelihood instead of masked out"),
        b("Q03", "series_scale_not_applied", ar, "series_scale_not_applied", "EG",
          "the series fed and fitted in raw units instead of divided by each series' mean level"),
        b("Q04", "start_end_labels_swapped", qa, "start_end_labels_swapped", "SC",
          "the start head trained on the end labels and the end head on the start labels"),
        b("Q05", "end_label_exclusive", qa, "end_label_exclusive", "SC",
          "the end head trained on the exclusive end (one past the answer) while spans are read inclusively"),
        b("Q06", "distances_not_negated", pn, "distances_not_negated", "OL",
          "the squared distances to the prototypes used as logits without the minus sign"),
        b("Q07", "prototypes_from_query_set", pn, "prototypes_from_query_set", "SC",
          "the training prototypes averaged from the query embeddings instead of the support set", harmless=True),
        b("Q08", "perturbation_sign_reversed", adv, "perturbation_sign_reversed", "SC",
          "the FGSM step taken against the loss gradient's sign (x - eps sign(g))"),
        b("Q09", "epsilon_in_pixel_units", adv, "epsilon_in_pixel_units", "SC",
          "the attack budget written as 8 (0-255 pixel units) for images scaled to [0, 1]"),
        b("Q10", "attack_gradient_left_in_weights", adv, "attack_gradient_left_in_weights", "SC",
          "the weights' gradients not cleared after the attack's backward, so they are added to the update", harmless=True),
        b("Q11", "no_confidence_threshold", fm, "no_confidence_threshold", "SC",
          "every pseudo-label kept, without the 0.95 confidence threshold", harmless=True),
        b("Q12", "weak_and_strong_views_swapped", fm, "weak_and_strong_views_swapped", "SC",
          "the pseudo-labels taken on the strongly perturbed view and trained on the weak one", harmless=True),
        b("Q13", "anchor_weights_not_cloned", ewc, "anchor_weights_not_cloned", "SC",
          "the task-A weights stored by reference, so the EWC anchor follows the weights and the penalty is zero",
          effect_step=half, harmless=True),
        b("Q14", "fisher_from_task_b_data", ewc, "fisher_from_task_b_data", "SC",
          "the Fisher information computed on task B's batches instead of task A's", effect_step=half,
          harmless=True),
        b("Q15", "modes_computed_as_zero", fno, "modes_computed_as_zero", "SC",
          "the number of kept Fourier modes computed as grid // 128, i.e. zero: no spectral path"),
        b("Q16", "spectral_weights_unscaled", fno, "spectral_weights_unscaled", "EG",
          "the complex spectral weights initialised with randn, without the 1/(in x out) scale", harmless=True),
    ]  # fmt: skip
    return healthy + bugs
