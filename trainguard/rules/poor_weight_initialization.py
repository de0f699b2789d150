"""`poor_weight_initialization`: checks at the start of training, each done once.

On the first view with weights: the weights before the first optimizer update where the run has them
(the PyTorch hook's initial-weights record, rows `init/<name>`: `StepView.initial`), else the first
rows, which a hook took after that update (older runs, other capture tools; the message says which, since
a large first update, from a learning rate far too high, moves them far from the init). Each kernel's
std against the standard targets for its shape
(LeCun, He, Glorot, PyTorch's default; both fan conventions): a kernel far above them is reported,
except where the module's class (the catalogue's `module_type`) says the convention is not fan-based:
embedding tables (N(0, 1) in PyTorch, 0.02 in GPT-2) and the hidden-to-hidden matrices of recurrent
layers (orthogonal or identity, as in an IRNN); and where the gradient says a bare `nn.Parameter` is a table read
by index (`parameter_use.read_by_index`: whole rows' worth of its gradient exactly zero at that view, not all of it,
as in a sampled-softmax output table or one tied to an embedding), judged as the embedding it is. A bare parameter
shaped to broadcast over the batch (`parameter_use.broadcast_token`: three or more dimensions, the leading one 1, as
a learned query or CLS token [1, 1, d] or a positional table [1, n, d]) is no kernel and not checked at all: tokens
start at N(0, 1) or N(0, 0.02) by convention. Any other parameter a module of the user's own declares
(`parameter_use.own_parameter`: a bare parameter whose owner's class is recorded and is no `torch.nn` kernel layer,
as a positional table [n, d] added to the activations) has no class to say it is a kernel: it is held to the widest
convention, N(0, 1) (`TOKEN_STD`), where that is above its fan-based target, and is never reported as too small. A
hand-written kernel drawn from plain randn is then not told from a table drawn the same way; one drawn far beyond
N(0, 1) still is reported, and a capture without module classes has its bare parameters judged as kernels. And
kernels whose every element had one sign in the initial-weights record (a draw from a one-sided range:
`nn.init.uniform_(w)` at its default bounds [0, 1)); and with `std_ratio_min` set, kernels far below when most of
them are (one small layer is usually on purpose); whole kernels that are exactly zero (not a lookup table of one column: a per-row bias,
zero by convention like any bias), when at least one of them gets no gradient at that view (or none is
recorded): a zero kernel whose own gradient is not zero moves off zero at the first update (LoRA's B
beside its random A, a zero-initialised output layer), while two zero kernels in a row, or two zero
factor tables, starve each other's gradient; and (SageMaker's check) the spread of
activation-input variances across layers. On the first view with activations: an unbounded
activation (ReLU family, GELU, SiLU) whose std is above `activation_std_max`: with inputs near unit
scale and any standard init they stay near 1, so one in the hundreds means the inputs are far from
it (raw units, pixels in 0-255). On the first loss: its distance from ln K for a K-class
problem when `num_classes` is given (Karpathy's check).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory
from trainguard.rules import base, parameter_use, shared, shared_loss
from trainguard.rules.step_view import COL, StepView, TensorMeta

_WEIGHTS = (Collection.WEIGHTS.value,)
NOT_FAN_BASED = shared.LOOKUP_TABLES
"""Module classes whose weights follow no fan-based init convention (a lookup table has no fan-in)."""
TOKEN_STD = 1.0
"""The largest init convention for a parameter no layer class calls a kernel (`parameter_use.own_parameter`): N(0, 1),
`nn.Embedding`'s default and the usual draw of positional tables, CLS tokens and learned queries (N(0, 0.02), GPT-2's,
is the smallest)."""
RECURRENT = frozenset({"RNN", "GRU", "LSTM", "RNNCell", "GRUCell", "LSTMCell"})
"""Module classes whose hidden-to-hidden matrices (`weight_hh*`) start orthogonal or as the identity."""


def fan_based(meta: TensorMeta) -> bool:
    """Whether a weight's init is judged against fan-based targets, from its module's class: not an embedding
    table, nor a recurrent layer's hidden-to-hidden matrix (orthogonal or identity by convention)."""
    if meta.module_type in NOT_FAN_BASED:
        return False
    return not (meta.module_type in RECURRENT and meta.name.rsplit(".", 1)[-1].startswith("weight_hh"))


def bias_table(meta: TensorMeta) -> bool:
    """Whether a weight is a lookup table of one column: a per-row bias (a recommender's user and item biases),
    which starts at zero as any bias does and gets its gradient whatever its value."""
    return meta.module_type in NOT_FAN_BASED and len(meta.shape) == 2 and meta.shape[1] == 1


def std_targets(shape: tuple[int, ...]) -> tuple[float, float]:
    """(lowest, highest) standard init std for a kernel of `shape` ([out, in, *kernel] or [in, out])."""
    receptive = math.prod(shape[2:]) if len(shape) > 2 else 1
    targets = []
    for fan_in, fan_out in (
        (shape[1] * receptive, shape[0] * receptive),
        (shape[0] * receptive, shape[1] * receptive),
    ):
        targets += [
            math.sqrt(1.0 / fan_in),  # LeCun
            math.sqrt(2.0 / fan_in),  # He (Kaiming) for ReLU
            math.sqrt(2.0 / (fan_in + fan_out)),  # Glorot (Xavier)
            math.sqrt(1.0 / (3.0 * fan_in)),  # PyTorch's default kaiming_uniform(a=sqrt(5)) for Linear/Conv
        ]
        if len(shape) > 2:
            break  # conv kernels have one convention
    return min(targets), max(targets)


AFTER_UPDATE_HINT = (
    "these weights were read after the first optimizer update, so a learning rate far too high looks the same: "
    "check it too"
)
"""Added to the hint of a finding on weights read after the first update (a run without the initial-weights record)."""


def _gets_gradient(view: StepView, name: str) -> bool:
    """Whether the view records a gradient for parameter `name` that is not exactly zero (unknown counts as none)."""
    j = view.index(f"grad/{name}")
    if j is None:
        return False
    g = float(view.stats[j, COL["l2"]])
    return math.isfinite(g) and g > 0


def _when(before: bool) -> str:
    """What weights a finding judged: before the first optimizer update (the run's initial-weights record), or
    after it (a run without one)."""
    if before:
        return "(before the first update)"
    return "(after the first update: the run has no record of the weights before it)"


class PoorWeightInitialization(base.Rule):
    name = "poor_weight_initialization"
    example_params: ClassVar[Mapping[str, Any]] = {"num_classes": 100}
    """For the state round-trip test: a 100-class output layer, so the short test model's scaled weights count as too large."""
    category = RuleCategory.WEIGHTS
    default_action = Action.NOTIFY
    summary = (
        "At the start: kernel std far from He/Glorot/LeCun targets, all-zero or one-signed kernels, initial loss far "
        "from ln K."
    )
    hint = "initialise kernels with He (ReLU) or Glorot (tanh/sigmoid) scaling and check the output layer and the loss"

    class Params(base.Params):
        steps: int = Field(
            default=10,
            ge=1,
            description="SageMaker's steps: checks run only on views within this many steps of start_step.",
        )
        std_ratio_min: float | None = Field(
            default=None,
            gt=0,
            description="A kernel's std below this times the smallest standard target is too small (e.g. 0.5). "
            "Off by default: normalised nets train well from small inits (GPT-2's 0.02 is under half of PyTorch's "
            "default below 200 features, its residual projections smaller still) and a deep unnormalised net "
            "started too small is reported by vanishing_gradient when it matters.",
        )
        small_share: float = Field(
            default=0.5,
            ge=0,
            lt=1,
            description="The small side is reported when more than this share of the checked kernels is below it: "
            "one small layer is usually on purpose (GPT-2's residual projections at 0.02/sqrt(2 n_layer), a "
            "policy head at gain 0.01, a positional table at 0.02) and harmless behind a residual connection; "
            "most of them small starve the signal. 0: each kernel on its own.",
        )
        std_ratio_max: float = Field(
            default=2.0,
            gt=0,
            description="A kernel's std above this times the largest standard target is too large.",
        )
        exclude_regex: str | None = Field(
            default=None,
            description="Weights (by name) not checked against fan-based targets, beside the module classes that are "
            "never checked (embeddings, recurrent hidden-to-hidden matrices: `module_type` in the catalogue).",
        )
        all_zero_min_layers: int = Field(
            default=2,
            ge=1,
            description="Report all-zero kernels when at least this many exist (one zero-initialised layer, as in LoRA or "
            "zero-init residual branches, still trains; two in a row block the gradient).",
        )
        one_signed_min_elements: int | None = Field(
            default=16,
            ge=1,
            description="Report the kernels whose every element has one sign before the first update (the run's "
            "initial-weights record), among fan-based kernels of at least this many elements: a symmetric init gives "
            "each element either sign with probability 1/2, so all of one sign is a draw from a one-sided range "
            "(`nn.init.uniform_(w)` with its default bounds [0, 1)). Over the 7,292 stored runs of the detection "
            "suites with the record, the only such kernels were those of three bugs drawing from [0, 1) (12 runs); "
            "no healthy run has one. None: off.",
        )
        activation_std_max: float | None = Field(
            default=50.0,
            gt=0,
            description="On the first view with activations, an unbounded activation (ReLU family, GELU, SiLU) whose std "
            "is above this means unnormalised inputs (or a first layer initialised far too large): healthy runs of the "
            "realistic PyTorch suite stay below 1, inputs in raw units x1000 reach 395. None: off.",
        )
        num_classes: int | None = Field(
            default=None, ge=2, description="K for the initial-loss check against ln K (off when unset)."
        )
        init_loss_tolerance: float = Field(
            default=0.5,
            gt=0,
            description="Relative distance |loss0 - ln K| / ln K above which the initial loss is wrong.",
        )
        threshold: float = Field(
            default=10.0,
            gt=1,
            description="SageMaker's threshold: max/min variance across activation inputs above which init is poor.",
        )
        activation_inputs_regex: str = Field(
            default=".*relu_input",
            description="SageMaker's activation_inputs_regex: activations compared by `threshold`.",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: PoorWeightInitialization.Params = self.params  # type: ignore[assignment]
        self.exclude = re.compile(p.exclude_regex) if p.exclude_regex else None
        self.act_inputs = re.compile(p.activation_inputs_regex)
        self.loss = shared_loss.LossReader()
        self.weights_done = False
        self.loss_done = False
        self.scale_done = False

    def check(self, view: StepView) -> list[base.Finding]:
        p: PoorWeightInitialization.Params = self.params  # type: ignore[assignment]
        if view.step > p.start_step + p.steps:
            return []
        out: list[base.Finding] = []
        if not self.weights_done:
            rows = [
                int(i)
                for i in self.rows(view, default_collections=_WEIGHTS)
                if len(view.meta[i].shape) >= 2
                and not bias_table(view.meta[int(i)])
                and not parameter_use.broadcast_token(view.meta[int(i)])
            ]
            if rows:
                self.weights_done = True
                out += self._check_weights(view, rows, p)
                out += self._check_activations(view, p)
        if not self.scale_done and p.activation_std_max is not None:
            out += self._check_activation_scale(view, p.activation_std_max)
        if not self.loss_done and p.num_classes is not None:
            loss = self.loss(view)
            if loss is not None:
                self.loss_done = True
                out += self._check_loss(view, loss, p.num_classes, p)
        return out

    def _check_weights(self, view: StepView, rows: list[int], p: Params) -> list[base.Finding]:
        out = []
        # each kernel's statistics before the first update (its initial-weights record) where the view has them
        initial = {i: view.initial(view.names[i]) for i in rows}
        at = {i: i if j is None else j for i, j in initial.items()}
        zero = [i for i in rows if view.stats[at[i], COL["zero"]] == view.stats[at[i], COL["count"]]]
        starved = [i for i in zero if not _gets_gradient(view, view.names[i])]
        if len(zero) >= min(p.all_zero_min_layers, len(rows)) and starved:
            names = ", ".join(view.names[i] for i in zero[:5]) + (" ..." if len(zero) > 5 else "")
            msg = (
                f"{view.names[zero[0]]}: {len(zero)} of {len(rows)} kernels are entirely zero "
                f"{_when(initial[zero[0]] is not None)} ({names}; {len(starved)} of them without a gradient: "
                f"{view.names[starved[0]]}) {self.where(view)}"
            )
            out.append(
                self.finding(
                    view,
                    msg,
                    tensor=view.names[zero[0]],
                    value=float(len(zero)),
                    threshold=float(p.all_zero_min_layers),
                )
            )
        checked = [
            i
            for i in rows
            if i not in zero
            and fan_based(view.meta[i])
            and not parameter_use.read_by_index(view, view.meta[i])
            and not (self.exclude is not None and self.exclude.search(view.names[i]))
        ]
        out += self._one_signed(view, checked, initial, p)
        small: list[
            tuple[float, int, float, float]
        ] = []  # (std / the smallest target, row, std, that target)
        judged_small = [i for i in checked if not parameter_use.own_parameter(view.meta[i])]
        for i in checked:
            std = float(view.stats[at[i], COL["std"]])
            low, high = std_targets(view.meta[i].shape)
            before = initial[i] is not None
            own = parameter_use.own_parameter(view.meta[i])
            if own and high < TOKEN_STD:
                high = TOKEN_STD  # a table or token drawn from N(0, 1), as an embedding is, is no kernel too large
            if std > p.std_ratio_max * high:
                out.append(self._std_finding(view, i, std, "above", high, p.std_ratio_max, before, own=own))
            elif p.std_ratio_min is not None and not own and std < p.std_ratio_min * low:
                small.append((std / low, i, std, low))
        if small and p.std_ratio_min is not None and len(small) > p.small_share * len(judged_small):
            _, i, std, low = min(small)
            note = (
                f"{len(small)} of {len(judged_small)} kernels are below it" if len(judged_small) > 1 else ""
            )
            out.append(
                self._std_finding(view, i, std, "below", low, p.std_ratio_min, initial[i] is not None, note)
            )
        return out

    def _one_signed(
        self, view: StepView, rows: list[int], initial: dict[int, int | None], p: Params
    ) -> list[base.Finding]:
        """One finding for the kernels of `rows` whose every element had one sign in their initial-weights record,
        naming the first; none when there are none or the check is off (kernels without the record are not judged)."""
        if p.one_signed_min_elements is None:
            return []
        # a user's own parameter may be one-signed by design (a Bayesian layer's rho at -5 in every element)
        rows = [i for i in rows if initial[i] is not None and not parameter_use.own_parameter(view.meta[i])]
        hits = []
        for i in rows:
            st = view.stats[initial[i]]
            n = float(st[COL["count"]])
            if n >= p.one_signed_min_elements and (st[COL["min"]] >= 0 or st[COL["max"]] <= 0):
                hits.append(i)
        if not hits:
            return []
        i, st = hits[0], view.stats[initial[hits[0]]]
        sign = "non-negative" if st[COL["min"]] >= 0 else "non-positive"
        others = f", as are {len(hits) - 1} more of the {len(rows)} kernels" if len(hits) > 1 else ""
        msg = (
            f"{view.names[i]}: every one of its {int(st[COL['count']])} elements is {sign} before the first update "
            f"(min {base.fmt(float(st[COL['min']]))}, max {base.fmt(float(st[COL['max']]))}, mean "
            f"{base.fmt(float(st[COL['mean']]))}){others} {self.where(view)}: a symmetric init gives each element "
            "either sign, so all of one sign is a draw from a one-sided range"
        )
        hint = (
            "give the init its bounds: nn.init.uniform_(w) draws from [0, 1) by default (uniform_(w, -b, b)), or use "
            "kaiming_uniform_ / xavier_uniform_ as the layers do"
        )
        return [self.finding(view, msg, tensor=view.names[i], value=float(len(hits)), hint=hint)]

    def _std_finding(
        self,
        view: StepView,
        i: int,
        std: float,
        side: str,
        target: float,
        ratio: float,
        before: bool,
        note: str = "",
        *,
        own: bool = False,
    ) -> base.Finding:
        what = (
            f"init convention {base.fmt(target)} (N(0, 1), as an embedding's, or a kernel's fan-based target) for "
            f"a parameter of {view.meta[i].module_type}'s own of shape"
            if own
            else f"standard target {base.fmt(target)} for shape"
        )
        msg = (
            f"{view.names[i]}: initial std {base.fmt(std)} {_when(before)} is {base.fmt(std / target)}x the "
            f"{'smallest' if side == 'below' else 'largest'} {what} "
            f"{list(view.meta[i].shape)}, {side} the bound {base.fmt(ratio * target)} (x{base.fmt(ratio)})"
            f"{f' ({note})' if note else ''} "
            f"{self.where(view)}"
        )
        hint = None if before else f"{self.hint}; {AFTER_UPDATE_HINT}"
        return self.finding(view, msg, tensor=view.names[i], value=std, threshold=ratio * target, hint=hint)

    def _check_activation_scale(self, view: StepView, limit: float) -> list[base.Finding]:
        """The first view with unbounded activations: the first one (in forward order) whose std is above `limit`."""
        rows = [
            int(i)
            for i in view.rows(collections=[Collection.ACTIVATIONS.value])
            if view.meta[int(i)].activation in shared.UNBOUNDED
        ]
        if not rows:
            return []
        self.scale_done = True
        std = view.stats[rows, COL["std"]]
        high = [k for k, s in enumerate(std.tolist()) if math.isfinite(s) and s > limit]
        if not high:
            return []
        i = rows[high[0]]
        msg = (
            f"{view.names[i]}: activation std {base.fmt(float(std[high[0]]))} at the start is above {base.fmt(limit)} "
            f"{self.where(view)} ({len(high)} of {len(rows)} activations): the inputs are far from unit scale, or a "
            "layer before it is initialised far too large"
        )
        hint = (
            "normalise the inputs (each feature to mean 0 and std 1, pixels to [0, 1] or standardised): raw units "
            "drive pre-activations to extremes, kill ReLUs and slow learning"
        )
        return [
            self.finding(
                view, msg, tensor=view.names[i], value=float(std[high[0]]), threshold=limit, hint=hint
            )
        ]

    def _check_activations(self, view: StepView, p: Params) -> list[base.Finding]:
        rows = [
            int(i)
            for i in view.rows(collections=[Collection.ACTIVATIONS.value])
            if self.act_inputs.search(view.names[i])
        ]
        if len(rows) < 2:
            return []
        std = view.stats[rows, COL["std"]]
        if not np.isfinite(std).all():
            return []  # non-finite activations are exploding_tensor's
        lo, hi = int(np.argmin(std)), int(np.argmax(std))
        var = [float(s) * float(s) for s in std]
        if var[lo] <= 0 or var[hi] / var[lo] <= p.threshold:
            return []
        msg = (
            f"{view.names[rows[lo]]}: activation-input variance {base.fmt(var[lo])} is {base.fmt(var[hi] / var[lo])}x smaller than "
            f"{view.names[rows[hi]]}'s ({base.fmt(var[hi])}), above the ratio {base.fmt(p.threshold)} {self.where(view)}"
        )
        return [
            self.finding(
                view, msg, tensor=view.names[rows[lo]], value=float(var[hi] / var[lo]), threshold=p.threshold
            )
        ]

    def _check_loss(self, view: StepView, loss: float, k: int, p: Params) -> list[base.Finding]:
        expected = math.log(k)
        off = abs(loss - expected) / expected
        if math.isfinite(off) and off <= p.init_loss_tolerance:
            return []
        msg = (
            f"loss: initial value {base.fmt(loss)} is {base.fmt(off * 100)}% away from ln {k} = {base.fmt(expected)}, "
            f"above the tolerance {base.fmt(p.init_loss_tolerance * 100)}% {self.where(view)}"
        )
        hint = (
            "a K-class softmax with small random init starts near ln K: check the output layer's scale and bias, "
            "that the loss takes logits (not probabilities), and that num_classes is right"
        )
        return [self.finding(view, msg, tensor="loss", value=loss, threshold=expected, hint=hint)]

    def get_state(self) -> dict[str, Any]:
        return {"weights_done": self.weights_done, "loss_done": self.loss_done, "scale_done": self.scale_done}

    def set_state(self, state: dict[str, Any]) -> None:
        self.weights_done = bool(state.get("weights_done", False))
        self.loss_done = bool(state.get("loss_done", False))
        self.scale_done = bool(state.get("scale_done", False))
