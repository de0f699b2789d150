"""Recorder: on Tier-1 steps each trainable parameter gets a per-unit "moved" vector (share of its row that changed)."""

from __future__ import annotations

import numpy as np

import trainguard


def test_moved_vector_is_written_on_tier1_steps_and_reads_back(tmp_path) -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    b = np.zeros(6, np.float32)
    with trainguard.Recorder(f"file://{tmp_path}", save_interval=1, tier1_interval=2) as rec:
        for _ in range(5):
            grad = rng.standard_normal(w.shape).astype(np.float32)
            grad[:2] = 0.0  # rows 0 and 1 get no gradient: a blind zone
            grad[2, :2] = 0.0  # half of row 2 is frozen
            w = w - 0.1 * grad
            b = b - 0.1 * np.where(np.arange(6) < 2, 0.0, 1.0).astype(np.float32)
            rec.record_tensor("fc.weight", w)
            rec.record_tensor("fc.bias", b, collection="biases")
            rec.record_tensor("act/relu", np.maximum(w, 0), collection="activations", activation="relu")
            rec.step()
        assert rec.errors == []
    run = trainguard.open_run(f"file://{tmp_path}")
    ids = {t.name: t.id for t in run.tensors()}
    segs = run.segments()
    tier1 = np.concatenate([s.tier1_steps for s in segs]).tolist()
    assert tier1 == [0, 2, 4]
    moved = np.concatenate([s.units[("moved", ids["fc.weight"])] for s in segs])
    bias = np.concatenate([s.units[("moved", ids["fc.bias"])] for s in segs])
    assert moved.dtype == np.float32 and moved.shape == (3, 6)
    assert np.isnan(moved[0]).all() and np.isnan(bias[0]).all()  # no previous copy at the first saved step
    np.testing.assert_array_equal(moved[1:], [[0.0, 0.0, 0.5, 1.0, 1.0, 1.0]] * 2)
    np.testing.assert_array_equal(bias[1:], [[0.0, 0.0, 1.0, 1.0, 1.0, 1.0]] * 2)
    assert not any(k == "moved" and tid == ids["act/relu"] for s in segs for k, tid in s.units)
