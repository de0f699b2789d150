"""The run format's JSON documents: run.json (`RunInfo`), catalogues (`Catalogue`, `TensorInfo`, `ShardInfo`), END.json (`EndInfo`).

Part of the run format (`run_format` re-exports it). Pydantic models at the storage boundary: frozen, and
fields a reader does not know are ignored (a newer minor version adds optional ones).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from trainguard.store.run_vocabulary import FORMAT_VERSION, STAT_COLUMNS


class _Doc(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ShardInfo(_Doc):
    """Which part of a full tensor one rank's rows describe (format 2.2; a tensor without it is whole)."""

    global_shape: list[int] = Field(description="Shape of the full tensor.")
    local_shape: list[int] = Field(description="Shape of the part this rank holds and reads.")
    offset: list[int] | None = Field(
        default=None, description="Where the part starts in the full tensor, per dim (None: unknown)."
    )
    placements: list[str] = Field(
        default_factory=list,
        description="How the tensor is laid over the device mesh: `Shard(dim=0)`, `Replicate()`.",
    )
    index: int = Field(default=0, description="Which of the `of` disjoint parts this is.")
    of: int = Field(
        default=1,
        description="How many disjoint parts make up the full tensor (0: this rank holds none of it).",
    )
    replica: int = Field(
        default=0,
        description="Copies of one part on several ranks (Replicate placements) are numbered; the merge reads "
        "copy 0 only.",
    )


class TensorInfo(_Doc):
    """One entry of the tensor catalogue: a captured tensor or a recorded scalar."""

    id: int = Field(description="Stable id within the rank; segments refer to tensors by it.")
    name: str = Field(description="`fc1.weight`, `grad/fc1.weight`, `act/relu1`, or a scalar's own name.")
    collection: str = Field(description="One of trainguard.api.enums.Collection.")
    shape: list[int] = Field(default_factory=list, description="Tensor shape; [] for scalars.")
    dtype: str = Field(default="float32", description="Dtype in the framework's spelling, e.g. bfloat16.")
    module: str | None = Field(default=None, description="Module path that owns the tensor, if any.")
    module_type: str | None = Field(
        default=None,
        description="Class of the owning module (`Linear`, `Conv2d`, `Embedding`, `GRU`; the nearest framework class "
        "of a subclass), so rules can tell an embedding table or a recurrent matrix from a dense kernel.",
    )
    trainable: bool = Field(default=False, description="True for parameters that the optimizer updates.")
    activation: str | None = Field(default=None, description="relu, leaky_relu, gelu, sigmoid, tanh, ...")
    order: int | None = Field(default=None, description="Forward execution order of the owning module.")
    mode: str | None = Field(default=None, description="For scalars: train or eval.")
    units: int | None = Field(default=None, description="Number of units (channels) for per-unit vectors.")
    shard: ShardInfo | None = Field(
        default=None,
        description="This rank holds a part of the tensor (a DTensor shard: FSDP2, tensor parallelism): its rows "
        "describe that part, `shape` is the full tensor's; readers merge the ranks' parts (format 2.2).",
    )
    history: Literal["exact", "sampled"] | None = Field(
        default=None,
        description="How update_l2 and distance_l2 of a trainable parameter were computed: `sampled` estimates them "
        "from a fixed sample of `history_sample` elements (the full copies would have exceeded the hook's "
        "history_max_fraction of device memory); absent or `exact`: from full copies.",
    )
    history_sample: int | None = Field(
        default=None, description="With `history: sampled`: the elements in the tensor's fixed sample."
    )
    optimizer: str | None = Field(
        default=None, description="Class of the optimizer that updates this parameter (`AdamW`; format 2.5)."
    )
    param_group: str | None = Field(
        default=None,
        description="The optimizer parameter group holding this parameter, `<k>.<g>`: group g of the k-th optimizer "
        "registered; its hyperparameters are the scalars `group/<k>.<g>/<name>` (`run_vocabulary.GROUP_PREFIX`; "
        "format 2.5).",
    )
    skipped: str | None = Field(
        default=None,
        description="Why the hook does not read this tensor (a kind it cannot read: sparse, quantized, complex, "
        "meta, a tensor subclass, ...); it has no rows (format 2.2).",
    )

    @property
    def is_scalar(self) -> bool:
        return self.mode is not None and self.collection != "predictions"

    @property
    def is_predictions(self) -> bool:
        """A prediction-count stream (`pred/<name>[/class<c>]`), stored as `extra.pred.<id>` records."""
        return self.collection == "predictions" and self.mode is not None


class Catalogue(_Doc):
    """`rank-NNNNN/meta-<attempt>-VVVVVV.json`: every tensor the rank's writer attempt has written so far."""

    format_version: str = FORMAT_VERSION
    rank: int
    version: int
    tensors: list[TensorInfo]

    def by_id(self) -> dict[int, TensorInfo]:
        return {t.id: t for t in self.tensors}


class RunInfo(_Doc):
    """`run.json`: written once by rank 0 when the run starts."""

    format_version: str = FORMAT_VERSION
    run_id: str
    framework: str = Field(description="pytorch, numpy, smdebug, tensorboard, ...")
    world_size: int = 1
    start_time: float = Field(description="Unix time (seconds) when the hook started.")
    columns: list[str] = Field(default_factory=lambda: list(STAT_COLUMNS))
    config: dict[str, object] = Field(default_factory=dict, description="The hook's settings.")


class EndInfo(_Doc):
    """`rank-NNNNN/END.json`: the rank has stopped writing."""

    format_version: str = FORMAT_VERSION
    status: str = Field(
        description="ok (closed cleanly), error (capture failed or steps lost: see `errors`), crashed (the script "
        "failed: its `exception` and `exit_code`, or it died without closing), killed (a signal ended it: `signal`), "
        "stopped (a stop rule ended it: the script left after should_stop() said so, or the supervisor stopped it)."
    )
    last_step: int | None = None
    wall_time: float
    written_by: str = Field(default="hook", description="hook, operator, or supervisor (local mode)")
    attempt: str | None = Field(
        default=None,
        description="The writer attempt this END closes; None (the operator, format 1): whichever is current. "
        "An END of an attempt older than the newest one in the store is stale: that rank was restarted.",
    )
    errors: list[str] = Field(default_factory=list, description="Capture errors, once each, newest last.")
    skipped_steps: int = Field(
        default=0,
        description="Saved steps the hook skipped: its statistics worker still held every snapshot buffer.",
    )
    dropped_scalars: int = Field(
        default=0,
        description="Scalar values the hook dropped: 4,096 device scalars waited for a saved step while every host "
        "buffer was still in flight (format 2.4).",
    )
    lost_steps: int = Field(
        default=0,
        description="Steps whose data never reached the store: dropped while it failed and the writer's pending "
        "segments filled their memory, or still pending when the rank closed (format 2.1).",
    )
    store_outage_seconds: float = Field(
        default=0.0, description="Time during which the store refused or failed uploads, summed (format 2.1)."
    )
    unchecked_steps: int = Field(
        default=0,
        description="Training iterations the hook saw go by without counting a step (an optimizer not registered "
        "with it, or replaced, stepped captured parameters; or train scalars kept coming with no optimizer step): "
        "the rules never saw them.",
    )
    blind_since_step: int | None = Field(
        default=None,
        description="The first step not counted of the blind spell still going on when the rank closed, if one "
        "was: from there on training went on and the hook counted no step.",
    )
    exception: str | None = Field(
        default=None,
        description="The uncaught exception that ended the script (`Type: message`), as the hook saw it at exit.",
    )
    exit_code: int | None = Field(
        default=None,
        description="The training command's exit status, where the supervisor saw it (local mode): 128+N for "
        "signal N.",
    )
    signal: str | None = Field(
        default=None, description="The signal that ended the command (SIGKILL, ...), if one did."
    )

    def is_stale(self, *newer: str | None) -> bool:
        """Whether this END closes a writer attempt older than the newest of `newer` (attempt ids; None: not known).

        The one staleness rule: such an END belongs to an earlier run of a rank that was restarted since.
        An END without an attempt (the operator's, format 1) closes whichever attempt is current: never stale.
        """
        marks = [a for a in newer if a]
        return self.attempt is not None and bool(marks) and self.attempt < max(marks)

    def outcome(self) -> str:
        """One phrase on how the rank ended: `ok`, `error: exited with status 1; ZeroDivisionError: ...`."""
        parts = [self.status]
        how = []
        if self.signal:
            how.append(f"killed by {self.signal}")
        elif self.exit_code is not None and self.exit_code != 0:
            how.append(f"exited with status {self.exit_code}")
        if self.exception:
            how.append(self.exception)
        if not how and self.status != "ok" and self.errors:
            how.append(self.errors[0])
        return parts[0] + (": " + "; ".join(how) if how else "")
