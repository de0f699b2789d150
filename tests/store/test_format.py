"""The run format v1: segment round trips, catalogue versions, version checks, damaged segments.

Runs are written by the real writer (`Recorder` / `RankWriter`) and read back with `open_run`;
damaged objects are made by cutting or flipping the bytes of real segments.
"""

from __future__ import annotations

import io
import json
import time

import numpy as np
import pytest

import trainguard
from trainguard.store import errors, run_format
from trainguard.store.backends import open_store
from trainguard.store.writer import RankWriter, WriterConfig

K = len(run_format.STAT_COLUMNS)


def make_segment(seed: int = 0) -> run_format.Segment:
    rng = np.random.default_rng(seed)
    steps = np.array([10, 20, 30], np.int64)
    return run_format.Segment(
        steps=steps,
        wall_time=np.array([1.5, 2.5, 3.5]),
        tensor_ids=np.array([0, 2, 5], np.int32),
        stats=rng.standard_normal((3, 3, K)).astype(np.float32),
        scalar_steps=np.array([10, 15, 20, 30], np.int64),
        scalar_ids=np.array([7, 8, 7, 7], np.int32),
        scalar_values=np.array([0.5, 0.25, 0.125, np.nan]),
        tier1_steps=np.array([10, 30], np.int64),
        units={
            ("active", 5): rng.random((2, 16)).astype(np.float32),
            ("saturated", 2): rng.random((2, 4)).astype(np.float32),
        },
        hists={0: rng.random((2, run_format.HIST_BINS)).astype(np.float32)},
        catalogue_version=3,
        extra={"labels": np.arange(4)},
    )


def assert_segments_equal(a: run_format.Segment, b: run_format.Segment) -> None:
    for name in (
        "steps",
        "wall_time",
        "tensor_ids",
        "stats",
        "scalar_steps",
        "scalar_ids",
        "scalar_values",
        "tier1_steps",
    ):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (
        a.units.keys() == b.units.keys()
        and a.hists.keys() == b.hists.keys()
        and a.extra.keys() == b.extra.keys()
    )
    for k in a.units:
        np.testing.assert_array_equal(a.units[k], b.units[k])
    for h in a.hists:
        np.testing.assert_array_equal(a.hists[h], b.hists[h])
    for e in a.extra:
        np.testing.assert_array_equal(a.extra[e], b.extra[e])
    assert a.catalogue_version == b.catalogue_version


def test_a_segment_round_trips_with_tier1_units_hists_scalars_and_extras() -> None:
    seg = make_segment()
    back = run_format.decode_segment(run_format.encode_segment(seg))
    assert_segments_equal(seg, back)
    assert back.stats.dtype == np.float32 and back.steps.dtype == np.int64
    assert (back.first_step, back.last_step) == (10, 30)


def test_a_scalar_only_segment_round_trips_and_spans_its_scalar_steps() -> None:
    seg = run_format.Segment(
        steps=np.zeros(0, np.int64),
        wall_time=np.zeros(0),
        tensor_ids=np.zeros(0, np.int32),
        stats=np.zeros((0, 0, K), np.float32),
        scalar_steps=np.array([3, 4]),
        scalar_ids=np.array([0, 0], np.int32),
        scalar_values=np.array([1.0, 2.0]),
    )
    back = run_format.decode_segment(run_format.encode_segment(seg))
    assert_segments_equal(seg, back)
    assert (back.first_step, back.last_step) == (3, 4)


def test_segment_keys_sort_by_attempt_then_upload_order_whatever_steps_they_hold() -> None:
    early, late = run_format.attempt_id(1_795_000_000.0), run_format.attempt_id(1_795_000_000.001)
    keys = [
        run_format.segment_key(0, early, 1, 0, 9),  # uploaded second, holds earlier steps
        run_format.segment_key(0, early, 0, 10, 19),
        run_format.segment_key(0, late, 0, 0, 4),  # a restarted rank starts from step 0 again
    ]
    assert sorted(keys) == [keys[1], keys[0], keys[2]]
    assert run_format.after_attempt(0, early) > keys[0] and run_format.after_attempt(0, early) < keys[2]
    assert (
        run_format.parse_segment_name(keys[2]) == (late, 0, 0, 4) and len(late) == run_format.ATTEMPT_DIGITS
    )
    assert run_format.parse_segment_name("rank-00000/seg-garbage.npz") is None
    # A long run outgrows the zero padding (a billion flushes, or steps past 10^12): still a segment.
    assert run_format.parse_segment_name(run_format.segment_key(0, early, 10**9, 5, 6)) == (
        early,
        10**9,
        5,
        6,
    )
    assert run_format.parse_segment_name(run_format.segment_key(0, early, 3, 10**12, 10**12 + 1)) == (
        early, 3, 10**12, 10**12 + 1,
    )  # fmt: skip
    # Format 1 keys (no attempt) still parse, as attempt "".
    assert run_format.parse_segment_name("rank-00000/seg-000000000010-000000000019-000001.npz") == (
        "",
        1,
        10,
        19,
    )
    assert run_format.meta_key(0, 2, attempt="") == "rank-00000/meta-000002.json"
    assert run_format.parse_meta_name(run_format.meta_key(0, 2, attempt=late)) == (late, 2)
    assert run_format.parse_meta_name("rank-00000/meta-000002.json") == ("", 2)
    assert (
        run_format.parse_rank_prefix("rank-00042/") == 42
        and run_format.parse_rank_prefix("evaluator/") is None
    )


def test_a_run_written_by_the_recorder_reads_back_with_statistics_units_and_scalars(run_uri: str) -> None:
    rng = np.random.default_rng(1)
    weights = []
    with trainguard.Recorder(run_uri, save_interval=2, tier1_interval=1, flush_every_steps=2) as rec:
        w = rng.standard_normal((4, 3))
        for step in range(8):
            w = w - 0.01 * step
            weights.append(w.copy())
            rec.record_tensor("fc.weight", w, collection="weights")
            rec.record_tensor(
                "act/relu",
                np.maximum(rng.standard_normal((8, 5)), 0),
                collection="activations",
                activation="relu",
            )
            rec.record_scalar("loss", 1.0 / (step + 1))
            if step % 3 == 0:
                rec.record_scalar("val_loss", 2.0 / (step + 1), mode="eval")
            rec.step()
    run = trainguard.open_run(run_uri)
    assert run.format == "trainguard" and run.ranks == [0] and run.problems == []
    steps, l2 = run.series("fc.weight", "l2")
    np.testing.assert_array_equal(steps, [0, 2, 4, 6])
    np.testing.assert_allclose(l2, [np.linalg.norm(weights[s]) for s in steps], rtol=1e-6)
    _, upd = run.series("fc.weight", "update_l2")
    assert np.isnan(upd[0])
    np.testing.assert_allclose(
        upd[1:], [np.linalg.norm(weights[s] - weights[s - 2]) for s in steps[1:]], rtol=1e-5
    )
    np.testing.assert_array_equal(run.scalars("loss").steps, range(8))  # train scalars: every step
    np.testing.assert_allclose(run.scalars("val_loss", mode="eval").values, [2.0, 0.5, 2.0 / 7])
    act = [t for t in run.tensors("activations")]
    assert [t.name for t in act] == ["act/relu"] and act[0].activation == "relu" and act[0].units == 5
    key = ("active", act[0].id)
    units = [seg.units[key] for seg in run.segments() if key in seg.units]  # not in a segment of scalars only
    assert sum(u.shape[0] for u in units) == 4 and all(u.shape[1] == 5 for u in units)
    assert all(((u >= 0) & (u <= 1)).all() for u in units)
    assert run.ended() is not None and run.ended().status == "ok"


def test_a_tensor_defined_after_the_first_flush_gets_a_new_catalogue_version_that_readers_pick_up(
    file_uri: str,
) -> None:
    store = open_store(file_uri)
    w = RankWriter(store, run_id="r", config=WriterConfig(flush_every_steps=1))
    a = w.define("a", collection="weights", shape=[2])
    w.write_step(0, np.array([a]), np.ones((1, K), np.float32))
    b = w.define("b", collection="gradients", shape=[2])
    w.write_step(1, np.array([a, b]), np.full((2, K), 2, np.float32))
    w.close()
    metas = [run_format.meta_key(0, v, attempt=w.attempt) for v in (0, 1)]
    assert store.list("rank-00000/meta-") == metas
    first, second = json.loads(store.get(metas[0])), json.loads(store.get(metas[1]))
    assert [t["name"] for t in first["tensors"]] == ["a"]
    assert [t["name"] for t in second["tensors"]] == ["a", "b"]
    run = trainguard.open_run(file_uri)
    assert [s.catalogue_version for s in run.segments()] == [0, 1]
    assert run.collections() == {"weights": ["a"], "gradients": ["b"]}
    np.testing.assert_array_equal(run.series("b", "mean"), ([1], [2.0]))
    np.testing.assert_array_equal(run.series("a", "mean"), ([0, 1], [1.0, 2.0]))


def test_an_incremental_reader_picks_up_a_catalogue_version_written_after_it_started(file_uri: str) -> None:
    store = open_store(file_uri)
    w = RankWriter(store, run_id="r", config=WriterConfig(flush_every_steps=1))
    a = w.define("a", collection="weights", shape=[2])
    w.write_step(0, np.array([a]), np.ones((1, K), np.float32))
    src = trainguard.open_run(file_uri, wait=True).source(0)
    first = poll_until(src, count=1)
    assert [t.name for t in src.catalogue().values()] == ["a"] and first[0].catalogue_version == 0
    b = w.define("b", collection="gradients", shape=[2])
    w.write_step(1, np.array([a, b]), np.full((2, K), 2, np.float32))
    second = poll_until(src, count=1)
    assert second[0].catalogue_version == 1
    assert {t.name: t.collection for t in src.catalogue().values()} == {"a": "weights", "b": "gradients"}
    w.close()


def poll_until(src: object, *, count: int, timeout_seconds: float = 10.0) -> list[run_format.Segment]:
    """Poll a source until `count` new segments came (the writer uploads in the background)."""
    got: list[run_format.Segment] = []
    deadline = time.monotonic() + timeout_seconds
    while len(got) < count:
        assert time.monotonic() < deadline, f"only {len(got)} of {count} segments after {timeout_seconds}s"
        got += src.poll()  # type: ignore[attr-defined]
        time.sleep(0.01)
    return got


def test_run_json_with_an_unknown_major_version_is_refused_with_a_clear_message(file_uri: str) -> None:
    store = open_store(file_uri)
    store.put(
        "run.json",
        json.dumps({"format_version": "3.0", "run_id": "x", "framework": "numpy", "start_time": 0}).encode(),
    )
    with pytest.raises(errors.FormatError) as info:
        trainguard.open_run(file_uri)
    assert str(info.value) == (
        f"{file_uri}/run.json has run-format version 3.0; this TrainGuard reads 1.x and 2.x. Upgrade TrainGuard to read it."
    )


def test_a_newer_minor_version_is_read(file_uri: str) -> None:
    store = open_store(file_uri)
    store.put(
        "run.json",
        json.dumps(
            {"format_version": "1.7", "run_id": "x", "framework": "numpy", "start_time": 0, "new_field": 1}
        ).encode(),
    )
    run = trainguard.open_run(file_uri)
    assert run.info is not None and run.info.run_id == "x"


def test_a_segment_with_an_unknown_major_version_is_reported_not_read() -> None:
    buf = io.BytesIO()
    arrays = {k: v for k, v in np.load(io.BytesIO(run_format.encode_segment(make_segment()))).items()}
    arrays["format_version"] = np.array("3.1")
    np.savez(buf, **arrays)
    with pytest.raises(
        errors.FormatError, match="segment s/k has run-format version 3.1; this TrainGuard reads 1.x and 2.x"
    ):
        run_format.decode_segment(buf.getvalue(), key="s/k")


def write_three_segments(uri: str) -> list[str]:
    with trainguard.Recorder(uri, save_interval=1, flush_every_steps=2, flush_interval_seconds=60) as rec:
        for step in range(6):
            rec.record_tensor("w", np.full(3, float(step)), collection="weights")
            rec.step()
    keys = open_store(uri).list("rank-00000/seg-")
    assert len(keys) == 3
    return keys


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[: len(b) // 2], id="truncated"),
        pytest.param(lambda b: b[:10], id="cut-in-the-header"),
        pytest.param(lambda b: b"", id="empty"),
        pytest.param(
            lambda b: (
                b[: len(b) // 2]
                + bytes(x ^ 0xFF for x in b[len(b) // 2 : len(b) // 2 + 16])
                + b[len(b) // 2 + 16 :]
            ),
            id="flipped-bytes",
        ),
        pytest.param(lambda b: b"not a zip file at all", id="garbage"),
    ],
)
def test_a_damaged_segment_is_reported_and_skipped_while_later_segments_are_read(
    run_uri: str, damage: object
) -> None:
    keys = write_three_segments(run_uri)
    store = open_store(run_uri)
    store.put(keys[1], damage(store.get(keys[1])))  # type: ignore[operator]
    run = trainguard.open_run(run_uri)
    np.testing.assert_array_equal(run.series("w", "mean"), ([0, 1, 4, 5], [0, 1, 4, 5]))
    assert len(run.problems) == 1
    assert keys[1] in run.problems[0] and "skipped" in run.problems[0]


def test_a_segment_holding_a_pickled_object_is_refused_without_unpickling(file_uri: str) -> None:
    class Boom:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (pytest.fail, ("the reader unpickled data from storage",))

    keys = write_three_segments(file_uri)
    store = open_store(file_uri)
    arrays = dict(np.load(io.BytesIO(store.get(keys[1]))).items())
    arrays["stats"] = np.array([Boom()], dtype=object)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    assert b"outcomes" in buf.getvalue()  # the pickled call to pytest.fail really is in the segment
    store.put(keys[1], buf.getvalue())
    run = trainguard.open_run(file_uri)
    assert run.steps().tolist() == [0, 1, 4, 5]
    assert len(run.problems) == 1 and "allow_pickle=False" in run.problems[0]
