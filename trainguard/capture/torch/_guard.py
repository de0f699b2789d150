"""Fail-open: a failure inside the hook disables capture and never reaches the training loop.

Every hook body that does real work (registration, a saved step, scalars, predictions, flush)
is a method decorated with `fail_open(where)`: an `Exception` inside goes to the hook's `_fail`
(log once, record the error in END.json, remove the hooks) and stops there; anything else
(KeyboardInterrupt, SystemExit) passes through. `where` is a `str.format` template over the
method's positional arguments (`{0}` is the first after `self`), formatted only when something
failed. A decorator, not a context manager: it costs one plain call per body (a `with` block
costs several times that, which a saved step on the C kernel's path would feel), and the
per-step fast paths return before they reach a guarded body.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

P = ParamSpec("P")


class Failing(Protocol):
    """What a guarded method's object offers: the handler that disables capture."""

    def _fail(self, where: str, err: BaseException) -> None: ...


S = TypeVar("S", bound=Failing)


def fail_open(where: str) -> Callable[[Callable[Concatenate[S, P], None]], Callable[Concatenate[S, P], None]]:
    """Decorate a hook body: an `Exception` inside goes to `self._fail(where.format(*args), err)`, never further."""

    def decorate(body: Callable[Concatenate[S, P], None]) -> Callable[Concatenate[S, P], None]:
        def guarded(self: S, /, *args: P.args, **kwargs: P.kwargs) -> None:
            try:
                body(self, *args, **kwargs)
            except Exception as err:  # noqa: BLE001 - never raise into training
                try:
                    message = where.format(*args)
                except (IndexError, KeyError, AttributeError, ValueError):
                    message = where  # a template that does not fit its method must not raise either
                self._fail(message, err)

        functools.update_wrapper(guarded, body)  # name and docstring of the body, for tracebacks and help()
        return guarded

    return decorate
