"""No verdict says "no issues" over data the rules never saw: damaged objects and lost steps are `data_gap`.

Runs are written in the real format (`RunBuilder`, the `RankWriter`), then damaged or cut short the
way a store fault leaves them; `trainguard evaluate` runs in process through the CLI's `main`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.sidecar.runs import custom, registered, write_run
from trainguard.api.enums import Action, RuleState, Severity
from trainguard.cli import main
from trainguard.local.supervise import verdict_table
from trainguard.sidecar.evaluator import DATA_GAP, Evaluator, RuleStatus
from trainguard.store import errors, run_format
from trainguard.store.backends import Store, open_store
from trainguard.store.writer import RankWriter, WriterConfig


def evaluate(uri: str, tmp_path: Path, *args: str) -> tuple[int, dict[str, object]]:
    out = tmp_path / "verdicts.json"
    code = main(["evaluate", uri, "--json", str(out), *args])
    return code, json.loads(out.read_text())


def test_a_truncated_segment_that_held_the_nan_is_a_data_gap_and_evaluate_exits_1(
    run_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = open_store(run_uri)
    write_run(store, segments=3, nan_at=[7])
    second = store.list("rank-00000/seg-")[1]  # steps 5-9, the NaN among them
    store.put(second, store.get(second)[:200])
    code, doc = evaluate(run_uri, tmp_path)
    table = capsys.readouterr().out
    assert code == 1, table
    assert doc["rules"]["exploding_tensor"]["state"] == "NoIssuesFound"  # the NaN was never seen...
    gap = doc["rules"][DATA_GAP]  # ...and the evaluation says so
    assert gap["state"] == "IssuesFound" and gap["severity"] == "warning" and gap["step"] == 5
    assert "steps 5-9 of rank 0 went unchecked" in gap["message"] and second in gap["message"]
    assert table.splitlines()[1].startswith(DATA_GAP)  # what matters comes first in the table


def test_a_damaged_end_json_is_a_data_gap_and_the_rest_is_evaluated(file_uri: str, tmp_path: Path) -> None:
    store = open_store(file_uri)
    write_run(store, segments=2)
    store.put(run_format.end_key(0), b"{ not json")
    code, doc = evaluate(file_uri, tmp_path)
    assert code == 1 and doc["last_step"] == 9
    assert "END.json is not valid JSON" in doc["rules"][DATA_GAP]["message"]  # type: ignore[index]


class PausedStore:
    """A real store whose puts fail while `down` is set (the store is unreachable), as a dead endpoint would."""

    def __init__(self, inner: Store) -> None:
        self.inner, self.uri, self.down = inner, inner.uri, False

    def put(self, key: str, data: bytes) -> None:
        if self.down:
            raise errors.StoreError(f"put {self.uri}/{key} failed: the store is down")
        self.inner.put(key, data)

    def get(self, key: str) -> bytes:
        return self.inner.get(key)

    def list(self, prefix: str = "", **kwargs: object) -> list[str]:
        return self.inner.list(prefix, **kwargs)  # type: ignore[arg-type]

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def delete(self, key: str) -> None:
        self.inner.delete(key)


def write_with_outage(store: PausedStore, *, outage: range, total: int) -> RankWriter:
    """Write `total` one-step segments with room for one pending; the store is down for the steps in `outage`
    and back for the rest and for close()."""
    w = RankWriter(
        store,  # type: ignore[arg-type]
        config=WriterConfig(
            flush_every_steps=1, max_pending_bytes=1, retry_min_seconds=0.01, retry_max_seconds=0.01,
            close_timeout_seconds=5, end_timeout_seconds=2,
        ),
    )  # fmt: skip
    ids = np.array([w.define("fc.weight", collection="weights")], np.int32)
    row = np.zeros((1, len(run_format.STAT_COLUMNS)), np.float32)
    row[0, run_format.COLUMN["count"]] = 1
    for step in range(total):
        if step == outage.start:
            store.down = True
        if step == outage.stop:
            store.down = False
            assert w.wait_idle(10)
        w.write_step(step, ids, row)
        if not store.down:
            assert w.wait_idle(10)  # while the store works nothing waits: what is lost is the outage's alone
    store.down = False
    w.close()
    return w


def test_steps_lost_in_an_outage_are_a_data_gap_naming_them(file_uri: str, tmp_path: Path) -> None:
    store = PausedStore(open_store(file_uri))
    w = write_with_outage(store, outage=range(10, 20), total=30)
    assert w.lost_steps == 9  # the outage's first segment waited (one fits), the other nine were dropped
    code, doc = evaluate(file_uri, tmp_path)
    lost = [f for f in doc["findings"] if f["rule"] == DATA_GAP]  # type: ignore[union-attr, index]
    assert code == 1 and len(lost) == 1 and doc["lost_steps"] == w.lost_steps
    first = 20 - w.lost_steps
    assert (
        lost[0]["step"] == first
        and f"steps {first}-19 of rank 0 never reached the store" in lost[0]["message"]
    )


def test_steps_lost_at_the_end_of_a_run_are_a_data_gap_from_end_json(file_uri: str, tmp_path: Path) -> None:
    store = PausedStore(open_store(file_uri))
    w = write_with_outage(store, outage=range(20, 30), total=30)
    assert w.lost_steps == 9
    end = run_format.EndInfo.model_validate_json(open_store(file_uri).get(run_format.end_key(0)))
    assert end.lost_steps == w.lost_steps and end.status == "error"
    code, doc = evaluate(file_uri, tmp_path)
    gap = doc["rules"][DATA_GAP]  # type: ignore[index]
    assert code == 1 and "9 steps of rank 0 after step 20 never reached the store" in gap["message"]


def test_evaluator_metrics_count_the_lost_steps(file_uri: str) -> None:
    import prometheus_client

    store = PausedStore(open_store(file_uri))
    w = write_with_outage(store, outage=range(10, 20), total=30)
    registry = prometheus_client.CollectorRegistry()
    ev = registered(Evaluator(file_uri, checkpoint=False), registry)
    while not ev.ended:
        ev.poll()
    assert registry.get_sample_value("trainguard_capture_lost_steps") == w.lost_steps


def test_a_run_with_no_step_is_nothing_evaluated_with_exit_4(file_uri: str, tmp_path: Path) -> None:
    store = open_store(file_uri)
    write_run(store, segments=0)
    code, doc = evaluate(file_uri, tmp_path)
    assert code == 4 and doc["nothing_evaluated"] == "the run holds no step"


def test_a_rule_whose_tensors_match_nothing_warns_and_is_an_error_with_strict(
    file_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(open_store(file_uri), segments=2)
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "rules:\n  - type: exploding_tensor\n    tensors: ['^encoder\\.']\n"
        f"  - type: {custom('StepLedger')}\n    name: ledger\n"
    )
    code, doc = evaluate(file_uri, tmp_path, "--rules", str(rules))
    err = capsys.readouterr().err
    assert code == 0
    assert (
        "warning: exploding_tensor: its tensors ['^encoder\\\\.'] match none of the 6 tensors and scalars"
        in err
    )
    assert "it checks nothing" in doc["rules"]["exploding_tensor"]["message"]  # type: ignore[index]
    code, doc = evaluate(file_uri, tmp_path, "--rules", str(rules), "--strict")
    assert code == 1 and doc["rules"]["exploding_tensor"]["state"] == "Error"  # type: ignore[index]


def test_the_verdict_table_puts_what_matters_first_and_quiet_folds_the_rest(
    file_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(open_store(file_uri), segments=3, nan_at=[7])
    assert main(["evaluate", file_uri, "--quiet"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("RULE") and lines[1].startswith("exploding_tensor")
    assert "NoIssuesFound" not in "\n".join(lines)
    # the quiet rules are one line, which tells the rules that never got their data apart
    quiet = (
        "15 rules checked, no issues; 12 not checked: batchnorm_small_batch (no BatchNorm layers and batched "
        "activations or inputs recorded), eps_dominates_gradient (no optimizer eps recorded), negligible_step (no "
        "optimizer learning rate recorded), accuracy_gap (no eval accuracy (a scalar named like val_acc, "
        "val_accuracy, top1) recorded), overfit (no eval"
    )
    assert any(line.startswith(quiet) for line in lines), lines
    full = verdict_table({"a": _status("NoIssuesFound"), "b": _status("IssuesFound", "warning"),
                          "c": _status("Error"), "d": _status("IssuesFound", "critical")})  # fmt: skip
    assert [line.split()[0] for line in full.splitlines()[1:]] == ["d", "b", "c", "a"]


def _status(state: str, severity: str = "info") -> RuleStatus:
    return RuleStatus(state=RuleState(state), action=Action.NOTIFY, severity=Severity(severity), step=1)
