"""Fail-open: a failure inside the hook disables capture and never reaches the training loop.

Every hook body that does real work (registration, a saved step, scalars, predictions, flush)
runs it inside one `FailOpen` context. On an `Exception` it calls the hook's failure handler
(log once, record the error in END.json, remove the hooks) and swallows the exception; anything
else (KeyboardInterrupt, SystemExit) passes through. `where` is %-formatted with its arguments
only when something failed, so a guard costs one small object, and the per-step fast paths
return before they need one.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType


class FailOpen:
    """Context manager: an `Exception` inside goes to `on_failure(where % args, err)` and stops there."""

    __slots__ = ("_args", "_on_failure", "_where")

    def __init__(self, on_failure: Callable[[str, BaseException], None], where: str, *args: object) -> None:
        self._on_failure = on_failure
        self._where = where
        self._args = args

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        if exc is None or not isinstance(exc, Exception):
            return False
        self._on_failure(self._where % self._args if self._args else self._where, exc)
        return True
