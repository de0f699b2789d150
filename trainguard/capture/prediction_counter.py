"""Prediction counts accumulated where the predictions live, shipped once per saved step.

`PredictionCounter.add(scores, labels)` turns a batch into per-bucket positive/negative counts
and score sums (buckets defined in `trainguard.store.prediction_buckets`) and adds them to a running
total: on the tensor's device for PyTorch tensors (`index_add_` with non-finite scores at
weight 0: no host sync; `bincount` and boolean indexing would sync on CUDA), in numpy
otherwise. `take()` returns the total since the last take as float64[3, B] (the one
device-to-host copy) and resets it; `take_raw()` leaves it on the device (the PyTorch hook
copies it). Multi-class predictions become one counter per class (one-vs-rest) for the
`max_classes` most frequent classes of the first batch (whose labels are read on the host once).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainguard.store import prediction_buckets, writer


def _is_torch(x: object) -> bool:
    return type(x).__module__.startswith("torch")


class BinaryCounter:
    """Counts of one binary score stream."""

    def __init__(self, *, buckets: int = prediction_buckets.BUCKETS, logits: bool = False) -> None:
        self.buckets = buckets
        self.logits = logits
        self._total: Any = None  # torch tensor on the device, or numpy array
        self.label_counts = np.zeros(2, np.int64)  # host side, filled at take()

    def add(self, scores: Any, labels: Any) -> None:
        if _is_torch(scores):
            self._add_torch(scores, labels)
        else:
            c = prediction_buckets.count(
                np.asarray(scores), np.asarray(labels), logits=self.logits, buckets=self.buckets
            )
            self._accumulate(c)

    def _add_torch(self, scores: Any, labels: Any) -> None:
        import torch

        with torch.no_grad():
            s = scores.detach().reshape(-1).double()  # float64 like the numpy reference: the same buckets
            y = torch.as_tensor(labels, device=s.device).reshape(-1) > 0.5
            if s.shape != y.shape:  # metadata only: no sync
                raise ValueError(
                    f"scores has {s.numel()} values but labels has {y.numel()}; pass one label per score"
                )
            # Non-finite scores get weight 0 instead of being dropped by `s[finite]`: boolean
            # indexing has a data-dependent size, a host sync on CUDA. Likewise `index_add_`
            # instead of `bincount`, which reads the largest index back on CUDA.
            finite = torch.isfinite(s)
            weight = finite.double()
            s = torch.where(finite, s, torch.zeros_like(s))
            if self.logits:
                z, p = s, torch.sigmoid(s)
            else:
                p = s.clamp(1e-12, 1 - 1e-12)
                z = torch.log(p) - torch.log1p(-p)
                p = s
            half = prediction_buckets.LOGIT_RANGE
            b = torch.floor((z + half) * (self.buckets / (2 * half)))
            b = b.clamp(0, self.buckets - 1).long()
            out = torch.zeros(prediction_buckets.ROWS * self.buckets, dtype=torch.float64, device=s.device)
            out.index_add_(0, b + self.buckets * (~y).long(), weight)  # rows 0 and 1: positives, negatives
            out.index_add_(0, b + 2 * self.buckets, p * weight)  # row 2: score sums
            self._accumulate(out.reshape(prediction_buckets.ROWS, self.buckets))

    def _accumulate(self, c: Any) -> None:
        if self._total is None:
            self._total = c
        elif _is_torch(self._total) == _is_torch(c):
            self._total = self._total + c
        elif _is_torch(self._total):  # a numpy batch after torch batches: move it to the device
            import torch

            self._total = self._total + torch.from_numpy(c).to(self._total.device)
        else:
            self._total = self._total + c.cpu().numpy()

    def take_raw(self) -> Any:
        """Return the running total as it is (device tensor or numpy array) and reset; None if empty."""
        total, self._total = self._total, None
        return total


class PredictionCounter:
    """Counts for one named prediction stream: binary, or one-vs-rest per class."""

    def __init__(
        self,
        *,
        buckets: int = prediction_buckets.BUCKETS,
        logits: bool = False,
        max_classes: int = 10,
    ) -> None:
        self.buckets = buckets
        self.logits = logits
        self.max_classes = max_classes
        self.classes: list[int] | None = None  # None: binary
        self._counters: dict[int, BinaryCounter] = {}

    def add(self, scores: Any, labels: Any) -> None:
        """Add a batch: scores [N] (binary) or [N, C] class probabilities with integer labels [N]."""
        ndim = scores.dim() if _is_torch(scores) else np.ndim(scores)
        if ndim <= 1 or (ndim == 2 and scores.shape[1] == 1):
            self._counters.setdefault(-1, BinaryCounter(buckets=self.buckets, logits=self.logits)).add(
                scores, labels
            )
            return
        if self.classes is None:
            lab = (
                labels.detach().reshape(-1).cpu().numpy() if _is_torch(labels) else np.asarray(labels).ravel()
            )
            freq = np.bincount(lab.astype(np.int64), minlength=scores.shape[1])
            self.classes = sorted(np.argsort(-freq, kind="stable")[: self.max_classes].tolist())
        for c in self.classes:
            col = scores[:, c]
            y = labels == c
            self._counters.setdefault(c, BinaryCounter(buckets=self.buckets, logits=False)).add(col, y)

    def take_raw(self) -> dict[int, Any]:
        """Return {class (-1 for binary): counts} since the last take, still on their device, and reset."""
        return {c: t for c, t in ((c, k.take_raw()) for c, k in self._counters.items()) if t is not None}

    def take(self) -> dict[int, np.ndarray]:
        """Return {class (-1 for binary): float64[3, B] counts} since the last take; one host copy in all."""
        raw = self.take_raw()
        if not raw:
            return {}
        keys = list(raw)
        if any(_is_torch(t) for t in raw.values()):
            import torch

            stacked = torch.stack([torch.as_tensor(raw[c]) for c in keys])
            host = stacked.cpu().numpy()  # the single device-to-host copy
            return {c: np.asarray(host[i], np.float64) for i, c in enumerate(keys)}
        return {c: np.asarray(raw[c], np.float64) for c in keys}


def stream_name(name: str, cls: int) -> str:
    """The catalogue name of a stream's counts: `pred/<name>` (binary) or `pred/<name>/class<c>`."""
    return f"pred/{name}" if cls < 0 else f"pred/{name}/class{cls}"


def write_counts(
    w: writer.RankWriter, step: int, name: str, mode: str, counts: dict[int, np.ndarray]
) -> None:
    """Define each class's stream in the "predictions" collection and buffer its counts at `step`."""
    for cls, c in counts.items():
        tid = w.define(stream_name(name, cls), collection="predictions", mode=mode, units=int(c.shape[-1]))
        w.write_record(step, f"pred.{tid}", c)
