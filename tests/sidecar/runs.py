"""Writes small runs in the real run format, one segment at a time, for the evaluator tests.

`RunBuilder` puts `run.json`, catalogues, segments and `END.json` with the store's own `put`,
synchronously, so a test knows exactly which segments exist when it polls or kills an evaluator.
Tests that need the full capture path use `trainguard.Recorder` instead.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from prometheus_client import CollectorRegistry

from trainguard.commands.sidecar import POD_STARTED_FILE
from trainguard.sidecar import metrics
from trainguard.sidecar.evaluator import Evaluator
from trainguard.store import run_format
from trainguard.store.backends import Store


def registered(ev: Evaluator, registry: CollectorRegistry) -> Evaluator:
    """Return `ev` with a metrics collector over it registered on `registry`, as the commands register one."""
    registry.register(metrics.EvaluatorCollector(ev))
    return ev


TENSORS = (
    run_format.TensorInfo(
        id=0, name="fc1.weight", collection="weights", shape=[8, 4], trainable=True, module="fc1", order=0
    ),
    run_format.TensorInfo(
        id=1, name="grad/fc1.weight", collection="gradients", shape=[8, 4], module="fc1", order=0
    ),
    run_format.TensorInfo(
        id=2,
        name="act/relu1",
        collection="activations",
        shape=[16, 8],
        module="relu1",
        activation="relu",
        order=1,
        units=8,
    ),
    run_format.TensorInfo(
        id=3, name="fc2.weight", collection="weights", shape=[2, 8], trainable=True, module="fc2", order=2
    ),
    run_format.TensorInfo(id=4, name="loss", collection="losses", mode="train"),
    run_format.TensorInfo(id=5, name="val_loss", collection="losses", mode="eval"),
)
TENSOR_IDS = np.array([0, 1, 2, 3], np.int32)
LOSS_ID, VAL_LOSS_ID = 4, 5


def healthy_row(step: int) -> np.ndarray:
    """float32[T, K]: plausible statistics of the four tensors at `step` (count 32, small norms)."""
    k = len(run_format.STAT_COLUMNS)
    rows = np.zeros((len(TENSOR_IDS), k), np.float32)
    c = run_format.COLUMN
    for t in range(len(TENSOR_IDS)):
        rows[t, c["count"]] = 32
        rows[t, c["min"]] = -1.0
        rows[t, c["max"]] = 1.0
        rows[t, c["mean"]] = 0.01 * t
        rows[t, c["std"]] = 0.5
        rows[t, c["abs_mean"]] = 0.4
        rows[t, c["l2"]] = 1.0 + 0.1 * t + 0.001 * step
        rows[t, c["update_l2"]] = 0.01 if TENSORS[t].trainable else np.nan
        rows[t, c["distance_l2"]] = 0.001 * step if TENSORS[t].trainable else np.nan
    return rows


class RunBuilder:
    """One rank of a run, written segment by segment."""

    def __init__(
        self, store: Store, *, rank: int = 0, world_size: int = 1, started: float | None = None
    ) -> None:
        self.store = store
        self.rank = rank
        self.seq = 0
        self.attempt = run_format.attempt_id(time.time() if started is None else started)
        """The writer attempt (its start time, `started`): a second builder of a rank is a restarted trainer."""
        if rank == 0:
            info = run_format.RunInfo(
                run_id="test", framework="numpy", world_size=world_size, start_time=time.time()
            )
            store.put(run_format.RUN_INFO_KEY, info.model_dump_json().encode())
        cat = run_format.Catalogue(rank=rank, version=0, tensors=list(TENSORS))
        store.put(run_format.meta_key(rank, 0, attempt=self.attempt), cat.model_dump_json().encode())

    def segment(
        self,
        steps: Iterable[int],
        *,
        nan_at: Iterable[int] = (),
        loss: dict[int, float] | None = None,
        val_loss: dict[int, float] | None = None,
        tier1: Iterable[int] = (),
        wall_time: float | None = None,
    ) -> str:
        """Put one segment holding `steps` (NaN in fc2.weight at `nan_at`); return its key."""
        steps = [int(s) for s in steps]
        stats = np.stack([healthy_row(s) for s in steps])
        for s in nan_at:
            i = steps.index(int(s))
            stats[i, 3, run_format.COLUMN["nan"]] = 3
            stats[i, 3, run_format.COLUMN["l2"]] = np.nan
        # each rank its own batches: its losses differ a little from the other ranks' (`same_data.py`)
        loss = {s: (1.0 + 0.01 * self.rank) / (s + 1) for s in steps} if loss is None else loss
        val_loss = val_loss or {}
        scalar_steps = [*loss, *val_loss]
        scalar_ids = [LOSS_ID] * len(loss) + [VAL_LOSS_ID] * len(val_loss)
        scalar_values = [*loss.values(), *val_loss.values()]
        tier1 = [int(s) for s in tier1]
        units = (
            {("active", 2): np.stack([np.linspace(0, 1, 8, dtype=np.float32) for _ in tier1])}
            if tier1
            else {}
        )
        hists = (
            {0: np.stack([np.arange(run_format.HIST_BINS, dtype=np.float32) for _ in tier1])} if tier1 else {}
        )
        now = time.time() if wall_time is None else wall_time
        seg = run_format.Segment(
            steps=np.asarray(steps, np.int64),
            wall_time=np.full(len(steps), now, np.float64),
            tensor_ids=TENSOR_IDS,
            stats=stats,
            scalar_steps=np.asarray(scalar_steps, np.int64),
            scalar_ids=np.asarray(scalar_ids, np.int32),
            scalar_values=np.asarray(scalar_values, np.float64),
            tier1_steps=np.asarray(tier1, np.int64),
            units=units,
            hists=hists,
        )
        key = run_format.segment_key(self.rank, self.attempt, self.seq, seg.first_step, seg.last_step)
        self.seq += 1
        self.store.put(key, run_format.encode_segment(seg))
        return key

    def end(self, *, last_step: int | None = None) -> None:
        doc = run_format.EndInfo(
            status="ok", last_step=last_step, wall_time=time.time(), attempt=self.attempt
        )
        self.store.put(run_format.end_key(self.rank), json.dumps(doc.model_dump()).encode())


def write_run(
    store: Store, *, segments: int, steps_per_segment: int = 5, nan_at: Iterable[int] = (), end: bool = True
) -> RunBuilder:
    """A single-rank run of `segments * steps_per_segment` consecutive steps from 0."""
    nan = set(nan_at)
    b = RunBuilder(store)
    for i in range(segments):
        steps = range(i * steps_per_segment, (i + 1) * steps_per_segment)
        b.segment(steps, nan_at=[s for s in steps if s in nan])
    if end:
        b.end(last_step=segments * steps_per_segment - 1)
    return b


def start_pod(shared: Path) -> Path:
    """Start a DebugJob pod: its shared volume holds the time its sidecar started (the sidecar starts before
    the trainer and keeps that time there); return the stop file's path. Write the run after this."""
    shared.mkdir(parents=True, exist_ok=True)
    (shared / POD_STARTED_FILE).write_text(repr(time.time()))
    time.sleep(0.002)  # the trainer's writer starts later (attempt ids are milliseconds)
    return shared / "stop"


def custom(cls: str) -> str:
    """The rules-file type of one of the test rules in `rules_for_tests`."""
    return f"python:tests.sidecar.rules_for_tests:{cls}"
