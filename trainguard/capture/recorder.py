"""`Recorder`: capture for plain numpy training loops (and for our benchmarks).

The same run format and the same statistics as the PyTorch hook, computed with numpy on the
host: `record_tensor` and `record_scalar` during a step, `step()` to end it. Nothing is
computed on steps that are not saved; their scalars are kept (one float each). Like the hook it never raises into the training loop
after construction: a failure disables capture, logs once and is recorded in END.json.
"""

from __future__ import annotations

import atexit
import logging
import time
from types import TracebackType
from typing import TYPE_CHECKING

import numpy as np

from trainguard.capture import exit_watch
from trainguard.capture.config import CaptureConfig
from trainguard.capture.prediction_counter import PredictionCounter, write_counts
from trainguard.stop_flag import StopFlag
from trainguard.store import stats as numpy_stats
from trainguard.store import writer

if TYPE_CHECKING:
    from typing_extensions import Self

log = logging.getLogger(__name__)

_PARAM_COLLECTIONS = ("weights", "biases")


class Recorder:
    """Records tensors and scalars of a numpy training loop into a TrainGuard run."""

    def __init__(
        self, out: str | None = None, *, config: CaptureConfig | None = None, **settings: object
    ) -> None:
        if config is None:
            config = CaptureConfig.from_env(**({"out": out} if out else {}), **settings)  # type: ignore[arg-type]
        self.config = config
        self.enabled = config is not None
        self.current_step = 0
        self._pending: list[tuple[int, np.ndarray, str | None]] = []
        self._scalars: list[tuple[int, float]] = []
        self._prev: dict[int, np.ndarray] = {}
        self._first: dict[int, np.ndarray] = {}
        self._saved_steps = 0
        self._predictions: dict[tuple[str, str], PredictionCounter] = {}
        self._writer: writer.RankWriter | None = None
        self._stop = StopFlag(config.stop_file if config else None)
        if config is None:
            return
        self._writer = config.open_writer(framework="numpy")
        exit_watch.install()
        atexit.register(self.close)

    # --- recording ----------------------------------------------------------------------------
    def is_saved_step(self, step: int | None = None) -> bool:
        """Return whether `step` (default: the current one) is a saved step; never, for an inert recorder."""
        if self.config is None:
            return False
        return ((self.current_step if step is None else step) % self.config.save_interval) == 0

    def _tier1(self) -> bool:
        assert self.config is not None
        return (self._saved_steps % self.config.tier1_interval) == 0

    def record_tensor(
        self,
        name: str,
        array: np.ndarray,
        *,
        collection: str = "weights",
        trainable: bool | None = None,
        module: str | None = None,
        module_type: str | None = None,
        activation: str | None = None,
        order: int | None = None,
    ) -> None:
        """Record a tensor for the current step (ignored on steps that are not saved)."""
        w = self._writer
        if w is None or w.disabled or not self.config or not self.config.wants(collection):
            return
        if not self.is_saved_step():
            return
        try:
            arr = np.asarray(array)
            units = (
                int(arr.shape[1])
                if activation and arr.ndim >= 2
                else (int(arr.shape[0]) if arr.ndim == 1 else None)
            )
            tid = w.define(
                name,
                collection=collection,
                shape=list(arr.shape),
                dtype=str(arr.dtype),
                module=module,
                module_type=module_type,
                trainable=collection in _PARAM_COLLECTIONS if trainable is None else trainable,
                activation=activation,
                order=order,
                units=units,
            )
            self._pending.append((tid, np.array(arr, copy=True), activation))
        except Exception as err:  # noqa: BLE001 - never raise into training
            self._fail(f"record_tensor({name!r}) failed: {type(err).__name__}: {err}")

    def record_scalar(
        self, name: str, value: float, *, mode: str = "train", collection: str | None = None
    ) -> None:
        """Record a scalar, train or eval, at any step (every step's are kept: a float each)."""
        w = self._writer
        if w is None or w.disabled:
            return
        try:
            coll = collection or ("losses" if "loss" in name.lower() else "metrics")
            tid = w.define(name, collection=coll, mode=mode)
            self._scalars.append((tid, float(value)))
        except Exception as err:  # noqa: BLE001
            self._fail(f"record_scalar({name!r}) failed: {type(err).__name__}: {err}")

    def record_predictions(
        self,
        scores: np.ndarray,
        labels: np.ndarray,
        *,
        name: str = "predictions",
        mode: str = "train",
        logits: bool = False,
        max_classes: int = 10,
    ) -> None:
        """Add a batch of predictions to bucket counts (AUC, ROC, PR, calibration downstream).

        Binary: `scores` [N] probabilities (or logits with `logits=True`) and 0/1 `labels`.
        Multi-class: `scores` [N, C] probabilities and integer `labels`, counted one-vs-rest for the
        `max_classes` most frequent classes. Counts accumulate on every call and are written on
        saved steps (train) or at the end of the step (eval), so they add up exactly.
        """
        w = self._writer
        if w is None or w.disabled or not self.config or not self.config.wants("predictions"):
            return
        try:
            counter = self._predictions.setdefault(
                (name, mode), PredictionCounter(logits=logits, max_classes=max_classes)
            )
            counter.add(scores, labels)
        except Exception as err:  # noqa: BLE001 - never raise into training
            self._fail(f"record_predictions({name!r}) failed: {type(err).__name__}: {err}")

    def _write_predictions(self, w: writer.RankWriter, step: int, *, final: bool = False) -> None:
        for (name, mode), counter in self._predictions.items():
            if mode == "train" and not final and not self.is_saved_step(step):
                continue
            write_counts(w, step, name, mode, counter.take())

    def step(self) -> None:
        """End the current step: compute and buffer its statistics if it is saved, then advance."""
        w = self._writer
        try:
            if w is not None and not w.disabled:
                with w.together():  # the step's scalars, statistics and counts in one segment
                    self._write_current(w)
                    self._write_predictions(w, self.current_step)
        except Exception as err:  # noqa: BLE001
            self._fail(f"step {self.current_step} failed: {type(err).__name__}: {err}")
        self._pending.clear()
        self._scalars.clear()
        self.current_step += 1

    def _write_current(self, w: writer.RankWriter) -> None:
        step = self.current_step
        if self._scalars:
            ids, values = zip(*self._scalars)
            w.write_scalars(step, list(ids), list(values))
        if not self._pending:
            return
        tier1 = self._tier1()
        ids_list, rows = [], []
        units: dict[tuple[str, int], np.ndarray] = {}
        hists: dict[int, np.ndarray] = {}
        for tid, arr, activation in self._pending:
            info = w.info(tid)
            prev = first = None
            if info.trainable:
                prev = self._prev.get(tid)
                first = self._first.setdefault(tid, arr)
                self._prev[tid] = arr
            ids_list.append(tid)
            rows.append(numpy_stats.tier0(arr, prev=prev, first=first))
            if tier1:
                hists[tid] = numpy_stats.log2_hist(arr)
                if activation:
                    u = numpy_stats.unit_activity(arr, activation)
                    if u is not None:
                        units[(u[0], tid)] = u[1]
                if info.trainable:
                    moved = numpy_stats.unit_moved(arr, prev)
                    if moved is not None:
                        units[(numpy_stats.MOVED, tid)] = moved
        order = np.argsort(ids_list)
        w.write_step(
            step,
            np.asarray(ids_list, np.int32)[order],
            np.stack(rows)[order],
            wall_time=time.time(),
            units=units or None,
            hists=hists or None,
        )
        self._saved_steps += 1

    # --- control ------------------------------------------------------------------------------
    def should_stop(self) -> bool:
        """True once the evaluator asked this job to stop (cooperative stop)."""
        return self._stop.is_set()

    def _fail(self, message: str) -> None:
        if self._writer is not None:
            self._writer._fail(message)
        else:
            log.error("trainguard: %s", message)

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Flush, write END.json and stop the uploader. Idempotent; also runs at interpreter exit."""
        self._close(exception=exit_watch.uncaught())

    def _close(self, *, exception: str | None) -> None:
        if self._writer is not None:
            if not self._writer.closed and not self._writer.disabled:
                try:  # counts added since the last saved step still belong to the run
                    self._write_predictions(self._writer, max(self.current_step - 1, 0), final=True)
                except Exception as err:  # noqa: BLE001
                    self._fail(f"writing the last prediction counts failed: {type(err).__name__}: {err}")
            # a stop that should_stop() told the script about ended the run: END.json says `stopped`
            self._writer.close(exception=exception, status="stopped" if self._stop.told else "ok")
            atexit.unregister(self.close)

    @property
    def errors(self) -> list[str]:
        return [] if self._writer is None else list(self._writer.errors)

    @property
    def lost_steps(self) -> int:
        """Steps whose data never reached the store: the store failed for longer than the pending segments'
        memory (`max_pending_bytes`) covers, or `close()` ran out of time; also END.json `lost_steps`."""
        return 0 if self._writer is None else self._writer.lost_steps

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # an exception ending the block is what ended the capture (the excepthook, if any, comes too late)
        self._close(exception=exit_watch.describe(exc) if exc is not None else exit_watch.uncaught())
