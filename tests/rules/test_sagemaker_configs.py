"""Coming from SageMaker Debugger: its rule names, parameters as strings, its configuration shapes.

A rules entry written the SageMaker way gets an error that names our field; a SageMaker rule we do
not have says why instead of suggesting a look-alike; a whole SageMaker configuration (the training
job API's JSON or the SDK's arguments as YAML) is converted by `trainguard rules convert` and read
as it is by every `--rules FILE`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from tests.api.test_debugjob_models import _spec
from tests.store.test_inspect_cli import trainguard_cli
from trainguard.api import debugjob, sagemaker
from trainguard.api.enums import Action
from trainguard.api.rules_config import RuleSpec
from trainguard.errors import ConfigError
from trainguard.rules import convert, registry
from trainguard.sidecar import config

API_CONFIG: dict[str, Any] = {
    "TrainingJobName": "mnist-1",
    "DebugHookConfig": {
        "S3OutputPath": "s3://bucket/debug",
        "HookParameters": {"save_interval": "100"},
        "CollectionConfigurations": [
            {"CollectionName": "weights"},
            {"CollectionName": "gradients", "CollectionParameters": {"save_interval": "50"}},
        ],
    },
    "DebugRuleConfigurations": [
        {
            "RuleConfigurationName": "VanishingGradient",
            "RuleEvaluatorImage": "123.dkr.ecr.us-west-2.amazonaws.com/sagemaker-debugger-rules:latest",
            "InstanceType": "ml.t3.medium",
            "VolumeSizeInGB": 0,
            "RuleParameters": {"rule_to_invoke": "VanishingGradient", "threshold": "0.0000001"},
        },
        {
            "RuleConfigurationName": "LossNotDecreasing-eval",
            "RuleParameters": {
                "rule_to_invoke": "LossNotDecreasing",
                "use_losses_collection": "True",
                "num_steps": "10",
                "diff_percent": "0.1",
                "mode": "EVAL",
            },
        },
        {
            "RuleConfigurationName": "StalledTrainingRule",
            "RuleParameters": {
                "rule_to_invoke": "StalledTrainingRule",
                "threshold": "1800",
                "stop_training_on_fire": "True",
                "training_job_name_prefix": "mnist",
            },
        },
        {
            "RuleConfigurationName": "Overfit",
            "RuleParameters": {
                "rule_to_invoke": "Overfit",
                "action_json": json.dumps({"StopTraining": {"training_job_prefix": "mnist"}, "Email": {}}),
            },
        },
    ],
}

SDK_CONFIG = """
rules:
  - base_config: rule_configs.exploding_tensor()
    actions: [StopTraining]
    rule_parameters: {collection_names: "gradients,relu_output", only_nan: "False"}
  - base_config: dead_relu
    rule_parameters: {threshold_layer: "30"}
    collections_to_save:
      - name: relu_output
        parameters: {save_interval: "20"}
"""


def test_rule_parameters_in_a_rules_entry_points_to_params(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("rules:\n  - type: LossNotDecreasing\n    rule_parameters: {num_steps: '10'}\n")
    with pytest.raises(ConfigError) as err:
        config.load_rules_file(path)
    assert str(err.value) == (
        f"rules file {path}: rules.0: `rule_parameters` is SageMaker Debugger's name: write the rule's parameters "
        "under `params` (`trainguard rules convert FILE` converts a whole SageMaker Debugger configuration)"
    )


def test_a_debugjob_rule_with_sagemaker_keys_names_our_field() -> None:
    with pytest.raises(pydantic.ValidationError, match="`collections_to_save` is SageMaker Debugger's name"):
        debugjob.DebugJobSpec.model_validate(
            _spec(rules=[{"type": "dead_relu", "collections_to_save": [{"name": "relu_output"}]}])
        )


def test_stop_training_on_fire_points_to_action_stop() -> None:
    spec = RuleSpec(type="StalledTrainingRule", params={"threshold": "120", "stop_training_on_fire": "True"})
    with pytest.raises(ConfigError) as err:
        config.compile_rules([spec])
    assert str(err.value) == (
        "rules[0] ('StalledTrainingRule'): parameter 'stop_training_on_fire' is SageMaker Debugger's: "
        "TrainGuard stops a run with the rule entry's `action: stop`"
    )


@pytest.mark.parametrize("name", sorted(sagemaker.UNSUPPORTED_RULES))
def test_a_sagemaker_rule_we_do_not_have_says_why_and_suggests_no_look_alike(name: str) -> None:
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
    for written in (name, snake):
        with pytest.raises(ConfigError) as err:
            registry.get(written)
        assert str(err.value) == (
            f"{name} is a SageMaker Debugger rule that TrainGuard does not support: {sagemaker.UNSUPPORTED_RULES[name]}"
        )


def test_every_sagemaker_rule_we_have_resolves_by_its_sagemaker_name() -> None:
    for theirs, ours in sagemaker.RULES.items():
        assert registry.get(theirs).name == ours


def test_string_typed_parameter_values_are_parsed_as_sagemaker_writes_them() -> None:
    spec = RuleSpec(
        type="LossNotDecreasing",
        params={"num_steps": "10", "diff_percent": "0.1", "mode": "EVAL", "use_losses_collection": "False"},
    )
    p = registry.build(spec).params
    assert (p.num_steps, p.diff_percent, p.mode, p.use_losses_collection) == (10, 0.1, "eval", False)  # type: ignore[attr-defined]


def test_the_training_job_api_shape_converts_with_its_actions_and_capture_settings() -> None:
    result = convert.convert(API_CONFIG)
    assert [s.model_dump(exclude_none=True) for s in result.rules] == [
        {"type": "vanishing_gradient", "action": Action.NOTIFY, "params": {"threshold": 1e-7}},
        {
            "type": "loss_not_decreasing",
            "name": "lossnotdecreasing-eval",
            "action": Action.NOTIFY,
            "params": {"use_losses_collection": True, "num_steps": 10, "diff_percent": 0.1, "mode": "eval"},
        },
        {"type": "stalled_training", "action": Action.STOP, "params": {"threshold": 1800.0}},
        {"type": "overfit", "action": Action.STOP, "params": {}},
    ]
    assert (result.save_interval, result.collections, result.dropped) == (50, ["weights", "gradients"], [])
    assert result.notes[:2] == [
        "DebugRuleConfigurations[2] (StalledTrainingRule): stop_training_on_fire became action: stop",
        (
            "DebugRuleConfigurations[2] (StalledTrainingRule): training_job_name_prefix dropped (not needed: a "
            "DebugJob stops its own Job; remove it)"
        ),
    ]
    assert any("the Email action has no direct counterpart" in n for n in result.notes)
    config.compile_rules(result.rules)


def test_the_sdk_shape_converts_collections_and_actions() -> None:
    result = convert.convert(yaml.safe_load(SDK_CONFIG))
    assert [s.model_dump(exclude_none=True) for s in result.rules] == [
        {
            "type": "exploding_tensor",
            "action": Action.STOP,
            "params": {"only_nan": False},
            "collections": ["gradients", "activations"],
        },
        {"type": "dead_relu", "action": Action.NOTIFY, "params": {"threshold_layer": 30.0}},
    ]
    assert (result.save_interval, result.collections, result.dropped) == (20, ["activations"], [])


def test_what_cannot_be_converted_is_named_with_the_reason() -> None:
    doc = {
        "DebugRuleConfigurations": [
            {
                "RuleConfigurationName": "CheckInputImages",
                "RuleParameters": {"rule_to_invoke": "CheckInputImages"},
            },
            {
                "RuleConfigurationName": "AllZero",
                "RuleParameters": {"rule_to_invoke": "AllZero", "bogus": "1"},
            },
        ],
    }
    result = convert.convert(doc)
    assert [s.type for s in result.rules] == ["all_zero"]
    assert result.dropped[0] == (
        f"DebugRuleConfigurations[0] (CheckInputImages): not supported: {sagemaker.UNSUPPORTED_RULES['CheckInputImages']}"
    )
    assert result.dropped[1].startswith(
        "DebugRuleConfigurations[1] (AllZero): parameter 'bogus' has no counterpart in all_zero; parameters it takes:"
    )


def test_a_rules_file_in_sagemaker_shape_is_read_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(API_CONFIG))
    assert [s.key for s in config.load_rules_file(path)] == [
        "vanishing_gradient",
        "lossnotdecreasing-eval",
        "stalled_training",
        "overfit",
    ]
    partial = {**API_CONFIG, "DebugRuleConfigurations": [{"RuleConfigurationName": "CheckInputImages"}]}
    path.write_text(json.dumps(partial))
    with pytest.raises(
        ConfigError, match=r"DebugRuleConfigurations\[0\] \(CheckInputImages\): not supported"
    ):
        config.load_rules_file(path)


def test_rules_convert_prints_a_rules_file_that_loads(tmp_path: Path) -> None:
    source = tmp_path / "sdk.yaml"
    source.write_text(SDK_CONFIG)
    out = trainguard_cli("rules", "convert", str(source), "-o", str(tmp_path / "rules.yaml"))
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "rules.yaml").read_text()
    assert "TRAINGUARD_SAVE_INTERVAL=20" in text
    loaded = {s.key: s for s in config.load_rules_file(tmp_path / "rules.yaml")}
    # a rules file extends the default set: the converted rules take their defaults' places
    assert list(loaded) == [s.key for s in config.default_specs()]
    assert loaded["exploding_tensor"].action.value == "stop" and loaded["dead_relu"].params
    assert out.stderr.splitlines() == [
        "trainguard: note: rules[0] (exploding_tensor): the StopTraining action became action: stop"
    ]


def test_rules_convert_exits_1_when_something_was_left_out(tmp_path: Path) -> None:
    source = tmp_path / "job.json"
    rules = [*API_CONFIG["DebugRuleConfigurations"], {"RuleConfigurationName": "CheckInputImages"}]
    source.write_text(json.dumps({**API_CONFIG, "DebugRuleConfigurations": rules}))
    out = trainguard_cli("rules", "convert", str(source))
    assert out.returncode == 1
    assert (
        "trainguard: not converted: DebugRuleConfigurations[4] (CheckInputImages): not supported"
        in out.stderr
    )
    assert len(yaml.safe_load(out.stdout)["rules"]) == 4


def test_the_sdks_default_profiler_report_is_skipped_with_a_note_not_a_failure(tmp_path: Path) -> None:
    """What `describe-training-job` prints for a job made with the SDK's defaults: ProfilerReport included."""
    source = tmp_path / "job.json"
    profiler = [
        {
            "RuleConfigurationName": "ProfilerReport-1700000000",
            "RuleParameters": {"rule_to_invoke": "ProfilerReport"},
        }
    ]
    source.write_text(json.dumps({**API_CONFIG, "ProfilerRuleConfigurations": profiler}))
    out = trainguard_cli("rules", "convert", str(source))
    assert out.returncode == 0, out.stderr
    assert (
        "trainguard: note: ProfilerRuleConfigurations[0] (ProfilerReport): skipped: it is a profiler rule"
        in out.stderr
    )
    assert "not converted" not in out.stderr
    assert len(yaml.safe_load(out.stdout)["rules"]) == 4


def test_a_profiler_rule_in_the_sdk_shape_is_skipped_and_the_file_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "sdk.yaml"
    path.write_text(SDK_CONFIG + "  - base_config: ProfilerReport\n")
    assert [s.key for s in config.load_rules_file(path)] == ["exploding_tensor", "dead_relu"]


def test_differing_save_intervals_are_named_with_the_one_chosen(tmp_path: Path) -> None:
    source = tmp_path / "sdk.yaml"
    source.write_text(
        SDK_CONFIG
        + """debugger_hook_config:
  collection_configs:
    - {name: losses, parameters: {save_interval: "50"}}
    - {name: gradients, parameters: {train.save_interval: "500"}}
"""
    )
    out = trainguard_cli("rules", "convert", str(source))
    assert out.returncode == 0, out.stderr
    note = (
        "the configuration saves at different intervals (losses every 50, gradients (train) every 500, relu_output "
        "every 20 steps); TrainGuard saves every collection at one interval, so the smallest, 20, is used"
    )
    assert f"trainguard: note: {note}" in out.stderr
    assert f"# Note: {note}" in out.stdout and "TRAINGUARD_SAVE_INTERVAL=20" in out.stdout


def test_a_python_file_is_answered_with_how_to_get_the_configuration_as_data(tmp_path: Path) -> None:
    source = tmp_path / "estimator.py"
    source.write_text(
        "from sagemaker.debugger import Rule, rule_configs\nrules = [Rule.sagemaker(rule_configs.vanishing_gradient())]\n"
    )
    out = trainguard_cli("rules", "convert", str(source))
    assert out.returncode == 2
    assert out.stderr.startswith(f"trainguard: error: {source} is Python")
    assert "describe-training-job" in out.stderr and "written as YAML" in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_rules_list_shows_every_builtin_with_its_defaults() -> None:
    out = trainguard_cli("rules", "list", "--json")
    assert out.returncode == 0, out.stderr
    listed = {r["name"]: r for r in json.loads(out.stdout)}
    assert set(listed) == set(registry.BUILTINS)
    assert (
        listed["exploding_tensor"]["default_action"] == "stop"
        and listed["all_zero"]["default_action"] is None
    )
    assert listed["stalled_training"]["sagemaker_name"] == "StalledTrainingRule"
    for name, cls in registry.BUILTINS.items():
        for p in listed[name]["params"]:
            field = cls.Params.model_fields[p["name"]]
            expected = None if field.is_required() else field.get_default(call_default_factory=True)
            assert (p["default"], p["required"]) == (expected, field.is_required()), (name, p)
    text = trainguard_cli("rules", "list")
    assert all(f"\n{name} " in "\n" + text.stdout for name in registry.BUILTINS)
    one = trainguard_cli("rules", "list", "VanishingGradient")
    assert "threshold = 1e-7: SageMaker's threshold" in one.stdout


def test_rules_list_of_a_rule_we_do_not_have_says_why() -> None:
    out = trainguard_cli("rules", "list", "LowGPUUtilization")
    assert out.returncode == 2
    assert out.stderr.startswith(
        "trainguard: error: LowGPUUtilization is a SageMaker Debugger rule that TrainGuard"
    )
