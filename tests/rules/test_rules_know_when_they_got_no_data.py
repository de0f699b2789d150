"""A rule knows whether it ever got what it reads (`needs`, `checked`), so a run's end says "not checked"."""

from __future__ import annotations

from trainguard.rules import registry
from trainguard.rules.step_view import StepView


def _train(step: int) -> StepView:
    return StepView(step=step, scalars={"loss": 1.0 / (step + 1)})


def test_overfit_without_an_eval_loss_is_not_checked_and_is_once_one_comes() -> None:
    rule = registry.BUILTINS["overfit"]()
    assert rule.needs == "eval loss"
    for step in range(20):
        rule.update(_train(step))
    rule.update(StepView(step=20, scalars={"loss": 0.05}, eval_scalars={"val_loglik": -1.0}))
    assert not rule.checked  # an eval metric it does not read
    rule.update(StepView(step=21, scalars={"loss": 0.05}, eval_scalars={"loss": 0.07}))
    assert rule.checked
    # an eval accuracy (or R²) is read too, by the flat-validation path: such a run is checked
    by_accuracy = registry.BUILTINS["overfit"]()
    by_accuracy.update(StepView(step=1, scalars={"loss": 0.05}, eval_scalars={"val_accuracy": 0.9}))
    assert by_accuracy.checked


def test_not_checked_survives_a_restart_from_the_rule_state() -> None:
    rule = registry.BUILTINS["loss_spike"]()
    rule.update(StepView(step=1, scalars={"lr": 0.1}))  # a scalar, but no loss
    assert not rule.checked
    again = registry.BUILTINS["loss_spike"]()
    again.load_state_dict(rule.state_dict())
    assert not again.checked
    again.update(_train(2))
    restored = registry.BUILTINS["loss_spike"]()
    restored.load_state_dict(again.state_dict())
    assert restored.checked


def test_class_imbalance_is_checked_only_once_it_counted_labels() -> None:
    rule = registry.BUILTINS["class_imbalance"]()
    rule.update(_train(1))
    assert not rule.checked
    rule.update(StepView(step=2, scalars={"label_count/3": 40.0}))
    assert rule.checked


def test_a_rule_that_reads_what_every_run_has_is_always_checked() -> None:
    assert registry.BUILTINS["exploding_tensor"]().checked
