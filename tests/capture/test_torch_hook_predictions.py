"""Hook.record_predictions: counts made on the device in a real training loop match numpy counting exactly."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from tests.capture.torch_loop import mlp
from trainguard.rules import auc
from trainguard.store import prediction_buckets


def train_with_predictions(hook: tg.Hook, *, steps: int, eval_every: int) -> dict[tuple[str, str, int], list]:
    """Train a 3-class MLP, recording binary logits (class 0 vs rest) and class probabilities.

    Returns the batches handed to the hook, by (stream, mode, step the hook attributes them to).
    """
    model = mlp()
    g = torch.Generator().manual_seed(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_optimizer(opt)
    seen: dict[tuple[str, str, int], list] = defaultdict(list)
    for step in range(steps):
        model.train()
        x = torch.randn(64, 8, generator=g)
        y = (x[:, 0] > 0).long() + (x[:, 1] > 1).long()  # learnable labels in {0, 1, 2}
        opt.zero_grad()
        out = model(x)
        loss = loss_fn(out, y)
        loss.backward()
        logit = out[:, 0] - torch.logsumexp(out[:, 1:], dim=1)  # log-odds of class 0
        is0 = (y == 0).float()
        hook.record_predictions(logit, is0, name="is0", logits=True)
        seen[("is0", "train", step)].append((logit.detach().numpy(), is0.numpy()))
        opt.step()
        if step % eval_every == 0:
            model.eval()
            with torch.no_grad():
                xv = torch.randn(48, 8, generator=g)
                yv = (xv[:, 0] > 0).long() + (xv[:, 1] > 1).long()
                probs = torch.softmax(model(xv), dim=1)
            hook.record_predictions(probs, yv, name="digits", mode="eval")
            seen[("digits", "eval", step)].append((probs.numpy(), yv.numpy()))
    return seen


def numpy_counts(batches: list, *, cls: int = -1, logits: bool = False) -> np.ndarray:
    out = np.zeros((prediction_buckets.ROWS, prediction_buckets.BUCKETS))
    for scores, labels in batches:
        if cls >= 0:
            scores, labels = scores[:, cls], (labels == cls).astype(float)
        out += prediction_buckets.count(scores, labels, logits=logits)
    return out


def test_counts_from_a_training_loop_equal_numpy_counting_and_give_the_exact_auc(tmp_path: Path) -> None:
    uri = f"file://{tmp_path}/run"
    with tg.Hook(uri, save_interval=4) as hook:
        seen = train_with_predictions(hook, steps=10, eval_every=3)
        assert hook.errors == []
    run = trainguard.open_run(uri)

    steps, counts = run.predictions("pred/is0")
    assert steps.tolist() == [0, 4, 8, 9]  # saved steps, then the tail written at close
    for (lo, hi), record in zip([(0, 0), (1, 4), (5, 8), (9, 9)], counts):
        batches = [b for s in range(lo, hi + 1) for b in seen[("is0", "train", s)]]
        expected = numpy_counts(batches, logits=True)
        assert np.array_equal(record[:2], expected[:2])  # the counts: exactly
        np.testing.assert_allclose(record[2], expected[2], rtol=1e-9, atol=1e-12)  # score sums
    all_batches = [b for s in range(10) for b in seen[("is0", "train", s)]]
    scores = np.concatenate([s for s, _ in all_batches])
    labels = np.concatenate([y for _, y in all_batches])
    est = auc.auc_from_counts(counts.sum(axis=0))
    assert est.positives + est.negatives == 10 * 64
    assert abs(est.auc - auc.exact_auc(scores, labels)) <= est.error_bound + 1e-12

    names = sorted(t.name for t in run.tensors("predictions"))
    classes = [f"pred/digits/class{c}" for c in range(3)]
    assert names == [*classes, "pred/is0"]
    for c, name in enumerate(classes):
        eval_steps, eval_counts = run.predictions(name, mode="eval")
        assert eval_steps.tolist() == [0, 3, 6, 9]
        for s, record in zip(eval_steps, eval_counts):
            assert np.array_equal(record[:2], numpy_counts(seen[("digits", "eval", int(s))], cls=c)[:2])


def test_non_finite_scores_are_left_out_without_boolean_indexing(tmp_path: Path) -> None:
    scores = torch.tensor([0.1, float("nan"), 0.7, float("inf"), 0.9, 0.3])
    labels = torch.tensor([0.0, 1.0, 1.0, 0.0, 1.0, 0.0])
    with tg.Hook(f"file://{tmp_path}/run") as hook:
        hook.record_predictions(scores, labels)
    _, counts = trainguard.open_run(f"file://{tmp_path}/run").predictions()
    expected = prediction_buckets.count(scores.numpy(), labels.numpy())
    assert np.array_equal(counts.sum(axis=0)[:2], expected[:2]) and counts[:, :2].sum() == 4


def test_a_bad_batch_does_not_raise_and_is_recorded_as_the_hook_error(tmp_path: Path) -> None:
    with tg.Hook(f"file://{tmp_path}/run") as hook:
        hook.register_module(mlp())
        hook.record_predictions(torch.rand(10), torch.ones(7))  # one label missing per three scores
        assert not hook.enabled
        hook.record_predictions(torch.rand(10), torch.ones(10))  # capture is off: a no-op
    assert len(hook.errors) == 1
    assert hook.errors[0].startswith(
        "record_predictions('predictions') failed: ValueError: scores has 10 values"
    )
    end = trainguard.open_run(f"file://{tmp_path}/run").ended()
    assert end is not None and end.status == "error" and end.errors == hook.errors
