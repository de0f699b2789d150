"""`trainguard run` refuses a bad setup with one line and status 2, before CMD starts."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

PROBE = "open('started', 'w').close()"


def test_a_rules_file_with_an_unknown_rule_names_the_entry_and_cmd_never_starts(
    trainguard_run, tmp_path: Path
) -> None:
    (tmp_path / "rules.yaml").write_text(
        "rules:\n  - type: exploding_tensor\n    action: stop\n  - type: no_such_rule\n"
    )
    res = trainguard_run("--rules", "rules.yaml", cmd=[sys.executable, "-c", PROBE])
    assert res.returncode == 2
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("trainguard: error: ") and "rules[1]" in last and "no_such_rule" in last
    assert not (tmp_path / "started").exists()


def test_a_taken_metrics_port_is_reported_and_cmd_never_starts(trainguard_run, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = trainguard_run("--metrics-port", str(port), cmd=[sys.executable, "-c", PROBE])
    assert res.returncode == 2
    assert f"cannot serve metrics on 127.0.0.1:{port}" in res.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "started").exists()


def test_no_command_after_the_options_is_a_usage_error(trainguard_run) -> None:
    res = trainguard_run(cmd=[])
    assert res.returncode == 2
    assert "no command to run" in res.stderr
