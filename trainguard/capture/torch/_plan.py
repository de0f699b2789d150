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
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from trainguard.capture.config import CaptureConfig
from trainguard.capture.torch import c_kernel, device_stats
from trainguard.store import writer

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
    param: nn.Parameter
    module: str
    tid: int | None
    """Catalogue id of the weight/bias itself, None when its collection is not captured."""
    want_grad: bool
    grad_tid: int | None = None
    history: device_stats._History | None = None
    """Update/distance tracking of a large parameter (small ones are tracked inside `Packed`)."""


@dataclass
class Activation:
    name: str
    module: nn.Module
    kind: str
    tid: int | None = None
    handle: RemovableHandle | None = None
    captured_step: int = -1


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
        self.placement: tuple[tuple[torch.device, torch.dtype], ...] = ()
        """Each parameter's device and dtype when laid out: a change means lay out again (`refresh`)."""
        self.on_cpu = True
        self.kernel_reads_params = False
        """Whether the C kernel reads some captured parameter: then no statistics worker is used."""
        self.native_plan: NativePlan | None = None
        self._warned_kernel = False

    def tier1(self, step: int) -> bool:
        """Whether saved step `step` also computes the Tier-1 extras (histograms, per-unit vectors)."""
        assert self.config is not None
        return (step // self.config.save_interval) % self.config.tier1_interval == 0

    def packs(self, t: torch.Tensor) -> bool:
        """Whether `t` is copied into the packed buffer; else it is reduced where it lies (`SavedStep.reduce_now`)."""
        return t.numel() <= self.pack_max_numel and not (self.kernel and c_kernel.usable(t))

    def add_module(self, module: nn.Module, w: writer.RankWriter) -> dict[str, nn.Module]:
        """Define the module's weights and biases, note its parameters and activation modules; return its modules."""
        assert self.config is not None
        modules = dict(module.named_modules())
        self.small_params = self.native_plan = None
        for name, p in module.named_parameters():
            owner = name.rsplit(".", 1)[0] if "." in name else ""
            collection = "biases" if name.endswith("bias") else "weights"
            tid = None
            if self.config.wants(collection):
                tid = w.define(
                    name,
                    collection=collection,
                    shape=list(p.shape),
                    dtype=str(p.dtype).removeprefix("torch."),
                    module=owner or None,
                    module_type=module_type(modules.get(owner)),
                    trainable=p.requires_grad,
                )
            want_grad = p.requires_grad and self.config.wants("gradients")
            self.params.append(Param(name, p, owner, tid, want_grad=want_grad))
        if self.config.wants("activations"):
            for name, m in modules.items():
                kind = ACTIVATION_KINDS.get(type(m))
                if kind is not None and name:
                    self.activations.append(Activation(name, m, kind))
        return modules

    def define_activation(self, act: Activation, output: torch.Tensor, w: writer.RankWriter) -> int:
        """Define `act/<module>` in the catalogue from the first output captured (shape, dtype, units); return its id."""
        if act.tid is None:
            act.tid = w.define(
                f"act/{act.name}",
                collection="activations",
                shape=list(output.shape),
                dtype=str(output.dtype).removeprefix("torch."),
                module=act.name,
                activation=act.kind,
                order=self.module_order.get(act.name),
                units=int(output.shape[1]) if output.ndim >= 2 else int(output.numel()),
            )
        return act.tid

    def annotate_order(self, w: writer.RankWriter) -> None:
        """Give the weights and biases their module's `order` (gradients and activations are defined with it)."""
        for p in self.params:
            order = self.module_order.get(p.module)
            if p.tid is not None and order is not None:
                w.annotate(p.tid, order=order)

    def refresh(self) -> bool:
        """Lay the parameters out if they have no layout, or one is on another device or of another dtype than
        when they were laid out (`.to(device)`, `.half()`); return whether it did."""
        placement = tuple((p.param.device, p.param.dtype) for p in self.params)
        if self.small_params is not None and self.placement == placement:
            return False
        self._lay_out(placement)
        return True

    def _lay_out(self, placement: tuple[tuple[torch.device, torch.dtype], ...]) -> None:
        """Lay out the packed parameters per device (tracked ones first: their rows are compared with the
        copies kept from earlier steps)."""
        assert self.config is not None
        track = self.config.track_updates
        for p in self.params:
            h = p.history
            if h is not None and (h.prev.device != p.param.device or h.prev.dtype != p.param.dtype):
                # its copies are where and what it was: tracking starts again at the next saved step
                # (update_l2 NaN there, distance_l2 from there), as for a packed parameter on a new device
                p.history = None
        small = [p for p in self.params if p.tid is not None and self.packs(p.param)]
        small.sort(key=lambda p: not (track and p.param.requires_grad))
        self.small_params = small
        self.large_params = [p for p in self.params if p.tid is not None and not self.packs(p.param)]
        self.grad_params = [p for p in self.params if p.want_grad]
        plan: dict[torch.device, tuple[list[int], list[int], list[torch.Tensor], int]] = {}
        for p in small:
            ids, numels, tensors, tracked = plan.get(p.param.device, ([], [], [], 0))
            ids.append(p.tid)  # type: ignore[arg-type]
            numels.append(p.param.numel())
            tensors.append(p.param)
            plan[p.param.device] = (ids, numels, tensors, tracked + int(track and p.param.requires_grad))
        self.per_device = [(device, *entry) for device, entry in plan.items()]
        self.placement = placement
        self.on_cpu = all(device.type == "cpu" for device, _ in placement)
        self.kernel_reads_params = self.kernel and any(c_kernel.usable(p.param) for p in self.params)
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

    def native_plan_holds(self, plan: NativePlan) -> bool:
        """Whether the plan still serves: a parameter given new storage (moved, `p.data = ...`, also inside a
        custom optimizer's step) gets its spec made again; if the kernel cannot read one now, the plan
        is dropped, and the next saved step lays out again on the general path."""
        addresses = [p.param.data_ptr() for p in plan.params]
        if addresses == plan.addresses:
            return True
        if not all(c_kernel.usable(p.param) for p in plan.params):
            self.native_plan = self.small_params = None
            return False
        plan.addresses, plan.spec = addresses, None
        return True
