"""Prediction counts accumulated where the predictions live, shipped once per saved step.

`PredictionCounter.add(scores, labels)` turns a batch into per-bucket positive/negative counts
and score sums (buckets defined in `trainguard.store.predictions`) and adds them to a running
total: on the tensor's device for PyTorch tensors (one `bincount`, no host sync), in numpy
otherwise. `take()` returns the total since the last take as float64[3, B] (the one
device-to-host copy) and resets it. Multi-class predictions become one counter per class
(one-vs-rest) for the `max_classes` most frequent classes of the first batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainguard.store import predictions


def _is_torch(x: object) -> bool:
    return type(x).__module__.startswith("torch")


class BinaryCounter:
    """Counts of one binary score stream."""

    def __init__(self, *, buckets: int = predictions.BUCKETS, logits: bool = False) -> None:
        self.buckets = buckets
        self.logits = logits
        self._total: Any = None  # torch tensor on the device, or numpy array
        self.label_counts = np.zeros(2, np.int64)  # host side, filled at take()

    def add(self, scores: Any, labels: Any) -> None:
        if _is_torch(scores):
            self._add_torch(scores, labels)
        else:
            c = predictions.count(np.asarray(scores), np.asarray(labels), logits=self.logits, buckets=self.buckets)
            self._accumulate(c)

    def _add_torch(self, scores: Any, labels: Any) -> None:
        import torch

        with torch.no_grad():
            s = scores.detach().reshape(-1).float()
            y = torch.as_tensor(labels, device=s.device).reshape(-1) > 0.5
            keep = torch.isfinite(s)
            s, y = s[keep], y[keep]
            if self.logits:
                z, p = s, torch.sigmoid(s)
            else:
                p = s.clamp(1e-12, 1 - 1e-12)
                z = torch.log(p) - torch.log1p(-p)
            b = torch.floor((z.double() + predictions.LOGIT_RANGE) * (self.buckets / (2 * predictions.LOGIT_RANGE)))
            b = b.clamp(0, self.buckets - 1).long()
            pn = torch.bincount(b + self.buckets * (~y).long(), minlength=2 * self.buckets).double()
            sums = torch.bincount(b, weights=p.double(), minlength=self.buckets)
            self._accumulate(torch.cat([pn, sums]).reshape(predictions.ROWS, self.buckets))

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
        buckets: int = predictions.BUCKETS,
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
            self._counters.setdefault(-1, BinaryCounter(buckets=self.buckets, logits=self.logits)).add(scores, labels)
            return
        if self.classes is None:
            lab = labels.detach().reshape(-1).cpu().numpy() if _is_torch(labels) else np.asarray(labels).ravel()
            freq = np.bincount(lab.astype(np.int64), minlength=scores.shape[1])
            self.classes = sorted(np.argsort(-freq, kind="stable")[: self.max_classes].tolist())
        for c in self.classes:
            col = scores[:, c]
            y = labels == c
            self._counters.setdefault(c, BinaryCounter(buckets=self.buckets, logits=False)).add(col, y)

    def take(self) -> dict[int, np.ndarray]:
        """Return {class (-1 for binary): float64[3, B] counts} since the last take; one host copy in all."""
        raw = {c: t for c, t in ((c, k.take_raw()) for c, k in self._counters.items()) if t is not None}
        if not raw:
            return {}
        keys = list(raw)
        if any(_is_torch(t) for t in raw.values()):
            import torch

            host = torch.stack([raw[c] for c in keys]).cpu().numpy()  # the single device-to-host copy
            return {c: np.asarray(host[i], np.float64) for i, c in enumerate(keys)}
        return {c: np.asarray(raw[c], np.float64) for c in keys}
