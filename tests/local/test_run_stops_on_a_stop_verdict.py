"""A `stop` verdict ends CMD: stop file + SIGTERM to its process group, SIGKILL after the grace period, exit 3."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from localmode import example

import trainguard

pytestmark = pytest.mark.slow


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purposes.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_diverging_pytorch_script_is_stopped_with_exit_3_by_exploding_tensor(
    trainguard_run, tmp_path: Path
) -> None:
    res = trainguard_run(cmd=example("pytorch_diverging.py"))
    assert res.returncode == 3, res.stderr
    assert res.doc["stopped"] is True
    assert res.doc["stopped_by"] == "exploding_tensor"
    assert res.doc["exit_code"] == 3
    first = next(f for f in res.doc["findings"] if f["rule"] == "exploding_tensor")
    assert first["severity"] == "critical" and first["tensor"]
    assert set(first) >= {"rule", "severity", "step", "rank", "tensor", "message"}
    # The script never ends by itself in this time: it was stopped, long before its last step.
    assert res.doc["last_step"] < 20_000
    assert "STOPPED by rule exploding_tensor" in res.said
    # The NaN is a consequence: the learning rate overshot first, and the summary names that earlier sign
    # (steps far too large show in the weights' growth and in a loss swinging up and down; which of the two
    # rules sees it first is down to the last bits of the arithmetic, so either is the right answer).
    sign = res.doc["stop"]["earlier_sign"]
    assert sign["rule"] in {"weight_update_ratio", "oscillating_loss"} and sign["severity"] == "warning", sign
    assert sign["step"] < res.doc["stop"]["step"]
    assert f"earlier sign, step {sign['step']} on rank 0: {sign['rule']} (warning): " in res.said
    report = Path(res.doc["report"])
    assert report.is_file() and report.parent == tmp_path / "trainguard-runs" / res.doc["run_id"]
    html = report.read_text()
    assert 'data-rule="exploding_tensor"' in html
    assert f"Earlier sign at step {sign['step']}: rule <b>{sign['rule']}</b> (warning)" in html


def test_a_command_that_ignores_sigterm_is_killed_with_its_group_after_the_grace_period(
    trainguard_run, nan_script: list[str], tmp_path: Path
) -> None:
    res = trainguard_run("--grace-period-seconds", "1", cmd=[*nan_script, "ignore-term", "50"])
    assert res.returncode == 3, res.stderr
    assert res.doc["stopped_by"] == "exploding_tensor"
    assert res.doc["killed"] is True and res.doc["returncode"] == -9
    assert res.doc["stop"]["latency_to_exit_seconds"] >= 1.0
    helper = int((tmp_path / "helper.pid").read_text())
    assert not _pid_alive(helper), "a process CMD started in its group outlived the stop"


def test_a_cooperative_script_reads_the_rule_from_the_stop_file_and_still_exits_3(
    trainguard_run, nan_script: list[str]
) -> None:
    res = trainguard_run(cmd=[*nan_script, "cooperative", "50"])
    assert res.returncode == 3, res.stderr
    assert res.doc["killed"] is False and res.doc["returncode"] == 0
    reason = res.stdout.split("cooperative stop:", 1)[1].splitlines()[0]
    assert "step 50" in reason, res.stdout


LAUNCHER = """
import os, subprocess, sys
script, nan_rank = sys.argv[1], int(sys.argv[2])
ranks = [
    subprocess.Popen([sys.executable, script, "plain", "50" if r == nan_rank else "1000000000"],
                     env={**os.environ, "RANK": str(r), "WORLD_SIZE": "2",
                          "NAN_SCRIPT_READY": os.path.abspath("rank0.ready")})
    for r in range(2)
]
open("ranks.pid", "w").write(" ".join(str(p.pid) for p in ranks))
sys.exit(max(p.wait() for p in ranks))
"""


def test_a_nan_on_one_rank_of_two_stops_every_process_of_the_job(
    trainguard_run, nan_script: list[str], tmp_path: Path
) -> None:
    (tmp_path / "launch.py").write_text(LAUNCHER)
    res = trainguard_run(cmd=[nan_script[0], str(tmp_path / "launch.py"), nan_script[1], "1"])
    assert res.returncode == 3, res.stderr
    assert res.doc["stopped_by"] == "exploding_tensor"
    assert res.doc["stop"]["rank"] == 1
    assert {f["rank"] for f in res.doc["findings"] if f["rule"] == "exploding_tensor"} == {1}
    for pid in map(int, (tmp_path / "ranks.pid").read_text().split()):
        assert not _pid_alive(pid), "a rank outlived the stop"


def test_running_again_on_the_same_out_evaluates_only_the_new_run(
    trainguard_run, nan_script: list[str], tmp_path: Path
) -> None:
    out = f"file://{tmp_path / 'reused'}"
    first = trainguard_run("--out", out, cmd=[*nan_script, "plain", "30"])
    assert first.returncode == 3 and first.doc["stopped_by"] == "exploding_tensor"
    # Fixed and run again on the same --out: the first run's NaN must not stop the second.
    second = trainguard_run("--out", out, cmd=example("numpy_healthy.py"))
    assert second.returncode == 0, second.stderr
    assert second.doc["stopped"] is False
    assert not any(f["rule"] == "exploding_tensor" for f in second.doc["findings"])
    assert len(trainguard.open_run(out).attempts()) == 2  # both runs are kept, one attempt each
