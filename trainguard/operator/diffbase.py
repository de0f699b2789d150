"""kopf's record of the last handled spec, kept as a digest so that it never eats the annotation budget.

kopf stores the "essence" of the last handled object (spec, labels, annotations) in an annotation
to tell real spec updates from other events. Kubernetes caps all annotations of an object at 256
KiB together, and `kubectl apply` already keeps a full copy of the object in its own annotation:
with kopf's copy on top, a DebugJob with a spec over about 128 KiB (a large pod template) could
no longer be patched by the operator, so its status would never be written. The operator reacts
only to changes of `spec` (`@kopf.on.update(field="spec")`) and reads the spec from the event's
body, never from kopf's `old`/`diff`, so a digest of the spec is all it needs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

import kopf


class SpecDigestStorage(kopf.AnnotationsDiffBaseStorage):
    """An annotation diff-base that holds `{"spec": {"sha256": ...}}` instead of a copy of the object."""

    def build(self, *, body: kopf.Body, extra_fields: Iterable[Any] | None = None) -> kopf.BodyEssence:
        essence = super().build(body=body, extra_fields=extra_fields)
        spec = dict(essence).get("spec")
        digest = hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        result: kopf.BodyEssence = {"spec": {"sha256": digest}}
        return result
