"""DebugJob models: camelCase on the wire, defaults with reasons, shape checks the schema cannot express."""

from __future__ import annotations

import pydantic
import pytest

from trainguard.api import debugjob
from trainguard.api.enums import Action


def _spec(**extra: object) -> dict[str, object]:
    spec: dict[str, object] = {
        "template": {"spec": {"containers": [{"name": "trainer", "image": "x"}]}},
        "capture": {"uri": "s3://bucket/prefix/"},
    }
    spec.update(extra)
    return spec


def test_spec_reads_camel_case_and_fills_defaults() -> None:
    spec = debugjob.DebugJobSpec.model_validate(
        _spec(
            containerName="trainer",
            runPolicy={"activeDeadlineSeconds": 60},
            capture={"uri": "s3://bkt/p", "saveInterval": 5},
        )
    )
    assert spec.workers == 1 and spec.master_port == 23456
    assert spec.run_policy.active_deadline_seconds == 60 and spec.run_policy.backoff_limit == 0
    assert spec.capture.save_interval == 5
    assert spec.actions.stop.grace_period_seconds == 30
    assert spec.rules == []


def test_capture_uri_loses_its_trailing_slash() -> None:
    assert debugjob.DebugJobSpec.model_validate(_spec()).capture.uri == "s3://bucket/prefix"


def test_duplicate_rule_names_are_refused_with_the_index() -> None:
    rules = [{"type": "exploding_tensor"}, {"type": "exploding_tensor", "action": "stop"}]
    with pytest.raises(pydantic.ValidationError, match=r"rules\[1\]: duplicate rule name 'exploding_tensor'"):
        debugjob.DebugJobSpec.model_validate(_spec(rules=rules))


def test_custom_python_rules_are_checked_for_shape_only() -> None:
    ok = debugjob.DebugJobSpec.model_validate(
        _spec(rules=[{"type": "python:pkg.mod:MyRule", "action": "stop"}])
    )
    assert ok.rules[0].key == "MyRule" and ok.rules[0].action == Action.STOP
    with pytest.raises(pydantic.ValidationError, match="python:module:Class"):
        debugjob.DebugJobSpec.model_validate(_spec(rules=[{"type": "python:pkg.mod"}]))


def test_unknown_spec_keys_are_refused() -> None:
    with pytest.raises(pydantic.ValidationError, match="workerz"):
        debugjob.DebugJobSpec.model_validate(_spec(workerz=2))


def test_webhook_format_is_a_closed_set() -> None:
    hook = {"name": "h", "urlSecretRef": {"name": "s", "key": "url"}, "format": "teams"}
    with pytest.raises(pydantic.ValidationError, match="generic"):
        debugjob.DebugJobSpec.model_validate(_spec(actions={"notify": {"webhooks": [hook]}}))


def test_status_ignores_fields_it_does_not_know() -> None:
    status = debugjob.DebugJobStatus.model_validate(
        {"phase": "Running", "reports": {"rank-00000": {"lastStep": 3, "rules": [
            {"name": "r", "state": "IssuesFound", "action": "stop", "extra": 1}]}}}
    )  # fmt: skip
    assert status.reports["rank-00000"].rules[0].name == "r"


@pytest.mark.parametrize(
    "extra, field",
    [
        ({"nprocPerNode": 20000}, "nprocPerNode"),
        ({"workers": 10**9}, "workers"),
        ({"actions": {"stop": {"gracePeriodSeconds": 10**18}}}, "gracePeriodSeconds"),
        ({"rules": [{"type": "loss_spike", "name": f"r{i}"} for i in range(101)]}, "rules"),
    ],
    ids=["nproc", "workers", "grace-period", "rules"],
)
def test_sizes_that_would_flood_the_operator_are_refused(extra: dict[str, object], field: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=field):
        debugjob.DebugJobSpec.model_validate(_spec(**extra))
