"""AUC, ROC, PR and calibration from per-bucket prediction counts; decayed counts with effective sizes.

Pure numpy over the count records defined in `trainguard.store.prediction_buckets` (rows: positives,
negatives, score sums; buckets sorted by score). Used by the `auc_drop`/`auc_resolution` rules,
the evaluator's metrics and the HTML report. The bucketed AUC is exact up to ties inside a
bucket: |AUC_exact - AUC_B| <= tie_mass / 2, where tie_mass = sum_b p_b n_b / (P N).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class AucEstimate:
    """An AUC read from bucket counts, with its error bound and standard error."""

    auc: float
    """Mann-Whitney AUC with ties inside a bucket counted as one half."""
    error_bound: float
    """Half the tie mass: the exact AUC of the raw scores lies within auc +/- error_bound."""
    se: float
    """Hanley-McNeil standard error from the (effective) positive and negative counts."""
    positives: float
    negatives: float

    @property
    def positive_rate(self) -> float:
        total = self.positives + self.negatives
        return self.positives / total if total else math.nan


def hanley_mcneil_se(auc: float, positives: float, negatives: float) -> float:
    """Return the Hanley-McNeil (1982) standard error of an AUC estimated from P positives and N negatives."""
    if positives < 1 or negatives < 1 or not math.isfinite(auc):
        return math.nan
    q1 = auc / (2 - auc)
    q2 = 2 * auc * auc / (1 + auc)
    var = (auc * (1 - auc) + (positives - 1) * (q1 - auc * auc) + (negatives - 1) * (q2 - auc * auc)) / (
        positives * negatives
    )
    return math.sqrt(max(var, 0.0))


def auc_from_counts(
    counts: np.ndarray, *, effective_positives: float | None = None, effective_negatives: float | None = None
) -> AucEstimate:
    """Return the bucketed AUC of float[>=2, B] counts (positives row 0, negatives row 1)."""
    pos = np.asarray(counts[0], np.float64)
    neg = np.asarray(counts[1], np.float64)
    p_total, n_total = float(pos.sum()), float(neg.sum())
    if p_total <= 0 or n_total <= 0:
        return AucEstimate(math.nan, math.nan, math.nan, p_total, n_total)
    neg_below = np.cumsum(neg) - neg
    pairs = p_total * n_total
    auc = float((pos * (neg_below + 0.5 * neg)).sum() / pairs)
    tie_mass = float((pos * neg).sum() / pairs)
    se = hanley_mcneil_se(
        auc,
        p_total if effective_positives is None else effective_positives,
        n_total if effective_negatives is None else effective_negatives,
    )
    return AucEstimate(auc=auc, error_bound=tie_mass / 2, se=se, positives=p_total, negatives=n_total)


def exact_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Return the rank-based (Mann-Whitney) AUC of raw scores, ties counted as one half. O(n log n)."""
    s = np.asarray(scores, np.float64).ravel()
    y = np.asarray(labels).ravel() > 0.5
    order = np.argsort(s, kind="mergesort")
    s_sorted = s[order]
    ranks = np.empty(s.size, np.float64)
    # Mid-ranks for ties.
    _, first, counts = np.unique(s_sorted, return_index=True, return_counts=True)
    mid = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(mid, counts)
    p, n = int(y.sum()), int((~y).sum())
    if p == 0 or n == 0:
        return math.nan
    return float((ranks[y].sum() - p * (p + 1) / 2.0) / (p * n))


def roc_curve(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (false positive rate, true positive rate) at every bucket edge, from high score to low."""
    pos = np.asarray(counts[0], np.float64)[::-1]
    neg = np.asarray(counts[1], np.float64)[::-1]
    tpr = np.concatenate([[0.0], np.cumsum(pos) / max(pos.sum(), 1e-300)])
    fpr = np.concatenate([[0.0], np.cumsum(neg) / max(neg.sum(), 1e-300)])
    return fpr, tpr


def pr_curve(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (recall, precision) at every non-empty bucket edge, from high score to low."""
    pos = np.asarray(counts[0], np.float64)[::-1]
    neg = np.asarray(counts[1], np.float64)[::-1]
    tp, fp = np.cumsum(pos), np.cumsum(neg)
    keep = (tp + fp) > 0
    recall = tp[keep] / max(pos.sum(), 1e-300)
    precision = tp[keep] / (tp + fp)[keep]
    return recall, precision


def calibration(counts: np.ndarray, *, bins: int = 20) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (mean score, positive rate, examples) over `bins` groups of adjacent buckets with data."""
    c = np.asarray(counts, np.float64)
    if c.shape[0] < 3:
        raise ValueError("calibration needs the score-sum row (counts of shape [3, B])")
    n = c[0] + c[1]
    groups = np.array_split(np.arange(c.shape[1]), bins)
    mean_score, rate, size = [], [], []
    for g in groups:
        total = n[g].sum()
        if total > 0:
            mean_score.append(c[2, g].sum() / total)
            rate.append(c[0, g].sum() / total)
            size.append(total)
    return np.asarray(mean_score), np.asarray(rate), np.asarray(size)


class DecayedCounts:
    """Bucket counts that forget with a half-life in steps; also tracks effective sample sizes.

    Every example enters with weight 1 and its weight halves every `half_life_steps` steps. The
    decayed AUC is the weighted Mann-Whitney statistic of the counts; effective sizes
    (sum w)^2 / sum w^2 feed the Hanley-McNeil standard error.
    """

    def __init__(self, half_life_steps: float, *, buckets: int | None = None) -> None:
        if half_life_steps <= 0:
            raise ValueError(f"half_life_steps must be positive, got {half_life_steps}")
        self.half_life_steps = float(half_life_steps)
        self.counts: np.ndarray | None = None if buckets is None else np.zeros((2, buckets))
        self.sq = np.zeros(2)  # decayed sums of squared weights: positives, negatives
        self.step: int | None = None

    def update(self, step: int, delta: np.ndarray) -> None:
        """Decay to `step`, then add the counts `delta` (rows positives, negatives[, ...])."""
        d = np.asarray(delta[:2], np.float64)
        if self.counts is None:
            self.counts = np.zeros_like(d)
        if self.step is not None and step > self.step:
            g = 0.5 ** ((step - self.step) / self.half_life_steps)
            self.counts *= g
            self.sq *= g * g
        self.step = step if self.step is None else max(step, self.step)
        self.counts += d
        self.sq += d.sum(axis=1)

    def estimate(self) -> AucEstimate:
        if self.counts is None:
            return AucEstimate(math.nan, math.nan, math.nan, 0.0, 0.0)
        tot = self.counts.sum(axis=1)
        eff = [(t * t / s) if s > 0 else 0.0 for t, s in zip(tot, self.sq)]
        return auc_from_counts(self.counts, effective_positives=eff[0], effective_negatives=eff[1])

    def state_dict(self) -> dict[str, object]:
        return {
            "step": self.step,
            "sq": self.sq.tolist(),
            # Sparse: only non-empty buckets, so checkpoints stay small.
            "nz": [] if self.counts is None else np.nonzero(self.counts.sum(axis=0))[0].tolist(),
            "values": [] if self.counts is None else self.counts[:, self.counts.sum(axis=0) != 0].tolist(),
            "buckets": None if self.counts is None else int(self.counts.shape[1]),
        }

    def load_state_dict(self, state: dict[str, object]) -> None:
        self.step = state.get("step")  # type: ignore[assignment]
        self.sq = np.asarray(state.get("sq", [0.0, 0.0]), np.float64)
        buckets: Any = state.get("buckets")
        if buckets is None:
            self.counts = None
            return
        self.counts = np.zeros((2, int(buckets)))
        nz = np.asarray(state.get("nz", []), np.int64)
        if nz.size:
            self.counts[:, nz] = np.asarray(state["values"], np.float64)
