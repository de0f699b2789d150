"""The storage protocol and the scheme registry.

A backend moves whole objects under one root: put, get, list after a key, exists. Backends
register by URI scheme with a dotted class path and are imported on first use, so `file://`
never imports boto3. Retries live in each backend (bounded, logged); callers see `StoreError`.
"""

from __future__ import annotations

import importlib
from typing import Protocol, runtime_checkable

from trainguard.store import errors


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

_REGISTRY: dict[str, tuple[str, str]] = {
    "file": ("trainguard.store.backends.local.FileStore", ""),
    "s3": ("trainguard.store.backends.s3.S3Store", "pip install 'trainguard[s3]'"),
}


def register(scheme: str, class_path: str, *, install_hint: str = "") -> None:
    """Register a backend class (by dotted path) for a URI scheme."""
    _REGISTRY[scheme] = (class_path, install_hint)


def open_store(uri: str, **options: object) -> Store:
    """Return the backend for `uri` (`file:///path`, `s3://bucket/prefix`, or a plain path)."""
    scheme = uri.split("://", 1)[0] if "://" in uri else "file"
    if "://" not in uri:
        import os

        uri = "file://" + os.path.abspath(uri)
    try:
        class_path, hint = _REGISTRY[scheme]
    except KeyError:
        raise errors.UnknownScheme(
            f"no storage backend for {scheme}:// in {uri!r}; use one of: "
            + ", ".join(f"{s}://" for s in sorted(_REGISTRY))
        ) from None
    module_name, class_name = class_path.rsplit(".", 1)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise errors.StoreError(f"the {scheme}:// backend needs a missing package ({err}); {hint}") from err
    cls = getattr(module, class_name)
    store: Store = cls(uri, **options)
    return store
