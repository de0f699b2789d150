"""`trainguard inspect URI [--json]`, run as a user runs it: `python -m trainguard inspect ...` in a subprocess.

Good runs print a summary and exit 0; damaged segments are listed and give exit 1; a run that
cannot be read at all (missing run or bucket, wrong credentials, unknown major version, dead
endpoint) gives exactly one line on stderr, nothing on stdout, and exit 2.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import trainguard
from trainguard.store import run_format
from trainguard.store.backends import open_store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def inspect(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return trainguard_cli("inspect", *args, env=env)


def trainguard_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m trainguard ARGS...` as a user runs it, with `env` added to this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "trainguard", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def write_run(uri: str, *, rank: int = 0, world_size: int = 1) -> None:
    rng = np.random.default_rng(0)
    settings = {"rank": rank, "world_size": world_size, "flush_interval_seconds": 60}
    with trainguard.Recorder(uri, save_interval=2, flush_every_steps=2, **settings) as rec:
        for step in range(10):
            rec.record_tensor("fc1.weight", rng.standard_normal((4, 3)), collection="weights")
            rec.record_tensor("fc1.bias", rng.standard_normal(4), collection="biases")
            rec.record_tensor("grad/fc1.weight", rng.standard_normal((4, 3)), collection="gradients")
            rec.record_scalar("loss", 1.0 / (step + 1))
            if step == 9:
                rec.record_scalar("val_loss", 0.5, mode="eval")
            rec.step()


def assert_one_error_line(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("trainguard: error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_inspect_prints_ranks_steps_collections_tensors_scalars_and_end(run_uri: str) -> None:
    write_run(run_uri)
    result = inspect(run_uri)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    rows = {
        line.split(None, 1)[0]: line.split(None, 1)[1]
        for line in result.stdout.splitlines()
        if " " in line.strip()
    }
    assert rows["run"] == run_uri
    assert rows["format"].startswith(f"trainguard (format {run_format.FORMAT_VERSION}, framework numpy")
    assert rows["ranks"] == "0"
    assert rows["steps"] == "5 saved (first 0, last 8)"
    assert rows["last"] == "step    9"
    assert rows["ended"] == "yes: ok at step 9, written by hook"
    assert rows["collections"] == "biases 1, gradients 1, weights 1"
    assert rows["tensors"] == "fc1.bias, fc1.weight, grad/fc1.weight"
    assert rows["scalars"] == "train: loss; eval: val_loss"
    assert rows["problems"] == "none"
    assert "attempts" not in rows  # one writer: nothing to say


def test_a_rank_written_twice_on_the_same_uri_shows_both_attempts(file_uri: str) -> None:
    write_run(file_uri)
    write_run(file_uri)  # the same script again (a retried pod): a second attempt, nothing overwritten
    text = inspect(file_uri)
    assert text.returncode == 0, text.stderr
    assert "  steps        10 saved (first 0, last 8)" in text.stdout
    assert "  attempts     2 (restarted on this URI; steps above count every attempt's)" in text.stdout
    doc = json.loads(inspect(file_uri, "--json").stdout)
    first, second = doc["ranks"][0]["attempts"]
    assert first < second and len(first) == 13


def test_inspect_json_is_machine_readable_and_covers_every_rank(file_uri: str) -> None:
    write_run(file_uri, rank=0, world_size=2)
    write_run(file_uri, rank=1, world_size=2)
    result = inspect(file_uri, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["format"] == "trainguard" and doc["framework"] == "numpy" and doc["world_size"] == 2
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    for rank in doc["ranks"]:
        assert rank["steps"] == {"count": 5, "first": 0, "last": 8}
        assert rank["last_step"] == 9
        assert rank["collections"] == {"biases": 1, "gradients": 1, "weights": 1}
        assert rank["scalars"] == {"train": ["loss"], "eval": ["val_loss"]}
        assert rank["ended"]["status"] == "ok" and rank["problems"] == []


@pytest.mark.parametrize(
    ("path", "fmt"),
    [("smdebug/mlp", "smdebug"), ("tensorboard/logs", "tensorboard")],
)
def test_inspect_names_the_format_of_foreign_runs(path: str, fmt: str) -> None:
    result = inspect(str(FIXTURES / path), "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["format"] == fmt and doc["format_version"] is None
    assert doc["ranks"][0]["steps"]["count"] > 0


def test_a_damaged_segment_is_listed_later_segments_are_read_and_the_exit_status_is_1(run_uri: str) -> None:
    write_run(run_uri)
    store = open_store(run_uri)
    keys = store.list("rank-00000/seg-")
    store.put(keys[1], store.get(keys[1])[:100])
    result = inspect(run_uri)
    assert result.returncode == 1
    assert "  steps        3 saved (first 0, last 8)" in result.stdout
    assert "problems     1" in result.stdout and keys[1] in result.stdout
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith("trainguard: error: 1 problem(s) reading") and keys[1] in line


def test_a_missing_run_is_one_error_line(tmp_path: Path) -> None:
    assert_one_error_line(
        inspect(str(tmp_path / "nothing")), f"no run at {tmp_path / 'nothing'}", "check the URI"
    )


def test_an_empty_s3_prefix_is_one_error_line(s3_uri: str) -> None:
    assert_one_error_line(inspect(s3_uri), f"no run at {s3_uri}")


def test_a_missing_bucket_is_one_error_line_naming_bucket_and_endpoint(s3_env: dict[str, str]) -> None:
    assert_one_error_line(
        inspect("s3://no-such-bucket-for-inspect/run"),
        f"bucket no-such-bucket-for-inspect does not exist at {s3_env['AWS_ENDPOINT_URL']}; create it or fix the URI",
    )


def test_wrong_credentials_are_one_error_line_with_a_credentials_hint(s3_uri: str) -> None:
    write_run(s3_uri)
    line = assert_one_error_line(inspect(s3_uri, env={"AWS_SECRET_ACCESS_KEY": "wrong"}), "AWS_ACCESS_KEY_ID")
    assert "SignatureDoesNotMatch" in line


def test_an_unknown_major_version_is_one_error_line(file_uri: str) -> None:
    write_run(file_uri)
    store = open_store(file_uri)
    doc = json.loads(store.get("run.json"))
    store.put("run.json", json.dumps({**doc, "format_version": "3.0"}).encode())
    assert_one_error_line(
        inspect(file_uri), "run-format version 3.0", "reads 1.x and 2.x", "Upgrade TrainGuard"
    )


def test_a_segment_of_an_unknown_major_version_is_one_error_line_not_a_skipped_problem(file_uri: str) -> None:
    # a newer writer's segments are not damage: skipping one would skip every later one as well
    write_run(file_uri)
    store = open_store(file_uri)
    key = sorted(k for k in store.list("rank-00000/seg-"))[1]
    with np.load(io.BytesIO(store.get(key)), allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    buf = io.BytesIO()
    np.savez(buf, **{**arrays, "format_version": np.array("3.0")})
    store.put(key, buf.getvalue())
    line = assert_one_error_line(
        inspect(file_uri), "run-format version 3.0", "reads 1.x and 2.x", "Upgrade TrainGuard"
    )
    assert key in line


def test_an_unreachable_endpoint_is_one_error_line_after_the_retries(s3_env: dict[str, str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert_one_error_line(
        inspect("s3://some-bucket/run", env={"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}),
        "s3://some-bucket/run/",
        "failed after 5 attempts",
        "check that the server is up",
    )
