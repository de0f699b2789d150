"""`unchanged_tensor`: trainable parameters that do not move ("blind zones"), per layer and per unit.

A parameter is unchanged at a view when ||dW|| (`update_l2`, measured since the previous saved
step) is at most atol * sqrt(n) + rtol * ||W||, the l2 form of SageMaker's np.allclose test; by
default both are 0, so only an exact standstill counts. It is reported after `num_steps` such
views in a row. Views where no watched parameter moved (lr 0
during warmup, a loss-scaler skipping a step) do not count, so only layers left behind are named;
nor do views whose recorded learning rate a schedule took below 1% of its peak.
But no watched parameter moving at all for `standstill_steps` training steps in a row while the
recorded learning rate is above 0 is reported too: the optimizer steps and nothing changes (zero_grad
called between backward and step, an optimizer built over parameters the model no longer uses).

Per unit, on Tier-1 views, from the vectors `units[("moved", <parameter>)]`: the share of each
unit's elements (row of dim 0) that changed since the previous saved step. A unit whose row stayed
exactly unchanged while other units of the same layer moved is frozen at that view, unless a dead
unit explains it (its output's or input's ReLU-family activation, next or previous in forward order
and as wide, fired on fewer than 1% of samples: no gradient reaches that row, and `dead_relu`
reports the layer), or unless the gradient explains it: a row whose gradient is exactly zero has
nothing to move it (an embedding row no batch sampled, in a recommender with Zipf-distributed item
ids most of them), so at a view where the share of the parameter's gradient elements that are
exactly zero covers the share of frozen units, none counts as frozen; an embedding table with a
sparse gradient (no statistics recorded) cannot tell, and its still rows do not count. A row with a gradient that
still does not move (a row-wise learning rate of 0, an optimizer masking it) is what counts. A layer is
reported when more than `unit_fraction` percent of its units were frozen for `num_steps` Tier-1
views in a row (a gradient mask, a detached slice, a row-wise learning rate of 0). A view where
the whole layer stood still is left to the per-layer check and neither counts nor resets; NaN (no
previous copy yet) neither. The default 10% also leaves alone the few units of a healthy deep net
that stop moving without a dead activation to explain them (no `active` vector, e.g. a tanh layer
or Adam's vanishing moments).

A parameter whose gradient is stale (`stale_gradient`: the same gradient, at most rescaled by a clip, at two
views in a row) is unused by this loss and held by no optimizer (its zero_grad would clear it): a pretraining
head kept on a model fine-tuned through another head. Nor does a parameter of no layer (a bare
`nn.Parameter` of the model, the catalogue naming no module) that has had no gradient at any view while
others had one: the loss never reached it (learned task weights defined for a loss variant the run does not
use). A layer's parameter without a gradient (a trunk whose output was detached) still counts. Nor does a parameter
whose recorded gradient is exactly zero beside a ReLU activation whose outputs were all zero at that view
(`parameter_use.behind_dead_activation`): the dead activation starves it, and `dead_relu` names that layer.

Two still parameters that design may explain get an info-level notice, once per parameter, instead of a
warning (`parameter_use`, from the gradient record): one that had a gradient at an earlier view and has none
now (its module skipped by the forward pass at these steps: an expert the router sent no inputs), and one in
the last block of a repeated stack that never had a gradient while its module ran, the same parameter of every
earlier block and the rest of its own block had one (the last block's output path feeds nothing: a WaveNet's
last residual projection). The second cannot be told from that one output dropped by mistake, and the notice
says so; a whole block cut off, or a slot that no block's gradient reaches, still warns. Any other still
parameter at the same view is reported as before.

An optimizer that ends its own steps (`SELF_STOPPING`: L-BFGS returns without a step once its gradient or the
change of its loss falls below `tolerance_grad` / `tolerance_change`, or its line search finds no decrease) stands still
when it has converged. Such a standstill gets an info-level notice instead of the warning when the records show a fixed
point: every watched parameter is updated by such an optimizer (the catalogue's optimizer class, format 2.5), the
parameters moved at an earlier saved step, and every recorded gradient norm and the loss are bitwise the same at each
saved step of the standstill (the same weights and the same full batch give the same gradient, and the optimizer makes
the same decision: nothing left to do). The bug class the standstill finds keeps its warning: gradients that change
while the weights stand still (an L-BFGS closure that never zeroes them accumulates a growing gradient; mini-batches give
a new one at every step), a standstill from the start, or an optimizer that steps whenever it has a gradient.

Where the run records the optimizer's parameter groups (format 2.5, `group_rates`), a parameter whose own
group's learning rate is 0, or below `lowered_lr_fraction` of that group's peak, is not watched (frozen by
design: a backbone given to the optimizer at lr 0, layer-wise decay down to 0); a finding says how many it
left out, and no watched parameter left means no standstill.

A warning says what the gradient record shows about the parameters it names (`gradient_evidence`), with a hint to
match: no gradient recorded for them while another parameter has one (the backward pass does not reach them: a
`.detach()` between them and the loss); a gradient exactly zero in every element beside a tanh or sigmoid whose every
output sits at its bound (a saturated activation passes back nothing: inputs far too large); every recorded gradient
exactly zero, the output layer's included (an operation between the output and the loss with a zero derivative: a
ReLU or clamp on the output with every input below zero, round, argmax); or a non-zero gradient the optimizer does not
apply. A run that records no gradients says none of these, and the standstill's hint (the order zero_grad, backward,
step) stands.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory, Severity
from trainguard.rules import base, parameter_use, shared
from trainguard.rules.group_rates import GroupRates
from trainguard.rules.stale_gradient import StaleGradients
from trainguard.rules.step_view import COL, StepView

_WEIGHTS = (Collection.WEIGHTS.value,)
MOVED = "moved"
"""The Tier-1 per-unit kind read here (`store.run_format.UNIT_KINDS`): share of each unit's row that changed."""
_FIRST_UNITS = 5
"""How many indices of frozen units a finding names."""
_ACTIVE = "active"
_DEAD_PERCENT = 1.0
"""A unit active on fewer than this percent of samples is dead (dead_relu's default `threshold_inactivity`)."""
SELF_STOPPING = frozenset({"LBFGS"})
"""Optimizer classes that end a step without moving when they have converged (tolerances, a failed line search)."""


class UnchangedTensor(base.Rule):
    name = "unchanged_tensor"
    category = RuleCategory.WEIGHTS
    default_action = Action.NOTIFY
    training_views_only = True
    summary = "Trainable layers whose parameters stop moving while the others train (frozen by mistake, blind zones)."
    hint = (
        "check that the optimizer was given this parameter (model.parameters() after building every layer), "
        "that it gets a gradient (not detached, not behind a dead unit), and its learning rate"
    )

    class Params(base.Params):
        num_steps: int = Field(
            default=3, ge=1, description="Report after this many evaluated views in a row without a change."
        )
        residue_ratio: float = Field(
            default=1e-6,
            ge=0,
            description="A still parameter whose gradient l2 is at most this share of the largest other gradient's "
            "is one the loss does not depend on (its gradient a rounding residue: a bias that a softmax or a "
            "normalisation cancels): noted at info level, not reported. A GE2E speaker loss's similarity bias "
            "under SGD: 3e-9 to 2e-8 against 1-3 (the detection benchmarks' eleventh blind split); 0: off.",
        )
        rtol: float = Field(
            default=0.0,
            ge=0,
            description="Relative tolerance: a change below rtol * ||W|| counts as none (SageMaker: 1e-5; 0 here, "
            "since a converged layer moves by 1e-6 of its norm and is not frozen).",
        )
        atol: float = Field(
            default=0.0,
            ge=0,
            description="Absolute tolerance per element: a change below atol * sqrt(n) counts as none (SageMaker: 1e-8).",
        )
        lowered_lr_fraction: float | None = shared.lowered_lr_fraction(
            0.01,
            "Views neither count nor reset",
            why="at the end of a cosine schedule an update below float32's resolution leaves a weight bitwise "
            "unchanged (a final LayerNorm's weights near 1 under AdamW at 1e-5 of its peak learning rate) while "
            "smaller weights still move",
            otherwise="count them regardless",
        )
        standstill_steps: int | None = Field(
            default=30,
            ge=1,
            description="Report when no watched trainable parameter moved for this many training steps in a row while "
            "the recorded learning rate is above 0 (a loss scaler skips a few steps, never this many in a row). "
            "None: off.",
        )
        unit_fraction: float = Field(
            default=10.0,
            ge=0,
            le=100,
            description="Per unit (Tier-1 `moved` vectors): report a layer when more than this percent of its units "
            "(rows of dim 0) stayed exactly unchanged for `num_steps` Tier-1 views in a row while its other units "
            "moved; 100 turns the per-unit check off.",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.streak = shared.RowState(0.0)
        self._counting = False
        self.unit_streak: dict[str, np.ndarray] = {}
        """Tier-1 views in a row each unit of a layer was frozen while the layer moved, by parameter name."""
        self._watched: tuple[np.ndarray | None, frozenset[str]] = (None, frozenset())
        self._row_of: tuple[tuple[str, ...] | None, dict[str, int]] = (None, {})
        self.lr = shared.PeakLearningRate()
        self.still_from: int | None = None
        """The training step after which no watched parameter has moved (None while something moves)."""
        self.last_step: int | None = None
        self.standstill_reported = False
        self.moved_once = False
        """Whether a watched parameter has moved at any saved step so far."""
        self.fixed_point: tuple[float, ...] | None = None
        """While standing still: the gradient norms and loss of the standstill's first view, kept while every later view
        repeats them bitwise (the evidence of a converged self-stopping optimizer); None otherwise."""
        self.converged_noted = False
        """Whether the info-level notice of a converged standstill was given."""
        self.fixed_loss: float | None = None
        """The loss the standstill's views recorded (all the same while `fixed_point` holds)."""
        self.fixed_views = 0
        """Views of the standstill after its first that repeated `fixed_point`."""
        self.stale = StaleGradients()
        self.unused: set[str] = set()
        """Parameters whose gradient was stale at the latest view."""
        self.reach = parameter_use.GradientReach()
        self.hinted: set[str] = set()
        self.residues: set[str] = set()
        """Still parameters whose gradient has read as a rounding residue (`_residue`): an exact zero later is one too."""
        """Parameters already named by a notice (the info-level finding of a standstill that design explains)."""
        self.groups = GroupRates()
        self.at_rest = 0
        """Trainable parameters left out at the latest view: their group's learning rate is 0 (or lowered)."""

    def check(self, view: StepView) -> list[base.Finding]:
        p: UnchangedTensor.Params = self.params  # type: ignore[assignment]
        self.lr.push(view)
        self.unused = self.stale.update(view) | self._never_reached(view)
        if p.lowered_lr_fraction is not None and self.lr.lowered(p.lowered_lr_fraction):
            return []  # the schedule took the learning rate near 0: standing still is expected
        self.groups.push(view)
        rows = self.rows(view, default_collections=_WEIGHTS, trainable=True)
        at_rest = self.groups.by_design(view, rows, p.lowered_lr_fraction)
        self.at_rest = int(at_rest.sum())
        if self.at_rest:
            rows = rows[~at_rest]  # frozen by design: their group's learning rate is 0
        if not len(rows):
            return []
        still = self._standstill(view, rows, p)
        if still:
            return still
        found = self._layers(view, rows)
        if view.units and shared.has_units(view, MOVED):
            found += self._units(view, rows)
        return found

    def _never_reached(self, view: StepView) -> set[str]:
        """Parameters of no layer that have had no gradient at any view so far, at a view recording gradients."""
        if not self.reach.push(view):
            return set()
        weights = Collection.WEIGHTS.value
        return {
            m.name
            for m in view.meta
            if m.module is None
            and m.trainable
            and m.collection == weights
            and self.reach.never_reached(m.name)
        }

    def _standstill(self, view: StepView, rows: np.ndarray, p: Params) -> list[base.Finding]:
        """No watched parameter moved for `standstill_steps` steps while the learning rate is above 0; once."""
        previous, self.last_step = self.last_step, view.step
        upd = view.stats[rows, COL["update_l2"]]
        measured = np.isfinite(upd)
        lr = self.lr.current
        if not measured.any() or previous is None or (lr is not None and lr <= 0):
            self.still_from = None
            return []
        if bool((upd[measured] > 0).any()):
            self.still_from, self.moved_once = None, True
            return []
        self._track_fixed_point(view, rows, starting=self.still_from is None)
        self.still_from = previous if self.still_from is None else self.still_from
        span = view.step - self.still_from
        if p.standstill_steps is None or span < p.standstill_steps or self.standstill_reported:
            return []
        if self._converged(
            view, rows
        ):  # noted once; a gradient that changes later ends the fixed point and warns
            noted, self.converged_noted = self.converged_noted, True
            return [] if noted else [self._converged_notice(view, rows, span, lr)]
        self.standstill_reported = True
        why, why_hint = gradient_evidence(view, [view.names[int(i)] for i in rows])
        msg = (
            f"{view.names[int(rows[0])]}: none of the {len(rows)} trainable tensors changed in the last {span} steps "
            f"{self.where(view)}{f' at learning rate {base.fmt(lr)}' if lr is not None else ''}: the optimizer steps "
            f"and nothing moves{why}"
        )
        hint = why_hint or (
            "check the order zero_grad(), backward(), step() (zero_grad between backward and step throws the "
            "gradients away) and that the optimizer holds the model's parameters (one built before a layer was "
            "replaced holds the old one)"
        )
        return [self.finding(view, msg, tensor=view.names[int(rows[0])], value=float(span),
                             threshold=float(p.standstill_steps), hint=hint)]  # fmt: skip

    def _track_fixed_point(self, view: StepView, rows: np.ndarray, starting: bool) -> None:
        """Keep `fixed_point` while the watched parameters' gradient norms and the loss (where a view records it) repeat
        bitwise view to view; drop it at the first difference."""
        row_of = self._row_of_name(view)
        grads = [row_of.get(f"grad/{view.names[int(i)]}") for i in rows]
        loss = view.scalars.get("loss")
        now = tuple(float(view.stats[g, COL["l2"]]) for g in grads if g is not None)
        if starting:
            self.fixed_point, self.fixed_loss, self.fixed_views = now, loss, 0
        elif self.fixed_point == now and (loss is None or self.fixed_loss in (None, loss)):
            self.fixed_views += 1
            self.fixed_loss = loss if loss is not None else self.fixed_loss
        else:
            self.fixed_point = None
        if None in grads:
            self.fixed_point = None  # a parameter without a gradient record: no evidence

    def _converged(self, view: StepView, rows: np.ndarray) -> bool:
        """Whether the standstill is a self-stopping optimizer's fixed point (see the module docstring)."""
        return (
            self.moved_once
            and self.fixed_point is not None
            and self.fixed_views >= 1
            and all(view.meta[int(i)].optimizer in SELF_STOPPING for i in rows)
        )

    def _converged_notice(
        self, view: StepView, rows: np.ndarray, span: int, lr: float | None
    ) -> base.Finding:
        name = view.names[int(rows[0])]
        optimizer = view.meta[int(rows[0])].optimizer
        msg = (
            f"{name}: none of the {len(rows)} trainable tensors changed in the last {span} steps {self.where(view)}"
            f"{f' at learning rate {base.fmt(lr)}' if lr is not None else ''}, after they moved earlier; their "
            f"optimizer ({optimizer}) ends a step without moving once it has converged, and the gradients and loss are "
            f"bitwise the same at each of the last {self.fixed_views + 1} saved steps: a fixed point (it met its "
            "tolerance_grad / tolerance_change, or its line search finds no decrease), nothing left to do"
        )
        hint = "if the loss should still fall, lower tolerance_change / tolerance_grad or restart with a fresh history"
        found = self.finding(view, msg, tensor=name, value=float(span), hint=hint)
        return replace(found, severity=Severity.INFO)

    def _units(self, view: StepView, rows: np.ndarray) -> list[base.Finding]:
        """The per-unit check of a Tier-1 view: layers with more than `unit_fraction`% of units frozen for `num_steps` views."""
        p: UnchangedTensor.Params = self.params  # type: ignore[assignment]
        if self._watched[0] is not rows:
            self._watched = (rows, frozenset(view.names[int(i)] for i in rows))
        watched = self._watched[1]
        layers = [(name, vec) for (k, name), vec in view.units.items() if k == MOVED and name in watched]
        if not any(bool((vec > 0).any()) for _, vec in layers):
            return []  # nothing moved at all: a skipped step (or nothing measured yet)
        hits: list[tuple[str, np.ndarray, float]] = []
        for name, vec in layers:
            moving = vec > 0
            if not vec.size or not moving.any():
                continue  # the whole layer stood still (the per-layer check's case) or was not measured
            streak = self.unit_streak.get(name)
            if streak is None or streak.shape != vec.shape:
                streak = np.zeros(vec.shape)
            # a unit whose activation never fires gets no gradient: dead_relu's, not a blind zone here
            frozen_now = vec == 0
            dead = self._dead_units(view, name, vec.size)
            if dead is not None:
                frozen_now &= ~dead
            if self._zero_gradient_covers(view, name, float(frozen_now.mean())):
                frozen_now[:] = False  # rows nothing reached this step (never-sampled embedding rows)
                streak = np.zeros(vec.shape)
            streak = np.where(frozen_now, streak + 1, np.where(moving, 0.0, streak))  # NaN: neither
            if dead is not None:
                streak[dead] = 0.0
            self.unit_streak[name] = streak
            frozen = np.flatnonzero(streak >= p.num_steps)
            share = 100.0 * frozen.size / vec.size
            if frozen.size and share > p.unit_fraction:
                hits.append((name, frozen, share))
        if not hits:
            return []
        name, frozen, share = hits[0]
        first = ", ".join(str(int(u)) for u in frozen[:_FIRST_UNITS]) + (
            ", ..." if frozen.size > _FIRST_UNITS else ""
        )
        others = f"; {len(hits) - 1} more layers alike" if len(hits) > 1 else ""
        msg = (
            f"{name}{shared.per_shard(view, name)}: {frozen.size} of {self.unit_streak[name].size} units ({base.fmt(share)}%, above "
            f"{base.fmt(p.unit_fraction)}%) unchanged for at least {p.num_steps} Tier-1 steps in a row while the layer's "
            f"other units train {self.where(view)} (units {first}){others}"
        )
        return [self.finding(view, msg, tensor=name, value=share, threshold=p.unit_fraction)]

    def _zero_gradient_covers(self, view: StepView, name: str, frozen_share: float) -> bool:
        """Whether at least `frozen_share` of the gradient of parameter `name` is exactly zero at this view (0.5
        percentage points of slack: a frozen row's gradient is zero in every element). A lookup table whose gradient
        has no statistics (a sparse gradient, `nn.Embedding(sparse=True)`) cannot tell unsampled rows from frozen
        ones, so its still rows count as unsampled."""
        if not frozen_share:
            return False
        row_of = self._row_of_name(view)
        i = row_of.get(f"grad/{name}")
        if i is None:
            w = row_of.get(name)
            return w is not None and view.meta[w].module_type in shared.LOOKUP_TABLES
        count, zero = view.stats[i, COL["count"]], view.stats[i, COL["zero"]]
        return bool(count > 0 and zero / count + 0.005 >= frozen_share)

    def _row_of_name(self, view: StepView) -> dict[str, int]:
        if self._row_of[0] is not view.names:
            self._row_of = (view.names, {n: k for k, n in enumerate(view.names)})
        return self._row_of[1]

    def _dead_units(self, view: StepView, name: str, units: int) -> np.ndarray | None:
        """The units of parameter `name` explained by a dead activation (active on fewer than 1% of samples):
        that of its output (the first ReLU-family output at or after its module in forward order) or of its
        input (the last one before it: a layout `x @ W` keeps the inputs in dim 0), each when it has as many
        units. None when neither is known."""
        row_of = self._row_of_name(view)
        i = row_of.get(name)
        order = view.meta[i].order if i is not None else None
        if order is None:
            return None
        module = view.meta[i].module  # type: ignore[index]
        after: tuple[tuple[int, bool], np.ndarray] | None = None
        before: tuple[int, np.ndarray] | None = None
        for (kind, act), vec in view.units.items():
            j = row_of.get(act) if kind == _ACTIVE and vec.size == units else None
            act_order = view.meta[j].order if j is not None else None
            if act_order is None:
                continue
            if act_order >= order:
                key = (act_order, view.meta[j].module != module)  # type: ignore[index]
                if after is None or key < after[0]:
                    after = (key, vec)
            elif before is None or act_order > before[0]:
                before = (act_order, vec)
        dead = [
            v * 100.0 < _DEAD_PERCENT
            for v in (after[1] if after else None, before[1] if before else None)
            if v is not None
        ]
        return np.logical_or.reduce(dead) if dead else None

    def _layers(self, view: StepView, rows: np.ndarray) -> list[base.Finding]:
        """The per-layer check: parameters whose update_l2 is (about) 0 while others move."""
        p: UnchangedTensor.Params = self.params  # type: ignore[assignment]
        upd = view.stats[rows, COL["update_l2"]]
        if p.rtol == 0 and p.atol == 0:
            moved, still = upd > 0, upd == 0
        else:
            tol = p.rtol * view.stats[rows, COL["l2"]] + p.atol * np.sqrt(view.stats[rows, COL["count"]])
            moved, still = upd > tol, upd <= tol  # NaN (not measured) is neither
        if self.unused:
            still &= np.asarray([view.names[int(i)] not in self.unused for i in rows])
        if not moved.any():
            return []  # nothing moved (or nothing measured): a skipped step, not a blind zone
        if still.any():  # a zero gradient behind a dead ReLU: dead_relu names the layer
            starved = parameter_use.behind_dead_activation(view, (view.names[int(i)] for i in rows[still]))
            if starved:
                still &= np.asarray([view.names[int(i)] not in starved for i in rows])
        if not still.any() and not self._counting:
            return []  # the common case: every layer moved and no streak is running
        streak = self.streak.align(view, rows)
        streak = np.where(still, streak + 1, np.where(moved, 0.0, streak))
        self.streak.values = streak
        self._counting = bool(streak.any())
        hit = np.flatnonzero(streak >= p.num_steps)
        if not hit.size:
            return []
        why = {int(k): self._by_design(view, view.names[int(rows[k])]) for k in hit}
        unexplained = [k for k in why if why[k] is None]
        if not unexplained:
            return self._notice(view, rows, hit, streak, upd, why)
        k = unexplained[0]
        i = int(rows[k])
        name = view.names[i]
        evidence, hint = gradient_evidence(view, [view.names[int(rows[j])] for j in unexplained])
        msg = (
            f"{name}: parameter unchanged for {int(streak[k])} saved steps in a row (limit {p.num_steps}; "
            f"||dW|| {base.fmt(upd[k])}, "
            f"||W|| {base.fmt(view.stats[i, COL['l2']])}) while other layers train {self.where(view)} "
            f"({hit.size} of {len(rows)} trainable tensors"
            f"{f'; {self.at_rest} more whose group learning rate is 0 are not watched' if self.at_rest else ''}){evidence}"
        )
        return [
            self.finding(
                view, msg, tensor=name, value=float(streak[k]), threshold=float(p.num_steps), hint=hint
            )
        ]

    def _by_design(self, view: StepView, name: str) -> str | None:
        """What in the gradient record explains a still parameter without a fault, or None (`parameter_use`)."""
        stack = self.reach.unused_last_block(view, name)
        if stack is not None:
            return (
                f"no gradient has reached it since the start, while the same parameter of the earlier blocks of "
                f"{stack} and the rest of its own block get one: the last block's output path feeds nothing (by "
                "design in a WaveNet-style stack, where only the last block's skip path reaches the output), or that "
                "one output is dropped by mistake; the records cannot tell which"
            )
        if self.reach.skipped(name):
            return (
                "it had a gradient at an earlier saved step and has none now: the forward pass skipped its module at "
                "these steps (an expert the router sent no inputs, a branch not taken)"
            )
        return self._residue(view, name)

    def _residue(self, view: StepView, name: str) -> str | None:
        """Its gradient is a rounding residue beside the largest other (`residue_ratio`): the loss does not depend
        on it. A residue rounds to exactly zero at some steps: an exact zero counts once a non-zero residue was seen."""
        ratio = self.params.residue_ratio  # type: ignore[attr-defined]
        own = view.index(parameter_use.GRAD_PREFIX + name)
        if not ratio or own is None:
            return None
        l2 = view.stats[:, COL["l2"]]
        grads = [
            k
            for k, n in enumerate(view.names)
            if n.startswith(parameter_use.GRAD_PREFIX) and k != own and np.isfinite(l2[k])
        ]
        g = float(l2[own])
        top = float(l2[grads].max()) if grads else 0.0
        if not (np.isfinite(g) and top > 0 and g <= ratio * top and (g > 0 or name in self.residues)):
            return (
                None  # an exact zero is a residue only after a non-zero one: else the zero readings say why
            )
        self.residues.add(name)
        return (
            f"its gradient (l2 {base.fmt(g)}) is a rounding residue, {base.fmt(g / top)} of the largest other one "
            f"({base.fmt(top)}): the loss does not depend on it (a bias that a softmax or a normalisation cancels), "
            "and a step that small does not move it in float32"
        )

    def _notice(
        self,
        view: StepView,
        rows: np.ndarray,
        hit: np.ndarray,
        streak: np.ndarray,
        upd: np.ndarray,
        why: dict[int, str | None],
    ) -> list[base.Finding]:
        """An info-level finding, once per parameter, for still parameters that design may explain."""
        fresh = [k for k in why if view.names[int(rows[k])] not in self.hinted]
        if not fresh:
            return []
        k = fresh[0]
        name = view.names[int(rows[k])]
        self.hinted.add(name)
        msg = (
            f"{name}: parameter unchanged for {int(streak[k])} saved steps in a row (||dW|| {base.fmt(upd[k])}) "
            f"{self.where(view)} ({hit.size} of {len(rows)} trainable tensors); {why[k]}"
        )
        hint = "if the model should use this parameter at every step, check what its module's output feeds"
        found = self.finding(view, msg, tensor=name, value=float(streak[k]), hint=hint)
        return [replace(found, severity=Severity.INFO)]

    def get_state(self) -> dict[str, Any]:
        return {
            "streak": self.streak.get_state(),
            "unit_streak": {name: [int(x) for x in s] for name, s in self.unit_streak.items()},
            **self.lr.get_state(),
            **self.stale.get_state(),
            **self.groups.get_state(),
            **self.reach.get_state(),
            "hinted": sorted(self.hinted),
            "residues": sorted(self.residues),
            "still_from": self.still_from,
            "last_step": self.last_step,
            "standstill_reported": self.standstill_reported,
            "moved_once": self.moved_once,
            "fixed_point": list(self.fixed_point) if self.fixed_point is not None else None,
            "fixed_loss": self.fixed_loss,
            "converged_noted": self.converged_noted,
            "fixed_views": self.fixed_views,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.streak.set_state(state.get("streak", {}))
        self.unit_streak = {
            name: np.asarray(s, np.float64) for name, s in state.get("unit_streak", {}).items()
        }
        self._counting = any(v > 0 for v in state.get("streak", {}).values())
        self.lr.set_state(state)
        self.stale.set_state(state)
        self.groups.set_state(state)
        self.reach.set_state(state)
        self.hinted = set(state.get("hinted", []))
        self.residues = set(state.get("residues", []))
        self.still_from = state.get("still_from")
        self.last_step = state.get("last_step")
        self.standstill_reported = bool(state.get("standstill_reported", False))
        self.moved_once = bool(state.get("moved_once", False))
        fixed = state.get("fixed_point")
        self.fixed_point = tuple(float(x) for x in fixed) if fixed is not None else None
        self.fixed_loss = state.get("fixed_loss")
        self.converged_noted = bool(state.get("converged_noted", False))
        self.fixed_views = int(state.get("fixed_views", 0))


_CUT_HINT = (
    "find what stops the backward pass before these parameters: a .detach() or .data between them and the loss, a "
    "tensor rebuilt outside autograd (.item(), numpy, torch.tensor(...)), or a layer the forward pass does not use; "
    "a part frozen on purpose belongs in no optimizer group, or in one with learning rate 0"
)
_SATURATED_HINT = (
    "the inputs of the saturated activation are far too large: check what feeds it (a recurrence or product that "
    "grows at every step, inputs not normalised, a scale applied twice)"
)
_ZERO_OUTPUT_HINT = (
    "look at what lies between the model's output and the loss: a ReLU or clamp on the output (a signed target needs "
    "none), round, argmax or a comparison; each passes back a zero gradient"
)


def gradient_evidence(view: StepView, names: list[str]) -> tuple[str, str | None]:
    """What the gradient record says about the still parameters `names` at this view, as a clause for the finding's
    message and a hint in place of the rule's own (None: keep it); ("", None) where the view records no gradient, or
    none of the readings below holds for all of them.

    - None of them has a gradient recorded while another parameter has a non-zero one: the backward pass does not
      reach them (a `.detach()` between them and the loss).
    - Each one's gradient is exactly zero in every element: beside a bounded activation (tanh, sigmoid) whose every
      output sits at its bound, at or after them in forward order, the saturation passes back nothing; with no
      non-zero gradient anywhere in the view, the output layer's included, an operation between the output and the
      loss has a zero derivative (a ReLU or clamp on the output with every input below zero, round, argmax);
      otherwise something between them and the loss has one.
    - Each one's gradient is non-zero: the optimizer does not apply it.
    """
    row = {n: k for k, n in enumerate(view.names)}
    grads = [k for k, n in enumerate(view.names) if n.startswith(parameter_use.GRAD_PREFIX)]
    if not grads or not names:
        return "", None
    stats = view.stats
    l2, count, zero = COL["l2"], COL["count"], COL["zero"]
    own = [row.get(parameter_use.GRAD_PREFIX + n) for n in names]
    mine = [g for g in own if g is not None]
    live = [k for k in grads if k not in mine and np.isfinite(stats[k, l2]) and stats[k, l2] > 0]
    one = len(names) == 1
    they, zeroed = ("it", "its gradient is") if one else ("them", "their gradients are")
    clause: str
    hint: str | None = None
    if not mine:
        if not live:
            return "", None
        other = view.names[live[0]].removeprefix(parameter_use.GRAD_PREFIX)
        clause = (
            f"; no gradient is recorded for {they} while {other} has one (l2 {base.fmt(float(stats[live[0], l2]))}): "
            f"the backward pass does not reach {they}"
        )
        return clause, _CUT_HINT
    if len(mine) < len(own):
        return "", None  # some with a gradient record, some without: no one reading for all
    if not all(stats[g, count] > 0 and stats[g, zero] == stats[g, count] for g in mine):
        if not all(np.isfinite(stats[g, l2]) and stats[g, l2] > 0 for g in mine):
            return "", None
        clause = (
            f"; {'its' if one else 'their'} gradient is not zero (l2 {base.fmt(float(stats[mine[0], l2]))}"
            f"{'' if one else f' for {names[0]}'}): the optimizer does not apply it"
        )
        return clause, None
    saturated = _saturated_after(view, names)
    if saturated is not None:
        clause = (
            f"; {zeroed} exactly zero in every element, with {saturated[0]} ({saturated[1]}) saturated in every "
            "element (each output at its bound): a saturated activation passes back no gradient"
        )
        hint = _SATURATED_HINT
    elif not live:
        clause = (
            f"; {zeroed} exactly zero in every element, as is every recorded gradient, the output layer's included: "
            "the loss reaches the model's output through an operation whose derivative is zero there"
        )
        hint = _ZERO_OUTPUT_HINT
    else:
        clause = (
            f"; {zeroed} exactly zero in every element while other parameters get one: something between {they} and "
            "the loss has a zero derivative"
        )
    return clause, hint


def _saturated_after(view: StepView, names: list[str]) -> tuple[str, str] | None:
    """A recorded bounded activation (`BOUNDED`) whose every output sits at its bound (mean |output| equal to it), at
    or after the first of parameters `names` in forward order where the catalogue gives orders: (name, kind)."""
    row = {n: k for k, n in enumerate(view.names)}
    orders = [o for n in names if (k := row.get(n)) is not None and (o := view.meta[k].order) is not None]
    first = min(orders) if orders else None
    acts = Collection.ACTIVATIONS.value
    for k, m in enumerate(view.meta):
        bound = shared.BOUNDED.get(m.activation or "")
        if m.collection != acts or bound is None or view.stats[k, COL["count"]] <= 0:
            continue
        if first is not None and m.order is not None and m.order < first:
            continue
        if view.stats[k, COL["abs_mean"]] >= bound:
            return view.names[k], str(m.activation)
    return None
