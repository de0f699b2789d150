"""The generated reference pages and the chart's README match the code they are generated from.

`dev/gen_docs.py --check` regenerates every page in memory (rules from the registry, metrics from a
real evaluator's and operator's collectors, `TRAINGUARD_*` from the capture settings, DebugJob fields
from the CRD schema, chart values from values.yaml) and fails on any difference, printing the diff.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_pages_match_the_code() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "dev" / "gen_docs.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert out.returncode == 0, f"{out.stdout}\n{out.stderr}"
    assert out.stderr == ""
