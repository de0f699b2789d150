"""Notices an uncaught exception that ends the training script, so that END.json says the run failed.

`install()` wraps `sys.excepthook` once per process, chaining to the hook that was there; `uncaught()`
returns `Type: message` of the exception that reached it, or None. An exception that leaves a `with`
block of the hook or the Recorder is handed to their close directly (`describe`). The PyTorch hook and the Recorder
install it when they start and read it when they close at interpreter exit (atexit runs after the
traceback is printed). A script that ends through `sys.exit(code)` raises no such exception: its exit
status is for the supervisor that runs it (`trainguard run`, the Job controller) to record.
"""

from __future__ import annotations

import sys
from types import TracebackType

MAX_CHARS = 500
"""A message longer than this is cut: END.json is a small document."""

_uncaught: str | None = None
_installed = False


def install() -> None:
    """Wrap `sys.excepthook` (once) so that an uncaught exception is noted before it is printed."""
    global _installed
    if _installed:
        return
    _installed = True
    previous = sys.excepthook

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        global _uncaught
        _uncaught = describe(exc)
        previous(kind, exc, tb)

    sys.excepthook = hook


def describe(exc: BaseException) -> str | None:
    """`Type: message` of an exception that ends a capture (cut to MAX_CHARS); None for `SystemExit`, whose
    status is the supervisor's to record."""
    if isinstance(exc, SystemExit):
        return None
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 3] + "..."


def uncaught() -> str | None:
    """The uncaught exception that is ending the script (`Type: message`), or None."""
    return _uncaught
