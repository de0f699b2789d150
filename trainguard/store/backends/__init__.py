"""The storage protocol and the scheme registry.

A backend moves whole objects under one root: put, get, list after a key, exists. Each backend is one
module of this package holding its store class and its declaration, `BACKEND` (a
`declaration.Backend`: scheme, settings, credentials); `declared()` finds them by importing the
package's modules, so a new backend is one module. Store classes are imported on first use, so
`file://` never imports boto3. Retries live in each backend (bounded, logged); callers see `StoreError`.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import threading
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from trainguard.store import errors
from trainguard.store.backends import declaration


@runtime_checkable
class Store(Protocol):
    """Objects under one root URI. Keys are relative, `/`-separated, and sort as plain strings."""

    uri: str

    def put(self, key: str, data: bytes) -> None:
        """Write an object whole; a reader sees all of it or none of it."""

    def get(self, key: str) -> bytes:
        """Return an object's bytes; raise `errors.NotFound` if it does not exist, `errors.RefusedObject` if
        it is not something to read (a FIFO, a device, a link out of the root)."""

    def list(
        self,
        prefix: str = "",
        *,
        start_after: str | None = None,
        delimiter: str | None = None,
        limit: int | None = None,
    ) -> list[str]:
        """Return the keys under `prefix` that sort after `start_after`, in order.

        With `delimiter="/"` return the immediate "sub-folders" (ending in `/`) and objects only.
        With `limit`, return the first `limit` entries at most: a probe of a prefix that may hold many
        unrelated objects then costs one request, not one per thousand objects.
        """

    def exists(self, key: str) -> bool:
        """Return whether an object exists."""

    def delete(self, key: str) -> None:
        """Remove an object if it exists."""


PROBE_KEYS = 1000
"""Entries a format probe asks for in one listing (`limit=`; one S3 request): a root that also holds many
unrelated objects is told apart from a run in a few requests, whatever it holds."""

_LOCK = threading.Lock()
_DECLARED: dict[str, declaration.Backend] = {}
_REGISTERED: dict[str, declaration.Backend] = {}


def register(backend: declaration.Backend) -> None:
    """Register a backend that lives outside this package (one of this package is found by `declared()`).

    It may replace the backend of its scheme; a setting or credential name that another backend declares
    is refused (`StoreError`). The DebugJob's `spec.capture` has the fields of the backends known when
    `trainguard.api` is first imported."""
    known = {scheme: b for scheme, b in declared().items() if scheme != backend.scheme}
    _check(known, backend, where="register()")
    with _LOCK:
        _REGISTERED[backend.scheme] = backend


def declared() -> dict[str, declaration.Backend]:
    """Return every backend by scheme: the `BACKEND` of each module of this package, then the registered ones.

    Raises `StoreError` when two modules claim one scheme, setting or credential name (they share
    `spec.capture`), naming both."""
    with _LOCK:
        if not _DECLARED:
            found: dict[str, declaration.Backend] = {}
            for info in pkgutil.iter_modules(__path__):
                if info.name.startswith("_") or info.name == "declaration":
                    continue
                module = importlib.import_module(f"{__name__}.{info.name}")
                backend = getattr(module, "BACKEND", None)
                if isinstance(backend, declaration.Backend):
                    _check(found, backend, where=module.__name__)
                    found[backend.scheme] = backend
            _DECLARED.update(found)
        return {**_DECLARED, **_REGISTERED}


def _check(known: dict[str, declaration.Backend], new: declaration.Backend, *, where: str) -> None:
    if new.scheme in known:
        raise errors.StoreError(
            f"{where}: scheme {new.scheme}:// is declared twice; give each backend its own"
        )
    for other in known.values():
        for what, mine, theirs in (
            ("setting", {s.name for s in new.settings}, {s.name for s in other.settings}),
            ("credential", {c.name for c in new.credentials}, {c.name for c in other.credentials}),
        ):
            if mine & theirs:
                raise errors.StoreError(
                    f"{where}: the {new.scheme}:// backend declares {what} {min(mine & theirs)!r}, which the "
                    f"{other.scheme}:// backend declares too; they share spec.capture, so rename one"
                )


def scheme_of(uri: str) -> str:
    """Return the scheme of a run root URI (`file` for a plain path)."""
    return uri.split("://", 1)[0] if "://" in uri else "file"


def for_uri(uri: str) -> declaration.Backend:
    """Return the backend that serves `uri`; raise `UnknownScheme` naming the schemes there are."""
    scheme = scheme_of(uri)
    found = declared()
    try:
        return found[scheme]
    except KeyError:
        raise errors.UnknownScheme(
            f"no storage backend for {scheme}:// in {uri!r}; use one of: "
            + ", ".join(f"{s}://" for s in sorted(found))
        ) from None


def fold_older_names(doc: object, *, uri_key: str, into: str) -> object:
    """Return a settings document with the store settings given under older names (`s3_endpoint`) moved to
    `doc[into]` when `doc[uri_key]`'s backend declares them, and dropped when another backend does (they never
    applied to this run); anything else as it is. For a model's `before` validator."""
    if not (isinstance(doc, Mapping) and isinstance(doc.get(uri_key), str)):
        return doc
    try:
        ours = for_uri(doc[uri_key])
    except errors.StoreError:
        return doc  # an unknown scheme is reported when the store is opened
    others = {a for b in declared().values() if b is not ours for s in b.settings for a in s.aliases}
    return ours.fold_aliases({k: v for k, v in doc.items() if k not in others}, into=into)


def open_store(uri: str, **options: object) -> Store:
    """Return the backend for `uri` (`file:///path`, `s3://bucket/prefix`, or a plain path)."""
    if "://" not in uri:
        uri = "file://" + os.path.abspath(uri)
    backend = for_uri(uri)
    module_name, class_name = backend.store_class.rsplit(".", 1)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise errors.StoreError(
            f"the {backend.scheme}:// backend needs a missing package ({err}); {backend.install_hint}"
        ) from err
    cls = getattr(module, class_name)
    try:
        store: Store = cls(uri, **options)
    except ModuleNotFoundError as err:  # a client library imported on first use (boto3 for s3://)
        raise errors.StoreError(
            f"the {backend.scheme}:// backend needs a missing package ({err}); {backend.install_hint}"
        ) from err
    return store
