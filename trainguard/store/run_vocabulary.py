"""The run format's version and its fixed vocabulary: statistic columns, histogram bins, unit kinds.

Part of the run format (`run_format` re-exports it): what every writer and reader of a segment agrees on,
and the version check that refuses a major version this TrainGuard does not read.
"""

from __future__ import annotations

from trainguard.store import errors

FORMAT_VERSION = "2.5"
"""Major.minor. Readers refuse a major version they do not know (`READABLE_MAJORS`) and accept any minor.
2.1 added the optional `lost.before`/`lost.total` segment members and END.json's `lost_steps`, later the
optional `extra.blind` record (int64[n, 2]: blind since step, unchecked steps) and END.json's
`unchecked_steps`/`blind_since_step`; 2.2 the optional catalogue fields `shard` and `skipped` (`TensorInfo`),
later the optional `extra.no_step` record (int64[n, 2]: since step, training iterations without an optimizer
step); 2.3 the initial-weights record (`INITIAL_COLLECTION`); 2.4 train scalars at every step (the layout
unchanged) and END.json's `dropped_scalars`; 2.5 the optimizer's parameter groups (`GROUP_PREFIX`: the
catalogue fields `optimizer` and `param_group`, the group scalars).
Readers that do not know an optional field ignore it."""
READABLE_MAJORS = ("1", "2")
"""Format 1 differs only in key names (no attempt; see the module docstring)."""

STAT_COLUMNS: tuple[str, ...] = (
    "count",
    "nan",
    "inf",
    "zero",
    "min",
    "max",
    "mean",
    "std",
    "abs_mean",
    "l2",
    "update_l2",
    "distance_l2",
)
"""The fixed statistic columns of `Segment.stats` (K = 12).

`count`, `nan`, `inf`, `zero` are element counts. `min max mean std abs_mean l2` are taken over
all elements (a tensor holding NaN gives NaN there; the `nan`/`inf` columns say why). `std` is
the population standard deviation. `update_l2` is ||W - W at the previous saved step|| and
`distance_l2` is ||W - W at the first saved step||, both NaN for tensors that are not parameters. A parameter's
rows are taken after its step's optimizer update, so "W at the first saved step" has had one update; the
weights before any update are the initial-weights record's (`INITIAL_COLLECTION`).
"""

COLUMN: dict[str, int] = {name: i for i, name in enumerate(STAT_COLUMNS)}

INITIAL_COLLECTION = "initial"
"""Catalogue collection of the initial-weights record (format 2.3): the statistics of a captured weight or bias
before any optimizer update, as tensor `INITIAL_PREFIX + <its name>` with the parameter's own shape, module and
shard. Its one row is at the saved step in whose optimizer pre-hook it was read: step 0 for a parameter
registered before training, else the first saved step after its registration. `update_l2` and `distance_l2` are
NaN there. The parameter's own rows at that step are taken after the step's update, like every step's."""
INITIAL_PREFIX = "init/"


def initial_name(name: str) -> str:
    """The name of parameter `name`'s initial-weights record (`init/fc1.weight`)."""
    return INITIAL_PREFIX + name


GROUP_PREFIX = "group/"
"""The optimizer's parameter groups (format 2.5). A captured parameter's catalogue entry names its optimizer's
class (`optimizer`) and its group (`param_group`, `<k>.<g>`: group g of the k-th optimizer registered); each
group's hyperparameters are train scalars `group/<k>.<g>/<name>` of collection "optimizer" (`GROUP_HYPERPARAMETERS`),
written at the first saved step after the optimizer's registration and again at a saved step where one changed
(a constant learning rate is written once; a schedule's, at each saved step it moved)."""
GROUP_HYPERPARAMETERS = ("lr", "initial_lr", "eps", "beta1", "beta2", "momentum", "nesterov", "weight_decay")
"""The hyperparameters recorded per group where the optimizer has them: `initial_lr` is set by a scheduler when it
is built, `beta1`/`beta2` are Adam's `betas`, `nesterov` is 1 or 0."""


def group_scalar(group: str, hyperparameter: str) -> str:
    """The scalar name of a parameter group's hyperparameter (`group/0.1/lr`)."""
    return f"{GROUP_PREFIX}{group}/{hyperparameter}"


HIST_BINS = 64
"""Tier-1 histograms: bin 0 counts exact zeros, bins 1..63 count |x| in [2^(b-40), 2^(b-39)), clamped."""
HIST_MIN_EXPONENT = -39

UNIT_KINDS = ("active", "saturated", "moved")
"""Tier-1 per-unit vectors: fraction of samples on which each unit was active (ReLU family,
output > 0) or saturated (sigmoid output < 0.01 or > 0.99 / tanh |output| > 0.99), both keyed by
the activation's id; and, keyed by a trainable parameter's id, the fraction of each unit's
elements (row of dim 0) that changed since the previous saved step ("moved", exactly W != W_prev;
parameters with more than one unit and a previous copy only)."""


def check_version(found: str, *, what: str) -> None:
    """Raise UnsupportedVersion when `found` has another major version than ours."""
    major = found.split(".", 1)[0]
    if major not in READABLE_MAJORS:
        known = " and ".join(f"{m}.x" for m in READABLE_MAJORS)
        raise errors.UnsupportedVersion(
            f"{what} has run-format version {found}; this TrainGuard reads {known}. Upgrade TrainGuard to read it."
        )
