"""The evaluator's metrics, read back from a fresh registry, served over HTTP, and scraped by a real Prometheus."""

from __future__ import annotations

import io
import json
import math
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from prometheus_client import CollectorRegistry

from tests.conftest import free_port
from tests.sidecar.runs import RunBuilder, custom, registered
from trainguard.api.enums import Action
from trainguard.api.rules_config import RuleSpec
from trainguard.sidecar.evaluator import Evaluator
from trainguard.sidecar.server import MetricsServer
from trainguard.stop_flag import StopFlag
from trainguard.store.backends import open_store

RULES = [
    RuleSpec(type=custom("NonFinite"), name="nan-guard", action=Action.STOP),
    RuleSpec(type=custom("Boom"), name="boom", params={"at_step": 3}),
    RuleSpec(type=custom("StepLedger"), name="ledger"),
]


def _evaluated(uri: str, registry: CollectorRegistry, *, wall_time: float | None = None) -> Evaluator:
    b = RunBuilder(open_store(uri))
    b.segment(range(5), loss={0: 2.0, 4: 1.5}, val_loss={4: 1.75}, wall_time=wall_time)
    b.segment(range(5, 10), nan_at=[8], loss={9: float("nan")}, wall_time=wall_time)
    ev = registered(Evaluator(uri, rules=RULES, checkpoint=False), registry)
    ev.poll()
    return ev


def test_a_rule_that_never_got_its_data_is_not_checked_in_its_metric_and_status(file_uri: str) -> None:
    b = RunBuilder(open_store(file_uri))
    b.segment(range(5), loss={0: 2.0, 4: 1.5})  # a training loss, no eval loss
    b.end(last_step=4)
    registry = CollectorRegistry()
    rules = [RuleSpec(type="overfit"), RuleSpec(type="loss_spike")]
    ev = registered(Evaluator(file_uri, rules=rules, checkpoint=False), registry)
    ev.poll()
    get = registry.get_sample_value
    assert get("trainguard_rule_not_checked", {"rule": "overfit"}) == 0.0  # not before the end
    ev.finish()
    assert get("trainguard_rule_not_checked", {"rule": "overfit"}) == 1.0
    assert get("trainguard_rule_not_checked", {"rule": "loss_spike"}) == 0.0
    assert ev.rule_status["overfit"].message == "not checked: no eval loss recorded"
    assert ev.rule_status["loss_spike"].message == "loss_spike: no issues found up to step 4"


def test_rule_metrics_count_evaluations_errors_findings_and_triggers(file_uri: str) -> None:
    registry = CollectorRegistry()
    before = time.time()
    _evaluated(file_uri, registry)
    get = registry.get_sample_value
    assert get("trainguard_rule_triggered", {"rule": "nan-guard"}) == 1.0
    assert get("trainguard_rule_triggered", {"rule": "ledger"}) == 0.0
    assert get("trainguard_rule_triggered", {"rule": "boom"}) == 0.0
    assert get("trainguard_rule_evaluations_total", {"rule": "ledger"}) == 10.0
    assert get("trainguard_rule_errors_total", {"rule": "boom"}) == 7.0
    assert get("trainguard_rule_errors_total", {"rule": "nan-guard"}) == 0.0
    assert get("trainguard_rule_findings_total", {"rule": "nan-guard", "severity": "critical"}) == 1.0
    assert get("trainguard_rule_findings_total", {"rule": "nan-guard", "severity": "warning"}) == 0.0
    assert (
        before <= get("trainguard_rule_last_trigger_timestamp_seconds", {"rule": "nan-guard"}) <= time.time()
    )
    assert get("trainguard_rule_last_trigger_timestamp_seconds", {"rule": "ledger"}) is None
    assert get("trainguard_sidecar_stop_requested") == 1.0
    assert get("trainguard_sidecar_stop_watched") == 0.0  # no stop file


def test_the_stop_watched_gauge_says_whether_a_trainer_polls_the_stop_file(
    file_uri: str, tmp_path: Path
) -> None:
    stop_file = tmp_path / "STOP"
    registry = CollectorRegistry()
    registered(Evaluator(file_uri, checkpoint=False, stop_file=str(stop_file)), registry)
    assert registry.get_sample_value("trainguard_sidecar_stop_watched") == 0.0
    StopFlag(str(stop_file)).is_set()  # what hook.should_stop() does on its first call
    assert registry.get_sample_value("trainguard_sidecar_stop_watched") == 1.0


def test_training_gauges_describe_the_last_step(file_uri: str) -> None:
    registry = CollectorRegistry()
    _evaluated(file_uri, registry)
    get = registry.get_sample_value
    assert get("trainguard_training_step") == 9.0
    assert math.isnan(get("trainguard_training_loss", {"mode": "train"}))  # the newest train loss was NaN
    assert get("trainguard_training_loss", {"mode": "eval"}) == 1.75
    # healthy_row: l2 = 1 + 0.1 t + 0.001 step for tensor t; gradients hold tensor 1 only.
    assert get("trainguard_training_tensor_l2_norm", {"collection": "gradients"}) == pytest.approx(
        1.1 + 0.009, rel=1e-6
    )
    weights = math.sqrt((1.0 + 0.009) ** 2 + (1.3 + 0.009) ** 2)
    assert get("trainguard_training_tensor_l2_norm", {"collection": "weights"}) == pytest.approx(
        weights, rel=1e-6
    )
    assert get("trainguard_training_update_ratio", {"collection": "weights"}) == pytest.approx(
        (0.01 / 1.009 + 0.01 / 1.309) / 2, rel=1e-5
    )
    assert get("trainguard_training_update_ratio", {"collection": "gradients"}) is None  # not trainable
    assert (
        get("trainguard_training_nonfinite_values", {"collection": "weights"}) == 0.0
    )  # step 9 is clean again


def test_sidecar_metrics_count_segments_bytes_lag_and_evaluation_time(file_uri: str) -> None:
    registry = CollectorRegistry()
    ev = _evaluated(file_uri, registry, wall_time=time.time() - 30.0)
    get = registry.get_sample_value
    assert get("trainguard_sidecar_segments_total") == 2.0
    assert get("trainguard_sidecar_read_bytes_total") == float(ev.read_bytes_total) > 0
    assert get("trainguard_sidecar_corrupt_segments_total") == 0.0
    assert 30.0 <= get("trainguard_sidecar_lag_seconds") < 60.0
    assert get("trainguard_sidecar_evaluation_duration_seconds_count") == 2.0
    assert get("trainguard_sidecar_evaluation_duration_seconds_bucket", {"le": "+Inf"}) == 2.0
    assert get("trainguard_sidecar_last_evaluation_timestamp_seconds") == pytest.approx(time.time(), abs=30)


def test_a_corrupt_segment_is_counted_and_skipped(file_uri: str) -> None:
    registry = CollectorRegistry()
    store = open_store(file_uri)
    b = RunBuilder(store)
    b.segment(range(5))
    store.put("rank-00000/seg-000000000005-000000000009-000001.npz", b"PK\x03\x04 truncated")
    b.seq = 2
    b.segment(range(10, 15), nan_at=[12])
    ev = registered(Evaluator(file_uri, rules=RULES, checkpoint=False), registry)
    assert [v.step for v in ev.poll() if v.rule == "nan-guard"] == [12]
    assert registry.get_sample_value("trainguard_sidecar_corrupt_segments_total") == 1.0
    assert registry.get_sample_value("trainguard_sidecar_segments_total") == 2.0


def test_a_segment_of_a_newer_major_version_stops_the_reading_instead_of_being_skipped(file_uri: str) -> None:
    store = open_store(file_uri)
    b = RunBuilder(store)
    b.segment(range(5))
    b.segment(range(5, 10))
    b.segment(range(10, 15), nan_at=[12])
    key = sorted(store.list("rank-00000/seg-"))[1]
    with np.load(io.BytesIO(store.get(key)), allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    buf = io.BytesIO()
    np.savez(buf, **{**arrays, "format_version": np.array("3.0")})
    store.put(key, buf.getvalue())
    registry = CollectorRegistry()
    ev = registered(Evaluator(file_uri, rules=RULES, checkpoint=False), registry)
    ev.run(threading.Event(), poll_interval_seconds=0.01, idle_timeout_seconds=0.2)
    assert ev.timed_out and ev.last_error is not None
    assert "run-format version 3.0" in ev.last_error and "Upgrade TrainGuard" in ev.last_error
    # the first segment was evaluated; nothing was read past the newer one, and it was not counted as corrupt
    assert registry.get_sample_value("trainguard_sidecar_segments_total") == 1.0
    assert registry.get_sample_value("trainguard_sidecar_corrupt_segments_total") == 0.0
    assert registry.get_sample_value("trainguard_rule_triggered", {"rule": "nan-guard"}) == 0.0


def test_metrics_labels_never_carry_tensor_names(file_uri: str) -> None:
    registry = CollectorRegistry()
    _evaluated(file_uri, registry)
    allowed = {"rule", "severity", "collection", "mode", "le"}
    for family in registry.collect():
        for sample in family.samples:
            assert set(sample.labels) <= allowed, (sample.name, sample.labels)
            names = [v for k, v in sample.labels.items() if k != "le"]
            assert not any("." in v or "/" in v for v in names), sample


def _get(url: str) -> tuple[int, bytes, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read(), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as err:
        return err.code, err.read(), err.headers.get("Content-Type", "")


def test_the_server_serves_metrics_and_health_on_a_free_port(file_uri: str) -> None:
    registry = CollectorRegistry()
    ev = _evaluated(file_uri, registry)
    healthy = {"value": True}
    with MetricsServer(
        registry, health=lambda: (healthy["value"], {"last_step": ev.last_step}), address="127.0.0.1", port=0
    ) as server:
        assert server.port > 0
        status, body, ctype = _get(server.url + "/metrics")
        assert status == 200 and ctype.startswith("text/plain")
        assert 'trainguard_rule_triggered{rule="nan-guard"} 1.0' in body.decode()
        status, body, ctype = _get(server.url + "/healthz")
        assert status == 200 and ctype == "application/json" and json.loads(body) == {"last_step": 9}
        healthy["value"] = False
        assert _get(server.url + "/healthz")[0] == 503
        assert _get(server.url + "/nothing")[0] == 404
    with pytest.raises(OSError):
        urllib.request.urlopen(server.url + "/metrics", timeout=2)


# --- a real Prometheus server ---------------------------------------------------------------------


@pytest.fixture
def prometheus_factory() -> Iterator:  # type: ignore[type-arg]
    """Start `prometheus` scraping given targets every second; stopped (by PID) after the test."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus is not installed: run dev/setup.sh --full (apt package `prometheus`)")
    started: list[tuple[subprocess.Popen[bytes], Path]] = []

    def start(targets: list[str]) -> str:
        workdir = Path(tempfile.mkdtemp(prefix="tg-prom-"))
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
            "scrape_configs": [{"job_name": "trainguard-sidecar", "static_configs": [{"targets": targets}]}],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        port = free_port()
        log = open(workdir / "prometheus.log", "wb")  # noqa: SIM115 - closed with the process below
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        started.append((proc, workdir))
        return f"http://127.0.0.1:{port}"

    try:
        yield start
    finally:
        for proc, workdir in started:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            shutil.rmtree(workdir, ignore_errors=True)


def _query(base: str, expr: str) -> list[dict]:  # type: ignore[type-arg]
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            doc = json.loads(resp.read())
    except OSError:
        return []  # not listening yet
    return list(doc["data"]["result"]) if doc.get("status") == "success" else []


def _poll(predicate, *, timeout_seconds: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout_seconds}s waiting for {what}")


@pytest.mark.slow
def test_a_real_prometheus_scrapes_the_evaluator_and_sees_the_rule_triggered(
    file_uri: str, prometheus_factory
) -> None:  # type: ignore[no-untyped-def]
    registry = CollectorRegistry()
    store = open_store(file_uri)
    b = RunBuilder(store)
    b.segment(range(5))
    ev = registered(Evaluator(file_uri, rules=RULES, checkpoint=False), registry)
    ev.poll()
    with MetricsServer(registry, health=lambda: (True, {}), address="127.0.0.1", port=0) as server:
        prom = prometheus_factory([f"127.0.0.1:{server.port}"])
        up = _poll(
            lambda: [r for r in _query(prom, "up") if r["value"][1] == "1"],
            timeout_seconds=60,
            what="up == 1",
        )
        assert up[0]["metric"]["job"] == "trainguard-sidecar"
        assert _query(prom, 'trainguard_rule_triggered{rule="nan-guard"}')[0]["value"][1] == "0"
        b.segment(range(5, 10), nan_at=[7])
        ev.poll()
        hit = _poll(
            lambda: [
                r for r in _query(prom, 'trainguard_rule_triggered{rule="nan-guard"}') if r["value"][1] == "1"
            ],
            timeout_seconds=30,
            what="trainguard_rule_triggered{rule=nan-guard} == 1",
        )
        assert hit[0]["metric"]["rule"] == "nan-guard"
        assert _query(prom, "trainguard_training_step")[0]["value"][1] in ("4", "9")
        rate = _query(prom, "trainguard_rule_errors_total")
        assert {r["metric"]["rule"] for r in rate} == {"nan-guard", "boom", "ledger"}
