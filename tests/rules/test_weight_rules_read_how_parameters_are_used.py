"""The weight rules read how the forward pass uses a parameter from its gradient record (`parameter_use`).

On hand-made views: the last block of a repeated stack whose output path feeds nothing (a WaveNet's last
residual projection) and an expert the router skipped for a while are info-level notices of `unchanged_tensor`,
not warnings, while a whole block cut off, a slot no block's gradient reaches and a parameter with a gradient
that does not move still warn; a bare parameter whose gradient has rows' worth of exact zeros is a table read by
index, judged by `poor_weight_initialization` as an embedding, while the same init with a dense gradient (where the
capture records no module classes), or in a layer, is still reported; a bare parameter of a module of the user's own
is held to N(0, 1), an embedding's convention, not to a kernel's fan-based targets; a bare token shaped to broadcast
over the batch (a learned query [1, 1, d], a positional table [1, n, d]) and a bare positional table [n, d] added to
the activations, drawn from N(0, 1), are no kernels, while a bare kernel drawn far beyond N(0, 1) and a one-channel
convolution's kernel [1, 1, k] scaled up still are reported (real PyTorch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

import trainguard.torch as tg
from tests.rules.hooked import stored_views
from trainguard.api.enums import Severity
from trainguard.rules import shared
from trainguard.rules.base import Finding
from trainguard.rules.poor_weight_initialization import PoorWeightInitialization
from trainguard.rules.step_view import COL, COLUMNS, StepView, TensorMeta
from trainguard.rules.unchanged_tensor import UnchangedTensor

BLOCKS = [f"blocks.{b}.{m}.weight" for b in range(3) for m in ("conv", "res")]


def _stats(step: int, count: int, l2: list[float], update: list[float]) -> np.ndarray:
    """Statistic rows of square tensors of `count` elements with these norms and updates; each step's extremes
    differ (a new mini-batch's gradient, not the previous one rescaled)."""
    stats = np.zeros((len(l2), len(COLUMNS)))
    stats[:, COL["count"]] = count
    stats[:, COL["l2"]] = l2
    stats[:, COL["update_l2"]] = update
    stats[:, COL["std"]] = stats[:, COL["l2"]] / np.sqrt(count)
    stats[:, COL["min"]] = -stats[:, COL["l2"]] * (0.1 + 0.01 * step)
    stats[:, COL["max"]] = stats[:, COL["l2"]] * (0.2 - 0.001 * step)
    return stats


def _stack_view(step: int, *, still: set[str], no_grad: set[str]) -> StepView:
    """Three blocks of (conv, res) kernels [16, 16], each module run in forward order; `still` ones do not move,
    `no_grad` ones have no gradient recorded at this view."""
    names: list[str] = []
    meta: list[TensorMeta] = []
    values: list[tuple[float, float]] = []  # (l2, update_l2)
    for k, n in enumerate(BLOCKS):
        names.append(n)
        meta.append(TensorMeta(name=n, collection="weights", module=n.rsplit(".", 1)[0], module_type="Conv1d",
                               trainable=True, order=k, shape=(16, 16)))  # fmt: skip
        values.append((4.0, float("nan") if step == 0 else (0.0 if n in still else 0.1)))
        if n not in no_grad:
            names.append(f"grad/{n}")
            meta.append(TensorMeta(name=f"grad/{n}", collection="gradients", module=n.rsplit(".", 1)[0], order=k,
                                   shape=(16, 16)))  # fmt: skip
            values.append((0.01 * (1 + step % 7), float("nan")))
    stats = _stats(step, 256, [v[0] for v in values], [v[1] for v in values])
    return StepView(step=step, names=tuple(names), meta=tuple(meta), stats=stats, scalars={"loss": 1.0})


def _unchanged(views: list[StepView]) -> list[Finding]:
    rule = UnchangedTensor()
    return [f for v in views for f in rule.update(v)]


def test_the_last_blocks_unused_output_is_a_notice_once() -> None:
    last = {"blocks.2.res.weight"}
    found = _unchanged([_stack_view(10 * s, still=last, no_grad=last) for s in range(8)])
    assert [(f.step, f.tensor, f.severity) for f in found] == [(30, "blocks.2.res.weight", Severity.INFO)]
    assert "blocks.0-2" in found[0].message
    assert "the records cannot tell which" in found[0].message


def test_a_whole_last_block_cut_off_still_warns() -> None:
    # no parameter of the last block gets a gradient (its input detached): no sibling says its module is used
    block = {"blocks.2.conv.weight", "blocks.2.res.weight"}
    found = _unchanged([_stack_view(10 * s, still=block, no_grad=block) for s in range(4)])
    assert [(f.step, f.tensor, f.severity) for f in found] == [(30, "blocks.2.conv.weight", Severity.WARNING)]


def test_a_slot_no_block_feeds_forward_still_warns() -> None:
    # every block's res gets no gradient (a block class that drops that output): no earlier block says design
    res = {f"blocks.{b}.res.weight" for b in range(3)}
    found = _unchanged([_stack_view(10 * s, still=res, no_grad=res) for s in range(4)])
    assert [(f.tensor, f.severity) for f in found] == [("blocks.0.res.weight", Severity.WARNING)]


def test_a_parameter_the_forward_pass_skipped_after_using_it_is_a_notice() -> None:
    # an expert that had a gradient at the first views, then none: the router sent it no inputs
    expert = {"blocks.1.conv.weight"}
    views = [_stack_view(10 * s, still=set(), no_grad=set()) for s in range(2)]
    views += [_stack_view(10 * s, still=expert, no_grad=expert) for s in range(2, 8)]
    found = _unchanged(views)
    assert [(f.step, f.tensor, f.severity) for f in found] == [(40, "blocks.1.conv.weight", Severity.INFO)]
    assert "skipped its module" in found[0].message


def test_a_still_parameter_with_a_gradient_warns_beside_a_notice() -> None:
    # the last res block is design, but blocks.0.conv has a gradient and does not move: that one is named
    views = [
        _stack_view(
            10 * s, still={"blocks.2.res.weight", "blocks.0.conv.weight"}, no_grad={"blocks.2.res.weight"}
        )
        for s in range(4)
    ]
    found = _unchanged(views)
    assert [(f.step, f.tensor, f.severity) for f in found] == [(30, "blocks.0.conv.weight", Severity.WARNING)]


def _excitation_view(step: int, *, act_zero: float) -> StepView:
    """A squeeze-excitation bottleneck: `fc1` [3, 12], its ReLU `act` (a share `act_zero` of outputs exactly zero),
    `fc2` [12, 3] whose gradient is exactly zero and which does not move, beside a moving `conv`."""
    specs = [
        ("conv.weight", "weights", 0, 4.0, 0.1),
        ("grad/conv.weight", "gradients", 0, 0.01 * (1 + step % 7), float("nan")),
        ("fc1.weight", "weights", 1, 1.0, 0.1),
        ("grad/fc1.weight", "gradients", 1, 0.01 * (1 + step % 5), float("nan")),
        ("act/act", "activations", 2, 1.0, float("nan")),
        ("fc2.weight", "weights", 3, 2.0, float("nan") if step == 0 else 0.0),
        ("grad/fc2.weight", "gradients", 3, 0.0, float("nan")),
    ]
    names = tuple(n for n, *_ in specs)
    meta = tuple(
        TensorMeta(name=n, collection=c, module=n.split("/")[-1].split(".")[0], trainable=c == "weights",
                   module_type="Linear" if c == "weights" else None, activation="relu" if c == "activations" else None,
                   order=o, shape=(12, 3))
        for n, c, o, *_ in specs
    )  # fmt: skip
    stats = _stats(step, 36, [x[3] for x in specs], [x[4] for x in specs])
    stats[4, COL["zero"]] = act_zero * 36
    return StepView(step=step, names=names, meta=meta, stats=stats, scalars={"loss": 1.0})


def test_a_zero_gradient_behind_a_dead_relu_is_left_to_dead_relu() -> None:
    assert _unchanged([_excitation_view(10 * s, act_zero=1.0) for s in range(6)]) == []


def test_a_zero_gradient_beside_a_live_relu_still_warns() -> None:
    # the ReLU fires (half its outputs non-zero), yet fc2 gets an exactly zero gradient and stands still
    found = _unchanged([_excitation_view(10 * s, act_zero=0.5) for s in range(4)])
    assert [(f.step, f.tensor, f.severity) for f in found] == [(30, "fc2.weight", Severity.WARNING)]


def _table_view(
    *, zero_share: float, module: str | None, owner: str | None = None, std: float = 1.0
) -> StepView:
    """Step 0 of a [200, 48] weight drawn from N(0, `std`), bare (`module` None: of the model's class `owner`, None
    for a capture that records no module classes) or in a layer, with its gradient's share of exactly-zero elements."""
    name = "out_weight" if module is None else f"{module}.weight"
    names = (name, f"grad/{name}")
    meta = (
        TensorMeta(name=name, collection="weights", module=module, module_type="Linear" if module else owner,
                   trainable=True, order=0, shape=(200, 48)),
        TensorMeta(name=f"grad/{name}", collection="gradients", module=module, order=0, shape=(200, 48)),
    )  # fmt: skip
    stats = np.zeros((2, len(COLUMNS)))
    stats[:, COL["count"]] = 200 * 48
    stats[:, COL["std"]] = [std, 0.001]
    stats[:, COL["l2"]] = [98.0, 0.5]
    stats[1, COL["zero"]] = round(zero_share * 200) * 48
    return StepView(step=0, names=names, meta=meta, stats=stats)


def _init_findings(view: StepView) -> list[Finding]:
    return PoorWeightInitialization().update(view)


def test_a_bare_table_read_by_index_is_judged_as_an_embedding() -> None:
    # a sampled softmax looked up 160 of its 200 rows: 20% of the gradient is exactly zero
    assert _init_findings(_table_view(zero_share=0.2, module=None)) == []


def test_a_bare_parameter_with_a_dense_gradient_is_still_a_kernel() -> None:
    found = _init_findings(_table_view(zero_share=0.0, module=None))
    assert [f.tensor for f in found] == ["out_weight"]


def test_an_all_zero_gradient_is_no_evidence_of_a_table() -> None:
    found = _init_findings(_table_view(zero_share=1.0, module=None))
    assert [f.tensor for f in found] == ["out_weight"]


def test_a_bare_parameter_of_a_module_of_its_own_is_held_to_an_embeddings_convention() -> None:
    # dense gradient, 3.5x the largest fan-based target: a positional table added to the activations looks the same
    assert _init_findings(_table_view(zero_share=0.0, module=None, owner="Recommender")) == []
    found = _init_findings(_table_view(zero_share=0.0, module=None, owner="Recommender", std=3.0))
    assert [f.tensor for f in found] == ["out_weight"]
    assert "3x the largest init convention 1 (N(0, 1), as an embedding's" in found[0].message
    assert "for a parameter of Recommender's own of shape [200, 48]" in found[0].message


def test_a_layers_kernel_with_zero_gradient_rows_is_still_a_kernel() -> None:
    # zero rows in a Linear's gradient come from dead units, not look-ups: its class says it is a kernel
    found = _init_findings(_table_view(zero_share=0.2, module="proj"))
    assert [f.tensor for f in found] == ["proj.weight"]


class Stack(nn.Module):
    """Residual blocks whose skip outputs are summed into the head, the output table tied to the input embedding
    as a bare parameter of the model drawn from N(0, `scale`^2), read by index for a sampled softmax (as a
    GRU4Rec-style recommender)."""

    def __init__(self, items: int = 64, d: int = 16, scale: float = 1.0) -> None:
        super().__init__()
        self.out_weight = nn.Parameter(
            scale * torch.randn(items, d)
        )  # registered first: the tied table's name
        self.emb = nn.Embedding(items, d)
        self.emb.weight = self.out_weight
        self.blocks = nn.ModuleList(
            nn.ModuleDict({"conv": nn.Linear(d, d), "res": nn.Linear(d, d), "skip": nn.Linear(d, d)})
            for _ in range(3)
        )

    def forward(self, ids: torch.Tensor, *, detach: bool) -> torch.Tensor:
        x, skips = self.emb(ids), 0
        for block in self.blocks:
            z = torch.tanh(block["conv"](x))
            x, skips = x + block["res"](z), skips + block["skip"](z)  # the last block's x feeds nothing
        return skips.detach() if detach else skips


def _real_findings(tmp_path: Path, *, fault: str | None) -> dict[str, list[Finding]]:
    """60 steps saved every 10th; `fault`: "detached" (the head reads the blocks' output detached) or "dense"
    (the table, drawn from N(0, 16), 4x an embedding's N(0, 1), scored against every item, as a kernel is read)."""
    torch.manual_seed(0)
    model = Stack(scale=4.0 if fault == "dense" else 1.0)
    head = nn.Linear(16, 16)
    opt = torch.optim.Adam([*model.parameters(), *head.parameters()], lr=1e-2)
    with tg.Hook(f"file://{tmp_path}", save_interval=10) as hook:
        hook.register_module(nn.ModuleDict({"model": model, "head": head}))
        hook.register_optimizer(opt)
        for _ in range(60):
            ids, target = torch.randint(0, 64, (32,)), torch.randint(0, 64, (32,))
            h = head(model(ids, detach=fault == "detached"))
            cand = (
                torch.arange(64)
                if fault == "dense"
                else torch.cat([target, torch.randint(0, 64, (8,))]).unique()
            )
            loss = F.cross_entropy(h @ model.out_weight[cand].T, torch.searchsorted(cand, target))
            opt.zero_grad()
            loss.backward()
            opt.step()
            hook.record_scalar("loss", loss)
    views = stored_views(tmp_path)
    rules = {"unchanged_tensor": UnchangedTensor(), "poor_weight_initialization": PoorWeightInitialization()}
    return {name: [f for v in views for f in rule.update(v)] for name, rule in rules.items()}


def test_real_pytorch_a_stacks_unused_last_output_and_a_tied_table_read_by_index_warn_of_nothing(
    tmp_path: Path,
) -> None:
    found = _real_findings(tmp_path, fault=None)
    assert found["poor_weight_initialization"] == []
    assert [(f.tensor, f.severity) for f in found["unchanged_tensor"]] == [
        ("model.blocks.2.res.weight", Severity.INFO)
    ]


def test_real_pytorch_a_detached_stack_and_a_table_read_densely_still_warn(tmp_path: Path) -> None:
    found = _real_findings(tmp_path / "detached", fault="detached")
    assert [(f.tensor, f.severity) for f in found["unchanged_tensor"]][:1] == [
        ("model.blocks.0.conv.weight", Severity.WARNING)
    ]
    found = _real_findings(tmp_path / "dense", fault="dense")
    assert [f.tensor for f in found["poor_weight_initialization"]] == ["model.out_weight"]


class TokenPool(nn.Module):
    """Attention pooling of a set: a learned query [1, 1, 16] and a positional table [1, 8, 16], both bare and drawn
    from N(0, 1) as token conventions have it; `fault` "table" adds a bare positional table [8, 16] drawn from
    N(0, 1) to the embeddings (3.5x a [8, 16] kernel's largest fan-based target), "bare_kernel" a bare [16, 16]
    kernel drawn from N(0, 16) (16x that target, 4x N(0, 1)), "conv" a one-channel `Conv1d(1, 1, 16)` whose kernel
    is scaled 20x."""

    def __init__(self, fault: str | None) -> None:
        super().__init__()
        self.query = nn.Parameter(torch.randn(1, 1, 16))
        self.pos = nn.Parameter(torch.randn(1, 8, 16))
        self.embed = nn.Linear(4, 16)
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
        self.head = nn.Linear(16, 3)
        self.table = nn.Parameter(torch.randn(8, 16)) if fault == "table" else None
        self.mix = nn.Parameter(4.0 * torch.randn(16, 16)) if fault == "bare_kernel" else None
        self.conv = nn.Conv1d(1, 1, 16) if fault == "conv" else None
        if self.conv is not None:
            with torch.no_grad():
                self.conv.weight.mul_(20.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = self.embed(x) + self.pos
        if self.table is not None:
            e = e + self.table
        pooled = self.attn(self.query.expand(len(x), -1, -1), e, e)[0][:, 0]
        if self.mix is not None:
            pooled = pooled @ self.mix
        if self.conv is not None:
            pooled = pooled + self.conv(pooled[:, None, :])[:, 0]
        return self.head(pooled)


def _token_views(tmp_path: Path, fault: str | None) -> list[StepView]:
    torch.manual_seed(0)
    model = TokenPool(fault)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with tg.Hook(f"file://{tmp_path}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(10):
            x, y = torch.randn(16, 8, 4), torch.randint(0, 3, (16,))
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            hook.record_scalar("loss", loss)
    return stored_views(tmp_path)


def _token_init_findings(tmp_path: Path, fault: str | None) -> list[str]:
    rule = PoorWeightInitialization()
    return [str(f.tensor) for v in _token_views(tmp_path, fault) for f in rule.update(v)]


def test_real_pytorch_a_learned_query_and_positional_table_from_randn_are_tokens_not_kernels(
    tmp_path: Path,
) -> None:
    assert _token_init_findings(tmp_path / "tokens", None) == []
    assert _token_init_findings(tmp_path / "table", "table") == []


def test_real_pytorch_a_bare_kernel_and_a_one_channel_conv_drawn_too_large_are_still_reported(
    tmp_path: Path,
) -> None:
    assert _token_init_findings(tmp_path / "bare", "bare_kernel") == ["mix"]
    assert _token_init_findings(tmp_path / "conv", "conv") == ["conv.weight"]


def test_real_pytorch_a_learned_query_is_not_the_first_kernel_of_the_gradient_ratio(tmp_path: Path) -> None:
    # first in forward order, 16 elements of gradient: as the first kernel, vanishing_gradient read the
    # first/last ratio of a query against the head
    view = _token_views(tmp_path, None)[0]  # step 0: the saved step with gradients
    grads = np.asarray([i for i, n in enumerate(view.names) if n.startswith("grad/")])
    pair = shared.KernelPair()(view, grads)
    assert pair is not None
    assert (view.names[pair[0]], view.names[pair[1]]) == ("grad/embed.weight", "grad/head.weight")
