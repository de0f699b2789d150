"""kopf's last-handled record is a digest of the spec: small whatever the spec's size, and it changes with the spec only."""

from __future__ import annotations

import json
from typing import Any

import kopf

from trainguard.operator.diffbase import SpecDigestStorage


def _body(env_bytes: int, *, workers: int = 1, status: dict[str, Any] | None = None) -> kopf.Body:
    template = {
        "spec": {"containers": [{"name": "trainer", "env": [{"name": "BIG", "value": "x" * env_bytes}]}]}
    }
    return kopf.Body({
        "apiVersion": "trainguard.dev/v1alpha1", "kind": "DebugJob",
        "metadata": {"name": "dj", "namespace": "ns", "labels": {"team": "a"},
                     "annotations": {"note": "y" * 1000}},
        "spec": {"workers": workers, "template": template}, "status": status or {},
    })  # fmt: skip


def test_the_stored_record_stays_small_for_a_large_spec() -> None:
    storage = SpecDigestStorage(prefix="trainguard.dev", key="last-handled-configuration")
    essence = storage.build(body=_body(200_000))
    assert len(json.dumps(essence)) < 100


def test_the_record_changes_with_the_spec_and_not_with_status_labels_or_annotations() -> None:
    storage = SpecDigestStorage(prefix="trainguard.dev", key="last-handled-configuration")
    first = storage.build(body=_body(10))
    assert storage.build(body=_body(10, status={"phase": "Running"})) == first
    assert storage.build(body=_body(10, workers=2)) != first
    assert storage.build(body=_body(11)) != first
