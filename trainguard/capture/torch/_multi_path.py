"""The multi-tensor path: a saved step reduced with one `multi_stats` op per group, straight into its result rows.

Chosen (`_paths.Paths.choose`) when every captured parameter lies on a device where the op
`trainguard::multi_stats` (`_multi`) runs its kernel (`runs_on`: CUDA with Triton; the CPU under
Triton's interpreter, for tests; fake CUDA tensors, for the CPU proxies of the hook's cost). The
captured activations are read where they lie (no copy), all of one (device, dtype) with one op when
the registered module's forward returns (`flush_activations`): each forward hook only keeps its
output, up to `DEFER_MAX_BYTES` per group (then the group kept so far is reduced at once). An output
changed in place after its forward hook would be read changed, so an activation is kept only once a
saved step has shown it unchanged at the forward's end (read in its hook that time, its version
noted); one found changed later is dropped from that step (logged) and read in its hook from then
on. On Tier-1 steps the kept group's histograms take one more op; each activation's per-unit vector
is taken in its hook (torch ops). The optimizer's pre-hook reduces every gradient of a (device,
dtype) group with one op (the plain parameters grouped once per layout), its post-hook
every parameter of a group with one op (the tracked ones with their previous and first copies,
which the op refreshes). The parameters' groups are made once per layout (`_ParamGroup`) and the
gradients read inline, so a saved step's host work grows with the groups, not with the parameters.
Every op writes its rows into the device's `_finalize.ResultBuffer`, so a
saved step allocates nothing and its results leave in one copy per device. Rows without a
previous copy get their NaN update/distance on the host (`Pending.nan_update`). On Tier-1 steps
each group's histograms take one `multi_hist` op and its parameters' per-unit "moved" shares one
`multi_moved` op, each result one block of the step (`Pending.hist_blocks`, `unit_blocks`: split per tensor on the
host, not as a device view per tensor); the activations' per-unit vectors keep the torch ops of `device_stats`.
"""

from __future__ import annotations

import functools
import logging
import operator
import weakref
from dataclasses import dataclass, field
from typing import cast

import torch

from trainguard.capture.torch import _multi, device_stats
from trainguard.capture.torch._finalize import StepWriter
from trainguard.capture.torch._plan import CapturePlan, Param
from trainguard.capture.torch._step import Pending, SavedStep, Scalars
from trainguard.store import run_format, writer
from trainguard.store.stats import MOVED

log = logging.getLogger(__name__)

DEFER_MAX_BYTES = 256 * 2**20
"""Activation bytes of one (device, dtype) group a saved step's forward may keep for its one op at the forward's end:
above it the group kept so far is reduced at once, so that the extra memory the hook holds (outputs autograd
would have freed, as under activation checkpointing) stays below this."""


def runs_on(device: torch.device) -> bool:
    """Whether the multi-tensor path serves tensors of `device`.

    `_multi.available` says where the kernel runs. A CUDA tensor on a machine without CUDA can only
    be a fake one (FakeTensorMode: the CPU proxies of the hook's cost), which the op's fake
    implementation serves.
    """
    if device.type == "cuda":
        return _serves_cuda()  # asked for every tensor of every saved step: answered once
    return _multi.available(device)


@functools.cache
def _serves_cuda() -> bool:
    return not torch.cuda.is_available() or _multi.available(torch.device("cuda"))


class _Rows:
    """What the saved step in progress reduced so far: ids, sizes and row blocks, in the order reserved."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.counts: list[int] = []
        self.parts: list[torch.Tensor] = []
        self.nan_update: list[int] = []
        self.nan_distance: list[int] = []

    def add(self, ids: list[int], counts: list[int], rows: torch.Tensor, fresh: list[bool] | None) -> None:
        """Note one op's rows; `counts`: each tensor's elements; `fresh`: per row, whether it has no previous copy
        yet (None: not tracked)."""
        first = len(self.ids)
        self.ids += ids
        self.counts += counts
        self.parts.append(rows)
        if fresh is None:
            self.nan_distance += range(first, first + len(ids))
            self.nan_update += range(first, first + len(ids))
        elif True in fresh:  # the first saved step of a tracked parameter only
            self.nan_update += [first + i for i, f in enumerate(fresh) if f]


@dataclass
class _Kept:
    """Activations of one (device, dtype) kept for one op at the forward's end: ids, outputs, their versions."""

    tier1: bool
    ids: list[int] = field(default_factory=list)
    xs: list[torch.Tensor] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    nbytes: int = 0


@dataclass
class _ParamGroup:
    """The parameters of one (device, dtype, tracked) group of a layout, as `MultiPath.complete` reads them."""

    device: torch.device
    tracked: bool
    params: list[Param]
    ids: list[int]
    xs: list[torch.Tensor] | None
    """The parameters themselves (the objects, so that data swapped into them is what is read; the op reads them
    under no_grad), plain and contiguous (`refresh` lays out again when that changes); None when their parts are
    looked up at each step (DTensor shards: FSDP2 may give them new storage)."""
    served: bool
    """`runs_on(device)`: the op reads them; else torch ops, one at a time."""
    counts: list[int]
    """Each parameter's elements (this rank's part, for shards): the layout's, as `refresh` compares them."""
    plain: bool
    """Every parameter is a plain `torch.Tensor` or `nn.Parameter` (`_multi.reduce_group`'s `plain`): the objects
    are the layout's, and an object's type does not change."""
    copies: _Copies | None = None
    """The tracked parameters' histories as the last saved step read them (made again when one is new)."""


@dataclass(eq=False)
class _Copies:
    """A tracked group's histories and their previous and first copies in order, kept while the histories are the
    same objects (the op refreshes a previous copy in place)."""

    histories: list[device_stats._History]
    prevs: list[torch.Tensor]
    firsts: list[torch.Tensor]
    fresh: bool
    """Some history has not been read yet (`_History.fresh`): its update is NaN once."""

    @staticmethod
    def of(histories: list[device_stats._History]) -> _Copies:
        return _Copies(
            histories,
            [h.prev for h in histories],
            [h.first for h in histories],
            any(h.fresh for h in histories),
        )


_NOT_FRESH: list[bool] = []
"""`_Rows.add`'s `fresh` when no row of a tracked group is fresh: no NaN update to mark."""


@dataclass
class _GradGroup:
    """The parameters of one (device, dtype) group of a layout whose gradients `MultiPath.stage` reads inline."""

    key: tuple[torch.device, torch.dtype]
    ids: list[int]
    """Their gradients' record ids."""
    sources: list[torch.Tensor]
    """The parameters (the objects: a gradient is read from `.grad` at each step), requiring a gradient and not
    empty."""
    counts: list[int]
    """Their sizes: their gradients' (the layout's, as `refresh` compares them)."""
    served: bool
    """`runs_on(device)`: the op reads their gradients; else torch ops, one at a time."""


def _is_tensor(grad: torch.Tensor | None) -> bool:
    return grad is not None


_contiguous = operator.methodcaller("is_contiguous")


class MultiPath:
    """Stages and completes saved steps with one `multi_stats` op per group into preallocated result rows."""

    def __init__(
        self,
        plan: CapturePlan,
        saved: SavedStep,
        scalars: Scalars,
        step_writer: StepWriter,
        w: writer.RankWriter,
    ) -> None:
        self.plan = plan
        self.saved = saved
        self.scalars = scalars
        self.step_writer = step_writer
        self._writer = w
        self._rows = _Rows()
        self._groups: list[_ParamGroup] = []
        self._groups_of: object = None
        """The layout (`CapturePlan.placement`, by identity) `_groups` were made for."""
        self._kept: dict[tuple[torch.device, torch.dtype], _Kept] = {}
        """Activations kept for one op per group at the forward's end (`flush_activations`)."""
        self._keepable: dict[int, bool] = {}
        """Per activation id: seen unchanged at a forward's end (kept from then on), or changed in place (read in
        its hook); absent: not yet seen, read in its hook and watched (`_watched`)."""
        self._grad_groups: list[_GradGroup] = []
        self._grad_others: list[Param] = []
        self._grads_defined = 0
        """Gradients `stage` defined so far: a new one makes `_group_grads` run again."""
        self._grads_of: object = None
        """The layout and defined count `_grad_groups` were made for."""
        self._watched: list[tuple[int, weakref.ReferenceType[torch.Tensor], int]] = []
        """Activations read in their hook this step whose outputs' versions `flush_activations` compares."""

    def _reduce(
        self,
        ids: list[int],
        xs: list[torch.Tensor],
        histories: list[device_stats._History] | _Copies | None,
        tier1: bool,
        *,
        counts: list[int] | None = None,
        plain: bool = False,
    ) -> None:
        """One op over `xs` (one device and dtype) into freshly reserved rows; Tier-1 extras after it. `counts`:
        the xs' sizes when the caller knows them (a parameter group's, made once per layout); `plain`: every x is
        known to be a plain tensor (`_multi.reduce_group`)."""
        device = xs[0].device
        rows = self.step_writer.buffer(device).rows(len(xs))
        fresh = None
        if histories is not None:
            copies = histories if isinstance(histories, _Copies) else _Copies.of(histories)
            fresh = [h.fresh for h in copies.histories] if copies.fresh else _NOT_FRESH
            if tier1:  # the "moved" share compares with the previous copy: before the op refreshes it
                self._moved(ids, xs, copies.histories)
            prevs, firsts = copies.prevs, copies.firsts
            if copies.fresh:
                for h in copies.histories:
                    h.fresh = False
                copies.fresh = False
        else:
            prevs = firsts = []
        # grouped by device and dtype, contiguous
        _multi.reduce_group(xs, prevs, firsts, rows, checked=True, plain=plain)
        if (
            tier1
        ):  # the group's histograms: one more op, and the zero/NaN/Inf fix-up on the group's rows at once
            hists = torch.empty(len(xs), run_format.HIST_BINS, dtype=torch.float64, device=device)
            _multi.hist_group(xs, hists, checked=True, plain=plain)
            device_stats.fix_bins(hists, rows)
            self.saved.hist_blocks.append((ids, hists))  # one result for the group: split on the host
        self._rows.add(ids, [x.numel() for x in xs] if counts is None else counts, rows, fresh)

    def _moved(self, ids: list[int], xs: list[torch.Tensor], histories: list[device_stats._History]) -> None:
        """The per-unit "moved" shares of a group's tracked parameters with units: one `multi_moved` op for those
        with a previous copy (one block, tensor after tensor); NaN for those without one yet."""
        read: list[tuple[int, torch.Tensor, torch.Tensor]] = []
        for tid, x, h in zip(ids, xs, histories):
            if device_stats.unit_count(x):
                if h.fresh:
                    self.saved.units[(MOVED, tid)] = device_stats.moved_large(x, h)
                else:
                    read.append((tid, x, h.prev))
        if not read:
            return
        lengths = [x.shape[0] for _, x, _ in read]
        shares = torch.empty(sum(lengths), dtype=torch.float64, device=xs[0].device)
        # the group's tensors and their copies, made for each other (`reduce_group`'s `checked`)
        _multi.moved_group([x for _, x, _ in read], [prev for _, _, prev in read], shares, checked=True)
        keys = [(MOVED, tid) for tid, _, _ in read]
        self.saved.unit_blocks.append((keys, lengths, shares))  # split on the host

    def add_activation(self, tid: int, kind: str, output: torch.Tensor, tier1: bool) -> None:
        """An activation in its forward hook, read where it lies: kept for its group's op at the forward's end
        when it is known to stay unchanged until then, else reduced here with one op (a later
        in-place op cannot change what that read: the op is ordered before it on the device)."""
        x = output.detach()
        if tier1:
            unit = device_stats.unit_vector(x, kind)
            if unit is not None:
                self.saved.units[(unit[0], tid)] = unit[1]
        device = x.device
        if x.is_sparse or not runs_on(device):
            self.saved.reduce_now(tid, x, tier1)  # rare: torch ops where the op has no kernel
            return
        if not x.is_contiguous():
            self._reduce([tid], [x.contiguous()], None, tier1)
            return
        keepable = self._keepable.get(tid)
        if not keepable:
            self._reduce([tid], [x], None, tier1)
            if keepable is None:
                self._watched.append((tid, weakref.ref(output), output._version))
            return
        key = (device, x.dtype)
        kept = self._kept.get(key)
        if kept is None:
            kept = self._kept[key] = _Kept(tier1)
        kept.ids.append(tid)
        kept.xs.append(x)
        kept.versions.append(x._version)
        kept.nbytes += x.nbytes
        if kept.nbytes >= DEFER_MAX_BYTES:
            self._reduce_kept(kept)

    def flush_activations(self) -> None:
        """The registered module's forward returned (or the step goes on without that): reduce the activations
        kept, one op per group, and note which activations read in their hooks stayed unchanged until now."""
        for tid, ref, version in self._watched:
            out = ref()
            self._keepable[tid] = out is None or out._version == version
        self._watched = []
        for kept in self._kept.values():
            if kept.ids:
                self._reduce_kept(kept)
        self._kept = {}

    def _reduce_kept(self, kept: _Kept) -> None:
        """One op over the activations kept in `kept` that are unchanged since their hooks; those changed in place
        are dropped from this step (their values are gone) and read in their hooks from now on."""
        ids, xs = kept.ids, kept.xs
        changed = [i for i, (x, v) in enumerate(zip(xs, kept.versions)) if x._version != v]
        if changed:
            for i in changed:
                self._keepable[ids[i]] = False
                log.warning(
                    "trainguard: %s was changed in place after its forward hook; this saved step has no "
                    "statistics of it, and it is read in its hook from now on",
                    self._writer.info(ids[i]).name,
                )
            keep = [i for i in range(len(ids)) if i not in changed]
            ids, xs = [ids[i] for i in keep], [xs[i] for i in keep]
        if ids:
            self._reduce(ids, xs, None, kept.tier1)
        kept.ids, kept.xs, kept.versions, kept.nbytes = [], [], [], 0

    def stage(self, step: int) -> bool:
        """Optimizer pre-hook of saved step `step`: one op per (device, dtype) group of gradients."""
        plan = self.plan
        tier1 = plan.tier1(step)
        if self._grads_of != (plan.placement, self._grads_defined):
            self._grad_groups, self._grad_others = self._group_grads()
        groups: dict[
            tuple[torch.device, torch.dtype], tuple[list[int], list[torch.Tensor], list[int], bool]
        ] = {}
        with torch.no_grad():
            for g in self._grad_groups:
                # defined and plain: read inline, no call per parameter (the usual case, every saved step); a
                # gradient has its parameter's device, dtype and size (autograd and the `.grad` setter see to
                # it), so the group's frozen and empty parameters are left out once per layout (`_group_grads`)
                read = [s.grad for s in g.sources]
                if all(map(_is_tensor, read)):
                    tids, grads, counts = g.ids, cast("list[torch.Tensor]", read), g.counts
                else:  # a parameter without a gradient this step
                    tids = [tid for tid, grad in zip(g.ids, read) if grad is not None]
                    counts = [n for n, grad in zip(g.counts, read) if grad is not None]
                    grads = [grad for grad in read if grad is not None]
                if not all(map(_contiguous, grads)):
                    grads = [grad if grad.is_contiguous() else grad.contiguous() for grad in grads]
                if not g.served:
                    for tid, grad in zip(tids, grads):
                        self.saved.reduce_now(tid, grad, tier1)
                    continue
                group = groups.get(g.key)
                if group is None:
                    groups[g.key] = (list(tids), grads, list(counts), True)
                else:
                    group[0].extend(tids)
                    group[1].extend(grads)
                    group[2].extend(counts)
            for p in self._grad_others:
                got = plan.gradient(p, self._writer)  # this rank's part of a readable gradient (`_kinds`)
                if p.grad_tid is not None and not (p.sharded or p.grad_skipped):
                    self._grads_defined += 1  # defined and plain now: read inline from the next saved step on
                if got is None:
                    continue
                tid, grad = got
                key = (grad.device, grad.dtype)
                group = groups.get(key)
                if group is None:
                    group = groups[key] = ([], [], [], runs_on(grad.device))
                if not group[3]:
                    self.saved.reduce_now(tid, grad, tier1)
                    continue
                group[0].append(tid)
                group[1].append(grad if grad.is_contiguous() else grad.contiguous())
                group[2].append(grad.numel())
            for ids, xs, counts, served in groups.values():
                if served and ids:
                    self._reduce(ids, xs, None, tier1, counts=counts)
        return True

    def _group_grads(self) -> tuple[list[_GradGroup], list[Param]]:
        """The parameters whose gradients `stage` reads inline (defined, plain, readable), in (device, dtype) groups,
        and the others (`CapturePlan.gradient` each time); made once per layout and again when a gradient is
        defined. A frozen or empty parameter is left out of its group: whether it requires a gradient, and its
        size, are the layout's (`CapturePlan.refresh` lays out again when they change)."""
        plan = self.plan
        plain: dict[tuple[torch.device, torch.dtype], _GradGroup] = {}
        others: list[Param] = []
        for p in plan.grad_params:
            if p.grad_tid is not None and not (p.sharded or p.grad_skipped):
                source = p.source
                key = (source.device, source.dtype)
                g = plain.get(key)
                if g is None:
                    g = plain[key] = _GradGroup(key, [], [], [], runs_on(source.device))
                if source.requires_grad and source.numel():  # frozen now: a gradient it holds is stale
                    g.ids.append(p.grad_tid)
                    g.sources.append(source)
                    g.counts.append(source.numel())
            else:
                others.append(p)
        self._grads_of = (plan.placement, self._grads_defined)
        return list(plain.values()), others

    def read_initial(self, got: list[tuple[int, torch.Tensor]]) -> None:
        """Read parameters (record id, tensor) before the update, as their initial-weights records
        (`_initial`): one op per (device, dtype) group, untracked (update and distance NaN)."""
        groups: dict[tuple[torch.device, torch.dtype], tuple[list[int], list[torch.Tensor]]] = {}
        with torch.no_grad():
            for tid, x in got:
                if not runs_on(x.device):
                    self.saved.reduce_now(tid, x, False)
                    continue
                ids, xs = groups.setdefault((x.device, x.dtype), ([], []))
                ids.append(tid)
                xs.append(x if x.is_contiguous() else x.contiguous())
            for ids, xs in groups.values():
                self._reduce(ids, xs, None, False)

    def complete(self, step: int, optimizer: torch.optim.Optimizer) -> Pending | None:
        """Optimizer post-hook: one op per (device, dtype) group of parameters (tracked ones apart, with their
        copies); return the step, whose rows the hook sends to the host at the next iteration."""
        plan = self.plan
        assert plan.config is not None
        tier1 = plan.tier1(step)
        if self._groups_of is not plan.placement:
            self._groups, self._groups_of = self._group(), plan.placement
        with torch.no_grad():
            for g in self._groups:
                params, tracked = g.params, g.tracked
                xs = g.xs if g.xs is not None else [p.param.detach() for p in params]
                if not g.served:
                    for p, x in zip(params, xs):
                        assert p.tid is not None
                        if tracked and p.history is None:
                            p.history = device_stats.new_history(p.param)
                        self.saved.reduce_now(p.tid, x, tier1, p.history if tracked else None)
                    continue
                if g.xs is None:
                    xs = [x if x.is_contiguous() else x.contiguous() for x in xs]
                copies = None
                if tracked:
                    got = [p.history for p in params]
                    copies = g.copies
                    if copies is None or not all(map(operator.is_, got, copies.histories)):
                        if not all(got):  # a parameter's first saved step (a `_History` is always true)
                            for p in params:
                                if p.history is None:
                                    p.history = device_stats.new_history(p.param)
                            got = [p.history for p in params]
                        copies = g.copies = _Copies.of(cast("list[device_stats._History]", got))
                self._reduce(g.ids, xs, copies, tier1, counts=g.counts, plain=g.plain)
            estimates = plan.sampled_estimates()
        self.scalars.add_lr(step, optimizer)
        rows, self._rows = self._rows, _Rows()
        saved = self.saved
        ids, counts, parts = rows.ids, rows.counts, rows.parts
        saved.take_reduced(ids, counts, parts)  # tensors on devices the op does not serve
        pending = Pending(
            step,
            ids,
            counts,
            parts,
            saved.units,
            saved.hists,
            tier1=tier1,
            nan_update=rows.nan_update,
            nan_distance=rows.nan_distance,
            estimates=estimates,
            hist_blocks=saved.hist_blocks,
            unit_blocks=saved.unit_blocks,
        )
        saved.reset()
        return pending

    def _group(self) -> list[_ParamGroup]:
        """The captured parameters of the current layout in (device, dtype, tracked) groups, made once per layout:
        a saved step then loops over groups, not over parameters (sampled ones go untracked here, and get
        `sampled_estimates`)."""
        plan = self.plan
        groups: dict[tuple[torch.device, torch.dtype, bool], list[Param]] = {}
        for p in plan.params:
            if p.tid is not None:
                groups.setdefault((p.param.device, p.param.dtype, plan.exact_history(p)), []).append(p)
        out = []
        for (device, _, tracked), params in groups.items():
            plain = not any(p.sharded for p in params) and all(p.source.is_contiguous() for p in params)
            out.append(
                _ParamGroup(
                    device,
                    tracked,
                    params,
                    [p.tid for p in params if p.tid is not None],
                    [p.source for p in params] if plain else None,
                    runs_on(device),
                    [p.param.numel() for p in params],
                    plain and all(type(p.source) in _multi.PLAIN for p in params),
                )
            )
        return out

    def release(self) -> None:
        """Capture stopped: let go of the outputs kept for the forward's end (nothing else is touched)."""
        self._kept = {}
        self._watched = []

    def skip(self) -> None:
        """Forget what the saved step in progress reduced or kept: it is not sent (`Hook._skip`)."""
        self._rows = _Rows()
        self.release()
        for b in self.step_writer.buffers.values():
            b.reset()
        self.saved.reset()
