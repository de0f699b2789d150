"""Re-implementations of the published detectors, run on the same recorded statistics as our rules.

Each baseline reads the StepViews of one run (the same views our evaluator builds) and returns
alarms `(step, category, layer)`. Rules follow rules-science §4 (AUTOTRAINER's monitor.py with
its paper defaults, DeepDiagnosis' and DeepLocalize's Keras callbacks, UMLAUT's heuristics).
They check once per "epoch", which here is one evaluation point (every 25 steps), as the
originals do in `on_epoch_end`. Where the original needs data our statistics do not carry,
the closest statistic is used and named in a comment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from trainguard.rules.step_view import COL, StepView


@dataclass(frozen=True)
class Alarm:
    step: int
    category: str
    layer: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class Epoch:
    """One evaluation point: the eval view, the newest statistics before it, and epoch means
    of the train loss and accuracy (the originals log epoch averages, not one batch)."""

    eval: StepView
    stats: StepView | None
    loss: float
    accuracy: float


def _epochs(views: Sequence[StepView]) -> list[Epoch]:
    out = []
    last_stats: StepView | None = None
    losses: list[float] = []
    accs: list[float] = []
    for v in views:
        if len(v.names):
            last_stats = v
        if "loss" in v.scalars:
            losses.append(float(v.scalars["loss"]))
        if "accuracy" in v.scalars:
            accs.append(float(v.scalars["accuracy"]))
        if v.eval_scalars:
            mean = lambda xs: float(np.mean(xs)) if xs else math.nan
            out.append(Epoch(v, last_stats, mean(losses), mean(accs)))
            losses, accs = [], []
    return out


def _kernel_grad_rows(v: StepView) -> list[int]:
    rows = [int(i) for i in v.rows(collections=["gradients"]) if v.names[i].endswith(".weight")]
    return rows


def _layer(name: str) -> str:
    return name.split("/")[-1].split(".")[0]


def autotrainer(views: Sequence[StepView], *, planned_epochs: int) -> list[Alarm]:
    """AUTOTRAINER (ICSE'21) defaults: beta1=1e-3, beta2=1e-4, beta3=70, gamma=0.7, zeta=0.03, eta=0.2, delta=0.01, theta=0.6."""
    alarms: list[Alarm] = []
    train_acc: list[float] = []
    test_acc: list[float] = []
    for i, ep in enumerate(_epochs(views)):
        ev, v = ep.eval, ep.stats
        step = ev.step
        train_acc.append(ep.accuracy)
        test_acc.append(float(ev.eval_scalars.get("val_accuracy", math.nan)))
        loss = ep.loss
        if v is None:
            continue
        nonfinite = not math.isfinite(loss) or np.nansum(v.stats[:, COL["nan"]] + v.stats[:, COL["inf"]]) > 0
        if nonfinite or ev.eval_scalars.get("val_loss", 0) >= 1e5:
            alarms.append(Alarm(step, "NaN"))
            break
        epoch = i + 1
        late = epoch >= 0.3 * planned_epochs
        not_converged = max(train_acc + test_acc, default=0) < 0.6
        slow = False
        if late and len(train_acc) >= 2 and len(test_acc) >= 2:
            gain_tr = max(np.diff(train_acc))
            finite_te = [a for a in test_acc if math.isfinite(a)]
            gain_te = max(np.diff(finite_te)) if len(finite_te) > 1 else 0.0
            slow = gain_tr < 0.01 and gain_te < 0.01
        gated = not_converged or slow
        rows = _kernel_grad_rows(v)
        if len(rows) >= 2:
            g_first = v.stats[rows[0], COL["l2"]]
            g_last = v.stats[rows[-1], COL["l2"]]
            ratio = g_first / g_last if g_last > 0 else math.inf
            if gated and ratio < 1e-3 and g_first < 1e-4:
                alarms.append(Alarm(step, "VG", _layer(v.names[rows[0]])))
            if gated and ratio > 70:
                alarms.append(Alarm(step, "EG", _layer(v.names[rows[0]])))
        grads = v.rows(collections=["gradients"])
        if len(grads):
            zero_frac = v.stats[grads, COL["zero"]].sum() / max(v.stats[grads, COL["count"]].sum(), 1)
            if gated and zero_frac >= 0.7:
                alarms.append(Alarm(step, "DR"))
        if late and len(train_acc) >= 3:
            acc = np.asarray(train_acc)
            peaks = 0
            for j in range(1, len(acc) - 1):
                if acc[j] > acc[j - 1] and acc[j] > acc[j + 1]:
                    lows = acc[j + 1 :]
                    if len(lows) and acc[j] - lows.min() >= 0.03:
                        peaks += 1
            if peaks >= 0.2 * len(acc):
                alarms.append(Alarm(step, "OL"))
            if slow:
                alarms.append(Alarm(step, "SC"))
        if alarms:
            break  # AUTOTRAINER repairs (stops) at the first problem found
    return alarms


def deepdiagnosis(views: Sequence[StepView], *, n: int = 5) -> list[Alarm]:
    """DeepDiagnosis (ICSE'22) on_epoch_end checks; stops at the first hit."""
    hist: dict[str, list[float]] = {}
    losses: list[float] = []
    accs: list[float] = []
    epochs = _epochs(views)
    for i, ep in enumerate(epochs):
        ev, v = ep.eval, ep.stats
        if v is None:
            continue
        step = ev.step
        loss, acc = ep.loss, ep.accuracy
        losses.append(loss)
        accs.append(acc)
        if not math.isfinite(loss) or not math.isfinite(acc) or acc == 0:
            return [Alarm(step, "numerical error")]
        for r, name in enumerate(v.names):
            m = v.meta[r]
            if name.endswith(".bias"):
                continue  # Keras layers report kernels; a softmax bias gradient sums to zero by design
            if m.collection in ("activations", "weights") or (m.collection == "gradients"):
                mean = v.stats[r, COL["mean"]]
                if not math.isfinite(mean) or (mean == 0 and m.collection != "gradients"):
                    return [Alarm(step, "numerical error", _layer(name))]
            if m.collection in ("weights",):
                upd = v.stats[r, COL["update_l2"]]
                if math.isfinite(upd) and upd == 0 and i > 0:
                    return [Alarm(step, "unchanged weight", _layer(name))]
        for r in v.rows(collections=["activations"]):
            m = v.meta[r]
            name = v.names[r]
            # Dead node: fraction of outputs <= 0 >= 0.7 (ReLU outputs <= 0 are exactly the zeros).
            last = i == len(epochs) - 1
            if (
                m.activation == "relu"
                and last
                and v.stats[r, COL["zero"]] / max(v.stats[r, COL["count"]], 1) >= 0.7
            ):
                return [Alarm(step, "dead node", _layer(name))]
            # Saturation: DD tests pre-activations |z| >= 5 on > 50%; we read the per-unit saturated fraction
            # (sigmoid output < 0.01 or > 0.99, |z| > 4.6) averaged over units, on Tier-1 steps.
            sat = v.units.get(("saturated", name))
            if sat is not None and i % n == 0 and float(np.mean(sat)) > 0.5:
                return [Alarm(step, "saturated activation", _layer(name))]
            key = name
            hist.setdefault(key, []).append(float(v.stats[r, COL["mean"]]))
        for r in v.rows(collections=["gradients"]):
            if v.names[r].endswith(".weight") and v.stats[r, COL["abs_mean"]] < 1e-7:
                return [Alarm(step, "vanishing gradient", _layer(v.names[r]))]
        for key, values in hist.items():
            if len(values) >= n and max(values[-n:]) == min(values[-n:]):
                return [Alarm(step, "unchanged forward", _layer(key))]
        if len(losses) >= n and max(losses[-n:]) == min(losses[-n:]):
            return [Alarm(step, "loss not decreasing")]
        if len(accs) >= 20 and max(accs[-20:]) == min(accs[-20:]):
            return [Alarm(step, "accuracy not increasing")]
    return []


def deeplocalize(views: Sequence[StepView], *, n: int = 5) -> list[Alarm]:
    """DeepLocalize (ICSE'21): per-layer means NaN/Inf, zero in half the batches, or unchanged over 5 batches."""
    zero_counts: dict[str, int] = {}
    seen: dict[str, list[float]] = {}
    batches = 0
    for v in views:
        if not len(v.names):
            continue
        batches += 1
        loss = v.scalars.get("loss")  # a view without the loss (flushed apart from it) says nothing of it
        if loss is not None and not math.isfinite(float(loss)):
            return [Alarm(v.step, "NaN")]
        for r, name in enumerate(v.names):
            if v.meta[r].collection not in ("activations", "weights", "gradients") or name.endswith(".bias"):
                continue
            mean = float(v.stats[r, COL["mean"]])
            if not math.isfinite(mean):
                return [Alarm(v.step, "NaN", _layer(name))]
            if mean == 0:
                zero_counts[name] = zero_counts.get(name, 0) + 1
                if batches >= 2 * n and zero_counts[name] >= batches / 2:
                    return [Alarm(v.step, "zero", _layer(name))]
            s = seen.setdefault(name, [])
            s.append(mean)
            if len(s) > n:
                s.pop(0)
            if len(s) == n and max(s) == min(s):
                return [Alarm(v.step, "unchanged", _layer(name))]
    return []


def umlaut(views: Sequence[StepView]) -> list[Alarm]:
    """UMLAUT (CHI'21) runtime heuristics, checked once per epoch; every warning counts as an alarm."""
    alarms: list[Alarm] = []
    prev_val: float | None = None
    prev_train: float | None = None
    for i, ep in enumerate(_epochs(views)):
        ev, v = ep.eval, ep.stats
        if v is None:
            continue
        step = ev.step
        r = v.index("inputs")
        if r is not None and (v.stats[r, COL["min"]] < -1 or v.stats[r, COL["max"]] > 1):
            alarms.append(Alarm(step, "input range"))
        lr = v.scalars.get("lr")
        if lr is not None and (lr > 0.01 or lr < 1e-7):
            alarms.append(Alarm(step, "learning rate"))
        loss = ep.loss
        if not math.isfinite(loss):
            alarms.append(Alarm(step, "NaN loss"))
        val = ev.eval_scalars.get("val_loss")
        if (
            val is not None
            and prev_val is not None
            and prev_train is not None
            and val > prev_val
            and loss <= prev_train
        ):
            alarms.append(Alarm(step, "overfitting"))
        vacc = ev.eval_scalars.get("val_accuracy")
        tacc = ep.accuracy
        if i >= 3 and vacc is not None and tacc is not None and (vacc > 0.95 or vacc - tacc > 0.05):
            alarms.append(Alarm(step, "check validation accuracy"))
        prev_val, prev_train = val, loss
    return alarms


BASELINES = {
    "AUTOTRAINER": autotrainer,
    "DeepDiagnosis": deepdiagnosis,
    "DeepLocalize": deeplocalize,
    "UMLAUT": umlaut,
}

# Category layouts used in the tables.
AT_CATEGORIES = ("VG", "EG", "DR", "OL", "SC", "NaN")
DD_CATEGORY = {
    "numerical error": "NaN",
    "dead node": "DR",
    "saturated activation": "SC",
    "vanishing gradient": "VG",
    "unchanged weight": "SC",
    "unchanged forward": "SC",
    "loss not decreasing": "SC",
    "accuracy not increasing": "SC",
    "NaN": "NaN",
    "zero": "DR",
    "unchanged": "SC",
    "input range": "EG",
    "learning rate": "SC",
    "NaN loss": "NaN",
    "overfitting": "OF",
    "check validation accuracy": "OF",
}
