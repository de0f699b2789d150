"""Segments become one StepView per step: statistics and scalars merged, Tier-1 data attached, meta from the catalogue."""

from __future__ import annotations

import numpy as np

from tests.sidecar.runs import TENSORS, RunBuilder
from trainguard.api.enums import Mode
from trainguard.sidecar.view_builder import ViewBuilder, loss_mode
from trainguard.store import run_format
from trainguard.store.backends import open_store
from trainguard.store.source import RankSource


def _views(tmp_path, **segment_kwargs):  # type: ignore[no-untyped-def]
    store = open_store(f"file://{tmp_path}")
    RunBuilder(store).segment(**segment_kwargs)
    src = RankSource(store, 0)
    (seg,) = src.poll()
    return ViewBuilder(0).views(seg, src.catalogue())


def test_statistics_and_scalars_of_one_step_share_one_view(tmp_path) -> None:  # type: ignore[no-untyped-def]
    views = _views(tmp_path, steps=[10, 20], loss={10: 0.5, 20: 0.25}, val_loss={20: 0.75})
    assert [v.step for v in views] == [10, 20]
    v = views[1]
    assert v.names == ("fc1.weight", "grad/fc1.weight", "act/relu1", "fc2.weight")
    assert v.stats.shape == (4, len(run_format.STAT_COLUMNS)) and v.stats.dtype == np.float64
    assert v.stat("fc1.weight", "l2") == np.float32(1.0 + 0.02)
    assert v.scalars == {"loss": 0.25} and v.eval_scalars == {"val_loss": 0.75}
    assert v.meta[0].trainable and v.meta[2].activation == "relu" and v.meta[3].order == 2


def test_scalar_only_steps_get_views_without_statistics_in_step_order(tmp_path) -> None:  # type: ignore[no-untyped-def]
    views = _views(tmp_path, steps=[10, 20], loss={10: 0.5, 15: 0.4, 20: 0.25})
    assert [v.step for v in views] == [10, 15, 20]
    middle = views[1]
    assert middle.names == () and middle.stats.shape == (0, len(run_format.STAT_COLUMNS))
    assert middle.scalars == {"loss": 0.4}
    assert middle.wall_time == views[0].wall_time


def test_units_and_histograms_are_attached_on_tier1_steps_only(tmp_path) -> None:  # type: ignore[no-untyped-def]
    views = _views(tmp_path, steps=[0, 1, 2], tier1=[0, 2])
    assert set(views[0].units) == {("active", "act/relu1")} and views[1].units == {}
    assert views[2].units[("active", "act/relu1")].shape == (8,)
    assert views[2].hists["fc1.weight"].shape == (run_format.HIST_BINS,) and views[1].hists == {}


def test_views_of_one_layout_share_names_and_meta_without_copies(tmp_path) -> None:  # type: ignore[no-untyped-def]
    views = _views(tmp_path, steps=range(5))
    assert all(v.names is views[0].names and v.meta is views[0].meta for v in views)
    assert all(
        np.shares_memory(v.stats, views[0].stats.base if views[0].stats.base is not None else views[0].stats)
        for v in views
    )


def test_loss_scalars_are_classified_by_mode_and_name() -> None:
    assert loss_mode(TENSORS[4]) == Mode.TRAIN
    assert loss_mode(TENSORS[5]) == Mode.EVAL
    assert (
        loss_mode(run_format.TensorInfo(id=9, name="val_loss", collection="losses", mode="train"))
        == Mode.EVAL
    )
    assert loss_mode(run_format.TensorInfo(id=9, name="accuracy", collection="metrics", mode="train")) is None
    assert loss_mode(TENSORS[0]) is None


def test_prediction_count_records_are_attached_by_step_and_mode(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = open_store(f"file://{tmp_path}")
    b = RunBuilder(store)
    tensors = [
        *TENSORS,
        run_format.TensorInfo(id=6, name="pred/ctr", collection="predictions", mode="train", units=4),
        run_format.TensorInfo(id=7, name="pred/ctr", collection="predictions", mode="eval", units=4),
    ]
    store.put(
        run_format.meta_key(0, 0, attempt=b.attempt),
        run_format.Catalogue(rank=0, version=0, tensors=tensors).model_dump_json().encode(),
    )
    counts = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    seg = run_format.Segment(
        steps=np.array([0, 10], np.int64),
        wall_time=np.array([1.0, 2.0]),
        tensor_ids=np.zeros(0, np.int32),
        stats=np.zeros((2, 0, len(run_format.STAT_COLUMNS)), np.float32),
        extra={
            "pred.6": counts,
            "pred.6.steps": np.array([0, 10], np.int64),
            "pred.7": counts[:1] + 100,
            "pred.7.steps": np.array([5], np.int64),
        },
    )
    store.put(run_format.segment_key(0, b.attempt, b.seq, 0, 10), run_format.encode_segment(seg))
    src = RankSource(store, 0)
    (loaded,) = src.poll()
    views = ViewBuilder(0).views(loaded, src.catalogue())
    assert [v.step for v in views] == [0, 5, 10]
    assert np.array_equal(views[0].predictions["pred/ctr"], counts[0]) and views[0].eval_predictions == {}
    assert (
        np.array_equal(views[1].eval_predictions["pred/ctr"], counts[0] + 100) and views[1].predictions == {}
    )
    assert np.array_equal(views[2].predictions["pred/ctr"], counts[1])
