"""Capture settings: one pydantic model read from arguments or `TRAINGUARD_*` variables.

Shared by the PyTorch hook and the numpy `Recorder`. `from_env()` returns None when
`TRAINGUARD_OUT` is unset (the hook is then inert) or `TRAINGUARD_DISABLE` is true (the
kill switch). This module is the one home of the variables' names: the operator (`operator/build.py`)
and `trainguard run` render them with `to_env`, which `from_env` reads back. The store backend's
settings (`store`) are read from the variables its declaration names (s3: AWS_ENDPOINT_URL, AWS_REGION).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trainguard.api import debugjob
from trainguard.api.enums import Collection
from trainguard.errors import ConfigError, TrainGuardError
from trainguard.store import backends, writer

DEFAULT_COLLECTIONS = (
    "weights",
    "biases",
    "gradients",
    "activations",
    "inputs",
    "losses",
    "metrics",
    "optimizer",
    "predictions",
)

ENV_PREFIX = "TRAINGUARD_"
"""Every capture setting has a variable: `TRAINGUARD_<FIELD>` (`env_name`). This module is the home of
these names: the operator (`operator/build.py`) and local mode render them with `to_env`, the hook reads
them back with `CaptureConfig.from_env`."""
DISABLE_ENV = ENV_PREFIX + "DISABLE"
"""The kill switch: `1`, `true` or `yes` makes the hook inert even with TRAINGUARD_OUT set."""
_PLATFORM_ENV = {"rank": "RANK", "world_size": "WORLD_SIZE"}
"""Settings also read from the launcher's variables (torchrun, the operator) when TRAINGUARD_<FIELD> is unset."""
_NOT_FROM_ENV = frozenset({"store"})
"""Settings with no TRAINGUARD_ variable: the store backend's are read from its own variables."""


class CaptureConfig(BaseModel):
    """What the hook captures, how often, and where it writes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    out: str = Field(description="Run root URI: file:///path or s3://bucket/prefix (TRAINGUARD_OUT).")
    run_id: str = Field(
        default_factory=lambda: uuid.uuid4().hex[:12], description="Run id recorded in run.json."
    )
    save_interval: debugjob.SaveInterval = Field(
        default=debugjob.DEFAULT_SAVE_INTERVAL,
        description="Save statistics every N steps. 10 keeps overhead near 1% and latency low.",
    )
    collections: tuple[str, ...] = Field(default=DEFAULT_COLLECTIONS, description="Collections to capture.")
    tier1_interval: int = Field(
        default=10,
        ge=1,
        description="Per-unit activity and histograms on every Nth saved step (Tier 1); they cost more than Tier 0.",
    )
    flush_every_steps: int = Field(
        default=500,
        ge=1,
        description="Saved steps per segment at most (bounds a segment's size when steps are fast; "
        "flush_interval_seconds bounds latency).",
    )
    flush_interval_seconds: float = Field(
        default=1.0, gt=0, description="Flush a segment at least this often: bounds detection latency."
    )
    max_block_seconds: float = Field(
        default=0.05,
        ge=0,
        description="PyTorch hook: the longest a saved step may wait at once for a busy statistics worker before "
        "it is skipped (uploads never hold a step up: see max_pending_bytes).",
    )
    max_pending_bytes: int = Field(
        default=writer.WriterConfig.max_pending_bytes,
        ge=1,
        description="Memory for segments waiting for upload. While the store fails they wait here and are "
        "retried; when it is full, new segments are dropped and their steps counted (END.json lost_steps). "
        "64 MiB hold some twenty minutes of a model of 1,000 tensors saving one step a second.",
    )
    close_timeout_seconds: float = Field(
        default=writer.WriterConfig.close_timeout_seconds,
        ge=0,
        description="The longest close() (and so the script's exit) waits for pending uploads and END.json; "
        "what is still pending then is counted lost.",
    )
    track_updates: bool = Field(
        default=True,
        description="PyTorch hook: keep two device copies of each captured trainable parameter (previous saved "
        "step, first step) for update_l2 and distance_l2; costs 2x the captured parameters' memory.",
    )
    history_max_fraction: float = Field(
        default=0.10,
        ge=0,
        le=1,
        description="PyTorch hook, with track_updates: update_l2 and distance_l2 are exact (two full copies of the "
        "tracked parameters) while those copies take at most this share of their device's memory (a GPU's total "
        "memory; on CPU the host's physical memory; exact where it is not known). Above it they are estimated "
        "from a fixed sample of each tensor (1/64 of its elements, at least 4,096) and the catalogue marks them "
        "`history: sampled`. 0 samples on every device.",
    )
    native_stats: bool = Field(
        default=True,
        description="PyTorch hook, tensors on CPU: read float32 tensors in place with the one-pass C kernel "
        "on the training thread (when it was built: trainguard.capture.torch.c_kernel.AVAILABLE); the statistics "
        "worker is then not used unless the kernel reads none of the parameters. false: the packed torch path.",
    )
    stats_worker: bool = Field(
        default=True,
        description="PyTorch hook, tensors on CPU without the C kernel (native_stats false or not built): reduce "
        "saved steps on a background thread (the CPU's stream); the training thread only snapshots them. "
        "false: reduce on the training thread.",
    )
    stats_in_flight: int = Field(
        default=2,
        ge=1,
        description="PyTorch hook, tensors on CPU: saved steps snapshotted and not yet reduced, at most (one "
        "buffer each); a saved step that finds them all busy waits within an allowance (2% of the training "
        "time, max_block_seconds at once), then is skipped and counted in END.json.",
    )
    stop_file: str | None = Field(
        default=None,
        description="Path whose existence means the evaluator asked for a stop (TRAINGUARD_STOP_FILE).",
    )
    rank: int = Field(default=0, ge=0, description="This process's rank (RANK).")
    world_size: int = Field(default=1, ge=1, description="Number of ranks (WORLD_SIZE).")
    store: dict[str, str] = Field(
        default_factory=dict,
        description="Settings of the store backend of `out`, by the names it declares (s3: endpoint, region); "
        "read from the backend's own variables (AWS_ENDPOINT_URL, AWS_REGION) or TRAINGUARD_S3_ENDPOINT.",
    )

    @model_validator(mode="before")
    @classmethod
    def _older_names(cls, doc: Any) -> Any:
        """Take a store setting given under an older name its backend declares (`s3_endpoint=`) into `store`."""
        return backends.fold_older_names(doc, uri_key="out", into="store")

    @field_validator("collections", mode="before")
    @classmethod
    def _split(cls, v: object) -> object:
        if isinstance(v, str):
            v = [c.strip() for c in v.split(",") if c.strip()]
        known = {c.value for c in Collection}
        for c in v:  # type: ignore[attr-defined]
            if c not in known:
                raise ValueError(f"unknown collection {c!r}; known: {', '.join(sorted(known))}")
        return tuple(v)  # type: ignore[arg-type]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> CaptureConfig | None:
        """Build the config from `TRAINGUARD_*`, `RANK`, `WORLD_SIZE` and the store backend's own variables;
        None when capture is off."""
        env = os.environ if environ is None else environ
        if env.get(DISABLE_ENV, "").lower() in ("1", "true", "yes"):
            return None
        if not env.get(env_name("out")) and "out" not in overrides:
            return None
        values: dict[str, object] = {}
        for name in cls.model_fields:
            if name in _NOT_FROM_ENV:
                continue
            raw = env.get(env_name(name))
            if raw is not None and raw != "":
                values[name] = raw
        for name, variable in _PLATFORM_ENV.items():
            if variable in env and name not in values:
                values[name] = env[variable]
        out = overrides.get("out", values.get("out"))
        if isinstance(out, str):
            try:
                values["store"] = backends.for_uri(out).read_env(env, prefix=ENV_PREFIX)
            except TrainGuardError:
                pass  # the writer reports an unknown scheme when it opens the store
        values.update(overrides)
        try:
            return cls.model_validate(values)
        except ValidationError as err:
            first = err.errors()[0]
            field = str(first["loc"][0]) if first["loc"] else "?"
            raise ConfigError(f"{ENV_PREFIX}{field.upper()}={values.get(field)!r}: {first['msg']}") from err

    def wants(self, collection: str) -> bool:
        return collection in self.collections

    def open_writer(self, *, framework: str) -> writer.RankWriter:
        """Return the rank writer these settings describe (store, rank, flush and blocking limits)."""
        options = backends.for_uri(self.out).options(self.store)
        return writer.RankWriter(
            backends.open_store(self.out, **options),
            rank=self.rank,
            world_size=self.world_size,
            run_id=self.run_id,
            framework=framework,
            hook_config=self.model_dump(mode="json"),
            config=writer.WriterConfig(
                flush_every_steps=self.flush_every_steps,
                flush_interval_seconds=self.flush_interval_seconds,
                max_pending_bytes=self.max_pending_bytes,
                close_timeout_seconds=self.close_timeout_seconds,
                end_timeout_seconds=min(
                    writer.WriterConfig.end_timeout_seconds, self.close_timeout_seconds / 2
                ),
            ),
        )


def env_name(field: str) -> str:
    """Return the variable of a capture setting: `TRAINGUARD_<FIELD>`; raise `KeyError` for an unknown field."""
    if field not in CaptureConfig.model_fields or field in _NOT_FROM_ENV:
        raise KeyError(
            f"{field!r} is not a capture setting with a variable; known: {', '.join(CaptureConfig.model_fields)}"
        )
    return ENV_PREFIX + field.upper()


def env_value(value: object) -> str:
    """Return a setting's value as `from_env` reads it back: collections joined by commas, booleans lowercase."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(getattr(v, "value", v)) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(getattr(value, "value", value))


def to_env(**settings: object) -> dict[str, str]:
    """Return the `TRAINGUARD_*` variables that make `CaptureConfig.from_env` read `settings` back (None: unset).

    `to_env(out="s3://b/run", run_id="r1", save_interval=5)` gives `{"TRAINGUARD_OUT": "s3://b/run",
    "TRAINGUARD_RUN_ID": "r1", "TRAINGUARD_SAVE_INTERVAL": "5"}`."""
    return {env_name(name): env_value(value) for name, value in settings.items() if value is not None}
