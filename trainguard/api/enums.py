"""Closed sets used across TrainGuard, written once each.

Values are the strings that appear in files, the CRD and metrics labels; compare against
these members, never against literals.
"""

from __future__ import annotations

import enum


class Collection(str, enum.Enum):
    """What a captured tensor is; also the bounded label set of per-collection metrics."""

    WEIGHTS = "weights"
    BIASES = "biases"
    GRADIENTS = "gradients"
    ACTIVATIONS = "activations"
    LOSSES = "losses"
    METRICS = "metrics"
    INPUTS = "inputs"
    LABELS = "labels"
    OPTIMIZER = "optimizer"
    PREDICTIONS = "predictions"


class Mode(str, enum.Enum):
    """Which phase of training a scalar belongs to."""

    TRAIN = "train"
    EVAL = "eval"


class Severity(str, enum.Enum):
    """How bad a finding is. Only `critical` findings may stop a job by default."""

    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "critical": 2}[self.value]


class Action(str, enum.Enum):
    """What to do when a rule triggers."""

    STOP = "stop"
    NOTIFY = "notify"
    NONE = "none"


class RuleCategory(str, enum.Enum):
    """What a rule looks at; groups the rules in `trainguard rules list` and the docs."""

    NON_FINITE = "non-finite values"
    GRADIENTS = "gradients"
    ACTIVATIONS = "activations"
    WEIGHTS = "weights and updates"
    LOSS = "loss"
    GENERALISATION = "generalisation"
    PREDICTIONS = "data and predictions"
    PROGRESS = "progress"
    WATCHPOINT = "watchpoint"


class RuleState(str, enum.Enum):
    """Per-rule status as SageMaker's DebugRuleEvaluationStatuses named them."""

    IN_PROGRESS = "InProgress"
    NO_ISSUES_FOUND = "NoIssuesFound"
    ISSUES_FOUND = "IssuesFound"
    ERROR = "Error"


class Phase(str, enum.Enum):
    """Lifecycle phase of a DebugJob (`status.phase`)."""

    PENDING = "Pending"
    RUNNING = "Running"
    STOPPED = "Stopped"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class ConditionType(str, enum.Enum):
    """Condition types in `status.conditions`."""

    RUNNING = "Running"
    RULE_TRIGGERED = "RuleTriggered"
    STOPPED = "Stopped"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    INVALID = "Invalid"


class RunEnd(str, enum.Enum):
    """How a supervised run ended, as `trainguard run` tells it (its last lines, `--json` `end.state`)."""

    OK = "ok"
    """The command exited 0 and the rules checked its steps."""
    STOPPED = "stopped"
    """A stop rule ended it: the command left after `should_stop()` (cooperative), or by SIGTERM/SIGKILL."""
    CRASHED = "crashed"
    """The command exited with a non-zero status (its uncaught exception, where the hook saw one)."""
    KILLED = "killed"
    """A signal that no stop rule sent ended the command (SIGKILL from the OOM killer, Ctrl-C, ...)."""
    BLIND = "blind"
    """The command exited 0 but what it did was not checked: no TrainGuard data, no saved step, or steps the
    hook did not count (`unchecked_steps`)."""
