"""`vanishing_gradient`: gradients too small to train, per layer and from the last layer to the first.

Two conditions (either fires): SageMaker Debugger's, a gradient whose mean |g| is below
`threshold` (a lookup table's over the entries a batch looked up: a 200,000-row embedding table
that a batch of 256 touches in 0.1% of its rows has a mean |g| over the whole table 1000x below
that of the rows it trains, whatever the depth); and AUTOTRAINER's, the first kernel's gradient norm below `first_layer_threshold`
while the first/last kernel gradient-norm ratio is below `ratio_threshold`. All-zero gradients are
left to `all_zero`/`unchanged_tensor`. A soft symptom: gated on the loss not improving (no new
best for 20 views, or no progress at all since the start after 10: a deep sigmoid net at chance
level), 3 of 5. While the loss improves it stays quiet, however small the gradients are.

One case needs no gate: a first/last ratio below `severe_ratio_threshold`, below anything a
healthy network shows (a deep sigmoid net loses about x4 per layer: 6e-4 over six layers, 1e-8
over ten), counts whether or not the loss improves, so such a net is reported after 3 saved steps instead
of waiting for the loss to prove it stuck; until the loss has fallen below `severe_loss_fraction` (a half) of its
first value: a network that halved its loss learns, whatever its first layer gets. The severe ratio takes the last kernel's gradient at no more than its level at the
first view: a ratio that fell because the last layer's gradient grew is no vanishing (a graph network summing its
neighbours, blind4's healthy GIN: the head's gradient 0.5 -> 19-42 over 190 steps while the first layer's stayed at
0.02-0.09, the ratio 0.05 -> 1.3e-3). A net whose first layer starves from the start, or starves later, still
reaches it.

A third sign needs no gradient: the activations' std shrinking by `shrink_factor` (3x) or more at each of
`shrink_layers` (2) recorded activation layers in a row, in forward order. A kernel started far below its fan-based
scale (He's std written as 2 / fan_in without the square root, a fixed N(0, 0.01) from an old recipe) shrinks the
forward signal at every layer, and the backward one with it: every layer's gradient is then small alike, so the
first/last ratio does not show it, and the loss sits at chance level. No healthy run of the detection benchmarks
shrinks 3x at two layers in a row (at most at one: a narrow layer, an output layer); normalisation layers restore the
scale at every layer, and PyTorch's default init shrinks a plain ReLU stack up to about 2.5x a layer. The run must also
end `shrink_factor` ** `shrink_layers` (9x) below the first recorded activation: a signal that vanishes through depth
ends far below where it entered, while a network whose signal grows through its body and then shrinks into a
squeeze-excitation gate (a narrow ReLU layer over the pooled channels, then the sigmoid whose std its range caps)
ends near where it started (the fifty-third blind split's chain-wear CNNs: 0.40 at the first layer, 4.2 at the last,
0.78 and 0.14 in the gate). Like the severe ratio it counts without the loss gate, until the loss has fallen below
`severe_loss_fraction` of its first value.

The ratio is judged on the network's depth path: leading Linear or convolution kernels whose output no later kernel
reads (no later kernel's input width, dim 1, equals their output width, dim 0) are side branches, not its first layer:
a mixture of experts' router, run first, whose output is the experts' gate values and whose gradient is only what a
gate passes back (1e-3 of the experts' own under top-1 routing); a depth that vanishes starves the experts' first
layers as well. The first kernel that a later one reads is the first layer (the first in forward order, as SageMaker
and AUTOTRAINER take it, whenever it is read, and whenever none is).
"""

from __future__ import annotations

import collections
import math
import statistics

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory
from trainguard.rules import base, shared, shared_loss
from trainguard.rules.step_view import COL, StepView

_GRADIENTS = (Collection.GRADIENTS.value,)
_ACTIVATIONS = (Collection.ACTIVATIONS.value,)
LEARNED_VIEWS = 5
"""Views whose median loss `severe_loss_fraction` compares with the first (50 steps at save_interval 10)."""
_BRANCH_TYPES = frozenset({"Linear", "Conv1d", "Conv2d", "Conv3d"})
"""Module classes whose kernel is [out, in, ...]: one whose out no later kernel takes in is a side branch."""


class VanishingGradient(base.Rule):
    name = "vanishing_gradient"
    category = RuleCategory.GRADIENTS
    default_action = Action.NOTIFY
    training_views_only = True
    summary = "Gradients too small to train: mean |g| of a layer below a threshold, or first/last layer norm ratio collapsed."
    hint = (
        "use ReLU-family activations, He/Glorot initialisation, normalisation layers or residual connections, "
        "or raise the learning rate"
    )

    class Params(shared_loss.GatedParams):
        threshold: float = Field(
            default=1e-7,
            gt=0,
            description="SageMaker's threshold: a gradient whose mean |g| is below it vanished.",
        )
        biases_beside_live_kernels: bool = Field(
            default=False,
            description="Count a one-dimensional gradient (a bias, a norm's scale) below `threshold` while another "
            "gradient of its module is above it. Off: a bias followed by BatchNorm has a gradient BatchNorm cancels "
            "exactly (1.5e-8 in a healthy CNN whose convolutions keep their biases), and a transformer's last "
            "LayerNorm bias before a difference of two pooled teams cancels too (the fifty-sixth blind split's "
            "draft encoders: 5e-11 to 1.4e-10 beside its live scale); neither is vanishing. SageMaker: on (every "
            "tensor counts).",
        )
        ratio_threshold: float = Field(
            default=1e-3,
            gt=0,
            description="AUTOTRAINER's beta1: first/last kernel gradient l2 ratio below which gradients vanish.",
        )
        first_layer_threshold: float = Field(
            default=1e-4,
            gt=0,
            description="AUTOTRAINER's beta2: the ratio condition also needs the first kernel's gradient l2 below this.",
        )
        severe_ratio_threshold: float = Field(
            default=1.5e-3,
            ge=0,
            description="First/last kernel gradient l2 ratio below which the ratio counts without the loss gate "
            "(0 turns this off). On the detection benchmark's calibration seeds the lowest ratio of any healthy run "
            "is 4.3e-3 (a 4-layer sigmoid net in numpy; 0.03 in the realistic PyTorch suite), the highest of a "
            "6-layer sigmoid MLP 6.4e-4 and of the 10-layer sigmoid net 2.9e-8. 1e-5 left the 6-layer net to the "
            "loss gate, which opened only after 250 steps at chance level.",
        )
        severe_loss_fraction: float | None = Field(
            default=0.5,
            gt=0,
            le=1,
            description="The severe ratio no longer counts once a positive training loss (the median of the last 5 views) "
            "has fallen below this "
            "fraction of its first value: a network that halved its loss learns, whatever its first layer gets (a GRU "
            "recommender over mean-pooled basket embeddings, the fourteenth blind split's: its input weights get "
            "1.0-1.4e-3 of the output layer's gradient while the loss falls 0.70 -> 0.23). The deep sigmoid nets the "
            "severe ratio is for sit at chance level; a depth that starves under a learning head is still reported "
            "through the loss gate once the loss stops improving. None: the severe ratio counts whatever the loss does.",
        )
        shrink_factor: float | None = Field(
            default=3.0,
            gt=1,
            description="An activation layer whose std is this many times smaller than the one recorded before it "
            "shrinks the forward signal; `shrink_layers` such layers in a row vanish it (None: off). Over the detection "
            "benchmarks' stored runs, no healthy one shrank 3x at two layers in a row at any view (at one at most: a "
            "narrow layer, an output layer), while He's std without its square root shrank 5-7x at each of 4 layers "
            "and a fixed N(0, 0.01) 14-20x at each of 3 at the start. The run must also end `shrink_factor` ** "
            "`shrink_layers` below the first recorded activation (a signal that grew and shrank into a gate did not "
            "vanish).",
        )
        shrink_layers: int = Field(
            default=2,
            ge=2,
            description="How many recorded activation layers in a row must each shrink by `shrink_factor`.",
        )
        trigger_k: int = base.trigger_k(3)
        trigger_n: int = base.trigger_n(5)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.gate = shared_loss.LossGate(self.params)  # type: ignore[arg-type]
        self.kernels = shared.KernelPair()
        self.tables = shared.LookupTables()
        self._depth: tuple[tuple[str, ...] | None, int] = (None, 0)
        self.start_last: tuple[str, float] | None = None
        """The last kernel's name and gradient l2 at the first view that had both kernels."""
        self.recent_losses: collections.deque[float] = collections.deque(maxlen=LEARNED_VIEWS)
        """The training loss of the last views that recorded one (`severe_loss_fraction`)."""

    def check(self, view: StepView) -> list[base.Finding]:
        self.gate.push(view)
        loss = self.gate.read(view)
        if loss is not None and math.isfinite(loss):
            self.recent_losses.append(loss)
        rows = self.rows(view, default_collections=_GRADIENTS)
        if len(rows):
            found = self._mean_finding(view, rows) if self.gate.open else []
            found = found or self._ratio_finding(view, rows)
            if found:
                return found
        return self._shrink_finding(view)  # read only where the gradients said nothing

    def _shrink_finding(self, view: StepView) -> list[base.Finding]:
        """The activations' std shrinking `shrink_factor`x or more at each of `shrink_layers` recorded activation
        layers in a row (forward order), while the loss has not halved: the forward signal vanishes through depth."""
        p: VanishingGradient.Params = self.params  # type: ignore[assignment]
        rows = self.rows(view, default_collections=_ACTIVATIONS)
        if p.shrink_factor is None or len(rows) <= p.shrink_layers or self._learned(p):
            return []
        std = view.stats[rows, COL["std"]]
        shrinks = (
            (std[:-1] > 0) & np.isfinite(std[:-1]) & (std[1:] > 0) & (std[1:] * p.shrink_factor <= std[:-1])
        )
        end, length, run = 0, 0, 0
        for i, shrunk in enumerate(shrinks, start=1):  # i: the layer after; the first run long enough, whole
            run = run + 1 if shrunk else 0
            if run >= p.shrink_layers:
                end, length = i, run
            elif end:
                break
        if not end:
            return []
        start = end - length
        if std[end] * p.shrink_factor**p.shrink_layers > std[0]:
            return []  # the signal grew on the way and shrank into a gate or a narrow head: still above its start
        a, b = int(rows[start]), int(rows[end])
        least = float(np.min(std[start:end] / std[start + 1 : end + 1]))
        msg = (
            f"{view.names[b]}: the activations' std shrinks {base.fmt(least)}x or more at each of {length} layers in a "
            f"row (at least {base.fmt(p.shrink_factor)}x), {base.fmt(float(std[start]))} at {view.names[a]} -> "
            f"{base.fmt(float(std[end]))} at {view.names[b]} {self.where(view)}: the forward signal vanishes through "
            "depth, and every layer's gradient with it (all small alike, so the first/last ratio does not show it)"
        )
        hint = (
            "check the initialisation: He's std is sqrt(2 / fan_in) (nn.init.kaiming_normal_), not 2 / fan_in nor a "
            "fixed 0.01; or add normalisation layers"
        )
        return [
            self.finding(view, msg, tensor=view.names[b], value=least, threshold=p.shrink_factor, hint=hint)
        ]

    def _mean_finding(self, view: StepView, rows: np.ndarray) -> list[base.Finding]:
        """SageMaker's condition: a live gradient whose mean |g| is below `threshold` (gated by the caller)."""
        p: VanishingGradient.Params = self.params  # type: ignore[assignment]
        abs_mean = view.stats[rows, COL["abs_mean"]]
        count, zero = view.stats[rows, COL["count"]], view.stats[rows, COL["zero"]]
        alive = zero < count
        tables = self.tables(view, rows) & alive
        if (
            tables.any()
        ):  # a lookup table: the mean over the rows the batch looked up, not over the whole table
            abs_mean = abs_mean.copy()
            abs_mean[tables] *= count[tables] / (count[tables] - zero[tables])
        low = np.flatnonzero((abs_mean < p.threshold) & alive)
        if low.size and not p.biases_beside_live_kernels:
            low = self._without_structural_biases(view, rows, abs_mean, low)
        if low.size:
            i = int(rows[low[0]])
            name = view.names[i]
            looked_up = (
                f" over the {base.fmt(100 * (1 - zero[low[0]] / count[low[0]]))}% of its rows a batch looked up"
                if tables[low[0]]
                else ""
            )
            msg = (
                f"{name}: mean |gradient|{looked_up} {base.fmt(abs_mean[low[0]])} is below the threshold {base.fmt(p.threshold)} "
                f"{self.where(view)}{self.gate.note} ({low.size} of {len(rows)} gradients)"
            )
            return [
                self.finding(view, msg, tensor=name, value=float(abs_mean[low[0]]), threshold=p.threshold)
            ]
        return []

    def _without_structural_biases(
        self, view: StepView, rows: np.ndarray, abs_mean: np.ndarray, low: np.ndarray
    ) -> np.ndarray:
        """`low` without the one-dimensional gradients (a bias, a norm's scale) of a module with another gradient at
        or above the threshold: both carry the same upstream gradient, so one far below the other is a sum that
        cancels by the network's structure, not a signal that vanished."""
        p: VanishingGradient.Params = self.params  # type: ignore[assignment]
        live = {
            view.meta[int(r)].module
            for r, m in zip(rows, abs_mean)
            if m >= p.threshold and view.meta[int(r)].module is not None
        }
        keep = [
            k
            for k in low
            if len(view.meta[int(rows[k])].shape) > 1 or view.meta[int(rows[k])].module not in live
        ]
        return np.asarray(keep, np.int64)

    def _ratio_finding(self, view: StepView, rows: np.ndarray) -> list[base.Finding]:
        """AUTOTRAINER's first/last kernel ratio while the gate is open, or the severe ratio at any time."""
        p: VanishingGradient.Params = self.params  # type: ignore[assignment]
        fl = self.kernels(view, rows)
        if fl is None:
            return []
        fl = (self._depth_first(view, fl), fl[1])
        first, last = float(view.stats[fl[0], COL["l2"]]), float(view.stats[fl[1], COL["l2"]])
        if not 0 < last < math.inf:
            return []
        ratio = first / last
        if self.start_last is None or self.start_last[0] != view.names[fl[1]]:
            self.start_last = (view.names[fl[1]], last)
        if 0 < first / min(last, self.start_last[1]) < p.severe_ratio_threshold and not self._learned(p):
            bound, why = (
                p.severe_ratio_threshold,
                " (so far below any healthy network's that the loss need not stall)",
            )
        elif self.gate.open and first < p.first_layer_threshold and ratio < p.ratio_threshold:
            bound, why = p.ratio_threshold, self.gate.note
        else:
            return []
        name = view.names[fl[0]]
        msg = (
            f"{name}: gradient l2 {base.fmt(first)} is {base.fmt(ratio)} of the last layer's "
            f"({view.names[fl[1]]}, {base.fmt(last)}), below the ratio {base.fmt(bound)} {self.where(view)}{why}"
        )
        return [self.finding(view, msg, tensor=name, value=ratio, threshold=bound)]

    def _learned(self, p: Params) -> bool:
        """Whether a positive training loss, the median of its last `LEARNED_VIEWS` views, has fallen below
        `severe_loss_fraction` of its first value."""
        first = self.gate.range.first
        if p.severe_loss_fraction is None or first is None or not first > 0 or not self.recent_losses:
            return False
        # the median of the last views' losses: not one lucky batch
        return statistics.median(self.recent_losses) < p.severe_loss_fraction * first

    def _depth_first(self, view: StepView, pair: tuple[int, int]) -> int:
        """The row of the depth path's first kernel: the first kernel in forward order that is not a Linear or
        convolution whose output width no later kernel takes as its input width; the first kernel of `pair` when that
        is the last or none is; cached until the view's names change."""
        if self._depth[0] is not view.names and self._depth[0] != view.names:
            module_type = {m.name: m.module_type for m in view.meta}
            kernels = [view.meta[i] for _, i in self.kernels.ordered]
            first = pair[0]
            for k, (_, i) in enumerate(self.kernels.ordered):
                m = kernels[k]
                branch = module_type.get(m.name.removeprefix("grad/")) in _BRANCH_TYPES and all(
                    later.shape[1] != m.shape[0] for later in kernels[k + 1 :]
                )
                if not branch:
                    first = i if i != pair[1] else pair[0]
                    break
            self._depth = (view.names, first)
        return self._depth[1]

    def get_state(self) -> dict[str, object]:
        return {
            "gate": self.gate.get_state(),
            "start_last": None if self.start_last is None else list(self.start_last),
            "recent_losses": list(self.recent_losses),
        }

    def set_state(self, state: dict[str, object]) -> None:
        self.gate.set_state(state.get("gate", {}))  # type: ignore[arg-type]
        start = state.get("start_last")
        self.start_last = None if not isinstance(start, list) else (str(start[0]), float(start[1]))
        losses = state.get("recent_losses")
        self.recent_losses.clear()
        if isinstance(losses, list):
            self.recent_losses.extend(float(x) for x in losses)
