"""`trainguard ls URI`: the runs under a prefix, on file:// and real S3 (SeaweedFS), run as a user runs it.

A prefix holds TrainGuard runs at the depths `trainguard run` and the operator write them, a rank
still writing, an smdebug output directory and a TensorBoard log directory (the repository's
fixtures, uploaded as they are); `ls` finds each one once, without descending into a run.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.store.test_inspect_cli import FIXTURES, trainguard_cli, write_run
from trainguard.store import run_format
from trainguard.store.backends import open_store


def ls(*args: str) -> subprocess.CompletedProcess[str]:
    return trainguard_cli("ls", *args)


def upload(local: Path, uri: str) -> None:
    store = open_store(uri)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            store.put(path.relative_to(local).as_posix(), path.read_bytes())


@pytest.fixture
def prefix(run_uri: str) -> str:
    write_run(f"{run_uri}/trainguard-runs/20261122-051000-3fa2c1")
    write_run(f"{run_uri}/team-a/resnet/0b5c/", rank=0, world_size=2)
    write_run(f"{run_uri}/team-a/resnet/0b5c/", rank=1, world_size=2)
    open_store(f"{run_uri}/team-a/resnet/0b5c").delete(run_format.end_key(1))  # rank 1 still writing
    upload(FIXTURES / "smdebug" / "mlp", f"{run_uri}/old/smdebug-mlp")
    upload(FIXTURES / "tensorboard" / "logs", f"{run_uri}/old/tb")
    return run_uri


def test_ls_lists_every_run_under_the_prefix_once(prefix: str) -> None:
    out = ls(prefix)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == [
        "RUN", "FORMAT", "RUN", "ID", "STARTED", "(UTC)", "RANKS", "ENDED", "FINDINGS", "STATE"
    ]  # fmt: skip
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:-1]}
    assert set(rows) == {
        f"{prefix}/old/smdebug-mlp",
        f"{prefix}/old/tb",
        f"{prefix}/team-a/resnet/0b5c",
        f"{prefix}/trainguard-runs/20261122-051000-3fa2c1",
    }
    assert rows[f"{prefix}/old/smdebug-mlp"][0] == "smdebug"
    assert rows[f"{prefix}/old/tb"][0] == "tensorboard"
    # no evaluator checkpointed these runs: no verdict record, no findings count
    job = " ".join(rows[f"{prefix}/team-a/resnet/0b5c"][-15:])
    assert job.endswith("2 1 of 2 - running or no END (1 of 2 ranks ended)")
    assert rows[f"{prefix}/trainguard-runs/20261122-051000-3fa2c1"][-6:] == ["1", "1", "of", "1", "-", "ok"]
    assert lines[-1] == f"4 runs under {prefix}"


def test_ls_json_gives_each_run_its_format_ranks_and_end_markers(prefix: str) -> None:
    out = ls(prefix, "--json")
    assert out.returncode == 0, out.stderr
    runs = {r["uri"]: r for r in json.loads(out.stdout)}
    job = runs[f"{prefix}/team-a/resnet/0b5c"]
    assert (job["format"], job["world_size"], job["ranks"], job["ended"]) == (
        "trainguard",
        2,
        [0, 1],
        {"0": "ok", "1": None},
    )
    assert (job["state"], job["findings"]) == ("running or no END (1 of 2 ranks ended)", None)
    assert job["run_id"] and job["start_time"] > 0
    # The URI printed is the one `inspect` takes.
    inspect = trainguard_cli("inspect", job["uri"])
    assert inspect.returncode == 0, inspect.stderr


def test_ls_depth_limits_the_search(prefix: str) -> None:
    out = ls(prefix, "--depth", "2", "--json")
    assert sorted(r["uri"] for r in json.loads(out.stdout)) == [
        f"{prefix}/old/smdebug-mlp",
        f"{prefix}/old/tb",
        f"{prefix}/trainguard-runs/20261122-051000-3fa2c1",
    ]


def test_ls_of_a_prefix_without_runs_says_so_and_exits_1(run_uri: str) -> None:
    open_store(run_uri).put("notes/readme.txt", b"no runs here")
    out = ls(run_uri)
    assert out.returncode == 1
    assert out.stdout == ""
    assert out.stderr.strip() == f"no runs under {run_uri} (searched 4 folders deep)"


def test_inspect_of_a_prefix_points_to_ls(prefix: str) -> None:
    out = trainguard_cli("inspect", f"{prefix}/team-a")
    assert out.returncode == 2
    assert "`trainguard ls URI` lists the runs below a prefix" in out.stderr


def test_ls_counts_the_findings_of_a_checkpointed_evaluation_and_names_a_crash(run_uri: str) -> None:
    write_run(run_uri)
    store = open_store(run_uri)
    end = run_format.EndInfo.model_validate_json(store.get(run_format.end_key(0)))
    crashed = end.model_copy(update={"status": "crashed", "exit_code": 1, "exception": "OSError: disk full"})
    store.put(run_format.end_key(0), crashed.model_dump_json().encode())
    evaluated = trainguard_cli("evaluate", "--checkpoint", run_uri)
    assert evaluated.returncode in (0, 1), evaluated.stderr
    out = ls(run_uri, "--json")
    (run,) = json.loads(out.stdout)
    assert run["state"] == "crashed: exited with status 1; OSError: disk full"
    assert run["findings"] is not None and run["findings"] == sum((run["findings_by_rule"] or {}).values())
