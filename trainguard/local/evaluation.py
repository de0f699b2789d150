"""Following and evaluating a supervised run: the evaluator on a thread while CMD runs, one last read after.

`EvaluationThread` is driven by `supervise.Supervisor`: `start()` when CMD has started, `stop()` when it
exited, then `finish()` reads what is left (every rank has its END.json by then) and completes the
evaluation. What a verdict leads to (a printed line, a stop) is the `on_verdict` callback's. Invariant:
an evaluator failure never reaches CMD; it is recorded in `errors` and CMD runs on unsupervised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from trainguard.sidecar.evaluator import Evaluator
from trainguard.sidecar.verdicts import Verdict

FOLLOW_FOR_SECONDS = 365 * 24 * 3600.0
"""The evaluator's idle timeout in local mode: CMD's lifetime bounds the following, not idleness."""


class EvaluationThread:
    """Runs `evaluator` on a daemon thread until `stop()`; `finish()` then completes the evaluation."""

    def __init__(
        self,
        evaluator: Evaluator,
        *,
        on_verdict: Callable[[Verdict], None],
        on_error: Callable[[str], None],
        poll_interval_seconds: float,
    ) -> None:
        self.evaluator = evaluator
        self.on_verdict = on_verdict
        self.on_error = on_error
        """Told once, on the evaluator thread, when following fails (CMD keeps running)."""
        self.poll_interval_seconds = poll_interval_seconds
        self.errors: list[str] = []
        """What failed, as `Type: message`; empty when the evaluation went through."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="trainguard-evaluator", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end and wait for it (it ends after its current poll)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def finish(self) -> None:
        """Read the run one last time and complete the evaluation (not after a failure: report what we have)."""
        if self.errors:
            return
        try:
            self.evaluator.poll(on_verdict=self.on_verdict)
            self.evaluator.finish()
        except Exception as err:  # noqa: BLE001 - report what we have rather than nothing
            self.errors.append(f"{type(err).__name__}: {err}")

    def _follow(self) -> None:
        try:
            self.evaluator.run(
                self._stop,
                self.on_verdict,
                poll_interval_seconds=self.poll_interval_seconds,
                idle_timeout_seconds=FOLLOW_FOR_SECONDS,
            )
        except Exception as err:  # noqa: BLE001 - an evaluator bug must never take the training down
            self.errors.append(f"{type(err).__name__}: {err}")
            self.on_error(self.errors[-1])
