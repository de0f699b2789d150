"""The PyTorch hook's prediction streams: bucket counts kept on the device, written once a step is over.

`Hook.record_predictions` adds each batch to its stream's `PredictionCounter` (counts stay on the
scores' device, no host sync). When a stream's step is over, its counts are queued if that step
writes them (train: saved steps; eval: every step that has some; all at `close`), and `ship`
copies every queued count to the host in one small copy of their own, right after the saved
step's copy, and writes them (`capture.prediction_counter.write_counts`) once that copy is done: like the
steps', it does not wait for the device (`_finalize.StepWriter.send_results`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trainguard.capture.prediction_counter import PredictionCounter, write_counts
from trainguard.capture.torch._finalize import StepWriter
from trainguard.store import writer


@dataclass
class _Stream:
    """One named prediction stream: counts on the device, and the step they belong to."""

    counter: PredictionCounter
    step: int


class PredictionStreams:
    """Every (name, mode) stream of one hook, and the counts of finished steps waiting for their copy."""

    def __init__(
        self, w: writer.RankWriter, step_writer: StepWriter, *, is_saved_step: Callable[[int], bool]
    ) -> None:
        self._writer = w
        self._step_writer = step_writer
        self._is_saved_step = is_saved_step
        self._streams: dict[tuple[str, str], _Stream] = {}
        self._ready: list[tuple[int, str, str, dict[int, Any]]] = []
        """Counts of finished steps, still on the device: (step, name, mode, {class: counts})."""

    def add(
        self, step: int, scores: Any, labels: Any, *, name: str, mode: str, logits: bool, max_classes: int
    ) -> None:
        """Add a batch to stream (`name`, `mode`) at `step`, closing the stream's earlier step first."""
        stream = self._streams.get((name, mode))
        if stream is None:
            counter = PredictionCounter(logits=logits, max_classes=max_classes)
            stream = self._streams[(name, mode)] = _Stream(counter, step)
        elif step > stream.step:
            self._close(name, mode, stream, step)
        stream.counter.add(scores, labels)

    def _close(self, name: str, mode: str, stream: _Stream, step: int, *, final: bool = False) -> None:
        """The counts of `stream.step` are complete: queue them if that step writes them, then go on at `step`."""
        if final or mode != "train" or self._is_saved_step(stream.step):
            raw = stream.counter.take_raw()  # still on the device
            if raw:
                self._ready.append((stream.step, name, mode, raw))
        stream.step = step

    def ship(self, now: int, *, final: bool = False) -> None:
        """Close the streams whose step is over (all of them when `final`) and write their counts in one copy."""
        for (name, mode), stream in self._streams.items():
            if final or stream.step < now:
                self._close(name, mode, stream, now, final=final)
        ready, self._ready = self._ready, []
        if not ready:
            return
        flat: list[torch.Tensor | np.ndarray] = [
            torch.as_tensor(t) for *_, raw in ready for t in raw.values()
        ]

        def write(host: Iterator[np.ndarray]) -> None:
            for step, name, mode, raw in ready:
                counts = {cls: next(host).reshape(tuple(t.shape)) for cls, t in raw.items()}
                write_counts(self._writer, step, name, mode, counts)

        if not self._step_writer.send_results(flat, write):
            self._step_writer.transfer.wait()  # counts must add up: never skipped, waited for when the ring is full
            self._step_writer.send_results(flat, write)
