"""Helpers for local-mode tests: the real `trainguard` CLI in a subprocess, and small training scripts.

Shared by the test modules of tests/local through `conftest.py` (fixtures) and direct imports.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


@dataclass
class CliResult:
    """What one `trainguard` invocation did."""

    returncode: int
    stdout: str
    stderr: str
    doc: dict[str, Any] = field(default_factory=dict)

    @property
    def said(self) -> str:
        """stderr with the lines that `trainguard run` wrapped (continued by a 4-space indent) joined again."""
        return self.stderr.replace("\n    ", " ")

    def wide_lines(self) -> list[str]:
        """The lines of `trainguard run`'s own messages wider than 80 columns (a lone path or URI may be)."""
        return [
            line
            for line in self.stderr.splitlines()
            if line.startswith(("[trainguard]", "    ")) and len(line) > 80 and " " in line.strip()
        ]

    def severe_findings(self) -> list[dict[str, Any]]:
        return [f for f in self.doc.get("findings", []) if f["severity"] in ("warning", "critical")]


def run_cli(args: Sequence[str], *, cwd: Path, timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainguard", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def example(name: str) -> list[str]:
    """The command line that runs one of examples/ with this interpreter."""
    return [sys.executable, str(EXAMPLES / name)]


NAN_SCRIPT = """
import os, signal, subprocess, sys, time
import numpy as np
import trainguard

mode = sys.argv[1]            # "plain", "ignore-term" or "cooperative"
nan_at = int(sys.argv[2])
if mode != "plain":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode == "ignore-term":     # a helper process in the same group, which the stop must reach too
    helper = subprocess.Popen(["sleep", "600"])
    open("helper.pid", "w").write(str(helper.pid))
ready = os.environ.get("NAN_SCRIPT_READY")  # several ranks: the NaN waits until rank 0 has written (no race)
w = np.ones((8, 8), np.float32)
with trainguard.Recorder() as rec:
    for step in range(100000):
        if step == nan_at:
            w[:] = np.nan
        rec.record_tensor("fc.weight", w, collection="weights")
        rec.record_scalar("loss", float(np.mean(w)))
        rec.step()
        if ready and step == 0 and os.environ.get("RANK") == "0":
            rec.flush()  # rank 0's first step is in the store before any rank may turn NaN
            open(ready, "w").close()
        if ready and step == nan_at - 1:
            while not os.path.exists(ready):
                time.sleep(0.01)
        if mode == "cooperative" and rec.should_stop():
            print("cooperative stop:", rec._stop.reason(), flush=True)
            sys.exit(0)
        time.sleep(0.002)
"""
"""A numpy training loop whose weights turn NaN at a given step; it never ends by itself."""
