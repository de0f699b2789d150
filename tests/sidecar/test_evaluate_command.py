"""`trainguard evaluate URI`: the rules offline on our runs, smdebug output and TensorBoard logs; exit 1 on warnings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sidecar.runs import custom, write_run
from trainguard.cli import main
from trainguard.store.backends import open_store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def rules_file(tmp_path: Path) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(  # these two alone, not the default set with them
        f"defaults: false\nrules:\n  - type: {custom('NonFinite')}\n    name: nan-guard\n    action: stop\n"
        f"  - type: {custom('StepLedger')}\n    name: ledger\n"
    )
    return path


def test_a_run_with_a_critical_finding_exits_1_and_writes_the_findings(
    file_uri: str, rules_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(open_store(file_uri), segments=4, nan_at=[13, 14])
    out = tmp_path / "out" / "verdicts.json"
    assert main(["evaluate", file_uri, "--rules", str(rules_file), "--json", str(out)]) == 1
    table = capsys.readouterr().out
    assert "nan-guard  IssuesFound" in table and "ledger     NoIssuesFound" in table
    doc = json.loads(out.read_text())
    assert doc["exit_code"] == 1 and doc["ended"] is True and doc["last_step"] == 19 and doc["ranks"] == [0]
    assert doc["rules"]["nan-guard"]["state"] == "IssuesFound" and doc["rules"]["nan-guard"]["step"] == 13
    assert [(f["rule"], f["step"], f["severity"], f["tensor"]) for f in doc["findings"]] == [
        ("nan-guard", 13, "critical", "fc2.weight"),
        ("nan-guard", 14, "critical", "fc2.weight"),
    ]


def test_a_healthy_run_exits_0(file_uri: str, rules_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(open_store(file_uri), segments=2)
    assert main(["evaluate", file_uri, "--rules", str(rules_file)]) == 0
    assert "exit status 0" in capsys.readouterr().out


def test_a_failing_rule_makes_the_exit_status_1(file_uri: str, tmp_path: Path) -> None:
    write_run(open_store(file_uri), segments=1)
    rules = tmp_path / "rules.yaml"
    rules.write_text(f"rules:\n  - type: {custom('Boom')}\n")
    assert main(["evaluate", file_uri, "--rules", str(rules)]) == 1


def test_the_default_rule_set_catches_a_nan(file_uri: str, tmp_path: Path) -> None:
    write_run(open_store(file_uri), segments=3, nan_at=[7])
    out = tmp_path / "v.json"
    assert main(["evaluate", file_uri, "--json", str(out)]) == 1
    doc = json.loads(out.read_text())
    assert doc["rules"]["exploding_tensor"]["state"] == "IssuesFound"
    assert (
        doc["rules"]["exploding_tensor"]["step"] == 7 and doc["rules"]["exploding_tensor"]["action"] == "stop"
    )


def test_an_smdebug_output_directory_is_evaluated_like_our_runs(rules_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "v.json"
    assert (
        main(["evaluate", str(FIXTURES / "smdebug" / "mlp"), "--rules", str(rules_file), "--json", str(out)])
        == 1
    )
    doc = json.loads(out.read_text())
    assert doc["rules"]["nan-guard"]["state"] == "IssuesFound" and doc["rules"]["nan-guard"]["step"] == 3
    assert doc["rules"]["ledger"]["state"] == "NoIssuesFound" and doc["last_step"] == 7


def test_a_tensorboard_log_directory_is_evaluated(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        f"rules:\n  - type: {custom('LossAboveSmdebug')}\n    name: loss-high\n    params: {{threshold: 0.0}}\n"
    )
    out = tmp_path / "v.json"
    assert (
        main(["evaluate", str(FIXTURES / "tensorboard" / "logs"), "--rules", str(rules), "--json", str(out)])
        == 1
    )
    doc = json.loads(out.read_text())
    assert doc["rules"]["loss-high"]["state"] == "IssuesFound" and doc["last_step"] == 7


def test_a_uri_without_a_run_is_an_error_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", str(tmp_path / "nothing")]) == 2
    assert "no run at" in capsys.readouterr().err


def test_a_bad_rules_file_is_an_error_with_exit_2(
    file_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(open_store(file_uri), segments=1)
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - type: no_such_rule\n")
    assert main(["evaluate", file_uri, "--rules", str(rules)]) == 2
    assert "rules[0]" in capsys.readouterr().err
