"""What every `trainguard` command does for a shell user: a reader that goes away, a default place to look.

`trainguard rules list | head` (any command whose output is cut short) stops quietly with 128 +
SIGPIPE, no traceback; `trainguard ls` without an argument looks where `trainguard run` writes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_with_reader_gone(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m trainguard ARGS` with stdout a pipe whose reader closed before the command wrote a byte."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "trainguard", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (("rules", "list"), 141),
        (("rules", "list", "--json"), 141),
        (("rules", "list", "exploding_tensor"), 141),
        (("crd",), 141),
        (("ls", "--help"), 0),  # argparse's own help ignores a closed stdout
    ],
)
def test_a_command_whose_reader_goes_away_stops_quietly(
    args: tuple[str, ...], status: int, tmp_path: Path
) -> None:
    out = run_with_reader_gone(*args, cwd=tmp_path)
    assert out.stderr == ""
    assert out.returncode == status


def test_ls_without_an_argument_looks_where_run_writes(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "trainguard", "ls"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
        check=False,
    )
    assert out.returncode == 1
    assert (
        out.stderr == f"no runs under {(tmp_path / 'trainguard-runs').as_uri()} (searched 4 folders deep)\n"
    )
