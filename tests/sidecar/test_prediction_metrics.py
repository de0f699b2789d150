"""The evaluator exports the AUC of recorded predictions as Prometheus gauges."""

from __future__ import annotations

import numpy as np
import prometheus_client

import trainguard
from tests.sidecar.runs import registered
from trainguard.rules import auc
from trainguard.sidecar.evaluator import Evaluator


def test_evaluator_exports_decayed_and_cumulative_auc_and_the_positive_rate(tmp_path) -> None:
    rng = np.random.default_rng(0)
    scores_all, labels_all = [], []
    with trainguard.Recorder(f"file://{tmp_path}", save_interval=2) as rec:
        for _ in range(40):
            scores = rng.random(500)
            labels = (rng.random(500) < 0.3 * scores).astype(float)
            scores_all.append(scores)
            labels_all.append(labels)
            rec.record_predictions(scores, labels)
            rec.record_scalar("loss", 1.0)
            rec.step()
    registry = prometheus_client.CollectorRegistry()
    ev = registered(Evaluator(f"file://{tmp_path}", checkpoint=False), registry)
    ev.poll()
    exact = auc.exact_auc(np.concatenate(scores_all), np.concatenate(labels_all))
    cumulative = registry.get_sample_value("trainguard_predictions_cumulative_auc", {"mode": "train"})
    assert cumulative is not None and abs(cumulative - exact) < 1e-3
    decayed = registry.get_sample_value("trainguard_predictions_auc", {"mode": "train"})
    assert decayed is not None and abs(decayed - exact) < 0.05
    assert registry.get_sample_value("trainguard_predictions_auc_standard_error", {"mode": "train"}) > 0
    rate = registry.get_sample_value("trainguard_predictions_positive_rate", {"mode": "train"})
    assert abs(rate - np.concatenate(labels_all).mean()) < 1e-9
    assert registry.get_sample_value("trainguard_predictions_auc", {"mode": "eval"}) is None
