"""The PyTorch hook (`import trainguard.torch as tg; tg.Hook`): statistics of weights, gradients,
activations and scalars, computed on the device and written through `store.writer.RankWriter`.

The step counter is the optimizer's step count. On steps that are not saved the hook does
nothing but count (activation hooks are only installed for saved iterations, the registered
modules' forward pre-hook for saved iterations and the one after each). On a saved step
the optimizer's pre-hook stages the gradients, its post-hook reduces gradients, parameters and
activations on their device (`torch_stats`), and the step is finalised at the start of the
next iteration: then the step's results and its scalars reach the host in ONE copy. Prediction
counts (`record_predictions`) accumulate on the device and follow in a second, small copy of
their own right after it. Every hook body catches everything: a failure disables capture, is
logged once and lands in END.json.

On CPU there are no asynchronous kernels to hide behind. Float32 CPU tensors are read in place
by the C kernel (`native`, `native_stats` on by default), on the training thread, in the same
hook bodies: each activation in its forward hook, the gradients in one call in the optimizer's
pre-hook, the parameters in one call in its post-hook; their statistic rows are final and on the
host, so the step is written there and then, and so is each scalar as it is recorded (a tensor
scalar on the device waits for its step's one copy). Code that runs once per saved
step runs with cold caches (a numpy call then costs 10-25 us, not 1), so when the kernel reads
every parameter a saved step takes a short path (`_NativePlan`): the parameters' kernel spec is
made once and kept while their storage stays put, and a step without Tier-1 extras makes one
numpy call (the next step's row buffer) and no torch call beyond reading the loss. Without the kernel the hook
gives the CPU a "stream" of its own (`stats_worker`, on by default): the pre- and post-hooks only
snapshot the step's tensors into one of `stats_in_flight` packed buffers, and a background
thread (`StatsWorker`) reduces, copies and writes the step, with the scalars recorded before it.
A step that finds every buffer busy waits within a small allowance (`WORKER_WAIT_SHARE`), then
is skipped and counted.
"""

from __future__ import annotations

import atexit
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from trainguard.capture import native, torch_stats
from trainguard.capture.config import CaptureConfig
from trainguard.capture.predictions import PredictionCounter, write_counts
from trainguard.capture.stats_worker import StatsWorker
from trainguard.capture.stop import StopFlag
from trainguard.store import writer
from trainguard.store.stats import MOVED

if TYPE_CHECKING:
    from typing_extensions import Self

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

WORKER_DRAIN_SECONDS = 10.0
"""The longest `flush` and `close` wait for the statistics worker's saved steps in flight."""

WORKER_WAIT_SHARE = 0.02
"""Waiting for a busy statistics worker may take at most this share of the training time: the
allowance accrues with wall time (up to `max_block_seconds`, which is also where it starts, so
a start-up hiccup is absorbed); beyond it a saved step is skipped instead of waited for."""


Result = torch.Tensor | np.ndarray
"""A per-unit vector or histogram: a device tensor (its host copy still to come), or a host array from the C kernel."""
HostUnits = dict[tuple[str, int], np.ndarray]
HostHists = dict[int, np.ndarray]


@dataclass
class _Param:
    name: str
    param: nn.Parameter
    module: str
    tid: int | None
    """Catalogue id of the weight/bias itself, None when its collection is not captured."""
    want_grad: bool
    grad_tid: int | None = None
    history: torch_stats._History | None = None
    """Update/distance tracking of a large parameter (small ones are tracked inside `Packed`)."""


@dataclass
class _NativePlan:
    """The captured parameters when the C kernel reads every one of them (all float32 CPU): a saved step reads
    them from one spec, made on the first saved step and kept while their storage stays where it was
    (`Hook._stage_native`, `Hook._complete_native`)."""

    params: list[_Param]
    addresses: list[int]
    """Each parameter's data address when planned: a different one (moved, replaced) means plan again."""
    ids: list[int] = field(default_factory=list)
    spec: list[int] | None = None
    """The parameters' `native.spec_row`s with their saved copies, concatenated; made with the copies."""
    fresh: bool = True
    """Some parameter has not been read since its copies were made (its update_l2 is NaN once)."""


@dataclass
class _Activation:
    name: str
    module: nn.Module
    kind: str
    tid: int | None = None
    handle: RemovableHandle | None = None
    captured_step: int = -1


@dataclass
class _Group:
    """One device's share of a saved step: packed slots in layout order, plus large tensors."""

    packer: torch_stats.Packed
    ids: list[int] = field(default_factory=list)
    numels: list[int] = field(default_factory=list)
    tensors: list[torch.Tensor] = field(default_factory=list)
    tracked: int = 0
    n_params: int = 0
    layout: torch_stats._Layout | None = None
    slot: int = 0
    """The layout's snapshot buffer this step is loaded into (see `StatsWorker`)."""
    units: tuple[int, ...] = ()
    """Per tracked parameter: the units of its Tier-1 "moved" vector (0: none); set on Tier-1 steps only."""


@dataclass
class _Pending:
    """A reduced saved step whose results still live on the device."""

    step: int
    ids: list[int]
    counts: list[int]
    parts: list[torch.Tensor]
    """float64 device tensors: raw moments [T_i, RAW] of each group, in `ids` order."""
    units: dict[tuple[str, int], Result]
    hists: dict[int, Result]
    host_ids: list[int] = field(default_factory=list)
    host_stats: np.ndarray | None = None
    """Finished float32 statistic rows [len(host_ids), K] of the tensors the C kernel read (`native`)."""
    host_nonfinite: bool = False
    """Whether one of `host_stats` counts a NaN or Inf (the kernel said so)."""
    groups: list[_Group] = field(default_factory=list)
    """Loaded packed buffers still to reduce (`Hook._reduce`): then their rows join `parts`."""
    unit_inputs: list[tuple[int, str, torch.Tensor]] = field(default_factory=list)
    """(tensor id, activation kind, float32 copy) of the Tier-1 per-unit vectors still to compute."""
    tier1: bool = False


@dataclass
class _PredStream:
    """One named prediction stream: counts on the device, and the step they belong to."""

    counter: PredictionCounter
    step: int


class Hook:
    """Captures a PyTorch training run into a TrainGuard run. Inert (all methods no-ops) without a config."""

    def __init__(
        self,
        out: str | None = None,
        *,
        config: CaptureConfig | None = None,
        environ: Mapping[str, str] | None = None,
        pack_max_numel: int = DEFAULT_PACK_MAX_NUMEL,
        **settings: Any,
    ) -> None:
        """Configure from `config`, else from `out` and `settings` over `TRAINGUARD_*` in `environ` (default os.environ)."""
        if config is None:
            overrides: dict[str, Any] = dict(settings)
            if out:
                overrides["out"] = out
            config = CaptureConfig.from_env(environ, **overrides)
        self.config = config
        self.pack_max_numel = pack_max_numel
        self._every = config.save_interval if config else 1
        """save_interval, read by the per-step fast paths (steps that are not saved cost a few int operations)."""
        self._native = bool(config and config.native_stats and native.AVAILABLE)
        self._warned_native = False
        self._kernel_reads_params = False
        self._native_plan: _NativePlan | None = None
        self._staged_native = -1
        """The saved step whose gradients `_stage_native` read: `_complete_native` finishes it."""
        """Whether the C kernel reads some captured parameter (planned per device set): then no worker is used."""
        """Float32 CPU tensors are read in place by the C kernel (`native`), on the training thread."""
        self.step = 0
        """Optimizer steps completed; the step in progress has this number."""
        self._in_iteration = False
        self._handles: list[RemovableHandle] = []
        self._roots: list[nn.Module] = []
        """The registered modules: their training forward starts an iteration (`_on_forward`)."""
        self._root_handles: list[RemovableHandle] = []
        """Their forward pre-hooks, installed only for iterations that need them (`_watch_forward`)."""
        self._params: list[_Param] = []
        self._small_params: list[_Param] | None = None
        """The packed parameters in layout order, tracked ones first (built on the first saved step)."""
        self._param_plan: list[tuple[torch.device, list[int], list[int], list[torch.Tensor], int]] = []
        """Per device: ids, sizes, tensors and tracked count of the packed parameters (`_plan_params`)."""
        self._param_devices: tuple[torch.device, ...] = ()
        self._params_on_cpu = True
        self._large_params: list[_Param] = []
        self._grad_params: list[_Param] = []
        self._activations: list[_Activation] = []
        self._module_order: dict[str, int] = {}
        """Module name -> its place in the first training forward (the catalogue's `order`, `_note_order`)."""
        self._order_handles: list[RemovableHandle] = []
        """Forward pre-hooks that number the modules in the first training forward, then go (`_finish_order`)."""
        self._armed = False
        self._optimizer: torch.optim.Optimizer | None = None
        self._packers: dict[torch.device, torch_stats.Packed] = {}
        self._staged: dict[torch.device, _Group] | None = None
        self._staged_step = -1
        self._acts_small: dict[torch.device, list[tuple[int, torch.Tensor]]] = {}
        self._reduced: list[tuple[int, int, torch.Tensor]] = []
        """(tensor id, elements, raw moments) of the tensors reduced one by one with torch ops so far in this step."""
        self._host = native.HostRows()
        """Statistic rows of the tensors the C kernel read so far in this step."""
        self._batch: list[tuple[int, torch.Tensor, torch.Tensor | None, torch.Tensor | None, bool]] = []
        """Tensors of the hook body in progress for one `HostRows.add_many` call (`_read_batch`)."""
        self._ids: tuple[list[int], np.ndarray] | None = None
        """The last saved step's tensor ids, and as written: usually the same every step."""
        self._units: dict[tuple[str, int], Result] = {}
        self._unit_inputs: list[tuple[int, str, torch.Tensor]] = []
        self._hists: dict[int, Result] = {}
        self._pending: _Pending | None = None
        self._worker: StatsWorker | None = None
        """Reduces saved steps of CPU tensors off the training thread (created on the first such step)."""
        self._slots_in_flight: list[int] = []
        """Snapshot slots of the steps submitted to the worker, oldest first (it finishes them in order)."""
        self._staged_slot = 0
        self._staged_worker: StatsWorker | None = None
        self._wait_allowance = config.max_block_seconds if config else 0.0
        self._wait_clock = time.monotonic()
        self._skipped_step = -1
        self.skipped_steps = 0
        """Saved steps skipped because the statistics worker held every snapshot buffer (also in END.json)."""
        self._scalars: list[tuple[int, int, float | torch.Tensor]] = []
        self._predictions: dict[tuple[str, str], _PredStream] = {}
        self._pred_ready: list[tuple[int, str, str, dict[int, Any]]] = []
        """Counts of finished steps, still on the device: (step, name, mode, {class: counts})."""
        self._writer: writer.RankWriter | None = None
        self._stop = StopFlag(config.stop_file if config else None)
        self._closed = False
        self._failed = False
        if config is None:
            return
        self._writer = config.open_writer(framework="pytorch")
        atexit.register(self.close)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Hook:
        """Return a hook configured by `TRAINGUARD_*` variables; an inert hook when TRAINGUARD_OUT is unset."""
        return cls(environ=environ, **overrides)

    # --- state ------------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        """True while the hook captures: configured, not closed, and no failure so far."""
        w = self._writer
        return w is not None and not w.disabled and not self._closed and not self._failed

    @property
    def errors(self) -> list[str]:
        return [] if self._writer is None else list(self._writer.errors)

    def is_saved_step(self, step: int | None = None) -> bool:
        """Return whether `step` (default: the step in progress) is a saved step."""
        return (
            self.config is not None
            and ((self.step if step is None else step) % self.config.save_interval) == 0
        )

    def _tier1(self, step: int) -> bool:
        assert self.config is not None
        return (step // self.config.save_interval) % self.config.tier1_interval == 0

    def _wants(self, collection: str) -> bool:
        return self.config is not None and self.config.wants(collection)

    def _fail(self, where: str, err: BaseException) -> None:
        message = f"{where} failed: {type(err).__name__}: {err}; capture disabled, training continues"
        if not self._failed:
            log.error("trainguard: %s", message)
        self._failed = True
        if self._writer is not None:
            # The store is fine: only capture stops. Unlike RankWriter._fail (a failing store), the
            # writer stays up, so the steps written before the failure still land, and END.json
            # carries the error.
            self._writer.errors.append(message)
        self._remove_handles()
        self._pending = None
        self._staged = None
        if self._worker is not None:
            self._worker.stop()  # what it still holds is dropped; what it wrote stays

    @property
    def worker_cpu_seconds(self) -> float:
        """CPU seconds the statistics worker thread has spent so far (0 without one)."""
        return 0.0 if self._worker is None else self._worker.cpu_seconds

    def _check_worker(self) -> None:
        """On the training thread: turn a failure inside the statistics worker into a hook failure."""
        failure = self._worker.error if self._worker is not None else None
        if failure is not None and not self._failed:
            self._fail(f"statistics worker ({failure[0]})", failure[1])

    # --- registration -----------------------------------------------------------------------------
    def register_module(self, module: nn.Module) -> None:
        """Capture the module's weights, biases, gradients and activations (on saved steps)."""
        if not self.enabled:
            return
        try:
            w = self._writer
            assert w is not None
            modules = dict(module.named_modules())
            self._small_params = self._native_plan = None
            for name, p in module.named_parameters():
                owner = name.rsplit(".", 1)[0] if "." in name else ""
                collection = "biases" if name.endswith("bias") else "weights"
                tid = None
                if self._wants(collection):
                    tid = w.define(
                        name,
                        collection=collection,
                        shape=list(p.shape),
                        dtype=str(p.dtype).removeprefix("torch."),
                        module=owner or None,
                        module_type=module_type(modules.get(owner)),
                        trainable=p.requires_grad,
                    )
                self._params.append(
                    _Param(name, p, owner, tid, want_grad=p.requires_grad and self._wants("gradients"))
                )
            if self._wants("activations"):
                for name, m in modules.items():
                    kind = ACTIVATION_KINDS.get(type(m))
                    if kind is not None and name:
                        self._activations.append(_Activation(name, m, kind))
            self._roots.append(module)
            self._watch_forward(False)
            self._watch_forward(True)  # the new module too; the next optimizer step drops unneeded ones
            owners = {p.module for p in self._params} | {a.name for a in self._activations}
            for name, m in modules.items():
                if name in owners and name not in self._module_order:
                    self._order_handles.append(m.register_forward_pre_hook(self._note_order(name)))
            self._arm_activations(self.is_saved_step(), force=True)  # new modules: what this step needs
        except Exception as err:  # noqa: BLE001 - never raise into training
            self._fail("register_module", err)

    def register_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Count steps on `optimizer.step()`, read gradients before it and weights after it, record `lr`."""
        if not self.enabled:
            return
        if self._optimizer is not None:
            log.warning("trainguard: a second optimizer was registered; only the first one counts steps")
            return
        try:
            self._optimizer = optimizer
            self._handles.append(optimizer.register_step_pre_hook(self._on_step_begin))
            self._handles.append(optimizer.register_step_post_hook(self._on_step_end))
        except Exception as err:  # noqa: BLE001
            self._fail("register_optimizer", err)

    def _arm_activations(self, on: bool, *, force: bool = False) -> None:
        """Install activation hooks for a saved iteration, remove them otherwise (no cost on other steps)."""
        if on == self._armed and not force:
            return
        self._armed = on
        for act in self._activations:
            if on and act.handle is None:
                act.handle = act.module.register_forward_hook(self._activation_hook(act))
            elif not on and act.handle is not None:
                act.handle.remove()
                act.handle = None

    def _watch_forward(self, on: bool) -> None:
        """Install (or remove) the forward pre-hook of every registered module.

        A hook on a module makes every call of it take torch's slow path (~8 us per training step
        on the benchmark's CPU, more than the rest of the hook on a step that is not saved), so it
        is only there for the iterations that need it (`_needs_forward`)."""
        if on and not self._root_handles:
            self._root_handles = [m.register_forward_pre_hook(self._on_forward) for m in self._roots]
        elif not on:
            for h in self._root_handles:
                h.remove()
            self._root_handles = []

    def _needs_forward(self, step: int) -> bool:
        """Whether the training forward of iteration `step` must be seen: it finalises a pending step, numbers
        modules or ships prediction counts, or a value recorded during it belongs to a saved step (this one)
        rather than to the one before (`_record_step`), which matters when either is saved."""
        return bool(
            self._optimizer is None  # no optimizer steps: nothing else ends an iteration
            or self._predictions
            or self._order_handles
            or self._pending is not None
            or self.is_saved_step(step)
            or self.is_saved_step(step - 1)
        )

    def _remove_handles(self) -> None:
        for h in self._handles + self._order_handles:
            h.remove()
        self._handles.clear()
        self._order_handles.clear()
        self._watch_forward(False)
        self._arm_activations(False, force=True)

    # --- hook bodies ------------------------------------------------------------------------------
    def _on_forward(self, module: nn.Module, args: object) -> None:
        if not module.training:
            return
        self._in_iteration = True
        if self._order_handles and self._module_order:
            self._finish_order()  # a second training forward (no optimizer step registered in between)
        if self._pending is not None:
            try:
                self._finalize()
            except Exception as err:  # noqa: BLE001
                self._fail("finalising a saved step", err)
        if self._predictions:
            self._ship_predictions()

    def _activation_hook(self, act: _Activation) -> Callable[[nn.Module, object, object], None]:
        def hook(module: nn.Module, inputs: object, output: object) -> None:
            if not module.training or act.captured_step == self.step or not self.is_saved_step():
                return
            try:
                self._capture_activation(act, output)
            except Exception as err:  # noqa: BLE001
                self._fail(f"capturing act/{act.name}", err)

        return hook

    def _capture_activation(self, act: _Activation, output: object) -> None:
        if not isinstance(output, torch.Tensor) or not output.is_floating_point() or not self.enabled:
            return
        act.captured_step = self.step
        w = self._writer
        assert w is not None
        if act.tid is None:
            act.tid = w.define(
                f"act/{act.name}",
                collection="activations",
                shape=list(output.shape),
                dtype=str(output.dtype).removeprefix("torch."),
                module=act.name,
                activation=act.kind,
                order=self._module_order.get(act.name),
                units=int(output.shape[1]) if output.ndim >= 2 else int(output.numel()),
            )
        tier1 = self._tier1(self.step)
        row = native.plain_row(output) if not tier1 and self._native else None
        if row is not None:  # read now, in one call: a later in-place op may change it
            self._host.add_read([act.tid], [*row])
            return
        if self._packs(output):
            # detached, so no graph (and no no_grad context) is needed; a copy, as later in-place ops
            # must not change it
            copy = output.detach().to(torch.float32, copy=True)
            self._acts_small.setdefault(output.device, []).append((act.tid, copy))
            if tier1:
                self._unit_inputs.append((act.tid, act.kind, copy))  # computed with the reductions
            return
        with torch.no_grad():
            if tier1:
                unit: tuple[str, Result] | None = None
                if self._native:
                    unit = native.unit_vector(output, act.kind)
                if unit is None:
                    unit = torch_stats.unit_vector(output, act.kind)
                if unit is not None:
                    self._units[(unit[0], act.tid)] = unit[1]
            self._reduce_now(act.tid, output, tier1)
            self._read_batch()

    def _note_order(self, name: str) -> Callable[[nn.Module, object], None]:
        def hook(module: nn.Module, args: object) -> None:
            if module.training and name not in self._module_order:
                self._module_order[name] = len(self._module_order)

        return hook

    def _finish_order(self) -> None:
        """After the first training forward (at the next optimizer step or training forward, whichever comes
        first): drop the numbering hooks, give the weights and biases their module's `order` (gradients and
        activations are defined later, with it)."""
        for h in self._order_handles:
            h.remove()
        self._order_handles = []
        w = self._writer
        if w is None:
            return
        for p in self._params:
            order = self._module_order.get(p.module)
            if p.tid is not None and order is not None:
                w.annotate(p.tid, order=order)

    def _on_step_begin(self, optimizer: torch.optim.Optimizer, args: object, kwargs: object) -> None:
        if self._order_handles and self._module_order:
            self._finish_order()
        if self._pending is None and self.step % self._every:
            return  # a step that is not saved, with nothing left to write
        try:
            if self._pending is not None:
                self._finalize()
            if self.enabled and self.is_saved_step() and not self._stage_native(self.step):
                with torch.no_grad():
                    self._stage(self.step)
        except Exception as err:  # noqa: BLE001
            self._fail(f"optimizer step {self.step} (gradients)", err)

    def _on_step_end(self, optimizer: torch.optim.Optimizer, args: object, kwargs: object) -> None:
        step = self.step
        self.step += 1
        self._in_iteration = False
        worker = self._worker
        if worker is not None and worker.error is not None:
            self._check_worker()
        if step % self._every and self.step % self._every and not self._predictions:
            if self._root_handles and not self._needs_forward(self.step):
                self._watch_forward(False)  # the iteration after a saved one is over
            return  # neither this step nor the next is saved: nothing to finish, nothing to arm
        if not self.enabled:
            return
        try:
            if self._staged_native == step:
                self._complete_native(step, optimizer)
            elif self.is_saved_step(step):
                with torch.no_grad():
                    self._complete(step, optimizer)
            self._arm_activations(self.is_saved_step())
            self._watch_forward(self._needs_forward(self.step))
        except Exception as err:  # noqa: BLE001
            self._fail(f"optimizer step {step} (weights)", err)
        if self._predictions:
            self._ship_predictions()  # no registered module: the steps end here

    # --- reduction ----------------------------------------------------------------------------------
    def _packer(self, device: torch.device) -> torch_stats.Packed:
        p = self._packers.get(device)
        if p is None:
            p = self._packers[device] = torch_stats.Packed(device)
        return p

    def _group(self, groups: dict[torch.device, _Group], device: torch.device) -> _Group:
        g = groups.get(device)
        if g is None:
            g = groups[device] = _Group(self._packer(device))
        return g

    def _packs(self, t: torch.Tensor) -> bool:
        """Whether `t` is copied into the packed buffer; else it is reduced where it lies, now (`_reduce_now`)."""
        return t.numel() <= self.pack_max_numel and not (self._native and native.usable(t))

    def _reduce_now(
        self, tid: int, t: torch.Tensor, tier1: bool, history: torch_stats._History | None = None
    ) -> None:
        """Reduce one tensor that is not packed (large, or read in place by the C kernel) into this step."""
        hist: Result | None
        moved: Result | None
        if self._native and native.usable(t) and (history is None or native.usable(history.prev)):
            prev, first, fresh = (
                (None, None, False) if history is None else (history.prev, history.first, history.fresh)
            )
            if history is not None:
                history.fresh = False
            if not tier1:  # the common case: read with the other tensors of this hook in one kernel call
                self._batch.append((tid, t, prev, first, fresh))
                return
            units = torch_stats.unit_count(t) if history is not None else 0
            hist, moved = self._host.add(tid, t, prev=prev, first=first, fresh=fresh, hist=True, units=units)
        else:
            raw, hist, moved = torch_stats.reduce_one(t, history, hist=tier1, moved=tier1)
            self._reduced.append((tid, t.numel(), raw))
        if hist is not None:
            self._hists[tid] = hist
        if moved is not None:
            self._units[(MOVED, tid)] = moved

    def _read_batch(self) -> None:
        """Read the tensors `_reduce_now` set aside for the C kernel in one call (the end of each hook body)."""
        if self._batch:
            batch, self._batch = self._batch, []
            self._host.add_many(batch)

    def _use_worker(self) -> StatsWorker | None:
        """The statistics worker when this step's tensors are all on CPU and the config allows one."""
        assert self.config is not None
        if not self.config.stats_worker or not self._params_on_cpu or self._kernel_reads_params:
            return None
        if self._worker is None:
            self._worker = StatsWorker(self.config.stats_in_flight)
        return self._worker

    def _worker_room(self, worker: StatsWorker) -> bool:
        """Whether a snapshot buffer is free, waiting for one within the wait allowance (`WORKER_WAIT_SHARE`)."""
        if worker.has_room():
            return True
        assert self.config is not None
        now = time.monotonic()
        limit = self.config.max_block_seconds
        self._wait_allowance = min(limit, self._wait_allowance + WORKER_WAIT_SHARE * (now - self._wait_clock))
        room = worker.wait_for_room(self._wait_allowance)
        self._wait_clock = time.monotonic()
        self._wait_allowance = max(0.0, self._wait_allowance - (self._wait_clock - now))
        return room

    def _free_slot(self, worker: StatsWorker) -> int:
        """The lowest snapshot slot the worker is done with: the same, cache-warm buffer while it keeps up."""
        busy = self._slots_in_flight
        del busy[: len(busy) - worker.in_flight]  # the worker finishes slot jobs in submission order
        return min(set(range(worker.max_in_flight)).difference(busy))

    def _skip(self, step: int) -> None:
        """Drop saved step `step`: every snapshot buffer is still with the worker, and training must not wait."""
        assert self._writer is not None
        if not self.skipped_steps:
            log.warning(
                "trainguard: statistics worker still busy with %d saved steps; step %d skipped "
                "(further skips are only counted: END.json skipped_steps)",
                self.config.stats_in_flight if self.config else 0,
                step,
            )
        self.skipped_steps += 1
        self._writer.skipped_steps = self.skipped_steps
        self._skipped_step = step
        self._acts_small = {}
        self._reset_step()

    def _reset_step(self) -> None:
        """Forget what was gathered for the saved step in progress (handed on, or skipped)."""
        self._staged = None
        self._reduced = []
        self._batch = []
        self._host.clear()
        self._units = {}
        self._unit_inputs = []
        self._hists = {}

    def _plan_params(self, devices: tuple[torch.device, ...]) -> None:
        """Lay out the packed parameters per device once (tracked ones first: their rows are compared
        with the copies kept from earlier steps); redone when modules are added or moved."""
        assert self.config is not None
        track = self.config.track_updates
        small = [p for p in self._params if p.tid is not None and self._packs(p.param)]
        small.sort(key=lambda p: not (track and p.param.requires_grad))
        self._small_params = small
        self._large_params = [p for p in self._params if p.tid is not None and not self._packs(p.param)]
        self._grad_params = [p for p in self._params if p.want_grad]
        plan: dict[torch.device, tuple[list[int], list[int], list[torch.Tensor], int]] = {}
        for p in small:
            ids, numels, tensors, tracked = plan.get(p.param.device, ([], [], [], 0))
            ids.append(p.tid)  # type: ignore[arg-type]
            numels.append(p.param.numel())
            tensors.append(p.param)
            plan[p.param.device] = (ids, numels, tensors, tracked + int(track and p.param.requires_grad))
        self._param_plan = [(device, *entry) for device, entry in plan.items()]
        self._param_devices = devices
        self._params_on_cpu = all(d.type == "cpu" for d in devices)
        self._kernel_reads_params = self._native and any(native.usable(p.param) for p in self._params)
        large = self._large_params
        self._native_plan = (
            _NativePlan(list(large), [p.param.data_ptr() for p in large])
            if self._kernel_reads_params and not small and all(native.usable(p.param) for p in large)
            else None
        )
        if (
            self._params_on_cpu
            and self.config.native_stats
            and not native.AVAILABLE
            and not self._warned_native
        ):
            self._warned_native = True
            log.warning(
                "trainguard: the hook's C kernel was not built (no C compiler when trainguard was installed?); "
                "CPU statistics take the slower torch path. Reinstall with gcc present, or set "
                "TRAINGUARD_NATIVE_STATS=false to silence this"
            )

    def _stage_native(self, step: int) -> bool:
        """`_stage` for a saved step the C kernel reads whole (`_NativePlan`; nothing packed or reduced by torch
        so far): the gradients, in one call (with a Tier-1 histogram each: one call each). False, having
        done nothing, when `_stage` must take the step."""
        if self._native_plan is None or self._acts_small or self._reduced:
            return False  # the parameters' plan itself is checked when they are read (`_complete_native`)
        ids: list[int] = []
        grads: list[torch.Tensor] = []
        spec: list[int] = []
        for p in self._grad_params:
            grad = p.param.grad
            if grad is None:
                continue
            tid = p.grad_tid
            row = None if tid is None or grad.is_sparse else native.plain_row(grad)
            if row is None:
                return False  # a gradient new to the catalogue, or one the kernel cannot read
            ids.append(tid)  # type: ignore[arg-type]  # not None when row is not
            grads.append(grad)
            spec += row
        if self._tier1(step):
            for tid, grad in zip(ids, grads):
                self._reduce_now(tid, grad, True)
        else:
            self._host.add_read(ids, spec)
        self._staged_native = step
        return True

    def _plan_holds(self, plan: _NativePlan) -> bool:
        """Whether the plan still serves: a parameter given new storage (moved, `p.data = ...`, also inside a
        custom optimizer's step) gets its spec made again; if the kernel cannot read one now, the plan
        is dropped, and the next saved step plans again on the general path."""
        addresses = [p.param.data_ptr() for p in plan.params]
        if addresses == plan.addresses:
            return True
        if not all(native.usable(p.param) for p in plan.params):
            self._native_plan = self._small_params = None
            return False
        plan.addresses, plan.spec = addresses, None
        return True

    def _complete_native(self, step: int, optimizer: torch.optim.Optimizer) -> None:
        """`_complete` after `_stage_native`: the parameters (unless the optimizer step moved them where the
        kernel cannot read them: then they wait for the next saved step); the rows go to the writer now
        (only a per-unit vector the torch path computed makes them wait for `_finalize`)."""
        assert self.config is not None
        self._staged_native = -1
        plan = self._native_plan
        assert plan is not None
        tier1 = self._tier1(step)
        if self._plan_holds(plan):
            self._read_params(plan, tier1)
        if self._wants("optimizer") and optimizer.param_groups:
            lr = optimizer.param_groups[0].get("lr")
            if lr is not None:
                self._add_scalar(step, "lr", lr, mode="train", collection="optimizer")
        ids, stats, nonfinite = self._host.take()
        units, hists = self._units, self._hists
        if tier1:
            self._units, self._hists = {}, {}
        if all(isinstance(v, np.ndarray) for v in (*units.values(), *hists.values())):
            # on the host already: nothing to copy, so nothing waits for the next iteration
            self._write_rows(step, ids, stats, cast(HostUnits, units), cast(HostHists, hists), nonfinite)
        else:  # a per-unit vector the torch path computed: it joins the step's one copy
            self._pending = _Pending(step, [], [], [], units, hists, ids, stats, nonfinite, tier1=tier1)

    def _read_params(self, plan: _NativePlan, tier1: bool) -> None:
        """The plan's parameters in one kernel call from its spec (made here when missing, with the saved
        copies); on a Tier-1 step one call each, with histogram and "moved" shares."""
        assert self.config is not None
        if plan.spec is None:
            track = self.config.track_updates
            for p in plan.params:
                if p.history is None and track and p.param.requires_grad:
                    p.history = torch_stats.new_history(p.param)
            plan.spec = []
            for p in plan.params:
                h = p.history
                plan.spec += native.spec_row(p.param, *((h.prev, h.first, h.fresh) if h else ()))
            plan.ids = [p.tid for p in plan.params]  # type: ignore[misc]  # planned parameters are captured
        elif plan.fresh:
            plan.spec[4::5] = [int(p.history is not None and p.history.fresh) for p in plan.params]
        if tier1:
            for p in plan.params:
                self._reduce_now(p.tid, p.param, True, p.history)  # type: ignore[arg-type]
        else:
            self._host.add_read(plan.ids, plan.spec)
        if plan.fresh:
            for p in plan.params:
                if p.history is not None:
                    p.history.fresh = False
            plan.spec[4::5] = [0] * len(plan.params)
            plan.fresh = False

    def _stage(self, step: int) -> None:
        """Lay out this step's small tensors per device and load gradients and activations."""
        assert self.config is not None and self._writer is not None
        devices = tuple(p.param.device for p in self._params)
        if self._small_params is None or self._param_devices != devices:
            self._plan_params(devices)
        worker = self._staged_worker = self._use_worker()
        if worker is not None and not self._worker_room(worker):
            self._skip(step)
            return
        self._staged_slot = self._free_slot(worker) if worker is not None else 0
        groups: dict[torch.device, _Group] = {}
        tier1 = self._tier1(step)
        for device, ids, numels, tensors, tracked in self._param_plan:
            units = tuple(torch_stats.unit_count(t) for t in tensors[:tracked]) if tier1 else ()
            groups[device] = _Group(
                self._packer(device),
                list(ids),
                list(numels),
                list(tensors),
                tracked=tracked,
                n_params=len(ids),
                units=units,
            )
        for p in self._grad_params:
            grad = p.param.grad
            if grad is None or grad.is_sparse:
                continue
            if p.grad_tid is None:
                p.grad_tid = self._writer.define(
                    f"grad/{p.name}",
                    collection="gradients",
                    shape=list(grad.shape),
                    dtype=str(grad.dtype).removeprefix("torch."),
                    module=p.module or None,
                    order=self._module_order.get(p.module),
                )
            if not self._packs(grad):
                self._reduce_now(p.grad_tid, grad, tier1)
                continue
            g = self._group(groups, grad.device)
            g.ids.append(p.grad_tid)
            g.numels.append(grad.numel())
            g.tensors.append(grad)
        self._read_batch()
        for device, acts in self._acts_small.items():
            g = self._group(groups, device)
            for tid, t in acts:
                g.ids.append(tid)
                g.numels.append(t.numel())
                g.tensors.append(t)
        self._acts_small = {}
        for g in groups.values():
            g.slot = self._staged_slot
            g.layout = g.packer.layout(tuple(g.numels))
            g.packer.load(g.layout, g.tensors[g.n_params :], start=g.n_params, slot=g.slot)
            g.tensors = g.tensors[: g.n_params]
        self._staged = groups
        self._staged_step = step

    def _complete(self, step: int, optimizer: torch.optim.Optimizer) -> None:
        """Snapshot the weights and reduce the saved step: on the device (the results stay there until
        `_finalize`), or for CPU tensors on the statistics worker, which also writes the step."""
        assert self.config is not None
        if self._skipped_step == step:
            return
        if self._staged is None or self._staged_step != step:
            self._stage(step)
            if self._skipped_step == step:
                return
        assert self._staged is not None
        tier1 = self._tier1(step)
        ids: list[int] = []
        counts: list[int] = []
        parts: list[torch.Tensor] = []
        for g in self._staged.values():
            assert g.layout is not None
            g.packer.load(g.layout, g.tensors, start=0, slot=g.slot)
            g.tensors = []
        for p in self._large_params:
            assert p.tid is not None  # only captured parameters are planned
            if p.history is None and self.config.track_updates and p.param.requires_grad:
                p.history = torch_stats.new_history(p.param)
            self._reduce_now(p.tid, p.param, tier1, p.history)
        self._read_batch()
        for tid, n, raw in self._reduced:
            parts.append(raw[None, :])
            ids.append(tid)
            counts.append(n)
        if self._wants("optimizer") and optimizer.param_groups:
            lr = optimizer.param_groups[0].get("lr")
            if lr is not None:
                self._add_scalar(step, "lr", lr, mode="train", collection="optimizer")
        host_ids, host_stats, host_nonfinite = self._host.take()
        pending = _Pending(
            step,
            ids,
            counts,
            parts,
            self._units,
            self._hists,
            host_ids=host_ids,
            host_stats=host_stats,
            host_nonfinite=host_nonfinite,
            groups=list(self._staged.values()),
            unit_inputs=self._unit_inputs,
            tier1=tier1,
        )
        self._reset_step()
        worker = self._staged_worker
        if worker is None:
            self._reduce(pending)
            self._pending = pending
            return
        scalars, self._scalars = self._scalars, []
        self._slots_in_flight.append(self._staged_slot)
        worker.submit(f"step {step}", lambda: self._reduce_and_write(pending, scalars), slot=True)

    def _reduce(self, pending: _Pending) -> None:
        """Reduce the pending step's packed buffers (histograms and per-unit vectors on Tier-1 steps: activity
        or saturation of activations, and the share of each parameter unit's row that moved)."""
        for g in pending.groups:
            assert g.layout is not None
            if pending.tier1 and any(g.units):  # before `reduce`, which moves the previous copies on
                moved, first = g.packer.moved(g.layout, g.tracked, g.units, slot=g.slot), 0
                for tid, u in zip(g.ids, g.units):
                    if u:
                        pending.units[(MOVED, tid)] = moved[first : first + u]
                        first += u
            raw = g.packer.reduce(g.layout, tracked=g.tracked, slot=g.slot)
            pending.parts.append(raw)
            pending.ids += g.ids
            pending.counts += g.numels
            if pending.tier1:
                for tid, h in zip(g.ids, g.packer.histograms(g.layout, raw, slot=g.slot).unbind(0)):
                    pending.hists[tid] = h
        for tid, kind, t in pending.unit_inputs:
            unit = torch_stats.unit_vector(t, kind)
            if unit is not None:
                pending.units[(unit[0], tid)] = unit[1]
        pending.groups = []
        pending.unit_inputs = []

    def _reduce_and_write(
        self, pending: _Pending, scalars: list[tuple[int, int, float | torch.Tensor]]
    ) -> None:
        """The statistics worker's job: reduce one saved step, then write it with the scalars recorded before it.

        Touches only the step's own objects, its packer (whose buffers and update history are the
        worker's while it runs: steps come in order, each in its own slot) and the thread-safe writer.
        """
        with torch.no_grad():
            self._reduce(pending)
            self._write(pending, scalars)

    def _finalize(self) -> None:
        """Bring the pending step and the scalars recorded so far to the host in one copy, and write them."""
        pending, self._pending = self._pending, None
        scalars, self._scalars = self._scalars, []
        self._write(pending, scalars)

    def _write(self, pending: _Pending | None, scalars: list[tuple[int, int, float | torch.Tensor]]) -> None:
        """Copy a reduced step and scalars to the host in one copy and write them (training thread or worker).

        Results the C kernel already left on the host (numpy) are taken as they are.
        """
        w = self._writer
        if w is None or w.disabled:
            return
        results: list[Result] = []
        if pending is not None:
            results += pending.parts
            results += list(pending.units.values()) + list(pending.hists.values())
        results += [v.reshape(-1)[:1] for _, _, v in scalars if isinstance(v, torch.Tensor)]
        host = iter(_to_host(results))
        if pending is not None:
            parts = [next(host).reshape(-1, len(torch_stats.RAW_COLUMNS)) for _ in pending.parts]
            units = {k: next(host).astype(np.float32, copy=False) for k in pending.units}
            hists = {k: next(host).astype(np.float32, copy=False) for k in pending.hists}
            ids, stats = pending.host_ids, pending.host_stats
            nonfinite: bool | None = (
                pending.host_nonfinite
            )  # known for the kernel's rows; else the writer looks
            if pending.ids:
                finished = torch_stats.finish(np.concatenate(parts), np.asarray(pending.counts))
                ids = ids + pending.ids
                stats = finished if stats is None else np.concatenate([stats, finished])
                nonfinite = None
            self._write_rows(pending.step, ids, stats, units, hists, nonfinite)
        by_step: dict[int, tuple[list[int], list[float]]] = {}
        for step, tid, value in scalars:
            v = float(next(host)[0]) if isinstance(value, torch.Tensor) else float(value)
            ids, values = by_step.setdefault(step, ([], []))
            ids.append(tid)
            values.append(v)
        for step, (ids, values) in sorted(by_step.items()):
            w.write_scalars(step, ids, values)

    def _write_rows(
        self,
        step: int,
        ids: list[int],
        stats: np.ndarray | None,
        units: HostUnits,
        hists: HostHists,
        nonfinite: bool | None,
    ) -> None:
        """Hand a saved step's host rows (and Tier-1 extras) to the writer; `nonfinite` as `write_step` takes it."""
        w = self._writer
        if ids and stats is not None and w is not None:
            w.write_step(
                step,
                self._ids_array(ids),
                stats,
                wall_time=time.time(),
                units=units or None,
                hists=hists or None,
                nonfinite=nonfinite,
            )

    def _ids_array(self, ids: list[int]) -> np.ndarray:
        """The step's tensor ids as written: the last step's array when they are the same (usually: every saved
        step reduces its tensors in the same order), so the writer need not compare them."""
        if self._ids is None or self._ids[0] != ids:
            self._ids = (ids, np.asarray(ids, np.int32))
        return self._ids[1]

    # --- scalars and control --------------------------------------------------------------------------
    def record_scalar(
        self, name: str, value: float | torch.Tensor, *, mode: str = "train", collection: str | None = None
    ) -> None:
        """Record a scalar (a float or a one-element tensor, which stays on its device until the step's copy).

        A scalar belongs to the iteration in progress: after `optimizer.step()` and before the
        next training forward of a registered module, that is the step just completed. Train
        scalars are kept on saved steps only; eval scalars always. On an iteration where neither
        its step nor the one before is saved the forward is not watched (`_watch_forward`), so a
        value recorded during it belongs to the step just completed: no train scalar is kept
        either way; an eval scalar recorded mid-iteration lands one step back.
        """
        step = self._record_step()
        if (mode == "train" and step % self._every) or self._writer is None or not self.enabled:
            return
        try:
            self._add_scalar(step, name, value, mode=mode, collection=collection)
            if self._pending is None and len(self._scalars) >= 4096:
                self._finalize()  # a long eval loop between saved steps: bound what is held
        except Exception as err:  # noqa: BLE001
            self._fail(f"record_scalar({name!r})", err)

    def _add_scalar(
        self, step: int, name: str, value: float | torch.Tensor, *, mode: str, collection: str | None
    ) -> None:
        """Write a scalar now (on the host) or with the step's copy (on a device); `collection` None: "losses" for a
        name with "loss" in it, else "metrics" (the catalogue keeps a name's first)."""
        assert self._writer is not None
        if isinstance(value, torch.Tensor):
            if self._native and value.is_cpu and value.numel() == 1:
                value = float(value.item())  # on CPU reading it is no transfer, no sync and no graph
            else:
                value = value.detach()
        else:
            value = float(value)
        coll = collection or ("losses" if "loss" in name.lower() else "metrics")
        tid = self._writer.define(name, collection=coll, mode=mode)
        if isinstance(value, float):
            self._writer.write_scalar(step, tid, value)  # on the host: nothing to wait for
        else:
            self._scalars.append((step, tid, value))  # on the device: it joins the step's one copy

    def _record_step(self) -> int:
        """The step a value recorded now belongs to: the iteration in progress, else the step just completed."""
        return self.step if self._in_iteration or self.step == 0 else self.step - 1

    # --- predictions ----------------------------------------------------------------------------------
    def record_predictions(
        self,
        scores: Any,
        labels: Any,
        *,
        name: str = "predictions",
        mode: str = "train",
        logits: bool = False,
        max_classes: int = 10,
    ) -> None:
        """Add a batch of predictions to bucket counts (AUC, ROC, PR, calibration downstream).

        Same semantics as `Recorder.record_predictions`. Binary: `scores` [N] probabilities (or
        logits with `logits=True`) and 0/1 `labels`. Multi-class: `scores` [N, C] probabilities and
        integer `labels`, counted one-vs-rest for the `max_classes` most frequent classes of the
        first batch (whose labels are read on the host once). Counts accumulate on the scores'
        device on every call without a host sync; they belong to the step a scalar recorded now
        would (`record_scalar`). Train counts are written on saved steps (everything since the
        previous saved step), eval counts for every step that has some, the rest at `close`; they
        add up exactly. Written counts reach the host in a second small copy of their own
        (float64[3, 10^4] per stream and class) right after the saved step's copy, when the device
        has just synchronised: they do not ride in the step's one copy. A failure (e.g. scores and
        labels of different lengths) never raises: it disables capture like any hook failure.
        """
        if not self.enabled or not self._wants("predictions"):
            return
        try:
            step = self._record_step()
            stream = self._predictions.get((name, mode))
            if stream is None:
                counter = PredictionCounter(logits=logits, max_classes=max_classes)
                stream = self._predictions[(name, mode)] = _PredStream(counter, step)
            elif step > stream.step:
                self._close_predictions(name, mode, stream, step)
            stream.counter.add(scores, labels)
        except Exception as err:  # noqa: BLE001 - never raise into training
            self._fail(f"record_predictions({name!r})", err)

    def _close_predictions(
        self, name: str, mode: str, stream: _PredStream, step: int, *, final: bool = False
    ) -> None:
        """The counts of `stream.step` are complete: queue them if that step writes them, then go on at `step`."""
        if final or mode != "train" or self.is_saved_step(stream.step):
            raw = stream.counter.take_raw()  # still on the device
            if raw:
                self._pred_ready.append((stream.step, name, mode, raw))
        stream.step = step

    def _ship_predictions(self, *, final: bool = False) -> None:
        """Close the streams whose step is over (all of them when `final`) and write their counts in one copy."""
        try:
            now = self._record_step()
            for (name, mode), stream in self._predictions.items():
                if final or stream.step < now:
                    self._close_predictions(name, mode, stream, now, final=final)
            ready, self._pred_ready = self._pred_ready, []
            if not ready or self._writer is None:
                return
            flat = [torch.as_tensor(t) for *_, raw in ready for t in raw.values()]
            host = _gather_to_host(flat)
            parts = iter(np.split(host, np.cumsum([t.numel() for t in flat])[:-1]))
            for step, name, mode, raw in ready:
                counts = {cls: next(parts).reshape(tuple(t.shape)) for cls, t in raw.items()}
                write_counts(self._writer, step, name, mode, counts)
        except Exception as err:  # noqa: BLE001
            self._fail("writing prediction counts", err)

    def should_stop(self) -> bool:
        """True once the evaluator asked this job to stop (cooperative stop)."""
        return self._stop.is_set()

    def stop_reason(self) -> str | None:
        """The message the evaluator left with the stop request, if any."""
        return self._stop.reason()

    def flush(self) -> None:
        """Write the pending step and scalars and hand the buffer to the uploader.

        With a statistics worker, wait (at most `WORKER_DRAIN_SECONDS`) for its steps in flight first.
        """
        if self._writer is None:
            return
        try:
            worker = self._worker
            if worker is not None and self.enabled:
                if self._scalars:
                    scalars, self._scalars = self._scalars, []
                    worker.submit("scalars", lambda: self._write(None, scalars), slot=False)
                if not worker.drain(WORKER_DRAIN_SECONDS):
                    log.warning(
                        "trainguard: statistics worker still busy after %.0fs at flush", WORKER_DRAIN_SECONDS
                    )
                self._check_worker()
            if self.enabled and (self._pending is not None or self._scalars):
                self._finalize()
            self._writer.flush()
        except Exception as err:  # noqa: BLE001
            self._fail("flush", err)

    def wait_idle(self, timeout: float = WORKER_DRAIN_SECONDS) -> bool:
        """Wait at most `timeout` seconds until the statistics worker and the uploader have nothing in flight;
        True if both are idle. Writes nothing early (unlike `flush`): for benchmarks and tests."""
        deadline = time.monotonic() + timeout
        if self._worker is not None and not self._worker.drain(timeout):
            return False
        return self._writer is None or self._writer.wait_idle(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        """Flush, write END.json, remove every hook. Idempotent; also runs at interpreter exit."""
        if self._closed:
            return
        if self.enabled and self._predictions:
            self._ship_predictions(final=True)  # counts since the last written step still belong to the run
        if self.enabled:
            self.flush()
        self._closed = True
        self._remove_handles()
        if self._worker is not None:
            if self._worker.in_flight and self._writer is not None:
                self._writer.errors.append(
                    f"statistics worker still held {self._worker.in_flight} saved steps after "
                    f"{WORKER_DRAIN_SECONDS:.0f}s at close; they are not written"
                )
            self._worker.stop()
        if self._writer is not None:
            self._writer.close()
            atexit.unregister(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _to_host(results: list[Result]) -> list[np.ndarray]:
    """Each result as a flat host array, in order: the device tensors among them in one copy (`_gather_to_host`)."""
    tensors = [t for t in results if isinstance(t, torch.Tensor)]
    if not tensors:
        return [np.asarray(r).reshape(-1) for r in results]
    host = _gather_to_host(tensors)
    out: list[np.ndarray] = []
    offset = 0
    for r in results:
        if isinstance(r, torch.Tensor):
            n = r.numel()
            out.append(host[offset : offset + n])
            offset += n
        else:
            out.append(r.reshape(-1))
    return out


def _gather_to_host(tensors: Iterable[torch.Tensor]) -> np.ndarray:
    """Concatenate float tensors per device and copy each device's block once (one copy on one device)."""
    tensors = list(tensors)
    if not tensors:
        return np.zeros(0)
    first = tensors[0].device
    if all(t.device == first for t in tensors):  # the usual case: one device, one copy
        return torch_stats.to_host(torch.cat([t.reshape(-1).to(torch.float64) for t in tensors]))
    by_device: dict[torch.device, list[torch.Tensor]] = {}
    order: list[tuple[torch.device, int]] = []
    for t in tensors:
        lst = by_device.setdefault(t.device, [])
        order.append((t.device, len(lst)))
        lst.append(t.reshape(-1).to(torch.float64))
    if not order:
        return np.zeros(0)
    blocks: dict[torch.device, list[np.ndarray]] = {}
    for device, lst in by_device.items():
        host = torch_stats.to_host(torch.cat(lst))
        sizes = [t.numel() for t in lst]
        blocks[device] = np.split(host, np.cumsum(sizes)[:-1])
    return np.concatenate([blocks[d][i] for d, i in order])
