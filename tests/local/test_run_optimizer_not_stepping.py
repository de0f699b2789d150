"""`trainguard run` over a script with a hand-written dynamic loss scaler, as older mixed-precision code has
one: healthy, it skips a step on each overflow of the scaled loss (about ten in a row while the scale comes
down at the start, then one now and then after the scale grew) and the run ends ok with no finding; with the
bug (the overflow flag is never cleared) every step after the first overflow is skipped while training goes
on, and the run says so: `optimizer_not_stepping` with its count, and the end line says the optimizer stopped
(or never stepped, when the first step already overflowed)."""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from localmode import CliResult

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import sys
    import torch
    from torch import nn
    import trainguard.torch as tg

    healthy, never = sys.argv[1] == "healthy", sys.argv[1] == "never"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scale, overflow, clean = (2.0**135 if healthy or never else 2.0**118), False, 0
    skipped = 0
    with tg.Hook(save_interval=10, stats_worker=False) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for it in range(160):
            x = torch.randn(16, 6)
            loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
            opt.zero_grad()
            (loss * scale).backward()
            grads = [p.grad for p in model.parameters()]
            overflow = overflow or not all(bool(torch.isfinite(g).all()) for g in grads)
            if overflow:  # skip the step and lower the scale
                scale /= 2
                skipped += 1
                if healthy:
                    overflow = False  # the bug leaves the flag set: every later step is skipped
                clean = 0
            else:
                for g in grads:
                    g /= scale
                opt.step()
                clean += 1
                if clean % 10 == 0:  # try a larger scale after 10 clean steps
                    scale *= 2
            hook.record_scalar("loss", loss.detach())
    print("skipped", skipped, file=sys.stderr)
    """
)


def _run(trainguard_run: Callable[..., CliResult], tmp_path: Path, mode: str) -> CliResult:
    (tmp_path / "train.py").write_text(SCRIPT)
    return trainguard_run(cmd=[sys.executable, str(tmp_path / "train.py"), mode])


def test_a_scaler_that_never_clears_its_overflow_flag_makes_the_run_say_the_optimizer_stopped(
    trainguard_run, tmp_path: Path
) -> None:
    res = _run(trainguard_run, tmp_path, "bug")
    assert res.returncode == 0, res.stderr
    stalled = [f for f in res.severe_findings() if f["rule"] == "optimizer_not_stepping"]
    assert len(stalled) == 1, res.stderr
    f = stalled[0]
    first = f["step"] + 1  # the marker sits at the last counted step
    assert f"went without an optimizer step since step {first}" in f["message"], f
    skipped = int(re.findall(r"skipped (\d+)", res.stderr)[-1])
    assert skipped == 160 - first and f["value"] >= 50, (f, skipped)
    unchecked = res.doc["unchecked_steps"]
    assert unchecked in (skipped - 1, skipped), (unchecked, skipped)  # the iteration in progress at close
    said = " ".join(res.stderr.split())  # lines are wrapped at 80 columns
    assert (
        f"the optimizer stopped stepping after step {first - 1} while training went on (optimizer_not_stepping: "
        f"{unchecked} training iterations without an optimizer step)"
    ) in said, res.stderr


def test_a_scaler_that_overflows_at_its_first_step_and_never_recovers_makes_the_run_say_it_never_stepped(
    trainguard_run, tmp_path: Path
) -> None:
    res = _run(trainguard_run, tmp_path, "never")
    # no saved step has tensor statistics: exit status 4, nothing was checked but the stalled optimizer
    assert res.returncode == 4 and "skipped 160" in res.stderr, res.stderr
    (f,) = [f for f in res.severe_findings() if f["rule"] == "optimizer_not_stepping"]
    assert f["step"] == 0 and "went without an optimizer step since step 0," in f["message"], f
    said = " ".join(res.stderr.split())
    assert (
        "NOT CHECKED at step 0: the optimizer never stepped while training went on (optimizer_not_stepping: "
        "159 training iterations without an optimizer step)"
    ) in said, res.stderr


def test_healthy_dynamic_loss_scaling_skips_steps_and_ends_ok(trainguard_run, tmp_path: Path) -> None:
    res = _run(trainguard_run, tmp_path, "healthy")
    assert res.returncode == 0, res.stderr
    assert int(re.findall(r"skipped (\d+)", res.stderr)[-1]) >= 10, res.stderr
    assert res.severe_findings() == [] and res.doc["unchecked_steps"] == 0, res.stderr
    said = " ".join(res.stderr.split())
    assert re.search(r"\[trainguard\] ended ok at step \d+; exit status 0; no findings$", said), res.stderr
