"""The Tier-0 and Tier-1 statistics in numpy: the definition of every column, and the reference every device path is checked against.

Used by the `Recorder` for numpy loops, by the smdebug reader (statistics computed on read), and by tests as the slow, obviously correct
ground truth of the PyTorch implementation. Column order is `run_format.STAT_COLUMNS`.
"""

from __future__ import annotations

import numpy as np

from trainguard.store import run_format

K = len(run_format.STAT_COLUMNS)
MOVED = "moved"
"""Kind of the Tier-1 per-unit vector of a trainable parameter: the share of each unit's elements that changed."""


def tier0(x: np.ndarray, *, prev: np.ndarray | None = None, first: np.ndarray | None = None) -> np.ndarray:
    """Return float32[K]: count nan inf zero min max mean std abs_mean l2 update_l2 distance_l2."""
    a = np.asarray(x, dtype=np.float64).ravel()
    out = np.full(K, np.nan, dtype=np.float64)
    n = a.size
    out[0] = n
    out[1] = np.count_nonzero(np.isnan(a))
    out[2] = np.count_nonzero(np.isinf(a))
    out[3] = np.count_nonzero(a == 0)
    if n:
        with np.errstate(invalid="ignore", over="ignore"):
            out[4] = a.min()
            out[5] = a.max()
            out[6] = a.mean()
            out[7] = a.std()
            out[8] = np.abs(a).mean()
            out[9] = np.sqrt(np.sum(a * a))
    with np.errstate(over="ignore", invalid="ignore"):
        if prev is not None:
            out[10] = np.sqrt(np.sum((a - np.asarray(prev, np.float64).ravel()) ** 2))
        if first is not None:
            out[11] = np.sqrt(np.sum((a - np.asarray(first, np.float64).ravel()) ** 2))
    with np.errstate(over="ignore"):  # beyond float32's range reads as inf, which is what it is
        return out.astype(np.float32)


def log2_hist(x: np.ndarray) -> np.ndarray:
    """Return float32[HIST_BINS]: bin 0 = exact zeros (and non-finite excluded), bin b = |x| in [2^(b-40), 2^(b-39))."""
    a = np.abs(np.asarray(x, dtype=np.float64).ravel())
    a = a[np.isfinite(a)]
    hist = np.zeros(run_format.HIST_BINS, np.float64)
    hist[0] = np.count_nonzero(a == 0)
    nz = a[a > 0]
    if nz.size:
        b = np.floor(np.log2(nz)).astype(np.int64) - run_format.HIST_MIN_EXPONENT + 1
        b = np.clip(b, 1, run_format.HIST_BINS - 1)
        hist += np.bincount(b, minlength=run_format.HIST_BINS)[: run_format.HIST_BINS]
    return hist.astype(np.float32)


def unit_axis_last(x: np.ndarray) -> np.ndarray:
    """View an activation as [samples, units]: units are dim 1 (channels), samples the rest."""
    a = np.asarray(x)
    if a.ndim <= 1:
        return a.reshape(1, -1)
    return np.moveaxis(a, 1, -1).reshape(-1, a.shape[1])


def unit_activity(x: np.ndarray, activation: str) -> tuple[str, np.ndarray] | None:
    """Return (kind, float32[units]) for an activation output, or None for other activations.

    ReLU family: fraction of samples with output > 0 ("active"). Sigmoid: fraction with output
    < 0.01 or > 0.99; tanh: |output| > 0.99 ("saturated", |pre-activation| above about 4.6 / 2.6).
    """
    a = unit_axis_last(x).astype(np.float64)
    if activation in ("relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "prelu", "selu"):
        return "active", (a > 0).mean(axis=0).astype(np.float32)
    if activation == "sigmoid":
        return "saturated", ((a < 0.01) | (a > 0.99)).mean(axis=0).astype(np.float32)
    if activation == "tanh":
        return "saturated", (np.abs(a) > 0.99).mean(axis=0).astype(np.float32)
    return None


def unit_moved(x: np.ndarray, prev: np.ndarray | None) -> np.ndarray | None:
    """Return float32[units] for a parameter: the fraction of each unit's elements (row of dim 0) with x != prev.

    NaN for every unit when there is no previous copy yet (the first saved step: the vector is
    still written, so that every Tier-1 step of a segment has it). None for 0-d parameters and
    those with a single unit (dim 0 of size 1) or none: their movement is the layer's `update_l2`.
    A NaN element counts as changed.
    """
    a = np.asarray(x)
    if a.ndim < 1 or a.shape[0] <= 1 or not a.size:
        return None
    if prev is None:
        return np.full(a.shape[0], np.nan, np.float32)
    changed = a.reshape(a.shape[0], -1) != np.asarray(prev).reshape(a.shape[0], -1)
    share: np.ndarray = changed.mean(axis=1).astype(np.float32)
    return share
