"""Turns the segments of one rank into `StepView`s, one per step, in step order.

Called by the evaluator for each new segment. Tensor statistics, scalars and prediction-count
records of the same step are merged into one view; per-unit vectors and histograms are attached
on Tier-1 steps, the hook's no-step marker at the step it was written at; names and `TensorMeta`
come from the catalogue and are built once per (catalogue, tensor set), so a step costs a few
dictionary look-ups and no copies of the statistics block. A view of a step between saved steps (train scalars
only: the hook keeps them at every step) is marked `saved=False`, from the save interval in run.json. A step whose scalars and statistics were flushed into two segments gives two
views of that step, each with its own part: nothing is delivered twice. Rules are left to
`evaluator.py`; reading to `trainguard.store`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from trainguard.api.enums import Mode
from trainguard.rules.step_view import COLUMNS, StepView, TensorMeta
from trainguard.store import run_format

_EVAL_PREFIXES = ("val", "eval", "test", "valid")
_PRED_PREFIX = "pred."
_STEPS_SUFFIX = ".steps"


def save_interval_of(info: run_format.RunInfo | None) -> int | None:
    """The save interval the run's hook wrote in run.json (`config.save_interval`), if it is a positive integer."""
    value = info.config.get("save_interval") if info is not None else None
    return value if isinstance(value, int) and value > 0 else None


def loss_mode(info: run_format.TensorInfo) -> Mode | None:
    """Return the mode a scalar reports as `trainguard_training_loss{mode}`, or None if it is no loss.

    A scalar counts as a loss when its name contains "loss"; it is an eval loss when recorded in
    eval mode or named like `val_loss`/`eval_loss`/`test_loss`.
    """
    if not info.is_scalar or "loss" not in info.name.lower():
        return None
    if info.mode == Mode.EVAL.value or info.name.lower().startswith(_EVAL_PREFIXES):
        return Mode.EVAL
    return Mode.TRAIN


@dataclass(frozen=True)
class _Layout:
    """Names and metadata of one tensor set under one catalogue, shared by every view that uses them."""

    names: tuple[str, ...]
    meta: tuple[TensorMeta, ...]


class ViewBuilder:
    """Converts one rank's segments into StepViews; keeps only per-catalogue caches, never past steps."""

    def __init__(self, rank: int, *, save_interval: int | None = None) -> None:
        """`save_interval`: the hook's (`save_interval_of`); a view without statistics at a step that is not a
        multiple of it is marked `saved=False` (train scalars between saved steps). None: every view is saved."""
        self.rank = rank
        self.save_interval = save_interval
        self._layouts: dict[tuple[int, bytes], _Layout] = {}
        self._catalogue_key: int | None = None
        self._loss_modes: dict[int, Mode | None] = {}
        self.last_loss: dict[Mode, float] = {}
        """The newest value of the loss scalars seen so far, by mode (for the loss gauge)."""

    def _layout(self, seg: run_format.Segment, catalogue: Mapping[int, run_format.TensorInfo]) -> _Layout:
        # A new catalogue object (a new version was fetched) invalidates the cache.
        if self._catalogue_key != id(catalogue):
            self._layouts.clear()
            self._loss_modes.clear()
            self._catalogue_key = id(catalogue)
        key = (seg.catalogue_version, seg.tensor_ids.tobytes())
        layout = self._layouts.get(key)
        if layout is None:
            names: list[str] = []
            meta: list[TensorMeta] = []
            for tid in seg.tensor_ids.tolist():
                info = catalogue.get(int(tid))
                if info is None:
                    info = run_format.TensorInfo(id=int(tid), name=f"tensor-{tid}", collection="unknown")
                names.append(info.name)
                meta.append(
                    TensorMeta(
                        name=info.name,
                        collection=info.collection,
                        module=info.module,
                        module_type=info.module_type,
                        trainable=info.trainable,
                        activation=info.activation,
                        order=info.order,
                        shape=tuple(info.shape),
                        param_group=info.param_group,
                        optimizer=info.optimizer,
                    )
                )
            layout = _Layout(names=tuple(names), meta=tuple(meta))
            self._layouts[key] = layout
        return layout

    def views(
        self, seg: run_format.Segment, catalogue: Mapping[int, run_format.TensorInfo]
    ) -> list[StepView]:
        """Return the views of every step in `seg` (tensor steps and scalar-only steps), in step order."""
        layout = self._layout(seg, catalogue)
        stats = np.asarray(seg.stats, dtype=np.float64)
        if stats.ndim != 3 or stats.shape[2] != len(COLUMNS):
            stats = np.zeros((len(seg.steps), len(layout.names), len(COLUMNS)))
        row_of = {int(s): i for i, s in enumerate(seg.steps.tolist())}
        train, evals = self._scalars_by_step(seg, catalogue)
        tier1 = self._tier1_by_step(seg, catalogue)
        preds = _predictions_by_step(seg, catalogue)
        no_step = _no_step_by_step(seg)
        steps = sorted(set(row_of) | set(train) | set(evals) | set(preds) | set(no_step))
        empty_stats = np.zeros((0, len(COLUMNS)))
        out: list[StepView] = []
        for step in steps:
            row = row_of.get(step)
            units, hists = tier1.get(step, ({}, {}))
            train_preds, eval_preds = preds.get(step, ({}, {}))
            has_stats = row is not None
            out.append(
                StepView(
                    step=step,
                    rank=self.rank,
                    wall_time=float(seg.wall_time[row]) if has_stats else self._nearest_wall_time(seg, step),
                    names=layout.names if has_stats else (),
                    meta=layout.meta if has_stats else (),
                    stats=stats[row] if has_stats else empty_stats,
                    scalars=train.get(step, {}),
                    eval_scalars=evals.get(step, {}),
                    units=units,
                    hists=hists,
                    predictions=train_preds,
                    eval_predictions=eval_preds,
                    no_step=no_step.get(step),
                    saved=has_stats or not self.save_interval or step % self.save_interval == 0,
                )
            )
        return out

    @staticmethod
    def _nearest_wall_time(seg: run_format.Segment, step: int) -> float:
        """Wall time of a scalar-only step: that of the nearest saved step at or before it, if any."""
        if not seg.steps.size:
            return 0.0
        i = int(np.searchsorted(seg.steps, step, side="right")) - 1
        return float(seg.wall_time[max(i, 0)])

    def _scalars_by_step(
        self, seg: run_format.Segment, catalogue: Mapping[int, run_format.TensorInfo]
    ) -> tuple[dict[int, dict[str, float]], dict[int, dict[str, float]]]:
        train: dict[int, dict[str, float]] = {}
        evals: dict[int, dict[str, float]] = {}
        if not seg.scalar_steps.size:
            return train, evals
        for step, tid, value in zip(
            seg.scalar_steps.tolist(), seg.scalar_ids.tolist(), seg.scalar_values.tolist()
        ):
            info = catalogue.get(tid)
            if info is None:
                continue
            target = evals if info.mode == Mode.EVAL.value else train
            target.setdefault(step, {})[info.name] = value
            if tid not in self._loss_modes:
                self._loss_modes[tid] = loss_mode(info)
            mode = self._loss_modes[tid]
            if mode is not None:
                self.last_loss[mode] = value
        return train, evals

    def _tier1_by_step(
        self, seg: run_format.Segment, catalogue: Mapping[int, run_format.TensorInfo]
    ) -> dict[int, tuple[dict[tuple[str, str], np.ndarray], dict[str, np.ndarray]]]:
        out: dict[int, tuple[dict[tuple[str, str], np.ndarray], dict[str, np.ndarray]]] = {}
        if not seg.tier1_steps.size or not (seg.units or seg.hists):
            return out
        for i, step in enumerate(seg.tier1_steps.tolist()):
            units = {
                (kind, _name(catalogue, tid)): np.asarray(vec[i], np.float64)
                for (kind, tid), vec in seg.units.items()
            }
            hists = {_name(catalogue, tid): np.asarray(h[i], np.float64) for tid, h in seg.hists.items()}
            out[step] = (units, hists)
        return out


def _predictions_by_step(
    seg: run_format.Segment, catalogue: Mapping[int, run_format.TensorInfo]
) -> dict[int, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
    """Prediction-count records (`extra["pred.<id>"]`, steps in `extra["pred.<id>.steps"]`) by step and mode."""
    out: dict[int, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = {}
    for key, counts in seg.extra.items():
        if not key.startswith(_PRED_PREFIX) or key.endswith(_STEPS_SUFFIX):
            continue
        steps = seg.extra.get(key + _STEPS_SUFFIX)
        info = catalogue.get(int(key[len(_PRED_PREFIX) :])) if key[len(_PRED_PREFIX) :].isdigit() else None
        if steps is None or info is None or len(steps) != len(counts):
            continue
        for step, record in zip(steps.tolist(), counts):
            train, evals = out.setdefault(int(step), ({}, {}))
            (evals if info.mode == Mode.EVAL.value else train)[info.name] = np.asarray(record, np.float64)
    return out


def _no_step_by_step(seg: run_format.Segment) -> dict[int, tuple[int, int]]:
    """The hook's no-step markers (`extra["no_step"]`: since, iterations) by step, the newest of a step."""
    records = seg.extra.get(run_format.NO_STEP_RECORD)
    steps = seg.extra.get(run_format.NO_STEP_RECORD + _STEPS_SUFFIX)
    if records is None or steps is None or records.ndim != 2 or records.shape[1:] != (2,):
        return {}
    return {int(s): (int(r[0]), int(r[1])) for s, r in zip(steps.tolist(), records.tolist())}


def _name(catalogue: Mapping[int, run_format.TensorInfo], tid: int) -> str:
    info = catalogue.get(tid)
    return info.name if info is not None else f"tensor-{tid}"
