"""Recording scalars and prediction counts (`record_scalar`, `record_predictions`; part of `hook.Hook`).

A value belongs to the iteration in progress, else to the step just completed (`HookState._record_step`).
Train scalars are kept on saved steps only and are counted to tell a hook blind to the steps
(`_blindness`; before the first counted step, the repeats of the first one's name); eval scalars always. Prediction counts accumulate on the device (`_streams`).
"""

from __future__ import annotations

from typing import Any

import torch

from trainguard.capture.torch._guard import fail_open
from trainguard.capture.torch._hook_state import HookState
from trainguard.capture.torch._step import MAX_HELD_SCALARS
from trainguard.capture.torch._streams import PredictionStreams

FIRST_STEP_REPEATS = 100
"""Repeats of one train scalar before the first counted step beyond which the optimizer has not stepped since
the start: twice what makes `optimizer_not_stepping` warn, so that gradient accumulation over up to 100
micro-batches, each recording its loss, is not mistaken for it."""


class Recording(HookState):
    """Scalars and prediction counts of `hook.Hook`."""

    # --- scalars and control --------------------------------------------------------------------------
    def record_scalar(
        self, name: str, value: float | torch.Tensor, *, mode: str = "train", collection: str | None = None
    ) -> None:
        """Record a scalar (a float or a one-element tensor, which stays on its device until the step's copy).

        A scalar belongs to the iteration in progress: after `optimizer.step()` and before the
        next training forward of a registered module, that is the step just completed. Train
        scalars are kept on saved steps only; eval scalars always. On an iteration where neither
        its step nor the one before is saved the forward is not watched (`ForwardHooks.watch`), so a
        value recorded during it belongs to the step just completed: no train scalar is kept
        either way; an eval scalar recorded mid-iteration lands one step back. `collection` None
        means "losses" for a name with "loss" in it, else "metrics".
        """
        if mode == "train" and self._registered_optimizer:
            n = self._train_scalars = self._train_scalars + 1
            if n > self._blind_after_scalars:
                self._scalars_without_steps(n)
            elif not self.step:
                self._before_first_step(name)
        step = self._record_step()
        if (mode == "train" and step % self._save_interval) or self._writer is None or not self.enabled:
            return
        self._add_scalar(step, name, value, mode, collection)

    @fail_open("record_scalar (train scalars without steps)")
    def _scalars_without_steps(self, n: int) -> None:
        """Train scalars keep coming and no step is counted: blind, if a registered module trains."""
        if self.enabled and any(m.training for m in self._forward.roots):
            # beyond the iteration in progress (a loss recorded after the last counted step belongs to it)
            self._blindness.no_steps(n // self._scalars_per_step - 1, step=self.step)

    def _before_first_step(self, name: str) -> None:
        """No step was counted yet, so how many train scalars an iteration records is unknown: count the
        first name's repeats. Beyond `FIRST_STEP_REPEATS` of them while a registered module trains, the
        optimizer has not stepped since the start (a loss scaler or an inf check skipping every step)."""
        if self._first_scalar is None:
            self._first_scalar = name
        if name != self._first_scalar:
            return
        self._first_scalar_repeats += 1
        if self._first_scalar_repeats > FIRST_STEP_REPEATS:
            self._never_stepped(self._first_scalar_repeats)

    @fail_open("record_scalar (train scalars before any step)")
    def _never_stepped(self, repeats: int) -> None:
        if self.enabled and any(m.training for m in self._forward.roots):
            self._blindness.no_steps(repeats - 1, step=self.step)

    @fail_open("record_scalar({1!r})")
    def _add_scalar(
        self, step: int, name: str, value: float | torch.Tensor, mode: str, collection: str | None
    ) -> None:
        self._scalars.add(step, name, value, mode=mode, collection=collection)
        if self._pending is None and len(self._scalars.held) >= MAX_HELD_SCALARS:
            self._finalize()  # a long eval loop between saved steps: bound what is held

    def record_predictions(
        self,
        scores: Any,
        labels: Any,
        *,
        name: str = "predictions",
        mode: str = "train",
        logits: bool = False,
        max_classes: int = 10,
    ) -> None:
        """Add a batch of predictions to bucket counts (AUC, ROC, PR, calibration downstream).

        Same semantics as `Recorder.record_predictions`. Binary: `scores` [N] probabilities (or
        logits with `logits=True`) and 0/1 `labels`. Multi-class: `scores` [N, C] probabilities and
        integer `labels`, counted one-vs-rest for the `max_classes` most frequent classes of the
        first batch (whose labels are read on the host once). Counts accumulate on the scores'
        device on every call without a host sync; they belong to the step a scalar recorded now
        would (`record_scalar`). Train counts are written on saved steps (everything since the
        previous saved step), eval counts for every step that has some, the rest at `close`; they
        add up exactly. Written counts reach the host in a second small copy of their own
        (float64[3, 10^4] per stream and class) right after the saved step's copy, when the device
        has just synchronised: they do not ride in the step's one copy. A failure (e.g. scores and
        labels of different lengths) never raises: it disables capture like any hook failure.
        """
        if not self.enabled or self.config is None or not self.config.wants("predictions"):
            return
        self._add_predictions(name, mode, scores, labels, logits, max_classes)

    @fail_open("record_predictions({0!r})")
    def _add_predictions(
        self, name: str, mode: str, scores: Any, labels: Any, logits: bool, max_classes: int
    ) -> None:
        streams = self._predictions
        if streams is None:
            assert self._writer is not None
            streams = self._predictions = PredictionStreams(
                self._writer, self._step_writer, is_saved_step=self.is_saved_step
            )
        step = self._record_step()
        streams.add(step, scores, labels, name=name, mode=mode, logits=logits, max_classes=max_classes)
