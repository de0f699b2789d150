"""CPU proxies of the hook's cost on a GPU: a GPT-like model and the hook run on fake CUDA tensors.

No GPU here, so what makes the hook cheap on one is asserted from what it asks the device to do.
The model and the hook run under `FakeTensorMode` with `cuda` tensors (ops are dispatched and
shapes computed, nothing runs: a host read of a device value raises); a `TorchDispatchMode`
inside it records every op. A hooked model's steps are compared with a plain one's, and from the
third saved step on the ops the hook adds per saved step are counted: few, not growing with depth, no
host reads, one non-blocking device-to-host copy of a few KiB, no fresh allocation of 1 MiB or
more, and nothing on steps that are not saved, though every step records its loss (it waits on the device
for the saved step's one copy). (The autograd engine wants a CUDA context even for
fake tensors, so gradients are made directly instead of by a backward pass; the hook only reads
them.) The transfer's pinned buffers and CUDA events need
a GPU: the hook gets the CUDA staging (`PinnedStaging.copy`, the copy itself) with plain buffers
and markers the test completes. What these proxies do not show (kernel time, the overlap) is for
`benchmarks/gpu_checks.sh` on a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

import trainguard
import trainguard.torch as tg
from trainguard.capture.torch import _multi_path, _recording, device_stats
from trainguard.capture.torch._multi_path import MultiPath
from trainguard.capture.torch._transfer import Marker, PinnedStaging, Transfer

aten = torch.ops.aten
NOT_WORK = {
    aten.detach.default,
    aten.lift_fresh.default,
    aten.lift_fresh_copy.default,
    torch.ops.prim.device.default,
}
"""Ops that launch nothing (besides views)."""
HOST_READS = {
    aten._local_scalar_dense.default,
    aten.item.default,
    aten.nonzero.default,
    aten.equal.default,
    aten.is_nonzero.default,
    aten.bincount.default,
}
"""Ops that read a device value on the host: each one a synchronisation on a GPU."""
MIB = 1 << 20
SAVE_INTERVAL = 3
CYCLES = 2
"""Saved steps measured, after two that set things up (history copies, buffers)."""


@dataclass
class Op:
    name: str
    d2h_bytes: int = 0
    non_blocking: bool = False
    fresh_bytes: int = 0


class Recorder(TorchDispatchMode):
    """Records every op that does work (not views, not detach) while `ops` is a list."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[Op] | None = None

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.ops is not None and not func.is_view and func not in NOT_WORK:
            self.ops.append(_describe(func, args, kwargs, out))
        return out


def _describe(func: Any, args: Any, kwargs: Any, out: Any) -> Op:
    op = Op(str(func))
    if func in (aten.copy_.default, aten._to_copy.default):
        src = args[1] if func is aten.copy_.default else args[0]
        dst_cpu = (
            args[0].device.type if func is aten.copy_.default else str(kwargs.get("device", ""))
        ) == "cpu"
        if src.device.type == "cuda" and dst_cpu:
            op.d2h_bytes = src.numel() * src.element_size()
            op.non_blocking = bool(kwargs.get("non_blocking", args[2] if len(args) > 2 else False))
    writes = any(a.alias_info is not None and a.alias_info.is_write for a in func._schema.arguments)
    if not writes:  # a functional op: its outputs are new tensors
        outs = out if isinstance(out, (list, tuple)) else [out]
        op.fresh_bytes = max(
            (t.numel() * t.element_size() for t in outs if isinstance(t, torch.Tensor)), default=0
        )
    return op


class FakeMarker:
    """A copy the test declares done (a GPU that keeps up) or not (one that falls behind)."""

    def __init__(self, done: list[bool]) -> None:
        self._done = done

    def query(self) -> bool:
        return self._done[0]

    def synchronize(self) -> None:
        self._done[0] = True


class FakeCudaStaging(PinnedStaging):
    """The CUDA staging with what needs a GPU swapped out: plain buffers, test-driven markers, zeros read back."""

    pin_memory = False

    def __init__(self, done: list[bool]) -> None:
        self.done = done

    def record(self, device: torch.device) -> Marker:
        return FakeMarker(self.done)

    def read(self, host: torch.Tensor) -> np.ndarray:
        return np.zeros(host.numel())


class Block(nn.Module):
    """A pre-norm GPT block (attention in plain ops: no fused kernel to pick on a fake device)."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.up, self.act, self.down = nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        b, s, w = h.shape
        q, k, v = self.qkv(self.ln1(h)).view(b, s, 3, self.heads, w // self.heads).unbind(2)
        att = torch.einsum("bshd,bthd->bhst", q, k) / math.sqrt(w // self.heads)
        mask = torch.ones(s, s, dtype=torch.bool, device=h.device).tril()
        att = att.masked_fill(~mask, -torch.inf).softmax(-1)
        h = h + self.proj(torch.einsum("bhst,bthd->bshd", att, v).reshape(b, s, w))
        return h + self.down(self.act(self.up(self.ln2(h))))


class GPT(nn.Module):
    def __init__(self, layers: int, *, width: int = 768, vocab: int = 16384, seq: int = 512) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(seq, width))
        self.blocks = nn.Sequential(*[Block(width, width // 64) for _ in range(layers)])
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.blocks(self.emb(tokens) + self.pos[: tokens.shape[1]])))


class PatchGPT(GPT):
    """The GPT fed float patch embeddings instead of token ids (a vision transformer's input): its input is
    read like an activation, where token ids are not read at all."""

    def forward(self, patches: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return self.head(self.norm(self.blocks(patches + self.pos[: patches.shape[1]])))


@dataclass
class Measured:
    per_saved_step: list[list[Op]] = field(default_factory=list)
    """Ops the hook added in each measured cycle of SAVE_INTERVAL steps (its saved step, then the others)."""
    not_saved_extra: list[int] = field(default_factory=list)
    """Ops the hook added in each step of a cycle that is neither saved nor right after a saved one."""
    hook: tg.Hook | None = None
    activations: int = 0


def _ops_of(
    model: nn.Module,
    opt: torch.optim.Optimizer,
    rec: Recorder,
    tokens: torch.Tensor,
    hook: tg.Hook | None,
    patches: torch.Tensor | None = None,
) -> list[Op]:
    rec.ops = []
    opt.zero_grad(set_to_none=True)
    logits = model(tokens[:, :-1] if patches is None else patches)
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
    # the autograd engine needs a CUDA context even for fake tensors: gradients are made directly (new ones
    # each step, as after zero_grad(set_to_none=True)); the hook only reads them
    for p in model.parameters():
        p.grad = torch.empty_like(p)
    opt.step()
    if hook is not None:
        hook.record_scalar("loss", loss)
    ops, rec.ops = rec.ops, None
    return ops


def _added(hooked: list[Op], plain: list[Op]) -> list[Op]:
    """The hooked step's ops that the plain step does not have (by name and count)."""
    left: dict[str, int] = {}
    for op in plain:
        left[op.name] = left.get(op.name, 0) + 1
    extra = []
    for op in hooked:
        if left.get(op.name, 0):
            left[op.name] -= 1
        else:
            extra.append(op)
    assert not any(left.values()), f"the hooked step lacks ops of the plain one: {left}"
    return extra


@contextmanager
def fake_cuda() -> Iterator[Recorder]:
    with FakeTensorMode(allow_non_fake_inputs=False), Recorder() as rec:
        yield rec


def measure(
    tmp_path: Path,
    layers: int,
    *,
    done: bool = True,
    cycles: int = CYCLES,
    patches: bool = False,
    tier1_interval: int = 1000,
    **settings: Any,
) -> Measured:
    """Train a hooked GPT of `layers` blocks on fake CUDA tensors (fed float patches: `PatchGPT`); count what the
    hook adds to a plain one's step."""
    out = Measured()
    flag = [done]
    with fake_cuda() as rec:
        models = []
        for _ in range(2):
            with torch.device("cuda"):
                model = (PatchGPT if patches else GPT)(layers)
            models.append((model, torch.optim.SGD(model.parameters(), lr=0.01)))
        hook = out.hook = tg.Hook(
            f"file://{tmp_path}/run-{layers}",
            save_interval=SAVE_INTERVAL,
            tier1_interval=tier1_interval,  # by default the measured steps are Tier 0
            transfer=Transfer(staging=lambda device: FakeCudaStaging(flag)),
            **settings,
        )
        hook.register_module(models[0][0])
        hook.register_optimizer(models[0][1])
        out.activations = sum(isinstance(m, nn.GELU) for m in models[0][0].modules())
        tokens = torch.randint(0, 16384, (8, 513), device="cuda")
        x = torch.randn(8, 512, 768, device="cuda") if patches else None
        plain = _ops_of(*models[1], rec, tokens, None, x)  # every plain step does the same
        for step in range(SAVE_INTERVAL * (2 + cycles)):
            hooked = _ops_of(*models[0], rec, tokens, hook, x)
            if step < 2 * SAVE_INTERVAL:
                continue
            extra = _added(hooked, plain)
            if step % SAVE_INTERVAL == 0:
                out.per_saved_step.append(extra)
            else:
                out.per_saved_step[-1] += extra
                if step % SAVE_INTERVAL > 1:
                    out.not_saved_extra.append(len(extra))
        hook.close()
    return out


@pytest.fixture(scope="module", params=["exact", "sampled"])
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[int, Measured]:
    """Both history modes: exact (full copies, refreshed inside `multi_stats`) and sampled (history bound 0:
    fixed samples, `_sampled.SampledHistory`)."""
    tmp = tmp_path_factory.mktemp(f"proxies-{request.param}")
    settings = {"history_max_fraction": 0.0} if request.param == "sampled" else {}
    runs = {layers: measure(tmp, layers, **settings) for layers in (2, 6)}
    for m in runs.values():
        assert m.hook is not None
        assert _sampled_tensors(m) == (len(m.hook._plan.params) if settings else 0)
    return runs


def _sampled_tensors(m: Measured) -> int:
    """Parameters whose history is sampled (one group here: one device, one dtype)."""
    assert m.hook is not None
    return sum(p.sampled for p in m.hook._plan.params)


def _group_ops(ops: list[Op], m: Measured) -> list[Op]:
    """The ops of a saved step; with sampled history, one gather for the group (`multi_sample_diff`, with the
    differences), none per tensor (a `torch.take` per parameter took 1.2 ms of a 0.94B GPT's saved step on an H200,
    in 198 launches)."""
    names = [op.name for op in ops]
    assert str(aten.take.out) not in names and str(aten.take.default) not in names, names
    assert names.count("trainguard.multi_sample_diff.default") == (1 if _sampled_tensors(m) else 0), names
    return ops


def test_the_gpu_path_is_the_multi_tensor_one_and_captures_without_error(runs: dict[int, Measured]) -> None:
    for m in runs.values():
        assert m.hook is not None and m.hook.errors == [] and m.hook.skipped_steps == 0
        assert isinstance(m.hook._paths.current, MultiPath)


def test_a_saved_step_adds_few_ops_and_as_many_at_any_depth(runs: dict[int, Measured]) -> None:
    # sampled history adds a fixed handful of ops per group, its gather one of them (`_group_ops`)
    for m in runs.values():
        counts = {len(_group_ops(ops, m)) for ops in m.per_saved_step}
        assert len(counts) == 1, f"the ops per saved step vary: {counts}"
        assert counts.pop() <= 24 + 2 * m.activations, [op.name for op in m.per_saved_step[0]]
    grows = len(_group_ops(runs[6].per_saved_step[0], runs[6])) - len(
        _group_ops(runs[2].per_saved_step[0], runs[2])
    )
    # the activations of a Tier-0 step are read in one op per group when the forward returns: no op per block
    assert grows == 0, [
        (layers, [op.name for op in _group_ops(m.per_saved_step[0], m)]) for layers, m in runs.items()
    ]


def test_activations_over_the_holding_bound_are_read_in_their_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # with room for no byte, each activation is reduced where its hook kept it: one op per activation again
    monkeypatch.setattr(_multi_path, "DEFER_MAX_BYTES", 1)
    runs = {layers: measure(tmp_path / str(layers), layers, cycles=1) for layers in (2, 6)}
    for m in runs.values():
        assert m.hook is not None and m.hook.errors == []
    names = {layers: [op.name for op in m.per_saved_step[0]] for layers, m in runs.items()}
    added = runs[6].activations - runs[2].activations
    assert (
        names[6].count("trainguard.multi_stats.default") - names[2].count("trainguard.multi_stats.default")
        == added
    ), names


def test_sampled_history_sums_its_group_without_segment_reduce(runs: dict[int, Measured]) -> None:
    # PyTorch's CUDA segment_reduce sums each segment in one thread (54 ms a step for a 0.94B GPT's samples on
    # an H200): on CUDA the group's weighted squared differences go through `multi_stats` instead
    for m in runs.values():
        for ops in m.per_saved_step:
            names = [op.name for op in ops]
            assert not [n for n in names if "segment_reduce" in n], names
            assert "trainguard.multi_stats.default" in names


TIER1_OPS_PER_ACTIVATION = 10
"""A Tier-1 saved step's ops per captured activation: its `multi_stats` and `multi_hist` ops with the histograms'
buffer, the histogram fix-up (`fix_bins`: four in-place ops on the bins) and the per-unit vector's three (flags,
their count per unit, the division). The parameters' histograms and "moved" shares are one op per group
(`multi_hist`, `multi_moved`), whatever their number."""


def test_a_tier1_step_adds_ops_per_activation_and_none_per_parameter(tmp_path: Path) -> None:
    runs = {layers: measure(tmp_path, layers, cycles=1, tier1_interval=1) for layers in (2, 6)}
    for m in runs.values():
        assert m.hook is not None and m.hook.errors == []
        assert m.hook._plan.tier1(SAVE_INTERVAL * 2)  # the measured saved step is a Tier-1 one
        names = [op.name for op in m.per_saved_step[0]]
        assert names.count("trainguard.multi_moved.default") == 1, names  # one group of tracked parameters
        assert "aten.ne.Tensor" not in names  # no per-parameter comparison left
    grows = len(runs[6].per_saved_step[0]) - len(runs[2].per_saved_step[0])
    added = runs[6].activations - runs[2].activations  # 4 blocks: 48 more parameters, 4 more activations
    assert grows <= TIER1_OPS_PER_ACTIVATION * added, grows


def test_a_float_input_is_read_in_the_activations_op_and_token_ids_never(
    runs: dict[int, Measured], tmp_path: Path
) -> None:
    for m in runs.values():
        assert m.hook is not None and m.hook._inputs is not None
        assert m.hook._inputs._tids == {"input/tokens": None}  # token ids: named with the reason, never read
    settings = {"history_max_fraction": 0.0} if _sampled_tensors(runs[2]) else {}
    floats = measure(tmp_path, 2, patches=True, **settings)
    assert floats.hook is not None and floats.hook.errors == [] and floats.hook._inputs is not None
    assert (
        list(floats.hook._inputs._tids) == ["input/patches"]
        and None not in floats.hook._inputs._tids.values()
    )
    # kept with the activations of its dtype until the forward returns: read in their one op, no op of its own
    plain = len(_group_ops(runs[2].per_saved_step[0], runs[2]))
    assert {len(_group_ops(ops, floats)) for ops in floats.per_saved_step} == {plain}
    run = trainguard.open_run(floats.hook.config.out if floats.hook.config else "")
    assert list(run.series("input/patches", "count").steps) == list(
        range(0, SAVE_INTERVAL * (2 + CYCLES), SAVE_INTERVAL)
    )


def test_a_step_that_is_not_saved_adds_no_op(runs: dict[int, Measured]) -> None:
    for m in runs.values():
        assert m.not_saved_extra and set(m.not_saved_extra) == {0}


def test_no_host_read_and_one_small_non_blocking_copy_per_saved_step(runs: dict[int, Measured]) -> None:
    for m in runs.values():
        assert m.hook is not None
        tensors = (
            len(m.hook._plan.params) * 2 + m.activations + 1
        )  # weights, gradients, activations, the loss
        for ops in m.per_saved_step:
            assert not [op.name for op in ops if op.name in {str(f) for f in HOST_READS}]
            copies = [op for op in ops if op.d2h_bytes]
            assert len(copies) == 1 and copies[0].non_blocking
            assert copies[0].d2h_bytes <= 8 * len(device_stats.RAW_COLUMNS) * tensors + 4096


def test_the_loss_of_every_step_rides_in_the_saved_steps_copy(runs: dict[int, Measured]) -> None:
    # every step records its loss; the steps that are not saved added no op (above), and each cycle of
    # SAVE_INTERVAL steps made one copy: the held losses left with their saved step's results
    for layers, m in runs.items():
        assert m.hook is not None
        run = trainguard.open_run(m.hook.config.out if m.hook.config else "")
        assert list(run.scalars("loss").steps) == list(range(SAVE_INTERVAL * (2 + CYCLES))), layers


def test_held_scalars_beyond_the_bound_leave_early_without_waiting_or_are_dropped_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_recording, "MAX_HELD_SCALARS", 4)
    flag = [False]  # the device never catches up: no copy completes until close
    with fake_cuda() as rec:
        with torch.device("cuda"):
            model = nn.Linear(8, 8)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        hook = tg.Hook(
            f"file://{tmp_path}/run",
            save_interval=1000,
            transfer=Transfer(staging=lambda device: FakeCudaStaging(flag)),
        )
        hook.register_module(model)
        hook.register_optimizer(opt)
        x = torch.randn(4, 8, device="cuda")
        rec.ops = []
        for _ in range(4):
            loss = model(x).square().mean()
            for p in model.parameters():
                p.grad = torch.empty_like(p)
            opt.step()
            for name in ("loss", "a", "b", "c", "d"):
                hook.record_scalar(name, loss)
        ops, rec.ops = rec.ops, None
        hook.close()
    assert not [op.name for op in ops if op.name in {str(f) for f in HOST_READS}]
    copies = [op for op in ops if op.d2h_bytes]
    # step 0's results, then two early copies of 4 held scalars fill the three buffers; the rest is dropped
    assert len(copies) == 3 and all(op.non_blocking for op in copies)
    end = trainguard.open_run(f"file://{tmp_path}/run").ended()
    assert (
        end is not None and end.dropped_scalars == 20 - 5 - 2 * 4 - 3
    )  # 20 recorded: 5 with step 0, 3 held at close
    assert hook.errors == []


def test_a_saved_step_allocates_nothing_large(runs: dict[int, Measured]) -> None:
    for m in runs.values():
        for ops in m.per_saved_step:
            assert not [(op.name, op.fresh_bytes) for op in ops if op.fresh_bytes >= MIB]


def test_with_every_host_buffer_in_flight_saved_steps_are_skipped_and_counted(tmp_path: Path) -> None:
    m = measure(tmp_path, 2, done=False, cycles=3)  # the device never catches up
    assert m.hook is not None and m.hook.errors == []
    # two set-up saved steps and the first measured one fill the three buffers; the others are skipped
    assert m.hook.skipped_steps == 2
    assert [len(ops) for ops in m.per_saved_step[1:]] == [0, 0]
    # close waited for the three in flight and wrote them; the skipped steps' losses still rode along
    run = trainguard.open_run(f"file://{tmp_path}/run-2")
    assert list(run.series("blocks.0.up.weight", "count").steps) == [0, 3, 6]
    assert list(run.scalars("loss").steps) == list(range(SAVE_INTERVAL * 5))
