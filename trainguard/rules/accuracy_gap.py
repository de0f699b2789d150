"""`accuracy_gap`: a training cross-entropy too low for the held-out accuracy the run records.

A cross-entropy bounds the accuracy of the predictions it scores: an example whose true class gets a probability
above 1/2 is the argmax, and by Markov's inequality at most a fraction L / ln 2 of the examples have -log p_y of
ln 2 or more, so a mean cross-entropy L over the training batches means a training accuracy of at least
1 - L / ln 2 (0.86 at a loss of 0.1). Label smoothing and penalties only raise the loss, so the bound stays true.
A held-out accuracy far below what the training loss guarantees says the model predicts its training batches from
something the held-out data do not give it: the answer leaks into the inputs (a causal mask inverted so each token
sees the ones it must predict, targets not shifted, a decoder fed the sequence it must output), or the model
memorises its few training examples. A healthy model's training accuracy is above its held-out one too, but by a
generalisation gap, not by most of the way from chance to 1.

The reading needs an accuracy (its chance level 1/K for the K outputs of the last dense layer:
`trainguard.rules.chance`) recorded in eval mode, and a loss that is a K-class cross-entropy: never negative
and starting where an untrained K-class classifier's does (at least `start_fraction` of ln K at the first step;
a squared error on one-hot targets starts near 1/K, a contrastive or cosine loss below 0). At each record of the
accuracy its latest `min_records` records (spanning at least `window_steps` steps) are compared with the mean
training loss over the same steps: the finding needs the accuracy's mean below 1 - L / ln 2 by `min_gap` of the
way from chance to 1 and by `significance` standard errors of the accuracy's own spread, at `confirm` records in
a row. Reported once per run.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base, chance, shared, shared_loss
from trainguard.rules.step_view import StepView

LN2 = math.log(2.0)


class AccuracyGap(base.Rule):
    name = "accuracy_gap"
    category = RuleCategory.GENERALISATION
    default_action = Action.NOTIFY
    every_step = True
    needs = "eval accuracy (a scalar named like val_acc, val_accuracy, top1)"
    summary = (
        "A held-out accuracy far below the training accuracy that the training cross-entropy guarantees "
        "(at least 1 - loss / ln 2): the training batches give the model an answer the held-out data do not."
    )
    hint = (
        "look for the answer leaking into the training inputs: a causal attention mask inverted or missing, "
        "targets not shifted against the inputs, a decoder fed the sequence it must predict; or a training set "
        "small enough to memorise"
    )

    class Params(base.Params):
        window_steps: int = Field(
            default=50, ge=1, description="Steps the accuracy's latest records span at least."
        )
        min_records: int = Field(
            default=4,
            ge=2,
            description="Records of the accuracy compared at once (its spread is read from them).",
        )
        min_gap: float = Field(
            default=0.1,
            gt=0,
            le=1,
            description="Fraction of the way from chance level (1/K) to 1 by which the accuracy must lie below "
            "1 - loss / ln 2. On the detection benchmarks' healthy classifiers and language models the accuracy "
            "lay at most 0.035 of the way below it; the leaking and memorising programs 0.13-0.96.",
        )
        significance: float = Field(
            default=3.0,
            ge=0,
            description="Standard errors of the accuracy's spread by which it must lie below.",
        )
        start_fraction: float = Field(
            default=0.5,
            ge=0,
            description="The first training loss must be at least this fraction of ln K (an untrained K-class "
            "classifier's cross-entropy) for the loss to be read as one.",
        )
        confirm: int = Field(
            default=2, ge=1, description="Records of the accuracy in a row at which it must hold."
        )
        loss_name: str | None = Field(
            default=None, description="Scalar to read; default `loss`, else the only scalar named *loss*."
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: AccuracyGap.Params = self.params  # type: ignore[assignment]
        self.read = shared_loss.LossReader(name=p.loss_name, single=True)
        self.classes: int | None = None
        self.first_loss: float | None = None
        self.negative = False
        """A loss below 0 was seen: no cross-entropy."""
        self.losses: list[tuple[int, float]] = []
        """(step, loss) since the oldest record of the accuracies' windows."""
        self.records: dict[str, list[tuple[int, float]]] = {}
        self.streak: dict[str, int] = {}
        self.reported = False

    def has_input(self, view: StepView) -> bool:
        return any(chance.chance_level(n, 2) for n in view.eval_scalars)

    def check(self, view: StepView) -> list[base.Finding]:
        p: AccuracyGap.Params = self.params  # type: ignore[assignment]
        if self.reported or self.negative:
            return []
        if view.names and self.classes is None:
            self.classes = shared.output_classes(view)
        loss = self.read(view)
        if loss is not None and math.isfinite(loss):
            if loss < 0:
                self.negative = True
                return []
            if self.first_loss is None:
                self.first_loss = loss
            self.losses.append((view.step, loss))
        k = self.classes
        if k is None or self.first_loss is None or self.first_loss < p.start_fraction * math.log(k):
            self._trim()
            return []
        for name, x in view.eval_scalars.items():
            level = chance.chance_level(name, k)
            if not level or not math.isfinite(x):
                continue
            rows = self.records.setdefault(name, [])
            rows.append((view.step, float(x)))
            while len(rows) > p.min_records and rows[-1][0] - rows[1][0] + 1 >= p.window_steps:
                del rows[0]
            found = self._judge(view, name, level, p)
            self.streak[name] = self.streak.get(name, 0) + 1 if found is not None else 0
            if found is not None and self.streak[name] >= p.confirm:
                self.reported = True
                return [found]
        self._trim()
        return []

    def _trim(self) -> None:
        oldest = min((rows[0][0] for rows in self.records.values()), default=None)
        if oldest is None:
            del self.losses[:-1]
        else:
            self.losses = [(s, x) for s, x in self.losses if s >= oldest]

    def _judge(self, view: StepView, name: str, level: float, p: AccuracyGap.Params) -> base.Finding | None:
        rows = self.records[name]
        if len(rows) < p.min_records or rows[-1][0] - rows[0][0] + 1 < p.window_steps:
            return None
        lows = [x for s, x in self.losses if rows[0][0] <= s <= rows[-1][0]]
        if len(lows) < p.min_records:
            return None
        loss = math.fsum(lows) / len(lows)
        bound = 1.0 - loss / LN2
        xs = [x for _, x in rows]
        mean = math.fsum(xs) / len(xs)
        se = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1) / len(xs))
        gap = (bound - mean) / (1.0 - level)
        if gap < p.min_gap or bound - mean < p.significance * se:
            return None
        msg = (
            f"the eval accuracy {name!r} averaged {base.fmt(mean)} over its latest {len(xs)} records (steps "
            f"{rows[0][0]}-{rows[-1][0]}), while the training cross-entropy averaged {base.fmt(loss)} over the same "
            f"steps, which means a training accuracy of at least 1 - loss / ln 2 = {base.fmt(bound)}: the held-out "
            f"accuracy lies {base.fmt(gap)} of the way from chance level 1/{self.classes} to 1 below it (at least "
            f"{base.fmt(p.min_gap)}) {self.where(view)}: the training batches give the model an answer the "
            "held-out data do not"
        )
        return self.finding(view, msg, tensor=name, value=mean, threshold=bound)

    def get_state(self) -> dict[str, Any]:
        return {
            "classes": self.classes,
            "first_loss": self.first_loss,
            "negative": self.negative,
            "losses": [list(r) for r in self.losses],
            "records": {k: [list(r) for r in v] for k, v in self.records.items()},
            "streak": dict(self.streak),
            "reported": self.reported,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.classes = state.get("classes")
        first = state.get("first_loss")
        self.first_loss = None if first is None else float(first)
        self.negative = bool(state.get("negative", False))
        self.losses = [(int(s), float(x)) for s, x in state.get("losses", [])]
        self.records = {k: [(int(s), float(x)) for s, x in v] for k, v in state.get("records", {}).items()}
        self.streak = {k: int(v) for k, v in state.get("streak", {}).items()}
        self.reported = bool(state.get("reported", False))
