"""The GPU overhead benchmark runs end to end (on CPU, with its small model), so it is ready when a GPU is; the GPU
checks time the kernel sizes the hook ships first."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_gpu_benchmark_prints_a_table_per_model_with_ratios_against_no_hook() -> None:
    # --small stands a 2-block GPT in for the 110M and the 0.94B one
    cmd = [sys.executable, "-m", "benchmarks.hook_overhead_gpu", "--device", "cpu", "--small", "--reps", "1"]
    cmd += ["--mlp-steps", "20", "--gpt-steps", "4", "--gpt1b-steps", "2", "--models", "mlp,gpt,gpt1b"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, check=True).stdout
    assert out.count("\n## ") == 3 and "0.08M parameters" in out
    rows = re.findall(
        r"^\| (trainguard[^|]*|no hook[^|]*) \| (\S+) \| ([\d.]+) \| ([\d.]+) \|", out, re.MULTILINE
    )
    assert [(label.strip(), si) for label, si, _, _ in rows[:6]] == [
        ("no hook", "-"),
        ("no hook, second model", "-"),
        ("trainguard", "10"),
        ("trainguard", "1"),
        ("trainguard, no update_l2/distance_l2", "1"),
        ("trainguard, no Tier-1 steps", "1"),
    ]
    # the large model: each hook configuration beside a no-hook copy of its own (two copies fit a GPU)
    # (and with update/distance sampled: the estimate a model gets whose copies exceed its device's bound)
    assert [(label.strip(), si) for label, si, _, _ in rows[12:]] == [
        ("no hook, beside 'trainguard' at save_int 10", "-"),
        ("no hook, beside 'trainguard' at save_int 1", "-"),
        ("no hook, beside 'trainguard, update_l2/distance_l2 sampled' at save_int 1", "-"),
        ("trainguard", "10"),
        ("trainguard", "1"),
        ("trainguard, update_l2/distance_l2 sampled", "1"),
    ]
    assert len(rows) == 18 and all(float(ratio) > 0 for *_, ratio in rows)


def test_the_gpu_checks_time_the_shipped_kernel_sizes_first() -> None:
    """`hook_gpu_checks profile` compares every size with its first row: that row is what the hook ships."""
    from benchmarks.hook_gpu_checks import SIZES
    from trainguard.capture.torch import _multi_kernel

    sms = 132
    cfg = _multi_kernel.gpu_config(sms)
    block, chunk, per_sm, warps, stages, row, registers = SIZES[0]
    assert (block, chunk, per_sm * sms, warps, stages, row, registers) == (
        cfg.block,
        cfg.chunk,
        cfg.programs,
        cfg.num_warps,
        cfg.stages,
        cfg.row,
        cfg.max_registers,
    )
    assert len(set(SIZES)) == len(SIZES)
