"""The workload seam: one adapter per kind of training workload, and the registry that finds them.

Charter: the operator stops, resumes and reads every training workload through this package, never
by naming a kind. Each kind is one module here holding a `declaration.WorkloadKind` subclass and its
instance, `KIND` (batch Job, JobSet, PyTorchJob, TrainJob); `declared()` finds them by importing the
package's modules, so a new kind is one module plus its chart switch and RBAC. Adapters are pure
functions over object dicts; the API calls built on them are in `control.py`, the owner walk from a
pod to its top-level workload in `owners.py`. Nothing here imports kopf.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Iterable

from trainguard.errors import TrainGuardError
from trainguard.operator.workloads import declaration

_NOT_KINDS = frozenset({"declaration", "control", "owners"})
_LOCK = threading.Lock()
_DECLARED: list[declaration.WorkloadKind] = []


class UnknownKind(TrainGuardError):
    """A workload kind that no adapter declares."""


def declared() -> list[declaration.WorkloadKind]:
    """Return the adapter of every kind, in module order: the `KIND` of each module of this package.

    Two modules that claim one group and kind raise `TrainGuardError`, naming both."""
    with _LOCK:
        if not _DECLARED:
            found: list[declaration.WorkloadKind] = []
            for info in pkgutil.iter_modules(__path__):
                if info.name.startswith("_") or info.name in _NOT_KINDS:
                    continue
                module = importlib.import_module(f"{__name__}.{info.name}")
                adapter = getattr(module, "KIND", None)
                if not isinstance(adapter, declaration.WorkloadKind):
                    continue
                clash = next((a for a in found if a.matches(adapter.api_version, adapter.kind)), None)
                if clash is not None:
                    raise TrainGuardError(
                        f"{module.__name__}: {adapter!r} is declared twice (also {type(clash).__module__}); "
                        "give each kind one module"
                    )
                found.append(adapter)
            _DECLARED.extend(found)
        return list(_DECLARED)


def find(api_version: str, kind_name: str) -> declaration.WorkloadKind | None:
    """Return the adapter of an object's or owner reference's kind (any version of its group), or None."""
    return next((a for a in declared() if a.matches(api_version, kind_name)), None)


def of(api_version: str, kind_name: str) -> declaration.WorkloadKind:
    """Return the adapter of a kind; raise `UnknownKind` naming the kinds there are."""
    adapter = find(api_version, kind_name)
    if adapter is None:
        known = ", ".join(repr(a) for a in declared())
        raise UnknownKind(f"TrainGuard supervises no {kind_name} ({api_version}); it knows: {known}")
    return adapter


def enabled(chart_keys: Iterable[str]) -> list[declaration.WorkloadKind]:
    """Return the kinds that are always on and those whose chart key (`jobSet`, ...) is in `chart_keys`.

    An unknown key raises `UnknownKind` with the keys there are."""
    keys = set(chart_keys)
    known = {a.chart_key for a in declared() if a.chart_key}
    if keys - known:
        raise UnknownKind(
            f"no workload kind is switched by {', '.join(sorted(keys - known))}; use: {', '.join(sorted(known))}"
        )
    return [a for a in declared() if a.chart_key is None or a.chart_key in keys]


def permissions(kinds: Iterable[declaration.WorkloadKind]) -> dict[tuple[str, str], set[str]]:
    """Return the verbs the operator needs per (group, resource) to supervise `kinds` (their declarations merged)."""
    out: dict[tuple[str, str], set[str]] = {}
    for adapter in kinds:
        for permission in adapter.permissions:
            out.setdefault((permission.group, permission.resource), set()).update(permission.verbs)
    return out


def readable(kinds: Iterable[declaration.WorkloadKind]) -> list[declaration.WorkloadKind]:
    """Return the declared kinds that `kinds`' permissions let the operator `get` (the owner walk may read them)."""
    granted = permissions(kinds)
    return [a for a in declared() if "get" in granted.get((a.group, a.plural), set())]
