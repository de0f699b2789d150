"""The walk from a pod up its controllers to the workload to supervise (Pod -> Job -> JobSet -> TrainJob).

Pure: the caller passes `get`, which reads one object (an API GET in `control.owner_chain`, a dict in
tests). The walk follows `controller: true` owner references only, reads only the kinds it is given
(those the operator may `get`), and checks each owner's uid, so a recreated object of the same name
is never taken for the owner. The workload to supervise is the highest object of a supervised kind;
a controller above it that the walk could not read is reported (`beyond`), because such an owner
may undo a suspension of what it controls (Trainer re-applies its JobSet, JobSet resumes its Jobs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from trainguard.operator.workloads import declaration

MAX_DEPTH = 8
"""Owners followed at most: real chains have three (Job, JobSet, TrainJob); a cycle must not loop."""

Get = Callable[[declaration.WorkloadKind, str, str], "declaration.Object | None"]
"""Reads one object: (adapter, namespace, name) -> the object, or None when it does not exist."""


@dataclasses.dataclass(frozen=True)
class Link:
    """One owner on the way up: the object and the adapter of its kind."""

    adapter: declaration.WorkloadKind
    obj: declaration.Object


@dataclasses.dataclass(frozen=True)
class Chain:
    """A pod's controllers, the nearest first, as far as the walk could read them."""

    links: tuple[Link, ...]
    beyond: declaration.Ref | None = None
    """The last link's controller when the walk did not read it: a kind it may not read, or an owner that is gone."""

    def top(self, supervised: Iterable[declaration.WorkloadKind]) -> Link | None:
        """Return the highest link of a `supervised` kind: the workload to stop (None when no link is one)."""
        kinds = list(supervised)
        return next((link for link in reversed(self.links) if link.adapter in kinds), None)


def walk(pod: declaration.Object, *, get: Get, readable: Iterable[declaration.WorkloadKind]) -> Chain:
    """Return the chain of the pod's controllers that are of `readable` kinds, read with `get`."""
    kinds = list(readable)
    namespace = str((pod.get("metadata") or {}).get("namespace", ""))
    links: list[Link] = []
    current = pod
    for _ in range(MAX_DEPTH):
        ref = declaration.controller_ref(current)
        if ref is None:
            return Chain(links=tuple(links))
        adapter = next((a for a in kinds if a.matches(ref.api_version, ref.kind)), None)
        owner = get(adapter, namespace, ref.name) if adapter is not None else None
        if (
            adapter is None
            or owner is None
            or (ref.uid and (owner.get("metadata") or {}).get("uid") != ref.uid)
        ):
            return Chain(links=tuple(links), beyond=ref)
        links.append(Link(adapter=adapter, obj=owner))
        current = owner
    return Chain(links=tuple(links), beyond=declaration.controller_ref(current))
