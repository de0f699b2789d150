"""The pure parts of `benchmarks/attach_stop_latency.py`: its rows, its ratio, the trainer's NaN time it reads.

Nothing here times anything: the figures are the benchmark's, on a real cluster."""

from __future__ import annotations

from pathlib import Path

from benchmarks.attach_stop_latency import Sample, table, workload_label
from tests.e2e.attaching import first_nonfinite
from tests.e2e.workloads import KINDS, Launched


def test_a_workload_queued_in_kueue_has_its_own_row() -> None:
    job, jobset = KINDS[0], KINDS[1]
    assert workload_label(Launched(job, "ns", "job-nan0-kueue")) == "job (Kueue)"
    assert workload_label(Launched(jobset, "ns", "jobset-nan0")) == "jobset"


def test_the_table_gives_medians_every_run_and_the_ratio_of_the_medians() -> None:
    samples = [
        Sample("job (Kueue)", "attach", 12.0), Sample("job (Kueue)", "attach", 20.0),
        Sample("job (Kueue)", "attach", 14.0), Sample("job (Kueue)", "baseline", 4.0),
        Sample("job (Kueue)", "baseline", 3.0), Sample("job (Kueue)", "baseline", 8.0),
        Sample("jobset", "attach", 9.0),
    ]  # fmt: skip
    lines = table(samples).splitlines()
    assert lines[2] == "| job (Kueue) | 14.0 (12.0/20.0/14.0) | 4.0 (4.0/3.0/8.0) | 3.50x |"
    assert lines[3] == "| jobset | 9.0 (9.0) | - | - |"


def test_the_first_non_finite_loss_is_the_earliest_of_the_ranks(tmp_path: Path) -> None:
    run = Launched(KINDS[0], "ns", "job-nan")
    assert first_nonfinite(tmp_path, run) is None
    (tmp_path / "job-nan.nonfinite.1").write_text("1700000012.250\n")
    (tmp_path / "job-nan.nonfinite.0").write_text("1700000010.500\n")
    (tmp_path / "job-nan.nonfinite.2").write_text("")  # a rank still writing its time
    (tmp_path / "job-nan-kueue.nonfinite.0").write_text("1700000001.000\n")  # another workload's
    assert first_nonfinite(tmp_path, run) == 1700000010.5
