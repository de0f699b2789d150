"""`trainguard report` and `trainguard evaluate` run afterwards on a run a rule stopped, as a user does.

The report `trainguard run` writes names the rule that stopped the run; the one `trainguard report`
writes later, from the stored run alone, must say the same (it reads the rule from the run's verdict
records, as `trainguard ls` does), not "Stopped (stopped)". Neither command stops anything, so neither
logs that a rule "asks to stop the run". A run whose verdict records are gone still reads as stopped,
and says that no record names the rule.
"""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from localmode import CliResult, run_cli


def _banner(page: Path) -> str:
    found = re.search(r'<div class="banner[^"]*">(.*?)</div>', page.read_text(encoding="utf-8"), re.DOTALL)
    assert found, "the report has no banner"
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1)))


def test_report_and_evaluate_afterwards_name_the_stop_rule_and_announce_no_stop(
    tmp_path: Path, trainguard_run: Callable[..., CliResult], nan_script: list[str]
) -> None:
    stopped = trainguard_run("--run-id", "nan", "--grace", "5", cmd=[*nan_script, "cooperative", "20"])
    assert stopped.returncode == 3, stopped.stderr
    step, message = stopped.doc["stop"]["step"], stopped.doc["stop"]["message"]
    run_dir = tmp_path / "trainguard-runs" / "nan"
    assert _banner(run_dir / "report.html").startswith(
        f"Stopped by rule exploding_tensor at step {step} (exit status 3)"
    )

    later = run_cli(["report", str(run_dir), "-o", "later.html"], cwd=tmp_path)
    assert later.returncode == 0, later.stderr
    banner = _banner(tmp_path / "later.html")
    assert banner == f"Stopped by rule exploding_tensor at step {step}: {message}", banner
    assert "(stopped)" not in banner
    assert "asks to stop" not in later.stderr, later.stderr

    evaluated = run_cli(["evaluate", str(run_dir)], cwd=tmp_path)
    assert (
        "exploding_tensor (critical, stop)" in evaluated.stderr
    )  # the finding is told once, as a verdict line
    assert "asks to stop" not in evaluated.stderr, evaluated.stderr

    shutil.rmtree(run_dir / "evaluator")  # no verdict record left: the END markers alone say "stopped"
    bare = run_cli(["report", str(run_dir), "-o", "bare.html"], cwd=tmp_path)
    assert bare.returncode == 0, bare.stderr
    assert _banner(tmp_path / "bare.html").startswith(
        "Stopped: a rule with action stop ended the run, and no verdict record of it says which; "
    )
