"""`trainguard run` never says "no warnings" over nothing, says how every rank ended, and lets a stop save work.

Each test runs the real CLI on a small training script (`trainguard_run`), then reads what it left:
the `--json` outcome, the END.json of each rank, `trainguard inspect` and the HTML report.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from localmode import run_cli

import trainguard

pytestmark = pytest.mark.slow

COOPERATIVE = textwrap.dedent(
    """
    import json, signal, sys, time
    import numpy as np
    import trainguard

    def on_term(signum, frame):
        open("sigterm", "w").write(repr(time.time()))
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_term)
    w = np.ones((8, 8), np.float32)
    with trainguard.Recorder() as rec:
        for step in range(100000):
            if step == 40:
                w[:] = np.nan
            rec.record_tensor("fc.weight", w, collection="weights")
            rec.record_scalar("loss", float(np.mean(w)))
            rec.step()
            if rec.should_stop():
                time.sleep(1.0)  # a checkpoint takes a while to write
                json.dump({"step": step, "time": time.time()}, open("checkpoint.json", "w"))
                break
            time.sleep(0.002)
    """
)


def test_a_script_that_saves_a_checkpoint_when_asked_to_stop_has_it_on_disk_before_any_sigterm(
    trainguard_run, tmp_path: Path
) -> None:
    (tmp_path / "train.py").write_text(COOPERATIVE)
    res = trainguard_run(cmd=[sys.executable, str(tmp_path / "train.py")])
    assert res.returncode == 3, res.stderr
    assert res.doc["stopped_by"] == "exploding_tensor" and res.doc["sigterm_sent"] is False
    assert (tmp_path / "checkpoint.json").is_file(), res.stderr
    assert not (tmp_path / "sigterm").exists(), "SIGTERM came before the script could save its work"
    last = res.said.splitlines()[-1]
    assert last.startswith(
        "[trainguard] STOPPED by rule exploding_tensor at step 40 on rank 0 (the command saved"
    )
    assert "left after should_stop()); exit status 3" in last
    assert res.doc["end"]["state"] == "stopped" and res.doc["end"]["stop_how"] == "cooperative"
    end = trainguard.open_run(res.doc["run_uri"]).ended()
    assert end is not None and end.written_by == "hook" and end.exit_code == 0  # it closed its own run
    assert end.status == "stopped"  # the hook's should_stop() said so and the script left: not `ok`


def test_with_grace_0_sigterm_comes_with_the_stop_file(trainguard_run, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(COOPERATIVE)
    res = trainguard_run("--grace", "0", cmd=[sys.executable, str(tmp_path / "train.py")])
    assert res.returncode == 3 and res.doc["sigterm_sent"] is True, res.stderr


CRASH = textwrap.dedent(
    """
    import numpy as np
    import trainguard

    rec = trainguard.Recorder()
    for step in range(1000):
        rec.record_tensor("fc.weight", np.full((4, 4), 0.5), collection="weights")
        rec.record_scalar("loss", 1.0 / (step + 1))
        rec.step()
        if step == 70:
            raise ZeroDivisionError("the batch was empty")
    """
)


def test_a_script_that_crashes_says_so_in_end_json_the_run_summary_inspect_and_the_report(
    trainguard_run, tmp_path: Path
) -> None:
    (tmp_path / "crash.py").write_text(CRASH)
    res = trainguard_run(cmd=[sys.executable, str(tmp_path / "crash.py")])
    assert res.returncode == 1, res.stderr  # Python's status for an uncaught exception, passed through
    end = trainguard.open_run(res.doc["run_uri"]).ended()
    assert end is not None and end.status == "crashed" and end.exit_code == 1
    assert end.exception == "ZeroDivisionError: the batch was empty"
    said = "crashed: exited with status 1; ZeroDivisionError: the batch was empty"
    assert res.doc["ranks_ended"] == {"0": said}
    severe = len(res.severe_findings())  # the weights never change: unchanged_tensor says so
    assert severe == 1, res.doc["findings"]
    assert res.said.splitlines()[-1] == (
        "[trainguard] CRASHED at step 70: ZeroDivisionError: the batch was empty; exit status 1; "
        "1 finding (1 warning)"
    )
    assert "no warnings" not in res.said and res.doc["end"]["state"] == "crashed"
    assert res.doc["end"]["error"] == "ZeroDivisionError: the batch was empty"
    shown = run_cli(["inspect", res.doc["run_uri"]], cwd=tmp_path)
    assert said in shown.stdout
    assert "ZeroDivisionError: the batch was empty" in Path(res.doc["report"]).read_text()


NO_OPTIMIZER = textwrap.dedent(
    """
    import torch
    import trainguard.torch as tg

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = tg.Hook()
    hook.register_module(model)  # register_optimizer(opt) forgotten
    for step in range(30):
        loss = model(torch.randn(16, 4)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        hook.record_scalar("loss", loss)
    """
)


def test_a_hook_without_an_optimizer_is_told_and_the_run_says_nothing_was_evaluated(
    trainguard_run, tmp_path: Path
) -> None:
    (tmp_path / "train.py").write_text(NO_OPTIMIZER)
    res = trainguard_run(cmd=[sys.executable, str(tmp_path / "train.py")])
    assert res.returncode == 4, res.stderr
    warned = [
        line for line in res.stderr.splitlines() if line.startswith("trainguard: no optimizer registered")
    ]
    assert len(warned) == 1, res.stderr  # the hook's own warning, once
    assert "nothing was evaluated: the run holds no saved step with tensor statistics" in res.said
    assert "no warnings" not in res.said
    assert res.doc["end"]["state"] == "blind" and res.said.splitlines()[-1].startswith(
        "[trainguard] NOT CHECKED"
    )
    assert "hook.register_optimizer(optimizer)" in res.doc["nothing_evaluated"]
    assert "Nothing was evaluated" in Path(res.doc["report"]).read_text()


def test_a_stopped_two_rank_run_ends_both_ranks_so_evaluate_follow_returns_at_once(
    trainguard_run, nan_script: list[str], tmp_path: Path
) -> None:
    from test_run_stops_on_a_stop_verdict import LAUNCHER

    (tmp_path / "launch.py").write_text(LAUNCHER)
    res = trainguard_run(cmd=[nan_script[0], str(tmp_path / "launch.py"), nan_script[1], "1"])
    assert res.returncode == 3, res.stderr
    run = trainguard.open_run(res.doc["run_uri"])
    for rank in (0, 1):
        end = run.ended(rank=rank)
        assert end is not None and (end.status, end.written_by) == ("stopped", "supervisor"), end
        assert end.signal is not None or end.exit_code is not None
    follow = subprocess.run(
        [sys.executable, "-m", "trainguard", "evaluate", "--follow", "--idle-timeout-seconds", "600", res.doc["run_uri"]],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert follow.returncode == 1 and "exploding_tensor" in follow.stdout, follow.stderr
