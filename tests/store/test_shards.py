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


def test_per_unit_vectors_of_strided_or_flat_pieces_say_why_they_stay_per_shard() -> None:
    def shard(*placements: str, offset: list[int] | None = None) -> run_format.ShardInfo:
        return run_format.ShardInfo(
            global_shape=[4, 4], local_shape=[2, 4], offset=offset, placements=list(placements), of=2
        )

    assert shards.units_per_shard(shard("S(0)", offset=[2, 0])) is None
    assert shards.units_per_shard(shard("R", "S(0)", offset=[0, 0])) is None
    assert shards.units_per_shard(shard("S(1)", offset=[0, 2])) is None  # a block of every row's columns
    assert "_S(0, 2)" in (shards.units_per_shard(shard("_S(0, 2)", offset=[0, 0])) or "")
    assert "FlatShard" in (shards.units_per_shard(shard("FlatShard(start=3)", offset=[3])) or "")
    assert "offset" in (shards.units_per_shard(shard("S(0)")) or "")
    activation = shards.units_per_shard(shard("S(0)", offset=[2, 0]), collection="activations")
    assert "channels" in (activation or "")


def test_shares_of_row_blocks_merge_into_the_full_rows_share_exactly() -> None:
    """A row-wise tensor-parallel weight (`S(1)`): each part holds a block of every row's columns and its share
    per row is a count over its own width. The full row's share is the counts summed over the full width, as
    computed on the whole tensor; with a 2-D mesh (`S(0)` and `S(1)`) the parts hold blocks of both."""
    rng = np.random.default_rng(3)
    prev = rng.normal(size=(6, 10))
    now = prev.copy()
    now[rng.random((6, 10)) < 0.4] += 1.0  # some elements moved
    moved = (now != prev).mean(axis=1)

    def share(rows: slice, cols: slice) -> np.ndarray:
        return (now[rows, cols] != prev[rows, cols]).mean(axis=1)[None]  # one Tier-1 step

    left, right = share(slice(0, 6), slice(0, 3)), share(slice(0, 6), slice(3, 10))  # uneven columns
    steps, got = shards.merge_units([np.array([2])] * 2, [left, right], [0, 0], 6, [3, 7], 10)
    assert steps.tolist() == [2]
    np.testing.assert_array_equal(got[0], moved)
    blocks = [(r, c) for r in (slice(0, 4), slice(4, 6)) for c in (slice(0, 5), slice(5, 10))]
    got2 = shards.place_units([share(r, c) for r, c in blocks], [r.start for r, _ in blocks], 6, [5] * 4, 10)
    assert got2 is not None
    np.testing.assert_array_equal(got2[0], moved)
    # a missing block of columns, or one counted twice, gives nothing rather than a wrong share
    assert shards.place_units([left], [0], 6, [3], 10) is None
    assert shards.place_units([left, left, right], [0, 0, 0], 6, [3, 3, 7], 10) is None
    nan = shards.place_units([np.full((1, 6), np.nan), right], [0, 0], 6, [3, 7], 10)  # a first save
    assert nan is not None and np.isnan(nan).all()
