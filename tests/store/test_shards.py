"""Merging a tensor's shards: the merged row of its parts is the full tensor's row (numpy's definition),
a step is shown only once every part of it is there, and a NaN in one part reaches the merged columns."""

from __future__ import annotations

import numpy as np

from trainguard.store import run_format, shards, stats

C = run_format.COLUMN


def _parts(x: np.ndarray, cuts: list[int]) -> list[np.ndarray]:
    return np.split(x.ravel(), cuts)


def test_merged_parts_are_the_full_tensors_row() -> None:
    rng = np.random.default_rng(0)
    full = [rng.normal(3.0, 2.0, size=(10, 7)).astype(np.float32) for _ in range(3)]
    full[1][4, 2] = 0.0
    cuts = [20, 45]  # uneven parts, as FSDP2's last shard often is
    steps = [np.arange(3)] * 3
    rows = [np.stack([stats.tier0(_parts(f, cuts)[i]) for f in full]).astype(np.float64) for i in range(3)]
    got_steps, got = shards.merge(steps, rows, 70)
    assert got_steps.tolist() == [0, 1, 2]
    want = np.stack([stats.tier0(f) for f in full])
    np.testing.assert_array_equal(got[:, :4], want[:, :4])  # count nan inf zero
    np.testing.assert_array_equal(got[:, C["min"] : C["max"] + 1], want[:, C["min"] : C["max"] + 1])
    np.testing.assert_allclose(
        got[:, C["mean"] : C["update_l2"]], want[:, C["mean"] : C["update_l2"]], rtol=1e-5
    )


def test_a_step_is_merged_only_when_every_part_is_there() -> None:
    row = stats.tier0(np.ones(5, np.float32)).astype(np.float64)
    merged_steps, merged = shards.merge(
        [np.array([0, 1, 2]), np.array([0, 1])],  # the second rank has not written step 2 yet
        [np.stack([row] * 3), np.stack([row] * 2)],
        10,
    )
    assert merged_steps.tolist() == [0, 1]
    assert merged[:, C["count"]].tolist() == [10.0, 10.0]
    np.testing.assert_allclose(merged[:, C["l2"]], [np.sqrt(10.0)] * 2, rtol=1e-6)


def test_a_nan_in_one_part_reaches_the_merged_columns() -> None:
    a, b = np.ones(4, np.float32), np.ones(4, np.float32)
    b[1] = np.nan
    _, merged = shards.merge(
        [np.array([0]), np.array([0])],
        [stats.tier0(a)[None].astype(np.float64), stats.tier0(b)[None].astype(np.float64)],
        8,
    )
    assert merged[0, C["nan"]] == 1.0
    assert np.isnan(merged[0, [C["min"], C["max"], C["mean"], C["std"], C["l2"]]]).all()


def test_histograms_add_and_whole_row_vectors_concatenate_at_the_steps_every_part_has() -> None:
    rng = np.random.default_rng(1)
    full = rng.normal(0.0, 10.0, size=(5, 4)).astype(np.float32)
    top, bottom = full[:3], full[3:]  # uneven rows, as FSDP2's last shard often is
    # part 0 has Tier-1 steps 0 and 4, part 1 steps 0, 2 and 4 (it ran ahead): step 2 is not merged
    steps, hists = shards.merge_hists(
        [np.array([0, 4]), np.array([0, 2, 4])],
        [np.stack([stats.log2_hist(top)] * 2), np.stack([stats.log2_hist(bottom)] * 3)],
    )
    assert steps.tolist() == [0, 4]
    np.testing.assert_array_equal(hists, np.stack([stats.log2_hist(full)] * 2))
    vec = rng.random((1, 5))
    steps, units = shards.merge_units(
        [np.array([4]), np.array([4])], [vec[:, 3:], vec[:, :3]], offsets=[3, 0], units=5
    )
    assert steps.tolist() == [4]
    np.testing.assert_array_equal(units, vec)
    # parts that do not cover the rows once (a missing part, or a wrong offset) give nothing, not a wrong vector
    for offsets in ([0, 0], [3, 1]):
        got = shards.merge_units([np.array([4])] * 2, [vec[:, :3], vec[:, 3:]], offsets, 5)
        assert got[0].size == 0, offsets


def test_per_unit_vectors_of_parts_holding_pieces_of_every_row_say_why_they_stay_per_shard() -> None:
    def shard(*placements: str, offset: list[int] | None = None) -> run_format.ShardInfo:
        return run_format.ShardInfo(
            global_shape=[4, 4], local_shape=[2, 4], offset=offset, placements=list(placements), of=2
        )

    assert shards.units_per_shard(shard("S(0)", offset=[2, 0])) is None
    assert shards.units_per_shard(shard("R", "S(0)", offset=[0, 0])) is None
    assert "S(1)" in (shards.units_per_shard(shard("S(1)", offset=[0, 2])) or "")
    assert "FlatShard" in (shards.units_per_shard(shard("FlatShard(start=3)", offset=[3])) or "")
    assert "offset" in (shards.units_per_shard(shard("S(0)")) or "")
