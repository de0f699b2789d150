"""`StepView`: what a rule sees of one step of one rank, as numpy arrays.

Built by the evaluator from a segment (or by tests and the detection benchmark directly), so
rules never touch storage. Tensor statistics are one float64[T, K] block with the column
names of the run format; lookups by name, collection or regex return numpy arrays, so a rule
does O(T) vectorised work per step and nothing per past step.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

COLUMNS: tuple[str, ...] = (
    "count", "nan", "inf", "zero", "min", "max", "mean", "std", "abs_mean", "l2", "update_l2", "distance_l2",
)  # fmt: skip
"""Same order as `trainguard.store.run_format.STAT_COLUMNS` (checked by a test; rules may not import store)."""
COL: dict[str, int] = {c: i for i, c in enumerate(COLUMNS)}
INITIAL_COLLECTION = "initial"
INITIAL_PREFIX = "init/"
"""The initial-weights record: rows `init/<parameter>` of collection "initial", the parameter's statistics before
any optimizer update (`trainguard.store.run_format.INITIAL_COLLECTION`, the same names: checked by a test)."""


GROUP_PREFIX = "group/"
"""Train scalars `group/<k>.<g>/<hyperparameter>`: an optimizer parameter group's hyperparameters, recorded at a
saved step where one changed (`trainguard.store.run_format.GROUP_PREFIX`, the same: checked by a test)."""


@dataclass(frozen=True)
class TensorMeta:
    """Static facts about a tensor, from the run's catalogue."""

    name: str
    collection: str
    module: str | None = None
    module_type: str | None = None
    """Class of the owning module (`Linear`, `Embedding`, `GRU`, ...), when the capture recorded it."""
    trainable: bool = False
    activation: str | None = None
    order: int | None = None
    shape: tuple[int, ...] = ()
    param_group: str | None = None
    """The optimizer parameter group holding this parameter (`<k>.<g>`), when the capture recorded it (format 2.5):
    its hyperparameters are the train scalars `GROUP_PREFIX + <k>.<g>/<name>`."""
    optimizer: str | None = None
    """The class of the optimizer updating this parameter (`Adam`, `SGD`, ...), with `param_group` (format 2.5)."""


@dataclass(frozen=True)
class StepView:
    """One step of one rank.

    `names[t]`/`meta[t]` describe row t of `stats` (float64[T, K]). `scalars` maps a train-mode
    scalar's name to its value at this step; `eval_scalars` the same for eval mode. `units`
    maps (kind, tensor name) to a per-unit vector ("active" or "saturated" fractions) and
    `hists` a tensor name to its 64-bin log2-magnitude histogram, on Tier-1 steps only. A sharded tensor's
    (`sidecar/shard_merge.py`) are the full tensor's where its parts merge exactly; `per_shard` names the
    tensors whose Tier-1 data here are one part's only, each with why (a rule reading them says "per shard").
    `predictions` maps a prediction stream (`pred/<name>[/class<c>]`) to the bucket counts
    float64[3, B] (positives, negatives, score sums) added since its previous record;
    `eval_predictions` the same for eval mode. Rows of collection "initial" (`init/<parameter>`, `initial`)
    hold the parameters' statistics before any optimizer update, on the step that read them. `no_step` is
    the hook's marker of training that goes on while no optimizer steps: (since, iterations), the first
    step not counted and the training iterations since then without an optimizer step, at the last counted
    step (a view with only it reaches only the rules that take heartbeats).
    Any part may be empty: a step may carry only scalars, or only statistics. `saved` is False for a view of
    a step between saved steps (the hook keeps train scalars at every step since format 2.4): a rule reads its
    train scalars only if it reads every step's (`Rule.every_step`); the others see such a view without them.
    """

    step: int
    rank: int = 0
    wall_time: float = 0.0
    names: tuple[str, ...] = ()
    meta: tuple[TensorMeta, ...] = ()
    stats: np.ndarray = field(default_factory=lambda: np.zeros((0, len(COLUMNS))))
    scalars: Mapping[str, float] = field(default_factory=dict)
    eval_scalars: Mapping[str, float] = field(default_factory=dict)
    units: Mapping[tuple[str, str], np.ndarray] = field(default_factory=dict)
    hists: Mapping[str, np.ndarray] = field(default_factory=dict)
    per_shard: Mapping[str, str] = field(default_factory=dict)
    predictions: Mapping[str, np.ndarray] = field(default_factory=dict)
    eval_predictions: Mapping[str, np.ndarray] = field(default_factory=dict)
    no_step: tuple[int, int] | None = None
    saved: bool = True

    def at_saved_steps(self) -> StepView | None:
        """What a rule that reads train scalars at saved steps only sees of this view: itself at a saved step;
        between saved steps, the view without its train scalars, or None when it holds nothing else."""
        if self.saved:
            return self
        if not (
            self.names
            or self.eval_scalars
            or self.predictions
            or self.eval_predictions
            or self.units
            or self.hists
            or self.no_step
        ):
            return None
        return replace(self, scalars={}, saved=True)

    def group_settings(self) -> Iterator[tuple[str, str, float]]:
        """The optimizer group settings this view records, as (group `<k>.<g>`, setting, value), finite values
        only: the train scalars `GROUP_PREFIX + <k>.<g>/<setting>`, written where one changed (format 2.5)."""
        for name, x in self.scalars.items():
            if name.startswith(GROUP_PREFIX) and math.isfinite(x):
                key, _, setting = name[len(GROUP_PREFIX) :].partition("/")
                yield key, setting, float(x)

    def records_group_setting(self, setting: str) -> bool:
        """Whether this view records `setting` (`lr`, `eps`, `initial_lr`, ...) of any optimizer group."""
        return any(name.startswith(GROUP_PREFIX) and name.endswith("/" + setting) for name in self.scalars)

    def index(self, name: str) -> int | None:
        """Return the row of tensor `name`, or None if it is not in this step."""
        try:
            return self.names.index(name)
        except ValueError:
            return None

    def initial(self, name: str) -> int | None:
        """Return the row of parameter `name`'s initial-weights record (its statistics before any optimizer
        update), or None when this step has none: the hook writes it once, at the first saved step after the
        parameter's registration, usually step 0 (older runs and other capture tools have none)."""
        return self.index(INITIAL_PREFIX + name)

    def stat(self, name: str, column: str) -> float | None:
        """Return one statistic of one tensor, or None if absent at this step."""
        i = self.index(name)
        return None if i is None else float(self.stats[i, COL[column]])

    def rows(
        self,
        *,
        collections: Sequence[str] | None = None,
        pattern: str | re.Pattern[str] | None = None,
        trainable: bool | None = None,
    ) -> np.ndarray:
        """Return the row indices (int[]) matching all given filters, in execution order when known."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        out = [
            i
            for i, m in enumerate(self.meta)
            if (collections is None or m.collection in collections)
            and (rx is None or rx.search(m.name))
            and (trainable is None or m.trainable == trainable)
        ]
        out.sort(key=lambda i: (self.meta[i].order if self.meta[i].order is not None else 1 << 30, i))
        return np.asarray(out, dtype=np.int64)

    def column(self, column: str, rows: np.ndarray) -> np.ndarray:
        """Return float64[len(rows)]: one statistic of the given rows."""
        return self.stats[rows, COL[column]] if len(rows) else np.zeros(0)
