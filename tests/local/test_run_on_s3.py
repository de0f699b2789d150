"""`trainguard run --out s3://...` against a real S3 server (SeaweedFS): the same stop, the report kept locally."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.s3, pytest.mark.slow]


def test_run_writing_to_s3_is_stopped_and_its_report_lands_in_the_local_runs_directory(
    trainguard_run, nan_script: list[str], s3_uri: str, tmp_path: Path
) -> None:
    res = trainguard_run("--out", s3_uri, "--run-id", "s3-run", cmd=[*nan_script, "plain", "50"])
    assert res.returncode == 3, res.stderr
    assert res.doc["stopped_by"] == "exploding_tensor" and res.doc["run_uri"] == s3_uri
    report = tmp_path / "trainguard-runs" / "s3-run" / "report.html"
    assert res.doc["report"] == str(report.resolve())
    assert 'data-rule="exploding_tensor"' in report.read_text()
