"""The store-fault benchmark runs end to end: a real S3 outage and a real full disk, every lost step counted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.s3
def test_the_fault_table_counts_every_lost_step_of_an_outage_and_a_full_disk() -> None:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.store_faults",
        "--quick",
        "--scenarios",
        "none,down-4s,disk-full",
    ]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=400, check=True).stdout
    rows = {
        m[0].strip(): [c.strip() for c in m[1:]]
        for m in re.findall(r"^\| ([^|]+) \|" + r"([^|]*)\|" * 10, out, re.MULTILINE)
    }
    assert {"no fault", "S3 down 4 s", "disk full"} <= set(rows), out
    for fault in ("no fault", "S3 down 4 s"):
        _, steps, stored, lost, reported, exact, end, *_ = rows[fault]
        assert (
            int(steps) > 0
            and int(stored) == int(steps)
            and (lost, reported, exact, end) == ("0", "0", "yes", "yes")
        )
    disk = rows["disk full"]
    if not disk[1].startswith("not run"):  # a machine without user namespaces cannot mount the tmpfs
        assert disk[5] == "yes" and int(disk[3]) == int(disk[4]), out
