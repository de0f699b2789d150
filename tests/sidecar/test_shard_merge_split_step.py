"""A step whose scalars and statistics came in two segments still has its sharded tensors merged.

The view builder gives such a step two views: its scalars alone (the segment flushed before the
statistics came, e.g. because the next step's tensor set differs), then its statistics. The scalar-only
view of the owner must not count as the step released, or the parts of its statistics view would be
refused and the tensor left unjudged as if a rank had written later steps without it.
"""

from __future__ import annotations

import numpy as np

from trainguard.rules.step_view import COLUMNS, StepView, TensorMeta
from trainguard.sidecar.shard_merge import ShardMerger
from trainguard.store import run_format

SHAPE = [4, 2]


def _catalogue(rank: int) -> dict[int, run_format.TensorInfo]:
    shard = run_format.ShardInfo(global_shape=SHAPE, local_shape=[2, 2], index=rank, of=2)
    return {0: run_format.TensorInfo(id=0, name="w", collection="weights", shape=SHAPE, shard=shard)}


def _view(rank: int, step: int, values: list[float] | None) -> StepView:
    """`rank`'s view of `step`: its part of `w` holding `values`, or scalars only (None)."""
    if values is None:
        return StepView(step=step, rank=rank, scalars={"loss": 1.0})
    a = np.asarray(values, np.float64)
    row = np.zeros((1, len(COLUMNS)))
    row[0, :10] = [
        a.size,
        0,
        0,
        np.count_nonzero(a == 0),
        a.min(),
        a.max(),
        a.mean(),
        a.std(),
        np.abs(a).mean(),
    ] + [float(np.sqrt(np.sum(a * a)))]
    meta = (TensorMeta(name="w", collection="weights", shape=tuple(SHAPE)),)
    return StepView(step=step, rank=rank, names=("w",), meta=meta, stats=row)


def test_a_scalar_only_view_of_a_step_does_not_release_its_parts() -> None:
    merger = ShardMerger()
    merger.replan({0: _catalogue(0), 1: _catalogue(1)}, [0, 1])
    judged: list[StepView] = []
    parts = {0: [1.0, 2.0, 3.0, 4.0], 1: [5.0, 6.0, 7.0, 8.0]}
    # step 0 whole; step 1 split: its scalars in the first segment of each rank, its statistics in the second
    for rank in (0, 1):
        judged += merger.take(rank, [_view(rank, 0, parts[rank]), _view(rank, 1, None)])
    judged += merger.release(ended=())[0]
    for rank in (0, 1):
        judged += merger.take(rank, [_view(rank, 1, [2 * v for v in parts[rank]])])
    out, gaps = merger.release(ended=())
    judged += out
    assert gaps == []
    merged = {v.step: v.stats[0] for v in judged if v.rank == 0 and v.names}
    assert sorted(merged) == [0, 1] and not any(v.names for v in judged if v.rank == 1)
    whole = np.arange(1.0, 9.0)
    for step, factor in ((0, 1.0), (1, 2.0)):
        assert merged[step][run_format.COLUMN["count"]] == 8
        np.testing.assert_allclose(merged[step][run_format.COLUMN["mean"]], (factor * whole).mean())
        np.testing.assert_allclose(merged[step][run_format.COLUMN["std"]], (factor * whole).std())
