"""Recorder.record_predictions: counts reach the store and add up exactly over steps."""

from __future__ import annotations

import numpy as np

import trainguard
from trainguard.rules import auc


def test_prediction_counts_written_on_saved_steps_add_up_to_every_batch(tmp_path) -> None:
    rng = np.random.default_rng(0)
    all_scores, all_labels = [], []
    with trainguard.Recorder(f"file://{tmp_path}", save_interval=5) as rec:
        for _ in range(23):
            scores = rng.random(256)
            labels = (rng.random(256) < scores * 0.2).astype(float)
            all_scores.append(scores)
            all_labels.append(labels)
            rec.record_predictions(scores, labels)
            rec.record_predictions(rng.random((64, 3)), rng.integers(0, 3, 64), name="digits", mode="eval")
            rec.step()
        assert rec.errors == []
    run = trainguard.open_run(f"file://{tmp_path}")
    steps, counts = run.predictions()
    assert steps.tolist() == [0, 5, 10, 15, 20, 22]  # saved steps, then the tail written at close
    total = counts.sum(axis=0)
    assert total[:2].sum() == 23 * 256
    exact = auc.exact_auc(np.concatenate(all_scores), np.concatenate(all_labels))
    est = auc.auc_from_counts(total)
    assert abs(est.auc - exact) <= est.error_bound + 1e-12
    names = sorted(t.name for t in run.tensors("predictions"))
    assert names == ["pred/digits/class0", "pred/digits/class1", "pred/digits/class2", "pred/predictions"]
    eval_steps, eval_counts = run.predictions("pred/digits/class1", mode="eval")
    assert eval_steps.tolist() == list(range(23)) and eval_counts[:, :2].sum() == 23 * 64
    assert "pred/predictions" not in run.scalar_names()
