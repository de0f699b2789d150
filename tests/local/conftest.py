"""Fixtures for local-mode tests: `trainguard run` as a real subprocess in the test's directory.

`trainguard_run(*options, cmd=[...])` runs `python -m trainguard run --json FILE ...` in the test's
temporary directory and returns the exit status, the output and the parsed JSON document.
`nan_script` is a numpy training loop (NAN_SCRIPT in localmode.py) whose weights turn NaN.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from localmode import NAN_SCRIPT, CliResult, run_cli


@pytest.fixture
def trainguard_run(tmp_path: Path) -> Callable[..., CliResult]:
    def run(*options: str, cmd: Sequence[str], timeout: float = 240.0) -> CliResult:
        out = tmp_path / "outcome.json"
        out.unlink(missing_ok=True)
        res = run_cli(["run", "--json", str(out), *options, "--", *cmd], cwd=tmp_path, timeout=timeout)
        doc = json.loads(out.read_text()) if out.exists() else {}
        return CliResult(res.returncode, res.stdout, res.stderr, doc)

    return run


@pytest.fixture
def nan_script(tmp_path: Path) -> list[str]:
    path = tmp_path / "nan_script.py"
    path.write_text(NAN_SCRIPT)
    return [sys.executable, str(path)]
