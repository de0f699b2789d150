"""How the forward pass uses a parameter, read from the catalogue and the gradients a run records: evidence for the weight rules.

A parameter's catalogue entry says what owns it (`module`, `module_type`) and its shape; its gradient record says
how the loss reached it. Six readings that the weight rules need so as not to judge design as a fault:

- `read_by_index`: a bare `nn.Parameter` (no `torch.nn` layer with dense kernels owns it) whose gradient at a
  view has whole rows' worth of exactly-zero elements, but not all of them, is a table read by index
  (`weight[idx]`, `F.embedding`: a tied or sampled-softmax output table), judged as an embedding. A dense
  kernel's gradient sums over the batch and has exact zeros only behind dead units or absent inputs; a layer's
  class says it is a kernel, a bare parameter has no class to say which, so only bare ones are read.
- `broadcast_token`: a bare parameter of three or more dimensions with a leading 1 ([1, 1, d], [1, n, d]) is
  shaped to broadcast over the batch: a learned query, a CLS token or a positional table, not a kernel. Read from
  the catalogue alone (shape, owner).
- `own_parameter`: a bare parameter whose owner's class the catalogue records (an `nn.Parameter` a module of the
  user's own declares: `SegmentLM.pos`, `GATLayer.att_src`, `LoRALinear.lora_a`) has no class to say what it is: a
  positional table added to the activations, a learned query, a gate vector, a low-rank factor or a hand-written
  kernel. Only a `torch.nn` layer's class says "kernel", so such a parameter is held to the widest init convention
  (an embedding's N(0, 1)), not to fan-based kernel targets. A capture that records no classes (`module_type`
  None) says nothing either way, and its parameters are read as the kernels they usually are.
- `GradientReach.skipped`: a parameter that had a gradient at an earlier view and has none recorded now was
  skipped by this step's forward pass (an expert the router sent no tokens, a branch not taken at these
  steps): conditional computation, not a layer left behind.
- `GradientReach.unused_last_block`: a parameter that never had a gradient, whose module ran (the catalogue
  gives it a forward `order`), in the last block of a repeated stack (`blocks.3.res.weight`) whose earlier
  blocks' same parameter and whose own block's other parameters all get one: the last block's output path
  that feeds nothing (a WaveNet's last residual projection: only its skip path reaches the output). Records
  cannot tell that design from an output dropped by mistake at that one place; the rules say so.
- `behind_dead_activation`: a parameter whose recorded gradient is exactly zero beside a ReLU activation
  whose outputs were all exactly zero at that view (the last one before its module in forward order, or the
  first at or after it) gets nothing from the loss because that activation died: `dead_relu` names the layer.

The others are read from recorded statistics only (`grad/<name>` rows: presence, `zero`, `count`); a run that records
no gradients gives none of them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from trainguard.api.enums import Collection
from trainguard.rules.step_view import COL, StepView, TensorMeta

GRAD_PREFIX = "grad/"
KERNEL_LAYERS = frozenset(
    {
        "Linear",
        "LazyLinear",
        "Bilinear",
        "MultiheadAttention",
        "NonDynamicallyQuantizableLinear",
        "RNN",
        "GRU",
        "LSTM",
        "RNNCell",
        "GRUCell",
        "LSTMCell",
    }
    | {
        f"{kind}{n}d"
        for kind in ("Conv", "ConvTranspose", "LazyConv", "LazyConvTranspose")
        for n in (1, 2, 3)
    }
)
"""`torch.nn` layer classes (the catalogue's `module_type`) whose weights are dense kernels: never read by index
(`NonDynamicallyQuantizableLinear` is the `Linear` subclass of `MultiheadAttention`'s output projection)."""


def bare(meta: TensorMeta) -> bool:
    """Whether a parameter belongs to no `torch.nn` layer with dense kernels: a bare `nn.Parameter` of the model or
    of a module of its own (`module_type` is then the module's own class)."""
    return meta.module is None or meta.module_type not in KERNEL_LAYERS


def read_by_index(view: StepView, meta: TensorMeta) -> bool:
    """Whether a weight is a table read by index: a `bare` parameter of two dimensions whose gradient at this
    view has at least one row's share of exactly-zero elements, and not all (an entirely zero gradient is a
    starved kernel's, not evidence of rows looked up)."""
    if not bare(meta) or len(meta.shape) != 2 or meta.shape[0] < 2:
        return False
    j = view.index(f"{GRAD_PREFIX}{meta.name}")
    if j is None:
        return False
    count, zero = float(view.stats[j, COL["count"]]), float(view.stats[j, COL["zero"]])
    if not count > 0:
        return False
    return 1.0 / meta.shape[0] <= zero / count < 1.0


def broadcast_token(meta: TensorMeta) -> bool:
    """Whether a weight is a token shaped to broadcast over the batch: a `bare` parameter of three or more
    dimensions whose leading one is 1 (a learned query or CLS token [1, 1, d], a positional table [1, n, d]). It is
    added to, or attended with, the activations, never the kernel of a matmul: it has no fan-in, and its init
    follows the token conventions (N(0, 1) as `nn.Embedding`'s, or N(0, 0.02)). A layer's kernel with one output
    channel (a `Conv1d(1, 1, k)`'s [1, 1, k]) has a class that says it is a kernel."""
    return bare(meta) and len(meta.shape) >= 3 and meta.shape[0] == 1


def own_parameter(meta: TensorMeta) -> bool:
    """Whether a weight is a `bare` parameter of a module whose class the catalogue records (`module_type` set, not
    a `torch.nn` layer with dense kernels): declared by a module of the user's own, whose role (table, token, gate,
    kernel) no class tells. Read from the catalogue alone."""
    return meta.module_type is not None and bare(meta)


ZERO_WHEN_INACTIVE = frozenset({"relu", "relu6"})
"""Activation kinds whose output is exactly zero where the unit is inactive (as `dead_relu` reads them)."""


def behind_dead_activation(view: StepView, names: Iterable[str]) -> set[str]:
    """Those of parameters `names` whose recorded gradient is exactly zero next to a dead ReLU activation (all its
    outputs exactly zero at this view): the last ReLU before the parameter's module in forward order, or the
    first at or after it. One pass over the view, and none when no ReLU is dead (the common case)."""
    acts = Collection.ACTIVATIONS.value
    relus = sorted(
        (m.order, k)
        for k, m in enumerate(view.meta)
        if m.collection == acts and m.activation in ZERO_WHEN_INACTIVE and m.order is not None
    )
    count, zero = view.stats[:, COL["count"]], view.stats[:, COL["zero"]]
    dead = {k for _, k in relus if count[k] > 0 and zero[k] == count[k]}
    if not dead:
        return set()
    row = {n: k for k, n in enumerate(view.names)}
    orders = [o for o, _ in relus]
    out: set[str] = set()
    for name in names:
        i, j = row.get(name), row.get(f"{GRAD_PREFIX}{name}")
        order = view.meta[i].order if i is not None else None
        if order is None or j is None or float(view.stats[j, COL["l2"]]) != 0.0:
            continue
        at = bisect.bisect_left(orders, order)
        near = [relus[x][1] for x in (at - 1, at) if 0 <= x < len(relus)]
        if any(k in dead for k in near):
            out.add(name)
    return out


class GradientReach:
    """Which parameters had a gradient at some view, and which have one at the latest view recording any."""

    def __init__(self) -> None:
        self.reached: set[str] = set()
        """Parameters that had a gradient recorded at some view."""
        self.now: set[str] = set()
        """Parameters with a gradient recorded at the latest view that records gradients."""

    def push(self, view: StepView) -> bool:
        """Read this view's gradient rows; False when it records none (then nothing changes)."""
        grads = Collection.GRADIENTS.value
        now = {
            n.removeprefix(GRAD_PREFIX)
            for n, m in zip(view.names, view.meta, strict=True)
            if n.startswith(GRAD_PREFIX) and m.collection == grads
        }
        if not now:
            return False
        self.now = now
        self.reached |= now
        return True

    def never_reached(self, name: str) -> bool:
        return name not in self.reached

    def skipped(self, name: str) -> bool:
        """Had a gradient at an earlier view, none at the latest: this step's forward pass did not use it."""
        return name in self.reached and name not in self.now

    def unused_last_block(self, view: StepView, name: str) -> str | None:
        """The stack (`blocks.0-3`) when parameter `name` never had a gradient, its module ran, and it sits in
        the last block of a repeated stack whose earlier blocks' same parameter and whose own block's other
        parameters all had one; else None."""
        i = view.index(name)
        if i is None or view.meta[i].order is None or name in self.reached:
            return None
        params = [m.name for m in view.meta if m.trainable and not m.name.startswith(GRAD_PREFIX)]
        parts = name.split(".")
        for k, part in enumerate(parts[:-1]):
            if not part.isdigit():
                continue
            head, tail = parts[:k], parts[k + 1 :]
            peers = {
                int(q[k]): n
                for n in params
                if (q := n.split(".")) and len(q) == len(parts) and q[:k] == head and q[k + 1 :] == tail
                and q[k].isdigit()
            }  # fmt: skip
            last = int(part)
            earlier = [n for j, n in peers.items() if j != last]
            if not earlier or max(peers) != last or not all(n in self.reached for n in earlier):
                continue
            block = ".".join(parts[: k + 1]) + "."
            if any(n.startswith(block) and n in self.reached for n in params):
                return f"{'.'.join([*head, ''])}{min(peers)}-{last}"
        return None

    def get_state(self) -> dict[str, Any]:
        return {"reached": sorted(self.reached), "grads_now": sorted(self.now)}

    def set_state(self, state: dict[str, Any]) -> None:
        self.reached = set(state.get("reached", []))
        self.now = set(state.get("grads_now", []))
