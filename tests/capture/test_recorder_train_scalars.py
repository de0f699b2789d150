"""The numpy Recorder keeps train scalars at every step, statistics at saved steps only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import trainguard


def test_every_steps_loss_is_kept_and_statistics_only_on_saved_steps(tmp_path: Path) -> None:
    uri = f"file://{tmp_path}/run"
    with trainguard.Recorder(uri, save_interval=5) as rec:
        for step in range(12):
            rec.record_tensor("w", np.full((4, 4), step, np.float32), collection="weights")
            rec.record_scalar("loss", 1.0 / (1 + step))
            if step % 4 == 0:
                rec.record_scalar("val_loss", 2.0 / (1 + step), mode="eval")
            rec.step()
    run = trainguard.open_run(uri)
    steps, losses = run.scalars("loss")
    assert steps.tolist() == list(range(12))
    np.testing.assert_allclose(losses, [1.0 / (1 + s) for s in range(12)])
    assert run.scalars("val_loss", mode="eval").steps.tolist() == [0, 4, 8]
    assert run.series("w", "mean").steps.tolist() == [0, 5, 10]
