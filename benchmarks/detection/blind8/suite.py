"""What `run.py --suite blind8` trains: the eighth blind split's 28 healthy programs and 19 bugs, and how the
ground truth is set.

Each program was written from a one-line brief (a typical training script in a setting the seven earlier splits did
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
from benchmarks.detection.blind8 import images, sequences, tabular

SCRIPTS: dict[str, Callable[[Run], None]] = {
    "superres": images.superres, "svdd": images.svdd,
    "pointer": sequences.pointer, "ktrace": sequences.ktrace, "node": sequences.node,
    "dcn": tabular.dcn, "sharpness": tabular.sharpness,
}  # fmt: skip
"""The script of each workload."""
PREFIX, CATEGORIES, split_of = "blind8_", blind.CATEGORIES, blind.split_of
train = partial(blind.train, scripts=SCRIPTS)
"""`blind.suite.train` with this split's scripts: one program and seed through the hook into `out` (None: inert)."""
label = blind.label
"""The oracle's harm label and visible step of each bug run (`blind.suite.label`)."""


@dataclass(frozen=True)
class Blind8Program(blind.BlindProgram):
    """A program of this split; its own class, declared here, tells the runner (`run.SPLIT_OF_MODULE`) whose scripts train it."""


def catalogue() -> list[Blind8Program]:
    """Every program of the split: the healthy ones first, then the bugs (each names its fixed twin)."""
    h = partial(second.declare_healthy, kind=Blind8Program, prefix=PREFIX)
    sr = h("espcn_superres_warmup_cosine", "superres",
           "an ESPCN-style 2x super-resolution net with a PixelShuffle head, warm-up then cosine")  # fmt: skip
    svdd = h("deep_svdd_adam", "svdd", "a Deep SVDD one-class anomaly detector on machine readings")
    ptr = h("pointer_net_sorting_adam", "pointer", "a pointer network learning to sort numbers", steps=200)
    dkt = h(
        "deep_knowledge_tracing_adam", "ktrace", "deep knowledge tracing with an LSTM over student answers"
    )
    ode = h("neural_ode_euler_adam", "node", "a neural ODE fitted to trajectories with explicit Euler steps")
    dcn = h("deep_cross_group_lrs", "dcn",
            "a deep-and-cross click model with its own learning rate for the embeddings")  # fmt: skip
    sam = h(
        "sam_sgd_momentum", "sharpness", "an MLP on noisy labels under hand-written SAM around momentum SGD"
    )
    look = h("lookahead_adam", "sharpness", "an MLP on noisy labels under hand-written Lookahead around Adam",
             wrapper="lookahead", opt="adam")  # fmt: skip
    healthy = [
        sr,
        h("espcn_superres_adamw_batch16", "superres", "an ESPCN super-resolution net under AdamW with small batches",
          opt="adamw", batch=16),
        h("espcn_superres_nadam_width16", "superres", "a narrower ESPCN super-resolution net under NAdam",
          opt="nadam", width=16),
        h("espcn_superres_nesterov", "superres", "an ESPCN super-resolution net under Nesterov SGD",
          opt="nesterov", lr=0.05),
        svdd,
        h("deep_svdd_adamax", "svdd", "a Deep SVDD detector trained with Adamax", opt="adamax", lr=2e-3),
        h("deep_svdd_radam_batch64", "svdd", "a Deep SVDD detector under RAdam with small batches", opt="radam",
          batch=64),
        h("deep_svdd_adadelta", "svdd", "a Deep SVDD detector trained with Adadelta", opt="adadelta"),
        ptr,
        h("pointer_net_radam_hidden32", "pointer", "a smaller pointer network under RAdam", opt="radam",
          hidden=32, steps=200),
        h("pointer_net_nadam_batch128", "pointer", "a pointer network under NAdam with larger batches", opt="nadam",
          batch=128, steps=200),
        h("pointer_net_adamw", "pointer", "a pointer network under AdamW", opt="adamw", steps=200),
        dkt,
        h("deep_knowledge_tracing_adamax", "ktrace", "deep knowledge tracing trained with Adamax", opt="adamax",
          lr=5e-3),
        h("deep_knowledge_tracing_rmsprop_hidden32", "ktrace", "a smaller knowledge tracer under RMSprop",
          opt="rmsprop", lr=1e-3, hidden=32),
        h("deep_knowledge_tracing_nesterov", "ktrace", "deep knowledge tracing under Nesterov SGD", opt="nesterov"),
        ode,
        h("neural_ode_radam_substeps4", "node", "a neural ODE with finer Euler steps under RAdam", opt="radam",
          substeps=4, steps=200),
        h("neural_ode_rprop_full_batch", "node", "a neural ODE trained with Rprop on large batches", opt="rprop",
          steps=200),
        h("neural_ode_adadelta", "node", "a neural ODE trained with Adadelta", opt="adadelta"),
        dcn,
        h("deep_cross_adagrad", "dcn", "a deep-and-cross click model under Adagrad", opt="adagrad", emb_lr=0.05,
          lr=0.02),
        h("deep_cross_adamw_dim16", "dcn", "a deep-and-cross click model with larger embeddings under AdamW",
          opt="adamw", dim=16),
        h("deep_cross_adamax_batch512", "dcn", "a deep-and-cross click model under Adamax with larger batches",
          opt="adamax", batch=512, lr=2e-3),
        sam,
        h("sam_adam_rho_0.1", "sharpness", "an MLP under hand-written SAM around Adam with a larger radius",
          opt="adam", rho=0.1),
        look,
        h("lookahead_radam_batch64", "sharpness", "an MLP under hand-written Lookahead around RAdam",
          wrapper="lookahead", opt="radam", batch=64, lr=3e-3),
    ]  # fmt: skip
    b = partial(second.declare_bug, prefix=PREFIX)
    bugs = [
        b("P01", "schedule_factor_multiplied_into_lr", sr, "schedule_factor_multiplied_into_lr", "SC",
          "the hand-written warm-up/cosine factor multiplied into each group's rate instead of setting it"),
        b("P02", "output_clamped_to_unit_range", sr, "output_clamped_to_unit_range", "DR",
          "the super-resolved output clamped to [0, 1] while the images span [-1, 1]"),
        b("P03", "subpixel_channels_reshaped_by_view", sr, "subpixel_channels_reshaped_by_view", "SC",
          "the sub-pixel channels rearranged by view(n, 1, 2h, 2w) instead of pixel_shuffle"),
        b("P04", "bias_terms_left_in_network", svdd, "bias_terms_left_in_network", "SC",
          "the Deep SVDD network built with bias terms, which lets it map every input onto the centre",
          harmless=True),
        b("P05", "normal_class_selected_with_anomaly_label", svdd, "normal_class_selected_with_anomaly_label", "SC",
          "the one-class training set selected with label 1 (the anomalies) instead of 0"),
        b("P06", "centre_at_origin", svdd, "centre_at_origin", "SC",
          "the Deep SVDD centre left at the origin instead of the initial mean feature"),
        b("P07", "targets_are_ranks_not_permutation", ptr, "targets_are_ranks_not_permutation", "SC",
          "the pointer targets built as argsort(argsort(x)) (each element's rank) instead of argsort(x)"),
        b("P08", "pointer_log_softmax_over_batch", ptr, "pointer_log_softmax_over_batch", "SC",
          "the pointer's log-softmax taken over the batch dimension instead of the positions"),
        b("P09", "pointed_positions_masked_with_zero", ptr, "pointed_positions_masked_with_zero", "SC",
          "positions already pointed to masked with 0 instead of -inf", harmless=True),
        b("P10", "interaction_index_skill_plus_answer", dkt, "interaction_index_skill_plus_answer", "SC",
          "the (skill, answer) one-hot index written skill + answer instead of skill + answer x skills"),
        b("P11", "prediction_read_at_current_skill", dkt, "prediction_read_at_current_skill", "SC",
          "the next answer's prediction read at the current exercise's skill instead of the next one's"),
        b("P12", "euler_step_without_dt", ode, "euler_step_without_dt", "EG",
          "the Euler update written h + f(h), without the step size"),
        b("P13", "observations_compared_one_step_late", ode, "observations_compared_one_step_late", "SC",
          "the integrated states compared with the observations one time step later"),
        b("P14", "param_groups_from_one_generator", dcn, "param_groups_from_one_generator", "SC",
          "both parameter groups filtered from one named_parameters() generator: the second group is empty"),
        b("P15", "cross_term_uses_previous_layer", dcn, "cross_term_uses_previous_layer", "EG",
          "the cross layers multiply x_l by (x_l . w) instead of x0"),
        b("P16", "raw_counts_without_log_transform", dcn, "raw_counts_without_log_transform", "EG",
          "the raw counts (up to about 1e5) fed to the network without the log transform and standardisation"),
        b("P17", "sam_perturbation_not_undone", sam, "sam_perturbation_not_undone", "SC",
          "SAM's ascent step never subtracted before the base optimizer's step"),
        b("P18", "lookahead_interpolation_backwards", look, "lookahead_interpolation_backwards", "SC",
          "Lookahead's slow weights moved by alpha (slow - fast) instead of alpha (fast - slow)"),
        b("P19", "field_evaluated_at_initial_state", ode, "field_evaluated_at_initial_state", "SC",
          "every Euler step evaluates the vector field at the initial state instead of the current one"),
    ]  # fmt: skip
    return healthy + bugs
