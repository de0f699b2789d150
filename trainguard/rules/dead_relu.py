"""`dead_relu`: layers where most ReLU units never fire, judged per unit, not per element.

Reads the Tier-1 vectors `units[("active", act/<module>)]`: the fraction of samples on which each
unit's output was positive. A unit is dead when that is below `threshold_inactivity` percent; a
layer when more than `threshold_layer` percent of its units are (SageMaker Debugger's parameters).
Naturally sparse layers (most elements zero, every unit alive somewhere) stay quiet.

Between Tier-1 steps a ReLU layer is judged from its zero count, by a bound rather than a guess:
if more than (100 - `threshold_layer`)% of the units were alive, each active on at least
`threshold_inactivity`% of the samples, at least (1 - L)·I of the outputs would be non-zero
(0.5% with the defaults). A layer with fewer non-zero outputs than that has more than
`threshold_layer`% dead units for certain, so a layer killed by a diverging step is reported within
two saved steps instead of two Tier-1 steps; a sparse-but-alive layer (60-80% zeros) is far from it.
A step whose zero counts prove nothing is skipped, not counted as healthy: the bound is one-sided.

Above `severe_layer` percent dead units (a layer killed by a diverging step: 99-100%) a layer is
reported at once. Between `threshold_layer` and `severe_layer` it is a soft symptom, reported only
while the training loss is not improving (the loss gate): a small dense layer of a healthy CNN under
Adam loses half its units while the loss keeps falling. A severely dead layer that produces under
`severe_min_share` percent of the watched ReLU outputs is judged by the gate too: a squeeze-excitation bottleneck of 3
units dies in healthy SE-CNNs, and its death shows in nothing the run records (the excitation becomes a constant that
the next layer's bias absorbs). Once the weights' norm has blown up (`after_blow_up`: a step far too large, as
`weight_update_ratio` judges it with its defaults), a layer past `threshold_layer` is reported without the gate: such a
step is what kills ReLUs, and the loss may go on falling on the units left. The hint names the input scale first when
the dead layer is the first ReLU-family activation in forward order (inputs far from unit scale).
Once at the start, a ReLU after the last dense layer of a K-class classifier (its first loss near
ln K, K from the catalogue's module classes) is reported: it clips the logits at 0.

Outputs clipped by a function rather than a module (`logits.clamp(min=0)`, `F.relu(out)`) have no
activation to read; they show in the output layer's gradients instead. An output unit whose every
sample is clipped gets exactly zero gradient: its bias gradient is 0 and so is its whole kernel row.
When the output layer's bias gradient has k exact zeros (0 < k < units) and its kernel gradient at
least k rows' worth, at `output_dead_views` saved views in a row, k output units are dead. Both
counts are exact, so noise cannot produce them together: a loss whose per-unit gradient can sum to 0
by chance (an L1 loss's signs balancing over an even batch) zeroes a bias entry now and then, never
the kernel row with it. Two settings produce the counts without a clip, and are told apart:
- outputs the loss never reads (one head per task of a multi-task or continual learner, outputs masked out of
  the loss) get exactly zero gradient from the first saved step on, while a clip needs the unit's outputs to
  have fallen below the bound for every sample, which an untrained layer's outputs have not: the units dead at
  the first saved view are taken as unread, and only units dead beyond that count are reported;
- a loss that does not change when one output is shifted by a constant (squared distances between embeddings,
  as in prototypical networks) gives the output bias a gradient that sums to zero: its entries are rounding
  residues, some exactly zero, and the kernel's zeros come from dead inputs, not whole rows. The reading needs
  the bias gradient's norm above `shift_invariant_ratio` of the kernel gradient's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory
from trainguard.rules import base, metric_progress, shared, shared_loss
from trainguard.rules.step_view import COL, StepView
from trainguard.rules.weight_update_ratio import WeightUpdateRatio

_ACTIVATIONS = (Collection.ACTIVATIONS.value,)
_METRIC_SIGNIFICANCE = 2.0
"""Record-to-record noise a held-out metric's gain must exceed to say the model learns (`loss_not_decreasing`'s)."""
_ZERO_WHEN_INACTIVE = frozenset({"relu", "relu6"})
"""Activations whose inactive outputs are exactly zero, so the zero count bounds the live units."""


class DeadRelu(base.Rule):
    name = "dead_relu"
    category = RuleCategory.ACTIVATIONS
    default_action = Action.NOTIFY
    summary = (
        "Layers where more than half the ReLU-family units are inactive on almost every sample (per unit)."
    )
    hint = (
        "lower the learning rate, check the biases and use He initialisation, add normalisation before the "
        "activation, or use LeakyReLU/GELU"
    )

    class Params(shared_loss.GatedParams):
        threshold_inactivity: float = Field(
            default=1.0,
            ge=0,
            le=100,
            description="A unit is dead when it is active on fewer than this percent of samples.",
        )
        threshold_layer: float = Field(
            default=50.0,
            ge=0,
            le=100,
            description="A layer is reported when more than this percent of its units are dead.",
        )
        severe_layer: float = Field(
            default=90.0,
            ge=0,
            le=100,
            description="Above this percent of dead units a layer is reported without the loss gate. On the realistic "
            "PyTorch suite every bug that kills ReLUs (a learning rate 20x too high, a loss summed over the batch, "
            "gradients accumulated without zero_grad) leaves 99-100% dead; healthy runs reach 53-56% (a 32-unit "
            "dense layer of a CNN under Adam) while their loss still falls.",
        )
        severe_min_share: float = Field(
            default=1.0,
            ge=0,
            le=100,
            description="A layer past `severe_layer` skips the loss gate only when it produces at least this percent "
            "of the ReLU outputs the rule watches (per sample, summed over the layers it reads). A squeeze-excitation "
            "bottleneck of 3 units fed by pooled channel means is on for every sample or for none, and dies in "
            "healthy SE-CNNs (0.06-0.13% of the outputs) with no consequence the loss shows: the excitation then "
            "scales the channels by a constant. The dead layers of the development splits' faults that skipped the "
            "gate produced 12.5-50% of them.",
        )
        check_output_activation: bool = Field(
            default=True,
            description="Report, once at the start, a ReLU after the last dense layer of a K-class classifier (its "
            "first loss within 10% of ln K; K from the module classes in the catalogue): it clips the logits.",
        )
        output_dead_views: int | None = Field(
            default=3,
            ge=1,
            description="Saved views in a row at which some, not all, of the output layer's units got exactly zero "
            "gradient (bias entry and whole kernel row) before they are reported as dead outputs (clipped by a "
            "function such as clamp(min=0), which the capture cannot see as a module). On the five detection "
            "suites' stored runs no healthy run had a single such view; logits clamped at zero had them at 26-30 of "
            "30 views, a ReLU module on the logits at 13-40 of 40, nll_loss on raw logits at 2 of 40 (never two in a "
            "row). None: off.",
        )
        shift_invariant_ratio: float = Field(
            default=1e-4,
            ge=0,
            description="The output bias gradient's norm must be above this fraction of the kernel gradient's for "
            "exact zeros in it to mean dead outputs: a loss invariant to shifting each output (distances between "
            "embeddings) leaves the bias only rounding residues (the ninth blind split's prototypical networks: "
            "6e-8 to 6e-7 of the kernel's; clamped logits and trained heads: 0.03-1).",
        )
        after_blow_up: bool = Field(
            default=True,
            description="Once the weights' total norm has blown up (`weight_update_ratio`'s blow-up with its defaults: "
            "the norm multiplying 2x or more between views after the fits and noise it tells apart), report a layer "
            "past `threshold_layer` without the loss gate. Over the twenty-fourth to thirty-fifth blind splits' stored "
            "runs, 6 runs of harmful dying-ReLU bugs (Adam at 1e-1, a positive weight of thousands, SGD's rate and "
            "momentum swapped, a rate times the batch size) had layers 84-94% dead at step 100-200 after a blow-up at "
            "step 0-100 while their loss still fell, and no finding of their kind; the two healthy runs it adds a "
            "finding to had warned of the blow-up already, and no other run of any stored split changed category.",
        )
        metric_learned_share: float | None = Field(
            default=0.2,
            gt=0,
            le=1,
            description="A layer between `threshold_layer` and `severe_layer` dead, with the loss gate open (not after "
            "a blow-up), is not reported while a recorded held-out quality metric has closed this share of the gap "
            "from its first record to its best score, by twice its record-to-record noise (`metric_progress`, as "
            "`loss_not_decreasing`'s stuck path reads it): the model learns, on the units left. The thirty-ninth "
            "blind split's healthy NIR-spectra classifiers lost 53-66% of a layer's units while their loss sat near "
            "its first value for 200 steps and their held-out AUC rose from 0.57-0.63 to 0.76-0.83. None: the loss alone decides.",
        )
        trigger_k: int = base.trigger_k(2)
        trigger_n: int = base.trigger_n(2)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: DeadRelu.Params = self.params  # type: ignore[assignment]
        self.blow_ups = (
            WeightUpdateRatio({"small_threshold": 0.0, "large_threshold": math.inf})
            if p.after_blow_up
            else None
        )
        """Reports the weights' blow-ups only (its update-ratio band is open on both sides), until the first."""
        self.blown: tuple[int, float] | None = None
        """(step, growth) of the first blow-up `blow_ups` reported."""
        self.metrics = metric_progress.MetricProgress()
        """The held-out quality metrics the run records: a learning one outweighs the loss gate (`metric_learned_share`)."""
        self._relu_of: tuple[np.ndarray | None, np.ndarray] = (None, np.zeros(0, dtype=np.intp))
        self._proved: list[tuple[int, float]] = []
        """(row, non-zero share) of the layers the zero bound proved dead in the view `applies` saw last."""
        self.gate = shared_loss.LossGate(self.params)  # type: ignore[arg-type]
        self.output_checked = False
        self._output: base.Finding | None = None
        self._first_relu: tuple[tuple[str, ...] | None, str | None] = (None, None)
        self.dead_outputs = 0
        """Saved views in a row at which some output units got exactly zero gradient."""
        self._dead_output: base.Finding | None = None
        self.unread: int | None = None
        """Output units without gradient at the first saved view with the output layer's gradients: not read by
        the loss (one head per task, masked outputs), since no clip has acted on an untrained layer yet."""

    def _relu_rows(self, view: StepView) -> np.ndarray:
        """The watched activation rows whose inactive outputs are exactly zero (cached per row set)."""
        rows = self.rows(view, default_collections=_ACTIVATIONS)
        if self._relu_of[0] is not rows:
            keep = [int(i) for i in rows if view.meta[int(i)].activation in _ZERO_WHEN_INACTIVE]
            self._relu_of = (rows, np.asarray(keep, dtype=np.intp))
        return self._relu_of[1]

    def _bound(self, layer_percent: float | None = None) -> float:
        """The non-zero share below which more than `layer_percent` (default `threshold_layer`) of the units are
        dead for certain."""
        p: DeadRelu.Params = self.params  # type: ignore[assignment]
        layer = p.threshold_layer if layer_percent is None else layer_percent
        return (1.0 - layer / 100.0) * p.threshold_inactivity / 100.0

    def _relu_on_logits(self, view: StepView) -> base.Finding | None:
        """Once, when the first loss and the layers are known: a ReLU after the last dense layer of a K-class classifier
        (its first loss near ln K) clips the logits at 0, so a class can only be told by positive evidence and every
        logit at 0 is a uniform guess (improper output activation)."""
        p: DeadRelu.Params = self.params  # type: ignore[assignment]
        first = self.gate.range.first
        layer = shared.output_layer(view)
        if first is None or layer is None:
            return None
        self.output_checked = True
        order, classes = layer
        if (
            not p.check_output_activation
            or classes < 2
            or abs(first - math.log(classes)) > 0.1 * math.log(classes)
        ):
            return None
        after = [int(i) for i in self._relu_rows(view) if (view.meta[int(i)].order or -1) > order]
        if not after:
            return None
        name = view.names[after[0]]
        msg = (
            f"{name}: a ReLU after the last dense layer clips the logits of a {classes}-class classifier at 0 (first "
            f"loss {base.fmt(first)}, ln {classes} = {base.fmt(math.log(classes))}) {self.where(view)}: a class can "
            "only be told by positive evidence, and samples whose logits are all 0 get a uniform guess"
        )
        hint = "remove the activation after the output layer: the loss takes raw logits"
        return self.finding(view, msg, tensor=name, hint=hint)

    def update(self, view: StepView) -> list[base.Finding]:
        """As any rule's, after reading the held-out metrics and watching the weights for a blow-up at every view
        (`after_blow_up`) until the first."""
        self.metrics.push(view)
        if self.blow_ups is not None and self.blown is None:
            found = self.blow_ups.update(view)
            if found and found[0].value is not None:
                self.blown = (found[0].step, found[0].value)
        return super().update(view)

    def _open(self) -> bool:
        """Whether a layer past `threshold_layer` is reported: the weights blew up, or the loss is not improving while
        no held-out metric says the model learns."""
        if self.blown is not None:
            return True
        share = self.params.metric_learned_share  # type: ignore[attr-defined]
        learning = share is not None and self.metrics.learned(share, _METRIC_SIGNIFICANCE) is not None
        return self.gate.open and not learning

    def _note(self) -> str:
        """What opened the gate, for the message: the loss (the gate's note) or the weights' blow-up."""
        if self.blown is None:
            return self.gate.note
        at, growth = self.blown
        return f" after the weights' norm grew {base.fmt(growth)}x by step {at} (a step far too large kills ReLUs)"

    def _reportable(self, dead_percent: float, share: float) -> bool:
        """A layer this dead is reported now: past `severe_layer` while it produces at least `severe_min_share` of the
        watched ReLU outputs (`share`, percent), or past `threshold_layer` with the gate open or after a blow-up."""
        p: DeadRelu.Params = self.params  # type: ignore[assignment]
        if dead_percent > p.severe_layer and share >= p.severe_min_share:
            return True
        return dead_percent > p.threshold_layer and self._open()

    def _share(self, view: StepView, name: str) -> float:
        """The percent of the watched ReLU outputs (per sample: the rows' element counts) that activation `name`
        produces; 100 when the view does not tell (no count for it): the layer is then judged as before."""
        rows = self._relu_rows(view)
        count = view.stats[rows, COL["count"]] if len(rows) else np.zeros(0)
        total = float(np.nansum(count))
        own = [float(count[k]) for k, i in enumerate(rows) if view.names[int(i)] == name]
        return 100.0 * own[0] / total if own and total > 0 and math.isfinite(own[0]) else 100.0

    def _hint(self, view: StepView, name: str) -> str | None:
        """The input-scale hint when `name` is the first ReLU-family activation in forward order, else the rule's."""
        if self._first_relu[0] is not view.names:
            rows = self._relu_rows(view)
            ordered = sorted(
                (view.meta[int(i)].order, view.names[int(i)])
                for i in rows
                if view.meta[int(i)].order is not None
            )
            self._first_relu = (view.names, ordered[0][1] if ordered else None)
        if name != self._first_relu[1]:
            return None
        return (
            "check the input scale first: features far from mean 0 and std 1 (raw units, pixels in 0-255) drive the "
            "first layer's pre-activations to extremes; then " + self.hint
        )

    def _dead_output_units(self, view: StepView) -> base.Finding | None:
        """The finding when some of the output layer's units have got exactly zero gradient (bias entry and kernel
        row) at `output_dead_views` saved views in a row; counts the views."""
        p: DeadRelu.Params = self.params  # type: ignore[assignment]
        grads = output_gradients(view) if p.output_dead_views is not None and view.names else None
        if grads is None:
            return None  # no gradients of the output layer in this view: the streak neither grows nor breaks
        kernel, bias = grads
        st = view.stats
        units, dead = int(st[bias, COL["count"]]), int(st[bias, COL["zero"]])
        finite = not st[[kernel, bias], COL["nan"]].any() and not st[[kernel, bias], COL["inf"]].any()
        per_unit = st[kernel, COL["count"]] / max(units, 1)
        rows = finite and 0 < dead < units and st[kernel, COL["zero"]] >= dead * per_unit
        if self.unread is None:
            self.unread = dead if rows else 0
        moved = st[bias, COL["l2"]] > p.shift_invariant_ratio * st[kernel, COL["l2"]]
        if not (rows and moved and dead > self.unread):
            self.dead_outputs = 0
            return None
        self.dead_outputs += 1
        if p.output_dead_views is None or self.dead_outputs < p.output_dead_views:
            return None
        name = view.names[bias]
        msg = (
            f"{name}: {dead} of {units} output units got exactly zero gradient (their bias entry and whole kernel row) "
            f"at {self.dead_outputs} saved steps in a row {self.where(view)}"
            f"{f' ({self.unread} of them since the first saved step: not read by the loss)' if self.unread else ''}"
            " while the others learn: those outputs "
            "are clipped for every sample (a clamp or ReLU applied to the outputs) and can no longer move"
        )
        hint = (
            "remove the clamp(min=0) / relu applied to the model's outputs: losses such as BCE-with-logits and cross "
            "entropy take raw logits; if outputs are masked out of the loss on purpose, this is expected"
        )
        return self.finding(view, msg, tensor=name, value=float(dead), hint=hint)

    def applies(self, view: StepView) -> bool:
        self.gate.push(view)
        if not self.output_checked and view.names:
            self._output = self._relu_on_logits(view)
            if self._output is not None:
                return True
        self._dead_output = self._dead_output_units(view)
        if self._dead_output is not None:
            return True
        if shared.has_units(view, "active"):
            return True
        rows = self._relu_rows(view)
        if not len(rows):
            return False
        count = view.stats[rows, COL["count"]]
        with np.errstate(divide="ignore", invalid="ignore"):
            nonzero = 1.0 - view.stats[rows, COL["zero"]] / count
        hit = np.flatnonzero((count > 0) & (nonzero < self._bound()))
        self._proved = [(int(rows[k]), float(nonzero[k])) for k in hit]
        return bool(self._proved)

    def check(self, view: StepView) -> list[base.Finding]:
        p: DeadRelu.Params = self.params  # type: ignore[assignment]
        if self._output is not None:
            found, self._output = self._output, None
            return [self.at_once(found)]
        outputs = (
            [self.at_once(self._dead_output)] if self._dead_output is not None else []
        )  # counted in a row already
        if not shared.has_units(view, "active"):
            return outputs + self._zero_bound_findings(view, p)
        out = outputs
        for name, active in shared.unit_layers(self, view, "active"):
            if not active.size:
                continue
            n = int(np.count_nonzero(active * 100.0 < p.threshold_inactivity))
            dead = 100.0 * n / active.size
            share = self._share(view, name) if dead > p.severe_layer else 100.0  # asked only where it decides
            if self._reportable(dead, share):
                note = "" if dead > p.severe_layer and share >= p.severe_min_share else self._note()
                msg = (
                    f"{name}{shared.per_shard(view, name)}: {n} of {active.size} units ({base.fmt(dead)}%) are active on fewer than "
                    f"{base.fmt(p.threshold_inactivity)}% of samples, above the threshold {base.fmt(p.threshold_layer)}% "
                    f"{self.where(view)}{note}"
                )
                out.append(self.finding(view, msg, tensor=name, value=dead, threshold=p.threshold_layer,
                                        hint=self._hint(view, name)))  # fmt: skip
        return out

    def _zero_bound_findings(self, view: StepView, p: Params) -> list[base.Finding]:
        """Between Tier-1 steps: the layers whose non-zero share proved most units dead (found by `applies`)."""
        out = []
        severe = self._bound(p.severe_layer)
        for i, nonzero in self._proved:
            name = view.names[i]
            gated = nonzero >= severe or self._share(view, name) < p.severe_min_share
            if gated and not self._open():
                continue  # proved past threshold_layer only, or a layer too small to matter: judged by the loss gate
            msg = (
                f"{name}: {base.fmt(nonzero * 100)}% of its outputs are non-zero, so more than "
                f"{base.fmt(p.threshold_layer)}% of its units are active on fewer than "
                f"{base.fmt(p.threshold_inactivity)}% of samples (were fewer dead, at least "
                f"{base.fmt(self._bound() * 100)}% would be non-zero) {self.where(view)}"
                f"{self._note() if gated else ''}"
            )
            out.append(
                self.finding(
                    view,
                    msg,
                    tensor=name,
                    value=100.0 * (1.0 - nonzero),
                    threshold=p.threshold_layer,
                    hint=self._hint(view, name),
                )
            )
        return out

    def get_state(self) -> dict[str, Any]:
        return {
            "gate": self.gate.get_state(),
            "output_checked": self.output_checked,
            "dead_outputs": self.dead_outputs,
            "unread": self.unread,
            "blown": None if self.blown is None else list(self.blown),
            "metrics": self.metrics.get_state(),
            "blow_ups": None if self.blow_ups is None else self.blow_ups.get_state(),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.gate.set_state(state.get("gate", {}))
        self.output_checked = bool(state.get("output_checked", False))
        self.dead_outputs = int(state.get("dead_outputs", 0))
        unread = state.get("unread")
        self.unread = None if unread is None else int(unread)
        self.metrics.set_state(state.get("metrics"))
        blown = state.get("blown")
        self.blown = None if blown is None else (int(blown[0]), float(blown[1]))
        if self.blow_ups is not None and state.get("blow_ups") is not None:
            self.blow_ups.set_state(state["blow_ups"])


def output_gradients(view: StepView) -> tuple[int, int] | None:
    """Rows of the output layer's kernel and bias gradients (the last dense or convolution kernel in forward order,
    as `shared.output_layer` finds it), or None when the view lacks either."""
    layer = shared.output_layer(view)
    if layer is None:
        return None
    order, units = layer
    kernel = bias = None
    for i in view.rows(collections=(Collection.GRADIENTS.value,)):
        m = view.meta[int(i)]
        if m.order != order or not m.shape or m.shape[0] != units:
            continue
        if len(m.shape) >= 2:
            kernel = int(i)
        elif len(m.shape) == 1:
            bias = int(i)
    return None if kernel is None or bias is None else (kernel, bias)
