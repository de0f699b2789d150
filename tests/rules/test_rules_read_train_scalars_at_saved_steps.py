"""Train scalars come at every step (format 2.4); a rule reads them at saved steps unless it reads every step.

A rule's windows and debouncing count views: fed ten times more losses they would span a tenth of the steps.
So the evaluator's views between saved steps are marked (`StepView.saved`, from the save interval in run.json)
and reach a rule that reads saved steps without their train scalars; eval scalars still reach it at any step.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import trainguard
from trainguard.rules import base, registry
from trainguard.rules.step_view import StepView
from trainguard.sidecar.view_builder import ViewBuilder, save_interval_of


class Seen(base.Rule):
    """Notes the steps at which it saw a train loss and an eval loss; finds nothing."""

    name = "seen"

    def __init__(self) -> None:
        super().__init__()
        self.train: list[int] = []
        self.eval: list[int] = []

    def check(self, view: StepView) -> list[base.Finding]:
        if "loss" in view.scalars:
            self.train.append(view.step)
        if "val_loss" in view.eval_scalars:
            self.eval.append(view.step)
        return []


class SeenEveryStep(Seen):
    every_step = True


def _views(tmp_path: Path) -> list[StepView]:
    uri = f"file://{tmp_path}/run"
    with trainguard.Recorder(uri, save_interval=10) as rec:
        for step in range(50):
            rec.record_tensor("w", np.ones((1, 2), np.float32), collection="weights")
            rec.record_scalar("loss", 1.0 / (1 + step))
            if step % 15 == 0:
                rec.record_scalar("val_loss", 1.0, mode="eval")
            rec.step()
    run = trainguard.open_run(uri)
    source = run.source(0)
    builder = ViewBuilder(0, save_interval=save_interval_of(run.info))
    return [v for seg in source.poll() for v in builder.views(seg, source.catalogue())]


def test_a_rule_reads_the_loss_at_saved_steps_and_eval_scalars_at_any_step(tmp_path: Path) -> None:
    views = _views(tmp_path)
    assert [v.step for v in views if not v.saved] == [s for s in range(50) if s % 10]
    rule = Seen()
    for v in views:
        rule.update(v)
    assert rule.train == [0, 10, 20, 30, 40]
    assert rule.eval == [0, 15, 30, 45]  # 15 and 45 lie between saved steps: their train loss is left out
    assert rule.state_dict()["seen"] == 7  # the five saved steps and the two eval points between them


def test_a_rule_that_reads_every_step_gets_every_steps_loss(tmp_path: Path) -> None:
    rule = SeenEveryStep()
    for v in _views(tmp_path):
        rule.update(v)
    assert rule.train == list(range(50))
    assert rule.eval == [0, 15, 30, 45]


def test_a_run_without_a_save_interval_marks_every_view_saved(tmp_path: Path) -> None:
    uri = f"file://{tmp_path}/run"
    with trainguard.Recorder(uri, save_interval=10) as rec:
        for _ in range(12):
            rec.record_scalar("loss", 1.0)
            rec.step()
    source = trainguard.open_run(uri).source(0)
    builder = ViewBuilder(0)  # a reader that does not know it (a foreign run) judges every view as before
    assert all(v.saved for seg in source.poll() for v in builder.views(seg, source.catalogue()))


def test_loss_spike_reads_every_step_and_sees_a_spike_between_saved_steps(tmp_path: Path) -> None:
    uri = f"file://{tmp_path}/spike"
    rng = np.random.default_rng(0)
    with trainguard.Recorder(uri, save_interval=10) as rec:
        for step in range(400):
            rec.record_scalar("loss", (8.0 if step == 305 else 1.0) * float(np.exp(rng.normal(0, 0.05))))
            rec.step()
    run = trainguard.open_run(uri)
    source = run.source(0)
    builder = ViewBuilder(0, save_interval=save_interval_of(run.info))
    rule = registry.get("loss_spike")()
    found = [
        f for seg in source.poll() for v in builder.views(seg, source.catalogue()) for f in rule.update(v)
    ]
    # step 305 is not saved: at saved steps only it is never seen; the loss came back at once, so it is noted
    assert [(f.step, f.severity.value) for f in found] == [(308, "info")] and "at step 305" in found[
        0
    ].message


def test_exploding_tensor_finds_a_nan_loss_the_step_it_is_recorded_with_no_saved_step_after_it(
    tmp_path: Path,
) -> None:
    """A loss scaler skips the optimizer step on non-finite gradients, so the step count stops: the NaN losses
    all lie between saved steps. Read at saved steps only, the rule would never see one."""
    uri = f"file://{tmp_path}/nan"
    with trainguard.Recorder(uri, save_interval=10) as rec:
        for step in range(14):
            rec.record_tensor("w", np.ones((1, 2), np.float32), collection="weights")
            rec.record_scalar("loss", float("nan") if step >= 12 else 1.0)
            rec.step()
    run = trainguard.open_run(uri)
    source = run.source(0)
    builder = ViewBuilder(0, save_interval=save_interval_of(run.info))
    views = [v for seg in source.poll() for v in builder.views(seg, source.catalogue())]
    assert not any(v.saved for v in views if v.step >= 11)
    rule = registry.get("exploding_tensor")()
    found = [f for v in views for f in rule.update(v)]
    assert [f.step for f in found] == [12, 13] and "loss (train scalar) is nan" in found[0].message
