"""Detection-quality benchmark: our rules against the published detectors on the same runs.

One command: `.venv/bin/python -m benchmarks.detection.run [--suite numpy|torch-real|blind|blind2|...] [--seeds N]
[--json FILE] [--quick]`. The numpy suite (default) trains every program of `programs.py` with several seeds (numpy, two
processes) and records them with `trainguard.Recorder`, plus the PyTorch block of `torch_programs.py`; the
realistic PyTorch suite (`torch_real/`) trains its healthy programs and bugs through `trainguard.torch.Hook`
at save_interval 10; the blind split (`blind/`, written without reading the rules and frozen before any rule
change, to be scored once at the end of rule work) and the later blind splits (`blind2/` to the last one in
`BLIND_SPLITS`, written and frozen the same way, in other settings) run the same way. Either way the evaluator's StepViews are rebuilt from the
stored runs and scored for our default rules, SageMaker Debugger's rules at its default settings (save_interval 500) and
re-implementations of AUTOTRAINER, DeepDiagnosis, DeepLocalize and UMLAUT.
Seeds are split: even seeds calibrate thresholds, odd seeds are reported (no tuning on them).
Prints tables and writes a JSON file with the figures the docs quote.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from types import ModuleType
from typing import Any

import numpy as np

from benchmarks.detection import baselines, programs, torch_programs
from benchmarks.detection.blind import suite as blind
from benchmarks.detection.blind2 import suite as blind2
from benchmarks.detection.blind3 import suite as blind3
from benchmarks.detection.blind4 import suite as blind4
from benchmarks.detection.blind5 import suite as blind5
from benchmarks.detection.blind6 import suite as blind6
from benchmarks.detection.blind7 import suite as blind7
from benchmarks.detection.blind8 import suite as blind8
from benchmarks.detection.blind9 import suite as blind9
from benchmarks.detection.blind10 import suite as blind10
from benchmarks.detection.blind11 import suite as blind11
from benchmarks.detection.blind12 import suite as blind12
from benchmarks.detection.blind13 import suite as blind13
from benchmarks.detection.blind14 import suite as blind14
from benchmarks.detection.blind15 import suite as blind15
from benchmarks.detection.blind16 import suite as blind16
from benchmarks.detection.blind17 import suite as blind17
from benchmarks.detection.blind18 import suite as blind18
from benchmarks.detection.blind19 import suite as blind19
from benchmarks.detection.blind20 import suite as blind20
from benchmarks.detection.blind21 import suite as blind21
from benchmarks.detection.blind22 import suite as blind22
from benchmarks.detection.blind23 import suite as blind23
from benchmarks.detection.blind24 import suite as blind24
from benchmarks.detection.blind25 import suite as blind25
from benchmarks.detection.blind26 import suite as blind26
from benchmarks.detection.blind27 import suite as blind27
from benchmarks.detection.blind28 import suite as blind28
from benchmarks.detection.blind29 import suite as blind29
from benchmarks.detection.blind30 import suite as blind30
from benchmarks.detection.blind31 import suite as blind31
from benchmarks.detection.blind32 import suite as blind32
from benchmarks.detection.blind33 import suite as blind33
from benchmarks.detection.blind34 import suite as blind34
from benchmarks.detection.blind35 import suite as blind35
from benchmarks.detection.blind36 import suite as blind36
from benchmarks.detection.blind37 import suite as blind37
from benchmarks.detection.blind38 import suite as blind38
from benchmarks.detection.blind39 import suite as blind39
from benchmarks.detection.blind40 import suite as blind40
from benchmarks.detection.blind41 import suite as blind41
from benchmarks.detection.blind42 import suite as blind42
from benchmarks.detection.blind43 import suite as blind43
from benchmarks.detection.blind44 import suite as blind44
from benchmarks.detection.blind45 import suite as blind45
from benchmarks.detection.blind46 import suite as blind46
from benchmarks.detection.blind47 import suite as blind47
from benchmarks.detection.blind48 import suite as blind48
from benchmarks.detection.blind49 import suite as blind49
from benchmarks.detection.blind50 import suite as blind50
from benchmarks.detection.blind51 import suite as blind51
from benchmarks.detection.blind52 import suite as blind52
from benchmarks.detection.blind53 import suite as blind53
from benchmarks.detection.blind54 import suite as blind54
from benchmarks.detection.blind55 import suite as blind55
from benchmarks.detection.blind56 import suite as blind56
from benchmarks.detection.blind57 import suite as blind57
from benchmarks.detection.blind58 import suite as blind58
from benchmarks.detection.blind59 import suite as blind59
from benchmarks.detection.blind60 import suite as blind60
from benchmarks.detection.blind61 import suite as blind61
from benchmarks.detection.blind62 import suite as blind62
from benchmarks.detection.blind63 import suite as blind63
from benchmarks.detection.blind64 import suite as blind64
from benchmarks.detection.blind65 import suite as blind65
from benchmarks.detection.blind66 import suite as blind66
from benchmarks.detection.blind67 import suite as blind67
from benchmarks.detection.torch_real import suite as torch_real
from trainguard.api.enums import Action, Severity
from trainguard.api.rules_config import RuleSpec
from trainguard.rules import registry
from trainguard.rules.base import Finding
from trainguard.rules.step_view import StepView
from trainguard.sidecar.view_builder import ViewBuilder, save_interval_of
from trainguard.store.runs import open_run

# Which AUTOTRAINER-layout category each of our rules speaks for (docs/detection-quality.md#categories).
RULE_CATEGORY = {
    "exploding_tensor": "NaN",
    "exploding_gradient": "EG",
    "vanishing_gradient": "VG",
    "dead_relu": "DR",
    "oscillating_loss": "OL",
    "loss_spike": "OL",
    "loss_not_decreasing": "SC",
    "stalled_training": "SC",
    "weight_update_ratio": "SC",  # steps too small; too large ones are EG (TWO_SIDED)
    "saturated_activation": "SC",
    "unchanged_tensor": "SC",
    "all_zero": "SC",
    "poor_weight_initialization": "SC",
    "tensor_variance": "SC",
    "class_imbalance": "SC",
    "input_scale": "SC",  # a model fed corrupted inputs learns slowly or wrongly
    "overfit": "OF",
    "overtraining": "OF",
    "threshold": "SC",
    "diverging_loss": "EG",
    "optimizer_not_stepping": "SC",
    "gradient_not_applied": "SC",  # parameters with gradients that no optimizer updates
    "eps_dominates_gradient": "SC",  # an adaptive optimizer stepping as SGD at lr/eps: slow, not unstable
    "gradient_cut": "VG",  # no kernel gets a gradient: the gradient vanishes before the kernels, entirely
    "negligible_step": "VG",  # steps a vanishing fraction of lr from the start: the updates vanish, as VG's do
    "metric_against_loss": "SC",  # the objective optimises something else than the metric the run records
    "accuracy_gap": "OF",  # a held-out accuracy far below what the training cross-entropy guarantees: leak/memorised
    "collapsed_lookup": "SC",  # an embedding table read through one row: the model learns nothing from those ids
    "batchnorm_small_batch": "OL",  # noisy batch statistics; AUTOTRAINER's remedy for an oscillating loss: a larger batch
}
# Rules whose findings speak for one category below their bound and another above it, as (below, above): steps far
# too large for the weights are exploding updates, as independent authors label them (docs/calibration.md).
TWO_SIDED = {"weight_update_ratio": ("SC", "EG")}


def finding_category(rule: str, f: Finding) -> str:
    """The category a finding speaks for: for a two-sided rule, the side of its bound its value lies on; else its
    rule's."""
    sides = TWO_SIDED.get(rule)
    if sides and f.value is not None and f.threshold is not None:
        return sides[f.value > f.threshold]
    return RULE_CATEGORY.get(rule, "SC")


# SageMaker Debugger's built-in rules with their documented defaults (shared/research/smdebug.md §4.4),
# evaluated only on the steps SageMaker saves by default (every 500 steps). SageMaker neither
# debounces (k of n) nor gates on the loss, so both are turned off where our rule classes have them;
# nor has it the findings our rule classes gained for the realistic PyTorch suite (a loss stuck since
# the start or a collapsed learning rate, a ReLU on the logits, activations far from unit scale at the
# start, a standstill of every parameter, a flat or parting validation loss, a held-out metric worse since its first
# records), which are turned off too.
_SM_ONCE = {"trigger_k": 1, "trigger_n": 1}
_SM_UNGATED = {**_SM_ONCE, "gate_on_loss": False}
SAGEMAKER_DEFAULTS: list[dict[str, object]] = [
    {"type": "exploding_tensor", "action": "stop"},
    {"type": "vanishing_gradient", "params": {"threshold": 1e-7, "biases_beside_live_kernels": True, **_SM_UNGATED}},
    {"type": "dead_relu", "params": {"threshold_inactivity": 1.0, "threshold_layer": 50.0, **_SM_UNGATED,
                                     "check_output_activation": False}},
    {"type": "saturated_activation", "params": _SM_ONCE},
    {"type": "weight_update_ratio", "params": {"large_threshold": 10.0, "small_threshold": 1e-8, **_SM_UNGATED}},
    {"type": "loss_not_decreasing", "params": {"num_steps": 10, "diff_percent": 0.1, "patience": 1,
                                               "ignore_below_fraction": None, "stuck_steps": None,
                                               "collapsed_lr_fraction": None}},
    {"type": "overfit", "params": {"patience": 1, "ratio_threshold": 0.1, "gate_on_val_progress": False,
                                   "flat_val_drop": None, "start_worsening": None}},
    {"type": "overtraining", "params": {"patience_train": 5, "patience_validation": 10, "delta": 0.01,
                                        "rise_percent": None}},
    {"type": "poor_weight_initialization", "params": {"activation_std_max": None}},
    {"type": "all_zero"},
    {"type": "unchanged_tensor", "params": {"num_steps": 3, "rtol": 1e-5, "atol": 1e-8, "standstill_steps": None}},
]  # fmt: skip
SAGEMAKER_SAVE_INTERVAL = 500

CATEGORIES = (*baselines.AT_CATEGORIES, "OF")
"""AUTOTRAINER's layout (vanishing/exploding gradient, dying ReLU, oscillating loss, slow convergence,
NaN), plus overfitting, which AUTOTRAINER does not cover."""

# DeepDiagnosis' symptom layout: the symptom each fault shows (faults with none of DD's symptoms are left out).
FAULT_SYMPTOM = {
    "F1": "exploding tensor", "F9": "exploding tensor", "F13": "exploding tensor", "F17": "exploding tensor",
    "F2": "loss not decreasing", "F15": "loss not decreasing", "F11": "loss not decreasing",
    "F3": "vanishing gradient", "F4": "saturated activation", "F5": "dead node",
    "F6": "unchanged weight", "F14": "unchanged weight", "F18": "unchanged weight", "F10": "out of range",
}  # fmt: skip
SYMPTOMS = tuple(dict.fromkeys(FAULT_SYMPTOM.values()))

TORCH_PREFIX = "torch_"
TWIN = {
    "F3": "H5_sigmoid_shallow",
    "F4": "H6_tanh",
    "F7": "H7_wide",
    "F8": "H7_wide",
    "F13": "H8_deep_relu",
    "F16": "H4_blobs",
}


@dataclass
class Outcome:
    """What one detector said about one run."""

    alarm_step: int | None = None
    categories: set[str] = field(default_factory=set)
    rules: set[str] = field(default_factory=set)
    layers: set[str] = field(default_factory=set)
    stopped: bool = False
    stop_step: int | None = None
    first_by_label: dict[str, int] = field(default_factory=dict)
    """First alarm step per rule name and per category (for diagnosis delays)."""

    def alarm(self, step: int, rule: str, category: str) -> None:
        if self.alarm_step is None:
            self.alarm_step = step
        self.rules.add(rule)
        self.categories.add(category)
        for label in (rule, category):
            self.first_by_label.setdefault(label, step)


# --- running the programs ---------------------------------------------------------------------
def _train_one(args: tuple[programs.Program | torch_real.RealProgram, int, str]) -> programs.Truth:
    prog, seed, root = args
    out = "file://" + os.path.join(root, f"{prog.name}-s{seed}")
    split = SPLIT_OF_MODULE.get(
        type(prog).__module__
    )  # not isinstance: each split's class subclasses the first's
    if split is not None:
        return split.train(prog, seed, out=out)  # type: ignore[no-any-return]
    if isinstance(prog, torch_real.RealProgram):
        return torch_real.train(prog, seed, out=out)
    trainer = torch_programs.train if prog.name.startswith(TORCH_PREFIX) else programs.train
    return trainer(prog, seed, out=out)


def load_views(root: str, truth: programs.Truth) -> list[StepView]:
    run = open_run("file://" + os.path.join(root, f"{truth.program}-s{truth.seed}"))
    src = run.source(0)
    builder = ViewBuilder(0, save_interval=save_interval_of(run.info))
    views: list[StepView] = []
    for seg in src.poll():
        views.extend(builder.views(seg, src.catalogue()))
    return views


# --- detectors ---------------------------------------------------------------------------------
def evaluate_rules(specs: Sequence[RuleSpec], views: Sequence[StepView], *, every: int = 1) -> Outcome:
    """Run configured rules over the views (optionally only on steps that are multiples of `every`)."""
    rules = [(s, registry.build(s)) for s in specs]
    out = Outcome()
    for v in views:
        if every > 1 and v.step % every:
            continue
        for spec, rule in rules:
            try:
                found = rule.update(v)
            except Exception:  # noqa: BLE001, S112 - a rule error counts as no alarm, as in the evaluator
                continue
            for f in found:
                if f.severity.rank < Severity.WARNING.rank:
                    continue
                out.alarm(f.step, spec.type, finding_category(spec.type, f))
                if f.tensor:
                    out.layers.add(f.tensor.split("/")[-1].split(".")[0])
                if spec.action == Action.STOP and not out.stopped:
                    out.stopped, out.stop_step = True, f.step
    return out


def evaluate_baseline(
    fn: Callable[..., list[baselines.Alarm]], views: Sequence[StepView], truth: programs.Truth
) -> Outcome:
    kwargs = {"planned_epochs": max(truth.steps // 25, 1)} if fn is baselines.autotrainer else {}
    alarms = fn(views, **kwargs)
    out = Outcome()
    for a in alarms:
        out.alarm(a.step, a.category, baselines.DD_CATEGORY.get(a.category, a.category))
        if a.layer:
            out.layers.add(a.layer)
    out.stopped = bool(alarms) and fn in (baselines.autotrainer, baselines.deepdiagnosis)
    out.stop_step = out.alarm_step if out.stopped else None
    return out


# --- ground truth ------------------------------------------------------------------------------
def label_harm(truths: list[programs.Truth]) -> None:
    """Mark faults whose outcome is not worse than their healthy twin's as 'should not stop'."""
    by_prog: dict[str, list[programs.Truth]] = defaultdict(list)
    for t in truths:
        by_prog[t.program].append(t)
    for name, ts in by_prog.items():
        fault = ts[0].fault
        if fault is None:
            continue
        prefix = TORCH_PREFIX if name.startswith(TORCH_PREFIX) else ""
        twin = prefix + TWIN.get(fault, "H1_relu_momentum")
        twin_acc = [t.final_val_acc for t in by_prog.get(twin, [])]
        fault_acc = [t.final_val_acc for t in ts]
        if not twin_acc:
            continue
        diff = float(np.mean(twin_acc) - np.mean(fault_acc))
        spread = float(np.std(twin_acc + fault_acc)) / math.sqrt(max(len(ts), 1)) + 1e-9
        hurts = (diff > 0.02 and diff > 2 * spread) or any(t.diverged for t in ts)
        for t in ts:
            t.should_stop = t.should_stop and hurts


# --- scoring -----------------------------------------------------------------------------------
def score(truths: list[programs.Truth], outcomes: dict[tuple[str, int], Outcome], intended: dict[str, tuple[str, ...]],
          affected: dict[str, str | None]) -> dict[str, object]:  # fmt: skip
    healthy = [t for t in truths if t.fault is None]
    faulty = [t for t in truths if t.fault is not None]
    harmful = [t for t in faulty if t.should_stop]
    alarms_healthy = [t for t in healthy if outcomes[(t.program, t.seed)].alarm_step is not None]
    stops_healthy = [t for t in healthy if outcomes[(t.program, t.seed)].stopped]
    steps_healthy = sum(t.steps for t in healthy)

    def alarm_step(t: programs.Truth) -> int | None:
        return outcomes[(t.program, t.seed)].alarm_step

    def diagnosis_step(t: programs.Truth) -> int | None:
        """First alarm from a rule meant for the fault or of its category."""
        first = outcomes[(t.program, t.seed)].first_by_label
        steps = [first[lb] for lb in (*intended.get(t.program, ()), t.category) if lb in first]
        return min(steps) if steps else None

    def recall_and_delay(runs: list[programs.Truth], step_of: Callable[[programs.Truth], int | None] = alarm_step
                         ) -> dict[str, object]:  # fmt: skip
        hit = [(t, s) for t in runs if (s := step_of(t)) is not None]
        delays = [s - (t.manifest_step or 0) for t, s in hit]
        return {
            "runs": len(runs),
            "recall": len(hit) / len(runs),
            "median_delay_steps": float(statistics.median(delays)) if delays else None,
            "p90_delay_steps": float(np.percentile(delays, 90)) if delays else None,
        }

    by_cat = {cat: runs for cat in CATEGORIES if (runs := [t for t in harmful if t.category == cat])}
    per_cat = {cat: recall_and_delay(runs) for cat, runs in by_cat.items()}
    per_cat_diagnosis = {cat: recall_and_delay(runs, diagnosis_step) for cat, runs in by_cat.items()}
    per_symptom = {
        sym: recall_and_delay(runs)
        for sym in SYMPTOMS
        if (runs := [t for t in harmful if FAULT_SYMPTOM.get(t.fault or "") == sym])
    }
    overall = recall_and_delay(harmful) if harmful else {}
    per_cat_prf = category_prf(truths, outcomes, intended)
    detected = [t for t in harmful if alarm_step(t) is not None]
    diagnosed = [t for t in detected if diagnosis_step(t) is not None]
    localizable = [t for t in detected if affected.get(t.program)]
    localized = [t for t in localizable if affected[t.program] in outcomes[(t.program, t.seed)].layers]
    not_stop = [t for t in faulty if not t.should_stop]
    return {
        "healthy_runs": len(healthy),
        "false_alarm_rate": len(alarms_healthy) / max(len(healthy), 1),
        "false_alarms_per_1000_steps": 1000 * len(alarms_healthy) / max(steps_healthy, 1),
        "stops_on_healthy": len(stops_healthy),
        "false_alarm_programs": sorted({t.program for t in alarms_healthy}),
        "harmful_fault_runs": len(harmful),
        "detection_recall": len(detected) / max(len(harmful), 1),
        "diagnosis_recall": len(diagnosed) / max(len(harmful), 1),
        "localization_recall": len(localized) / max(len(localizable), 1) if localizable else None,
        "stops_on_should_not_stop_faults": sum(outcomes[(t.program, t.seed)].stopped for t in not_stop),
        "median_delay_steps": overall.get("median_delay_steps"),
        "p90_delay_steps": overall.get("p90_delay_steps"),
        "per_category": per_cat,
        "per_category_diagnosis": per_cat_diagnosis,
        "per_category_prf": per_cat_prf,
        "per_symptom": per_symptom,
    }


def category_prf(
    truths: list[programs.Truth],
    outcomes: dict[tuple[str, int], Outcome],
    intended: dict[str, tuple[str, ...]],
) -> dict[str, dict[str, object]]:
    """Precision, recall and F1 per fault category. A run is flagged for a category when the detector raises an
    alarm of it, or one from a rule meant for a fault of it (as the diagnosis cells count: `exploding_tensor` is
    meant for the exploding-gradient faults too); flagged harmful runs of that category are true positives,
    other flagged runs (healthy, or a fault of another category) false ones. Faults labelled "should not
    stop" count neither way."""
    means: dict[str, set[str]] = defaultdict(set)
    for t in truths:
        for rule in intended.get(t.program, ()) if t.category else ():
            means[rule].add(t.category)

    def flagged_for(t: programs.Truth, cat: str) -> bool:
        o = outcomes[(t.program, t.seed)]
        return cat in o.categories or any(cat in means.get(rule, ()) for rule in o.rules)

    counted = [t for t in truths if t.fault is None or t.should_stop]
    out: dict[str, dict[str, object]] = {}
    for cat in CATEGORIES:
        positives = [t for t in counted if t.fault is not None and t.category == cat]
        flagged = [t for t in counted if flagged_for(t, cat)]
        if not positives and not flagged:
            continue
        tp = sum(1 for t in flagged if t.fault is not None and t.category == cat)
        precision = tp / len(flagged) if flagged else math.nan
        recall = tp / len(positives) if positives else math.nan
        f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else math.nan
        out[cat] = {"runs": len(positives), "flagged": len(flagged), "precision": precision, "recall": recall,
                    "f1": f1}  # fmt: skip
    return out


def per_rule_table(truths: list[programs.Truth], outcomes: dict[tuple[str, int], Outcome],
                   intended: dict[str, tuple[str, ...]]) -> dict[str, dict[str, float]]:  # fmt: skip
    """Precision/recall/F1 of each rule against the faults it is meant to diagnose."""
    rules = sorted(
        {r for o in outcomes.values() for r in o.rules} | {r for v in intended.values() for r in v}
    )
    out = {}
    for rule in rules:
        fired = [t for t in truths if rule in outcomes[(t.program, t.seed)].rules]
        positives = [t for t in truths if t.should_stop and rule in intended.get(t.program, ())]
        tp = [t for t in fired if t.should_stop and rule in intended.get(t.program, ())]
        precision = len(tp) / len(fired) if fired else math.nan
        recall = len(tp) / len(positives) if positives else math.nan
        f1 = (
            2 * precision * recall / (precision + recall)
            if precision and recall and precision + recall > 0
            else math.nan
        )
        healthy_fired = sum(1 for t in fired if t.fault is None)
        out[rule] = {"fired": len(fired), "positives": len(positives), "precision": precision, "recall": recall,
                     "f1": f1, "healthy_fired": healthy_fired}  # fmt: skip
    return out


def _fmt(x: object, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if pct:
        return f"{100 * float(x):.0f}%"  # type: ignore[arg-type]
    return f"{x:.0f}" if isinstance(x, float) else str(x)


def _cells(per: dict[str, dict[str, object]], keys: Sequence[str], width: int) -> str:
    """`recall/median delay` per key, `-` where the split has no harmful run of it."""
    out = ""
    for k in keys:
        d = per.get(k)
        out += (
            f"{'-':>{width}}"
            if d is None
            else f"{_fmt(d['recall'], True) + '/' + _fmt(d['median_delay_steps']):>{width}}"
        )
    return out


def _prf(d: dict[str, object] | None) -> str:
    """`precision/recall/F1` in whole percent, `-` for a figure without runs to count."""
    if d is None:
        return "-"
    return "/".join(_fmt(d[k], True).rstrip("%") for k in ("precision", "recall", "f1"))


def print_summary(split: str, results: dict[str, dict[str, object]]) -> None:
    print(f"\n== {split} split: detection (warning or above); per category: recall/median delay in steps ==")
    head = f"{'detector':<16}{'FA runs':>8}{'FA/1k st':>9}{'stops':>6}{'detect':>7}{'diagn':>6}{'local':>6}{'delay':>6}{'p90':>5}"
    print(head + "".join(f"{c:>9}" for c in CATEGORIES))
    for name, r in results.items():
        line = f"{name:<16}{_fmt(r['false_alarm_rate'], True):>8}{r['false_alarms_per_1000_steps']:>9.2f}"
        line += f"{_fmt(r['stops_on_healthy']):>6}{_fmt(r['detection_recall'], True):>7}{_fmt(r['diagnosis_recall'], True):>6}"
        line += f"{_fmt(r['localization_recall'], True):>6}{_fmt(r['median_delay_steps']):>6}{_fmt(r['p90_delay_steps']):>5}"
        print(line + _cells(r["per_category"], CATEGORIES, 9))  # type: ignore[arg-type]
    print(f"-- {split}, diagnosis per category (the first alarm of the fault's category or from a rule meant "
          "for it): recall/median delay --")  # fmt: skip
    print(f"{'detector':<16}" + "".join(f"{c:>9}" for c in CATEGORIES))
    for name, r in results.items():
        print(f"{name:<16}" + _cells(r["per_category_diagnosis"], CATEGORIES, 9))  # type: ignore[arg-type]
    print(f"-- {split}, per category: precision/recall/F1 in % (flagged = an alarm of the category or from a rule "
          "meant for it; should-not-stop faults count neither way) --")  # fmt: skip
    print(f"{'detector':<16}" + "".join(f"{c:>12}" for c in CATEGORIES))
    for name, r in results.items():
        prf: dict[str, dict[str, object]] = r["per_category_prf"]  # type: ignore[assignment]
        print(f"{name:<16}" + "".join(f"{_prf(prf.get(c)):>12}" for c in CATEGORIES))
    print(f"-- {split}, DeepDiagnosis' symptom layout: recall/median delay --")
    short = {s: "".join(w[0] for w in s.split()).upper() for s in SYMPTOMS}
    print(
        f"{'detector':<16}"
        + "".join(f"{short[s]:>9}" for s in SYMPTOMS)
        + "   "
        + ", ".join(f"{v} {k}" for k, v in short.items())
    )
    for name, r in results.items():
        print(f"{name:<16}" + _cells(r["per_symptom"], SYMPTOMS, 9))  # type: ignore[arg-type]


def _resaved(p: programs.Program, save_interval: int) -> programs.Program:
    """`p` saved every `save_interval` steps, unless it is a copy saved at every step."""
    return p if p.save_interval == 1 else replace(p, save_interval=save_interval)


QUICK_REAL = (
    "real_mlp_adam", "real_gpt_lm_warmup_cosine", "real_mf_plain_sgd_sparse_usage", "real_gan_bce_two_optimizers",
    "real_B01_nll_loss_on_raw_logits", "real_B02_labels_shuffled_apart_from_inputs",
)  # fmt: skip
"""The realistic suite's fast subset (`--quick`)."""


BLIND_SPLITS: dict[str, ModuleType] = {
    "blind": blind, "blind2": blind2, "blind3": blind3, "blind4": blind4, "blind5": blind5, "blind6": blind6,
    "blind7": blind7, "blind8": blind8, "blind9": blind9, "blind10": blind10, "blind11": blind11, "blind12": blind12,
    "blind13": blind13, "blind14": blind14, "blind15": blind15, "blind16": blind16, "blind17": blind17,
    "blind18": blind18,
    "blind19": blind19,
    "blind20": blind20,
    "blind21": blind21,
    "blind22": blind22,
    "blind23": blind23,
    "blind24": blind24,
    "blind25": blind25,
    "blind26": blind26,
    "blind27": blind27,
    "blind28": blind28,
    "blind29": blind29,
    "blind30": blind30,
    "blind31": blind31,
    "blind32": blind32,
    "blind33": blind33,
    "blind34": blind34,
    "blind35": blind35,
    "blind36": blind36,
    "blind37": blind37,
    "blind38": blind38,
    "blind39": blind39,
    "blind40": blind40,
    "blind41": blind41,
    "blind42": blind42,
    "blind43": blind43,
    "blind44": blind44,
    "blind45": blind45,
    "blind46": blind46,
    "blind47": blind47,
    "blind48": blind48,
    "blind49": blind49,
    "blind50": blind50,
    "blind51": blind51,
    "blind52": blind52,
    "blind53": blind53,
    "blind54": blind54,
    "blind55": blind55,
    "blind56": blind56,
    "blind57": blind57,
    "blind58": blind58,
    "blind59": blind59,
    "blind60": blind60,
    "blind61": blind61,
    "blind62": blind62,
    "blind63": blind63,
    "blind64": blind64,
    "blind65": blind65,
    "blind66": blind66,
    "blind67": blind67,
}  # fmt: skip
"""Each blind split's suite module, by its `--suite` name: its `catalogue()`, `train(...)` and `label(...)`."""
SPLIT_OF_MODULE: dict[str, ModuleType] = {split.__name__: split for split in BLIND_SPLITS.values()}
"""The split whose scripts train a program, by the module its program class is declared in: each split declares
its own subclass of the first split's program class in its suite module."""

RESULTS_SUFFIX = {"numpy": "", "torch-real": "_torch_real", **{name: f"_{name}" for name in BLIND_SPLITS}}
"""The suffix of each suite's default figures file."""


def suite_programs(suite: str) -> list[Any]:
    """The programs of `suite` (numpy, torch-real, or one of `BLIND_SPLITS`)."""
    if suite in BLIND_SPLITS:
        return list(BLIND_SPLITS[suite].catalogue())
    return list(torch_real.catalogue()) if suite == "torch-real" else list(programs.catalogue())


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--suite",
        choices=("numpy", "torch-real", *BLIND_SPLITS),
        default="numpy",
        help="numpy: the numpy programs and the PyTorch block; torch-real: the realistic PyTorch programs and bugs; "
        f"blind: the blind split (score it once, at the end of rule work); {', '.join(list(BLIND_SPLITS)[1:])}: "
        "the later blind splits (the same)",
    )
    ap.add_argument(
        "--seeds",
        type=int,
        default=0,
        help="seeds per program (even: calibration, odd: report; default 6, torch-real 4)",
    )
    ap.add_argument(
        "--torch-seeds",
        type=int,
        default=4,
        help="seeds per PyTorch program of the numpy suite (0: no PyTorch block)",
    )
    ap.add_argument("--quick", action="store_true", help="a few programs, two seeds (CI smoke run)")
    ap.add_argument("--programs", default="", help="comma-separated program names to run (default: all)")
    ap.add_argument("--json", default="", help="where to write the figures (default: results.json, "
                    "results_torch_real.json for --suite torch-real)")  # fmt: skip
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--keep", default="", help="keep the recorded runs (and truths.json) in this directory")
    ap.add_argument("--reuse", default="", help="score the runs kept in this directory instead of training")
    ap.add_argument(
        "--save-interval",
        type=int,
        default=0,
        help="save the runs otherwise saved every 5th step (numpy suite; torch-real: every 10th) at every Nth "
        "instead (the every-step copies keep 1)",
    )
    args = ap.parse_args(argv)
    real = args.suite == "torch-real" or args.suite in BLIND_SPLITS
    args.seeds = args.seeds or (4 if real else 6)
    args.json = args.json or f"benchmarks/detection/results{RESULTS_SUFFIX[args.suite]}.json"

    progs: list[Any] = suite_programs(args.suite)
    torch_progs: list[Any] = torch_programs.catalogue() if args.torch_seeds and not real else []
    if args.programs:
        wanted = set(args.programs.split(","))
        progs = [p for p in progs if p.name in wanted]
        torch_progs = [p for p in torch_progs if p.name in wanted]
    if args.save_interval:
        progs, torch_progs = ([_resaved(p, args.save_interval) for p in ps] for ps in (progs, torch_progs))
    if args.quick:
        quick = {"F1_lr_x100", "F3_vanishing_sigmoid", "F5_dead_relu_bias", "F13_deep_relu_x3", "H1_relu_momentum",
                 "N1_sparse_relu", "N3_warmup_cosine", "H5_sigmoid_shallow", *QUICK_REAL}  # fmt: skip
        progs = [p for p in progs if p.name in quick]
        torch_progs = [p for p in torch_progs if p.name.removeprefix(TORCH_PREFIX) in quick]
        args.seeds = min(args.seeds, 2)
        args.torch_seeds = min(args.torch_seeds, 2)
    root = args.reuse or args.keep or tempfile.mkdtemp(prefix="trainguard-detect-")
    os.makedirs(root, exist_ok=True)
    t0 = time.perf_counter()
    if args.reuse:
        seeds = {p.name: args.seeds for p in progs} | {p.name: args.torch_seeds for p in torch_progs}
        with open(os.path.join(root, "truths.json")) as fh:
            truths = [programs.Truth(**t) for t in json.load(fh) if t["seed"] < seeds.get(t["program"], 0)]
        timing = os.path.join(root, "timing.json")
        kept_train_seconds = None
        if os.path.exists(timing):
            with open(timing) as fh:
                kept_train_seconds = json.load(fh)["train_seconds"]
    else:
        # the slowest runs first, so the pool ends on short ones
        jobs = [(p, s, root) for p in torch_progs for s in range(args.torch_seeds)]
        jobs += [
            (p, s, root) for p in sorted(progs, key=_expected_cost, reverse=True) for s in range(args.seeds)
        ]
        with ProcessPoolExecutor(max_workers=max(1, min(args.workers, 2))) as pool:
            truths = list(pool.map(_train_one, jobs, chunksize=1 if real else 2))
        kept_train_seconds = None
    t_train = time.perf_counter() - t0
    if args.keep:
        with open(os.path.join(root, "truths.json"), "w") as fh:
            json.dump([asdict(t) for t in truths], fh)
        with open(os.path.join(root, "timing.json"), "w") as fh:
            json.dump({"train_seconds": round(t_train, 1)}, fh)
    if kept_train_seconds is not None:
        t_train = kept_train_seconds  # the kept runs' training, not the seconds it took to read them
    if args.suite in BLIND_SPLITS:
        BLIND_SPLITS[args.suite].label(truths, progs)
    elif real:
        torch_real.label(truths, progs)
    else:
        label_harm(truths)
    intended = {p.name: p.intended_rules for p in (*progs, *torch_progs)}
    affected = {p.name: p.affected_layer for p in (*progs, *torch_progs)}

    ours_specs = registry.default_rules()
    sm_specs = []
    for d in SAGEMAKER_DEFAULTS:
        try:
            spec = RuleSpec.model_validate(d)
            registry.build(spec)
            sm_specs.append(spec)
        except Exception as err:  # noqa: BLE001 - a parameter our rule does not take is reported, not fatal
            print(f"note: SageMaker default {d['type']} not reproduced: {err}", file=sys.stderr)
    detectors: dict[str, Callable[[list[StepView], programs.Truth], Outcome]] = {
        "TrainGuard": lambda v, t: evaluate_rules(ours_specs, v),
        "SageMaker@500": lambda v, t: evaluate_rules(sm_specs, v, every=SAGEMAKER_SAVE_INTERVAL),
    }
    for name, fn in baselines.BASELINES.items():
        detectors[name] = lambda v, t, fn=fn: evaluate_baseline(fn, v, t)
    outcomes: dict[str, dict[tuple[str, int], Outcome]] = {d: {} for d in detectors}
    t1 = time.perf_counter()
    for t in truths:
        views = load_views(root, t)
        for name, fn in detectors.items():
            outcomes[name][(t.program, t.seed)] = fn(views, t)
    t_eval = time.perf_counter() - t1
    if not (args.keep or args.reuse):
        shutil.rmtree(root, ignore_errors=True)

    report: dict[str, object] = {"suite": args.suite, "programs": len(progs), "torch_programs": len(torch_progs),
                                 "seeds": args.seeds, "torch_seeds": args.torch_seeds, "runs": len(truths),
                                 "train_seconds": round(t_train, 1), "evaluate_seconds": round(t_eval, 1), "splits": {}}  # fmt: skip
    numpy_truths = [t for t in truths if not t.program.startswith(TORCH_PREFIX)]
    torch_truths = [t for t in truths if t.program.startswith(TORCH_PREFIX)]
    blocks = [("calibration", numpy_truths, 0), ("report", numpy_truths, 1)]
    if torch_truths:
        blocks.append(("torch report", torch_truths, 1))
    for split, pool_truths, keep in blocks:
        ts = [t for t in pool_truths if t.seed % 2 == keep] or pool_truths
        res = {name: score(ts, outcomes[name], intended, affected) for name in detectors}
        print_summary(split, res)
        per_rule = per_rule_table(ts, outcomes["TrainGuard"], intended)
        report["splits"][split] = {"detectors": res, "per_rule": per_rule}  # type: ignore[index]
    print("\n== report split: our rules ==")
    print(f"{'rule':<28}{'fired':>6}{'healthy':>8}{'prec':>7}{'recall':>8}{'F1':>6}")
    for rule, r in report["splits"]["report"]["per_rule"].items():  # type: ignore[index]
        print(f"{rule:<28}{r['fired']:>6}{r['healthy_fired']:>8}{_fmt(r['precision'], True):>7}"
              f"{_fmt(r['recall'], True):>8}{_fmt(r['f1'], True):>6}")  # fmt: skip
    if real:
        report["bugs"] = bug_table(truths, progs, outcomes["TrainGuard"], intended)
    else:
        print(
            "\nHarm labels (fault -> should stop):",
            {t.program: t.should_stop for t in truths if t.fault and t.seed == 1},
        )
    print(f"\n{len(truths)} runs: training {t_train:.0f} s, evaluation {t_eval:.0f} s")
    with open(args.json, "w") as fh:
        json.dump(report, fh, indent=1, default=lambda o: sorted(o) if isinstance(o, set) else str(o))
    print(f"figures written to {args.json}")
    return 0


def _expected_cost(p: object) -> float:
    """A rough relative cost of training `p` once (its steps, times more for sequence and conv models)."""
    heavy = {"lm": 3.0, "transformer": 3.0, "rnn": 3.0, "conv": 2.5, "gan": 1.5}
    return float(getattr(p, "steps", 1)) * heavy.get(getattr(p, "workload", ""), 1.0)


def bug_table(truths: list[programs.Truth], progs: list[Any], outcomes: dict[tuple[str, int], Outcome],
              intended: dict[str, tuple[str, ...]]) -> list[dict[str, object]]:  # fmt: skip
    """Print and return one row per bug of the realistic suite: does it hurt, when it became visible, when
    and by which rules TrainGuard reported it (every seed)."""
    rows: list[dict[str, object]] = []
    print(
        "\n== torch-real bugs: hurts (twin score - bug score), visible step, first alarm and rules per seed =="
    )
    for p in progs:
        if p.fault is None:
            continue
        ts = sorted((t for t in truths if t.program == p.name), key=lambda t: t.seed)
        twin = {t.seed: t.final_val_acc for t in truths if t.program == p.twin}
        gap = float(np.mean([twin.get(t.seed, math.nan) - t.final_val_acc for t in ts])) if ts else math.nan
        per_seed = []
        for t in ts:
            o = outcomes[(t.program, t.seed)]
            first = o.first_by_label
            diag = [first[lb] for lb in (*intended.get(t.program, ()), t.category or "") if lb in first]
            per_seed.append({"seed": t.seed, "visible": t.manifest_step, "alarm": o.alarm_step,
                             "diagnosis": min(diag) if diag else None, "rules": sorted(o.rules)})  # fmt: skip
        hurts = bool(ts) and ts[0].should_stop
        rows.append({"program": p.name, "category": p.category, "hurts": hurts, "score_gap": gap,
                     "source": p.source, "runs": per_seed})  # fmt: skip
        cells = " ".join(f"s{r['seed']}:{r['visible']}->{r['alarm']}" for r in per_seed)
        rules = sorted({rule for r in per_seed for rule in r["rules"]})  # type: ignore[attr-defined]
        print(
            f"{p.name:<48}{p.category or '':<4}{'hurts' if hurts else 'no harm':<8}{gap:>6.2f}  {cells}  {','.join(rules)}"
        )
    return rows


if __name__ == "__main__":
    sys.exit(main())
