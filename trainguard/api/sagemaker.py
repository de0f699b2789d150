"""SageMaker Debugger's names, and what each one is in TrainGuard.

Data only, shared by three readers: the smdebug reader (`store/foreign/smdebug.py`: smdebug collection ->
ours), the rules registry (a SageMaker rule TrainGuard does not have says why, not "did you mean")
and the rule-entry schema and `trainguard rules convert` (a SageMaker key or parameter points to
ours). Built-in rules that TrainGuard has keep their names: `VanishingGradient` is `vanishing_gradient`.
"""

from __future__ import annotations

import re

from trainguard.api.enums import Collection

COLLECTIONS: tuple[tuple[str, Collection], ...] = (
    ("gradients", Collection.GRADIENTS),
    ("weights", Collection.WEIGHTS),
    ("biases", Collection.BIASES),
    ("losses", Collection.LOSSES),
    ("sm_metrics", Collection.METRICS),
    ("metrics", Collection.METRICS),
    ("scalars", Collection.METRICS),
    ("optimizer_variables", Collection.OPTIMIZER),
    ("inputs", Collection.INPUTS),
    ("labels", Collection.LABELS),
    ("predictions", Collection.PREDICTIONS),
    ("outputs", Collection.ACTIVATIONS),
    ("layers", Collection.ACTIVATIONS),
    ("feature_importance", Collection.METRICS),
    ("average_shap", Collection.METRICS),
    ("hyperparameters", Collection.METRICS),
    ("tensorflow_summaries", Collection.METRICS),
)
"""smdebug collection -> ours, most specific first: a tensor in several collections takes the first.
smdebug's `all` and `default` mean every collection; user-made ones such as `relu_activations`
(a name holding "relu" or "activation") are activations."""

RULES: dict[str, str] = {
    "ExplodingTensor": "exploding_tensor",
    "VanishingGradient": "vanishing_gradient",
    "DeadRelu": "dead_relu",
    "SaturatedActivation": "saturated_activation",
    "PoorWeightInitialization": "poor_weight_initialization",
    "AllZero": "all_zero",
    "UnchangedTensor": "unchanged_tensor",
    "WeightUpdateRatio": "weight_update_ratio",
    "TensorVariance": "tensor_variance",
    "LossNotDecreasing": "loss_not_decreasing",
    "Overfit": "overfit",
    "Overtraining": "overtraining",
    "ClassImbalance": "class_imbalance",
    "StalledTrainingRule": "stalled_training",
}
"""SageMaker Debugger's built-in rules that TrainGuard has: SageMaker's name -> ours."""

_NEEDS_FULL_TENSORS = (
    "it reads raw {what}, and the hook ships statistics of each tensor, never the tensor itself"
)
_XGBOOST = "it is for XGBoost models; TrainGuard captures PyTorch and numpy training"
_PROFILER = (
    "it is a profiler rule: TrainGuard watches what training computes, not how busy the machine is; "
    "alert on your cluster's GPU and node metrics in Prometheus instead"
)
PROFILER_RULES: tuple[str, ...] = (
    "ProfilerReport",
    "BatchSize",
    "CPUBottleneck",
    "GPUMemoryIncrease",
    "IOBottleneck",
    "LoadBalancing",
    "LowGPUUtilization",
    "MaxInitializationTime",
    "OverallSystemUsage",
    "StepOutlier",
)
"""SageMaker's profiler rules: they watch the machine, not the training. The SDK adds `ProfilerReport` to
every training job by default, so a converted configuration skips them with a note, not an error."""
UNSUPPORTED_RULES: dict[str, str] = {
    "SimilarAcrossRuns": "it compares two training jobs, and TrainGuard evaluates one run at a time",
    "CheckInputImages": _NEEDS_FULL_TENSORS.format(what="input images")
    + "; record the batch's mean and std as scalars and watch them with `threshold`",
    "NLPSequenceRatio": _NEEDS_FULL_TENSORS.format(what="token ids of the inputs")
    + "; record the share of padding tokens as a scalar and watch it with `threshold`",
    "Confusion": "it needs every prediction with its label; TrainGuard counts predictions into buckets "
    "(`record_predictions`) and watches their AUC with `auc_drop`",
    "FeatureImportanceOverweight": _XGBOOST,
    "TreeDepth": _XGBOOST,
    "CreateXgboostReport": _XGBOOST,
    **{name: _PROFILER for name in PROFILER_RULES},
}
"""SageMaker Debugger's built-in rules that TrainGuard does not have, each with the reason and,
where one exists, what to do instead."""

PARAMETER_HINTS: dict[str, str] = {
    "stop_training_on_fire": "TrainGuard stops a run with the rule entry's `action: stop`",
    "training_job_name_prefix": "not needed: a DebugJob stops its own Job; remove it",
    "rule_to_invoke": "the rule is named by the entry's `type`",
    "action_json": "use the rule entry's `action: stop | notify | none` (webhooks are set in a DebugJob's "
    "spec.actions.notify)",
}
"""Parameters of SageMaker's rule configurations that are not rule parameters in TrainGuard."""

_NOT_NEEDED = "not needed: the evaluator runs beside the training process; remove it"
ENTRY_KEY_HINTS: dict[str, str] = {
    "rule_parameters": "write the rule's parameters under `params`",
    "RuleParameters": "write the rule's parameters under `params`",
    "base_config": "name the rule with `type`, e.g. `type: vanishing_gradient`",
    "RuleConfigurationName": "name the rule with `type` and the entry with `name`",
    "collections_to_save": "what the hook captures is a capture setting (TRAINGUARD_COLLECTIONS, or a "
    "DebugJob's spec.capture.collections); the collections a rule watches go under `collections`",
    "actions": "use `action: stop | notify | none`",
    "RuleEvaluatorImage": _NOT_NEEDED,
    "image_uri": _NOT_NEEDED,
    "InstanceType": _NOT_NEEDED,
    "instance_type": _NOT_NEEDED,
    "VolumeSizeInGB": _NOT_NEEDED,
    "volume_size_in_gb": _NOT_NEEDED,
    "LocalPath": _NOT_NEEDED,
    "container_local_output_path": _NOT_NEEDED,
    "S3OutputPath": _NOT_NEEDED,
    "s3_output_path": _NOT_NEEDED,
    "other_trials_s3_input_paths": _NOT_NEEDED,
}
"""Keys of a SageMaker rule configuration, each with the TrainGuard field it corresponds to."""

CONVERT_HINT = "`trainguard rules convert FILE` converts a whole SageMaker Debugger configuration"


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_UNSUPPORTED_BY_KEY = {_key(name): name for name in UNSUPPORTED_RULES}


def unsupported_rule(name: str) -> tuple[str, str] | None:
    """Return (SageMaker's name, why TrainGuard has no such rule) for one of SageMaker's rules TrainGuard
    lacks, written in any case (`LowGPUUtilization`, `low_gpu_utilization`), else None."""
    found = _UNSUPPORTED_BY_KEY.get(_key(name))
    return (found, UNSUPPORTED_RULES[found]) if found else None


def is_profiler_rule(name: str) -> bool:
    """Whether `name` (any case, `ProfilerReport` or `profiler_report`) is one of SageMaker's profiler rules."""
    return _key(name) in {_key(n) for n in PROFILER_RULES}


def collection(name: str) -> Collection | None:
    """Our collection for an smdebug collection name; None for `all`/`default` (every collection) or an
    unknown name."""
    for smd_name, ours in COLLECTIONS:
        if name == smd_name:
            return ours
    if "activation" in name or "relu" in name:
        return Collection.ACTIVATIONS
    return None
