"""The capture plan: which tensors the hook captures, and how a saved step lays them out per device.

`Hook.register_module` adds a module's parameters (defined in the catalogue at once) and its
activation modules here. `refresh` lays the parameters out when a module is added, and again
whenever a parameter's device or dtype changes: the small ones (`packs`) go into each device's
packed buffer, tracked ones first; the large ones are reduced one by one; when the C kernel reads
every parameter, a `NativePlan` lets a saved step read them all from one spec. The path is
chosen from the result (`_paths.Paths.choose`); reading the tensors is left to the paths
(`_packed`, `_kernel_path`, `_worker_path`) and `_step.SavedStep`.
"""

from __future__ import annotations

import logging
import operator
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from trainguard.capture.config import CaptureConfig
from trainguard.capture.torch import _kinds, _sampled, c_kernel, device_stats
from trainguard.store import run_format, writer

log = logging.getLogger(__name__)

ACTIVATION_KINDS: dict[type[nn.Module], str] = {
    nn.ReLU: "relu",
    nn.ReLU6: "relu6",
    nn.LeakyReLU: "leaky_relu",
    nn.ELU: "elu",
    nn.GELU: "gelu",
    nn.SiLU: "silu",
    nn.PReLU: "prelu",
    nn.SELU: "selu",
    nn.Sigmoid: "sigmoid",
    nn.Tanh: "tanh",
}
"""Module types whose outputs are captured as `act/<module name>` (exact types: ReLU6 is a Hardtanh)."""


def module_type(module: nn.Module | None) -> str | None:
    """The catalogue's `module_type` of a parameter's owner: the name of the nearest `torch.nn` class in its
    class hierarchy other than `Module` (`Embedding` for a subclass of `nn.Embedding`), else its own class name."""
    if module is None:
        return None
    for cls in type(module).__mro__:
        if cls.__module__.startswith("torch.nn.") and cls is not nn.Module:
            return cls.__name__
    return type(module).__name__


DEFAULT_PACK_MAX_NUMEL = 1 << 20
"""Tensors up to this many elements are packed and reduced together; larger ones one by one."""


@dataclass
class Param:
    name: str
    source: torch.Tensor
    """The registered parameter (a DTensor under FSDP2: `param` is what this rank holds of it)."""
    module: str
    tid: int | None
    """Catalogue id of the weight/bias itself, None when it is not read (its collection is not captured, or
    its kind is not read: the catalogue entry then says why)."""
    want_grad: bool
    """Gradients are captured: read on a saved step where the parameter requires one and has it (`Plan.gradient`)."""
    grad_tid: int | None = None
    grad_skipped: bool = False
    """The gradient is of a kind the hook does not read (its catalogue entry says why)."""
    history: device_stats._History | None = None
    """Update/distance tracking of a large parameter (small ones are tracked inside `Packed`)."""
    sharded: bool = False
    """`source` is a DTensor: every read goes through its local shard (`_kinds.local`)."""
    flat: run_format.ShardInfo | None = None
    """FSDP1 (`use_orig_params=True`): the flat piece of the full tensor that `source` and its gradient hold
    here between steps (`_kinds.flat_shards`)."""
    sampled: bool = False
    """Its update/distance are estimated from a fixed sample (`_sampled`): its device's exact copies would
    exceed `history_max_fraction`. It then has no `history` and is not tracked inside `Packed`."""

    @property
    def param(self) -> torch.Tensor:
        """The tensor this rank holds and reads (looked up each time: FSDP2 may give the shard new storage)."""
        return _kinds.local(self.source) if self.sharded else self.source

    @property
    def trainable(self) -> bool:
        """Whether the optimizer updates it (a DTensor's local shard does not require grad itself)."""
        return self.source.requires_grad

    @property
    def grad(self) -> torch.Tensor | None:
        """This rank's part of the gradient, or None."""
        g = self.source.grad
        return _kinds.local(g) if self.sharded and g is not None else g


@dataclass
class Activation:
    name: str
    module: nn.Module
    kind: str
    tid: int | None = None
    handle: RemovableHandle | None = None
    captured_step: int = -1
    skipped: bool = False
    """Its output is of a kind the hook does not read (its catalogue entry says why)."""


@dataclass
class NativePlan:
    """The captured parameters when the C kernel reads every one of them (all float32 CPU): a saved step reads
    them from one spec, made on the first saved step and kept while their storage stays where it was
    (`_kernel_path.KernelPath`)."""

    params: list[Param]
    addresses: list[int]
    """Each parameter's data address when planned: a different one (moved, replaced) means plan again."""
    ids: list[int] = field(default_factory=list)
    spec: list[int] | None = None
    """The parameters' `c_kernel.spec_row`s with their saved copies, concatenated; made with the copies."""
    fresh: bool = True
    """Some parameter has not been read since its copies were made (its update_l2 is NaN once)."""


Placement = tuple[list[torch.device], list[torch.dtype], list[int], list[bool], list[bool]]
"""The parameters' devices, dtypes, elements, contiguity and whether each requires grad, one list each, in
`CapturePlan.params` order (`CapturePlan.refresh`)."""

_DEVICE = operator.attrgetter("device")
_DTYPE = operator.attrgetter("dtype")
_REQUIRES_GRAD = operator.attrgetter("requires_grad")

DevicePlan = tuple[torch.device, list[int], list[int], list[torch.Tensor], int]
"""One device's packed parameters: (device, ids, sizes, tensors, how many of them are tracked)."""


class CapturePlan:
    """The tensors a hook captures and their layout; the layout is made again when parameters move."""

    def __init__(self, config: CaptureConfig | None, *, pack_max_numel: int, kernel: bool) -> None:
        self.config = config
        self.pack_max_numel = pack_max_numel
        self.kernel = kernel
        """Float32 CPU tensors are read in place by the C kernel (`c_kernel`), on the training thread."""
        self.params: list[Param] = []
        self.activations: list[Activation] = []
        self.module_order: dict[str, int] = {}
        """Module name -> its place in the first training forward (the catalogue's `order`)."""
        self.small_params: list[Param] | None = None
        """The packed parameters in layout order, tracked ones first (None: lay out on the next saved step)."""
        self.large_params: list[Param] = []
        self.grad_params: list[Param] = []
        self.per_device: list[DevicePlan] = []
        self.placement: Placement = ([], [], [], [], [])
        """Each parameter's device, dtype, size, contiguity and whether it requires grad when laid out: a change
        means lay out again (`refresh`; FSDP1 gives parameters their shard's size when it wraps them). A new
        layout is a new tuple: paths cache what they derive from a layout by its identity."""
        self._sources: list[torch.Tensor] = []
        """`params`' sources, in order (`refresh`; made again when `params` grows: a `Param`'s source is fixed)."""
        self._any_sharded = False
        self.on_cpu = True
        self.kernel_reads_params = False
        """Whether the C kernel reads some captured parameter: then no statistics worker is used."""
        self.native_plan: NativePlan | None = None
        self._warned_kernel = False
        self.samplers: dict[tuple[object, ...], _sampled.SampledHistory] = {}
        self.any_sampled = False
        """Whether some parameter's update/distance is sampled, as laid out (else `sampled_estimates` is empty)."""
        """Sampled history per group of sampled parameters (ids, device, dtype, sizes): kept across layouts
        while the group stays the same."""

    def tier1(self, step: int) -> bool:
        """Whether saved step `step` also computes the Tier-1 extras (histograms, per-unit vectors)."""
        assert self.config is not None
        return (step // self.config.save_interval) % self.config.tier1_interval == 0

    def packs(self, t: torch.Tensor) -> bool:
        """Whether `t` is copied into the packed buffer; else it is reduced where it lies (`SavedStep.reduce_now`)."""
        return t.numel() <= self.pack_max_numel and not (self.kernel and c_kernel.usable(t))

    def add_module(self, module: nn.Module, w: writer.RankWriter) -> dict[str, nn.Module]:
        """Define the module's weights and biases, note its parameters and activation modules; return its modules.

        Names are the bare model's (`_kinds.clean_name`: no `_orig_mod.` of torch.compile); a DDP wrapper is
        looked through (`module.`). A parameter of a kind the hook does not read is defined with the reason
        (`skipped`) and not read; a DTensor's entry describes the part this rank holds (`shard`)."""
        assert self.config is not None
        root = _unwrapped(module)
        modules: dict[str, nn.Module] = {}
        for raw, m in root.named_modules():
            modules[_kinds.clean_name(raw)] = m  # a wrapped module (after its wrapper) takes the bare name
        self.small_params = self.native_plan = None
        flat = _kinds.flat_shards(module)
        for raw, p in root.named_parameters():
            name = _kinds.clean_name(raw)
            owner = name.rsplit(".", 1)[0] if "." in name else ""
            collection = "biases" if name.endswith("bias") else "weights"
            skipped = _kinds.unreadable(p)
            piece = flat.get(id(p))
            tid = None
            if self.config.wants(collection):
                tid = w.define(
                    name,
                    collection=collection,
                    shape=piece.global_shape if piece else list(p.shape),
                    dtype=str(p.dtype).removeprefix("torch."),
                    module=owner or None,
                    module_type=module_type(modules.get(owner)),
                    trainable=p.requires_grad,
                    shard=None if skipped else piece or _kinds.shard_info(p),
                    skipped=skipped,
                )
                if skipped:
                    log.info("trainguard: %s is not read: %s", name, skipped)
                    tid = None
            if skipped:
                continue  # never read: it takes no part in the layout or the choice of path
            # also for a parameter frozen now: a layer unfrozen later gets its gradient read from then on
            want_grad = self.config.wants("gradients")
            self.params.append(
                Param(name, p, owner, tid, want_grad=want_grad, sharded=_kinds.is_dtensor(p), flat=piece)
            )
        if self.config.wants("activations"):
            for name, m in modules.items():
                kind = ACTIVATION_KINDS.get(type(m))
                if kind is not None and name:
                    self.activations.append(Activation(name, m, kind))
        return modules

    def gradient(self, p: Param, w: writer.RankWriter) -> tuple[int, torch.Tensor] | None:
        """The id and this rank's part of `p`'s gradient to read on this saved step, defining `grad/<name>` the
        first time; None when there is none, it is empty here, or of a kind the hook does not read (its
        catalogue entry says why), or the parameter is frozen now (a gradient left from before it was frozen is
        stale). A parameter unfrozen after registration is read from its first gradient on."""
        source = p.source.grad
        if (
            p.grad_skipped
            or not p.source.requires_grad
            or (source is None and not (p.grad_tid is None and p.flat and not p.flat.local_shape[0]))
        ):
            return None
        if p.grad_tid is None:
            # an FSDP1 parameter with no elements here has no gradient here: its entry says this rank's part is
            # empty, as the parameter's does, so that every rank's catalogue names the same parts
            skipped = _kinds.unreadable(source) if source is not None else None
            p.grad_tid = w.define(
                f"grad/{p.name}",
                collection="gradients",
                shape=p.flat.global_shape if p.flat else list(p.source.shape),
                dtype=str(p.source.dtype if source is None else source.dtype).removeprefix("torch."),
                module=p.module or None,
                order=self.module_order.get(p.module),
                shard=None
                if skipped
                else p.flat or _kinds.shard_info(p.source if source is None else source),
                skipped=skipped,
            )
            if skipped:
                log.info("trainguard: grad/%s is not read: %s", p.name, skipped)
                p.grad_skipped = True
                return None
        if source is None:
            return None
        grad = _kinds.local(source)
        return (p.grad_tid, grad) if grad.numel() else None

    def define_activation(
        self, act: Activation, output: torch.Tensor, w: writer.RankWriter
    ) -> tuple[int, torch.Tensor] | None:
        """Define `act/<module>` in the catalogue from the first output captured (shape, dtype, units); return its
        id and the tensor to read (this rank's part of a DTensor), or None for a kind the hook does not read (its
        catalogue entry says why) or an empty one."""
        if act.tid is None:
            skipped = _kinds.unreadable(output)
            act.tid = w.define(
                f"act/{act.name}",
                collection="activations",
                shape=list(output.shape),
                dtype=str(output.dtype).removeprefix("torch."),
                module=act.name,
                activation=act.kind,
                order=self.module_order.get(act.name),
                units=int(output.shape[1]) if output.ndim >= 2 else int(output.numel()),
                shard=None if skipped else _kinds.shard_info(output),
                skipped=skipped,
            )
            act.skipped = skipped is not None
        if act.skipped:
            return None
        t = _kinds.local(output)
        return (act.tid, t) if t.numel() else None

    def annotate_order(self, w: writer.RankWriter) -> None:
        """Give the weights and biases their module's `order` (gradients and activations are defined with it)."""
        for p in self.params:
            order = self.module_order.get(p.module)
            if p.tid is not None and order is not None:
                w.annotate(p.tid, order=order)

    def refresh(self) -> bool:
        """Lay the parameters out if they have no layout, or one is on another device, of another dtype or size
        than when they were laid out (`.to(device)`, `.half()`); return whether it did."""
        # one C-level map per fact, no tuple and no property per parameter: this runs on every saved step off the
        # C kernel's path, when the parameters' tensors are no longer in the CPU's caches
        params = self.params
        if len(self._sources) != len(params):
            self._sources = [p.source for p in params]
            self._any_sharded = any(p.sharded for p in params)
        sources = self._sources
        xs = (
            [_kinds.local(p.source) if p.sharded else p.source for p in params]
            if self._any_sharded
            else sources
        )
        placement = (
            list(map(_DEVICE, xs)),
            list(map(_DTYPE, xs)),
            list(map(torch.Tensor.numel, xs)),
            list(map(torch.Tensor.is_contiguous, xs)),
            list(map(_REQUIRES_GRAD, sources)),
        )
        if self.small_params is not None and self.placement == placement:
            return False
        self._lay_out(placement)
        return True

    def _lay_out(self, placement: Placement) -> None:
        """Lay out the packed parameters per device (tracked ones first: their rows are compared with the
        copies kept from earlier steps)."""
        assert self.config is not None
        track = self.config.track_updates
        read = [p for p in self.params if p.tid is not None and p.param.numel()]  # a shard may be empty here
        sampled = _sampled.sampled_devices(
            [p.param for p in read if track and p.trainable], self.config.history_max_fraction
        )
        for p in self.params:
            p.sampled = track and p.trainable and p.param.device in sampled
            if p.sampled:
                p.history = None  # no full copies: the estimate keeps its own (`sampled_estimates`)
            h = p.history
            if h is not None and (
                h.prev.device != p.param.device
                or h.prev.dtype != p.param.dtype
                or h.prev.shape != p.param.shape
            ):
                # its copies are where and what it was: tracking starts again at the next saved step
                # (update_l2 NaN there, distance_l2 from there), as for a packed parameter on a new device
                p.history = None
        self.any_sampled = any(p.sampled for p in self.params)
        small = [p for p in read if self.packs(p.param)]
        small.sort(key=lambda p: not self.exact_history(p))
        self.small_params = small
        self.large_params = [p for p in read if not self.packs(p.param)]
        self.grad_params = [p for p in self.params if p.want_grad]
        plan: dict[torch.device, tuple[list[int], list[int], list[torch.Tensor], int]] = {}
        for p in small:
            ids, numels, tensors, tracked = plan.get(p.param.device, ([], [], [], 0))
            ids.append(p.tid)  # type: ignore[arg-type]
            numels.append(p.param.numel())
            tensors.append(p.param)
            plan[p.param.device] = (ids, numels, tensors, tracked + int(self.exact_history(p)))
        self.per_device = [(device, *entry) for device, entry in plan.items()]
        self.placement = placement
        self.on_cpu = all(device.type == "cpu" for device in placement[0])
        self.kernel_reads_params = self.kernel and any(c_kernel.usable(p.param) for p in read)
        large = self.large_params
        self.native_plan = (
            NativePlan(list(large), [p.param.data_ptr() for p in large])
            if self.kernel_reads_params and not small and all(c_kernel.usable(p.param) for p in large)
            else None
        )
        if self.on_cpu and self.config.native_stats and not c_kernel.AVAILABLE and not self._warned_kernel:
            self._warned_kernel = True
            log.warning(
                "trainguard: the hook's C kernel was not built (no C compiler when trainguard was installed?); "
                "CPU statistics take the slower torch path. Reinstall with gcc present, or set "
                "TRAINGUARD_NATIVE_STATS=false to silence this"
            )

    def exact_history(self, p: Param) -> bool:
        """Whether `p`'s update/distance are exact, from full copies (`Param.history`, or `Packed`'s rows)."""
        assert self.config is not None
        return self.config.track_updates and p.trainable and not p.sampled

    def sampled_estimates(self) -> list[tuple[list[int], torch.Tensor]]:
        """Per (device, dtype) group of sampled parameters: their ids and float64 [T, 2] estimated squared update
        and distance (`_sampled.SampledHistory`; update NaN on the group's first saved step). Called once per
        saved step, after the optimizer step; device ops only, no sync. Empty in exact mode."""
        if not self.any_sampled:
            return []  # exact mode, the usual case: no loop over the parameters on every saved step
        groups: dict[tuple[torch.device, torch.dtype], list[Param]] = {}
        for p in self.params:
            if p.sampled and p.tid is not None and p.param.numel():
                groups.setdefault((p.param.device, p.param.dtype), []).append(p)
        out = []
        for (device, dtype), params in groups.items():
            ids = [p.tid for p in params if p.tid is not None]
            xs = [p.param for p in params]
            key = (tuple(ids), device, dtype, tuple(x.numel() for x in xs))
            sampler = self.samplers.get(key)
            if sampler is None:
                sampler = self.samplers[key] = _sampled.SampledHistory([p.name for p in params], xs)
            out.append((ids, sampler.estimate(xs)))
        return out

    def annotate_history(self, w: writer.RankWriter) -> None:
        """Mark in the catalogue the tracked parameters whose update/distance are sampled (with the sample's size),
        as laid out; an entry without the mark is exact."""
        assert self.config is not None
        for p in self.params:
            if p.tid is None or not (self.config.track_updates and p.trainable):
                continue
            n = p.param.numel()
            if p.sampled and _sampled.sample_size(n) < n:  # a small tensor's "sample" is all of it: exact
                w.annotate(p.tid, history="sampled", history_sample=_sampled.sample_size(n))
            elif w.info(p.tid).history is not None:  # sampled before (moved device): exact from here on
                w.annotate(p.tid, history="exact", history_sample=None)

    def native_plan_holds(self, plan: NativePlan) -> bool:
        """Whether the plan still serves: a parameter given new storage (moved, `p.data = ...`, also inside a
        custom optimizer's step) gets its spec made again; if the kernel cannot read one now, the plan
        is dropped, and the next saved step lays out again on the general path."""
        addresses = [(p.param if p.sharded else p.source).data_ptr() for p in plan.params]
        if addresses == plan.addresses:
            return True
        if not all(c_kernel.usable(p.param) for p in plan.params):
            self.native_plan = self.small_params = None
            return False
        plan.addresses, plan.spec = addresses, None
        return True


def _unwrapped(module: nn.Module) -> nn.Module:
    """The model inside a DistributedDataParallel wrapper (its `module.` prefix is no part of the model's names;
    its forward still runs the wrapped one, so the hooks see it); any other module itself."""
    inner = getattr(module, "module", None)
    if isinstance(module, nn.parallel.DistributedDataParallel) and isinstance(inner, nn.Module):
        return inner
    return module
