"""The GPU overhead benchmark runs end to end (on CPU, with its small model), so it is ready when a GPU is."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_gpu_benchmark_prints_a_table_per_model_with_ratios_against_no_hook() -> None:
    cmd = [sys.executable, "-m", "benchmarks.hook_overhead_gpu", "--device", "cpu", "--small", "--reps", "1"]
    cmd += ["--mlp-steps", "40", "--gpt-steps", "8"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240, check=True).stdout
    assert out.count("\n## ") == 2 and "0.08M parameters" in out
    rows = re.findall(
        r"^\| (trainguard[^|]*|no hook[^|]*) \| (\S+) \| ([\d.]+) \| ([\d.]+) \|", out, re.MULTILINE
    )
    assert [(label.strip(), si) for label, si, _, _ in rows[:5]] == [
        ("no hook", "-"),
        ("no hook, second model", "-"),
        ("trainguard", "10"),
        ("trainguard", "1"),
        ("trainguard, no update_l2/distance_l2", "1"),
    ]
    assert len(rows) == 10 and all(float(ratio) > 0 for *_, ratio in rows)
