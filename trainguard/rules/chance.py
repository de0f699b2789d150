"""Chance level of a quality metric read from its name: what a model that learned nothing scores.

An accuracy (`val_acc`, `val_token_accuracy`, `top1`, ...) scores 1/K at chance, K the outputs of the last dense
layer; an R² (`val_r2`) scores 0, predicting the mean. Both are 1 at best, so "near chance" is a fraction of the
way from chance to 1. Other metrics (hits@k, recall@k, F1, the area under a precision-recall curve) have a chance
level that depends on what the run does not record (candidates per query, class frequencies) and are not placed by
`chance_level`. The area under the ROC curve (`val_auc`, `auroc`) is 0.5 at chance whatever the class frequencies
(a random score ranks a positive above a negative half of the time), 0 for a ranking that is exactly reversed; a
correlation of the scores with the truth (`val_reward_correlation`, `spearman`) and a scorer's Gini coefficient
(`val_gini`, 2 AUC - 1) are 0 at chance, -1 reversed: `ranking_chance_level` places them for the readings that use
them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

ACCURACY = frozenset({"acc", "accuracy", "top1"})
"""Name tokens of an accuracy: chance level 1/K for K outputs."""
R2 = frozenset({"r2"})
"""Name tokens of a coefficient of determination: chance level 0 (predicting the mean)."""
_TOKEN = re.compile(r"[a-z]+[0-9]?")


def chance_level(name: str, classes: int | None) -> float | None:
    """The chance level of the metric `name` (1/K for an accuracy over `classes` outputs, 0 for an R²), or None
    when its name places none (or an accuracy's K is unknown); a name containing `loss` is no quality metric."""
    tokens = set(_TOKEN.findall(name.lower()))
    if "loss" in tokens:
        return None
    if tokens & ACCURACY:
        return 1.0 / classes if classes and classes >= 2 else None
    return 0.0 if tokens & R2 else None


ROC_AUC = frozenset({"auc", "auroc", "rocauc"})
"""Name tokens of an area under the ROC curve: chance level 0.5 (`prauc`, `auprc` and `ap` are not among them)."""
CONCORDANCE = frozenset({"cindex", "concordance"})
"""Name tokens of a concordance index (`c_index`, Harrell's C), which generalises the ROC AUC to censored times:
0.5 at chance as C, but 0 as 2C - 1 (Somers' D), which runs also record under the name (a discrete-time hazard
model's `val_concordance` at 0.16 -> 0.32 as 2C - 1 read as a C read as ranking reversed). The name does not say
which, so only a reading that errs towards alarming places it (`ranking_chance_level`'s `concordance`)."""
CORRELATION = frozenset({"correlation", "corr", "pearson", "spearman", "kendall"})
"""Name tokens of a correlation of the model's scores with the truth: chance level 0 (no relation) whatever the data,
-1 for an exactly reversed order."""
GINI = frozenset({"gini"})
"""Name tokens of a scorer's Gini coefficient (the normalised Gini of credit and fraud scoring, 2 AUC - 1): chance
level 0, -1 for an exactly reversed order, as a correlation; not a Gini impurity (`gini_impurity`, a split
criterion, lower is better)."""


def ranking_chance_level(name: str, classes: int | None, *, concordance: bool = False) -> float | None:
    """`chance_level`, 0.5 for an area under the ROC curve and 0 for a correlation with the truth; None for a name
    containing `loss` (or `pr`, for an area). With `concordance`, 0.5 for a concordance index too, read as C: for a
    reading where a 2C - 1 read as C can only understate a model's skill (0.77 as 2C - 1 is C = 0.885), never one
    that calls a score below chance."""
    level = chance_level(name, classes)
    if level is not None:
        return level
    tokens = set(_TOKEN.findall(name.lower()))
    if "loss" in tokens:
        return None
    if concordance and (tokens & CONCORDANCE or {"c", "index"} <= tokens):
        return 0.5
    if tokens & ROC_AUC:
        return None if tokens & {"pr", "auprc", "prauc"} else 0.5
    return 0.0 if tokens & CORRELATION or _gini(tokens) else None


def _gini(tokens: set[str]) -> bool:
    return bool(tokens & GINI) and "impurity" not in tokens


def reversed_score(name: str) -> float:
    """The score of an exactly reversed order for a metric `ranking_chance_level` places beyond `chance_level`: 0 for
    an area under the ROC curve, -1 for a correlation."""
    tokens = set(_TOKEN.findall(name.lower()))
    return -1.0 if (tokens & CORRELATION or _gini(tokens)) and not tokens & ROC_AUC else 0.0


def is_placed(name: str) -> bool:
    """Whether the name is one `chance_level` places (given K for an accuracy)."""
    return chance_level(name, 2) is not None


def near_chance(value: float, chance: float, fraction: float) -> bool:
    """Whether `value` is at most `fraction` of the way from `chance` to 1 (the best score)."""
    return value <= chance + fraction * (1.0 - chance)


def placed(scalars: Mapping[str, float], classes: int | None) -> tuple[str, float, float] | None:
    """The first finite scalar whose chance level its name places: (name, value, chance level)."""
    for name, value in scalars.items():
        chance = chance_level(name, classes)
        if chance is not None and math.isfinite(value):
            return name, value, chance
    return None
