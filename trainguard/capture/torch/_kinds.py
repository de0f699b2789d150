"""Which tensors the hook can read, and how: the one place every capture path asks.

A captured parameter, gradient or activation may be anything PyTorch allows. This module
turns each into the tensor this rank holds (`local`: a DTensor's local shard, as FSDP2 and
tensor parallelism give them; any other tensor itself), says why the hook does not read one
(`unreadable`: tensor subclasses other than DTensor, sparse, quantized, complex, meta, not
floating point; the reason goes into its catalogue entry as `skipped`), and describes the part
of the full tensor a shard is (`shard_info`), so that the store layer can merge the ranks'
rows (`trainguard.store.shards`). What may be read in place by the C kernel is decided by
`c_kernel.usable`, which is stricter (a dense contiguous float32 CPU tensor inside its storage);
everything readable here that the kernel does not take goes the torch way, which reads any
strided layout (non-contiguous or offset views included) of any floating dtype, converting it
to float32 (float8 included). The hook makes no collective call: a rank knows its own
coordinates in the device mesh and nothing else.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import torch
from torch import nn

from trainguard.store import run_format

if TYPE_CHECKING:
    from torch.distributed.tensor import DTensor

_PLAIN = (torch.Tensor, nn.Parameter)
"""Tensor types read as they are (a Parameter of a plain tensor has type Parameter)."""

_DTENSOR_MODULE = "torch.distributed.tensor"
"""Where DTensor lives: while it is not imported, no tensor can be one (so checking costs nothing then)."""

_WRAPPER_NAMES = ("_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module")
"""Module attributes that wrappers (torch.compile, FSDP1, activation checkpointing) put between a model and its
modules: dropped from captured names, so a wrapped model's tensors are named as the bare model's."""


_FAKE_MODULE = "torch._subclasses.fake_tensor"
"""Where FakeTensor lives: a fake tensor stands in for a plain one (FakeTensorMode: tracing, and the CPU proxies
of the hook's cost on fake CUDA tensors), so it is read as one."""


def is_fake(t: torch.Tensor) -> bool:
    mod = sys.modules.get(_FAKE_MODULE)
    cls = getattr(mod, "FakeTensor", None) if mod is not None else None
    return cls is not None and isinstance(t, cls)


def dtensor_type() -> type[DTensor] | None:
    """The DTensor class, if some code has imported it (else no tensor is a DTensor)."""
    mod = sys.modules.get(_DTENSOR_MODULE)
    return getattr(mod, "DTensor", None) if mod is not None else None


def is_dtensor(t: torch.Tensor) -> bool:
    cls = dtensor_type()
    return cls is not None and isinstance(t, cls)


def local(t: torch.Tensor) -> torch.Tensor:
    """The tensor this rank holds of `t`: a DTensor's local shard (no copy, no communication), else `t`."""
    if type(t) in _PLAIN:
        return t
    cls = dtensor_type()
    if cls is not None and isinstance(t, cls):
        return t._local_tensor
    return t


def unreadable(t: torch.Tensor) -> str | None:
    """Why the hook does not read `t`, or None when it does (DTensors are read through their local shard)."""
    if is_dtensor(t):
        partial = [str(p) for p in t.placements if p.is_partial()]  # type: ignore[attr-defined]
        if partial:
            return f"DTensor with a {partial[0]} placement: each rank holds partial sums, not values of the tensor"
        t = local(t)
    if getattr(t, "_is_flat_param", False):  # a plain Parameter marked by FSDP1 (its FlatParameter class)
        return (
            "an FSDP1 flat parameter (use_orig_params=False): the model's parameters are concatenated in it; "
            "wrap with use_orig_params=True to have each one read"
        )
    if type(t) not in _PLAIN and not is_fake(t):
        return (
            f"tensor subclass {type(t).__module__}.{type(t).__qualname__}: its values are not read through it"
        )
    if t.layout is not torch.strided:
        return f"{str(t.layout).removeprefix('torch.')} layout: only dense (strided) tensors are read"
    if t.is_quantized:
        return f"quantized ({str(t.dtype).removeprefix('torch.')}): its integer representation is not read"
    if t.device.type == "meta":
        return "on the meta device: it holds no values"
    if t.is_complex():
        return (
            f"complex dtype ({str(t.dtype).removeprefix('torch.')}): statistics are defined for real values"
        )
    if not t.is_floating_point():
        return f"{str(t.dtype).removeprefix('torch.')} is not a floating-point dtype"
    if not in_storage(t):
        return "its storage is smaller than its elements need (freed, as FSDP frees unsharded parameters)"
    return None


def in_storage(t: torch.Tensor) -> bool:
    """Whether a strided tensor's storage holds every element its sizes, strides and offset reach."""
    if t.numel() == 0:
        return True
    last = t.storage_offset() + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    return (last + 1) * t.element_size() <= t.untyped_storage().nbytes()


def clean_name(name: str) -> str:
    """`name` without the attributes wrappers insert (`_orig_mod.0.weight` -> `0.weight`)."""
    if not any(w in name for w in _WRAPPER_NAMES):
        return name
    return ".".join(part for part in name.split(".") if part not in _WRAPPER_NAMES)


def shard_info(t: torch.Tensor) -> run_format.ShardInfo | None:
    """For a DTensor: which part of the full tensor this rank holds, from its own mesh coordinates; else None.

    Shard placements make the parts (`index` of `of`), Replicate placements copies of them (`replica`;
    the store reads replica 0 only). A rank outside the mesh holds nothing of it (`of` 0)."""
    if not is_dtensor(t):
        return None
    mesh, placements = t.device_mesh, t.placements  # type: ignore[attr-defined]
    coord = mesh.get_coordinate()
    held = local(t)
    index, of, replica = 0, 1, 0
    if coord is None:
        return run_format.ShardInfo(
            global_shape=list(t.shape),
            local_shape=list(held.shape),
            placements=[str(p) for p in placements],
            of=0,
        )
    for dim, p in enumerate(placements):
        size = mesh.size(dim)
        if p.is_shard():
            index, of = index * size + coord[dim], of * size
        else:
            replica = replica * size + coord[dim]
    return run_format.ShardInfo(
        global_shape=list(t.shape),
        local_shape=list(held.shape),
        offset=_offset(t),
        placements=[str(p) for p in placements],
        index=index,
        of=of,
        replica=replica,
    )


def flat_shards(module: nn.Module) -> dict[int, run_format.ShardInfo]:
    """FSDP1 with `use_orig_params=True`: for each parameter (by id) that an FSDP1 unit of `module` flattened into
    its shards, which part of it this rank holds, from the unit's own metadata (no communication).

    Such a parameter is a plain tensor whose elements here are a flat piece of the full tensor (between
    optimizer steps; the whole of it inside forward and backward, where the hook does not read it): part
    `index` (the rank in the unit's shard group) of `of` (the group's size), empty on a rank whose piece of the
    flat parameter holds none of it. Under HYBRID_SHARD the shard groups on other nodes hold copies (`replica`:
    the rank in the replicate group). Empty when FSDP1 is not imported."""
    mod = sys.modules.get("torch.distributed.fsdp")
    fsdp = getattr(mod, "FullyShardedDataParallel", None) if mod is not None else None
    out: dict[int, run_format.ShardInfo] = {}
    if fsdp is None:
        return out
    for m in module.modules():
        handle = getattr(m, "_handle", None) if isinstance(m, fsdp) else None
        flat = getattr(handle, "flat_param", None)
        params = getattr(flat, "_params", None)  # None without use_orig_params: the flat parameter is skipped
        if handle is None or flat is None or params is None:
            continue
        inter = getattr(m, "_inter_node_pg", None)
        replica = inter.rank() if inter is not None else 0
        for p, shape, info in zip(params, flat._shapes, flat._shard_param_infos, strict=True):
            out[id(p)] = run_format.ShardInfo(
                global_shape=list(shape),
                local_shape=[info.numel_in_shard or 0],
                placements=[f"FlatShard(start={info.intra_param_start_idx or 0})"],
                index=handle.rank,
                of=handle.world_size,
                replica=replica,
            )
    return out


def _offset(t: torch.Tensor) -> list[int] | None:
    """Where the local block starts in the full tensor, per dim (None where torch cannot tell us)."""
    try:
        from torch.distributed.tensor._utils import compute_local_shape_and_global_offset

        _, offset = compute_local_shape_and_global_offset(t.shape, t.device_mesh, t.placements)  # type: ignore[attr-defined]
        return [int(o) for o in offset]
    except Exception:  # noqa: BLE001 - a private helper of torch: informative only, never needed to merge
        return None
