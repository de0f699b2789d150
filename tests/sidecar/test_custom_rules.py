"""Custom rules load as `python:module:Class`; smdebug-style rules run through the adapter; bad entries say which."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sidecar.runs import RunBuilder, custom, write_run
from trainguard.api.enums import RuleState
from trainguard.api.rules_config import RuleSpec
from trainguard.errors import ConfigError
from trainguard.rules.step_view import COL, StepView, TensorMeta
from trainguard.sidecar import config
from trainguard.sidecar.custom import EvaluatedTrial, TensorUnavailableForStep
from trainguard.sidecar.evaluator import Evaluator
from trainguard.store.backends import open_store


def test_a_rule_subclass_is_used_as_is_with_its_params_and_filters() -> None:
    spec = RuleSpec(type=custom("StepLedger"), name="mine", params={"fire_at": [3]}, tensors=["fc1.*"])
    (compiled,) = config.compile_rules([spec])
    rule = compiled.make()
    assert type(rule).__name__ == "StepLedger" and rule.instance_name == "mine"
    assert rule.params.fire_at == [3] and rule.pattern is not None  # type: ignore[attr-defined]
    assert compiled.make() is not rule  # one instance per rank


def test_an_smdebug_rule_returning_true_is_a_finding_at_that_step(file_uri: str) -> None:
    b = RunBuilder(open_store(file_uri))
    b.segment(range(5), loss={0: 0.2, 1: 0.1, 2: 0.9, 3: 0.1, 4: 0.95})
    spec = RuleSpec(type=custom("LossAboveSmdebug"), name="loss-high", params={"threshold": 0.5})
    ev = Evaluator(file_uri, rules=[spec], checkpoint=False)
    (verdict,) = ev.poll()
    assert (verdict.rule, verdict.state, verdict.step) == ("loss-high", RuleState.ISSUES_FOUND, 2)
    assert [f.step for f in ev.findings] == [2, 4]


def test_an_smdebug_rule_raising_condition_met_is_a_finding_and_reads_reductions(file_uri: str) -> None:
    write_run(open_store(file_uri), segments=2)
    # healthy_row: fc1.weight has l2 = 1.0 + 0.001 * step, above 1.005 from step 6 on; fc2.weight
    # (1.3 + ...) is above it from step 0, so firing at 6 shows the rule got its tensor_regex.
    spec = RuleSpec(
        type=custom("WeightNormSmdebug"),
        name="w",
        params={"threshold": 1.005, "tensor_regex": "^fc1"},
        action="stop",
    )
    ev = Evaluator(file_uri, rules=[spec], checkpoint=False)
    (verdict,) = ev.poll()
    assert verdict.step == 6 and "fc1.weight l2 above 1.005" in verdict.message
    assert "see the documentation of tests.sidecar.rules_for_tests.WeightNormSmdebug" in verdict.message
    assert verdict.action.value == "stop"


def _view(step: int, *, l2: float, loss: float | None = None) -> StepView:
    stats = [[0.0] * len(COL)]
    row = stats[0]
    row[COL["count"]], row[COL["min"]], row[COL["max"]], row[COL["mean"]] = 10, -2.0, 1.0, -0.5
    row[COL["std"]], row[COL["abs_mean"]], row[COL["l2"]] = 0.5, 0.75, l2
    import numpy as np

    return StepView(
        step=step,
        names=("w",),
        meta=(TensorMeta(name="w", collection="weights", trainable=True),),
        stats=np.asarray(stats, np.float64),
        scalars={} if loss is None else {"loss": loss},
    )


def test_the_trial_maps_smdebug_reductions_onto_our_statistics() -> None:
    trial = EvaluatedTrial(history_steps=2)
    trial.add(_view(0, l2=3.0, loss=1.5))
    t = trial.tensor("w")
    assert t.reduction_value(0, "l2") == 3.0
    assert t.reduction_value(0, "mean") == -0.5 and t.reduction_value(0, "mean", abs=True) == 0.75
    assert t.reduction_value(0, "max", abs=True) == 2.0 and t.reduction_value(0, "variance") == 0.25
    assert t.reduction_value(0, "sum") == -5.0 and t.reduction_value(0, "l1") == 7.5
    assert trial.tensor("loss").value(0) == 1.5
    assert trial.tensor_names(collection="weights") == ["w"] and trial.tensor_names(regex="lo") == ["loss"]
    with pytest.raises(TensorUnavailableForStep, match="full tensor values are not captured"):
        t.value(0)
    with pytest.raises(ValueError, match="reduction 'prod'"):
        t.reduction_value(0, "prod")
    trial.add(_view(1, l2=4.0))
    trial.add(_view(2, l2=5.0))
    assert trial.steps() == [1, 2]  # only the newest history_steps are kept
    with pytest.raises(TensorUnavailableForStep):
        t.reduction_value(0, "l2")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "no_such_rule"}, r"rules\[0\] \(name 'no_such_rule'.*unknown rule type 'no_such_rule'"),
        (
            {"type": "python:tests.sidecar.no_such_module:X"},
            r"rules\[0\].*cannot import module 'tests.sidecar.no_such_module'",
        ),
        ({"type": custom("Missing")}, r"rules\[0\].*has no class 'Missing'"),
        (
            {"type": custom("NotARule")},
            r"rules\[0\].*neither a subclass of trainguard.rules.base.Rule nor an smdebug-style",
        ),
        ({"type": custom("StepLedger"), "params": {"fire_at": 3}}, r"rules\[0\].*parameter '?fire_at"),
        ({"type": custom("StepLedger"), "params": {"typo": 1}}, r"rules\[0\].*parameter '?typo"),
        ({"type": custom("LossAboveSmdebug"), "params": {"no_such_kwarg": 1}}, r"rules\[0\].*no_such_kwarg"),
    ],
)
def test_a_bad_rule_entry_is_a_config_error_naming_it(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config.compile_rules([RuleSpec.model_validate(entry)])


def test_a_rules_file_with_a_duplicate_name_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(
        f"rules:\n  - type: {custom('StepLedger')}\n    name: a\n  - type: {custom('NonFinite')}\n    name: a\n"
    )
    with pytest.raises(ConfigError, match=r"rules\[1\]: duplicate rule name 'a'"):
        config.load_rules_file(path)


def test_a_rules_file_may_be_a_bare_list_and_bad_yaml_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(f"- type: {custom('StepLedger')}\n  action: stop\n")
    *defaults, spec = config.load_rules_file(path)  # a bare list extends the default set too
    assert spec.key == "StepLedger" and spec.action.value == "stop"
    assert [d.key for d in defaults] == [d.key for d in config.default_specs()]
    path.write_text("rules: [\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        config.load_rules_file(path)
    with pytest.raises(ConfigError, match="cannot read the rules file"):
        config.load_rules_file(tmp_path / "absent.yaml")


def test_a_sidecar_config_with_an_unknown_field_names_it(tmp_path: Path) -> None:
    path = tmp_path / "sidecar.yaml"
    path.write_text("run_uri: file:///tmp/x\nmetrics_prot: 1\n")
    with pytest.raises(ConfigError, match="metrics_prot"):
        config.load_sidecar_config(path)
    path.write_text("run_uri: file:///tmp/x\nrank: 2\nmetrics_port: 0\n")
    cfg = config.load_sidecar_config(path)
    assert cfg.rank == 2 and cfg.metrics_port == 0
