"""Recording scalars and prediction counts (`record_scalar`, `record_predictions`; part of `hook.Hook`).

A value belongs to the iteration in progress, else to the step just completed (`HookState._record_step`).
Every scalar is kept, train and eval, at every step: a float is written at once; a device tensor is held (a
reference, no copy, no host read) until the next saved step's one copy to the host takes it with the step's
results (`_step.Scalars`). Train scalars are also counted to tell a hook blind to the steps (`_blindness`;
before the first counted step, the repeats of the first one's name). Prediction counts accumulate on the device
(`_streams`).

The forward of an iteration that neither is saved nor follows a saved one is not watched (`ForwardHooks.watch`),
so there the hook cannot tell a value recorded before the optimizer step from one recorded after it: it places
it as the same name was placed on the last watched iteration (`_placed`), so that a loss recorded before
`optimizer.step()` gets one value per step, not two at the step after a saved one and none at the step before
the next.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from trainguard.capture.torch._guard import fail_open
from trainguard.capture.torch._hook_state import HookState
from trainguard.capture.torch._step import MAX_HELD_SCALARS
from trainguard.capture.torch._streams import PredictionStreams

log = logging.getLogger(__name__)

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
        and eval scalars are kept at every step. On an iteration where neither its step nor the
        one before is saved the forward is not watched (`ForwardHooks.watch`): a train scalar is
        placed as its name was on the last watched iteration (before or after the optimizer step);
        an eval scalar recorded mid-iteration lands one step back. `collection` None means
        "losses" for a name with "loss" in it, else "metrics".
        """
        if mode == "train" and self._registered_optimizer:
            n = self._train_scalars = self._train_scalars + 1
            if n > self._blind_after_scalars:
                self._scalars_without_steps(n)
            elif not self.step:
                self._before_first_step(name)
        w = self._writer  # `enabled`, inline (every step pays it)
        if w is None or w.uploads.disabled or self._closed or self._failed:
            return
        if mode != "train":
            step = self._record_step()
        else:
            # the step it belongs to, inline (every step pays it): on a watched iteration (the forward pre-hook is
            # installed) `_in_iteration` tells, and is remembered per name for the iterations that are not watched
            if self._forward.root_handles:
                mid = self._in_iteration
                if self._placed.get(name) is not mid:
                    self._placed[name] = mid
            else:
                mid = self._placed.get(name, False)
            step = self.step if mid or not self.step else self.step - 1
        # fail-open as `fail_open` makes a hook body, written out: its wrapper would cost every step a call
        try:
            self._scalars.add(step, name, value, mode=mode, collection=collection)
            if self._pending is None and len(self._scalars.held) >= MAX_HELD_SCALARS:
                self._send_held()
        except Exception as err:  # noqa: BLE001 - never raise into training
            self._fail(f"record_scalar({name!r})", err)

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

    def _send_held(self) -> None:
        """`MAX_HELD_SCALARS` device scalars wait for a saved step (a long save interval, or a long eval loop
        between saved steps): send them now in a copy of their own, without waiting; when every host buffer
        is still in flight, drop them rather than wait for the device, counted (END.json `dropped_scalars`)."""
        assert self._writer is not None
        if self._transfer.has_room():
            self._step_writer.send(None, self._scalars.take())
            return
        dropped = len(self._scalars.take())
        if not self._writer.dropped_scalars:
            log.warning(
                "trainguard: %d device scalars waited for a saved step and every host buffer was still in "
                "flight: dropped rather than wait for the device (further drops are only counted: END.json "
                "dropped_scalars)",
                dropped,
            )
        self._writer.dropped_scalars += dropped

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
