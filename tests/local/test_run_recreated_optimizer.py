"""`trainguard run` over a script that creates a fresh optimizer every epoch: the issue's script, as a new user
writes it. Registering each new optimizer keeps every step checked; forgetting to makes the run say it went
blind, since which step, and how many steps were not checked, instead of "no warnings"."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from localmode import CliResult

import trainguard

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import sys
    import torch
    from torch import nn
    import trainguard.torch as tg

    register_each = sys.argv[1] == "each"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
    with tg.Hook(save_interval=1, stats_worker=False) as hook:
        hook.register_module(model)
        for epoch in range(4):
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)  # "reset the optimizer" every epoch
            if register_each or epoch == 0:
                hook.register_optimizer(opt)
            for step in range(50):
                x = torch.randn(16, 6)
                loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
                opt.zero_grad()
                loss.backward()
                opt.step()
                hook.record_scalar("loss", loss.detach())
    """
)


def _run(trainguard_run: Callable[..., CliResult], tmp_path: Path, mode: str) -> CliResult:
    (tmp_path / "train.py").write_text(SCRIPT)
    return trainguard_run(cmd=[sys.executable, str(tmp_path / "train.py"), mode])


def test_registering_each_new_optimizer_checks_all_200_steps(trainguard_run, tmp_path: Path) -> None:
    res = _run(trainguard_run, tmp_path, "each")
    assert res.returncode == 0, res.stderr
    assert res.doc["last_step"] == 199 and res.doc["unchecked_steps"] == 0, res.stderr
    assert res.severe_findings() == [], res.stderr
    said = " ".join(res.stderr.split())  # lines are wrapped at 80 columns
    assert said.endswith("[trainguard] ended ok at step 199; exit status 0; no findings"), res.stderr
    assert trainguard.open_run(res.doc["run_uri"]).steps().tolist() == list(range(200))


def test_an_unregistered_new_optimizer_makes_the_run_say_blind_since_step_50(
    trainguard_run, tmp_path: Path
) -> None:
    res = _run(trainguard_run, tmp_path, "first")
    # the losses recorded while blind land on step 50, the first step not counted: the last evaluated
    assert res.doc["last_step"] == 50 and res.doc["unchecked_steps"] == 150, res.stderr
    gaps = [f for f in res.severe_findings() if f["rule"] == "data_gap"]
    assert len(gaps) == 1 and gaps[0]["step"] == 50 and "blind since step 50" in gaps[0]["message"], gaps
    said = " ".join(res.stderr.split())  # lines are wrapped at 80 columns
    assert "no findings" not in said and "ended ok" not in said
    assert "blind since step 50; 150 training steps went by" in said, res.stderr
    assert res.doc["rules"]["data_gap"]["state"] == "IssuesFound"
    end = trainguard.open_run(res.doc["run_uri"]).ended()
    assert end is not None and (end.unchecked_steps, end.blind_since_step) == (150, 50)
