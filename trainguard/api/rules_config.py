"""The rules configuration schema, shared by the rules file and a DebugJob's `spec.rules`.

A rules file (`RulesFile`) extends the default set unless it says `defaults: false`; a DebugJob's
`spec.rules` and the sidecar's config list the whole set (empty: the default set).

Validation of each rule's own `params` needs the rule classes and so happens in the evaluator
(`trainguard.sidecar.config`); here only the shape is checked, so the operator can validate a
DebugJob without importing user code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from trainguard.api import sagemaker
from trainguard.api.enums import Action

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9_]*[a-z0-9])?$")


class RuleSpec(BaseModel):
    """One configured rule."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(
        description="A built-in rule name (e.g. exploding_tensor) or python:module:Class for a custom rule."
    )
    name: str | None = Field(default=None, description="Unique name of this entry; defaults to `type`.")
    action: Action = Field(
        default=Action.NOTIFY,
        description="stop: suspend the job; notify: event and webhooks; none: record only.",
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="Rule parameters (SageMaker Debugger names where one exists)."
    )
    collections: list[str] | None = Field(
        default=None, description="Collections the rule watches (default: the rule's own)."
    )
    tensors: list[str] | None = Field(
        default=None, description="Regular expressions of tensor names the rule watches."
    )

    @model_validator(mode="before")
    @classmethod
    def _sagemaker_keys(cls, data: Any) -> Any:
        # A ported SageMaker Debugger entry: point at our field instead of "Extra inputs are not permitted".
        if isinstance(data, dict):
            for key, hint in sagemaker.ENTRY_KEY_HINTS.items():
                if key in data:
                    raise ValueError(
                        f"`{key}` is SageMaker Debugger's name: {hint} ({sagemaker.CONVERT_HINT})"
                    )
        return data

    @field_validator("type")
    @classmethod
    def _type(cls, v: str) -> str:
        if not v or (v.startswith("python:") and v.count(":") != 2):
            raise ValueError(f"rule type {v!r} must be a built-in name or python:module:Class")
        return v

    @property
    def key(self) -> str:
        return self.name or self.type.rsplit(":", 1)[-1]


class RulesConfig(BaseModel):
    """The rules file: `rules: [...]`."""

    model_config = ConfigDict(extra="forbid")

    rules: list[RuleSpec] = Field(default_factory=list, description="Rules to evaluate, in order.")

    @model_validator(mode="after")
    def _unique(self) -> RulesConfig:
        duplicate = first_duplicate(self.rules)
        for i, r in enumerate(self.rules):
            if r.name is not None and not _NAME_RE.match(r.name):
                raise ValueError(f"rules[{i}].name {r.name!r} must be lowercase letters, digits, '-' or '_'")
            if duplicate is not None and i == duplicate[0]:
                raise ValueError(
                    f"rules[{i}]: duplicate rule name {r.key!r}; give each entry a unique `name`"
                )
        return self


class RulesFile(RulesConfig):
    """A rules file (`trainguard run --rules`, `trainguard evaluate --rules`): `rules: [...]` that extend the
    default set, or replace it with `defaults: false`."""

    defaults: bool = Field(
        default=True,
        description="Whether the entries extend the default set (an entry named like a default rule replaces "
        "that rule, e.g. to make it stop). false: run exactly the entries, which drops the default NaN stop "
        "unless the file has it.",
    )


def first_duplicate(specs: Sequence[RuleSpec]) -> tuple[int, int] | None:
    """The first entry whose name (`key`) an earlier entry has, as (its index, the earlier one's); None if none.

    The one check of unique names: for a rules file or a DebugJob's rules (`RulesConfig`) and for
    rules handed to the evaluator as a list (`sidecar.config.compile_rules`)."""
    seen: dict[str, int] = {}
    for i, r in enumerate(specs):
        if r.key in seen:
            return i, seen[r.key]
        seen[r.key] = i
    return None
