"""`batchnorm_small_batch` reads the batch from recorded element counts and the catalogue's shapes, and names a
trainable BatchNorm layer trained on fewer than 8 samples per batch."""

from __future__ import annotations

import numpy as np

from tests.rules.streams import run
from trainguard.rules.batchnorm_small_batch import BatchnormSmallBatch
from trainguard.rules.step_view import COL, COLUMNS, StepView, TensorMeta

POINTS, CHANNELS = 32, 16


def point_views(
    batch: int = 2,
    *,
    steps: int = 100,
    every: int = 10,
    module_type: str = "BatchNorm1d",
    trainable: bool = True,
    eval_at: tuple[int, ...] = (),
) -> list[StepView]:
    """Saved views of a per-point network (Conv1d, BatchNorm1d, ReLU) fed `batch` clouds of 32 points per step; at
    the steps `eval_at` the activation's statistics come from an evaluation pass over 500 clouds."""
    meta = (
        TensorMeta("point.0.weight", "weights", module="point.0", module_type="Conv1d", trainable=True, order=0,
                   shape=(CHANNELS, 3, 1)),
        TensorMeta("point.1.weight", "weights", module="point.1", module_type=module_type, trainable=trainable,
                   order=1, shape=(CHANNELS,)),
        TensorMeta("input/pts", "inputs", shape=(batch, POINTS, 3)),
        TensorMeta("act/point.2", "activations", module="point.2", activation="relu", order=2,
                   shape=(batch, CHANNELS, POINTS)),
    )  # fmt: skip
    views = []
    for t in range(0, steps, every):
        n = 500 if t in eval_at else batch
        stats = np.zeros((len(meta), len(COLUMNS)))
        stats[:, COL["count"]] = [CHANNELS * 3, CHANNELS, batch * POINTS * 3, n * CHANNELS * POINTS]
        views.append(StepView(step=t, names=tuple(m.name for m in meta), meta=meta, stats=stats,
                              scalars={"loss": 1.4}))  # fmt: skip
    return views


def test_batchnorm_small_batch_names_the_layer_after_three_saved_steps_in_a_row() -> None:
    found = run(BatchnormSmallBatch(), point_views(2))
    assert len(found) == 1 and found[0].step == 20  # 0, 10, 20; reported once
    f = found[0]
    assert f.tensor == "point.1" and f.value == 2.0 and f.threshold == 8.0
    assert "batches of 2 samples, below 8" in f.message and "GroupNorm" in f.hint


def test_batchnorm_small_batch_leaves_batches_of_eight_or_more_alone() -> None:
    assert run(BatchnormSmallBatch(), point_views(8)) == []
    assert run(BatchnormSmallBatch({"min_batch": 16}), point_views(8))


def test_batchnorm_small_batch_takes_the_largest_batch_any_tensor_shows() -> None:
    # an evaluation pass over 500 clouds recorded at step 20 breaks the run of small batches: 30, 40, 50 report
    found = run(BatchnormSmallBatch(), point_views(2, eval_at=(20,)))
    assert found and found[0].step == 50


def test_batchnorm_small_batch_needs_a_trainable_batchnorm_layer() -> None:
    assert run(BatchnormSmallBatch(), point_views(2, module_type="GroupNorm")) == []
    assert run(BatchnormSmallBatch(), point_views(2, module_type="SyncBatchNorm")) == []
    assert run(BatchnormSmallBatch(), point_views(2, trainable=False)) == []
    rule = BatchnormSmallBatch()
    run(rule, point_views(2, module_type="LayerNorm"))
    assert not rule.checked
