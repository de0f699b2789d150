"""`gradient_not_applied`: parameters that get a gradient at every saved step while their weights never change.

A parameter whose gradient is computed (it requires one, and the loss reaches it) but that no optimizer
owns keeps its weights bitwise unchanged: layers unfrozen mid-run after the optimizer was built over the
parameters trainable at the start, a module added after the optimizer. The evidence is read, not inferred:
per parameter with both a gradient row (`grad/<name>`) and its weights' row, the weights' statistics (l2,
mean, std, min, max) exactly equal to those at the previous view holding them and its recorded update
(`update_l2`, where the hook tracks it) exactly zero, while the gradient is not
zero and other parameters with gradients moved between the same views (so the optimizer did step: a loss
scaler's skipped steps, lr 0 during a warmup, leave every parameter still and are not counted). A parameter
counts with its module: a module one of whose parameters moved is owned by an optimizer, and a still bias
beside a moving kernel got no gradient from it (a GAN's discriminator whose hinge loss gives its output bias
exactly zero; the gradient read at the end of the iteration is the generator's backward, which the
discriminator's optimizer never applies). A gradient
far smaller, relative to its weights, than those of the parameters that move (below `min_gradient_share` of
their median ||g|| / ||W||) can be too small to change a float32 weight (a deep sigmoid net's first layer)
and is not counted either. Reported once per parameter, after `num_views` such views in a row, naming the
others found at the same view. Views whose recorded learning rate a schedule took below
`lowered_lr_fraction` of its peak neither count nor reset (an update below float32's resolution).
Where the run records the optimizer's parameter groups (format 2.5, `group_rates`), a parameter whose own
group's learning rate is 0, or below `lowered_lr_fraction` of that group's peak, is still by design (a frozen
backbone given to the optimizer at lr 0, layer-wise decay down to 0) and not counted; a finding says how many
such parameters it left out.

A stale gradient (`stale_gradient`: the same gradient, at most rescaled by a clip, at two views in a row) is
no evidence either: no backward of this loop writes it and no optimizer zeroes it, so the parameter is unused
(a pretraining head kept on a model fine-tuned through another head); it neither counts nor is counted as moved.

Frozen parameters (`requires_grad` False) have no gradient and are not judged; the PyTorch hook reads the
gradient of a parameter frozen at registration once it is unfrozen, and not a stale one left from before it
was frozen again.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory
from trainguard.rules import base, shared
from trainguard.rules.group_rates import GroupRates
from trainguard.rules.stale_gradient import StaleGradients
from trainguard.rules.step_view import COL, StepView

_GRADIENTS = (Collection.GRADIENTS.value,)
_GRAD_PREFIX = "grad/"
_STILL = tuple(COL[c] for c in ("l2", "mean", "std", "min", "max"))
"""The weights' statistics that stay exactly equal when no element changed."""
_NAMED = 5
"""How many of the parameters found at one view a finding names."""


def _updated(view: StepView, j: int) -> bool:
    """Whether row `j`'s recorded update (`update_l2`, ||W - W at the previous saved step||) is above zero: some
    element changed, though an update below the resolution of the float32 statistics leaves them all equal
    (Adam whose second moment remembers gradients 1e5x larger moves a fitted SIREN's first layer by 1e-8). Exactly
    zero, or NaN (not tracked, the first saved step), says nothing more than the statistics."""
    upd = float(view.stats[j, COL["update_l2"]])
    return math.isfinite(upd) and upd > 0


class GradientNotApplied(base.Rule):
    name = "gradient_not_applied"
    category = RuleCategory.WEIGHTS
    default_action = Action.NOTIFY
    training_views_only = True
    summary = (
        "Parameters that get a gradient at every saved step while their weights never change and other "
        "parameters train (layers unfrozen after the optimizer was built, modules no optimizer owns)."
    )
    hint = (
        "give these parameters to the optimizer (build it after unfreezing, or optimizer.add_param_group when "
        "unfreezing), or freeze them with requires_grad_(False) if they are meant to stay as they are; weights kept "
        "in bfloat16 or float16 lose every update below their resolution (keep float32 master weights)"
    )

    class Params(base.Params):
        num_views: int = Field(
            default=3,
            ge=1,
            description="Views in a row at which a parameter's gradient is not zero and its weights did not change "
            "while other parameters moved, before it is reported (3: 30 steps at save_interval 10).",
        )
        min_gradient_share: float = Field(
            default=0.01,
            ge=0,
            description="A still parameter counts only while its ||g|| / ||W|| is at least this share of the median "
            "over the parameters that moved: a far smaller gradient may move a float32 weight by less than its "
            "resolution (a deep sigmoid net's first layer gets 1e-5 of its last's).",
        )
        lowered_lr_fraction: float | None = shared.lowered_lr_fraction(
            0.01,
            "Views neither count nor reset",
            why="at the end of a cosine schedule an update below float32's resolution leaves a weight bitwise "
            "unchanged",
            otherwise="count them regardless",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.lr = shared.PeakLearningRate()
        self.last: dict[str, tuple[tuple[float, ...], int]] = {}
        """Each parameter's weights' statistics at the latest view holding its gradient, and that view's step."""
        self.streak: dict[str, tuple[int, int]] = {}
        """Per still parameter: views in a row it stood still, and the step since which its weights have not changed."""
        self.reported: set[str] = set()
        self.stale = StaleGradients()
        self.groups = GroupRates()

    def check(self, view: StepView) -> list[base.Finding]:
        p: GradientNotApplied.Params = self.params  # type: ignore[assignment]
        self.lr.push(view)
        self.groups.push(view)
        stale = self.stale.update(view)
        at_rest = 0  # still parameters with a gradient whose own group's learning rate is 0 (or lowered)
        still: list[tuple[str, float, int, str | None]] = []
        moved: list[float] = []
        moved_modules: set[str | None] = set()
        for i in self.rows(view, default_collections=_GRADIENTS):
            name = view.names[int(i)].removeprefix(_GRAD_PREFIX)
            j = view.index(name)
            if j is None:
                continue
            now = tuple(float(x) for x in view.stats[j, _STILL])
            seen, self.last[name] = self.last.get(name), (now, view.step)
            g, w = float(view.stats[int(i), COL["l2"]]), now[0]
            if (
                seen is None
                or not (math.isfinite(g) and math.isfinite(w) and w > 0)
                or not all(math.isfinite(x) for x in now)
            ):
                continue
            before, before_step = seen
            if now != before or _updated(view, j):
                moved.append(g / w)
                moved_modules.add(view.meta[j].module)
                self.streak.pop(name, None)
            elif name in stale:
                self.streak.pop(name, None)  # an old gradient no backward rewrites: an unused parameter
            elif self.groups.at_rest(view, j, p.lowered_lr_fraction):
                self.streak.pop(name, None)  # its group's learning rate is 0: still by design
                at_rest += 1 if g > 0 else 0
            elif g > 0:
                still.append((name, g / w, before_step, view.meta[j].module))
            else:
                self.streak.pop(name, None)  # no gradient: nothing to apply
        lowered = p.lowered_lr_fraction is not None and self.lr.lowered(p.lowered_lr_fraction)
        if not still or not moved or lowered:
            return []  # nothing moved (no optimizer step) or a schedule lowered the rate: neither count nor reset
        typical = statistics.median(moved)
        found: list[tuple[str, float, int]] = []
        for name, ratio, before_step, module in still:
            if (module is not None and module in moved_modules) or ratio < p.min_gradient_share * typical:
                self.streak.pop(name, None)
                continue
            views, since = self.streak.get(name, (0, before_step))
            views += 1
            self.streak[name] = (views, since)
            if views >= p.num_views and name not in self.reported:
                found.append((name, ratio, self.streak[name][1]))
        if not found:
            return []
        self.reported.update(name for name, _, _ in found)
        name, ratio, since = found[0]
        others = ", ".join(n for n, _, _ in found[:_NAMED]) + (" ..." if len(found) > _NAMED else "")
        views = self.streak[name][0]
        msg = (
            f"{name}: gets a gradient (||g|| / ||W|| {base.fmt(ratio)}, {base.fmt(ratio / typical)}x the median of "
            f"the {len(moved)} parameters that moved) and its weights have not changed since step {since} "
            f"{self.where(view)}, {views} saved steps in a row (at least {p.num_views} make a finding): no optimizer "
            f"updates it{f' ({len(found)} parameters: {others})' if len(found) > 1 else ''}"
            + (
                f"; {at_rest} still parameters whose group's learning rate is 0 are not counted"
                if at_rest
                else ""
            )
        )
        return [self.finding(view, msg, tensor=name, value=float(views), threshold=float(p.num_views))]

    def get_state(self) -> dict[str, Any]:
        return {
            **self.lr.get_state(),
            **self.stale.get_state(),
            **self.groups.get_state(),
            "last": {n: [list(s), step] for n, (s, step) in self.last.items()},
            "streak": {n: list(s) for n, s in self.streak.items()},
            "reported": sorted(self.reported),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.lr.set_state(state)
        self.stale.set_state(state)
        self.groups.set_state(state)
        self.last = {
            n: (tuple(float(x) for x in s), int(step)) for n, (s, step) in state.get("last", {}).items()
        }
        self.streak = {n: (int(s[0]), int(s[1])) for n, s in state.get("streak", {}).items()}
        self.reported = set(state.get("reported", []))
