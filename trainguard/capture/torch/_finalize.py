"""Step finalisation: a saved step's results reach the host in one copy and go to the writer.

`StepWriter.write` takes a `_step.Pending` (raw moments, Tier-1 vectors and histograms still on
the device, plus the rows the C kernel already left on the host) and the scalars waiting for a
copy, concatenates every device tensor, copies it to the host once per device
(`device_stats.to_host`, the single transfer function), finishes the statistic rows in numpy and
hands them to `RankWriter.write_step`. Called on the training thread at the start of the next
iteration, or on the statistics worker (`_worker_path`); what to reduce is left to the paths.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

import numpy as np
import torch

from trainguard.capture.torch import device_stats
from trainguard.capture.torch._step import HostHists, HostUnits, Pending, Result, ScalarValue
from trainguard.store import writer


class StepWriter:
    """Copies reduced steps to the host and writes them; keeps the last step's id array to pass it on."""

    def __init__(self, w: writer.RankWriter) -> None:
        self._writer = w
        self._ids: tuple[list[int], np.ndarray] | None = None
        """The last saved step's tensor ids, and as written: usually the same every step."""

    def write(self, pending: Pending | None, scalars: list[ScalarValue]) -> None:
        """Copy a reduced step and scalars to the host in one copy and write them (training thread or worker).

        Results the C kernel already left on the host (numpy) are taken as they are.
        """
        w = self._writer
        if w.disabled:
            return
        results: list[Result] = []
        if pending is not None:
            results += pending.parts
            results += list(pending.units.values()) + list(pending.hists.values())
        results += [v.reshape(-1)[:1] for _, _, v in scalars if isinstance(v, torch.Tensor)]
        host = iter(to_host(results))
        # the step's rows and its scalars in one segment (the copy above stays outside the writer's lock)
        with w.together():
            self._write_host(host, pending, scalars)

    def _write_host(
        self, host: Iterator[np.ndarray], pending: Pending | None, scalars: list[ScalarValue]
    ) -> None:
        """Write a step's rows and scalars from their host copies (`host`, in the order `write` gathered them)."""
        w = self._writer
        if pending is not None:
            parts = [next(host).reshape(-1, len(device_stats.RAW_COLUMNS)) for _ in pending.parts]
            units = {k: next(host).astype(np.float32, copy=False) for k in pending.units}
            hists = {k: next(host).astype(np.float32, copy=False) for k in pending.hists}
            ids, stats = pending.host_ids, pending.host_stats
            nonfinite: bool | None = (
                pending.host_nonfinite
            )  # known for the kernel's rows; else the writer looks
            if pending.ids:
                finished = device_stats.finish(np.concatenate(parts), np.asarray(pending.counts))
                ids = ids + pending.ids
                stats = finished if stats is None else np.concatenate([stats, finished])
                nonfinite = None
            self.write_rows(pending.step, ids, stats, units, hists, nonfinite)
        by_step: dict[int, tuple[list[int], list[float]]] = {}
        for step, tid, value in scalars:
            v = float(next(host)[0]) if isinstance(value, torch.Tensor) else float(value)
            ids, values = by_step.setdefault(step, ([], []))
            ids.append(tid)
            values.append(v)
        for step, (ids, values) in sorted(by_step.items()):
            w.write_scalars(step, ids, values)

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
