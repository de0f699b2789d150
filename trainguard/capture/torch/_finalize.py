"""Step finalisation: a saved step's results reach the host in one copy per device and go to the writer.

`StepWriter` takes a `_step.Pending` (raw moments, Tier-1 vectors and histograms still on the
device, plus the rows the C kernel already left on the host) and the scalars waiting for a copy.
`send` (the hook, on the training thread) lays every device tensor out in that device's
`ResultBuffer` (preallocated and kept: rows a path already wrote there stay in place, the rest
join them in one `_foreach_copy_`) and hands the buffers to the `_transfer.Transfer`, which copies
them without waiting; once the copy is done (the hook's next `poll` finds it) the rows are finished
in numpy and written on the transfer's delivery thread, off the training thread. `write` does the
same at once, with a blocking copy (`to_host`): the statistics worker (`_worker_path`) and the CPU.
What to reduce is left to the paths. A delivery touches only its step's own objects (the `Pending`,
the scalars taken for it, the slot's host copy), the thread-safe writer and `_array`'s cache, whose
entries are replaced whole, never changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import torch

from trainguard.capture.torch import device_stats
from trainguard.capture.torch._step import HostHists, HostUnits, Pending, Result, ScalarValue
from trainguard.capture.torch._transfer import Transfer
from trainguard.store import run_format, writer

RAW = len(device_stats.RAW_COLUMNS)

_MAX_VIEWS = 256
"""Row views a `ResultBuffer` keeps for the next saved steps (a step takes a few: one per group)."""


class ResultBuffer:
    """One device's float64 buffer for a saved step's results: allocated once (grown when a step needs more),
    so a saved step allocates nothing; a path may reserve rows of it (`rows`) and write them in place."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._buffer: torch.Tensor | None = None
        self._reserved_in: torch.Tensor | None = None
        self._used = 0
        """Elements reserved by `rows` in the saved step in progress."""
        self._reserved: dict[int, tuple[torch.Tensor, int]] = {}
        """id of each view `rows` gave in this step -> (the view, its offset in the current buffer). By identity,
        not data address: fake tensors (the CPU proxies) have none."""
        self._views: dict[tuple[int, int], torch.Tensor] = {}
        """The views of the current buffer `rows` made, by (offset, rows): a saved step reserves the same rows as
        the one before (its groups are the layout's), so it takes the same views, not a slice and a view each.
        The step before has left the buffer by then (its rows are overwritten either way)."""

    def _ensure(self, numel: int) -> torch.Tensor:
        b = self._buffer
        if b is None or b.numel() < numel:
            # the first saved steps only: later ones have the same size. Rows reserved in the old buffer are
            # copied over by `lay_out`, which finds them out of place.
            b = self._buffer = torch.empty(
                max(numel + numel // 2, 4096), dtype=torch.float64, device=self.device
            )
        return b

    def rows(self, count: int) -> torch.Tensor:
        """Reserve float64 [count, RAW] rows after those reserved so far in this step (a contiguous view)."""
        start, self._used = self._used, self._used + count * RAW
        buffer = self._ensure(self._used)
        if buffer is not self._reserved_in:
            self._reserved, self._reserved_in = {}, buffer  # grown: the earlier rows will be copied over
            self._views = {}
        view = self._views.get((start, count))
        if view is None:
            if len(self._views) >= _MAX_VIEWS:
                self._views = {}  # layouts that keep changing: start again rather than grow
            view = self._views[(start, count)] = buffer[start : self._used].view(count, RAW)
        self._reserved[id(view)] = (view, start)
        return view

    def reset(self) -> None:
        """Forget the rows reserved so far (a step that is not sent)."""
        self._used, self._reserved = 0, {}

    def lay_out(self, tensors: list[torch.Tensor]) -> torch.Tensor:
        """Place `tensors` one after the other from the start (flattened, as float64) and return that flat
        view; those already there (reserved `rows`) stay, the others are copied with one `_foreach_copy_`.
        Ends the step: the next `rows` start from the beginning again."""
        total = sum(t.numel() for t in tensors)
        b = self._ensure(total)
        dst: list[torch.Tensor] = []
        src: list[torch.Tensor] = []
        offset = 0
        for t in tensors:
            n = t.numel()
            reserved = self._reserved.get(id(t)) if b is self._reserved_in else None
            if reserved is None or reserved[0] is not t or reserved[1] != offset:
                dst.append(b[offset : offset + n])
                src.append(t.reshape(-1))
            offset += n
        if dst:
            torch._foreach_copy_(dst, src)
        self._used, self._reserved = 0, {}
        return b[:total]


class StepWriter:
    """Copies reduced steps to the host and writes them; keeps the last step's id array to pass it on."""

    def __init__(self, w: writer.RankWriter, transfer: Transfer | None = None) -> None:
        self._writer = w
        self.transfer = transfer if transfer is not None else Transfer()
        """The ring of host buffers `send` copies into without waiting."""
        self.buffers: dict[torch.device, ResultBuffer] = {}
        """Each device's result buffer for saved steps, kept between them (a path may reserve rows in it)."""
        self._side: dict[torch.device, ResultBuffer] = {}
        """Each device's buffer for what is sent without a step (scalars alone, prediction counts): never
        the step's, whose rows of the step in progress may not have left yet."""
        self._arrays: dict[str, tuple[list[int], np.ndarray]] = {}
        """The last saved step's lists of ids, sizes and NaN rows by name, and their arrays (`_array`): usually the
        same every step."""

    def buffer(self, device: torch.device, *, side: bool = False) -> ResultBuffer:
        """The result buffer of `device` for saved steps (`side`: for what is sent without one), made on first
        use, then kept."""
        buffers = self._side if side else self.buffers
        b = buffers.get(device)
        if b is None:
            b = buffers[device] = ResultBuffer(device)
        return b

    def write(self, pending: Pending | None, scalars: list[ScalarValue]) -> None:
        """Copy a reduced step and scalars to the host in one blocking copy and write them (worker thread, CPU).

        Results the C kernel already left on the host (numpy) are taken as they are.
        """
        if self._writer.disabled:
            return
        self._write_host(iter(to_host(_results(pending, scalars))), pending, scalars)

    def send(self, pending: Pending | None, scalars: list[ScalarValue]) -> bool:
        """Start the copy of a reduced step and scalars to the host, one non-blocking copy per device; the step is
        written on the delivery thread once it is done (`Transfer.poll`, `Transfer.wait`). Written at once when
        nothing is on an accelerator. False, having sent nothing, when every slot of the transfer is in flight."""
        if self._writer.disabled:
            return True

        def write(host: Iterator[np.ndarray]) -> None:
            self._write_host(host, pending, scalars)

        return self.send_results(_results(pending, scalars), write, side=pending is None)

    def send_results(
        self, results: list[Result], write: Callable[[Iterator[np.ndarray]], None], *, side: bool = True
    ) -> bool:
        """Copy `results` to the host without waiting (each device's tensors laid out in a `ResultBuffer`, the
        step's unless `side`, one copy each) and call `write` with their flat host values, in order, on the
        transfer's delivery thread once the copy is done; at once (on the caller's thread) when none is on an
        accelerator. False, having done nothing, when every slot of the transfer is in flight or being
        delivered."""
        tensors = [r for r in results if isinstance(r, torch.Tensor)]
        if self.transfer.at_once({t.device for t in tensors}):
            if not self._writer.disabled:
                write(iter(to_host(results)))  # host memory already: nothing to wait for
            return True
        if not self.transfer.has_room():
            return False
        by_device: dict[torch.device, list[torch.Tensor]] = {}
        ends: dict[torch.device, int] = {}
        # per result, where its values lie in the host copy: (device, start, end), or None for a host array; read
        # here, on the training thread: the delivery thread touches no tensor (a fake one answers otherwise there)
        places: list[tuple[torch.device, int, int] | None] = []
        for r in results:
            if isinstance(r, torch.Tensor):
                d = r.device
                by_device.setdefault(d, []).append(r)
                start = ends.get(d, 0)
                end = ends[d] = start + r.numel()
                places.append((d, start, end))
            else:
                places.append(None)
        flat = {d: self.buffer(d, side=side).lay_out(ts) for d, ts in by_device.items()}

        def deliver(host: dict[torch.device, np.ndarray]) -> None:
            if self._writer.disabled:
                return
            # copies: the slot's host buffer is reused once this returns, and a writer may keep an array it is
            # given (`write_record` does)
            arrays = [
                np.asarray(r).reshape(-1) if at is None else host[at[0]][at[1] : at[2]].copy()
                for r, at in zip(results, places)
            ]
            write(iter(arrays))

        return self.transfer.send(flat, deliver)

    def _write_host(
        self, host: Iterator[np.ndarray], pending: Pending | None, scalars: list[ScalarValue]
    ) -> None:
        """Write a step's rows and scalars from their host copies (`host`, in the order `_results` gathered them):
        finished in numpy first, then written in one segment under the writer's lock (`together`), which the
        training thread's own writes (host scalars) wait for, so the numpy work stays outside it."""
        rows = None if pending is None else self._host_rows(host, pending)
        by_step: dict[int, tuple[list[int], list[float]]] = {}
        for step, tid, value in scalars:
            v = float(next(host)[0]) if isinstance(value, torch.Tensor) else float(value)
            ids, values = by_step.setdefault(step, ([], []))
            ids.append(tid)
            values.append(v)
        w = self._writer
        with w.together():  # the step's rows and its scalars in one segment
            if rows is not None:
                self.write_rows(*rows)
            for step, (ids, values) in sorted(by_step.items()):
                w.write_scalars(step, ids, values)

    def _host_rows(
        self, host: Iterator[np.ndarray], pending: Pending
    ) -> tuple[int, list[int], np.ndarray | None, HostUnits, HostHists, bool | None]:
        """A step's finished rows from their host copies: `write_rows`' arguments."""
        parts = [next(host).reshape(-1, len(device_stats.RAW_COLUMNS)) for _ in pending.parts]
        units = {k: next(host).astype(np.float32, copy=False) for k in pending.units}
        hists = {k: next(host).astype(np.float32, copy=False) for k in pending.hists}
        # a block per group's op: numpy views of one conversion, no per-tensor device work
        for hist_ids, _ in pending.hist_blocks:
            block = next(host).astype(np.float32).reshape(len(hist_ids), -1)
            hists.update(zip(hist_ids, block))
        for keys, lengths, _ in pending.unit_blocks:
            flat = next(host).astype(np.float32)
            start = 0
            for key, n in zip(keys, lengths):  # views, as `np.split` gives, without its Python overhead
                units[key] = flat[start : start + n]
                start += n
        estimates = [(e_ids, next(host).reshape(-1, 2)) for e_ids, _ in pending.estimates]
        ids, stats = pending.host_ids, pending.host_stats
        nonfinite: bool | None = pending.host_nonfinite  # known for the kernel's rows; else the writer looks
        if pending.ids:
            raw = np.concatenate(parts)  # a copy: the host buffer stays the transfer's
            if pending.nan_update or pending.nan_distance:
                raw[self._array("nan_update", pending.nan_update, np.intp), device_stats.UPD] = np.nan
                raw[self._array("nan_distance", pending.nan_distance, np.intp), device_stats.DIST] = np.nan
            finished = device_stats.finish(raw, self._array("counts", pending.counts, np.int64))
            ids = ids + pending.ids
            stats = finished if stats is None else np.concatenate([stats, finished])
            nonfinite = None
        if estimates and stats is not None:
            apply_estimates(ids, stats, estimates)
        return pending.step, ids, stats, units, hists, nonfinite

    def write_rows(
        self,
        step: int,
        ids: list[int],
        stats: np.ndarray | None,
        units: HostUnits,
        hists: HostHists,
        nonfinite: bool | None,
    ) -> None:
        """Hand a saved step's host rows (and Tier-1 extras) to the writer; `nonfinite` as `write_step` takes it."""
        if ids and stats is not None:
            self._writer.write_step(
                step,
                self._array("ids", ids, np.int32),
                stats,
                wall_time=time.time(),
                units=units or None,
                hists=hists or None,
                nonfinite=nonfinite,
            )

    def _array(self, name: str, values: list[int], dtype: type[np.generic]) -> np.ndarray:
        """`values` (a step's tensor ids, sizes or NaN rows, by `name`) as an array: the last step's when they are the
        same (usually: every saved step reduces its tensors in the same order), so the writer need not compare
        the ids, and a saved step converts no list of hundreds of ints. The caller does not change the array.
        The delivery thread and the training thread (`_kernel_path`) both call it: an entry is replaced whole and
        each caller returns the array of the entry it compared, so a race costs a conversion, never a wrong array."""
        seen = self._arrays.get(name)
        if seen is None or seen[0] != values:
            seen = self._arrays[name] = (
                list(values),
                np.asarray(values, dtype),
            )  # a copy: a list may be reused
        return seen[1]


def _results(pending: Pending | None, scalars: list[ScalarValue]) -> list[Result]:
    """A step's results in the order `_write_host` reads them: row parts, Tier-1 vectors, histograms, their blocks,
    sampled estimates, scalars."""
    results: list[Result] = []
    if pending is not None:
        results += pending.parts
        results += list(pending.units.values()) + list(pending.hists.values())
        results += [b for _, b in pending.hist_blocks] + [b for _, _, b in pending.unit_blocks]
        results += [e for _, e in pending.estimates]
    results += [v.reshape(-1)[:1] for _, _, v in scalars if isinstance(v, torch.Tensor)]
    return results


_UPDATE, _DISTANCE = run_format.COLUMN["update_l2"], run_format.COLUMN["distance_l2"]


def apply_estimates(ids: list[int], stats: np.ndarray, estimates: list[tuple[list[int], np.ndarray]]) -> None:
    """Write sampled update/distance into a step's statistic rows (`stats[i]` is tensor `ids[i]`'s) in place:
    `estimates` holds tensor ids and their [T, 2] squared estimates (`CapturePlan.sampled_estimates`); the
    columns are their roots. A tensor this step did not read is left out."""
    where = {tid: i for i, tid in enumerate(ids)}
    for e_ids, values in estimates:
        rows = [where.get(tid, -1) for tid in e_ids]
        keep = [j for j, r in enumerate(rows) if r >= 0]
        if keep:
            at = [rows[j] for j in keep]
            roots = np.sqrt(np.maximum(np.asarray(values, np.float64)[keep], 0.0))  # NaN stays NaN
            stats[at, _UPDATE] = roots[:, 0]
            stats[at, _DISTANCE] = roots[:, 1]


def to_host(results: list[Result]) -> list[np.ndarray]:
    """Each result as a flat host array, in order: the device tensors among them in one copy (`gather_to_host`)."""
    tensors = [t for t in results if isinstance(t, torch.Tensor)]
    if not tensors:
        return [np.asarray(r).reshape(-1) for r in results]
    host = gather_to_host(tensors)
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


def gather_to_host(tensors: Iterable[torch.Tensor]) -> np.ndarray:
    """Concatenate float tensors per device and copy each device's block once (one copy on one device)."""
    tensors = list(tensors)
    if not tensors:
        return np.zeros(0)
    first = tensors[0].device
    if all(t.device == first for t in tensors):  # the usual case: one device, one copy
        return device_stats.to_host(torch.cat([t.reshape(-1).to(torch.float64) for t in tensors]))
    by_device: dict[torch.device, list[torch.Tensor]] = {}
    order: list[tuple[torch.device, int]] = []
    for t in tensors:
        lst = by_device.setdefault(t.device, [])
        order.append((t.device, len(lst)))
        lst.append(t.reshape(-1).to(torch.float64))
    blocks: dict[torch.device, list[np.ndarray]] = {}
    for device, lst in by_device.items():
        host = device_stats.to_host(torch.cat(lst))
        sizes = [t.numel() for t in lst]
        blocks[device] = np.split(host, np.cumsum(sizes)[:-1])
    return np.concatenate([blocks[d][i] for d, i in order])
