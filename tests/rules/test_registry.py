"""The registry: names to classes, building configured rules with clear errors, and the default set."""

from __future__ import annotations

import pytest

from trainguard.api import default_rules
from trainguard.api.enums import Action
from trainguard.api.rules_config import RulesConfig, RuleSpec
from trainguard.errors import ConfigError
from trainguard.rules import registry
from trainguard.rules.all_zero import AllZero
from trainguard.rules.base import Finding, Rule
from trainguard.rules.step_view import StepView


def test_every_builtin_is_registered_under_its_own_name_with_a_hint() -> None:
    for name, cls in registry.BUILTINS.items():
        assert cls.name == name and cls.hint, name
    assert {"auc_drop", "auc_resolution"} <= set(registry.BUILTINS)
    assert all(registry.get(name).summary for name, _ in registry.DEFAULT_SET)


def test_get_accepts_sagemaker_camel_case_names() -> None:
    assert registry.get("VanishingGradient").name == "vanishing_gradient"
    assert registry.get("StalledTrainingRule").name == "stalled_training"


def test_an_unknown_rule_names_the_closest_match_and_lists_the_builtins() -> None:
    with pytest.raises(ConfigError) as err:
        registry.get("dead_reul")
    assert "unknown rule type 'dead_reul'; did you mean 'dead_relu'?" in str(err.value)
    assert "exploding_tensor" in str(err.value) and "python:module:Class" in str(err.value)


def test_a_bad_parameter_names_the_entry_the_parameter_and_what_was_expected() -> None:
    spec = RuleSpec(type="dead_relu", name="relus", params={"threshold_layer": "half"})
    with pytest.raises(ConfigError) as err:
        registry.build(spec, index=3)
    msg = str(err.value)
    assert msg.startswith(
        "rules[3] ('relus') of type dead_relu: parameter threshold_layer: Input should be a valid number"
    )
    assert "(got 'half')" in msg and "threshold_inactivity" in msg


def test_an_unknown_parameter_lists_the_parameters_the_rule_takes() -> None:
    with pytest.raises(
        ConfigError,
        match=r"parameter treshold: Extra inputs are not permitted.*Parameters it takes: .*threshold",
    ):
        registry.build(RuleSpec(type="vanishing_gradient", params={"treshold": 1e-6}))


def test_a_rule_level_check_is_reported_for_the_entry() -> None:
    with pytest.raises(ConfigError, match="tensor_variance.*set max_threshold, min_threshold or both"):
        registry.build(RuleSpec(type="tensor_variance", params={"max_threshold": None}))
    with pytest.raises(ConfigError, match="statistic.*unknown statistic 'l3'"):
        registry.build(RuleSpec(type="threshold", params={"statistic": "l3", "value": 1}))


def test_unknown_collections_and_bad_tensor_patterns_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown collection.*'gradient'.*gradients"):
        registry.build(RuleSpec(type="all_zero", collections=["gradient"]))
    with pytest.raises(ConfigError, match=r"tensors pattern 'fc\[' is not a valid regular expression"):
        registry.build(RuleSpec(type="all_zero", tensors=["fc["]))


def test_a_sagemaker_string_map_config_ports() -> None:
    spec = RuleSpec(
        type="AllZero",
        name="zeros",
        params={"collection_names": "weights,gradients", "tensor_regex": "fc1.*", "threshold": "90"},
    )
    rule = registry.build(spec)
    assert isinstance(rule, AllZero) and rule.instance_name == "zeros"
    assert (
        rule.collections == ["weights", "gradients"]
        and rule.pattern is not None
        and rule.pattern.pattern == "(?:fc1.*)"
    )
    assert rule.params.threshold == 90.0  # type: ignore[attr-defined]


def test_the_entry_s_collections_and_tensors_take_precedence_over_sagemaker_params() -> None:
    spec = RuleSpec(type="all_zero", params={"collection_names": ["weights"]}, collections=["activations"])
    assert registry.build(spec).collections == ["activations"]


def test_build_accepts_an_already_resolved_custom_class() -> None:
    class Always(Rule):
        name = ""

        def check(self, view: StepView) -> list[Finding]:
            return [self.finding(view, "always")]

    rule = registry.build(RuleSpec(type="python:my.rules:Always"), rule_class=Always)
    assert (
        rule.instance_name == "Always"
        and rule.update(StepView(step=1, scalars={"loss": 1.0}))[0].rule == "Always"
    )


def test_the_default_set_stops_on_nan_and_notifies_on_the_rest() -> None:
    specs = registry.default_rules()
    RulesConfig(rules=specs)  # valid as a rules file: unique names
    actions = {s.type: s.action for s in specs}
    # the one stop no healthy run anywhere drew (docs/rules.md, "What stops by default")
    assert actions.pop("exploding_tensor") == Action.STOP
    assert set(actions.values()) == {Action.NOTIFY}
    assert set(actions) <= set(registry.BUILTINS) and {"threshold", "all_zero", "tensor_variance"}.isdisjoint(
        actions
    )
    assert all(registry.build(s).name == s.type for s in specs)


def test_the_default_set_the_operator_reads_is_the_one_the_rule_classes_declare() -> None:
    # a rule joins the default set by setting `default_action` in its module; the operator reads the
    # copy in trainguard/api/_default_set.py, which dev/gen_docs.py writes
    assert default_rules.DEFAULT_SET == registry.declared_default_set(), (
        "trainguard/api/_default_set.py differs from the rules' `default_action`: run .venv/bin/python dev/gen_docs.py"
    )
    assert registry.DEFAULT_SET is default_rules.DEFAULT_SET, (
        "the evaluator runs the set the operator acts on"
    )
