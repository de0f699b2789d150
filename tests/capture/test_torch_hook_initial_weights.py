"""The hook reads every captured weight and bias once before any optimizer update: the initial-weights record.

A saved step's parameter rows are taken after its update, so step 0's weights have already moved
once. On every path (the C kernel's, the statistics worker's, the packed one and the multi-tensor one
under Triton's interpreter) a run trained with a large learning rate must hold `init/<name>` rows at
step 0 equal to copies the loop took before `opt.step()` (and unlike the rows after it), with no
update history, and nothing more at later steps; a module registered mid-run gets its record at the
next saved step, from its weights before that step's update.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from tests.capture.test_torch_statistics import assert_columns_match
from trainguard.capture.torch import c_kernel
from trainguard.capture.torch._kernel_path import KernelPath
from trainguard.capture.torch._multi_path import MultiPath
from trainguard.capture.torch._packed import PackedPath
from trainguard.capture.torch._worker_path import WorkerPath
from trainguard.store import run_format, stats

UPDATE = run_format.COLUMN["update_l2"]
SAVE_INTERVAL = 2
HEAD_AT = 3
"""The step before which a second module (a new head) is registered: its record is due at the next saved step."""

PATHS = {
    "kernel": (KernelPath, {"native_stats": True}, "0"),
    "worker": (WorkerPath, {"native_stats": False, "stats_worker": True}, "0"),
    "packed": (PackedPath, {"native_stats": False, "stats_worker": False}, "0"),
    "multi": (MultiPath, {"native_stats": False, "stats_worker": False}, "1"),
}


def _train(
    uri: str, settings: dict[str, bool], steps: int
) -> tuple[tg.Hook, dict[str, dict[int, np.ndarray]]]:
    """Train an MLP at lr 2 (its first update is large) and register a head before step `HEAD_AT`; return the
    hook and each parameter's values before every optimizer step (by name, by step)."""
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh())
    head = nn.Linear(16, 3)
    opt = torch.optim.SGD([*body.parameters(), *head.parameters()], lr=2.0)
    before: dict[str, dict[int, np.ndarray]] = {}
    g = torch.Generator().manual_seed(1)
    with tg.Hook(uri, save_interval=SAVE_INTERVAL, **settings) as hook:
        hook.register_module(body)
        hook.register_optimizer(opt)
        for step in range(steps):
            if step == HEAD_AT:
                hook.register_module(head)
            x, y = torch.randn(32, 8, generator=g), torch.randint(0, 3, (32,), generator=g)
            opt.zero_grad()
            nn.functional.cross_entropy(head(body(x)), y).backward()
            for module, prefix in ((body, ""), (head, "head.")):
                for name, p in module.named_parameters():
                    before.setdefault(prefix + name, {})[step] = p.detach().double().numpy().copy()
            opt.step()
            assert hook.wait_idle(), "the statistics worker keeps up: no saved step is skipped"
    assert hook.errors == [] and hook.skipped_steps == 0
    return hook, before


@pytest.mark.parametrize("path", list(PATHS))
def test_the_initial_record_holds_the_weights_before_the_first_update(
    path: str, file_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kind, settings, interpret = PATHS[path]
    if path == "kernel" and not c_kernel.AVAILABLE:
        pytest.skip("the C kernel is not built")
    if path == "multi":
        pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", interpret)
    hook, before = _train(file_uri, settings, steps=8)
    assert type(hook._paths.current) is kind
    run = trainguard.open_run(file_uri)
    tensors = {t.name: t for t in run.tensors()}
    records = {n: t for n, t in tensors.items() if t.collection == run_format.INITIAL_COLLECTION}
    # the head is registered without a prefix of its own: its parameters are `weight` and `bias`
    assert set(records) == {
        run_format.initial_name(n) for n in ("0.weight", "0.bias", "2.weight", "2.bias")
    } | {
        "init/weight",
        "init/bias",
    }
    for name, values in before.items():
        param = name.removeprefix("head.")
        at = (
            0 if name == param else HEAD_AT + (-HEAD_AT % SAVE_INTERVAL)
        )  # the first saved step it was captured
        record = run_format.initial_name(param)
        assert (
            records[record].shape == list(values[at].shape)
            and records[record].module == tensors[param].module
        )
        got = np.stack([run.series(record, col).values for col in run_format.STAT_COLUMNS], 1)
        assert run.series(record, "count").steps.tolist() == [at], "one record, at that step only"
        want = stats.tier0(values[at])
        assert np.isnan(got[0, UPDATE:]).all(), "no update history: update_l2 and distance_l2 are NaN"
        assert_columns_match(got[0, :UPDATE], want[:UPDATE], f"{record} at step {at}")
        after = run.series(param, "std")
        assert after.steps[0] == at and not np.isclose(
            after.values[0], want[run_format.COLUMN["std"]], rtol=1e-3
        ), "the parameter's own row at that step is taken after the update, which moved it"
    steps = run.series("0.weight", "l2").steps.tolist()
    assert steps == list(range(0, 8, SAVE_INTERVAL)), "every saved step is still written, once"
    ids = {t.id for t in records.values()}
    for seg in run.segments():
        if seg.steps.size and seg.steps.min() > HEAD_AT + 1:
            assert not ids & set(seg.tensor_ids.tolist()), "later steps carry no record"
