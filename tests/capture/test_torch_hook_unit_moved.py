"""The hook's Tier-1 "moved" vectors: per unit (row of dim 0) of each trainable parameter, the share that changed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import trainguard
import trainguard.torch as tg
from tests.capture.torch_loop import mlp, train

FROZEN = [1, 4, 5, 9]
"""Rows of `0.weight` (and entries of `0.bias`) whose gradient is masked to zero: a blind zone."""


def _mask_rows(model: torch.nn.Module) -> None:
    mask = torch.ones(16, 1)
    mask[FROZEN] = 0.0
    model[0].weight.register_hook(lambda g: g * mask)
    model[0].bias.register_hook(lambda g: g * mask[:, 0])


def _moved(uri: str) -> tuple[dict[str, np.ndarray], list[int]]:
    run = trainguard.open_run(uri)
    ids = {t.id: t.name for t in run.tensors()}
    segs = run.segments()
    out: dict[str, list[np.ndarray]] = {}
    for seg in segs:
        for (kind, tid), vec in seg.units.items():
            if kind == "moved":
                out.setdefault(ids[tid], []).append(vec)
    return {k: np.concatenate(v) for k, v in out.items()}, [int(s) for seg in segs for s in seg.tier1_steps]


PATHS = {
    "c-kernel": {},
    "packed-worker": {"native_stats": False},
    "packed-inline": {"native_stats": False, "stats_worker": False},
    "large-worker": {"native_stats": False, "pack_max_numel": 0},
    "large-inline": {"native_stats": False, "pack_max_numel": 0, "stats_worker": False},
}
"""Every CPU path of the hook: the C kernel (default), and the torch path packed or one by one, on the worker or not."""


@pytest.mark.parametrize("path", PATHS)
def test_masked_rows_read_zero_moved_and_the_others_move(file_uri: str, path: str) -> None:
    model = mlp()
    _mask_rows(model)
    with tg.Hook(file_uri, save_interval=2, tier1_interval=2, **PATHS[path]) as hook:  # type: ignore[arg-type]
        train(hook, model, steps=13)
        assert hook.errors == []
    moved, tier1 = _moved(file_uri)
    assert tier1 == [0, 4, 8, 12]
    assert set(moved) == {"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"}
    w, b = moved["0.weight"], moved["0.bias"]
    assert w.shape == (4, 16) and w.dtype == np.float32
    assert np.isnan(w[0]).all() and np.isnan(moved["4.weight"][0]).all()  # no previous copy at the first save
    live = np.setdiff1d(np.arange(16), FROZEN)
    assert (w[1:, FROZEN] == 0.0).all() and (b[1:, FROZEN] == 0.0).all()
    assert (w[1:, live] > 0.0).all() and (b[1:, live] == 1.0).all()
    assert (w[1:] <= 1.0).all() and (moved["4.weight"][1:] > 0).all()


@pytest.mark.parametrize("path", ["c-kernel", "packed-inline"])
def test_moved_matches_the_exact_row_comparison(file_uri: str, path: str) -> None:
    """The share of each row of `2.weight` that changed between saved steps 2 and 4 (tier1_interval 1)."""
    model = mlp()
    copies: dict[int, np.ndarray] = {}

    def keep(step: int) -> None:
        copies[step] = model[2].weight.detach().clone().numpy()

    with tg.Hook(file_uri, save_interval=2, tier1_interval=1, **PATHS[path]) as hook:  # type: ignore[arg-type]
        with torch.no_grad():  # make some elements exactly stay: a zero gradient column
            model[2].weight[:, 3] = 0.0
        model[2].weight.register_hook(lambda g: g.index_fill(1, torch.tensor([3, 7]), 0.0))
        train(hook, model, steps=5, on_step=keep)
    moved, tier1 = _moved(file_uri)
    assert tier1 == [0, 2, 4]
    expected = (copies[4] != copies[2]).mean(axis=1)
    np.testing.assert_allclose(moved["2.weight"][2], expected, rtol=0, atol=1e-7)
    assert (moved["2.weight"][2] < 1.0).all()
