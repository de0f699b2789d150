"""The registered module's inputs (`input/<arg>`, collection `inputs`): read on saved steps like an activation,
every column equal to numpy's on every CPU path; integer inputs named with the reason and never read; one
batch per saved iteration; nothing when the collection is not captured."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from tests.capture.test_torch_statistics import assert_columns_match
from trainguard.capture.torch import c_kernel
from trainguard.capture.torch._inputs import INTEGER_INPUT
from trainguard.store import run_format, stats

UPDATE = run_format.COLUMN["update_l2"]
SAVE_INTERVAL = 2

PATHS = {
    "kernel": {"native_stats": True, "stats_worker": False},
    "worker": {"native_stats": False, "stats_worker": True},
    "packed": {"native_stats": False, "stats_worker": False},
    "one-by-one": {"native_stats": False, "stats_worker": False, "pack_max_numel": 0},
}


class Tagger(nn.Module):
    """Images and token ids in, as a captioning or multimodal model takes them; `scale` by keyword."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.emb = nn.Embedding(10, 4)
        self.head = nn.Linear(8, 3)

    def forward(self, pixels: torch.Tensor, tokens: torch.Tensor, *, scale: torch.Tensor) -> torch.Tensor:
        image = torch.relu(self.conv(pixels * scale)).mean((2, 3))
        return self.head(torch.cat([image, self.emb(tokens).mean(1)], 1))


def _train(hook: tg.Hook, steps: int, *, accumulate: int = 1) -> dict[int, dict[str, np.ndarray]]:
    """Train a `Tagger` on images far from unit scale (mean 100, std 30, as unnormalised pixels); return the
    inputs of the first forward of each iteration."""
    model = Tagger()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    hook.register_module(model)
    hook.register_optimizer(opt)
    g = torch.Generator().manual_seed(3)
    seen = {}
    for step in range(steps):
        opt.zero_grad()
        for part in range(accumulate):
            pixels = 100 + 30 * torch.randn(8, 3, 6, 6, generator=g)
            tokens = torch.randint(0, 10, (8, 5), generator=g)
            scale = torch.rand(1, generator=g) + 0.5
            model(pixels, tokens, scale=scale).square().mean().backward()
            if part == 0:
                seen[step] = {"pixels": pixels.double().numpy(), "scale": scale.double().numpy()}
        opt.step()
        hook.record_scalar("loss", 1.0)
    return seen


@pytest.mark.parametrize("path", PATHS)
def test_the_inputs_columns_equal_numpys_on_every_cpu_path(tmp_path, path: str) -> None:
    if path == "kernel" and not c_kernel.AVAILABLE:
        pytest.skip("the C kernel is not built")
    with tg.Hook(str(tmp_path), save_interval=SAVE_INTERVAL, tier1_interval=2, **PATHS[path]) as hook:
        seen = _train(hook, 7)
        assert hook.wait_idle()
    assert hook.errors == []
    run = trainguard.open_run(str(tmp_path))
    saved = [s for s in seen if s % SAVE_INTERVAL == 0]
    for arg in ("pixels", "scale"):
        name = f"input/{arg}"
        assert name in {t.name for t in run.tensors("inputs")}
        got = np.stack([run.series(name, col).values for col in run_format.STAT_COLUMNS], 1)
        assert run.series(name, "count").steps.tolist() == saved
        for i, s in enumerate(saved):
            want = stats.tier0(seen[s][arg])
            assert_columns_match(got[i, :UPDATE], want[:UPDATE], f"{name} at step {s} on the {path} path")
            assert np.isnan(got[i, UPDATE:]).all()  # an input has no update or distance


def test_integer_inputs_are_named_with_the_reason_and_never_read(tmp_path) -> None:
    with tg.Hook(str(tmp_path), save_interval=SAVE_INTERVAL) as hook:
        _train(hook, 3)
    run = trainguard.open_run(str(tmp_path))
    assert run.skipped()["input/tokens"] == INTEGER_INPUT
    assert run.series("input/tokens", "count").steps.size == 0


def test_only_the_first_forward_of_a_saved_iteration_is_read(tmp_path) -> None:
    with tg.Hook(str(tmp_path), save_interval=SAVE_INTERVAL, native_stats=False, stats_worker=False) as hook:
        seen = _train(hook, 5, accumulate=3)  # gradient accumulation: three forwards per optimizer step
    run = trainguard.open_run(str(tmp_path))
    got = run.series("input/pixels", "mean")
    assert got.steps.tolist() == [0, 2, 4]
    np.testing.assert_allclose(got.values, [seen[s]["pixels"].mean() for s in (0, 2, 4)], rtol=1e-5)


def test_the_inputs_of_a_module_registered_second_carry_its_place(tmp_path) -> None:
    with tg.Hook(str(tmp_path), save_interval=1) as hook:
        encoder, decoder = nn.Linear(4, 4), nn.Linear(4, 2)
        opt = torch.optim.SGD([*encoder.parameters(), *decoder.parameters()], lr=0.1)
        hook.register_module(encoder)
        hook.register_module(decoder)
        hook.register_optimizer(opt)
        for _ in range(2):
            opt.zero_grad()
            decoder(encoder(torch.ones(3, 4))).sum().backward()
            opt.step()
    names = {t.name for t in trainguard.open_run(str(tmp_path)).tensors("inputs")}
    assert names == {"input/input", "input/1.input"}


def test_no_input_is_read_when_the_collection_is_not_captured(tmp_path) -> None:
    with tg.Hook(str(tmp_path), save_interval=SAVE_INTERVAL, collections=["weights", "losses"]) as hook:
        _train(hook, 3)
    assert hook._inputs is None
    assert trainguard.open_run(str(tmp_path)).tensors("inputs") == []
