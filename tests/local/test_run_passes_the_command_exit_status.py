"""`trainguard run` passes CMD's own exit status through and gives CMD its TRAINGUARD_* settings."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from localmode import CliResult


def test_command_own_nonzero_exit_status_is_passed_through(trainguard_run) -> None:
    res: CliResult = trainguard_run(cmd=[sys.executable, "-c", "import sys; sys.exit(7)"])
    assert res.returncode == 7, res.stderr
    assert res.doc["exit_code"] == 7
    assert res.doc["stopped"] is False and res.doc["stopped_by"] is None


def test_command_killed_by_a_signal_exits_with_128_plus_the_signal(trainguard_run) -> None:
    res = trainguard_run(
        cmd=[sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    )
    assert res.returncode == 128 + 9, res.stderr
    assert res.doc["returncode"] == -9


def test_missing_command_is_a_one_line_error_with_status_2(trainguard_run) -> None:
    res = trainguard_run(cmd=["no-such-command-trainguard-test"])
    assert res.returncode == 2
    assert (
        res.stderr.strip()
        .splitlines()[-1]
        .startswith("trainguard: error: cannot start 'no-such-command-trainguard-test'")
    )


def test_a_script_that_does_not_exist_is_named_not_answered_with_a_capture_hint(trainguard_run) -> None:
    res = trainguard_run(cmd=[sys.executable, "missing.py"])
    assert res.returncode == 2  # python's own status for a file it cannot open, passed through
    said = " ".join(res.stderr.split())  # lines are wrapped at 80 columns
    assert (
        "[trainguard] the command failed before it wrote any TrainGuard data (file not found: missing.py)"
        in said
    )
    assert said.endswith("[trainguard] CRASHED: the command failed; exit status 2; no findings")
    assert "trainguard.Recorder()" not in res.stderr


def test_command_gets_the_run_settings_and_its_own_process_group(trainguard_run, tmp_path: Path) -> None:
    probe = (
        "import json, os; json.dump({'env': {k: v for k, v in os.environ.items() if k.startswith('TRAINGUARD_')},"
        " 'pgid': os.getpgrp(), 'pid': os.getpid()}, open('env.json', 'w'))"
    )
    res = trainguard_run("--run-id", "my-run", cmd=[sys.executable, "-c", probe])
    assert res.returncode == 4, res.stderr  # the probe records nothing: exit 0 would claim a checked run
    seen = json.loads((tmp_path / "env.json").read_text())
    assert seen["pgid"] == seen["pid"], "CMD must lead its own process group so a stop reaches all it started"
    env = seen["env"]
    assert env["TRAINGUARD_RUN_ID"] == "my-run"
    assert env["TRAINGUARD_OUT"] == "file://" + str((tmp_path / "trainguard-runs" / "my-run").resolve())
    assert env["TRAINGUARD_STOP_FILE"].endswith("/stop")
    assert res.doc["run_uri"] == env["TRAINGUARD_OUT"]


def test_a_command_that_writes_no_data_is_told_how_to_add_capture_and_exits_4(trainguard_run) -> None:
    res = trainguard_run(cmd=[sys.executable, "-c", "print('hello')"])
    assert res.returncode == 4, res.stderr  # not 0: nothing was checked
    assert "hello" in res.stdout
    assert "nothing was recorded" in res.stderr
    assert "wrote no TrainGuard data" in res.stderr and "trainguard.Recorder()" in res.stderr
    assert "NoIssuesFound" not in res.stderr  # no table of rules that looked at nothing
    assert res.doc["report"] is None and res.doc["findings"] == [] and res.doc["recorded"] is False


def test_ctrl_c_to_trainguard_reaches_the_command_whose_status_is_passed_through(tmp_path: Path) -> None:
    script = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGINT, lambda *a: sys.exit(42))\n"
        "open('ready', 'w').close()\n"
        "time.sleep(120)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainguard", "run", "--json", "out.json", "--", sys.executable, "-c", script],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "ready").exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends to trainguard's own process group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 42, err
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["interrupted_by"] == "SIGINT" and doc["stopped"] is False
